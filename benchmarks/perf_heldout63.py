"""Held-out check on published runs added 2026-12-06 (thirty-seventh batch: Megatron-Bridge's model-verification cards of
models the catalog gained for them; nothing is fitted on them), one source perf_heldout60 already read, new models:

(1) NVIDIA-NeMo/Megatron-Bridge examples/model_verification_cards/<model>/card.yaml (read at 067f987df, 2026-08-22):
the pre-training items of the cards whose model was not in the catalog when perf_heldout60 was added (docs/known-gaps.md
230 (c)) and is now a preset: Moonlight-16B-A3B (DeepSeek-V3 architecture: MLA without query compression, 64 routed
experts top 6 with 2 shared; 16 H100, EP 8, HybridEP, NATURAL routing from random initialisation) and Nemotron 3 Nano 4B
(dense hybrid: 21 Mamba-2, 4 attention, 17 MLP layers; 8 H100, data parallel). The other cards of 230 (c) name
architectures the estimator refuses by name (Qwen3.6 / Qwen3.8: Gated DeltaNet; GLM-5.2: DSA; DeepSeek-V4: compressed
sparse attention with hyper-connections; Nemotron 3 Super: LatentMoE): no rows (docs/known-gaps.md 240).

Data: benchmarks/data/heldout_2027k_mbridge_model_cards.csv in heldout_pretrain.csv's columns (perf_heldout.job_of builds
each job; every setting the card does not state is in the row's `assumed` column with the recipe file and commit it was
read from, the megatron-core settings as perf_mbridge26.job states NVIDIA's own Megatron-Bridge rows).

Printed: each row (published, predicted, error, the estimate's step terms), the model FLOPs a step the card's model
TFLOP/s implies against the estimate's (a check of the shapes and of the two FLOP conventions, not a score), memory fits.

Sign: (predicted - published) / published of tokens/s a GPU; + = predicted too fast.

Run: python benchmarks/perf_heldout63.py
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import perf_heldout as ph
from harness import mape, print_fits

DATA = Path(__file__).resolve().parent / "data"
ROWS = DATA / "heldout_2027k_mbridge_model_cards.csv"
# the rows trained with the router's own routing (the recipe's moe_router_force_load_balancing False)
NATURAL = ("mbcard_2026-07_h100_moonlight_16b_a3b_bf16_16gpu_functional",)
# (row id, the card's last_10_steps_model_tflops_per_gpu_avg, last_10_steps_step_time_ms_avg): the FLOP check
CARD_FLOPS = {"mbcard_2026-07_h100_moonlight_16b_a3b_bf16_16gpu_functional": (386.59, 11636.35),
              "mbcard_2026-07_h100_nemotron_3_nano_4b_bf16_8gpu_functional": (402.51, 26775.11)}
BATCH = ph.Batch((ROWS,))
rows, models, run_all, job, fits = BATCH.rows, BATCH.models, BATCH.run_all, BATCH.job, BATCH.fits


def card_flops_ratio(r: dict[str, str], result: dict[str, Any]) -> float:
    """The estimate's model FLOPs a step over the card's (perf_heldout.card_flops_ratio)."""
    return ph.card_flops_ratio(CARD_FLOPS, r, result)


def main() -> None:
    run = run_all()
    print("(1) Megatron-Bridge model-verification cards of the models added for them (2026-07): pre-training tokens/s "
          "a GPU, the mean of the last ten steps (held out, nothing fitted):")
    for c, res, r in run:
        print(ph.step_line(c, res, 62))
        if not c.skipped:
            print(f"  {'':62s} model FLOPs a step, the estimate's over the card's: {card_flops_ratio(r, res):.3f}")
    natural = [c for c in ph.scored_refused(run)[0] if c.row_id in NATURAL]
    print(f"\nnatural routing: n={len(natural)} MAPE {mape(natural):.1f}%")
    print_fits(fits(), "perf_heldout63")
    print(ph.time_summary("perf_heldout63", run))


if __name__ == "__main__":
    main()
