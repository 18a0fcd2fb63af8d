"""Held-out check on published runs added 2026-12-05 (sixteenth batch; nothing is fitted on them): MLPerf Training v6.0
result logs no benchmark used before, on NVIDIA's and AMD's v6.0 implementations (round logs of 2026-04 / 05), read from
the public copy of the round's results perf_mlperf6 reads (github.com/Richardyu114/training_results_v6.0 at eabf23a0).

Data: benchmarks/data/heldout_2026p_mlperf6.csv, in mlperf6.csv's columns, each row built by perf_mlperf6.job (the v5.x
job builders its `builder` column names; job() below adds the row's network to a Primus row across nodes, which
perf_amd's one-node builder leaves out) and measured as perf_mlperf6 measures: the median of the per-block
train_step_time the log prints (block time / steps, evaluation excluded; the first block, which holds the graph capture,
left out), throughput = global batch x sequence / step time / GPUs. The layout, precision and graph scope come from the
config the submission names, or, where the copy lacks it, from the log's Megatron-Bridge configuration summary (every
setting that differs from Megatron-Core's default); a setting neither states is named in the row's `assumed` with the
value taken and where from. A row the estimator cannot state keeps its reason in `refused`.

Printed: each row (measured, predicted, error), MAPE by submitter / benchmark / part, and each new row beside
perf_mlperf6's rows of the same benchmark and part at another layout or scale (measured and predicted ratio: what the
layout or the scale changes, measured and modelled), refused rows, and rows said not to fit.

Sign: (predicted - measured) / measured of tokens/s per GPU, + = predicted too fast.

Run: python benchmarks/perf_heldout42.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

import perf_mlperf6 as m6
from harness import Fit, job_fits, print_fits
from perf_heldout29 import mlperf_rows
from perf_mbridge26 import print_keyed_groups

DATA = Path(__file__).resolve().parent / "data" / "heldout_2026p_mlperf6.csv"


def rows() -> list[dict[str, str]]:
    return list(csv.DictReader(DATA.open(encoding="utf-8")))


def job(r: dict[str, str]) -> dict:
    """The row as a job file: perf_mlperf6.job, with the row's network for a Primus row across nodes (perf_amd's builder,
    written for one node, names none)."""
    j = m6.job(r)
    if r["builder"] == "amd-primus" and r["network"]:
        j["hardware"]["network"] = r["network"]
    return j


def results() -> list[tuple[dict[str, str], float | None, str]]:
    """(row, predicted tokens/s/GPU or None, refusal reason) for every row, as perf_mlperf6's, through this file's job."""
    return m6.results(rows, job)


def cases() -> list[tuple[str, str, float, float]]:
    """(row id, submitter, measured, predicted tokens/s/GPU) of the estimated rows."""
    return m6.cases(rows, job)


def refused() -> list[tuple[str, str]]:
    return [(r["id"], why) for r, p, why in results() if p is None]


def fits() -> list[Fit]:
    """Each estimated row's predicted peak memory against the card's usable memory (every row ran)."""
    est = {rid for rid, _, _, _ in cases()}
    return job_fits((r["id"], job(r)) for r in rows() if r["id"] in est)


def _key(r: dict[str, str]) -> tuple[str, str]:
    return r["benchmark"], r["accelerator"]


def neighbours() -> list[tuple[str, str, float, float]]:
    """(new row id, perf_mlperf6 row id, measured ratio, predicted ratio) of tokens/s/GPU for every perf_mlperf6 row
    of the same benchmark and part: one layout or scale against another, measured and modelled."""
    base = [(r, p) for r, p, _ in m6.results() if p is not None]
    out = []
    for rid, _, m, p in cases():
        r = next(x for x in rows() if x["id"] == rid)
        for b, pb in base:
            if _key(b) == _key(r):
                out.append((rid, b["id"], m / float(b["tokens_per_sec_per_gpu"]), p / pb))
    return out


def _layout(r: dict[str, str]) -> str:
    return (
        f"{r['gpu_count']:>4s} GPUs tp{r['tp']} pp{r['pp']} cp{r['cp']} vp{r['vpp']} mb{r['micro_batch']} "
        f"gb{r['global_batch_seqs']}"
    )


def main() -> None:
    res = results()
    by = {r["id"]: r for r, _, _ in res} | {r["id"]: r for r in m6.rows()}
    print(f"{'row':56s} {'measured':>9s} {'predicted':>9s} {'err%':>7s}")
    for r, p, _ in res:
        if p is not None:
            m = float(r["tokens_per_sec_per_gpu"])
            print(f"{r['id']:56s} {m:9.1f} {p:9.1f} {100 * (p - m) / m:+7.1f}")
    cs = cases()
    errs = np.array([abs(p - m) / m for _, _, m, p in cs])
    print(
        f"\nMLPerf Training v6.0, sixteenth held-out batch (nothing fitted): n={len(cs)} MAPE {100 * errs.mean():.1f}% "
        f"median {100 * float(np.median([(p - m) / m for _, _, m, p in cs])):+.1f}%, {len(refused())} refused"
    )
    print_keyed_groups(
        cs,
        (
            ("submitter", lambda rid, s: s),
            ("benchmark", lambda rid, s: by[rid]["benchmark"]),
            ("system", lambda rid, s: by[rid]["accelerator"]),
        ),
        28,
    )
    print(
        "\nbeside perf_mlperf6's rows of the same benchmark and part (this row over that one, tokens/s/GPU):"
    )
    for rid, bid, mr, pr in neighbours():
        print(
            f"  {rid:52s} [{_layout(by[rid])}]\n    over {bid:47s} [{_layout(by[bid])}] measured {mr:.3f} "
            f"predicted {pr:.3f} ({100 * (pr / mr - 1):+.1f}%)"
        )
    print("refused rows:")
    for rid, why in refused():
        print(f"  {rid}: {why}")
    print_fits(fits(), "MLPerf Training v6.0 sixteenth batch")
    m6.print_pass_split(m6.rows() + mlperf_rows() + rows())
    m6.print_post_eval(m6.rows() + mlperf_rows() + rows())
    m6.print_rank_load(m6.rows() + mlperf_rows() + rows())


if __name__ == "__main__":
    main()
