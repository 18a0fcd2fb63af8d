"""The four charts a plan gets: memory and step-time breakdowns per option, time vs cost (Pareto), and
time-to-train and MFU against GPU count (scaling)."""

from __future__ import annotations

from collections.abc import Mapping

from trainsizer.render import cost_basis
from trainsizer.render.report.charts import Chart, Series
from trainsizer.render.report.facts import option_index, option_label, option_number, procurement, recommended
from trainsizer.render.report.i18n import field_label, t


def memory_chart(plan: Mapping, lang: str) -> Chart:
    options = plan.get("options") or []
    labels = tuple(f"#{option_number(o, i)} {option_label(o)}" for i, o in enumerate(options))
    series = [Series(t(f"mem.{part}", lang), labels,
                     tuple((o.get("memory", {}).get("breakdown_gib") or {}).get(part, 0.0) for o in options))
              for part in ("weights", "gradients", "optimizer", "activations", "other")]
    series.append(Series(t("capacity", lang), labels, tuple(o.get("memory", {}).get("capacity_gib") for o in options),
                         mode="markers"))
    return Chart("memory", t("chart.memory", lang), t("option", lang), "GiB", tuple(series), stacked=True)


def time_chart(plan: Mapping, lang: str) -> Chart:
    options = plan.get("options") or []
    labels = tuple(f"#{option_number(o, i)} {option_label(o)}" for i, o in enumerate(options))
    parts: list[str] = []
    for o in options:
        for k, v in (o.get("time", {}).get("breakdown_s") or {}).items():
            if v and k not in parts:
                parts.append(k)
    series = tuple(Series(field_label(p, lang), labels,
                          tuple((o.get("time", {}).get("breakdown_s") or {}).get(p, 0.0) for o in options))
                   for p in parts)
    return Chart("time", t("chart.time", lang), t("option", lang), t("seconds_per_step", lang), series, stacked=True)


def ranked_cost(o: Mapping, kind: str) -> float | None:
    """The cost the plan ranks by (its score: rent = GPU-hours, buy = purchase + power), else the typical
    price of the cost block the job asked for. Pareto points and searched options use the same basis."""
    score = o.get("score") or {}
    if isinstance(score.get("cost"), int | float):
        return float(score["cost"])
    if score.get("metric") == "cost" and isinstance(score.get("value"), int | float):
        return float(score["value"])
    cost = cost_basis.ranked(o, kind)
    return cost.mid if cost is not None else None


def _points(plan: Mapping) -> list[tuple[float, float, str, int]]:
    kind = procurement(plan)
    out = []
    for i, o in enumerate(plan.get("options") or []):
        days, cost = (o.get("time") or {}).get("train_days"), ranked_cost(o, kind)
        if days is not None and cost is not None:
            out.append((float(days), cost, f"#{option_number(o, i)} {option_label(o)}", i))
    return out


def pareto_indices(plan: Mapping) -> list[int]:
    """The plan's Pareto front as option indices (the plan lists indices, or options themselves)."""
    options = plan.get("options") or []
    idx = []
    for p in plan.get("pareto") or []:
        if isinstance(p, int) and not isinstance(p, bool) and 0 <= p < len(options):
            idx.append(p)
        elif isinstance(p, Mapping) and isinstance(p.get("option"), int):
            idx.append(p["option"])
        elif isinstance(p, Mapping) and option_index(plan, str(p.get("id"))) is not None:
            idx.append(option_index(plan, str(p["id"])))
        elif isinstance(p, Mapping) and p in options:
            idx.append(options.index(p))
    return idx


def _front(plan: Mapping, pts: list) -> list[tuple[float, float, str]]:
    """The plan's Pareto points (their own time and cost), else the options it marks as Pareto."""
    own = [(float(p["train_days"]), float(p["cost"]), str(p.get("id", ""))) for p in plan.get("pareto") or []
           if isinstance(p, Mapping) and p.get("train_days") is not None and p.get("cost") is not None]
    if own:
        return sorted(own)
    marked = set(pareto_indices(plan))
    return sorted((p[0], p[1], p[2]) for p in pts if p[3] in marked)


def _searched(plan: Mapping, basis: str | None) -> list[tuple[float, float, str]]:
    """Every feasible hardware option the search kept (best strategy each), where it has a price on `basis`."""
    return [(float(h["train_days"]), float(h["cost"]), str(h.get("id", ""))) for h in plan.get("hardware_options") or []
            if isinstance(h, Mapping) and h.get("cost") is not None and h.get("train_days") is not None
            and (basis is None or h.get("cost_basis") in (None, basis))]


def front_basis(plan: Mapping) -> str | None:
    """The one cost basis of the plan's front (pareto[].cost_basis; search.rank.front_basis): the chart plots the
    options priced on it, so a purchase price does not share an axis with rental bills."""
    return next((p["cost_basis"] for p in plan.get("pareto") or []
                 if isinstance(p, Mapping) and p.get("cost_basis")), None)


def pareto_chart(plan: Mapping, lang: str, currency: str) -> Chart:
    basis = front_basis(plan)
    pts = [p for p in _points(plan) if basis is None
           or ((plan["options"][p[3]].get("score") or {}).get("cost_basis") in (None, basis))]
    front = _front(plan, pts)
    rec = recommended(plan)
    series = []
    searched = _searched(plan, basis)
    if searched:
        series.append(Series(t("chart.searched", lang), tuple(p[0] for p in searched), tuple(p[1] for p in searched),
                             mode="markers", text=tuple(p[2] for p in searched), color="#c7cdd8"))
    series.append(Series(t("chart.all_options", lang), tuple(p[0] for p in pts), tuple(p[1] for p in pts),
                         mode="markers", text=tuple(p[2] for p in pts), color="#1f77b4"))
    if front:
        series.append(Series(t("chart.pareto_front", lang), tuple(p[0] for p in front), tuple(p[1] for p in front),
                             mode="lines+markers", text=tuple(p[2] for p in front), color="#ff7f0e"))
    chosen = [p for p in pts if p[3] == rec]
    if chosen:
        series.append(Series(t("recommended", lang), (chosen[0][0],), (chosen[0][1],), mode="markers",
                             text=(chosen[0][2],), color="#d62728"))
    deadline = (plan.get("goal") or {}).get("deadline_days")
    costs = [p[1] for s in series for p in zip(s.x, s.y, strict=True)]
    if deadline and costs:
        series.append(Series(t("chart.deadline", lang), (deadline, deadline), (min(costs), max(costs)), mode="lines",
                             color="#7f7f7f", dash=True))
    axis = t("sep", lang).join([currency] + ([cost_basis.basis_label(cost_basis.SCORE_BASIS[basis], lang)]
                                                   if basis in cost_basis.SCORE_BASIS else []))
    return Chart("pareto", t("chart.pareto", lang), t("chart.days", lang), f"{t('cost', lang)}{t('paren', lang, text=axis)}",
                 tuple(series), log_x=True, y_lang=lang)


def scaling_rows(plan: Mapping) -> dict[str, list[tuple[int, float, float | None]]]:
    """(GPU count, days, MFU) per accelerator: the plan's `scaling` block when it has one, else its options."""
    rows: dict[str, list[tuple[int, float, float | None]]] = {}
    source = plan.get("scaling")
    if isinstance(source, list) and source:
        for r in source:
            rows.setdefault(str(r.get("accelerator", "")), []).append(
                (int(r["count"]), float(r["train_days"]), r.get("mfu")))
        return {k: sorted(set(v)) for k, v in rows.items()}
    mfu: dict[tuple[str, int], float] = {}
    best: dict[tuple[str, int], float] = {}
    for o in plan.get("options") or []:
        hw, tm = o.get("hardware") or {}, o.get("time") or {}
        if hw.get("count") and tm.get("train_days") is not None:
            key = (str(hw.get("accelerator")), int(hw["count"]))
            if tm["train_days"] < best.get(key, float("inf")):
                best[key], mfu[key] = float(tm["train_days"]), tm.get("mfu")
    for h in plan.get("hardware_options") or []:   # every count the search kept; MFU only where detailed
        if isinstance(h, Mapping) and h.get("count") and h.get("train_days") is not None:
            key = (str(h.get("accelerator")), int(h["count"]))
            best[key] = min(best.get(key, float("inf")), float(h["train_days"]))
    for (acc, count), days in best.items():
        rows.setdefault(acc, []).append((count, days, mfu.get((acc, count))))
    return {k: sorted(v) for k, v in rows.items()}


def scaling_chart(plan: Mapping, lang: str) -> Chart:
    series = []
    for i, (acc, rows) in enumerate(scaling_rows(plan).items()):
        xs = tuple(r[0] for r in rows)
        # one accelerator, one colour and marker (charts.series_style): its days line and its dashed MFU line
        series.append(Series(f"{acc}: {t('chart.days', lang)}", xs, tuple(r[1] for r in rows), mode="lines+markers",
                             style=i))
        with_mfu = [r for r in rows if r[2] is not None]
        if with_mfu:
            series.append(Series(f"{acc}: MFU", tuple(r[0] for r in with_mfu), tuple(r[2] for r in with_mfu),
                                 mode="lines+markers", axis="y2", style=i, dash=True))
    return Chart("scaling", t("chart.scaling", lang), t("gpus", lang), t("chart.days", lang), tuple(series),
                 y2_label="MFU", log_x=True)
