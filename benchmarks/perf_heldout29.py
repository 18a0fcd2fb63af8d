"""Held-out check on published runs added 2026-12-04 (fourth batch; nothing is fitted on them): runs no other benchmark
holds, each stated as the authors wrote it.

Data: benchmarks/data/heldout_2026e.csv, in heldout_pretrain.csv's columns (perf_heldout.job_of builds each job, so a
row reads as a user's job file; every assumed setting is in its `assumed` column):
- torchtitan PR 1690 "[Qwen3] Add 32b training configs" (merged 2025-09-17 as d66b72a6a, whose commit message holds the
  PR text): Qwen3 32B on 8-64 H100 96 GB ("a preset for 8 H100 GPUs (with 96GiB memory)", the toml says), seq 4,096,
  FSDP 8 / 16 and FSDP x TP 4 / 8 at local batch 1-32, full AC, eager (one row compiled): one logged line each, tokens/s
  and peak memory. The power limit is not stated: the same team's Grand Teton H100 (96 GB, 500 W) taken
  (benchmarks/data/grand_teton_h100_overlay.yaml, as perf_heldout's torchtitan rows); `medium`.
- torchtitan PR 1881 "[SimpleFSDP] add manual bucketing pass" (merged 2025-11-15 as d9bdfbb20, the PR text in its
  commit message): Llama 3 8B on H100 96 GB, the FSDP2 rows of its table (eager, batch 1, llama3_8b.toml's 8,192 tokens
  and per-op SAC): FSDP 8 and FSDP 4 x TP 2 on one host, FSDP 64 on 8 hosts; tokens/s and peak memory; Grand Teton
  overlay as the PR 1690 rows; `medium`. Its SimpleFSDP rows (a compiler-based FSDP under aot_eager) are left out.
- torchtitan PR 3914 "Add an NVFP4 quantization converter" (merged 2026-08-05 as bcc09297a; its nvfp4.md): Llama 3 8B
  on 4 GB200, FSDP 4, local batch 32 x 2,048, eager with model compilation, llama3_8b()'s per-op SAC and chunked loss:
  BF16 and MXFP8 (every Linear, the LM head included) tokens/s and peak memory at step 760; `medium`.
- PyTorch + Nebius, DeepSeek-V3 671B on 256 B200 with torchtitan (pytorch.org blog 'Enabling Up to 41% Faster
  Pre-training', 2026-03; its recipes in nebius/ml-cookbook pytorch-dsv3-mxfp8: train_671b.sh states TP 2, PP 2, EP 32,
  expert TP 1, FSDP 64, local batch 64 x 8,192, full AC, compile, forced balance; torchtitan 1a36996b): BF16 with the
  standard all-to-all (651 tokens/s a GPU) and with DeepEP (859); `medium` (the InfiniBand rate is not stated).
- Megatron-Bridge's 26.08 pre-training table (docs/performance-summary.md at 4ab94dfad, 2026-08-11; its own columns,
  benchmarks/data/heldout_2026e_mbridge.csv, built by perf_mbridge26.job as perf_heldout27's rows): the two GPT-OSS 120B
  MXFP8 lines (64 GB300 / GB200), whose configs (src/megatron/bridge/perf_recipes/gpt_oss/<system>/gpt_oss.py, identical
  at the v0.6.0 tag) state the 26.06.01 lines' jobs exactly: the same run without the regression those lines were
  footnoted with (cudnn-frontend issue 256; docs/known-gaps.md 41). The table's other lines with a preset (DeepSeek-V3,
  Qwen3 30B-A3B / 235B-A22B on GB300 / GB200) repeat the 26.06.01 layouts at rates within 2.5% of those lines
  (perf_heldout27 holds them) and are not added; DeepSeek-V4 Flash and the Nemotron 3 lines have no preset.
- MLPerf Training v6.0, HPE's GPT-OSS 20B on 16 and 32 GB300 of one NVL72 and Lambda's on 72 (the round's public copy,
  as perf_mlperf6: benchmarks/data/heldout_2026e_mlperf6.csv in mlperf6.csv's columns, built by perf_mlperf6.job):
  NVIDIA's code and commons, HPE at micro-batch 2 data parallel only, Lambda at NVIDIA's 72-GPU layout (CP 2 x EP 4,
  micro-batch 1); each row the median of its log's per-block train_step_time. Printed
  beside perf_mlperf6's NVIDIA GB300 rows of the same code (8, 72, 512 GPUs) as one series of per-GPU rates.
Left out (the source does not state enough to run, or the job cannot state what ran; docs/known-gaps.md 57 (l),
(m), (n)):
- the rows of PR 1690 that ran out of memory (no figure).
- Nebius's MXFP8 + DeepEP row (918 tokens/s): MXFP8 on the routed experts' grouped GEMMs only, which no job field
  states (precision fp8 runs every linear of a layer in the recipe: attention and the shared expert would be charged
  in MXFP8 where they ran in bf16).
- PR 3914's NVFP4 rows: nvfp4.md's recipe keeps the last 15% of the layers and the LM head in bf16 (30,040 tokens/s,
  110.95 GiB), the PR's Table 1 gives another NVFP4 run (31,758, 103.00 GiB) whose layer split is not stated; no job
  field states a per-layer split. Its Qwen3 8B rows (BF16 20,913 / MXFP8 27,587) come from an SFT base config
  (sft_qwen3_8b_math, varlen attention) whose random-init variant is not in the commit.
- mlc-ai/pith-train issue 79 (2026-07-22): a user's torchtitan Qwen3-30B-A3B on 8 B200 (FSDP 8, EP 1, 8 x 8,192,
  'selective activation checkpointing', 8 loss chunks, compiled: 19.52k tokens/s, 141.79 GiB): the kind of selective
  AC is not stated and the estimate brackets the measured peak (full AC 114.5 GiB, per-op SAC 305.9): not a row.
- torchtitan ab5ed59f8 (MoE gate in fp32, 8 B200: 12,437 / 10,050 tokens/s without / with full AC): the model and batch
  are not stated. torchtitan PRs 4604 / 4605 (Lambda's GPT-OSS 120B / Qwen3-30B-A3B sweeps on 8 B200, 2026-09, closed):
  TFLOP/s only, their configs in a fork's config_registry.py not read here.

Printed: each row (published, predicted, error), per-source MAPE, the worst rows with the estimate's time breakdown,
the MXFP8 / BF16, DeepEP / all-to-all and compile / eager gains at one layout, refused rows (each a bug: these runs were made) and rows whose measured run
the memory estimate says does not fit.

Sign: (predicted - published) / published; for tokens/s + = predicted too fast, for memory + = predicted too large.

Run: python benchmarks/perf_heldout29.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import perf_heldout as ph
import perf_heldout28 as p28
from harness import Fit, job_fits, job_tokens_per_gpu, print_cases, print_fits, row_cases
from perf_mbridge26 import job as mbridge_job
from perf_mlperf6 import job as mlperf6_job
from perf_mlperf6 import print_forward_check
from perf_mlperf6 import rows as mlperf6_rows

DATA = Path(__file__).resolve().parent / "data" / "heldout_2026e.csv"
BATCH = ph.Batch((DATA,))
rows, run_all = BATCH.rows, BATCH.run_all
MBRIDGE = Path(__file__).resolve().parent / "data" / "heldout_2026e_mbridge.csv"
MLPERF6 = Path(__file__).resolve().parent / "data" / "heldout_2026e_mlperf6.csv"
# perf_mlperf6's rows of the same code and part as this file's MLPerf rows: one series of per-GPU rates
GPT_OSS_SERIES = ("mlperf6.0_gb300_gpt_oss_20b_mxfp8_8gpu", "mlperf6.0_gb300_gpt_oss_20b_mxfp8_72gpu",
                  "mlperf6.0_gb300_gpt_oss_20b_mxfp8_512gpu")


def mbridge_rows() -> list[dict[str, str]]:
    return list(csv.DictReader(MBRIDGE.open(encoding="utf-8")))


def mbridge_cases() -> list[tuple[str, str, float, float]]:
    """(row id, system, measured, predicted tokens/s/GPU) of the Megatron-Bridge 26.08 rows."""
    return row_cases(mbridge_rows(), mbridge_job)


def mbridge_fits() -> list[Fit]:
    return job_fits((r["id"], mbridge_job(r)) for r in mbridge_rows())


def mlperf_rows() -> list[dict[str, str]]:
    return list(csv.DictReader(MLPERF6.open(encoding="utf-8")))


def mlperf_cases(rs: list[dict[str, str]] | None = None) -> list[tuple[str, str, float, float]]:
    """(row id, submitter, measured, predicted tokens/s/GPU) of MLPerf v6.0 rows (this file's by default)."""
    rs = mlperf_rows() if rs is None else rs
    return [(r["id"], r["submitter"], float(r["tokens_per_sec_per_gpu"]), p)
            for r, (_, p) in zip(rs, job_tokens_per_gpu((r["id"], mlperf6_job(r)) for r in rs), strict=True)]


def gpt_oss_series() -> list[tuple[str, str, float, float]]:
    """GPT-OSS 20B on GB300 under NVIDIA's v6.0 code: perf_mlperf6's NVIDIA rows and this file's rows, by GPUs."""
    base = [r for r in mlperf6_rows() if r["id"] in GPT_OSS_SERIES]
    rs = sorted(base + mlperf_rows(), key=lambda r: int(r["gpu_count"]))
    return mlperf_cases(rs)


def main() -> None:
    run = run_all()
    p28.print_rows(run)
    p28.print_summary(run, "Held-out runs, fourth batch (nothing fitted)", 52)
    print("FP8 / BF16 throughput at one layout (measured vs predicted):")
    for row_id, _, meas, pred in ph.precision_pairs([(c, "", r) for c, _, r in run]):
        print(f"  {row_id:58s} measured {meas:.3f} predicted {pred:.3f}  {pred / meas - 1.0:+6.1%}")
    p28.print_pairs_and_refusals(run)
    mc = mbridge_cases()
    errs = print_cases(mc, blank_line=True)
    print(f"\nMegatron-Bridge 26.08 GPT-OSS 120B (held out, nothing fitted): n={len(mc)} MAPE {100 * errs.mean():.1f}%")
    print_fits(mbridge_fits(), "Megatron-Bridge 26.08")
    hc = mlperf_cases()
    errs = print_cases(hc, blank_line=True)
    print(f"\nMLPerf v6.0 HPE / Lambda GPT-OSS 20B on GB300 (held out, nothing fitted): n={len(hc)} MAPE {100 * errs.mean():.1f}%")
    print("GPT-OSS 20B on GB300, NVIDIA's v6.0 code, by GPUs (perf_mlperf6's NVIDIA rows and these):")
    rows = {r["id"]: r for r in mlperf6_rows() + mlperf_rows()}
    for rid, who, meas, pred in gpt_oss_series():
        r = rows[rid]
        print(f"  {who:7s} {r['gpu_count']:>4s} GPUs micro-batch {r['micro_batch']} global {r['global_batch_seqs']:>3s}  "
              f"measured {meas:8.0f} predicted {pred:8.0f}  {pred / meas - 1.0:+6.1%}")
    print_forward_check(mlperf_rows())
    print_fits(job_fits((r["id"], mlperf6_job(r)) for r in mlperf_rows()), "MLPerf v6.0 HPE / Lambda")


if __name__ == "__main__":
    main()
