"""The job searched and priced, ranked by its goal: the half of the plan that the plan's own probes reuse
(`plan.next_count`, `plan.relax`, `plan.refine` search again at another count or with one constraint changed), below
`plan.core`, which assembles the plan from it, so no probe imports the module that calls it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from trainsizer.catalog.scale import Platform, Standing, standing_on
from trainsizer.estimate.accuracy import band_for, job_class
from trainsizer.estimate.checkpoint_saves import checkpoint_saves_s
from trainsizer.estimate.energy import energy
from trainsizer.estimate.evaluation import evaluation_s
from trainsizer.estimate.reliability import failure_figures
from trainsizer.estimate.train_time import time_to_train
from trainsizer.evaluate import job_cost, node_base_for, run_costs
from trainsizer.scenario import Scenario
from trainsizer.search import OptionResult, Pins, hardware_candidates, load_config, search_options
from trainsizer.search import rank as ranking
from trainsizer.search.config import leaves_floor
from trainsizer.spec import stated_stack_options


@dataclass(frozen=True)
class Priced:
    """One feasible option with the figures ranking needs (computed as `estimate` computes them)."""

    result: OptionResult
    scenario: Scenario
    train_days: float
    gpu_hours: float
    costs: dict[str, Any]
    goal: dict[str, Any]
    cost: float | None  # what the job costs in the plan's currency (`job_cost`); None: no price in either currency
    basis: str | None  # "rent" or "buy": which one `cost` is
    platform: Platform | None = None  # the catalog's documented-scale platform of the accelerator
    converted: str | None = None  # the FX label where `cost` was converted from the other currency (bom.fx)

    @property
    def standing(self) -> Standing:
        """Where the option's size stands against its platform's documented scale (catalog.scale); one
        server of the option's server record (an NVL72 rack, a CloudMatrix) is always documented."""
        o = self.result.option
        per_server = max(o.per_node, int(getattr(o.server, "gpus", 0) or 0))
        return standing_on(self.platform, o.count, per_server)

    @property
    def meets_deadline(self) -> bool | None:
        deadline = self.scenario.job.goal.deadline_days
        return None if deadline is None else bool(self.train_days <= deadline)

    @property
    def within_budget(self) -> bool | None:
        budget = self.scenario.job.goal.budget
        if budget is None:
            return None
        return self.cost is not None and bool(self.cost <= budget.amount)  # no price: cannot be shown to fit


def plan_currency(scenario: Scenario) -> str:
    return scenario.job.currency


def _option_scenario(base: Scenario, r: OptionResult) -> Scenario:
    return replace(base, accelerator=r.option.accelerator, network=r.option.network, system=r.system,
                   strategy=r.strategy)


def price(base: Scenario, r: OptionResult, catalog: Any) -> Priced:
    """Days, GPU-hours, costs and goal check of an option's best strategy (as `evaluate` reports them)."""
    sc = _option_scenario(base, r)
    system = r.system
    ttt = time_to_train(base.tokens_run, r.tokens_per_s, base.model.params_total, system.gpus,
                        system.gpus_per_node, figures=failure_figures(catalog.reliability),
                        extra_s=evaluation_s(sc.model, sc.training, system, sc.strategy)
                        + checkpoint_saves_s(sc.model, sc.training, system, sc.strategy))
    pue = catalog.facility.pue  # None: energy()'s shipped fallback, as in evaluate
    en = energy(system.gpus, ttt.train_days * 24.0, system.tdp_w, utilisation=r.busy_fraction,
                pue=pue.mid if pue else None)
    costs, goal, _ = run_costs(sc, catalog, ttt.gpu_hours, ttt.train_days * 24.0, en.kwh, r.host_gib_per_node)
    cost, basis, converted = converted_cost(costs, plan_currency(base))
    return Priced(r, sc, ttt.train_days, ttt.gpu_hours, costs, goal, cost, basis,
                  catalog.scale_platform_of(r.option.accelerator.id), converted)


def converted_cost(costs: dict[str, Any], currency: str) -> tuple[float | None, str | None, str | None]:
    """(cost, basis, FX label): the job's cost in `currency` (`job_cost`), else its cost in the other catalog currency
    converted at the bill of materials' dated rate (buildout.bom.fx), so a part the catalog prices in CNY only (H800)
    is ranked in a USD plan at the figure its BOM shows, not left unpriced; the label says it was converted."""
    from trainsizer.catalog.catalog import CURRENCIES
    from trainsizer.plan.buildout.bom import fx

    cost, basis = job_cost(costs, currency)
    if cost is not None:
        return cost, basis, None
    for other in (c for c in CURRENCIES if c != currency):
        cost, basis = job_cost(costs, other)
        if cost is not None:
            k, label = fx(other, currency)
            return cost * k, basis, label
    return None, None, None


def score_of(i: int, p: Priced) -> ranking.Scored:
    r = p.result
    roomy = bool(leaves_floor(r.mem_gib, r.system.memory_gib))
    bought = (p.costs.get("buy") or {}).get("quantity") if p.basis == "buy" else None
    return ranking.Scored(i, p.train_days, p.cost, p.meets_deadline, p.within_budget, p.standing.rank_key, roomy,
                          p.basis, idle_bought=bool(bought and bought > r.option.count))


def _listed(scenario: Scenario, catalog: Any) -> dict[str, set[str] | None]:
    c = scenario.job.constraints
    return {"exclude": {catalog.resolve_accelerator_id(n) for n in c.exclude},
            "include": None if c.include is None else {catalog.resolve_accelerator_id(n) for n in c.include}}


@dataclass
class Searched:
    """A job searched and priced: what ranking and the explanations work on."""

    scenario: Scenario  # as resolved (hardware and strategy, if the job gave them)
    base: Scenario  # without hardware and strategy
    pins: Pins
    cands: Any
    results: list[OptionResult]
    stats: Any
    priced: list[Priced]


def search_job(scenario: Scenario, catalog: Any, pins: Pins) -> Searched:
    """Candidates, the best strategy of each, and days / cost / goal of the feasible ones."""
    base = replace(scenario, accelerator=None, network=None, system=None, strategy=None)
    cfg = load_config()
    cands = hardware_candidates(base, catalog, pins, _listed(scenario, catalog), cfg)
    spec = scenario.job.strategy
    framework = spec.framework if spec is not None else "auto"
    results, stats = search_options(base.model, base.training, cands.options, cfg, framework,
                                    stated_stack_options(spec), node_base_for(catalog, base))
    priced = [price(base, r, catalog) for r in results if r.strategy is not None]
    return Searched(scenario, base, pins, cands, results, stats, priced)


def tie_fraction_of(cls: Any, floor: float) -> float:
    """The fraction within which two options of job class `cls` (estimate.accuracy.JobClass) are a tie: its class's
    spread about its median on held-out runs (estimate/data/accuracy_bands.yaml spread_pct: the MAPE with the
    class's common offset taken out) where that is wider than `floor` (search.yaml tie_fraction, the development
    set's MAPE); `floor` for a class with no band. Options of one class share its offset (hf/dense/hopper: every
    run +60% too fast), so it does not tell them apart; what their errors can differ by does."""
    band = band_for(cls, "time")
    return floor if band.get("matched") is None else max(floor, band["spread_pct"] / 100.0)


def tie_terms(cls: Any, other: Any, floor: float, scales: bool = True) -> tuple[float, float]:
    """(fraction, factor) an option of job class `other` is tied within against the best-ranked one, of `cls`
    (rank.ties): the wider of the two classes' `tie_fraction_of`, and, where the two match different bands (their
    offsets differ: a +60% class against a +11% one), (1 + other's median) / (1 + cls's median), the other's figure
    relative to the best's once both offsets are taken out (+ = predicted too fast: a run takes (1 + median) x the
    estimate). The factor only excludes (rank.ties reads it where above 1): an option whose class the held-out
    runs find slower than estimated, by more than the best's is, is not a tie on a figure it would not reach; the
    estimates themselves are not corrected (the held-out runs are not fitted), so an option the estimate puts
    outside the fraction stays outside. Factor 1: one band (the offset cancels), a class with no band (no offset
    known), or a figure that does not scale with the run's time (`scales` False: a purchase price)."""
    fraction = max(tie_fraction_of(cls, floor), tie_fraction_of(other, floor))
    ours, theirs = band_for(cls, "time"), band_for(other, "time")
    if not scales or ours.get("matched") is None or theirs.get("matched") in (None, ours["matched"]):
        return fraction, 1.0
    return fraction, (1.0 + theirs["median_pct"] / 100.0) / (1.0 + ours["median_pct"] / 100.0)


def class_of(p: Priced) -> Any:
    """The job class of an option (estimate.accuracy.job_class on its scenario and accelerator)."""
    sc = p.scenario
    return job_class(sc.model, sc.training, sc.system, sc.strategy, p.result.option.accelerator.arch)


def pair_tie_fraction(a: Priced, b: Priced, floor: float) -> float:
    """The tie fraction of two priced options (`tie_terms`' fraction; next_count / refine_count: the same part at
    another count, whose scale class may differ)."""
    return tie_terms(class_of(a), class_of(b), floor)[0]


@dataclass
class Ranked:
    objective: str
    metric: str
    ranked: list[ranking.Scored]
    tied: list[ranking.Scored]
    front: list[ranking.Scored]
    fraction: float = 0.0  # the tie fraction of the best-ranked option's class (tie_fraction_of)
    fractions: dict[int, float] = field(default_factory=dict)  # each option's against the best (by index)

    @property
    def satisfied(self) -> bool:
        return bool(self.ranked) and self.ranked[0].satisfies


def rank_searched(sr: Searched, tie_fraction: float) -> Ranked:
    """Options by the goal; ties (roomy, then cheapest, then simplest first): each option within its `tie_terms`
    against the best-ranked one (`tie_fraction` the floor), and the Pareto front (within the best's class's
    fraction)."""
    objective = ranking.objective(sr.scenario.job.goal)
    metric = ranking.metric_of(objective)
    scored = [score_of(i, p) for i, p in enumerate(sr.priced)]
    ranked = ranking.rank(scored, objective)
    against: dict[int, tuple[float, float]] = {}
    if ranked:
        top = sr.priced[ranked[0].index]
        best = class_of(top)
        # a rental bill scales with the run's time, a purchase price does not (so a class's time offset moves it)
        against = {i: tie_terms(best, class_of(p), tie_fraction,
                                metric == "train_days" or p.basis == top.basis == "rent")
                   for i, p in enumerate(sr.priced)}
        tie_fraction = against[ranked[0].index][0]
    tied = ranking.ties(ranked, objective, tie_fraction, against)
    size = {i: (p.result.system.nodes, p.result.option.count) for i, p in enumerate(sr.priced)}
    ranked = ranking.prefer_cheapest(ranked, tied, size)
    tied = [s for s in ranked if s in tied]
    return Ranked(objective, metric, ranked, tied, ranking.pareto(scored, ranking.front_basis(ranked), tie_fraction),
                  tie_fraction, {i: f for i, (f, _) in against.items()})
