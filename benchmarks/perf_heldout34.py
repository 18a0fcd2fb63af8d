"""Held-out check on published runs added 2026-12-05 (ninth batch; nothing is fitted on them). Three sources.

(1) NVIDIA's DGX Cloud benchmarking recipes, release v25.05.05 (NVIDIA/dgxc-benchmarking at c5c765f, 2025-10-22): the
three 'Expected Performance' tables perf_heldout33 left (docs/known-gaps.md 86 (f)), NeMo 2 pre-training at 8,192
tokens, each row the table's step time as tokens/s a GPU (8,192 x global batch / step / GPUs), in heldout_pretrain.csv's
columns (benchmarks/data/heldout_2026j_dgxc_moe.csv, built by perf_heldout.job_of):
- Llama 4 Maverick (400B, 128 experts top-1, MoE every second layer), BF16 and FP8 on 128 / 256 / 512 GB200 (TP 1, PP 2,
  VP 12, EP 64) and 512 H100 (TP 4, EP 128, ETP 4; the FP8 run with CUDA graphs), NeMo 25.04.01. 8 rows.
- Grok-1 314B as NeMo's benchmark builds it (the Mixtral model class at Grok-1's sizes, benchmarks/data/heldout_models.yaml
  nemo-grok1-314b), BF16 and FP8 on 128 / 256 / 512 GB200 (TP 4, EP 8, ETP 4, CUDA graphs) and 512 H100 (TP 4, PP 8,
  VP 8, CP 2, EP 8), NeMo 25.04.00. 8 rows.
- Nemotron-H 56B (hybrid Mamba-2 / attention) FP8 on 32-2,048 H100 (TP 8, weak scaling at 3 sequences a GPU), NeMo
  25.04.01. 7 rows (perf_hybrid holds the 25.07 README's 256-GPU parse example of the same job).
Each row's layout is its README's configuration table and launch.sh; the rest is read from the NeMo commit its setup.sh
pins (scripts/performance/llm/pretrain_<model>.py, utils.set_primary_perf_configs, the recipe's performance mode),
said per row in `assumed`. Where the README's cells disagree, the step time is taken: the Grok-1 GB200 512-GPU
throughput cells repeat the 256 ones (their MFU cells follow the step), the Llama 4 128-GB200 BF16 MFU divides by the
FP8 peak, the Llama 4 GB200 global batch is the table's 8 x GPUs (launch.sh's default 1,024 would halve the rate at 256).

(2) MLPerf Training v6.0, Krai's Llama 2 70B LoRA on 8 / 16 / 32 GH200 of Isambard-AI phase 2 (2 / 4 / 8 quad-GH200
nodes over HPE Slingshot 11), the three runs perf_mlperf6 refuses for want of a network (known-gaps 28 (f)): a job can
state the network inline (4 NICs a node at 200 Gb/s, the submission's system file), so they are estimated here, in
mlperf6.csv's columns (benchmarks/data/heldout_2026j_mlperf6_krai.csv, built by perf_mlperf6.job with that network);
each row the median per-block train_step_time of result_1.txt, as perf_mlperf6's 4-GPU row of the same code. The 64-GPU
run is refused: its config (CP 2, MINIBS 1) and its log (global batch 16, no accumulation) do not state one job.

(3) MLPerf Training v5.0 (2025-06-04) runs of the makers' own 8-GPU Llama 2 70B LoRA code on partners' hosts no benchmark
held, each config identical to the maker's (Supermicro's H200 run: the config its logs print is Dell's held H200 run's) (read in the public copy prishajain1/training_results_v5.0 at ab57af8 of
mlcommons/training_results_v5.0 0fdc28f): AMD's code on Dell and Oracle MI300X and GigaComputing, QCT and Supermicro
MI325X (benchmarks/data/heldout_2026j_mlperf5_amd.csv, heldout_2026i_mlperf_amd.csv's columns, the median per-block
samples/s of the 10 logs, built by perf_heldout26.mlperf_job); NVIDIA's code on Supermicro (two hosts), GigaComputing
and Lenovo B200 (heldout_2026j_mlperf5_nvidia.csv, heldout_2026i_mlperf_nvidia.csv's columns, the median per-block
train_step_time, built by perf_heldout26.mlperf_nvidia_job; and Supermicro's H200 on NVIDIA's v4.1 code, its samples/s). As perf_heldout33's v5.1 partner rows: the estimate gives
each the maker's row's figure, so the measured ratio to the maker's row is the vendor spread.

Left out: the same release's llama3.1 405B and nemotron 340B GB200 tables (they repeat NeMo 25.04's performance-summary
jobs, perf_heldout's rows, within 1-7%); later dgxc-benchmarking releases (v25.07 to v26.06.01) publish no step-time
table in their READMEs (the figures moved off the repository); torchtitan's benchmarks/ folder at b5bcd76c6
(2026-08-21) holds no file newer than perf_heldout28 / 29 / modern hold; Megatron-Bridge's performance summaries
through 26.08 are held (perf_mbridge26, perf_heldout26 / 27 / 29, perf_hybrid). Of v5.0's LoRA runs: Dell's GB200 runs on
16 / 32 / 36 / 64 GPUs (no GB200 config of those sizes in the submission and none printed: TP x CP is not stated);
ASUSTeK's 16 H200 (TP 2, its system file states no network) and Dell's 16 H200 (no 2-node config, no network stated);
QCT's D74H (H200; its logs print no config, its implementation folder was not read).

Printed: each row (measured, predicted, error), the MAPE per source and per model / part, the worst rows with the
estimate's step, the FP8 / BF16 gain at one layout (measured and predicted), each scale series' per-GPU rate against
its smallest run, refused rows, and rows predicted not to fit.

Sign: (predicted - measured) / measured of tokens/s per GPU, + = predicted too fast.

Run: python benchmarks/perf_heldout34.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

import perf_heldout as ph
import perf_heldout28 as p28
import perf_mlperf6 as m6
from harness import (
    Fit,
    job_fits,
    job_tokens_per_gpu,
    kept_rows,
    print_cases,
    print_fits,
    refused_rows,
    row_cases,
)
from perf_heldout26 import mlperf_job, mlperf_nvidia_job
from perf_mbridge26 import print_keyed_groups, print_worst
from perf_mlperf import print_step_lines

DATA = Path(__file__).resolve().parent / "data"
DGXC = DATA / "heldout_2026j_dgxc_moe.csv"
KRAI = DATA / "heldout_2026j_mlperf6_krai.csv"
V50_AMD = DATA / "heldout_2026j_mlperf5_amd.csv"
V50_NVIDIA = DATA / "heldout_2026j_mlperf5_nvidia.csv"
# the maker's own v5.0 row each partner row repeats (perf_amd's, perf_mlperf's)
V50_OWN = {"amd": DATA / "amd_mlperf.csv", "nvidia": DATA / "nvidia_mlperf.csv",
           "dell": DATA / "heldout_2026b_mlperf_nvidia.csv"}


DGXC_BATCH = ph.Batch((DGXC,))  # source (1), in perf_heldout's columns and job path (docs/known-gaps.md 257 (b))
dgxc_rows, dgxc_run = DGXC_BATCH.rows, DGXC_BATCH.run_all


def krai_rows() -> list[dict[str, str]]:
    """Source (2), every row (the refused one included)."""
    return list(csv.DictReader(KRAI.open(encoding="utf-8")))


def krai_job(r: dict[str, str]) -> dict:
    """perf_mlperf6's job of the row, its network the row's inline one (NICs a node, Gb/s a NIC, kind)."""
    job = m6.job(r)
    job["hardware"]["network"] = ph._extra(r["network"])
    return job


def krai_cases() -> list[tuple[str, str, float, float]]:
    """(row id, submitter, measured, predicted tokens/s/GPU) of the estimated rows of source (2)."""
    rs = kept_rows(krai_rows())
    predicted = job_tokens_per_gpu((r["id"], krai_job(r)) for r in rs)
    return [(r["id"], r["submitter"], float(r["tokens_per_sec_per_gpu"]), p) for r, (_, p) in zip(rs, predicted, strict=True)]


def krai_one_node_case() -> tuple[str, str, float, float]:
    """perf_mlperf6's 4-GPU row of the same code (one node, no network): the scale series' base, not scored here."""
    r = next(r for r in m6.rows() if r["id"] == "mlperf6.0_krai_gh200_llama2_70b_lora_4gpu")
    return r["id"], r["submitter"], float(r["tokens_per_sec_per_gpu"]), job_tokens_per_gpu([(r["id"], m6.job(r))])[0][1]


def krai_refused() -> list[tuple[str, str]]:
    return refused_rows(krai_rows())


def fits() -> list[Fit]:
    """Sources (2) and (3)'s estimated rows: predicted peak memory against the card's usable memory (each ran)."""
    return job_fits([(r["id"], krai_job(r)) for r in kept_rows(krai_rows())]
                    + [(r["id"], mlperf_job(r)) for r in v50_amd_rows()]
                    + [(r["id"], mlperf_nvidia_job(r)) for r in v50_nvidia_rows()])


def v50_amd_rows() -> list[dict[str, str]]:
    return list(csv.DictReader(V50_AMD.open(encoding="utf-8")))


def v50_nvidia_rows() -> list[dict[str, str]]:
    return list(csv.DictReader(V50_NVIDIA.open(encoding="utf-8")))



def v50_amd_cases() -> list[tuple[str, str, float, float]]:
    """Source (3) on AMD's code: (row id, source key, measured, predicted tokens/s/GPU)."""
    return row_cases(v50_amd_rows(), mlperf_job, "source_key")


def v50_nvidia_cases() -> list[tuple[str, str, float, float]]:
    """Source (3) on NVIDIA's code: (row id, source key, measured, predicted tokens/s/GPU)."""
    return row_cases(v50_nvidia_rows(), mlperf_nvidia_job, "source_key")


def v50_cases() -> list[tuple[str, str, float, float]]:
    """Source (3), AMD's code then NVIDIA's."""
    return v50_amd_cases() + v50_nvidia_cases()


def v50_own_id(r: dict[str, str]) -> str:
    """The row of the same part and config it repeats: the maker's own v5.0 row (amd_mlperf.csv / nvidia_mlperf.csv),
    or for Supermicro's H200 run on NVIDIA's v4.1 code, Dell's held run of that printed config (perf_heldout26)."""
    if r["accelerator"].startswith("h200"):
        return "mlperf5.0_dell_h200_sxm_llama2_70b_lora_fp8_8gpu"
    return f"mlperf5.0_{r['accelerator']}_llama2_70b_lora_fp8_8gpu"


def v50_against_own() -> list[tuple[str, float, float]]:
    """(row, measured, predicted ratio to the maker's own row) for each source (3) row."""
    own = {}
    for path in V50_OWN.values():
        own |= {r["id"]: float(r["tokens_per_sec_per_gpu"]) for r in csv.DictReader(path.open(encoding="utf-8"))}
    rows = {r["id"]: r for r in v50_amd_rows() + v50_nvidia_rows()}
    own_rows = {v50_own_id(r): r for r in rows.values()}
    own_pred = dict(job_tokens_per_gpu((rid, (mlperf_job if r["accelerator"].startswith("mi") else mlperf_nvidia_job)(
        r | {"id": rid})) for rid, r in own_rows.items()))
    return [(rid, m / own[v50_own_id(rows[rid])], p / own_pred[v50_own_id(rows[rid])]) for rid, _, m, p in v50_cases()]


def _model_part(row_id: str) -> str:
    """'llama4_maverick / gb200' from 'dgxc25.05_gb200_llama4_maverick_bf16_128gpu'."""
    parts = row_id.split("_")
    return f"{'_'.join(parts[2:-2])} / {parts[1]}"


def scale_series(cs: list[tuple[str, str, float, float]]) -> list[tuple[str, float, float]]:
    """(row, measured, predicted per-GPU rate over the series' smallest run's) for every row of a series that differs
    only in the GPU count (the id less its count): what scaling costs, measured and modelled."""
    series: dict[str, list[tuple[int, str, float, float]]] = {}
    for rid, _, m, p in cs:
        head, count = rid.rsplit("_", 1)
        series.setdefault(head, []).append((int(count.removesuffix("gpu")), rid, m, p))
    out = []
    for rows in series.values():
        rows.sort()
        _, _, m0, p0 = rows[0]
        out += [(rid, m / m0, p / p0) for _, rid, m, p in rows[1:]]
    return out


def main() -> None:
    print("(1) dgxc-benchmarking v25.05.05 Llama 4 Maverick, Grok-1 314B, Nemotron-H 56B on NeMo 25.04 (held out):")
    run = dgxc_run()
    p28.print_rows(run)
    p28.print_summary(run, "dgxc v25.05 pre-training (nothing fitted)", 66)
    cs = [(c.row_id, c.source, c.measured, c.predicted) for c, _, _ in run if not c.skipped]
    print_keyed_groups(cs, (("model/part", lambda rid, s: _model_part(rid)),), 26)
    print("FP8 / BF16 throughput at one layout (measured vs predicted):")
    for row_id, _, meas, pred in ph.precision_pairs([(c, "", r) for c, _, r in run]):
        print(f"  {row_id:58s} measured {meas:.3f} predicted {pred:.3f}  {pred / meas - 1.0:+6.1%}")
    p28.print_pairs_and_refusals(run)
    kc = krai_cases()
    print("\n(2) MLPerf Training v6.0, Krai's Llama 2 70B LoRA on 8-32 GH200 over Slingshot 11 (held out):")
    errs = print_cases(kc)
    one = krai_one_node_case()
    print(f"n={len(kc)} MAPE {100 * errs.mean():.1f}% (perf_mlperf6's 4-GPU row of the same code, one node: "
          f"{100 * (one[3] / one[2] - 1):+.1f}%)")
    for rid, why in krai_refused():
        print(f"  refused {rid}: {why}")
    # one layout at 4 / 2 / 1 micro-batches a step: what a step costs whatever its micro-batches (known-gaps 105)
    print_step_lines(kept_rows(krai_rows()), {rid: (m, p) for rid, _, m, p in kc}, krai_job)
    print_fits(fits(), "perf_heldout34 (2) and (3)")
    vc = v50_cases()
    print("\n(3) MLPerf Training v5.0 partner runs of the makers' 8-GPU LoRA code (held out):")
    errs = print_cases(vc)
    print(f"n={len(vc)} MAPE {100 * errs.mean():.1f}%")
    print_keyed_groups(vc, (("source", lambda rid, s: s),), 80)
    print("each row over the maker's own row of the same config (measured / predicted ratio):")
    for rid, meas, pred in v50_against_own():
        print(f"  {rid:62s} measured {meas:.3f} predicted {pred:.3f}")
    print("\neach scale series' per-GPU rate over its smallest run's (measured vs predicted):")
    for rid, meas, pred in scale_series(cs + [one] + kc):
        print(f"  {rid:58s} measured {meas:.3f} predicted {pred:.3f}")
    every = np.array([abs(p - m) / m for _, _, m, p in cs + kc + vc])
    print(f"\nperf_heldout34 (all three sources): time n={len(every)} MAPE {100 * every.mean():.1f}%")
    print_worst(cs + kc + vc, 6)


if __name__ == "__main__":
    main()
