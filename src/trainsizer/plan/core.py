"""`make_plan(job) -> Plan`: resolve the job, search hardware x strategies, rank by the goal, explain.

Steps: the job is resolved (`scenario.resolve_job`); its `hardware`, if any, and command-line pins fix
dimensions of the search; `search.hardware_candidates` lists the hardware the constraints allow and
`search.search_options` finds the fastest fitting strategy on each; every feasible option is priced and
timed exactly as `trainsizer estimate` would (`evaluate.run_costs`, `time_to_train`, `energy`); `search.rank`
orders them by the goal; the top options, the Pareto front and the ties are then evaluated in full
(`evaluate.evaluate`, the same blocks as `estimate --json`); `plan.explain` names the tier, what decides it,
and when nothing satisfies the job, what binds.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainsizer.catalog.scale import Platform, Standing
from trainsizer.errors import SpecError, StrategyError
from trainsizer.evaluate import evaluate
from trainsizer.layout_text import layout_text
from trainsizer.messages import duration, msg
from trainsizer.names import FP4_RECIPES
from trainsizer.plan import explain
from trainsizer.plan.messages import LANGS
from trainsizer.plan.next_count import NextCount, next_count
from trainsizer.plan.refine import refine_count
from trainsizer.plan.schema import (
    GoalOut,
    HardwareOut,
    Meets,
    NetworkOut,
    OptionSummary,
    ParetoPoint,
    Plan,
    PlanOption,
    ScaleOut,
    Score,
    SearchOut,
    StrategyOut,
)
from trainsizer.plan.searched import (
    Priced,
    Ranked,
    Searched,
    plan_currency,
    price,
    rank_searched,
    score_of,
    search_job,
)
from trainsizer.plan.texts import in_language, ref, with_refs
from trainsizer.scenario import Scenario, resolve_job
from trainsizer.search import OptionResult, Pins, load_config
from trainsizer.search import rank as ranking
from trainsizer.spec import Job, stated_stack_options

DEFAULT_TOP = 10
STRATEGY_KEYS = ("tp", "pp", "vpp", "dp", "cp", "ep", "etp", "zero", "shard_group", "micro_batch", "recompute",
                 "recompute_method", "recompute_num_layers", "offload", "sequence_parallel", "distributed_optimizer",
                 "framework", "pp_first_stage_layers", "pp_last_stage_layers")


def scale_out(st: Standing, plat: Platform | None) -> ScaleOut:
    ev = st.evidence
    software = [f"{e.what} ({', '.join(e.sources)}, {e.date})" for e in plat.software] if plat else []
    return ScaleOut(level=st.level, documented_gpus=st.documented_gpus, doublings=st.doublings, platform=st.platform,
                    evidence=ev.what if ev else None, sources=list(ev.sources) if ev else [],
                    date=ev.date if ev else None, software=software)


def _hardware_out(r: OptionResult) -> HardwareOut:
    o, net = r.option, r.option.network
    return HardwareOut(
        accelerator=o.accelerator.id, accelerator_name=o.accelerator.name,
        server=o.server.id if o.server is not None else None, count=o.count,
        per_node=r.system.gpus_per_node, nodes=r.system.nodes, memory_gib_per_gpu=r.system.memory_gib,
        network=None if net is None else NetworkOut(id=net.id, kind=net.kind, nics_per_node=net.nics_per_node,
                                                    gbps_per_nic=net.gbps_per_nic, node_gb_s=round(net.node_gb_s, 2)),
    )


def _full_option(p: Priced, rank_: int, score: Score, tie: bool, why: str, catalog: Any,
                 roomy: bool | None = None) -> PlanOption:
    result = evaluate(p.scenario, catalog)
    r = p.result
    meets = Meets(deadline=p.meets_deadline, budget=p.within_budget)
    strategy = {k: getattr(r.strategy, k) for k in STRATEGY_KEYS}
    return PlanOption(
        id=r.option.key, rank=rank_, hardware=_hardware_out(r), strategy=StrategyOut(**strategy),
        memory=with_refs(result["memory"]), time=result["time"], cost=result["cost"], energy=result["energy"],
        meets=meets, score=score, tie=tie, leaves_memory_floor=roomy, why=why, strategies_evaluated=r.evaluated,
        strategies_feasible=r.feasible, notes=result["notes"], scale=scale_out(p.standing, p.platform),
        accuracy=result["accuracy"],
    )


def _load(job: Any, catalog: Any, overrides: Mapping[str, Any] | None) -> Scenario:
    if isinstance(job, Scenario):
        return job
    if isinstance(job, str | Path):
        from trainsizer.spec import read_mapping

        data = read_mapping(Path(job))
        if overrides:
            data = apply_plan_overrides(data, overrides)
        return resolve_job(job, catalog, data=data, network_searched=True)
    if isinstance(job, Mapping) and overrides:
        return resolve_job(apply_plan_overrides(job, overrides), catalog, network_searched=True)
    return resolve_job(job, catalog, network_searched=True)


def apply_plan_overrides(data: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Goal and constraint overrides (`--max-nodes`, `--deadline-days`, `--budget`) merged into a job mapping
    before validation, so bad values get the same errors as in the file."""
    out = dict(data)

    def section(name: str) -> dict[str, Any]:
        cur = out.get(name)
        out[name] = dict(cur) if isinstance(cur, Mapping) else {}
        return out[name]

    if overrides.get("max_nodes") is not None:
        section("constraints")["max_nodes"] = overrides["max_nodes"]
    if overrides.get("max_gpus") is not None:
        section("constraints")["max_gpus"] = overrides["max_gpus"]
    if overrides.get("deadline_days") is not None:
        section("goal")["deadline_days"] = overrides["deadline_days"]
    if overrides.get("budget") is not None:
        goal = section("goal")
        budget = goal.get("budget")
        budget = dict(budget) if isinstance(budget, Mapping) else {}
        budget["amount"] = overrides["budget"]
        goal["budget"] = budget
    if overrides.get("procurement") is not None:
        section("goal")["procurement"] = overrides["procurement"]
    return out


def _pins(scenario: Scenario, catalog: Any, pins: Pins | None) -> Pins:
    hw = scenario.job.hardware
    base = Pins()
    if hw is not None:
        base = Pins(accelerator=catalog.resolve_accelerator_id(hw.accelerator) if hw.accelerator else None,
                    count=hw.count,
                    per_node=hw.per_node, network=hw.network, fabric=hw.fabric)
    if pins is None:
        return base
    acc = catalog.resolve_accelerator_id(pins.accelerator) if pins.accelerator else base.accelerator
    return Pins(accelerator=acc, count=pins.count or base.count, per_node=pins.per_node or base.per_node,
                network=pins.network or base.network, fabric=base.fabric)


def _options(sr: Searched, rk: Ranked, top: int, catalog: Any, lang: str,
             option: int | None = None) -> list[PlanOption]:
    """The top options, the ties, the Pareto points and the one `option` names, evaluated in full, in rank
    order."""
    currency = plan_currency(sr.base)
    tie_ids = {s.index for s in rk.tied}
    shown = list(rk.ranked[:max(top, 1)])
    if option is not None and rk.ranked[option - 1] not in shown:
        shown.append(rk.ranked[option - 1])
    shown += [s for s in rk.ranked if (s.index in tie_ids or s in rk.front) and s not in shown]
    shown.sort(key=lambda s: rk.ranked.index(s))
    out = []
    # the first option's sentence names the widest fraction any tie was called within (another class's: wider)
    widest = max([rk.fractions.get(t.index, rk.fraction) for t in rk.tied] or [rk.fraction])
    for s in shown:
        v = ranking.value(s, rk.metric)
        p = sr.priced[s.index]
        own = rk.fractions.get(s.index, rk.fraction)
        score = Score(metric=rk.metric, value=v if v != float("inf") else None,
                      currency=currency if rk.metric == "cost" else None, uncertainty_fraction=own,
                      cost=p.cost, cost_basis=p.basis)
        why = explain.why(s, rk.ranked, sr.priced, rk.metric, currency, widest if s is rk.ranked[0] else own,
                          tie_ids, rk.satisfied, lang)
        out.append(_full_option(sr.priced[s.index], rk.ranked.index(s) + 1, score,
                                s.index in tie_ids and len(tie_ids) > 1, why, catalog, s.roomy))
    return out


def make_plan(job: str | Path | Mapping[str, Any] | Job | Scenario, catalog: Any = None, *,
              pins: Pins | None = None, top: int = DEFAULT_TOP, overrides: Mapping[str, Any] | None = None,
              lang: str = "en", option: int | None = None, build: bool = True) -> Plan:
    """The plan for `job` (a job file, mapping, `Job` or resolved `Scenario`), its sentences in `lang`
    (en | zh); see module docstring. `build`: add the build-out blocks (`Plan.build`) of the recommended
    option, or of the option ranked `option` (1-based)."""
    from trainsizer.catalog import load_catalog
    from trainsizer.plan.buildout.for_plan import attach, check_option
    from trainsizer.plan.relax import quantify

    if lang not in LANGS:
        raise SpecError("lang", msg("error_unknown_language"), value=lang, allowed=LANGS)
    start = time.perf_counter()
    catalog = catalog if catalog is not None else load_catalog()
    scenario = _load(job, catalog, overrides)
    sr = search_job(scenario, catalog, _pins(scenario, catalog, pins))
    _refused_by_options(sr.results)
    cfg = load_config()
    rk = rank_searched(sr, cfg.tie_fraction)
    refined = None
    if rk.satisfied and rk.metric == "cost":  # buying 50% more GPUs than a deadline needs is not cheap
        refined = refine_count(sr, rk.ranked[0].index, catalog, cfg, cfg.tie_fraction, price)
        if refined is not None:
            sr.priced.append(refined.priced)
            sr.results.append(refined.priced.result)
            rk = rank_searched(sr, cfg.tie_fraction)
    check_option(option, len(rk.ranked))
    options = _options(sr, rk, top, catalog, lang, option)
    recommended = options[0] if options and rk.satisfied else None
    binding = None
    if not rk.satisfied:
        binding = quantify(explain.binding(sr.base, sr.results, sr.priced, sr.cands, cfg, lang), sr, catalog, lang)
    tier = (explain.tier(recommended, sr.priced[rk.ranked[0].index], sr.priced, sr.results, rk.objective, cfg,
                         lang, sr.pins.count) if recommended else None)
    beyond = next_count(sr, rk.ranked[0].index, catalog, cfg.tie_fraction) if rk.ranked else None
    plan = _assemble(sr, rk, options, recommended, tier, binding, time.perf_counter() - start, lang, catalog)
    own = _own_strategy_note(scenario, catalog, recommended, lang)
    if refined is not None:
        own = [n for n in (_refined_note(refined, plan_currency(sr.base), lang), own) if n]
    else:
        own = [own] if own else []
    if beyond is not None:
        own.append(_next_count_note(beyond, plan_currency(sr.base), lang))
        if beyond.found is not None:
            plan = plan.model_copy(update={"next_count": _summary(beyond.found, score_of(len(sr.priced), beyond.found))})
    for note in own:
        stored = plan.notes_msg or [None] * len(plan.notes)
        plan = plan.model_copy(update={"notes": [*plan.notes, note], "notes_msg": [*stored, ref(note)]})
    plan = attach(plan, sr.priced, rk.ranked, option, catalog) if build else plan
    return in_language(plan, lang)


def _refused_by_options(results: list[OptionResult]) -> None:
    """The job's stated stack options, or a job setting (fp8_recipe nvfp4-torchao on Megatron-Core), hold on no
    layout of any option searched (the rest skipped for memory): the rule they break, as `estimate` names it for a
    stated layout."""
    def refuses(r: OptionResult) -> bool:
        return r.refused_by_options or r.invalid_refusal is not None

    refused = [r for r in results if refuses(r)]
    if refused and all(refuses(r) or r.skipped for r in results):
        raise StrategyError(*(refused[0].options_refusal or refused[0].invalid_refusal))


def _refined_note(rf: Any, currency: str, lang: str) -> str:
    """What the count refinement found (plan.refine): the count, against the two ladder rungs."""
    return explain.msg("note_count_refined", lang, option=rf.priced.result.option.key,
                       cost=explain.money(rf.priced.cost, currency, lang), days=duration(rf.priced.train_days),
                       rung=rf.rung.result.option.key, rung_cost=explain.money(rf.rung.cost, currency, lang),
                       lower=rf.lower.result.option.key, lower_days=duration(rf.lower.train_days))


def _next_count_note(nc: NextCount, currency: str, lang: str) -> str:
    """The pinned count where every layout offloads, against the next count that fits on the GPUs alone; or a pinned
    count that fits, against a neighbouring count that beats it (NextCount.nearby)."""
    pinned = dict(count=nc.pinned.result.option.count, pinned_days=duration(nc.pinned.train_days),
                  pinned_cost=explain.money(nc.pinned.cost, currency, lang))
    if nc.found is None:
        return explain.msg("note_next_count_none", lang, last=nc.last_count, **pinned)
    r = nc.found.result
    return explain.msg("note_nearby_count" if nc.nearby else "note_next_count", lang, option=r.option.key,
                       layout=layout_text(r.strategy),
                       days=duration(nc.found.train_days), cost=explain.money(nc.found.cost, currency, lang),
                       **pinned)


def _own_strategy_note(scenario: Scenario, catalog: Any, rec: PlanOption | None, lang: str) -> str | None:
    """The job's own strategy (when it gives hardware and strategy) against the plan's best on that hardware."""
    from trainsizer.default_strategy import names_no_layout
    from trainsizer.errors import TrainsizerError, render_error

    if scenario.system is None or scenario.strategy is None or names_no_layout(scenario):
        return None  # a strategy naming only its stack is no layout of its own: the search ran on that stack
    try:
        own = evaluate(scenario, catalog)
    except TrainsizerError as err:
        return explain.msg("note_own_invalid", lang, error=render_error(err, lang))
    days = own["time"]["train_days"]
    if not own["memory"]["fits"]:
        return explain.msg("note_own_no_fit", lang, need=f"{own['memory']['per_gpu_gib']:.1f}",
                           cap=f"{own['memory']['capacity_gib']:.1f}")
    same = rec is not None and rec.hardware.count == scenario.system.gpus and \
        rec.hardware.accelerator == scenario.system.accelerator
    if not same or rec is None:
        return explain.msg("note_own", lang, days=duration(days))
    gain = days / rec.time.train_days - 1.0 if rec.time.train_days > 0 else 0.0
    if abs(gain) < 0.005:  # '+0% as long' read as a difference
        return explain.msg("note_own_same", lang, days=duration(days))
    return explain.msg("note_own_vs", lang, days=duration(days), best=duration(rec.time.train_days),
                       gain=f"{gain:+.0%}")


def _assemble(sr: Searched, rk: Ranked, options: list[PlanOption], recommended: PlanOption | None, tier: Any,
              binding: Any, seconds: float, lang: str, catalog: Any) -> Plan:
    goal, currency, stats, cands = sr.scenario.job.goal, plan_currency(sr.base), sr.stats, sr.cands
    summaries = [_summary(sr.priced[s.index], s) for s in rk.ranked]
    return Plan(
        job=sr.base.summary(),
        goal=GoalOut(objective=rk.objective, deadline_days=goal.deadline_days,
                     budget=goal.budget.amount if goal.budget else None, currency=currency,
                     procurement=goal.procurement),
        search=SearchOut(evaluated=stats.evaluated, feasible=stats.feasible, seconds=round(seconds, 3),
                         memory_evaluations=stats.memory_evaluations,
                         hardware_options=stats.options, hardware_options_pruned=stats.options_pruned_by_memory,
                         hardware_options_not_scaling=stats.options_pruned_by_scaling,
                         hardware_options_feasible=len(sr.priced), excluded_accelerators=explain.excluded(cands, lang),
                         dominated_networks=cands.dominated_networks,
                         stack_options=dict(stated_stack_options(sr.scenario.job.strategy)),
                         layouts_dropped_by_stack_options=stats.dropped_by_options),
        tier=tier, recommended=recommended, options=options,
        hardware_options=summaries,
        ties=[sr.priced[s.index].result.option.key for s in rk.tied] if len(rk.tied) > 1 else [],
        pareto=[ParetoPoint(id=sr.priced[s.index].result.option.key, train_days=s.train_days, cost=s.cost,
                            currency=currency, cost_basis=s.basis) for s in rk.front],
        binding=binding,
        notes=list(sr.scenario.notes) + cands.notes + explain.plan_notes(sr.scenario, sr.pins, lang)
        + explain.stack_notes(stated_stack_options(sr.scenario.job.strategy), stats, lang)
        + explain.scale_notes(rk.ranked, sr.priced, rk.metric, currency, lang)
        + explain.no_scale_evidence_notes(options, recommended, lang)
        + explain.precision_notes(cands, _precision_label(sr.base.training), lang)
        + explain.front_notes(rk.ranked, rk.front, sr.priced, rk.fraction, lang)
        + explain.other_currency_notes([sr.priced[s.index] for s in rk.ranked], currency, lang),
    )


def _summary(p: Priced, s: ranking.Scored) -> OptionSummary:
    o = p.result.option
    return OptionSummary(id=o.key, accelerator=o.accelerator.id, count=o.count, nodes=p.result.system.nodes,
                         network=o.network.id if o.network is not None else None,
                         layout=str(layout_text(p.result.strategy)), train_days=p.train_days, cost=p.cost,
                         cost_basis=p.basis,
                         currency=plan_currency(p.scenario) if p.cost is not None else None,
                         meets=Meets(deadline=s.meets_deadline, budget=s.within_budget), scale=p.standing.level,
                         leaves_memory_floor=s.roomy)


def _precision_label(training: Any) -> str:
    """The low precision a search filtered on: the job's precision, or its FP4-peak recipe (nvfp4, mxfp4), which the
    search requires the FP4 tensor cores of a part that runs it for, or a recipe only some parts run (blockwise:
    perf_constants.yaml fp8.recipe_families; search.candidates._precision_ok)."""
    from trainsizer.estimate.calibration import load_constants

    if training.precision == "fp8" and (training.fp8_recipe in FP4_RECIPES
                                        or training.fp8_recipe in load_constants().fp8_recipe_families):
        return str(training.fp8_recipe)
    return str(training.precision)
