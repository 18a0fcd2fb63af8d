"""The next GPU count of a pinned option that fits on the GPUs alone.

A job that pins its GPU count (hardware.count or --count) is searched at that count only. When every layout there
offloads to the CPU (`search.engine.offload_reason`), what a buyer asks next is what a few more servers would do.
Whole servers of the same accelerator above the pinned count are searched and priced exactly as the plan's own
options (`plan.searched.search_job` with the count pinned there: its networks where the job gives none, as a count
beyond one node needs one), smallest first, from the count the model states alone need
(`states_lower_bound_bytes` over the count, a lower bound: activations come on top), until one runs a layout
without offload; the best such option there by the job's goal is stated beside the pinned count (a note and
`Plan.next_count`). It does not join the ranking, which keeps the job's count. Probes stop after MAX_PROBES counts
and at the job's node / GPU limits.

A pinned count that fits without offload is set beside the whole servers one below and one above it (`nearby`):
when one of them is faster by more than the ranking's tie band and costs no more (or cheaper by more than the band and
no slower; the band of the two options' job classes, `plan.searched.pair_tie_fraction`, as the ranking's ties) by the job's own cost measure (GPU-hours where either is unpriced), the pinned count splits the job poorly
(24 H100 where 16 or 32 divide the batch) and the plan says so, as for offload.

When nothing fits at all, the binding's "more GPUs" relaxation names the count the model states alone need; the
same probe (`first_fitting`, any layout, the node / GPU limits lifted) prices the first count that fits there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from trainsizer.plan.refine import purchase_unit
from trainsizer.plan.searched import pair_tie_fraction, rank_searched, search_job
from trainsizer.search.engine import offload_reason

MAX_PROBES = 12  # counts tried above the pinned one: one search of one accelerator's options each


@dataclass(frozen=True)
class NextCount:
    """The pinned option, and the next count that fits without offload (None: none within the probes)."""

    pinned: Any  # plan.searched.Priced at the job's count
    found: Any | None  # plan.searched.Priced at the next count, or None
    last_count: int  # the largest count probed
    nearby: bool = False  # found is a neighbouring count that beats a pinned count which fits (not an offload's next)


def _first_count(r: Any, unit: int) -> int:
    """One server more than the pinned count, or the whole servers the model states alone need if more."""
    cap = r.system.memory_gib
    states = math.ceil(r.option.count * r.lower_bound_gib / cap) if cap > 0 and r.lower_bound_gib > cap else 0
    return max(r.option.count + unit, -(-states // unit) * unit)


def _allowed(count: int, per_node: int, constraints: Any) -> bool:
    if constraints.max_gpus is not None and count > constraints.max_gpus:
        return False
    return constraints.max_nodes is None or -(-count // per_node) <= constraints.max_nodes


def _best_at(scenario: Any, sr: Any, r: Any, count: int, catalog: Any, tie_fraction: float,
             on_gpus: bool) -> Any | None:
    """The best option by the job's goal at `count` GPUs of `r`'s accelerator (`on_gpus`: among those whose layout
    does not offload); None when none fits."""
    pins = replace(sr.pins, accelerator=r.option.accelerator.id, count=count)
    found = search_job(scenario, catalog, pins)
    if on_gpus:
        found.priced = [p for p in found.priced if p.result.strategy.offload == "none"]
    if not found.priced:
        return None
    return found.priced[rank_searched(found, tie_fraction).ranked[0].index]


def first_fitting(scenario: Any, sr: Any, r: Any, need: int, catalog: Any, tie_fraction: float) -> Any | None:
    """The first count of whole servers of `r`'s accelerator from `need` GPUs up where any layout fits, searched
    and priced in `scenario` (the binding's relaxation: its node / GPU limits lifted); None within MAX_PROBES."""
    unit = purchase_unit(r)
    count = max(unit, -(-need // unit) * unit)
    for _ in range(MAX_PROBES):
        found = _best_at(scenario, sr, r, count, catalog, tie_fraction, on_gpus=False)
        if found is not None:
            return found
        count += unit
    return None


def next_count(sr: Any, best_index: int, catalog: Any, tie_fraction: float) -> NextCount | None:
    """The next count of the recommended option's hardware where a layout fits without offload, when the job pins
    the count and every layout at it offloads (see module docstring); None when that is not the case or the job's
    node / GPU limits allow no larger count."""
    job = sr.scenario.job
    pinned = sr.priced[best_index]
    r = pinned.result
    if sr.pins.count is None:
        return None
    if offload_reason(r, frozen_base=job.method in ("lora", "qlora")) is None:
        return _nearby(sr, pinned, catalog, tie_fraction)
    unit = purchase_unit(r)
    count, last = _first_count(r, unit), r.option.count
    for _ in range(MAX_PROBES):
        if not _allowed(count, r.option.per_node, job.constraints):
            break
        last = count
        found = _best_at(sr.scenario, sr, r, count, catalog, tie_fraction, on_gpus=True)
        if found is not None:
            return NextCount(pinned, found, count)
        count += unit
    return NextCount(pinned, None, last) if last > r.option.count else None  # None: the limits allow no larger count


def _nearby(sr: Any, pinned: Any, catalog: Any, tie_fraction: float) -> NextCount | None:
    """One whole server below and one above the pinned count: the first that beats it on the job's goal axes
    (`_beats`), searched and priced as the plan's options; None when neither does (the module docstring)."""
    r = pinned.result
    unit, count = purchase_unit(r), r.option.count
    for other in (count - unit, count + unit):
        if other < unit or not _allowed(other, r.option.per_node, sr.scenario.job.constraints):
            continue
        found = _best_at(sr.scenario, sr, r, other, catalog, tie_fraction, on_gpus=False)
        if found is not None and _beats(found, pinned, pair_tie_fraction(found, pinned, tie_fraction)):
            return NextCount(pinned, found, other, nearby=True)
    return None


def _beats(a: Any, b: Any, tie_fraction: float) -> bool:
    """`a` is faster than `b` by more than the tie band for no more money, or cheaper by more than it for no more
    time. Money is the plan's cost (`Priced.cost`) where both have one, else GPU-hours (what rent is billed on)."""
    priced = a.cost is not None and b.cost is not None
    spend_a, spend_b = (a.cost, b.cost) if priced else (a.gpu_hours, b.gpu_hours)
    faster = a.train_days < b.train_days * (1.0 - tie_fraction) and spend_a <= spend_b
    cheaper = spend_a < spend_b * (1.0 - tie_fraction) and a.train_days <= b.train_days
    return bool(faster or cheaper)
