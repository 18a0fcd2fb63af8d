"""Held-out check on published runs added 2026-12-06 (thirty-ninth batch: Megatron-Bridge's model-verification card of
Nemotron 3 Super 120B-A12B, whose LatentMoE the estimate models since docs/known-gaps.md 247; nothing is fitted on
them), one source perf_heldout60 / perf_heldout63 already read, a new model:

(1) NVIDIA-NeMo/Megatron-Bridge examples/model_verification_cards/nemotron-3-super-120b-a12b/card.yaml (read at
067f987df, 2026-08-22): the pre-training items on 64 GPUs, H100 BF16 with the router's own routing (pretrain) and with
forced balance (pretrain_performance), GB200 BF16 and GB300 NVFP4 (pretrain_performance). Nemotron 3 Super: 40 Mamba-2,
8 attention and 40 LatentMoE layers (512 experts top 22 on a 1,024 latent behind two 4,096 x 1,024 projections), its
'*E' multi-token-prediction module run twice a step (the recipes' mtp_num_layers 2 under mtp_use_repeated_layer:
Job.mtp_passes 2).

Data: benchmarks/data/heldout_2027m_mbridge_super.csv in heldout_pretrain.csv's columns (perf_heldout.job_of builds
each job; every setting the card does not state is in the row's `assumed` column with the recipe file and commit it was
read from, the megatron-core settings as perf_mbridge26.job states NVIDIA's own Megatron-Bridge rows). The GB200 item is
scored on its step time re-expressed as tokens/s a GPU at the recipe's 8,192-token sequence: the card's own tokens
figure counts half the tokens its TFLOP/s does (the row's `assumed`).

Printed: each row (published, predicted, error, the estimate's step terms), the model FLOPs a step the card's model
TFLOP/s implies against the estimate's (a check of the shapes and of the two FLOP conventions, not a score: the card's
flop_utils counts the MTP passes, the estimate's model FLOPs do not), the H100 items' peak memory against the card's
allocated / reserved peaks (printed, not scored), memory fits.

Sign: (predicted - published) / published of tokens/s a GPU; + = predicted too fast.

Run: python benchmarks/perf_heldout65.py
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import perf_heldout as ph
from harness import mape, print_fits

DATA = Path(__file__).resolve().parent / "data"
ROWS = DATA / "heldout_2027m_mbridge_super.csv"
# the rows trained with the router's own routing (the recipe's moe_router_force_load_balancing False)
NATURAL = ("mbcard_2026-08_h100_nemotron_3_super_120b_a12b_bf16_64gpu_functional",)
# (row id, the card's last_10_steps_model_tflops_per_gpu_avg, last_10_steps_step_time_ms_avg): the FLOP check
CARD_FLOPS = {"mbcard_2026-08_h100_nemotron_3_super_120b_a12b_bf16_64gpu_functional": (236.330, 29368.690),
              "mbcard_2026-08_h100_nemotron_3_super_120b_a12b_bf16_64gpu_perf": (248.610, 27588.580),
              "mbcard_2026-07_gb200_nemotron_3_super_120b_a12b_bf16_64gpu_perf": (559.390, 9926.350),
              "mbcard_2026-08_gb300_nemotron_3_super_120b_a12b_nvfp4_64gpu_perf": (873.330, 6357.940)}
# (row id, the card's peak allocated GiB, peak reserved GiB): logged with logger.log_device_memory_used
CARD_MEMORY = {"mbcard_2026-08_h100_nemotron_3_super_120b_a12b_bf16_64gpu_functional": (58.079, 70.336),
               "mbcard_2026-08_h100_nemotron_3_super_120b_a12b_bf16_64gpu_perf": (59.000, 69.344)}
BATCH = ph.Batch((ROWS,))
rows, models, run_all, job, fits = BATCH.rows, BATCH.models, BATCH.run_all, BATCH.job, BATCH.fits


def card_flops_ratio(r: dict[str, str], result: dict[str, Any]) -> float:
    """The estimate's model FLOPs a step over the card's (perf_heldout.card_flops_ratio)."""
    return ph.card_flops_ratio(CARD_FLOPS, r, result)


def allocated_gib(result: dict[str, Any]) -> float:
    """The estimate's peak as PyTorch's allocated peak reads it (perf_heldout.predicted_metric's peak_allocated_gib)."""
    items = result["memory"]["items"]
    return float(result["memory"]["per_gpu_gib"]) - sum(float(items[k]["gib"]) for k in ph.NOT_ALLOCATED if k in items)


def main() -> None:
    run = run_all()
    print("(1) Megatron-Bridge model-verification card of Nemotron 3 Super 120B-A12B (2026-07 / 08): pre-training "
          "tokens/s a GPU on 64 GPUs, the mean of the last ten steps (held out, nothing fitted):")
    for c, res, r in run:
        print(ph.step_line(c, res, 66))
        if c.skipped:
            continue
        print(f"  {'':66s} model FLOPs a step, the estimate's over the card's: {card_flops_ratio(r, res):.3f}")
        if r["id"] in CARD_MEMORY:
            alloc, reserved = CARD_MEMORY[r["id"]]
            print(f"  {'':66s} peak memory: allocated {allocated_gib(res):.1f} GiB predicted / {alloc:.1f} measured, "
                  f"reserved {float(res['memory']['per_gpu_gib']):.1f} / {reserved:.1f}")
    natural = [c for c in ph.scored_refused(run)[0] if c.row_id in NATURAL]
    print(f"\nnatural routing: n={len(natural)} MAPE {mape(natural):.1f}%")
    print_fits(fits(), "perf_heldout65")
    print(ph.time_summary("perf_heldout65", run))


if __name__ == "__main__":
    main()
