"""Held-out check on training runs that papers report with their layout (issue #13: "the same accuracy is expected on
published runs that are not in the development set"). Nothing here is fitted: do not tune constants on these rows.

Rows: benchmarks/data/papers.csv, one published figure each, with the paper (arXiv id and URL), the table or section
it is read from, the paper's date, and every setting the paper does not state in `assumed`. Architectures without a
shipped preset: benchmarks/data/papers_models.yaml (and heldout_models.yaml for Nemotron-4). Sources:
- MegaScale (Jiang et al. 2024, arXiv:2402.15627) Tables 2-3 / Figure 9: the Megatron-LM baseline (commit
  285068c8) on 256-12,288 A100s, GPT 175B (TP 8, PP 8, six interleaved stages) and 530B (TP 8, PP 35, three), 8 x 200 Gb/s
  RoCE per node. MegaScale's own rows are left out: parallel blocks, sliding-window attention of unstated width,
  LAMB and its custom overlaps are not a configuration a user could state.
- Nemotron-4 15B report (arXiv:2402.16819) Table 2: TP 8 x DP 96-288 on 768-2,304 H100, iteration time.
- Nemotron-4 340B report (arXiv:2406.11704) Table 2: TP 8 x PP 12 (interleaved) x DP 16-64 on 1,536-6,144 H100.
- GLM-130B (arXiv:2210.02414) s3: 768 A100 40GB, TP 4 x PP 8, DeepSpeed pipeline, FP16, MFU 32.5% (PaLM); its
  training notes (github:THUDM/GLM-130B logs/main-log-en.md): the same layout's step at batch 4,224 and 6,144.
- BloombergGPT (arXiv:2303.17564) s3.4: 512 A100 40GB on p4d (EFA), ZeRO-3 over 128-GPU groups (MiCS), 32.5 s a
  step, written as DeepSpeed's MiCS (stage 3 with a 128-GPU shard group).
- ZeRO++ (arXiv:2306.10209) and DeepSpeed's ZeRO++ blog (2023-06-22, Figures 6-8): the ZeRO-3 baseline of
  Megatron-DeepSpeed GPTs of 18B-138B on 384 V100 (DGX-2 nodes of 16) at 1K / 2K tokens a GPU over 1, 2, 4 and
  8 x 100 Gb/s InfiniBand a node, in the TFLOPs Megatron-DeepSpeed logs (Narayanan 2021 Eq. 3 with recompute,
  `narayanan_tflops_per_gpu`: the ZeRO++ tutorial's own baseline log reproduces from its step time).
Left out (docs/known-gaps.md 44): OPT-175B's 147 TFLOP/s (FLOP convention not stated), Falcon (paper text not at
hand here), BLOOM (already in the development set, perf_validation), GPT-NeoX-20B (perf_heldout).

Each row goes through the public job path (perf_heldout.estimate_row: `resolve_job` + `evaluate`). Metrics: `step_time_s`
(the estimate's step); `mfu_6n_total_pct` (MegaScale's MFU: 6 x all parameters + 12 L h s FLOPs per token, the
convention that reproduces its Table 2 MFU from its tokens/s, over `peak_tflops`); `palm_mfu_pct` (PaLM appendix B:
6 x non-embedding parameters + 12 L h s, over `peak_tflops`); the FLOP/s conventions of perf_heldout
(`narayanan_tflops_per_gpu`, ...). Errors are signed throughput errors, + = predicted too
fast (for a step time: published / predicted - 1; for an MFU: predicted / published - 1). A refused row is printed
as REFUSED with the error: each is a bug to report.

Run: python benchmarks/perf_papers.py
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from harness import Case, mape, model_data, whole
from perf_heldout import estimate_row
from perf_heldout import predicted_metric as heldout_metric
from trainsizer.estimate import flops as F

DATA = Path(__file__).resolve().parent / "data"
ROWS = DATA / "papers.csv"
MODEL_FILES = (DATA / "papers_models.yaml", DATA / "heldout_models.yaml")
MFU_METRICS = ("mfu_6n_total_pct", "palm_mfu_pct")


def models() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for path in MODEL_FILES:
        out.update(model_data(path))
    return out


def rows() -> list[dict[str, str]]:
    return list(csv.DictReader(ROWS.open(encoding="utf-8")))


def model_flops_per_token(metric: str, model: Any, seq: float) -> float:
    """The paper's model-FLOPs numerator per token for an MFU metric."""
    attention = 12.0 * model.layers * model.heads * model.head_dim * seq  # PaLM appendix B: 12 L H Q T
    if metric == "mfu_6n_total_pct":  # MegaScale Table 2: 6 x all parameters (embeddings included) + attention
        return 6.0 * model.params_total + attention
    if metric == "palm_mfu_pct":  # PaLM appendix B: 6 x non-embedding parameters + attention
        return F.palm_flops_per_token(model.params_non_embedding, model.layers, model.heads, model.head_dim, seq)
    raise ValueError(f"unknown MFU metric {metric!r}")


def predicted_metric(row: dict[str, str], result: dict[str, Any], model: Any) -> float:
    step_s = float(result["time"]["step_s"])
    if row["metric"] == "step_time_s":
        return step_s
    if row["metric"] in MFU_METRICS:
        seq, gpus = whole(row["seq_len"]), whole(row["gpu_count"])
        tokens = whole(row["global_batch_seqs"]) * seq
        flops = model_flops_per_token(row["metric"], model, seq) * tokens
        return 100.0 * flops / step_s / gpus / (float(row["peak_tflops"]) * 1e12)
    return heldout_metric(row, result, model)  # the FLOP/s conventions perf_heldout scores (Narayanan Eq. 3, ...)


def throughput_err(case: Case) -> float:
    """Signed throughput error (+ = predicted too fast)."""
    if case.metric == "step_time_s":
        return case.measured / case.predicted - 1.0
    return case.predicted / case.measured - 1.0


def run_row(row: dict[str, str], arch: dict[str, Any], catalogs: dict[str, Any]) -> tuple[Case, dict[str, Any]]:
    """(case, the estimate's result or {} when refused)."""
    return estimate_row(row, arch, catalogs, predicted_metric)


def run_all() -> list[tuple[Case, dict[str, Any], dict[str, str]]]:
    arch = models()
    catalogs: dict[str, Any] = {}
    return [(*run_row(row, arch, catalogs), row) for row in rows()]


def breakdown(result: dict[str, Any]) -> str:
    """The estimate's step split as its JSON states it (seconds), for the worst rows."""
    t = result["time"]
    parts = t.get("breakdown_s") or t.get("breakdown") or {}
    items = [(k, float(v)) for k, v in parts.items() if isinstance(v, (int, float)) and float(v) > 0]
    return ", ".join(f"{k} {v:.3g}" for k, v in sorted(items, key=lambda kv: -kv[1])[:6])


def main() -> None:
    cases = run_all()
    print(f"{'row':36s} {'metric':18s} {'published':>10s} {'predicted':>10s} {'thru err':>9s}  memory")
    for case, result, _ in cases:
        if case.skipped:
            print(f"{case.row_id:36s} {case.metric:18s} {case.measured:10.4g} {'-':>10s} {'-':>9s}  {case.skipped}")
            continue
        mem = result["memory"]
        fit = f"{'fits' if mem['fits'] else 'DOES NOT FIT'} ({mem['per_gpu_gib']:.0f} GiB)"
        print(f"{case.row_id:36s} {case.metric:18s} {case.measured:10.4g} {case.predicted:10.4g} "
              f"{throughput_err(case):+9.1%}  {fit}")
    scored = [c for c, _, _ in cases]
    by_source: dict[str, list[Case]] = defaultdict(list)
    for c in scored:
        by_source[c.source].append(c)
    print(f"\nPaper-reported runs: n={len(scored)}, MAPE {mape(scored):.1f}% over the scored rows")
    for source, cs in by_source.items():
        ok = [c for c in cs if not c.skipped]
        worst = max((abs(throughput_err(c)) for c in ok), default=math.nan)
        bias = sum(throughput_err(c) for c in ok) / len(ok) if ok else math.nan
        print(f"  {source:46s} n={len(ok):2d}/{len(cs):2d} MAPE {mape(cs):5.1f}%  mean {100 * bias:+5.1f}%  "
              f"worst {100 * worst:5.1f}%")
    print("worst rows (throughput error, + = predicted too fast) and the estimate's step breakdown (s):")
    done = [(c, r) for c, r, _ in cases if not c.skipped]
    for c, r in sorted(done, key=lambda cr: -abs(throughput_err(cr[0])))[:6]:
        print(f"  {c.row_id:36s} {throughput_err(c):+7.1%}  step {float(r['time']['step_s']):.4g} s: {breakdown(r)}")
    refused = [c for c in scored if c.skipped]
    print(f"refused rows (runs that were made: each is a bug): {len(refused)}")
    for c in refused:
        print(f"  {c.row_id}: {c.skipped}")
    unfit = [c for c, r, _ in cases if r and not r["memory"]["fits"]]
    print(f"rows whose measured run the memory estimate says does not fit: {len(unfit)}")
    for c in unfit:
        print(f"  {c.row_id}")


if __name__ == "__main__":
    main()
