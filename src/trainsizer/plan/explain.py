"""Words for a plan: why the recommended option wins, the job's tier and what decides its size, and — when
nothing satisfies the job — which constraint binds, by how much, and what relaxing it buys.

Sizes needed to meet a deadline are extrapolated linearly from the fastest option found (time x GPUs held
constant), which is optimistic: scaling efficiency only falls with more GPUs. The text says so.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from trainsizer.estimate.framework import AUTO_CHOICES, auto_index_of
from trainsizer.estimate.memory import GIB
from trainsizer.layout_text import layout_text, stack_options_text
from trainsizer.messages import Listing, Money, duration
from trainsizer.plan.messages import joined, msg
from trainsizer.plan.schema import Binding, PlanOption, Relaxation, Tier
from trainsizer.plan.texts import listed
from trainsizer.scenario import Scenario, scaleup_domains
from trainsizer.search import rank as ranking
from trainsizer.search.config import SearchConfig, load_config, names_lean_layout
from trainsizer.search.engine import OptionResult, offload_reason, states_lower_bound_bytes
from trainsizer.search.space import end_stage_layers, model_parallel_group
from trainsizer.spec import LAYOUT_DETAIL_FIELDS, LAYOUT_FIELDS

COMM_KEYS = ("tp_comm", "cp_comm", "ep_comm", "dp_comm", "pp_comm")


def money(v: float | None, currency: str, lang: str = "en") -> str:
    """`v` as the report writes money (`numbers.money`: $3.97, $373, ¥229万), so a sentence and the headline
    above it say the same figure; a `Money` parameter, so the sentence read in the other language writes it
    that language's way."""
    if v is None or not math.isfinite(v):
        return msg("money_none", lang)
    return Money(v, currency)


def excluded(cands: Any, lang: str) -> dict[str, str]:
    """Accelerator id -> why it was not searched, in `lang`."""
    return {acc: joined([msg("excluded_" + r.code, lang, **dict(r.fields)) for r in reasons], lang)
            for acc, reasons in sorted(cands.excluded.items())}


def _family(r: OptionResult) -> tuple:
    o = r.option
    return (o.accelerator.id, o.server.id if o.server is not None else None)


def why(s: ranking.Scored, ranked: list[ranking.Scored], priced: list[Any], metric: str, currency: str,
        tie_fraction: float, tie_ids: set[int], feasible_ok: bool, lang: str = "en") -> str:
    """One sentence: for the best option, why it beats the runner-up; for the others, how they compare."""
    best = ranked[0]

    def fig(x: ranking.Scored) -> str:
        if metric == "cost":
            return money(x.cost, currency, lang)
        return msg("fig_days", lang, days=duration(x.train_days))

    pct = f"{tie_fraction:.0%}"
    layout = _layout_headroom(priced[s.index].result, lang, priced[s.index].scenario.training.method)
    if s is best:
        if not feasible_ok:
            return msg("why_unsatisfied", lang)
        text = _why_best(s, ranked, priced, fig, metric, pct, tie_ids, currency, lang)
        return joined([text, layout], lang) if layout else text
    parts = []
    if s.meets_deadline is False:
        parts.append(msg("cmp_misses_deadline", lang, days=duration(s.train_days)))
    if s.within_budget is False:
        parts.append(msg("cmp_over_budget", lang, cost=money(s.cost, currency, lang)))
    if s.index in tie_ids:
        parts.append(msg("cmp_tied", lang, pct=pct))
    vb, vs = ranking.value(best, metric), ranking.value(s, metric)
    if math.isfinite(vb) and math.isfinite(vs) and vb > 0:
        parts.append(msg("cmp_cost" if metric == "cost" else "cmp_time", lang, delta=f"{vs / vb - 1.0:+.0%}"))
    parts.append(msg("cmp_days_cost", lang, days=duration(s.train_days), cost=money(s.cost, currency, lang)))
    return joined([*parts, layout] if layout else parts, lang)


def _why_best(s: ranking.Scored, ranked: list[ranking.Scored], priced: list[Any], fig: Any, metric: str, pct: str,
              tie_ids: set[int], currency: str, lang: str) -> Any:
    goal = msg("word_cheapest" if metric == "cost" else "word_fastest", lang)
    if len(ranked) == 1:
        return msg("why_only_fit", lang, fig=fig(s))
    nxt = ranked[1]
    key = priced[nxt.index].result.option.key
    if nxt.index in tie_ids:
        size = {x.index: (priced[x.index].result.system.nodes, priced[x.index].result.option.count) for x in ranked
                if x.index in tie_ids}
        roomy = ranking.roomier_than_cheapest([x for x in ranked if x.index in tie_ids], size)
        # unpriced ties are ordered by size alone (rank.prefer_cheapest): the sentence says so
        key_ = ("why_tie_roomy" if roomy else "why_tie") + ("" if s.cost is not None else "_unpriced")
        return msg(key_, lang, fig=fig(s), n=len(tie_ids) - 1, pct=pct, goal=goal, next=key, next_fig=fig(nxt),
                   floor=f"{load_config().memory_headroom_min:.0%}", cost=money(s.cost, currency, lang))
    if not nxt.satisfies:
        return msg("why_only_satisfies", lang, fig=fig(s))
    gap = ranking.value(nxt, metric) / max(ranking.value(s, metric), 1e-12) - 1.0
    return msg("why_best", lang, goal=goal, fig=fig(s), next=key, next_fig=fig(nxt), gap=f"{gap:.0%}")


def _layout_headroom(r: OptionResult, lang: str, method: str = "") -> Any:
    """The sentences on the chosen layout: partial recompute (search.partial), and a layout chosen over a faster one
    to keep the GPU memory floor free."""
    parts = [p for p in (_offloaded(r, method, lang), _partial_recompute(r, lang), _headroom(r, lang), _lean(r, lang),
                         _stack(r, method, lang)) if p]
    return joined(parts, lang) if parts else None


def _offloaded(r: OptionResult, method: str, lang: str) -> Any:
    """Why the layout offloads to the CPU when nothing fits on the GPUs alone (search.engine.offload_reason)."""
    why = offload_reason(r, frozen_base=method in ("lora", "qlora"))
    return msg(why[0], lang, **why[1]) if why else None


def _partial_recompute(r: OptionResult, lang: str) -> Any:
    s = r.strategy
    if s is None or s.recompute_method is None or not r.chunk_layers:
        return None
    return msg("layout_partial_recompute", lang, n=s.recompute_num_layers, chunk=r.chunk_layers,
               method=s.recompute_method, longer=f"{r.full_recompute_step_s / r.step_s - 1.0:.1%}")


def _headroom(r: OptionResult, lang: str) -> Any:
    if not r.for_headroom:
        return None
    return msg("layout_for_headroom", lang, slower=f"{r.step_s / r.fastest_step_s - 1.0:.1%}",
               floor=f"{load_config().memory_headroom_min:.0%}", used=f"{r.mem_gib:.1f}",
               fast_used=f"{r.fastest_mem_gib:.1f}", cap=f"{r.system.memory_gib:.1f}")


def _lean(r: OptionResult, lang: str) -> Any:
    """The least memory that fits on this hardware, when the chosen (fastest) layout takes far more of it
    (search.config.names_lean_layout): the chosen figure is not what the job needs."""
    if r.strategy is None or r.lean_strategy is None or not names_lean_layout(r.mem_gib, r.lean_mem_gib):
        return None
    # a layout kept for headroom is not the fastest that fits (_headroom said so): the sentence must not call it that
    return msg("layout_lean_kept" if r.for_headroom else "layout_lean", lang, used=f"{r.mem_gib:.1f}",
               lean=f"{r.lean_mem_gib:.1f}",
               layout=layout_text(r.lean_strategy), slower=f"{r.lean_step_s / r.step_s - 1.0:.0%}")


def _stack(r: OptionResult, method: str, lang: str) -> Any:
    """A fine-tune's pipelined layout under framework auto: the stack it resolved to runs it, the ones most
    fine-tunes use do not (estimate.validate PIPELINE_FRAMEWORKS), and how to plan for those."""
    s = r.strategy
    if s is None or s.framework != "auto" or s.pp <= 1 or method in ("pretrain", "cpt"):
        return None
    assumed = AUTO_CHOICES[int(np.asarray(auto_index_of(s)).reshape(-1)[0])]
    return msg("layout_pipeline_stack", lang, pp=s.pp, stack=assumed)


def tier_id(gpus: int, nodes: int, cfg: SearchConfig) -> str:
    for t in cfg.tiers:
        if ("max_gpus" in t and gpus <= t["max_gpus"]) or ("max_nodes" in t and nodes <= t["max_nodes"]):
            return t["id"]
    return cfg.tiers[-1]["id"]


def tier(rec: PlanOption, best: Any, priced: list[Any], results: list[OptionResult], objective: str,
         cfg: SearchConfig, lang: str = "en", pinned_count: int | None = None) -> Tier:
    """The guides' tier of the recommended option and the resource that sets its size (`pinned_count`: the GPU
    count the job or a flag fixes, which then sets it: no other count was searched)."""
    gpus, nodes = rec.hardware.count, rec.hardware.nodes
    r = best.result
    family = [x for x in results if _family(x) == _family(r)]
    smaller = [x for x in family if x.option.count < r.option.count]
    fitting_smaller = [x for x in smaller if x.strategy is not None]
    acc = r.option.accelerator.id
    job = best.scenario.job
    if gpus == 1 and r.lean_strategy is not None and names_lean_layout(r.mem_gib, r.lean_mem_gib):
        decided, text = "memory", msg("tier_one_gpu_lean", lang, acc=acc, lean=f"{r.lean_mem_gib:.1f}",
                                      cap=f"{rec.memory.capacity_gib:.1f}", used=f"{rec.memory.per_gpu_gib:.1f}")
    elif gpus == 1:
        decided, text = "memory", msg("tier_one_gpu", lang, acc=acc, used=f"{rec.memory.per_gpu_gib:.1f}",
                                      cap=f"{rec.memory.capacity_gib:.1f}")
    elif pinned_count == gpus:
        decided, text = "constraints", msg("tier_pinned", lang, gpus=f"{gpus:,}")
    elif smaller and not fitting_smaller:
        x = max(smaller, key=lambda x: x.option.count)
        need = x.min_mem_gib if math.isfinite(x.min_mem_gib) else x.lower_bound_gib
        decided, text = "memory", msg("tier_memory", lang, gpus=gpus, acc=acc, fewer=x.option.count,
                                      need=f"{need:.0f}", cap=f"{r.system.memory_gib:.1f}")
    elif job.goal.deadline_days is not None and _missing(fitting_smaller, priced, job.goal.deadline_days):
        x = max(fitting_smaller, key=lambda x: x.option.count)
        days = next((p.train_days for p in priced if p.result is x), float("nan"))
        decided, text = "deadline", msg("tier_deadline", lang, acc=acc, deadline=f"{job.goal.deadline_days:g}",
                                        fewer=x.option.count, days=duration(days))
    elif objective in ("time", "time_within_budget") and job.goal.budget is not None:
        decided, text = "budget", msg("tier_budget", lang)
    else:
        bd = rec.time.model_extra.get("breakdown_s", {}) if rec.time.model_extra else {}
        comm = sum(bd.get(k, 0.0) for k in COMM_KEYS)
        decided = "network" if comm > bd.get("compute", 0.0) else "compute"
        text = (msg("tier_network", lang, comm=f"{comm:.2f}", compute=f"{bd.get('compute', 0.0):.2f}")
                if decided == "network" else msg("tier_compute", lang))
    return Tier(id=tier_id(gpus, nodes, cfg), gpus=gpus, nodes=nodes, decided_by=decided, why=text,
                **_domains(r))


def _domains(r: OptionResult) -> dict[str, int]:
    """GPUs per node and, where a scale-up domain spans several nodes, the domains the job takes (NVL72 racks)."""
    return {"per_node": r.option.per_node, **scaleup_domains(r.option.accelerator, r.system)}


def _missing(smaller: list[OptionResult], priced: list[Any], deadline: float) -> bool:
    """True when the largest fitting smaller option of the family misses the deadline."""
    if not smaller:
        return False
    x = max(smaller, key=lambda x: x.option.count)
    return any(p.result is x and p.train_days > deadline for p in priced)


def other_currency_notes(priced: list[Any], currency: str, lang: str = "en") -> list[str]:
    """An option whose cost was converted from the other currency (H800 priced in CNY only, in a USD plan:
    core.converted_cost, at the bill of materials' dated rate): the note names the part and the rate, and how to
    rank by its own price."""
    seen: dict[str, str] = {}
    for p in priced:
        if p.converted and p.result.option.accelerator.id not in seen:
            seen[p.result.option.accelerator.id] = p.converted
    other = "CNY" if currency == "USD" else "USD"
    return [msg("note_price_other_currency", lang, acc=a, currency=currency, other=other, rate=rate)
            for a, rate in seen.items()]


def plan_notes(scenario: Scenario, pins: Any, lang: str = "en") -> list[str]:
    from trainsizer.evaluate import AMORTISATION_YEARS

    notes = []
    goal = scenario.job.goal
    if goal.deadline_days is None and goal.budget is None and goal.objective is None:
        notes.append(msg("note_no_goal", lang))
    layout = scenario.job.strategy.model_fields_set & (LAYOUT_FIELDS | LAYOUT_DETAIL_FIELDS) \
        if scenario.job.strategy is not None else set()
    if layout:
        # the framework and the stack options are used (the search keeps to that stack, `stack_notes`); the layout not
        notes.append(msg("note_strategy", lang, fields=", ".join(sorted(layout))))
        notes += _stage_layers_note(scenario.job.strategy, lang)
    if pins.any:
        fixed = [f"{k}={v}" for k, v in (("accelerator", pins.accelerator), ("count", pins.count),
                                         ("per_node", pins.per_node), ("network", pins.network)) if v is not None]
        notes.append(msg("note_pinned", lang, fixed=listed(fixed)))  # 'a=1, b=2' / 'a=1、b=2'
    if goal.procurement in ("buy", "either"):
        notes.append(msg("note_buy", lang, years=f"{AMORTISATION_YEARS:g}"))
    return notes


def stack_notes(options: tuple, stats: Any, lang: str) -> list[str]:
    """The stated stack options the search carried into every layout (spec.stated_stack_options), and how many
    strategies they left out, with the first one's refusal (search.engine `_memory`)."""
    if not options:
        return []
    notes = [msg("note_stack_options", lang, options=stack_options_text(options))]
    if stats.dropped_by_options and stats.options_refusal is not None:
        notes.append(msg("note_stack_options_dropped", lang, dropped=stats.dropped_by_options,
                         evaluated=stats.evaluated, reason=stats.options_refusal[1]))
    return notes


def _stage_layers_note(spec: Any, lang: str) -> list[str]:
    """The search splits the layers evenly (search.space); a job that states the end ranks' layers
    (pp_first_stage_layers / pp_last_stage_layers) is told its split is not what the plan's options run."""
    stated = [f"{name} {n}" for name in ("pp_first_stage_layers", "pp_last_stage_layers")
              if (n := getattr(spec, name, None)) is not None]
    return [msg("note_stage_layers_even", lang, stated=listed(stated))] if stated else []


def _biggest(results: list[OptionResult]) -> OptionResult | None:
    return max(results, key=lambda r: r.option.count * r.system.memory_gib, default=None)


def binding(base: Scenario, results: list[OptionResult], priced: list[Any], cands: Any, cfg: SearchConfig,
            lang: str = "en") -> Binding:
    """What stops the job from being satisfied, by how much, and what relaxing it buys (first answer; the
    plan then re-searches the relaxed jobs, `plan.relax`)."""
    goal, c = base.job.goal, base.job.constraints
    if not cands.options:
        reasons = excluded(cands, lang)
        why = joined([msg("excluded_named", lang, acc=k, why=v) for k, v in reasons.items()], lang) or \
            msg("bind_pins", lang)
        key = "relax_constraints" if reasons else "relax_pins"
        return Binding(constraint="constraints", detail=msg("bind_constraints", lang, why=why),
                       relaxations=[Relaxation(change=msg(key, lang), result=msg(key + "_buys", lang))])
    if not priced:
        if results and all(r.evaluated == 0 and r.skipped is None for r in results):
            return _layout_binding(base, results, lang)  # memory never got a say: no layout splits the batch
        return _memory_binding(base, results, lang)
    fastest = min(priced, key=lambda p: p.train_days)
    if goal.deadline_days is not None and fastest.train_days > goal.deadline_days:
        return _deadline_binding(base, fastest, goal.deadline_days, c, cfg, lang)
    return _budget_binding(base, priced, lang)


def _budget_binding(base: Scenario, priced: list[Any], lang: str) -> Binding:
    goal = base.job.goal
    assert goal.budget is not None  # the only other way an option fails
    cur = goal.budget.currency
    meeting = [p for p in priced if goal.deadline_days is None or p.train_days <= goal.deadline_days]
    cheapest = min((p for p in meeting if p.cost is not None), key=lambda p: p.cost, default=None)
    if cheapest is None:
        return Binding(constraint="budget", detail=msg("bind_no_price", lang, currency=cur))
    within = [p for p in priced if p.cost is not None and p.cost <= goal.budget.amount]
    relax = [Relaxation(change=msg("relax_budget", lang, cost=money(cheapest.cost, cur, lang)),
                        result=msg("relax_gives", lang, option=cheapest.result.option.key,
                                   days=duration(cheapest.train_days)))]
    if within:
        slow = min(within, key=lambda p: p.train_days)
        relax.append(Relaxation(change=msg("relax_deadline", lang, days=math.ceil(slow.train_days)),
                                result=msg("relax_gives_cost", lang, option=slow.result.option.key,
                                           cost=money(slow.cost, cur, lang))))
    extra = (msg("bind_budget_extra", lang, deadline=f"{goal.deadline_days:g}")
             if goal.deadline_days is not None else "")
    detail = msg("bind_budget", lang, extra=extra, option=cheapest.result.option.key,
                 cost=money(cheapest.cost, cur, lang), over=f"{cheapest.cost / goal.budget.amount - 1.0:.0%}",
                 budget=money(goal.budget.amount, cur, lang))
    return Binding(constraint="budget", needed=cheapest.cost, allowed=goal.budget.amount, unit=cur, detail=detail,
                   relaxations=relax)


def _deadline_binding(base: Scenario, fastest: Any, deadline: float, c: Any, cfg: SearchConfig,
                      lang: str) -> Binding:
    r = fastest.result
    # days / deadline only when both are finite and the deadline positive (the spec's bound, re-checked here
    # because a Scenario can be built without it): no division by zero, no ceil of inf or nan
    ratio = fastest.train_days / deadline if deadline > 0 else math.inf
    need = math.ceil(r.option.count * ratio) if math.isfinite(ratio) else None
    allowed = c.max_gpus or (c.max_nodes * r.option.per_node if c.max_nodes else cfg.default_max_gpus)
    acc = r.option.accelerator.id
    detail = msg("bind_deadline", lang, option=r.option.key, days=duration(fastest.train_days),
                 deadline=f"{deadline:g}", need=f"{need:,}" if need is not None else msg("need_unknown", lang),
                 acc=acc, allowed=f"{allowed:,}")
    relax = []
    if math.isfinite(fastest.train_days):
        relax.append(Relaxation(change=msg("relax_deadline", lang, days=math.ceil(fastest.train_days)),
                                result=msg("relax_meets", lang, option=r.option.key)))
    return Binding(constraint="deadline", needed=None if need is None else float(need), allowed=float(allowed),
                   unit="GPUs", detail=detail, relaxations=relax)


def _layout_binding(base: Scenario, results: list[OptionResult], lang: str) -> Binding:
    """No strategy could be laid out on any option (none reached the memory check): the global batch does not
    split into whole micro-batches over any data-parallel degree the GPU counts allow."""
    big = _biggest(results)
    assert big is not None
    seqs = int(base.training.global_batch_seqs)
    detail = msg("bind_layout", lang, option=big.option.key, seqs=f"{seqs:,}")
    relax = [Relaxation(change=msg("relax_batch", lang, gpus=big.option.count),
                        result=msg("relax_batch_buys", lang))]
    fewer = layout_count(big.option.count, big.option.per_node, seqs, base.model.layers)
    if fewer is not None:
        relax.append(Relaxation(change=msg("relax_layout_count", lang, gpus=f"{fewer:,}", asked=f"{big.option.count:,}",
                                           nodes=f"{fewer // big.option.per_node:,}", per_node=big.option.per_node),
                                result=msg("relax_batch_buys", lang)))
    return Binding(constraint="constraints", detail=detail, relaxations=relax)


def layout_count(gpus: int, per_node: int, seqs: int, layers: int | None = None) -> int | None:
    """The largest GPU count below `gpus`, whole hosts of `per_node`, that splits into a data-parallel degree
    dividing the global batch of `seqs` sequences times a model-parallel group the search tries (TP x PP x CP of a
    power of two, or an odd multiplier times one, the odd factor in PP: search.space.model_parallel_group), whose
    pipeline of that odd factor splits the model's `layers` (search.space.end_stage_layers: 80 layers take no PP
    35): 72 GB200 with 512 sequences -> 64 (16 trays: the MLPerf NVL72 runs use 64 of a rack's 72, SEGMENT=16),
    10,240 H100 with 2,048 -> 8,960 (PP 35) for a model of 105 layers. None when no such count exists."""
    odd = load_config().pp_odd_factors
    for n in range(gpus - gpus % per_node - (per_node if gpus % per_node == 0 else 0), 0, -per_node):
        group = n // math.gcd(n, seqs)
        if model_parallel_group(group, odd) and _pipeline_splits(group & -group, group, layers):
            return n
    return None


def _pipeline_splits(pow2: int, group: int, layers: int | None) -> bool:
    """Whether a pipeline of the group's odd factor (`group` / its power-of-two part `pow2`) splits `layers`."""
    f = group // pow2
    return layers is None or f == 1 or (f <= layers and end_stage_layers(layers, f, 1) is not None)


def _memory_binding(base: Scenario, results: list[OptionResult], lang: str) -> Binding:
    big = _biggest(results)
    assert big is not None
    cap = big.system.memory_gib
    per_gpu = states_lower_bound_bytes(base.model, base.training, big.option.count) / GIB
    need = math.ceil(per_gpu * big.option.count / cap)
    detail = msg("bind_memory", lang, option=big.option.key, cap=f"{cap:.1f}", per_gpu=f"{per_gpu:.0f}",
                 gpus=big.option.count, need=f"{need:,}")
    relax = [Relaxation(change=msg("relax_gpus", lang, need=f"{need:,}", acc=big.option.accelerator.id),
                        result=msg("relax_gpus_buys", lang))]
    return Binding(constraint="memory", needed=float(need), allowed=float(big.option.count), unit="GPUs",
                   detail=detail, relaxations=relax)


def _level_text(st: Any, lang: str) -> str:
    if st.level == "designed":
        return msg("scale_level_designed", lang, evidence=st.evidence.what, date=st.evidence.date)
    if st.evidence is None:
        return msg("scale_level_beyond_none", lang)
    return msg("scale_level_beyond", lang, doublings=st.doublings, documented=f"{st.documented_gpus:,}",
               evidence=st.evidence.what, date=st.evidence.date)


def scale_notes(ranked: list[ranking.Scored], priced: list[Any], metric: str, currency: str,
                lang: str = "en") -> list[str]:
    """What documented scale changed: the recommended option's standing when it is not demonstrated, and the
    option that would have ranked first on the goal's figure alone when a better-documented one beat it."""
    if not ranked or not ranked[0].satisfies:
        return []
    best = ranked[0]
    notes = []
    st = priced[best.index].standing
    if st.level != "demonstrated":
        notes.append(msg("note_scale_recommended", lang, option=priced[best.index].result.option.key,
                         level=_level_text(st, lang)))
    by_figure = min((s for s in ranked if s.satisfies),
                    key=lambda s: (ranking.value(s, metric), s.scale, s.index))
    # only when documented scale decided it: a same-standing option behind the best is a tie put second by
    # `rank.prefer_cheapest` (memory headroom, then cheapest, then simplest), which the why already says
    if by_figure is not best and by_figure.scale > best.scale \
            and ranking.value(by_figure, metric) < ranking.value(best, metric):
        p = priced[by_figure.index]
        fig = money(by_figure.cost, currency, lang) if metric == "cost" else \
            msg("fig_days", lang, days=duration(by_figure.train_days))
        notes.append(msg("note_scale_passed_over", lang, option=p.result.option.key, fig=fig,
                         level=_level_text(p.standing, lang)))
    return notes


def no_scale_evidence_notes(options: list[PlanOption], recommended: PlanOption | None,
                            lang: str = "en") -> list[str]:
    """The accelerators of the options shown that are larger than one server and have no documented scale at
    all: said once, so a reader knows why they rank late and how to add what they know (the recommended
    option's own scale note already says it for its accelerator)."""
    skip = recommended.hardware.accelerator if recommended is not None else None
    accs = sorted({o.hardware.accelerator for o in options
                   if o.scale.platform is None and o.scale.level != "demonstrated" and o.hardware.accelerator != skip})
    return [msg("note_scale_no_evidence", lang, accs=Listing(accs))] if accs else []


def precision_notes(cands: Any, precision: str, lang: str = "en") -> list[str]:
    """Accelerators left out only because they lack the job's low precision (FP8 / FP4) are still candidates
    at 16 bits: name them so the comparison is asked for, not silently lost (e.g. Ascend for an FP8 job)."""
    from trainsizer.estimate.calibration import load_constants

    by_part = precision in load_constants().fp8_recipe_families  # blockwise: an FP8 recipe some FP8 parts do not run
    if precision not in ("fp8", "fp4", "nvfp4", "mxfp4") and not by_part:
        return []
    only = sorted(acc for acc, reasons in cands.excluded.items()
                  if reasons and all(r.code == "precision" for r in reasons))
    key = "note_recipe_excluded" if by_part else "note_precision_excluded"
    return [msg(key, lang, accs=Listing(only), precision=precision)] if only else []



def front_notes(ranked: list[ranking.Scored], front: list[ranking.Scored], priced: list[Any], band: float,
                lang: str = "en") -> list[str]:
    """Options faster than the front's fastest point (by more than `band`, as the front counts faster) that it leaves out because they are priced only on the
    other basis (search.rank.front_basis): named, so a fast option with no rental price (or no purchase price) is
    not silently lost."""
    if not front or front[0].basis is None:
        return []
    basis, fastest = front[0].basis, front[0].train_days
    left = [s for s in sorted(ranked, key=lambda s: s.train_days)
            if s.cost is not None and s.basis not in (None, basis) and s.train_days * (1.0 + band) < fastest]
    if not left:
        return []
    ids = Listing(priced[s.index].result.option.key for s in left[:3])
    return [msg("note_front_basis", lang, basis=msg(f"word_basis_{basis}", lang),
                other=msg(f"word_basis_{left[0].basis}", lang), count=len(left), ids=ids)]
