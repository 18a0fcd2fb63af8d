"""Held-out check on published runs added 2026-12-04 (eighth batch; nothing is fitted on them). Two sources.

(1) The MLPerf Training
v5.1 closed-division runs (published 2025-11-12, mlcommons/training_results_v5.1 at 441d65f4) of Llama 2 70B LoRA and
Llama 3.1 8B that no other benchmark held: AMD's implementation on its partners' hosts, and NVIDIA's 8-GPU LoRA code
on four more Blackwell hosts. What they test: the same job on another maker's server (cooling, host CPU, firmware,
ROCm build), the spread a buyer sees between vendors of one part, which a row of the part's maker does not show.

Data (each row the median over the submission's 10 result logs, each column copied from the benchmark row of the same
code and layout and checked against the submission's config_*.sh and its logs; what was checked or assumed is in each
row's `assumed` column):
- benchmarks/data/heldout_2026i_mlperf_amd.csv (heldout_2026b_mlperf.csv's columns, built by
  perf_heldout26.mlperf_job = perf_amd.job): AMD's MLPerf code (NeMo / Megatron-Core with Transformer Engine on ROCm)
  on 8 GPUs of one host, the log's per-block samples/s as perf_amd's rows: Llama 2 70B LoRA on MI325X (ASUSTeK,
  MiTAC, Supermicro; Supermicro's host under MangoBoost's LLMBoost 1.2.0), MI355X (Dell, GigaComputing, Supermicro),
  MI350X (Cisco) and MI300X (Krai, on AMD's v5.1 and v5.0 code); Llama 3.1 8B on MI355X (Dell, GigaComputing,
  Supermicro) and MI350X (Cisco). 14 rows.
- benchmarks/data/heldout_2026i_mlperf_nvidia.csv (heldout_2026c_mlperf_nvidia.csv's columns, built by
  perf_heldout26.mlperf_nvidia_job): NVIDIA's v5.1 LoRA code on 8 B200 (Supermicro, Dell, GigaComputing) and 8 B300
  (Supermicro), the median per-block train_step_time as perf_mlperf's rows; their config files are University of
  Florida's 8-B200 and Lenovo's 8-B300 files (perf_mlperf's rows) line for line. 4 rows.
(2) NVIDIA's DGX Cloud benchmarking recipes, release v25.04 (NVIDIA/dgxc-benchmarking at 741c886, 2025-06-09),
ft_llama3/README_8b.md and README_70b.md 'Expected Performance': NeMo 2 fine-tuning (container nemo:24.12) of Llama 3
8B and 70B on 8-32 H100, SFT and LoRA, BF16 and FP8, SQuAD packed to 4,096 tokens, each row the table's tokens/s
(benchmarks/data/heldout_2026i_dgxc_finetune.csv in finetune_heldout.csv's columns plus `tp_comm_overlap`, built and
scored by finetune_heldout.job / row_cases). The layout is the release's llama3_finetune_auto_configs and the NeMo
recipe's performance mode at the commit its setup.sh pins (LoRA on linear_qkv only, rank 8 / 16; 70B SFT TP 4 x PP 4
x VPP 5 with TP overlap, 70B LoRA TP 2 x PP 4 x VPP 20 without). 20 rows. The same release's grok1 (no preset) and
maxtext (JAX: no such stack here) tables are left out; its llama3.1 / nemotron / 175B tables are the development set.

(3) The same recipes' release v25.05.05 (c5c765f, 2025-10-22), deepseek_v3/pretraining/README.md: DeepSeek-V3 671B BF16
pre-training on NeMo 25.04.01 on 512 / 1,024 H100 (TP 2, PP 8 / 16, EP 64) and 128 / 256 / 512 GB200 (TP 2, PP 4, EP 32
/ 64), ETP 1, 4K tokens, global batch 8 x GPUs, each the table's tokens/s (benchmarks/data/heldout_2026i_dgxc_moe.csv in
heldout_pretrain.csv's columns, built by perf_heldout.job_of): the layout from its launch.sh, the rest from NeMo's
pretrain_deepseek_v3.py and the deepseek_v3 recipe at the commit its setup.sh pins (selective recompute of the
launch's modules, first / last stage 64 / PP - 1 / - 2 layers, alltoall dispatcher with token drop at capacity 1.0, one
MTP layer, no TP overlap, no CUDA graphs). 5 rows. The release's Llama 4 Maverick, Grok-1 (no preset) and Nemotron-H
tables are left out (time; docs/known-gaps.md 86 (f)); its llama3.1 and nemotron GB200 tables repeat NeMo 25.04's
performance summary (perf_heldout's rows) within 1-7%.

Left out of (1): Quanta's D75T (MI325X) and D74H (H200) LoRA runs (the submission holds no implementation or config for
them), Dell's XE9680 H200 LoRA run (NVIDIA's v4.1 code at TP 2, no config beside the log), Cisco's hpf H100 runs (an
older NeMo code; perf_heldout27 left them out too), Verda's 64-B200 8B run (its system file's '100GbE InfiniBand'
states no usable rate) and the rounds' other benchmarks (Flux.1, RetinaNet, DLRM, R-GAT: no model here).

Printed: each row (measured, predicted, error), per-source MAPE, per part, the worst rows, each partner row against
the part maker's own row of the same code and layout (measured and predicted ratio: the estimate gives one rate per
job, so its ratio is 1 and the measured ratio is the vendor spread it cannot see), and rows predicted not to fit.

Sign: (predicted - measured) / measured of tokens/s per GPU, + = predicted too fast.

Run: python benchmarks/perf_heldout33.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import finetune_heldout as fh
import perf_heldout as ph
import perf_heldout28 as p28
from harness import Case, Fit, job_fits, job_tokens_per_gpu, mape, print_cases, print_fits, row_cases
from perf_heldout26 import mlperf_job, mlperf_nvidia_job
from perf_mbridge26 import print_keyed_groups, print_worst
from trainsizer.catalog import load_catalog

DATA = Path(__file__).resolve().parent / "data"
AMD = DATA / "heldout_2026i_mlperf_amd.csv"
NVIDIA = DATA / "heldout_2026i_mlperf_nvidia.csv"
FINETUNE = DATA / "heldout_2026i_dgxc_finetune.csv"
MOE = DATA / "heldout_2026i_dgxc_moe.csv"
# the part maker's own rows (perf_amd, perf_mlperf) each partner row repeats: keyed by part and benchmark
OWN = {"amd": DATA / "amd_mlperf.csv", "nvidia": DATA / "nvidia_mlperf.csv"}


def amd_rows() -> list[dict[str, str]]:
    return list(csv.DictReader(AMD.open(encoding="utf-8")))


def nvidia_rows() -> list[dict[str, str]]:
    return list(csv.DictReader(NVIDIA.open(encoding="utf-8")))



def amd_cases() -> list[tuple[str, str, float, float]]:
    """(row id, source key, measured, predicted tokens/s/GPU) of the rows on AMD's code."""
    return row_cases(amd_rows(), mlperf_job, "source_key")


def nvidia_cases() -> list[tuple[str, str, float, float]]:
    """(row id, source key, measured, predicted tokens/s/GPU) of the rows on NVIDIA's code."""
    return row_cases(nvidia_rows(), mlperf_nvidia_job, "source_key")


def cases() -> list[tuple[str, str, float, float]]:
    """The MLPerf rows (source (1))."""
    return amd_cases() + nvidia_cases()


# source (2), in finetune_heldout's columns (no `refused` one: its cases stay this file's; docs/known-gaps.md 257 (b))
finetune_rows = fh.Batch((FINETUNE,)).rows


def finetune_cases() -> list[Case]:
    """Source (2): each row through finetune_heldout's job path (tokens/s; no memory figure published)."""
    cat = load_catalog()
    return [c for r in finetune_rows() for c in fh.row_cases(r, cat)]


def own_row_id(r: dict[str, str]) -> str:
    """The part maker's row of the same part, benchmark and code (AMD's v5.0 MI300X row for Krai's v5.0-code run;
    perf_mlperf's University of Florida B200 / Lenovo B300 rows, whose config files these hosts ran, for NVIDIA's)."""
    acc, rid = r["accelerator"], r["id"]
    if r["source_key"].startswith("MLPerf Training v5.1 partners, NVIDIA"):
        return f"mlperf5.1_{acc}_llama2_70b_lora_fp8_8gpu"
    bench = "llama31_8b_pretrain" if "_llama31_8b_" in rid else "llama2_70b_lora"
    return f"mlperf{'5.0' if '_v5.0code_' in rid else '5.1'}_{acc}_{bench}_fp8_8gpu"


def against_own(cs: list[tuple[str, str, float, float]]) -> list[tuple[str, str, float, float]]:
    """(row, the maker's row, measured ratio, predicted ratio) for each partner row."""
    own: dict[str, float] = {}
    for path in OWN.values():
        own |= {r["id"]: float(r["tokens_per_sec_per_gpu"]) for r in csv.DictReader(path.open(encoding="utf-8"))}
    by = {r["id"]: r for r in amd_rows() + nvidia_rows()}
    pred_own = dict(job_tokens_per_gpu((own_row_id(by[rid]), _own_job(own_row_id(by[rid]))) for rid, _, _, _ in cs))
    return [(rid, own_row_id(by[rid]), m / own[own_row_id(by[rid])], p / pred_own[own_row_id(by[rid])])
            for rid, _, m, p in cs]


def _own_job(row_id: str) -> dict:
    import perf_amd
    import perf_mlperf

    for path, job in ((OWN["amd"], perf_amd.job), (OWN["nvidia"], perf_mlperf.job)):
        for r in csv.DictReader(path.open(encoding="utf-8")):
            if r["id"] == row_id:
                return job(r)
    raise KeyError(row_id)


MOE_BATCH = ph.Batch((MOE,))  # source (3), in perf_heldout's columns and job path (docs/known-gaps.md 257 (b))
moe_rows, moe_run = MOE_BATCH.rows, MOE_BATCH.run_all


def fits() -> list[Fit]:
    """Each row's predicted peak memory against the card's usable memory (every row ran on real hardware)."""
    return job_fits([(r["id"], mlperf_job(r)) for r in amd_rows()] + [(r["id"], mlperf_nvidia_job(r)) for r in nvidia_rows()])


def main() -> None:
    cs = cases()
    errs = print_cases(cs)
    print(f"\nMLPerf v5.1 partner runs, AMD's and NVIDIA's code (held out, nothing fitted): n={len(cs)} MAPE "
          f"{100 * errs.mean():.1f}%")
    by = {r["id"]: r for r in amd_rows() + nvidia_rows()}
    print_keyed_groups(cs, (("source", lambda rid, s: s), ("part", lambda rid, s: by[rid]["accelerator"]),
                            ("submitter", lambda rid, s: by[rid]["source"].split(", ")[1].split(" closed-division")[0])),
                       80)
    print_worst(cs, 6)
    print("\neach partner row over the part maker's own row of the same code and layout (measured / predicted ratio):")
    for rid, own, m, p in against_own(cs):
        print(f"  {rid:62s} / {own:46s} measured {m:.3f} predicted {p:.3f}")
    print_fits(fits(), "perf_heldout33")
    print_finetune(finetune_cases())
    print("\n(3) dgxc-benchmarking v25.05.05 DeepSeek-V3, NeMo 25.04 (held out, nothing fitted):")
    run = moe_run()
    p28.print_rows(run)
    p28.print_summary(run, "dgxc DeepSeek-V3 BF16 (nothing fitted)", 60)
    p28.print_pairs_and_refusals(run)


def print_finetune(fc: list[Case]) -> None:
    print("\n(2) dgxc-benchmarking v25.04 ft_llama3, NeMo 24.12 fine-tuning on H100 (held out, nothing fitted):")
    print(f"{'row':44s} {'measured':>9s} {'predicted':>9s} {'err%':>7s}")
    for c in fc:
        note = f" REFUSED: {c.skipped}" if c.skipped else ""
        print(f"{c.row_id:44s} {c.measured:9.0f} {c.predicted:9.0f} {100 * (c.predicted / c.measured - 1):+7.1f}{note}")
    scored = [c for c in fc if not c.skipped]
    print(f"n={len(scored)} MAPE {mape(scored):.1f}%")
    for key in ("_8b_sft_", "_8b_lora_", "_70b_sft_", "_70b_lora_"):
        group = [c for c in scored if key in c.row_id]
        print(f"  {key.strip('_'):10s} n={len(group):2d} MAPE {mape(group):5.1f}%")


if __name__ == "__main__":
    main()
