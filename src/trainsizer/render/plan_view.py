"""Tables for `trainsizer plan`, drawn from the same `Plan` that `--json` prints."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.table import Table

from trainsizer.evaluate import capacity_notes
from trainsizer.layout_text import layout_in
from trainsizer.messages import LIST_SEPARATORS, duration, tr
from trainsizer.plan.texts import localise
from trainsizer.render import cost_basis
from trainsizer.render.console import console as wide_console
from trainsizer.render.estimate_view import accuracy_line
from trainsizer.render.i18n import note_label, t
from trainsizer.render.numbers import fmt_num, money
from trainsizer.render.tier_size import tier_size_key
from trainsizer.search.config import load_config


def _days(v: float | None, lang: str) -> str:
    """Days to train, or hours / minutes under a day (messages.duration)."""
    return "—" if v is None or not math.isfinite(v) else duration(v).tr(lang)


def _money(v: float | None, currency: str | None, lang: str) -> str:
    """As the report and the plan's sentences write money (`numbers.money`)."""
    if v is None or not math.isfinite(v):
        return "—"
    return money(v, currency, lang) if currency else fmt_num(v, lang)


def _tick(v: bool | None) -> str:
    return "—" if v is None else ("✓" if v else "✗")


def _cost(option: dict[str, Any], procurement: str, lang: str) -> str:
    """The figure the plan ranked the option by, with its basis (render.cost_basis: rent, buy at full price)."""
    cost = cost_basis.ranked(option, procurement)
    if cost is None:
        return "—"
    return _money(cost.mid, cost.currency, lang) + t("paren", lang).format(text=cost.label(lang))


def excluded_text(excluded: dict[str, str], L: str) -> str:
    """'why: a, b, c; why2: d': accelerators left out for the same reason listed once after it (the China-market
    export rule leaves out some thirty parts: one reason, not thirty), the reasons in order of first appearance."""
    by_reason: dict[str, list[str]] = {}
    for acc, why in excluded.items():
        by_reason.setdefault(why, []).append(acc)
    return t("list_semicolon", L).join(why + t("colon", L) + t("list_sep", L).join(accs)
                                       for why, accs in by_reason.items())


def _tier_size(tier: dict, L: str) -> str:
    """' (128 GPUs on 32 nodes)' after a multi-GPU tier's name: the words alone do not say where 'small' ends."""
    gpus, nodes = tier.get("gpus"), tier.get("nodes")
    if not gpus or gpus <= 1 or not nodes:
        return ""
    key, extra = tier_size_key(tier)
    return t("paren", L).format(text=t(key, L).format(gpus=f"{gpus:,}", nodes=f"{nodes:,}",
                                                        **{k: f"{v:,}" for k, v in extra.items()}))



def _cost_line(option: dict[str, Any], procurement: str, lang: str) -> str | None:
    """'$120,192 (buy, full price); $913 (buy, amortised over 4 years)': the amortised share beside a purchase."""
    beside = cost_basis.amortised_beside(option, procurement)
    if beside is None:
        return None
    return t("list_semicolon", lang).join(
        (_cost(option, procurement, lang),
         _money(beside.mid, beside.currency, lang) + t("paren", lang).format(text=beside.label(lang))))


def _option(plan: dict[str, Any], option_id: str) -> dict[str, Any]:
    return next((o for o in plan["options"] if o["id"] == option_id), {})


def _options_table(plan: dict[str, Any], lang: str) -> Table:
    L = lang
    table = Table(title=t("plan_options_title", L))
    for key, justify in (("plan_rank", "right"), ("plan_option", "left"), ("plan_layout", "left"),
                         ("plan_mem", "right"), ("plan_days", "right"), ("plan_cost", "right"),
                         ("plan_deadline", "center"), ("plan_budget", "center")):
        table.add_column(t(key, L), justify=justify)
    for o in plan["options"]:
        cost_text = _cost(o, plan["goal"]["procurement"], L)
        rank = f"{o['rank']}" + (t("paren", L).format(text=t("plan_tie", L)) if o["tie"] else "")
        short = o.get("leaves_memory_floor") is False  # the plan's verdict (search.config.leaves_floor)
        table.add_row(rank, o["id"], layout_in(o["strategy"], L), f"{o['memory']['per_gpu_gib']:.1f}" + (" !" if short else ""),
                      _days(o["time"]["train_days"], L), cost_text, _tick(o["meets"]["deadline"]),
                      _tick(o["meets"]["budget"]))
    return table


def _past_top_note(options: list[dict[str, Any]], lang: str) -> str | None:
    """Why '#22' follows '#10' in the table: the plan lists the Pareto front and the ties past its top ranks."""
    top = next((i for i, o in enumerate(options) if o["rank"] != i + 1), len(options))
    past = [f"#{o['rank']}" for o in options[top:]]
    return t("plan_past_top", lang).format(ranks=LIST_SEPARATORS[lang].join(past), top=top) if past else None


def _pareto_table(plan: dict[str, Any], lang: str) -> Table:
    table = Table(title=t("plan_pareto_title", lang))
    for key in ("plan_option", "plan_days", "plan_cost"):
        table.add_column(t(key, lang))
    for p in plan["pareto"]:
        label = cost_basis.basis_label(cost_basis.SCORE_BASIS[p["cost_basis"]], lang) if p.get("cost_basis") else ""
        if label and _converted(plan, p):
            label = t("cost_converted", lang).format(label=label)
        basis = t("paren", lang).format(text=label) if label else ""
        table.add_row(p["id"], _days(p["train_days"], lang), _money(p["cost"], p["currency"], lang) + basis)
    return table


def _option_notes(plan: dict[str, Any], rec: dict[str, Any] | None) -> list[str]:
    """The recommended option's own notes (its estimate's: an uneven pipeline split, a dated price, the attention
    rate assumed) that the plan's notes do not already say; the report lists them too."""
    said = set(plan.get("notes") or [])
    return list(dict.fromkeys(n for n in ((rec or {}).get("notes") or []) if n not in said))


def _converted(plan: dict[str, Any], point: dict[str, Any]) -> bool:
    """Whether a Pareto point's cost was converted from the catalog's other currency, as its option says."""
    shown = cost_basis.ranked(_option(plan, point["id"]), plan["goal"]["procurement"])
    return bool(shown and shown.converted)


def _binding(plan: dict[str, Any], con: Console, lang: str) -> None:
    b = plan["binding"]
    con.print(f"[bold red]{t('plan_binding', lang)}[/]" + t("paren", lang).format(
        text=t("resource_" + b["constraint"], lang)) + f"{t('colon', lang)}{b['detail']}")
    if b["relaxations"]:
        table = Table()
        table.add_column(t("plan_relax", lang))
        table.add_column(t("plan_relax_buys", lang))
        for r in b["relaxations"]:
            table.add_row(r["change"], r["result"])
        con.print(table)


def print_plan(plan: dict[str, Any], lang: str, console: Console | None = None) -> None:
    """The plan as tables: goal, tier, recommendation and why, options, Pareto front, binding, notes."""
    con = console or wide_console()
    L = lang
    refs = plan.get("notes_msg") or []  # the notes' message keys (localise drops them)
    plan = localise(plan, lang, keep=False)
    goal = plan["goal"]
    c = t("colon", L)
    con.print(f"[bold]{t('plan_title', L)}{c}{plan['job'].get('name', '')}[/bold]")
    days = goal.get("deadline_days")
    limits = [t("goal_days_one" if days == 1 else "goal_days", L).format(days=f"{days:g}") if days else None,
              _money(goal.get("budget"), goal["currency"], L) if goal.get("budget") else None,
              t("procurement_" + goal["procurement"], L)]
    con.print(f"{t('plan_goal', L)}{c}{t('objective_' + goal['objective'], L)}"
              + t("paren", L).format(text=t("list_sep", L).join(x for x in limits if x)))
    s = plan["search"]
    one = "_one" if s["hardware_options"] == 1 else ""  # "1 hardware option", "3 hardware options"
    con.print(f"{t('plan_search', L)}{c}" + t("plan_search_line" + one, L).format(
        evaluated=f"{s['evaluated']:,}", options=s["hardware_options"], feasible=f"{s['feasible']:,}",
        seconds=f"{s['seconds']:.2f}"))
    rec, tier = plan.get("recommended"), plan.get("tier")
    if tier:
        con.print(f"{t('plan_tier', L)}{c}[bold]{t('tier_' + tier['id'], L)}[/]{_tier_size(tier, L)} — "
                  + t("plan_decided_by", L).format(resource=t("resource_" + tier["decided_by"], L)) + f"{c}{tier['why']}")
    if rec:
        con.print(f"[bold green]{t('plan_recommended', L)}[/]{c}{rec['id']}{t('list_sep', L)}{layout_in(rec['strategy'], L)}")
        con.print(f"{t('plan_why', L)}{c}{rec['why']}")
        line = _cost_line(_option(plan, rec["id"]), goal["procurement"], L)
        if line:
            con.print(f"{t('plan_cost', L)}{c}{line}")
        accuracy = _option(plan, rec["id"]).get("accuracy")
        if accuracy:  # how far off its time to train is likely to be (held-out runs of its class)
            con.print(accuracy_line(accuracy, L))
    if plan["options"]:
        con.print(_options_table(plan, L))
        past = _past_top_note(plan["options"], L)
        if past:
            con.print(past)
        if any(o.get("leaves_memory_floor") is False for o in plan["options"]):
            con.print(t("plan_mem_short", L).format(floor=f"{load_config().memory_headroom_min:.0%}"))
        for line in capacity_notes(plan["options"]):
            con.print(tr(line, L))
    else:
        con.print(t("plan_no_option", L))
    if plan["ties"]:
        con.print(f"{t('plan_ties', L)}{c}{LIST_SEPARATORS[L].join(plan['ties'])}")  # names: 、 in Chinese
    if plan["pareto"]:
        con.print(_pareto_table(plan, L))
    if plan.get("binding"):
        _binding(plan, con, L)
    excluded = s.get("excluded_accelerators") or {}
    if excluded:
        con.print(f"{t('plan_excluded', L)}{c}" + excluded_text(excluded, L))
    for i, note in enumerate(plan.get("notes", [])):
        ref = refs[i] if i < len(refs) else None
        key = ref.get("key") if isinstance(ref, dict) else getattr(ref, "key", None)
        con.print(f"{note_label(key, L)}{c}{note}")
    for note in _option_notes(plan, rec):
        con.print(f"{note_label(None, L)}{c}{note}")
