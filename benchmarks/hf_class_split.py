"""A held-out time class split by every job fact, and which fact carries its spread once the source is accounted for
(docs/known-gaps.md 312): a diagnostic, nothing fitted, no estimate change.

The rows: accuracy_bands' time rows of the class (hf/dense/ampere/node where none is given: the largest class, a
third of the held-out time rows). Each row's facts are read off its job as written (method, precision, recompute,
attention kernel, part, GPUs, how the model states are split over them, micro-batch, LoRA implementation, framework,
packing) and off the estimate's own resolution of it (the positions one micro-batch runs on one GPU,
hf_ampere_families.family_rows). Printed:

- per fact, its values with rows, median signed error %, MAPE % and share of the class's summed |error| %;
- the facts ranked by eta^2 (the share of the signed errors' variance the fact's groups explain) over the class and
  within series (each row's error less its series' mean: what the fact explains where one source and stack hold
  still; accuracy_bands.release_of names the series). A fact that only tells the sources apart scores high over the
  class and near zero within series; one a mechanism follows scores within series too;
- the split the ranking points at (how the states are split x positions a micro-batch): rows, median %, MAPE %, the
  median miss in ms a decoder layer and micro-batch (accuracy_bands.missing_ms_per_layer: flat across the positions
  reads as a cost a layer and micro-batch) beside the estimate's exposed data-parallel ms a layer and micro-batch.

Run: python benchmarks/hf_class_split.py                       (hf/dense/ampere/node; about a minute)
     python benchmarks/hf_class_split.py --class hf/dense/hopper  (any accuracy_bands class, any level)
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from accuracy_bands import Row, class_rows, classify, collect, release_of
from hf_ampere_families import class_arg, family_rows
from trainsizer.catalog import load_catalog

TOKEN_EDGES = (1024.0, 2048.0, 4096.0, 16384.0)  # positions a micro-batch on one GPU: the bins of the split
MB_EDGES = (2.0, 4.0, 8.0)  # the micro-batch as written (sequences a GPU a micro-batch)


@dataclass
class SplitRow:
    """One time row of a class: its signed error, the miss and exposed data-parallel ms a layer and micro-batch, the
    positions a micro-batch (nan where the job does not resolve) and its facts."""

    row_id: str
    err: float  # signed %, + = predicted too fast
    miss_ms: float
    dp_ms: float
    tokens: float
    facts: dict[str, str] = field(default_factory=dict)


def bin_label(value: float, edges: Sequence[float]) -> str:
    """The bin of `value` among `edges` ('<e0', 'e0-e1', ..., '>=eN'; '-' for nan), edges written as integers."""
    if not np.isfinite(value):
        return "-"
    if value < edges[0]:
        return f"<{edges[0]:.0f}"
    for lo, hi in zip(edges, edges[1:], strict=False):
        if value < hi:
            return f"{lo:.0f}-{hi:.0f}"
    return f">={edges[-1]:.0f}"


def sharding_of(job: dict) -> str:
    """How a job splits the model states over its GPUs: '1 GPU', 'sharded' (FSDP full / hybrid or ZeRO-3: every layer
    gathered each pass), 'ZeRO-1/2' (optimizer / gradient shards, the weights replicated) or 'replicated' (DDP)."""
    gpus = int((job.get("hardware") or {}).get("count", 1) or 1)
    if gpus <= 1:
        return "1 GPU"
    st = job.get("strategy") or {}
    fsdp, zero = str(st.get("fsdp", "none") or "none"), int(st.get("zero", 0) or 0)
    if fsdp not in ("none", "no") or zero >= 3:
        return "sharded"
    return "ZeRO-1/2" if zero in (1, 2) else "replicated"


def job_facts(row: Row) -> dict[str, str]:
    """The facts of a row's job as written, '-' where the job states none."""
    job = row.job
    st, hw, lora = job.get("strategy") or {}, job.get("hardware") or {}, job.get("lora") or {}
    attention = st.get("attention_kernel") or {True: "flash", False: "no flash"}.get(job.get("flash_attention"), "-")
    return {"source": row.benchmark, "series": release_of(row.row_id), "method": str(job.get("method", "-")),
            "precision": str(job.get("precision", "-")), "recompute": str(st.get("recompute", "-")),
            "attention": str(attention), "part": str(hw.get("accelerator", "-")), "GPUs": str(hw.get("count", 1)),
            "sharding": sharding_of(job),
            "micro-batch": bin_label(float(st.get("micro_batch", 1) or 1), MB_EDGES),
            "LoRA impl": str(lora.get("impl", "-")) if job.get("method") in ("lora", "qlora") else "-",
            "framework": str(st.get("framework", "-")), "packing": str(job.get("packing", "-"))}


def split_rows(rows: list[Row], catalog) -> list[SplitRow]:
    """The class's rows with their facts, the positions a micro-batch as a fact too (hf_ampere_families.family_rows:
    the estimate's own positions, nan where the job does not resolve)."""
    out = []
    for row, (fam, fig) in zip(rows, family_rows(rows, catalog), strict=True):
        facts = job_facts(row) | {"positions a micro-batch": bin_label(fam.tokens, TOKEN_EDGES)}
        out.append(SplitRow(row.row_id, fam.err, fam.miss_ms, fig["dp_ms"] if fig else float("nan"), fam.tokens,
                            facts))
    return out


def eta_squared(values: Sequence[str], err: np.ndarray) -> float:
    """The share of `err`'s variance about its mean that the groups of `values` explain (1 - within-group sum of
    squares / total; 0 where `err` does not vary)."""
    err = np.asarray(err, float)
    total = float(np.sum((err - err.mean()) ** 2))
    if total <= 0.0:
        return 0.0
    groups: dict[str, list[float]] = defaultdict(list)
    for v, e in zip(values, err, strict=True):
        groups[v].append(float(e))
    within = sum(float(np.sum((np.asarray(g) - np.mean(g)) ** 2)) for g in groups.values())
    return max(0.0, 1.0 - within / total)


def demeaned(strata: Sequence[str], err: np.ndarray) -> np.ndarray:
    """`err` less its stratum's mean (the series': what is left where one source and stack hold still)."""
    err = np.asarray(err, float)
    means: dict[str, list[float]] = defaultdict(list)
    for s, e in zip(strata, err, strict=True):
        means[s].append(float(e))
    return np.array([e - np.mean(means[s]) for s, e in zip(strata, err, strict=True)])


def fact_groups(rows: list[SplitRow], fact: str) -> list[tuple[str, int, float, float, float]]:
    """(value, rows, median %, MAPE %, share of the class's summed |error| %) per value of `fact`, most rows first."""
    total = sum(abs(r.err) for r in rows) or 1.0
    groups: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        groups[r.facts.get(fact, "-")].append(r.err)
    out = [(k, len(v), float(np.median(v)), float(np.mean(np.abs(v))), 100.0 * float(np.sum(np.abs(v))) / total)
           for k, v in groups.items()]
    return sorted(out, key=lambda g: (-g[1], g[0]))


def fact_ranking(rows: list[SplitRow]) -> list[tuple[str, int, float, float]]:
    """(fact, values, eta^2 over the class, eta^2 within series) for every fact with two values or more (series and
    source aside: within series they explain nothing by construction), most within-series first."""
    err = np.array([r.err for r in rows])
    within = demeaned([r.facts["series"] for r in rows], err)
    out = []
    for fact in rows[0].facts if rows else ():
        if fact in ("series", "source"):
            continue
        values = [r.facts[fact] for r in rows]
        if len(set(values)) > 1:
            out.append((fact, len(set(values)), eta_squared(values, err), eta_squared(values, within)))
    return sorted(out, key=lambda f: (-f[3], -f[2], f[0]))


def cross(rows: list[SplitRow], first: str, second: str,
          order: Callable[[str], object] = str) -> list[tuple[str, str, int, float, float, float, float]]:
    """(value of `first`, value of `second`, rows, median %, MAPE %, median miss ms, median exposed DP ms) per pair
    of values present, in `first`'s then `order(second)`'s order."""
    groups: dict[tuple[str, str], list[SplitRow]] = defaultdict(list)
    for r in rows:
        groups[(r.facts.get(first, "-"), r.facts.get(second, "-"))].append(r)
    out = []
    for (a, b), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], order(kv[0][1]))):
        e = np.array([r.err for r in rs])
        miss, dp = np.array([r.miss_ms for r in rs]), np.array([r.dp_ms for r in rs])
        out.append((a, b, len(rs), float(np.median(e)), float(np.mean(np.abs(e))),
                    float(np.nanmedian(miss)) if np.any(np.isfinite(miss)) else float("nan"),
                    float(np.nanmedian(dp)) if np.any(np.isfinite(dp)) else float("nan")))
    return out


def token_order(label: str) -> float:
    """Sort key of a positions bin label (bin_label's form): its lower edge, '<' bins first, '-' last."""
    if label == "-":
        return float("inf")
    if label.startswith("<"):
        return -1.0
    return float(label.lstrip(">=").split("-")[0])


def main() -> None:
    key = class_arg(sys.argv[1:])
    rows = class_rows(classify(collect()), key, "time")
    if not rows:
        raise SystemExit(f"hf_class_split: no held-out time row falls in class {key!r}")
    split = split_rows(rows, load_catalog())
    e = np.array([r.err for r in split])
    print(f"{key}: {len(split)} time rows, MAPE {np.mean(np.abs(e)):.1f}%, median {np.median(e):+.1f}% "
          "(signed, + = predicted too fast)")
    print("\nby fact: value  rows  median %  MAPE %  share of the class's summed |error| %")
    for fact in split[0].facts:
        print(f"  {fact}:")
        for value, n, med, mape, share in fact_groups(split, fact):
            print(f"    {value:40.40s} {n:4d} {med:+7.1f} {mape:6.1f} {share:6.1f}")
    print("\nfacts by eta^2 (variance of the signed errors their groups explain): over the class, within series")
    for fact, n, over, within in fact_ranking(split):
        print(f"  {fact:26s} {n:3d} values  {over:5.2f}  {within:5.2f}")
    print("\nsharding x positions a micro-batch: rows, median %, MAPE %, median miss ms a layer and micro-batch, "
          "median exposed DP ms a layer and micro-batch (the estimate's)")
    for a, b, n, med, mape, miss, dp in cross(split, "sharding", "positions a micro-batch", token_order):
        print(f"  {a:10s} {b:12s} {n:4d} {med:+7.1f} {mape:6.1f} {miss:+8.2f} {dp:7.2f}")


if __name__ == "__main__":
    main()
