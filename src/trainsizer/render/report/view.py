"""A plan as the report shows it: headline, key facts, option table, charts and one section per plan block.

Everything here is formatted text in one language; the HTML, Markdown and PDF renderers only lay it out.
A block the plan does not hold is shown as missing, never filled in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trainsizer.evaluate import capacity_notes
from trainsizer.layout_text import layout_in
from trainsizer.messages import tr
from trainsizer.render import cost_basis
from trainsizer.render.estimate_view import accuracy_figures, accuracy_label
from trainsizer.render.i18n import WARNING_NOTES
from trainsizer.render.report import plan_charts
from trainsizer.render.report.blocks import Table, block_tables, cell, limits_table
from trainsizer.render.report.charts import Chart
from trainsizer.render.report.facts import (
    BUILD_BLOCKS,
    as_dict,
    blocks,
    currency,
    network_name,
    option_label,
    option_number,
    procurement,
    recommended,
)
from trainsizer.render.report.fmt import Fmt
from trainsizer.render.report.i18n import has, t
from trainsizer.render.report.sources import assumptions
from trainsizer.render.tier_size import tier_size_key


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    tables: tuple[Table, ...] = ()
    charts: tuple[str, ...] = ()
    missing: str = ""
    text: tuple[str, ...] = ()
    diagram: bool = False
    code: tuple[tuple[str, str], ...] = ()     # generated files shown verbatim: (name, text)


@dataclass(frozen=True)
class ReportView:
    lang: str
    title: str
    subtitle: str
    headline: str
    facts: Table
    sections: tuple[Section, ...]
    charts: tuple[Chart, ...]
    plan: dict
    warnings: tuple[str, ...] = ()  # notes that change what the job trains on, under the headline


def _action(cost: cost_basis.Cost | None, plan: Mapping) -> str:
    """'rent' or 'buy': the cost's basis, else what the job asked for."""
    if cost is not None:
        return "rent" if cost.basis == "rent" else "buy"
    return procurement(plan) if procurement(plan) in ("rent", "buy") else "rent"


def cost_text(cost: cost_basis.Cost | None, f: Fmt, *, basis: bool = True) -> str:
    """'$2,604 ($2,572 – $2,637) (rent)': the figure, its range and, with `basis`, which basis it is on."""
    if cost is None:
        return "—"
    text = f.money_range(cost.low, cost.mid, cost.high, cost.currency)
    return f"{text}{t('paren', f.lang, text=cost.label(f.lang))}" if basis else text


def headline(plan: Mapping, f: Fmt) -> str:
    """'Rent 32 × H100 ... for about 3.2 days; cost (rent) about $9,198 ($4,600 – $17,000).' or why nothing
    fits. A purchase says its full price (what the plan ranked) and, beside it, the job's amortised share."""
    L, rec = f.lang, recommended(plan)
    if rec is None:
        return t("headline.none", L)
    o = plan["options"][rec]
    hw = o.get("hardware") or {}
    cost = cost_basis.ranked(o, procurement(plan))
    where = t("where.one", L) if (hw.get("nodes") or 1) == 1 else t(
        "where.many", L, nodes=f.count(hw.get("nodes")), per_node=f.count(hw.get("per_node")),
        network=network_name(hw) or "—")
    values = dict(action=t(f"action.{_action(cost, plan)}", L), count=f.count(hw.get("count")),
                  accelerator=hw.get("accelerator", "?"), where=where,
                  days=f.days((o.get("time") or {}).get("train_days")))
    if cost is None:
        cur = str((o.get("cost") or {}).get("currency") or currency(plan))
        return t("headline.noprice", L, currency=cur or "—", **values)
    values.update(basis=cost.label(L), cost=cost_text(cost, f, basis=False))
    beside = cost_basis.amortised_beside(o, procurement(plan))
    if beside is not None:
        return t("headline.buy_ram" if _adds_host_ram(o) else "headline.buy", L, amortised_basis=beside.label(L),
                 amortised=cost_text(beside, f, basis=False), **values)
    return t("headline", L, **values)


def capex_text(price: Mapping, cur: str, f: Fmt) -> str:
    """The purchase price of the accelerators (quantity × unit price range) and of the host RAM an offloaded layout
    adds, as the estimate prices it."""
    low, high = cost_basis.capex_bounds(price)
    if low is not None and high is not None:
        return f.money_range(low, price["capex_total"], high, cur)
    return f.money(price["capex_total"], cur)


def _adds_host_ram(o: Mapping) -> bool:
    """Whether the option's purchase includes the host RAM its offloaded layout adds (evaluate.host_ram_block): then
    the purchase is not the accelerators' alone, and its labels say so."""
    ram = ((o.get("cost") or {}).get("buy") or {}).get("host_ram") or {}
    return bool(ram.get("mid"))


def _cost_rows(o: Mapping, plan: Mapping, f: Fmt) -> list[tuple[str, str]]:
    """How much, on the basis the plan ranked by; for a purchase also the accelerators' price and the job's
    amortised share, each under its basis."""
    L = f.lang
    cost = cost_basis.ranked(o, procurement(plan))
    if cost is None:
        return [(t("fact.how_much", L, basis="—"), "—")]
    buy = (o.get("cost") or {}).get("buy") or {}
    ram = "_ram" if _adds_host_ram(o) else ""
    rows = [(t(f"fact.capex{ram}", L), capex_text(buy, cost.currency, f))] if cost.basis == "buy_full" else []
    for c in (cost, cost_basis.amortised_beside(o, procurement(plan))):
        if c is not None:
            key = f"fact.how_much.{c.basis}" if has(f"fact.how_much.{c.basis}") else "fact.how_much"
            key = f"{key}{ram}" if has(f"{key}{ram}") else key
            rows.append((t(key, L, basis=c.label(L)), cost_text(c, f, basis=False)))
    return rows


def _accuracy_rows(option: Mapping, f: Fmt) -> list[tuple[str, str]]:
    """How far off the estimate is likely to be (plan options[].accuracy, as the CLI's accuracy line writes it) and
    the days its class's 10th..90th percentile imply; a class with too few held-out runs says so and gives no days.
    None for a plan made before options carried it."""
    acc = option.get("accuracy")
    if not acc:
        return []
    rows = [(accuracy_label(f.lang), accuracy_figures(acc, f.lang))]
    days = (acc["time"].get("range") or {}).get("train_days")
    if acc["time"].get("matched") is not None and days:
        rows.append((t("fact.likely_days", f.lang), f"{f.days(days[0])} – {f.days(days[1])}"))
    return rows


def facts_table(plan: Mapping, f: Fmt) -> Table:
    """What / how long / how much, and whether the goal is met."""
    L, rec = f.lang, recommended(plan)
    rows: list[tuple[str, str]] = []
    if rec is not None:
        o = plan["options"][rec]
        hw, tm, meets = o.get("hardware") or {}, o.get("time") or {}, o.get("meets") or {}
        cost = cost_basis.ranked(o, procurement(plan))
        what = " · ".join(str(x) for x in (hw.get("accelerator_name") or hw.get("accelerator"), hw.get("server"),
                                              network_name(hw)) if x)
        rows += [(t("fact.what", L), f"{f.count(hw.get('count'))} × {what}"),
                 (t("fact.how_long", L), f.days(tm.get("train_days"))),
                 *_accuracy_rows(o, f),
                 *_cost_rows(o, plan, f),
                 (t("fact.procurement", L), t(f"action.{_action(cost, plan)}", L) if cost else "—")]
        for goal in ("deadline", "budget"):
            if meets.get(goal) is not None:
                rows.append((t(f"fact.meets_{goal}", L), f.value("", meets[goal])))
        if o.get("why"):
            rows.append((t("fact.why", L), str(o["why"])))
    rows.extend(_tier_rows(plan, f))
    s = plan.get("search") or {}
    if s:
        rows.append((t("fact.search", L), t("search_stats", L, evaluated=f.num(s.get("evaluated")),
                                              feasible=f.num(s.get("feasible")), seconds=f.num(s.get("seconds"), 2))))
        if s.get("hardware_options"):
            rows.append((t("fact.hardware_options", L), t("hardware_stats", L, searched=f.num(s["hardware_options"]),
                                                            feasible=f.num(s.get("hardware_options_feasible")))))
    return Table(t("sec.summary", L), (t("item", L), t("value", L)), tuple(rows))


def _tier_rows(plan: Mapping, f: Fmt) -> list[tuple[str, str]]:
    """The job's tier and the resource that decides its size (the plan's `tier` block, or flat fields)."""
    L, tier = f.lang, plan.get("tier")
    if isinstance(tier, Mapping):
        key, extra = tier_size_key(tier)
        size = (t("fact." + key, L, gpus=f.num(tier["gpus"]), nodes=f.num(tier["nodes"]),
                  **{k: f.num(v) for k, v in extra.items()})
                if (tier.get("gpus") or 0) > 1 and tier.get("nodes") else "")
        rows = [(t("fact.tier", L), cell("tier", tier.get("id"), f, "") + size),
                (t("fact.decided_by", L), cell("decided_by", tier.get("decided_by"), f, ""))]
        return rows + ([(t("fact.tier_why", L), str(tier["why"]))] if tier.get("why") else [])
    return [(t(f"fact.{k}", L), cell(k, plan[k], f, "")) for k in ("tier", "decided_by") if plan.get(k)]


def options_table(plan: Mapping, f: Fmt) -> Table:
    L, rec = f.lang, recommended(plan)
    front = set(plan_charts.pareto_indices(plan))
    kind = procurement(plan)
    rows = []
    for i, o in enumerate(plan.get("options") or []):
        hw, mem, tm = o.get("hardware") or {}, o.get("memory") or {}, o.get("time") or {}
        flags = ((t("recommended", L), i == rec), (t("tie_mark", L), bool(o.get("tie")) and i != rec),
                 (t("pareto_mark", L), i in front), (t("memory_short_mark", L), o.get("leaves_memory_floor") is False))
        marks = " ".join(m for m, on in flags if on)
        meets = o.get("meets") or {}
        rows.append((f"#{option_number(o, i)}", marks, option_label(o),
                     f"{f.count(hw.get('nodes'))} × {f.count(hw.get('per_node'))}", network_name(hw),
                     layout_in(o.get("strategy") or {}, L),
                     f"{f.qty(mem.get('per_gpu_gib'), 'GiB')} / {f.qty(mem.get('capacity_gib'), 'GiB')}",
                     f.qty(tm.get("step_s"), "s", 2), f.pct(tm.get("mfu")), f.days(tm.get("train_days")),
                     cost_text(cost_basis.ranked(o, kind), f),
                     " ".join(t(f"meets.{k}.{bool(v)}", L) for k, v in meets.items() if v is not None)))
    cols = ("#", "", t("option", L), t("nodes_x_gpus", L), t("network", L), t("strategy", L),
            t("memory_per_gpu", L), t("step_time", L), "MFU", t("time_to_train", L), t("cost", L), t("goal", L))
    return Table(t("sec.options", L), cols, tuple(rows))


def _memory_table(plan: Mapping, f: Fmt) -> Table:
    L = f.lang
    parts = ("weights", "gradients", "optimizer", "activations", "other")
    rows = []
    for i, o in enumerate(plan.get("options") or []):
        mem = o.get("memory") or {}
        b = mem.get("breakdown_gib") or {}
        rows.append((f"#{option_number(o, i)} {option_label(o)}", *(f.qty(b.get(p), "GiB") for p in parts),
                     f.qty(mem.get("per_gpu_gib"), "GiB"), f.qty(mem.get("headroom_gib"), "GiB"),
                     str(mem.get("worst_gpu") or "")))
    cols = (t("option", L), *(t(f"mem.{p}", L) for p in parts), t("total", L), t("headroom", L), t("worst_gpu", L))
    return Table(t("sec.memory", L), cols, tuple(rows))


def _time_table(plan: Mapping, f: Fmt) -> Table:
    L = f.lang
    rows = []
    for i, o in enumerate(plan.get("options") or []):
        tm = o.get("time") or {}
        rows.append((f"#{option_number(o, i)} {option_label(o)}", f.qty(tm.get("step_s"), "s", 2), f.num(tm.get("tokens_per_s"), 0),
                     f.pct(tm.get("mfu")), f.pct(tm.get("goodput")), f.num(tm.get("gpu_hours"), 0),
                     f.days(tm.get("train_days"))))
    cols = (t("option", L), t("step_time", L), t("tokens_per_s", L), "MFU", t("goodput", L), t("gpu_hours", L),
            t("time_to_train", L))
    return Table(t("sec.time", L), cols, tuple(rows))


def _build_sections(plan: Mapping, f: Fmt) -> list[Section]:
    L, cur, out, present = f.lang, currency(plan), [], blocks(plan)
    build = plan.get("build") if isinstance(plan.get("build"), Mapping) else {}
    for block in BUILD_BLOCKS:
        title = t(f"sec.{block}", L)
        value = present.get(block)
        if value in (None, {}, []) and build.get(block) == []:  # computed, and nothing to list (no risk found)
            out.append(Section(block, title, text=(t("block_none", L),)))
            continue
        if value in (None, {}, []):
            out.append(Section(block, title, missing=t("block_missing", L), diagram=block == "network"))
            continue
        files = value.get("files") if isinstance(value, Mapping) else None
        code = tuple((str(k), str(v)) for k, v in files.items()) if isinstance(files, Mapping) else ()
        if code:
            value = {k: v for k, v in value.items() if k != "files"}
        if block == "facility":
            value = _facility(value)
        tables = [limits_table(title, value, f)] if block == "acceptance" else block_tables(title, value, f, cur)
        out.append(Section(block, title, tuple(tables), diagram=block == "network", code=code))
    return out


# Facility fields of racks, PDUs and UPS modules of one's own: left out where the site has none (a rented plan's
# are the provider's, a workstation stands on one circuit; one rack server shares the site's UPS), not shown as 0.
_RACK_FIELDS = ("nodes_per_rack", "node_racks", "network_racks", "storage_racks", "racks", "rack_kw_max",
                "over_rack_budget", "pdus", "pdu_kw_each", "ups_modules")
_NOT_AT_SITE = {"rented": frozenset(_RACK_FIELDS + ("floor_m2", "ups_kva")), "workstation": frozenset(_RACK_FIELDS),
                "node": frozenset({"ups_modules"})}


def _facility(block: Mapping) -> dict[str, Any]:
    """The facility block with its power figures named by what they are the power of: a node's, or (NVL72,
    `power_unit` rack) the whole rack's; without the fields the site does not have."""
    prefix = "rack_system_" if block.get("power_unit") == "rack" else "node_"
    drop = _NOT_AT_SITE.get(str(block.get("site")), frozenset())
    out = {(prefix + k.removeprefix("node_") if k.startswith("node_kw") else k): v
           for k, v in block.items() if k != "power_unit" and k not in drop}
    if out.get("site") == "node":  # `v.node` names a link end ('node') in the network block
        out["site"] = "rack_server"
    return out


def _plan_notes(plan: Any, p: Mapping, lang: str) -> list[str]:
    """The plan's notes in `lang`, those that change what the job trains on (render.i18n.WARNING_NOTES) marked
    as warnings, as the CLI marks them."""
    refs = as_dict(plan).get("notes_msg") or []
    out = []
    for i, note in enumerate(p.get("notes") or []):
        ref = refs[i] if i < len(refs) else None
        warn = isinstance(ref, Mapping) and ref.get("key") in WARNING_NOTES
        out.append(f"{t('warning_prefix', lang)}{note}" if warn else note)
    return out


def build_view(plan: Any, lang: str) -> ReportView:
    """The whole report for `plan` in `lang` ('en' or 'zh')."""
    p, f = as_dict(plan, lang), Fmt(lang)
    cur = currency(p)
    charts = (plan_charts.memory_chart(p, lang), plan_charts.time_chart(p, lang),
              plan_charts.pareto_chart(p, lang, cur), plan_charts.scaling_chart(p, lang))
    sections = [Section("options", t("sec.options", lang), (options_table(p, f),)),
                Section("memory", t("sec.memory", lang), (_memory_table(p, f),), charts=("memory",),
                        text=tuple(str(tr(n, lang)) for n in capacity_notes(p.get("options")))),
                Section("time", t("sec.time", lang), (_time_table(p, f),), charts=("time",)),
                Section("pareto", t("sec.pareto", lang), charts=("pareto",)),
                Section("scaling", t("sec.scaling", lang), charts=("scaling",),
                        text=(t("scaling_from_options", lang),) if not p.get("scaling") else ()),
                *_build_sections(p, f)]
    if p.get("binding"):
        sections.insert(0, Section("binding", t("sec.binding", lang), tuple(block_tables(
            t("sec.binding", lang), p["binding"], f, cur))))
    rec = recommended(p)
    plan_notes = _plan_notes(plan, p, lang)
    warnings = tuple(n for n in plan_notes if n.startswith(t("warning_prefix", lang)))
    notes = [*plan_notes, *((p["options"][rec].get("notes") or []) if rec is not None else [])]
    if notes:  # no "Notes" heading over nothing
        sections.append(Section("notes", t("sec.notes", lang), text=tuple(str(n) for n in dict.fromkeys(notes))))
    sections.append(Section("sources", t("sec.sources", lang), (Table(
        t("sec.sources", lang), (t("what", lang), t("value", lang), t("source", lang), t("date", lang)),
        tuple(assumptions(p, f))),)))
    job = p.get("job") or {}
    return ReportView(lang=lang, title=t("title", lang), subtitle=str(job.get("name") or ""),
                      headline=headline(p, f), facts=facts_table(p, f), sections=tuple(sections), charts=charts,
                      plan=p, warnings=warnings)
