"""Held-out check on published runs added 2026-12-06 (thirty-sixth batch: NVIDIA's DGX Cloud benchmark release v24.11,
NeMo 1 pre-training on DGX H100, BF16 and FP8; nothing is fitted on them), one source no benchmark held:

(1) NVIDIA/dgxc-benchmarking at tag v24.11.1 (35a9aecc; the release's CHANGELOG entry is dated 2024-12-13): the
'Expected Performance' tables of llama3.1/README_{8b,70b,405b}.md (Llama 3.1 on the NeMo 24.09 container),
nemotron/README_{15b,340b}.md (Nemotron-4, release '24.11' on NeMo 24.09) and nemo_megatron/README_175b.md (GPT-3 on
NeMo 24.05): seconds a step, 'the last training step timing' of a 50-step run, 8 to 2,304 H100. The release's jobs are
NeMo 1's megatron_gpt_pretraining.py with a hydra yaml per model (Megatron-Core GPT, Transformer Engine, Apex's
DistributedFusedAdam): the release the development set's v25.04 rows follow (NeMo 2 recipes on 25.02), with other
layouts (Nemotron-4 15B at TP 4 x MBS 4 where v25.04 runs TP 2 x MBS 2), another tokenizer (the 405B's GPT-2 proxy) and
other attention backends (NVTE_FUSED_ATTN=0 for Nemotron-4 340B and GPT-3: Transformer Engine's FlashAttention).
Rows: each distinct layout (model, layers, TP / PP / VP / CP) at the smallest and the largest GPU count of its table,
BF16 and FP8: 30 rows. Every setting is the release's own yaml and configure.sh / launch.sh, named in each row's
`assumed`. Second increment the same day: grok1/README_314b.md, Grok-1 314B in the 'dev' NeMo container (by digest,
NeMo 24.09 code): Mixtral-style MoE in every layer (8 experts, top-2, the alltoall dispatcher padded to capacity 1.0,
SequentialMLP), TP 4 with EP 2 / 4 / 8, the README's own layout table per GPU count (2- to 64-layer proxies, 4,096 or
8,192 tokens, CP 1 / 2, PP 1-8 with VP 8), every distinct layout at each count (the 512- and 2,048-GPU columns of the
full model, not the 1,024 between): 16 rows.

Data: benchmarks/data/heldout_2027j_dgxc2411.csv in heldout_pretrain.csv's columns (perf_heldout.job_of builds each
job); the 405B's layer-reduced proxies with the GPT-2 vocabulary and Grok-1's proxies:
benchmarks/data/heldout_2027j_dgxc2411_models.yaml.

Printed: each row (published, predicted, error, the estimate's step terms), MAPE by model and by precision, the FP8
over BF16 step ratio of each pair (measured and predicted) and the largest over the smallest GPU count of each layout
(measured and predicted: the scaling the tables show); memory fits (the tables state none).

Sign: (predicted - published) / published of the step's rate (1 / step time); + = predicted too fast.

Run: python benchmarks/perf_heldout62.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import perf_heldout as ph
from harness import Case, mape, print_fits

DATA = Path(__file__).resolve().parent / "data"
ROWS = DATA / "heldout_2027j_dgxc2411.csv"
MODELS = DATA / "heldout_2027j_dgxc2411_models.yaml"
# perf_heldout's models (Nemotron-4) and this batch's 405B proxies
BATCH = ph.Batch((ROWS,), (ph.MODELS, MODELS))
rows, models, run_all, job, fits = BATCH.rows, BATCH.models, BATCH.run_all, BATCH.job, BATCH.fits


def rate_err(c: Case) -> float:
    """The error of the step's rate: published / predicted step time - 1 (+ = predicted too fast)."""
    return c.measured / c.predicted - 1.0


def _stats(cs: list[Case]) -> str:
    errs = [rate_err(c) for c in cs]
    return (f"n={len(cs):2d} MAPE {100 * float(np.mean(np.abs(errs))):5.1f}% (median "
            f"{100 * float(np.median(errs)):+.1f}%)")


def group_lines(cs: list[Case], rs: dict[str, dict[str, str]], key: str) -> list[str]:
    """n, MAPE and median rate error of the scored rows by one of the row's columns."""
    groups: dict[str, list[Case]] = {}
    for c in cs:
        groups.setdefault(rs[c.row_id][key], []).append(c)
    return [f"  {key} {k:28s} {_stats(g)}" for k, g in groups.items()]


def ratio_lines(cs: list[Case], rs: dict[str, dict[str, str]]) -> list[str]:
    """FP8 over BF16 step time of each pair (the same model, layout and GPU count), measured and predicted."""
    by = {c.row_id: c for c in cs}
    out = []
    for rid, c in by.items():
        twin = by.get(rid.replace("_fp8_", "_bf16_")) if "_fp8_" in rid else None
        if twin:
            out.append(f"  {rid.removeprefix('dgxc24.11_'):32s} FP8 / BF16 step: measured {c.measured / twin.measured:.3f}, "
                       f"predicted {c.predicted / twin.predicted:.3f}")
    return out


def scaling_lines(cs: list[Case], rs: dict[str, dict[str, str]]) -> list[str]:
    """The largest over the smallest GPU count of each layout (same model, precision and layers): step time ratio,
    measured and predicted (the per-rank batch is the same at both counts)."""
    groups: dict[tuple[str, str], list[Case]] = {}
    for c in cs:
        r = rs[c.row_id]
        groups.setdefault((r["model"], r["precision"]), []).append(c)
    out = []
    for (model, prec), g in groups.items():
        if len(g) < 2:
            continue
        lo, hi = sorted(g, key=lambda c: int(rs[c.row_id]["gpu_count"]))[::len(g) - 1]
        out.append(f"  {model:28s} {prec:4s} {rs[hi.row_id]['gpu_count']:>5s} / {rs[lo.row_id]['gpu_count']:>4s} GPUs: "
                   f"measured {hi.measured / lo.measured:.3f}, predicted {hi.predicted / lo.predicted:.3f}")
    return out


def main() -> None:
    run = run_all()
    scored = ph.scored_refused(run)[0]
    rs = {r["id"]: r for _, _, r in run}
    print("(1) dgxc-benchmarking v24.11 (NeMo 24.05 / 24.09 on DGX H100): seconds a step, published / predicted (rate "
          "error; held out, nothing fitted):")
    for c, res, _ in run:
        if c.skipped:
            print(f"  {c.row_id:40s} {c.skipped}")
            continue
        b = {k: v for k, v in res["time"]["breakdown_s"].items() if v > 0.005}
        terms = ", ".join(f"{k} {v:.2f}" for k, v in b.items())
        print(f"  {c.row_id:40s} {c.measured:6.2f} {c.predicted:6.2f} ({100 * rate_err(c):+6.1f}%)  {terms}")
    print("\nby model / precision:")
    print("\n".join(group_lines(scored, rs, "source_key") + group_lines(scored, rs, "precision")))
    print("\nFP8 over BF16 (same layout and GPUs):")
    print("\n".join(ratio_lines(scored, rs)))
    print("\nlargest over smallest GPU count (same layout, per-rank batch):")
    print("\n".join(scaling_lines(scored, rs)))
    print_fits(fits(), "perf_heldout62")
    print(f"\nperf_heldout62 time: {_stats(scored)} (step time MAPE {mape(scored):.1f}%); "
          f"refused {len(ph.scored_refused(run)[1])}")


if __name__ == "__main__":
    main()
