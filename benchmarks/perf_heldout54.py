"""Held-out check on published runs added 2026-12-06 (twenty-eighth batch: measurements stated in 2026 issue and pull
request threads on parts the held-out set has few rows of; nothing is fitted on them), three sources no benchmark held:

(1) NVIDIA-NeMo/Megatron-Bridge issue 4439 (2026-06-22): a user's DGX B200 run of the 26.04.01 container's
Qwen3-30B-A3B recipe (QWEN3_30B_A3B_PRETRAIN_CONFIG_B200_*_V1 at v0.4.2: EP 8, MBS 4, GBS 512, HybridEP, partial TE
CUDA graphs), MXFP8 ~562 and BF16 ~552 TFLOP/s/GPU against the table's 619 (the table row is perf_heldout27's
mbridge_26.04.01_b200_qwen3_30b_a3b_fp8-mx_8gpu): the same job measured twice, by NVIDIA and by a user.
(2) NVIDIA-NeMo/Megatron-Bridge PR 1869 (2026-01-06, merged 1fd34b18c): NVIDIA's DeepSeek-V3 B200 recipe at 256 GPUs
(PP 16, EP 16, DeepEP, MBS 1, GBS 2,048, recompute mla_up_proj), 575 BF16 and 635 MXFP8 TFLOP/s/GPU.
(3) pytorch/torchtitan PR 4779 (2026-09-18): torchtitan's llama3 8B and 70B default configs on one 8 x MI350X host
(MFU 20.5% / 24.6% at its 2.3 PFLOP/s dense BF16 peak), the first MI350X rows.

Data: benchmarks/data/heldout_2027b_mbridge_reports.csv (sources 1, 2) in heldout_2026c_mbridge.csv's columns, each row
built by perf_mbridge26.job as the release tables' rows are; benchmarks/data/heldout_2027b_titan_mi350x.csv (source 3)
in heldout_pretrain.csv's columns (perf_heldout.job_of). Every setting a source does not state is named in the row's
`assumed` column with where its default was read. A TFLOP/s figure is read as tokens/s through the model FLOPs a
token of the same framework's own table (sources 1, 2) or formula (source 3: torchtitan's MFU definition).

Not rows (read, said in docs/known-gaps.md 200): the ROCm blog's MI355X v25.9 training figures (ratios to B200 in
images only), NVIDIA/dgxc-benchmarking at v26.06.01 (GB300 / B300 layouts without figures), gpu-recipes' A3 Ultra /
A4 / A4X recipes (no figures), OLMo-core's OLMo 3 / OLMo-hybrid cards (Ulysses CP stated, no rate), the TRL 1M-token
CP PR (closed, measured on unmerged code), Megatron-Bridge PR 4808 / 5290 (DeepSeek-V4: no preset).

Printed: each row (published, predicted, error), each source's MAPE, the same job's two measurements (issue 4439
against the 26.04.01 table), the MXFP8 / BF16 ratio of each pair measured against predicted, and memory fits.

Sign: (predicted - published) / published; + = predicted too fast.

Run: python benchmarks/perf_heldout54.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

import perf_heldout as ph
import perf_heldout27 as p27
from harness import Fit, job_fits, mape, print_cases, print_fits, row_cases
from perf_mbridge26 import job as mbridge_job

DATA = Path(__file__).resolve().parent / "data"
REPORTS = DATA / "heldout_2027b_mbridge_reports.csv"
TITAN = DATA / "heldout_2027b_titan_mi350x.csv"
# issue 4439's run and the release table's row of the same recipe, container and part
TABLE_TWIN = ("mbissue4439_2026-06_b200_qwen3_30b_a3b_fp8-mx_8gpu", "mbridge_26.04.01_b200_qwen3_30b_a3b_fp8-mx_8gpu")


def report_rows() -> list[dict[str, str]]:
    return list(csv.DictReader(REPORTS.open(encoding="utf-8")))


TITAN_BATCH = ph.Batch((TITAN,))  # source (3), in perf_heldout's columns and job path (docs/known-gaps.md 257 (b))
titan_rows, titan_run = TITAN_BATCH.rows, TITAN_BATCH.run_all


def report_cases() -> list[tuple[str, str, float, float]]:
    """(row id, system, measured, predicted tokens/s/GPU) of sources (1) and (2)."""
    return row_cases(report_rows(), mbridge_job)


def all_errors() -> np.ndarray:
    """Signed (predicted - measured) / measured of every scored row of the batch."""
    errs = [p / m - 1.0 for _, _, m, p in report_cases()]
    errs += [c.err for c, _, _ in titan_run() if not c.skipped]
    return np.array(errs)


def table_twin() -> tuple[float, float, float]:
    """(the user's, the table's measured, the estimate's) tokens/s/GPU of issue 4439's job: what two measurements of
    one job differ by beside the estimate's error."""
    mine, table = TABLE_TWIN
    user = next(m for rid, _, m, _ in report_cases() if rid == mine)
    row = next(r for r in p27.rows() if r["id"] == table)
    _, _, nvidia, pred = row_cases([row], mbridge_job)[0]
    return user, nvidia, pred


def precision_ratios() -> list[tuple[str, float, float]]:
    """(job, measured, predicted MXFP8 / BF16 throughput) of the rows stated in both precisions at one layout."""
    by = {rid: (m, p) for rid, _, m, p in report_cases()}
    out = []
    for rid in by:
        if "_bf16_" in rid:
            mx = rid.replace("_bf16_", "_fp8-mx_")
            out.append((rid.replace("_bf16", ""), by[mx][0] / by[rid][0], by[mx][1] / by[rid][1]))
    return out


def fits() -> list[Fit]:
    return job_fits((r["id"], mbridge_job(r)) for r in report_rows())


def main() -> None:
    cs = report_cases()
    print("Megatron-Bridge reports (B200; tokens/s/GPU from the stated TFLOP/s):")
    errs = print_cases(cs)
    print(f"  n={len(cs)} MAPE {100 * errs.mean():.1f}%")
    run = titan_run()
    print("\ntorchtitan PR 4779 (8 MI350X; tokens/s/GPU from the stated MFU):")
    for c, _, _ in run:
        shown = f"{c.predicted:9.0f} {100 * c.err:+7.1f}" if not c.skipped else f"refused: {c.skipped}"
        print(f"{c.row_id:56s} {c.measured:9.0f} {shown}")
    print(f"  n={len(run)} MAPE {mape([c for c, _, _ in run]):.1f}%")
    errs_all = all_errors()
    print(f"\nHeld-out runs, twenty-eighth batch (nothing fitted): time n={len(errs_all)} MAPE "
          f"{100 * np.abs(errs_all).mean():.1f}% (median {100 * np.median(errs_all):+.1f}%)")
    user, nvidia, pred = table_twin()
    print(f"issue 4439's job measured twice: user {user:.0f}, 26.04.01 table {nvidia:.0f} tokens/s/GPU "
          f"(user / table {user / nvidia:.3f}); predicted {pred:.0f} ({pred / user - 1:+.1%} / {pred / nvidia - 1:+.1%})")
    print("MXFP8 / BF16 throughput at one layout (measured vs predicted):")
    for job, m, p in precision_ratios():
        print(f"  {job:52s} measured {m:.3f} predicted {p:.3f}")
    print_fits(fits(), "the Megatron-Bridge reports")
    unfit = [c.row_id for c, res, _ in run if res and not res["memory"]["fits"]]
    print(f"torchtitan rows said not to fit: {unfit or 'none'}")


if __name__ == "__main__":
    main()
