"""Held-out check on published runs added 2026-12-06 (forty-first batch: pre-training and MoE at scale; nothing is fitted
on them), one source perf_mbridge26 / perf_heldout60 already read, lines of a model the catalog has gained since:

(1) NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md (read at 067f987df, 2026-08-22): the Nemotron_3_Super
pre-training lines, which perf_mbridge26 left out ('Kimi-K2 and Nemotron 3 have no preset here'); the preset exists
since docs/known-gaps.md 247 and perf_heldout65 scored its model card. One line a (system, precision) layout, from the
latest release that ran it: 26.06.01 on DGX-GB300 / -GB200 (MXFP8, NVFP4), 26.06 on DGX-B300, 26.04.01 on DGX-B200; 64
GPUs, GBS 512 x 8,192, forced-balance routing, dropless, HybridEP. What the earlier releases repeat, the 26.08 lines and
the Kimi-K2 lines (Muon) are in docs/known-gaps.md 256.

(2) NVIDIA-NeMo/Automodel docs/performance-summary.md (read at 36044ad3d, 2026-08-22; the source of heldout_pretrain.csv's
AutoModel rows, whose lines of 2026-02 / 03 were added after): Nemotron V3 Super 120B on 64 H100 (FSDP2 + EP 64) and Nemotron
V3 Nano 30B on 8 H100 (EP 8), PyTorch-native (TE linears, DeepEP, SDPA attention, every block checkpointed, a forced
balanced gate); AutoModel builds no MTP module, so the Super row names benchmarks/data/heldout_2027o_models.yaml's
nemotron-3-super-nomtp (the preset, mtp_layers 0). AutoModel's FSDP2 + EP stack is the torchtitan style; both rows were
refused by the hybrid_framework rule (docs/known-gaps.md 256 (c)) until the rule admitted that style (259 (a)).

Data: benchmarks/data/heldout_2027o_mbridge_super_tables.csv (1) and heldout_2027o_automodel_nemotron.csv (2) in
heldout_pretrain.csv's columns (perf_heldout.job_of builds each job; every setting the source does not state is in the
row's `assumed` column with the config and release or commit it was read from, the megatron-core settings as
perf_mbridge26.job states NVIDIA's own rows, the AutoModel settings as heldout_pretrain.csv's AutoModel rows).

Printed: each row (published, predicted, error, the estimate's step terms), the model FLOPs a step the table's model
TFLOP/s implies against the estimate's (a check of the shapes and the two FLOP conventions, not a score: the table's
count has the MTP passes, the estimate's model FLOPs do not), memory fits, the MXFP8 / NVFP4 pairs.

Sign: (predicted - published) / published of tokens/s a GPU; + = predicted too fast.

Run: python benchmarks/perf_heldout67.py
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import perf_heldout as ph
from harness import mape, print_fits

DATA = Path(__file__).resolve().parent / "data"
ROWS = DATA / "heldout_2027o_mbridge_super_tables.csv"
AUTOMODEL_ROWS = DATA / "heldout_2027o_automodel_nemotron.csv"
MODELS = DATA / "heldout_2027o_models.yaml"
# (row id, the table's Model TFLOP / sec / GPU): the FLOP check
TABLE_TFLOPS = {"mbtable_26.06.01_gb300_nemotron_3_super_mxfp8_64gpu": 827.0,
                "mbtable_26.06.01_gb300_nemotron_3_super_nvfp4_64gpu": 845.0,
                "mbtable_26.06.01_gb200_nemotron_3_super_mxfp8_64gpu": 598.0,
                "mbtable_26.06.01_gb200_nemotron_3_super_nvfp4_64gpu": 598.0,
                "mbtable_26.06_b300_nemotron_3_super_mxfp8_64gpu": 667.0,
                "mbtable_26.06_b300_nemotron_3_super_nvfp4_64gpu": 689.0,
                "mbtable_26.04.01_b200_nemotron_3_super_mxfp8_64gpu": 542.0,
                "mbtable_26.04.01_b200_nemotron_3_super_nvfp4_64gpu": 475.0}
BATCH = ph.Batch((ROWS, AUTOMODEL_ROWS), (ph.MODELS, MODELS))
rows, models, run_all, job, fits = BATCH.rows, BATCH.models, BATCH.run_all, BATCH.job, BATCH.fits


def table_step_ms(r: dict[str, str]) -> float:
    """The step the table's tokens/s a GPU implies: GBS x sequence / (tokens/s a GPU x GPUs), in ms."""
    tokens = int(r["global_batch_seqs"]) * int(r["seq_len"])
    return 1e3 * tokens / (float(r["value"]) * int(r["gpu_count"]))


def is_table(r: dict[str, str]) -> bool:
    """A row of source (1), the Megatron-Bridge tables."""
    return r["id"] in TABLE_TFLOPS


def table_flops_ratio(r: dict[str, str], result: dict[str, Any]) -> float:
    """The estimate's model FLOPs a step over the table's (its model TFLOP/s a GPU x the step its tokens/s implies x
    GPUs; perf_heldout.card_flops_ratio)."""
    return ph.card_flops_ratio({r["id"]: (TABLE_TFLOPS[r["id"]], table_step_ms(r))}, r, result)


def precision_pairs(run: ph.Run) -> list[tuple[str, float, float]]:
    """(system, measured NVFP4 / MXFP8 tokens/s, predicted) for each system with both lines scored."""
    by: dict[tuple[str, str], float] = {}
    pred: dict[tuple[str, str], float] = {}
    for c, _, r in run:
        if not c.skipped:
            key = (r["accelerator"], r["fp8_recipe"])
            by[key], pred[key] = c.measured, c.predicted
    systems = sorted({s for s, _ in by})
    return [(s, by[(s, "nvfp4")] / by[(s, "mxfp8")], pred[(s, "nvfp4")] / pred[(s, "mxfp8")])
            for s in systems if (s, "nvfp4") in by and (s, "mxfp8") in by]


def main() -> None:
    run = run_all()
    tables = [t for t in run if is_table(t[2])]
    print("(1) Megatron-Bridge performance tables, Nemotron 3 Super 120B-A12B pre-training on 64 Blackwell GPUs "
          "(26.04.01-26.06.01): tokens/s a GPU (held out, nothing fitted):")
    for c, res, r in tables:
        print(ph.step_line(c, res, 54))
        if not c.skipped:
            print(f"  {'':54s} model FLOPs a step, the estimate's over the table's: {table_flops_ratio(r, res):.3f}")
    print("\nNVFP4 over MXFP8 on the same system (measured, predicted):")
    for system, measured, predicted in precision_pairs(tables):
        print(f"  {system:6s} {measured:.3f} {predicted:.3f}")
    print("\n(2) NeMo AutoModel's H100 table (2026-02 / 03), Nemotron 3 on FSDP2 + EP: tokens/s a GPU:")
    for c, res, _ in (t for t in run if not is_table(t[2])):
        print(ph.step_line(c, res, 54))
    print_fits(fits(), "perf_heldout67")
    for name, part in (("(1) tables", tables), ("(2) AutoModel", [t for t in run if not is_table(t[2])])):
        scored, refused = ph.scored_refused(part)
        figure = f"MAPE {mape(scored):.1f}% (median {ph.median_pct(scored):+.1f}%)" if scored else "no row scored"
        print(f"{name}: n={len(scored)} {figure}; refused {len(refused)}")
    print(ph.time_summary("perf_heldout67", run))


if __name__ == "__main__":
    main()
