"""The job searched and priced, ranked by its goal: the half of the plan that the plan's own probes reuse
(`plan.next_count`, `plan.relax`, `plan.refine` search again at another count or with one constraint changed), below
`plan.core`, which assembles the plan from it, so no probe imports the module that calls it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from trainsizer.catalog.scale import Platform, Standing, standing_on
from trainsizer.estimate.energy import energy
from trainsizer.estimate.reliability import failure_figures
from trainsizer.estimate.train_time import time_to_train
from trainsizer.evaluate import job_cost, run_costs
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
                        system.gpus_per_node, figures=failure_figures(catalog.reliability))
    pue = catalog.facility.pue  # None: energy()'s shipped fallback, as in evaluate
    en = energy(system.gpus, ttt.train_days * 24.0, system.tdp_w, utilisation=r.busy_fraction,
                pue=pue.mid if pue else None)
    costs, goal, _ = run_costs(sc, catalog, ttt.gpu_hours, ttt.train_days * 24.0, en.kwh, host_gib_per_node(base, r))
    cost, basis, converted = converted_cost(costs, plan_currency(base))
    return Priced(r, sc, ttt.train_days, ttt.gpu_hours, costs, goal, cost, basis,
                  catalog.scale_platform_of(r.option.accelerator.id), converted)


def host_gib_per_node(base: Scenario, r: OptionResult) -> float:
    """The states the option's layout keeps in host RAM, GiB a node (the memory estimate's, as `evaluate` reads it):
    0 for a layout without CPU offload or a paged optimizer, which keep none there."""
    from trainsizer.estimate.memory import GIB, estimate_memory

    offload = r.strategy.offload if isinstance(r.strategy.offload, str) else "none"
    if offload == "none" and not base.training.optimizer.startswith("paged_"):
        return 0.0
    mem = estimate_memory(base.model, base.training, r.system, r.strategy, check=False)
    return mem.host_bytes_per_node / GIB


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
                                    stated_stack_options(spec))
    priced = [price(base, r, catalog) for r in results if r.strategy is not None]
    return Searched(scenario, base, pins, cands, results, stats, priced)


def tie_fraction_of(cls: Any, floor: float) -> float:
    """The fraction within which two options' figures are a tie when the best-ranked one is of job class `cls`
    (estimate.accuracy.JobClass): its class's held-out MAPE (estimate/data/accuracy_bands.yaml, the same statistic
    as `floor`, search.yaml tie_fraction: the development set's MAPE) where that is wider; `floor` for a class with
    no band. A difference the estimate's error on runs like this one covers does not tell which is faster or
    cheaper."""
    from trainsizer.estimate.accuracy import band_for

    band = band_for(cls, "time")
    return floor if band.get("matched") is None else max(floor, band["mape_pct"] / 100.0)


def _tie_fraction(p: Priced, floor: float) -> float:
    from trainsizer.estimate.accuracy import job_class

    sc = p.scenario
    return tie_fraction_of(job_class(sc.model, sc.training, sc.system, sc.strategy, p.result.option.accelerator.arch),
                           floor)


@dataclass
class Ranked:
    objective: str
    metric: str
    ranked: list[ranking.Scored]
    tied: list[ranking.Scored]
    front: list[ranking.Scored]
    fraction: float = 0.0  # the tie fraction used (tie_fraction_of the best-ranked option)

    @property
    def satisfied(self) -> bool:
        return bool(self.ranked) and self.ranked[0].satisfies


def rank_searched(sr: Searched, tie_fraction: float) -> Ranked:
    """Options by the goal; ties (roomy, then cheapest, then simplest first) within the best-ranked option's
    `tie_fraction_of` (`tie_fraction` its floor), and the Pareto front."""
    objective = ranking.objective(sr.scenario.job.goal)
    scored = [score_of(i, p) for i, p in enumerate(sr.priced)]
    ranked = ranking.rank(scored, objective)
    if ranked:
        tie_fraction = _tie_fraction(sr.priced[ranked[0].index], tie_fraction)
    tied = ranking.ties(ranked, objective, tie_fraction)
    size = {i: (p.result.system.nodes, p.result.option.count) for i, p in enumerate(sr.priced)}
    ranked = ranking.prefer_cheapest(ranked, tied, size)
    tied = [s for s in ranked if s in tied]
    return Ranked(objective, ranking.metric_of(objective), ranked, tied,
                  ranking.pareto(scored, ranking.front_basis(ranked), tie_fraction), tie_fraction)
