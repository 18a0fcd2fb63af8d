"""A class's held-out time rows against their twins: the same job run on another part or GPU count (issue #13).

For each time row of a class (default megatron/moe/blackwell/domain: Megatron MoE inside one GB200 / GB300 NVL72 rack),
the scored held-out time rows of OTHER classes that ran the same job: the same release (accuracy_bands.release_of),
model, precision and FP8 recipe, sequence length, micro-batch, TP / PP / CP / EP degrees and MoE dispatcher, on
another part, GPU count or fabric (a layout twin). Each pair prints both rows' signed errors and the time each misses
per decoder layer and micro-batch (accuracy_bands.missing_ms_per_layer), and the summary the medians of the
differences. A cost of the NVLink domain (the all-to-all over multi-node NVLink, HybridEP's MNNVL buffers, the Grace
host) shows as the domain row missing more than its twin; a cost of the model or of the release's code as both
missing alike. Rows with no layout twin but a twin of their release, model and precision (another layout) are listed
under it, so a family's miss off the domain is seen next to it. Nothing fitted, no estimate changed: a diagnostic for
docs/known-gaps.md 287 (a).

Run: python benchmarks/layout_twins.py [CLASS]   (about 2 minutes: every held-out benchmark is scored)
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import accuracy_bands as ab  # noqa: E402

CLASS = "megatron/moe/blackwell/domain"
LAYOUT = ("tp", "pp", "cp", "ep", "micro_batch", "moe_dispatcher")


def family_key(row: ab.Row) -> tuple[str, ...]:
    """What a twin shares with its row whatever the layout: release, model, precision and FP8 recipe, sequence."""
    job, facts = row.job, ab.row_facts(row)
    return (ab.release_of(row.row_id), facts["model"], str(job.get("precision", "-")),
            str(job.get("fp8_recipe", "-")), str(job.get("seq_len", "-")))


def layout_of(row: ab.Row) -> tuple[str, ...]:
    """The row's parallel layout and dispatcher as written (1 / '-' where the job states none)."""
    st = row.job.get("strategy") or {}
    return tuple(str(st.get(k, "-" if k == "moe_dispatcher" else 1)) for k in LAYOUT)


def twins(row: ab.Row, others: list[tuple[ab.Row, str]]) -> list[tuple[ab.Row, str, bool]]:
    """(twin, its finest class, same layout) for each row of `others` (row, finest class key) that ran `row`'s job
    family (family_key) on another part or GPU count; the same row id never pairs with itself."""
    key, lay = family_key(row), layout_of(row)
    hw = row.job.get("hardware") or {}
    out = []
    for other, cls in others:
        ohw = other.job.get("hardware") or {}
        if other.row_id == row.row_id or family_key(other) != key:
            continue
        if (ohw.get("accelerator"), ohw.get("count")) == (hw.get("accelerator"), hw.get("count")):
            continue
        out.append((other, cls, layout_of(other) == lay))
    return sorted(out, key=lambda t: (not t[2], t[1], t[0].row_id))


def pair_delta(row_miss: float, twin_miss: float, row_err: float, twin_err: float) -> tuple[float, float]:
    """(missed ms a layer and micro-batch the row misses beyond its twin, error points beyond it): + = the row's job
    misses more on its part than the same job on the twin's."""
    return row_miss - twin_miss, 100.0 * (row_err - twin_err)


def _line(row: ab.Row, miss: float | None, cls: str = "") -> str:
    hw = row.job.get("hardware") or {}
    m = f"{miss:+6.2f}" if miss is not None else "     -"
    return (f"{100 * row.err:+7.1f}  miss {m} ms/layer-mb  {hw.get('accelerator', '-'):>6s} {hw.get('count', '-')!s:>5s}"
            f"  {' '.join(f'{k}={v}' for k, v in zip(LAYOUT, layout_of(row), strict=True))}  {row.row_id}"
            + (f"  [{cls}]" if cls else ""))


def _miss(row: ab.Row, cache: dict[str, float | None]) -> float | None:
    if row.row_id not in cache:
        parts = ab._row_parts(row)
        cache[row.row_id] = ab.missing_ms_per_layer(row, parts) if parts else None
    return cache[row.row_id]


def part_of(row: ab.Row) -> str:
    return str((row.job.get("hardware") or {}).get("accelerator", "-"))


def summarise(deltas: list[tuple[str, str, float, float]]) -> list[tuple[str, int, float, float]]:
    """(row part vs twin part, pairs, median ms, median points) over same-layout pairs (row part, twin part, ms beyond
    the twin, points beyond it), most pairs first, then "all"."""
    groups: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for a, b, ms, pts in deltas:
        groups[f"{a} vs {b}"].append((ms, pts))
        groups["all"].append((ms, pts))
    out = [(k, len(v), float(np.median([x[0] for x in v])), float(np.median([x[1] for x in v])))
           for k, v in groups.items()]
    return sorted(out, key=lambda g: (g[0] == "all", -g[1], g[0]))


def report(classed: list[tuple[ab.Row, tuple[str, ...]]], key: str) -> list[tuple[str, str, float, float]]:
    """Print `key`'s time rows with their twins; return (row part, twin part, ms, points) beyond each layout twin."""
    rows = ab.class_rows(classed, key)
    if not rows:
        raise SystemExit(f"layout_twins: no held-out time row falls in class {key!r}")
    others = [(r, keys[0]) for r, keys in classed if r.quantity == "time" and key not in keys]
    cache: dict[str, float | None] = {}
    deltas: list[tuple[str, str, float, float]] = []
    lone = 0
    print(f"{key}: {len(rows)} time rows against their twins in other classes (signed %, + = predicted too fast)")
    for row in rows:
        found = twins(row, others)
        if not found:
            lone += 1
            continue
        print(_line(row, _miss(row, cache)))
        for twin, cls, same in found:
            print("    " + ("same layout " if same else "other layout") + " " + _line(twin, _miss(twin, cache), cls))
            a, b = _miss(row, cache), _miss(twin, cache)
            if same and a is not None and b is not None:
                deltas.append((part_of(row), part_of(twin), *pair_delta(a, b, row.err, twin.err)))
    print(f"  {len(rows) - lone} of {len(rows)} rows have a twin; {len(deltas)} same-layout pairs; beyond the twin"
          " (median ms a layer and micro-batch, median points):")
    for name, n, ms, pts in summarise(deltas):
        print(f"    {name:16s} n={n:3d}  {ms:+6.2f} ms  {pts:+6.1f} points")
    return deltas


def main() -> None:
    key = sys.argv[1] if len(sys.argv) > 1 else CLASS
    report(ab.classify(ab.collect()), key)


if __name__ == "__main__":
    main()
