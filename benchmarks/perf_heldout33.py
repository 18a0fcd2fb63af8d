"""Held-out check on published runs added 2026-12-04 (eighth batch; nothing is fitted on them): the MLPerf Training
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
Left out: Quanta's D75T (MI325X) and D74H (H200) LoRA runs (the submission holds no implementation or config for
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

from harness import Fit, job_fits, job_tokens_per_gpu, print_cases, print_fits
from perf_heldout26 import mlperf_job, mlperf_nvidia_job
from perf_mbridge26 import group_mape, print_worst

DATA = Path(__file__).resolve().parent / "data"
AMD = DATA / "heldout_2026i_mlperf_amd.csv"
NVIDIA = DATA / "heldout_2026i_mlperf_nvidia.csv"
# the part maker's own rows (perf_amd, perf_mlperf) each partner row repeats: keyed by part and benchmark
OWN = {"amd": DATA / "amd_mlperf.csv", "nvidia": DATA / "nvidia_mlperf.csv"}


def amd_rows() -> list[dict[str, str]]:
    return list(csv.DictReader(AMD.open(encoding="utf-8")))


def nvidia_rows() -> list[dict[str, str]]:
    return list(csv.DictReader(NVIDIA.open(encoding="utf-8")))


def _cases(rs: list[dict[str, str]], job) -> list[tuple[str, str, float, float]]:
    predicted = job_tokens_per_gpu((r["id"], job(r)) for r in rs)
    return [(r["id"], r["source_key"], float(r["tokens_per_sec_per_gpu"]), p) for r, (_, p) in zip(rs, predicted, strict=True)]


def amd_cases() -> list[tuple[str, str, float, float]]:
    """(row id, source key, measured, predicted tokens/s/GPU) of the rows on AMD's code."""
    return _cases(amd_rows(), mlperf_job)


def nvidia_cases() -> list[tuple[str, str, float, float]]:
    """(row id, source key, measured, predicted tokens/s/GPU) of the rows on NVIDIA's code."""
    return _cases(nvidia_rows(), mlperf_nvidia_job)


def cases() -> list[tuple[str, str, float, float]]:
    return amd_cases() + nvidia_cases()


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


def fits() -> list[Fit]:
    """Each row's predicted peak memory against the card's usable memory (every row ran on real hardware)."""
    return job_fits([(r["id"], mlperf_job(r)) for r in amd_rows()] + [(r["id"], mlperf_nvidia_job(r)) for r in nvidia_rows()])


def main() -> None:
    cs = cases()
    errs = print_cases(cs)
    print(f"\nMLPerf v5.1 partner runs, AMD's and NVIDIA's code (held out, nothing fitted): n={len(cs)} MAPE "
          f"{100 * errs.mean():.1f}%")
    by = {r["id"]: r for r in amd_rows() + nvidia_rows()}
    for title, key in (("source", lambda rid, s: s), ("part", lambda rid, s: by[rid]["accelerator"]),
                       ("submitter", lambda rid, s: by[rid]["source"].split(", ")[1].split(" closed-division")[0])):
        for g, (n, mape) in group_mape(cs, key).items():
            print(f"  {title:9s} {g:80s} n={n:2d} MAPE {mape:5.1f}%")
    print_worst(cs, 6)
    print("\neach partner row over the part maker's own row of the same code and layout (measured / predicted ratio):")
    for rid, own, m, p in against_own(cs):
        print(f"  {rid:62s} / {own:46s} measured {m:.3f} predicted {p:.3f}")
    print_fits(fits(), "perf_heldout33")


if __name__ == "__main__":
    main()
