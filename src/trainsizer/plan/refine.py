"""The recommended option's GPU count refined between two rungs of the search's count ladder.

The search tries whole nodes on a ladder of two counts per doubling (search.yaml node_ladder_steps_per_doubling),
so when a deadline binds, the rung that first meets it can hold up to half again as many GPUs as the deadline
needs. Renting, that costs little (the GPU-hours barely change with the count); buying, the capex grows with
it. So when the job's figure is cost and the next smaller rung of the recommended family fits but misses the
deadline, whole servers between the two rungs are searched and priced exactly as every option is
(`search.search_option`, `plan.searched.price`); the cheapest that satisfies the job joins the options when it is
cheaper than the rung by more than the tie fraction (a smaller difference the model cannot tell apart; the two
options' `plan.searched.pair_tie_fraction`, as the ranking's ties: the class's spread, at least `tie_fraction`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from trainsizer.evaluate import node_base_for
from trainsizer.plan.searched import pair_tie_fraction
from trainsizer.search import OptionResult, search_option
from trainsizer.spec import stated_stack_options

MAX_PROBES = 24  # counts tried between two rungs: ~0.1 s each on the largest options


@dataclass(frozen=True)
class Refined:
    """A count found between two rungs, and the rungs it was found between (for the plan's note)."""

    priced: Any  # plan.searched.Priced of the new count
    lower: Any  # Priced of the smaller rung (misses the deadline)
    rung: Any  # Priced of the rung the search recommended


def _family(r: OptionResult) -> tuple:
    o = r.option
    return (o.accelerator.id, o.server.id if o.server is not None else None,
            o.network.id if o.network is not None else None, o.per_node)


def purchase_unit(r: OptionResult) -> int:
    """GPUs bought together: a server (a whole NVL72 rack, not a tray of it), else a node."""
    o = r.option
    gpus = int(getattr(o.server, "gpus", 0) or 0)
    return gpus if gpus > o.per_node and gpus % o.per_node == 0 else o.per_node


def _probes(lo: int, hi: int, unit: int) -> list[int]:
    """Whole units strictly between `lo` and `hi` GPUs, roundest first (multiples of the largest power of two,
    then the next: a count the global batch and the parallel degrees divide), at most MAX_PROBES, ascending."""
    first, last = lo // unit + 1, -(-hi // unit) - 1
    if last < first:
        return []
    out: list[int] = []
    g = 1 << (last - first + 1).bit_length()
    while g >= 1 and len(out) < MAX_PROBES:
        out += [n for n in range(-(-first // g) * g, last + 1, g) if n not in out][:MAX_PROBES - len(out)]
        g //= 2
    return sorted(n * unit for n in out)


def refine_count(sr: Any, best_index: int, catalog: Any, cfg: Any, tie_fraction: float,
                 price: Any) -> Refined | None:
    """The cheapest count between the recommended option's rung and the next smaller rung of its family (see
    module docstring); None when the rule does not apply or nothing cheaper enough satisfies the job."""
    job = sr.scenario.job
    rung = sr.priced[best_index]
    if job.goal.deadline_days is None or rung.cost is None or sr.pins.count is not None:
        return None
    r = rung.result
    smaller = [p for p in sr.priced if _family(p.result) == _family(r) and p.result.option.count < r.option.count]
    if not smaller:
        return None
    lower = max(smaller, key=lambda p: p.result.option.count)
    if lower.meets_deadline is not False:
        return None  # not the deadline that sized it
    framework = job.strategy.framework if job.strategy is not None else "auto"
    found = None
    for count in _probes(lower.result.option.count, r.option.count, purchase_unit(r)):
        res = search_option(sr.base.model, sr.base.training, replace(r.option, count=count), cfg, framework,
                            options=stated_stack_options(job.strategy), host_base=node_base_for(catalog, sr.base))
        if res.strategy is None:
            continue
        p = price(sr.base, res, catalog)
        ok = p.meets_deadline is not False and p.within_budget is not False and p.cost is not None
        if ok and (found is None or p.cost < found.cost):
            found = p
    if found is None or found.cost * (1.0 + pair_tie_fraction(found, rung, tie_fraction)) >= rung.cost:
        return None
    return Refined(found, lower, rung)
