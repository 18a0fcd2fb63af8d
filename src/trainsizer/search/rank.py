"""Order hardware options by the job's goal; ties within the model's uncertainty; the time/cost Pareto front.

Goal -> objective: the job's `goal.objective` if set ("time" with a budget is the fastest within budget);
otherwise the cheapest that meets the deadline when a deadline is given, the fastest within the budget when
only a budget is given, and the cheapest when neither is. A deadline and a budget are hard limits whatever
the objective: options that meet both come first, ordered by the objective's figure (cost or days to
train); the rest follow in the same order as best efforts.

Within each of those two groups, options are ordered first by how well their size is documented
(`catalog.scale`: demonstrated, then inside a vendor reference design, then beyond anything documented by the
fewest doublings): the time and cost models extrapolate the fabric and the software to any size, but a cluster
larger than any published one of its platform carries a risk they do not price. The objective's figure orders
options of the same standing; a tie is only between options of the same standing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

OBJECTIVES = ("time", "cost", "cost_under_deadline", "time_within_budget")


@dataclass(frozen=True)
class Scored:
    """What ranking needs to know about one hardware option."""

    index: int  # position in the caller's list
    train_days: float
    cost: float | None  # in the plan's currency; None: no price in it
    meets_deadline: bool | None
    within_budget: bool | None
    scale: int = 0  # catalog.scale.Standing.rank_key: 0 demonstrated, 1 designed, 2 + doublings beyond
    roomy: bool = True  # its layout leaves the GPU memory floor free (search.yaml memory_headroom_min)
    basis: str | None = None  # what `cost` is: "rent" or "buy" (None: no price)
    idle_bought: bool = False  # a purchase that pays for more GPUs than the option runs (a module's whole server)

    @property
    def satisfies(self) -> bool:
        return self.meets_deadline is not False and self.within_budget is not False


def objective(goal: Any) -> str:
    """The ranking objective of a job's goal (see module docstring)."""
    budget = goal.budget is not None
    if goal.objective == "time":
        return "time_within_budget" if budget else "time"
    if goal.objective is not None:
        return goal.objective
    if goal.deadline_days is not None:
        return "cost_under_deadline"
    return "time_within_budget" if budget else "cost"


def metric_of(objective_: str) -> str:
    return "train_days" if objective_ in ("time", "time_within_budget") else "cost"


def value(s: Scored, metric: str) -> float:
    v = s.train_days if metric == "train_days" else s.cost
    return math.inf if v is None or not math.isfinite(v) else float(v)


def rank(scored: list[Scored], objective_: str) -> list[Scored]:
    """Best first: options meeting deadline and budget, then the rest; in each, the best documented size first
    (module doc), then the objective's figure (cost ties broken by time, time ties by cost)."""
    metric = metric_of(objective_)
    other = "cost" if metric == "train_days" else "train_days"
    return sorted(scored,
                  key=lambda s: (not s.satisfies, s.scale, value(s, metric), value(s, other), s.index))


def ties(ranked: list[Scored], objective_: str, fraction: float,
         against: Mapping[int, tuple[float, float]] | None = None) -> list[Scored]:
    """Options (the best included) within `fraction` of the best on the objective's figure, among those that
    satisfy the job with the best's documented-scale standing; empty when the best does not. `against`: by index,
    an option's own (fraction, factor), its figure within the fraction both as it is and times the factor where
    that is above 1 (another job class's held-out offset relative to the best's: plan.searched.tie_terms)."""
    if not ranked or not ranked[0].satisfies:
        return []
    metric = metric_of(objective_)
    best = value(ranked[0], metric)
    if not math.isfinite(best):
        return ranked[:1]
    own = against or {}

    def within(s: Scored) -> bool:
        f, k = own.get(s.index, (fraction, 1.0))
        return value(s, metric) * max(1.0, k) <= best * (1.0 + f)

    return [s for s in ranked if s.satisfies and s.scale == ranked[0].scale and within(s)]


def _tie_key(s: Scored, size: dict[int, tuple[int, int]]) -> tuple:
    return s.idle_bought, value(s, "cost"), size[s.index]


def prefer_cheapest(ranked: list[Scored], tied: list[Scored], size: dict[int, tuple[int, int]]) -> list[Scored]:
    """Within a tie the model cannot tell the options apart on the goal's figure, so the one an expert would run
    goes first: one whose layout leaves the GPU memory floor free (`Scored.roomy`) before one its own plan would
    flag, then one that runs every GPU its purchase pays for (`Scored.idle_bought`: 8 of a 16-processor server
    bought whole cost what 16 cost, and take twice as long), then the cheapest (under a cost goal the best figure itself, so the recommended option never costs more
    than the next; under a time goal the cheapest of the equally fast), then the simplest: fewest nodes, then
    fewest GPUs (`size`: index -> (nodes, gpus)), which also orders unpriced options; the rest keep their order."""
    if len(tied) < 2:
        return ranked
    ids = {s.index for s in tied}
    head = sorted(tied, key=lambda s: (not s.roomy, *_tie_key(s, size), ranked.index(s)))
    return head + [s for s in ranked if s.index not in ids]


def roomier_than_cheapest(tied: list[Scored], size: dict[int, tuple[int, int]]) -> bool:
    """Whether `prefer_cheapest` put a roomy option first where, without the memory floor, a tied option short of
    headroom would have come first (a cheaper one, or among unpriced ones a simpler one)."""
    if len(tied) < 2 or not tied[0].roomy:
        return False
    return any(not s.roomy and _tie_key(s, size) < _tie_key(tied[0], size) for s in tied)


def front_basis(ranked: list[Scored]) -> str | None:
    """The cost basis the time / cost front compares: the best-ranked priced option's ("rent" or "buy"). A rental
    bill and a purchase price are not one figure to trade days against: a $13M rack bought to finish a $6 rental
    job a few minutes sooner is not a point on the user's trade-off."""
    return next((s.basis for s in ranked if s.cost is not None and s.basis is not None), None)


def pareto(scored: list[Scored], basis: str | None = None, band: float = 0.0) -> list[Scored]:
    """The time / cost front, fastest first: from the cheapest priced option up, each option that is faster than
    every cheaper one by more than `band` (0: strictly faster; the plan passes the tie fraction, the time model's
    own uncertainty, so paying more for a step it cannot tell apart is not a point of the trade-off). With `basis`,
    only the options priced on it ("rent" / "buy", `front_basis`)."""
    priced = sorted((s for s in scored if s.cost is not None and math.isfinite(s.train_days)
                     and (basis is None or s.basis == basis)),
                    key=lambda s: (s.cost, s.train_days))
    front: list[Scored] = []
    best_days = math.inf
    for s in priced:
        if s.train_days * (1.0 + band) < best_days:
            front.append(s)
            best_days = s.train_days
    return sorted(front, key=lambda s: (s.train_days, s.cost))
