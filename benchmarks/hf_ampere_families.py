"""The held-out class hf/dense/ampere/node (HF-style fine-tunes on one Ampere node: a third of the held-out time rows)
split into its row families, and what each family's miss scales with (docs/known-gaps.md 279): a diagnostic, nothing
fitted, no estimate change.

The rows: accuracy_bands' time rows of the class (collect + classify: the held-out benchmarks' own rows, jobs and
predictions). A family is a benchmark and the series its row ids name (accuracy_bands.release_of: perf_heldout64's
fmsorca, perf_heldout37's litgpt23 / litgpt24, ...): one source, one software stack.

Printed, per family: rows, median signed error, MAPE, its share of the class's summed |error| and the class's MAPE were
that family exact (which family moves the band most), the host excess's median share of the predicted step, and the
miss in ms a decoder layer and micro-batch (accuracy_bands.missing_ms_per_layer) as a least-squares line over the
positions a micro-batch (hf_moe_residual.line_fit): a cost that grows with the positions is a rate (a GEMM, a stream),
one flat in them a cost a layer and micro-batch (host issue, a sync's drain, a latency), one that shrinks as they grow
a cost the larger micro-batches hide (an overlap that fails at small ones). Then the class by sign (the too-fast rows
against the too-slow ones) and a what-if, not applied: the class and each family with the host's time a kernel and a
layer pass at 1 / 1.5 / 2 / 3x the shipped figures (hf_moe_residual.host_whatif), whether a slower host than the one
the figures were read on carries the class's too-fast side.

Run: python benchmarks/hf_ampere_families.py   (about two minutes: it runs every held-out benchmark's rows)
     python benchmarks/hf_ampere_families.py --class hf/dense/hopper/node   (another accuracy_bands class, any level)
"""

from __future__ import annotations

import sys
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from accuracy_bands import Row, class_rows, classify, collect, release_of, step_parts
from hf_moe_residual import HOST_FACTORS, host_whatif, line_fit, row_figures
from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError

CLASS = "hf/dense/ampere/node"
# a family's miss (ms a layer and micro-batch) against the positions a micro-batch: over the family's span of
# positions the line's change below this share of its mean |miss| reads "flat"
FLAT_SHARE = 0.25


@dataclass
class FamilyRow:
    """One time row of the class with the figures a family summary reads."""

    family: str
    row_id: str
    err: float  # signed %, + = predicted too fast
    miss_ms: float  # measured less predicted step, ms a decoder layer and micro-batch
    tokens: float  # positions one micro-batch runs on one GPU, as the step time counts them
    host_share: float  # the host excess's share of the predicted step


def family_of(row: Row) -> str:
    """benchmark:series, the row family a held-out row belongs to (accuracy_bands.release_of names the series)."""
    return f"{row.benchmark}:{release_of(row.row_id)}"


def family_rows(rows: list[Row], catalog) -> list[tuple[FamilyRow, dict[str, float] | None]]:
    """The class's rows with their figures (hf_moe_residual.row_figures, which the host what-if reads too; the host
    share from accuracy_bands.step_parts); a row whose job does not resolve keeps its error, nan figures and None."""
    out = []
    for row in rows:
        try:
            fig, parts = row_figures(row, catalog), step_parts(row, catalog)
        except (TrainsizerError, KeyError, TypeError, ValueError):
            fig, parts = None, None
        nan = float("nan")
        out.append((FamilyRow(family_of(row), row.row_id, 100.0 * row.err, fig["miss_ms"] if fig else nan,
                              fig["tokens"] if fig else nan,
                              parts["host_s"] / parts["step_s"] if parts and parts["step_s"] > 0 else nan), fig))
    return out


def trend(tokens: np.ndarray, miss: np.ndarray) -> tuple[float, float, float, str]:
    """(intercept ms, slope ms per 1,000 positions, R^2, word) of a family's miss over its positions a micro-batch:
    'flat' where the line changes by less than FLAT_SHARE of the mean |miss| over the family's span of positions,
    else 'grows' or 'shrinks' with the positions; '-' for fewer than 3 rows or one length."""
    ok = np.isfinite(tokens) & np.isfinite(miss)
    t, m = tokens[ok] / 1e3, miss[ok]
    if len(t) < 3 or float(np.ptp(t)) == 0.0:
        return (float(np.mean(m)) if len(m) else float("nan")), 0.0, 0.0, "-"
    a, b, r2 = line_fit(t, m)
    change = b * float(np.ptp(t))
    if abs(change) < FLAT_SHARE * float(np.mean(np.abs(m))):
        word = "flat"
    else:
        word = "grows" if change > 0 else "shrinks"
    return a, b, r2, word


def summaries(rows: list[FamilyRow]) -> list[dict]:
    """Per family (most summed |error| first): rows, median signed %, MAPE %, share of the class's summed |error| %,
    the class's MAPE were the family exact, the median host share %, the median miss and its trend over the
    positions (trend), the positions' range."""
    total, n = sum(abs(r.err) for r in rows), len(rows)
    groups: dict[str, list[FamilyRow]] = defaultdict(list)
    for r in rows:
        groups[r.family].append(r)
    out = []
    for fam, rs in groups.items():
        e = np.array([r.err for r in rs])
        tok, miss = np.array([r.tokens for r in rs]), np.array([r.miss_ms for r in rs])
        a, b, r2, word = trend(tok, miss)
        summed = float(np.sum(np.abs(e)))
        out.append({"family": fam, "n": len(rs), "median": float(np.median(e)), "mape": float(np.mean(np.abs(e))),
                    "share": 100.0 * summed / total if total else 0.0,
                    "class_if_exact": (total - summed) / n if n else 0.0,
                    "host": 100.0 * float(np.nanmedian([r.host_share for r in rs])) if any(
                        np.isfinite(r.host_share) for r in rs) else float("nan"),
                    "miss": float(np.nanmedian(miss)) if np.any(np.isfinite(miss)) else float("nan"),
                    "a": a, "b": b, "r2": r2, "trend": word,
                    "tokens": (float(np.nanmin(tok)), float(np.nanmax(tok))) if np.any(np.isfinite(tok)) else None})
    return sorted(out, key=lambda s: -s["share"])


def sign_split(rows: list[FamilyRow]) -> dict[str, tuple[int, float]]:
    """(rows, share of the class's summed |error| %) of the too-fast (err > 0) and too-slow (err <= 0) rows."""
    total = sum(abs(r.err) for r in rows) or 1.0
    fast = [r for r in rows if r.err > 0.0]
    slow = [r for r in rows if r.err <= 0.0]
    return {"too fast": (len(fast), 100.0 * sum(r.err for r in fast) / total),
            "too slow": (len(slow), 100.0 * sum(-r.err for r in slow) / total)}


def family_whatif(rows: list[FamilyRow], errs: dict[str, list[float]]) -> dict[str, list[float]]:
    """MAPE % at each HOST_FACTORS of the class ('all') and of each family, from the what-if's per-row errors."""
    groups: dict[str, list[list[float]]] = defaultdict(list)
    for r in rows:
        if r.row_id in errs:
            groups[r.family].append(errs[r.row_id])
            groups["all"].append(errs[r.row_id])
    return {k: [float(m) for m in np.mean(np.abs(np.asarray(v)), axis=0)] for k, v in groups.items()}


def class_arg(args: list[str]) -> str:
    """The class `--class KEY` names in `args` (CLASS where none is given)."""
    if "--class" not in args:
        return CLASS
    at = args.index("--class")
    if at + 1 >= len(args):
        raise SystemExit("hf_ampere_families --class needs a class, e.g. --class hf/dense/hopper/node")
    return args[at + 1]


def main() -> None:
    catalog = load_catalog()
    key = class_arg(sys.argv[1:])
    rows = class_rows(classify(collect()), key, "time")
    if not rows:
        raise SystemExit(f"hf_ampere_families: no held-out time row falls in class {key!r}")
    viewed = family_rows(rows, catalog)
    fam = [f for f, _ in viewed]
    e = np.array([r.err for r in fam])
    print(f"{key}: {len(fam)} time rows, MAPE {np.mean(np.abs(e)):.1f}%, median {np.median(e):+.1f}% "
          "(signed, + = predicted too fast)")
    print("\nfamilies, most summed |error| first: rows, median %, MAPE %, share of the class's summed |error| %, the "
          "class's MAPE were the family exact, the host excess's median share of the step %, the miss in ms a layer "
          "and micro-batch (median; as a + b x over the positions a micro-batch, b per 1,000; R^2) and its trend over "
          "the family's positions")
    print(f"  {'family':34s} {'n':>3s} {'median':>7s} {'MAPE':>5s} {'share':>5s} {'if exact':>8s} {'host':>5s}"
          f" {'miss':>7s} {'a':>7s} {'b':>7s} {'R2':>4s} {'trend':7s} positions")
    for s in summaries(fam):
        span = f"{s['tokens'][0]:.0f}-{s['tokens'][1]:.0f}" if s["tokens"] else "-"
        print(f"  {s['family']:34s} {s['n']:3d} {s['median']:+7.1f} {s['mape']:5.1f} {s['share']:5.1f}"
              f" {s['class_if_exact']:8.1f} {s['host']:5.1f} {s['miss']:+7.2f} {s['a']:+7.2f} {s['b']:+7.3f}"
              f" {s['r2']:4.2f} {s['trend']:7s} {span}")
    print("\nby sign: rows, share of the class's summed |error| %")
    for k, (n, share) in sign_split(fam).items():
        print(f"  {k:8s} n={n:3d} {share:5.1f}")
    errs = host_whatif([(row, fig) for row, (_, fig) in zip(rows, viewed, strict=True) if fig is not None], catalog)
    print("\nwhat-if, not applied: the host's time a kernel and a layer pass at " + " / ".join(
        f"{f:g}x" for f in HOST_FACTORS) + " the shipped figures, MAPE % (the class, then each family)")
    table = family_whatif(fam, errs)
    for k in ["all"] + [s["family"] for s in summaries(fam)]:
        if k in table:
            print(f"  {k:34s} " + " / ".join(f"{m:5.1f}" for m in table[k]))


if __name__ == "__main__":
    main()
