"""Words for a plan: why the recommended option wins, the job's tier and what decides its size, and — when
nothing satisfies the job — which constraint binds, by how much, and what relaxing it buys.

Sizes needed to meet a deadline are extrapolated linearly from the fastest option found (time x GPUs held
constant), which is optimistic: scaling efficiency only falls with more GPUs. The text says so.
"""

from __future__ import annotations

import math
from typing import Any

from trainsizer.estimate.memory import GIB
from trainsizer.plan.schema import Binding, PlanOption, Relaxation, Tier
from trainsizer.scenario import Scenario
from trainsizer.search import rank as ranking
from trainsizer.search.config import SearchConfig
from trainsizer.search.engine import OptionResult, states_lower_bound_bytes

COMM_KEYS = ("tp_comm", "cp_comm", "ep_comm", "dp_comm", "pp_comm")


def money(v: float | None, currency: str) -> str:
    return "no price" if v is None else f"{v:,.0f} {currency}"


def _family(r: OptionResult) -> tuple:
    o = r.option
    return (o.accelerator.id, o.server.id if o.server is not None else None)


def why(s: ranking.Scored, ranked: list[ranking.Scored], priced: list[Any], metric: str, currency: str,
        tie_fraction: float, tie_ids: set[int], feasible_ok: bool) -> str:
    """One sentence: for the best option, why it beats the runner-up; for the others, how they compare."""
    best = ranked[0]
    key = lambda x: priced[x.index].result.option.key  # noqa: E731
    fig = lambda x: (money(x.cost, currency) if metric == "cost" else f"{x.train_days:.1f} days")  # noqa: E731
    if s is best:
        if not feasible_ok:
            return "closest to the job's limits, but does not satisfy them (see binding)"
        goal = {"cost": "cheapest", "train_days": "fastest"}[metric]
        if len(ranked) == 1:
            return f"the only option that fits: {fig(s)}"
        nxt = ranked[1]
        if nxt.index in tie_ids:
            n = len(tie_ids) - 1
            return (f"{fig(s)}; {n} other option(s) are within {tie_fraction:.0%} of the {goal}, inside the "
                    f"model's uncertainty, so they are ties; this one is listed first as the simplest (fewest "
                    f"nodes, then GPUs); next: {key(nxt)}, {fig(nxt)}")
        if not nxt.satisfies:
            return f"the only option that satisfies the job's deadline and budget ({fig(s)})"
        gap = ranking.value(nxt, metric) / max(ranking.value(s, metric), 1e-12) - 1.0
        return f"{goal} option that satisfies the job: {fig(s)}; the next, {key(nxt)}, needs {fig(nxt)} (+{gap:.0%})"
    parts = []
    if s.meets_deadline is False:
        parts.append(f"misses the deadline ({s.train_days:.1f} days)")
    if s.within_budget is False:
        parts.append(f"over budget ({money(s.cost, currency)})")
    if s.index in tie_ids:
        parts.append(f"tied with the recommended option (within {tie_fraction:.0%})")
    vb, vs = ranking.value(best, metric), ranking.value(s, metric)
    if math.isfinite(vb) and math.isfinite(vs) and vb > 0:
        word = "cost" if metric == "cost" else "time to train"
        parts.append(f"{vs / vb - 1.0:+.0%} {word} vs the first option")
    parts.append(f"{s.train_days:.1f} days, {money(s.cost, currency)}")
    return "; ".join(parts)


def tier(rec: PlanOption, best: Any, priced: list[Any], results: list[OptionResult], objective: str,
         cfg: SearchConfig) -> Tier:
    """The guides' tier of the recommended option and the resource that sets its size."""
    gpus, nodes = rec.hardware.count, rec.hardware.nodes
    tier_id = "large-cluster"
    for t in cfg.tiers:
        if ("max_gpus" in t and gpus <= t["max_gpus"]) or ("max_nodes" in t and nodes <= t["max_nodes"]):
            tier_id = t["id"]
            break
    r = best.result
    family = [x for x in results if _family(x) == _family(r)]
    smaller = [x for x in family if x.option.count < r.option.count]
    fitting_smaller = [x for x in smaller if x.strategy is not None]
    acc = r.option.accelerator.id
    job = best.scenario.job
    if gpus == 1:
        decided, text = "memory", (f"one {acc} holds the job ({rec.memory.per_gpu_gib:.1f} of "
                                   f"{rec.memory.capacity_gib:.0f} GiB per GPU)")
    elif smaller and not fitting_smaller:
        x = max(smaller, key=lambda x: x.option.count)
        need = x.min_mem_gib if math.isfinite(x.min_mem_gib) else x.lower_bound_gib
        decided, text = "memory", (f"{gpus} is the fewest {acc} that hold the job: on {x.option.count} the best "
                                   f"layout needs {need:.0f} GiB per GPU ({r.system.memory_gib:.0f} GiB available)")
    elif job.goal.deadline_days is not None and _missing(fitting_smaller, priced, job.goal.deadline_days):
        x = max(fitting_smaller, key=lambda x: x.option.count)
        days = next((p.train_days for p in priced if p.result is x), float("nan"))
        decided, text = "deadline", (f"fewer {acc} miss the {job.goal.deadline_days:g}-day deadline "
                                     f"({x.option.count} GPUs: {days:.1f} days)")
    elif objective in ("time", "time_within_budget") and job.goal.budget is not None:
        decided, text = "budget", "the fastest option the budget allows"
    else:
        bd = rec.time.model_extra.get("breakdown_s", {}) if rec.time.model_extra else {}
        comm = sum(bd.get(k, 0.0) for k in COMM_KEYS)
        decided = "network" if comm > bd.get("compute", 0.0) else "compute"
        text = (f"communication ({comm:.2f} s) outweighs compute ({bd.get('compute', 0.0):.2f} s) per step"
                if decided == "network" else "compute-bound: the step is mostly math on the GPUs")
    return Tier(id=tier_id, gpus=gpus, nodes=nodes, decided_by=decided, why=text)


def _missing(smaller: list[OptionResult], priced: list[Any], deadline: float) -> bool:
    """True when the largest fitting smaller option of the family misses the deadline."""
    if not smaller:
        return False
    x = max(smaller, key=lambda x: x.option.count)
    return any(p.result is x and p.train_days > deadline for p in priced)


def plan_notes(scenario: Scenario, pins: Any, objective: str, tied: list, priced: list[Any]) -> list[str]:
    notes = []
    goal = scenario.job.goal
    if goal.deadline_days is None and goal.budget is None and goal.objective is None:
        notes.append("the job gives no deadline or budget: options are ranked by cost (add goal.deadline_days "
                     "to size for a date)")
    if scenario.job.strategy is not None:
        notes.append("the job's strategy is not used: the plan searches every valid strategy (see `estimate` "
                     "for the job's own)")
    if pins.any:
        fixed = [f"{k}={v}" for k, v in (("accelerator", pins.accelerator), ("count", pins.count),
                                         ("per_node", pins.per_node), ("network", pins.network)) if v is not None]
        notes.append(f"hardware fixed by the job or flags: {', '.join(fixed)}")
    return notes


def _biggest(results: list[OptionResult]) -> OptionResult | None:
    return max(results, key=lambda r: r.option.count * r.system.memory_gib, default=None)


def binding(base: Scenario, catalog: Any, results: list[OptionResult], priced: list[Any],
            ranked: list[ranking.Scored], cands: Any, pins: Any, cfg: SearchConfig) -> Binding:
    """What stops the job from being satisfied, by how much, and what relaxing it buys."""
    goal, c = base.job.goal, base.job.constraints
    if not cands.options:
        return Binding(constraint="constraints", detail="no hardware option is allowed by the job's constraints: "
                       + "; ".join(f"{k}: {v}" for k, v in sorted(cands.excluded.items())),
                       relaxations=[Relaxation(change="widen constraints.include / exclude, market, cooling or "
                                                "rack_kw", result="more accelerators are searched")])
    if not priced:
        return _memory_binding(base, results, c, cfg)
    fastest = min(priced, key=lambda p: p.train_days)
    if goal.deadline_days is not None and fastest.train_days > goal.deadline_days:
        return _deadline_binding(base, fastest, goal.deadline_days, c, cfg)
    meeting = [p for p in priced if goal.deadline_days is None or p.train_days <= goal.deadline_days]
    cheapest = min((p for p in meeting if p.cost is not None), key=lambda p: p.cost, default=None)
    assert goal.budget is not None  # the only other way an option fails
    if cheapest is None:
        return Binding(constraint="budget", detail=f"no option has a price in {goal.budget.currency}")
    within = [p for p in priced if p.cost is not None and p.cost <= goal.budget.amount]
    relax = [Relaxation(change=f"budget {money(cheapest.cost, goal.budget.currency)}",
                        result=f"{cheapest.result.option.key} in {cheapest.train_days:.1f} days")]
    if within:
        slow = min(within, key=lambda p: p.train_days)
        relax.append(Relaxation(change=f"deadline {math.ceil(slow.train_days)} days",
                                result=f"{slow.result.option.key} for {money(slow.cost, goal.budget.currency)}"))
    extra = (f" that meets the {goal.deadline_days:g}-day deadline" if goal.deadline_days is not None else "")
    return Binding(constraint="budget", needed=cheapest.cost, allowed=goal.budget.amount, unit=goal.budget.currency,
                   detail=f"the cheapest option{extra} ({cheapest.result.option.key}) costs "
                          f"{money(cheapest.cost, goal.budget.currency)}, "
                          f"{cheapest.cost / goal.budget.amount - 1.0:.0%} over the budget of "
                          f"{money(goal.budget.amount, goal.budget.currency)}", relaxations=relax)


def _deadline_binding(base: Scenario, fastest: Any, deadline: float, c: Any, cfg: SearchConfig) -> Binding:
    r = fastest.result
    need = math.ceil(r.option.count * fastest.train_days / deadline)
    allowed = c.max_gpus or (c.max_nodes * r.option.per_node if c.max_nodes else cfg.default_max_gpus)
    acc = r.option.accelerator.id
    detail = (f"the fastest option, {r.option.key}, takes {fastest.train_days:.1f} days; the {deadline:g}-day "
              f"deadline needs >= {need:,} {acc} at the same efficiency (an optimistic, linear extrapolation); "
              f"the search allows {allowed:,} GPUs")
    relax = [Relaxation(change=f"deadline {math.ceil(fastest.train_days)} days", result=f"{r.option.key} meets it")]
    if need > allowed and (c.max_nodes or c.max_gpus):
        relax.append(Relaxation(change=f"max_nodes >= {math.ceil(need / r.option.per_node)}",
                                result=f"room for {need:,} {acc} (if scaling holds)"))
    if base.training.precision in ("bf16", "fp16") and r.option.accelerator.tflops_dense.get("fp8"):
        relax.append(Relaxation(change="precision: fp8", result="up to ~2x the GEMM peak on this accelerator "
                                                               "(plan again with precision fp8 to size it)"))
    return Binding(constraint="deadline", needed=float(need), allowed=float(allowed), unit="GPUs", detail=detail,
                   relaxations=relax)


def _memory_binding(base: Scenario, results: list[OptionResult], c: Any, cfg: SearchConfig) -> Binding:
    big = _biggest(results)
    assert big is not None
    cap = big.system.memory_gib
    per_gpu = states_lower_bound_bytes(base.model, base.training, big.option.count) / GIB
    total = per_gpu * big.option.count
    need = math.ceil(total / cap)
    detail = (f"nothing fits: the largest allowed option, {big.option.key} ({cap:.0f} GiB per GPU), needs at least "
              f"{per_gpu:.0f} GiB per GPU for the model states alone (ZeRO-3 over all {big.option.count} GPUs); "
              f"the states need >= {need:,} such GPUs before activations")
    relax = [Relaxation(change=f"more GPUs: >= {need:,} {big.option.accelerator.id}",
                        result="the model states fit; activations need more")]
    if base.job.method in ("full", "pretrain", "cpt"):
        relax.append(Relaxation(change="method: lora or qlora", result="only adapters are trained: the base "
                                "weights are frozen (16-bit or 4-bit), no optimizer states for them"))
    return Binding(constraint="memory", needed=float(need), allowed=float(big.option.count), unit="GPUs",
                   detail=detail, relaxations=relax)
