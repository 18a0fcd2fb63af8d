"""The four charts a plan gets: memory and step-time breakdowns per option, time vs cost (Pareto), and
time-to-train and MFU against GPU count (scaling)."""

from __future__ import annotations

from collections.abc import Mapping

from trainsizer.render.report.blocks import mid
from trainsizer.render.report.charts import PALETTE, Chart, Series
from trainsizer.render.report.facts import option_label, pick_cost, procurement, recommended
from trainsizer.render.report.i18n import field_label, t


def memory_chart(plan: Mapping, lang: str) -> Chart:
    options = plan.get("options") or []
    labels = tuple(f"#{i + 1} {option_label(o)}" for i, o in enumerate(options))
    series = [Series(t(f"mem.{part}", lang), labels,
                     tuple((o.get("memory", {}).get("breakdown_gib") or {}).get(part, 0.0) for o in options))
              for part in ("weights", "gradients", "optimizer", "activations", "other")]
    series.append(Series(t("capacity", lang), labels, tuple(o.get("memory", {}).get("capacity_gib") for o in options),
                         mode="markers"))
    return Chart("memory", t("chart.memory", lang), t("option", lang), "GiB", tuple(series), stacked=True)


def time_chart(plan: Mapping, lang: str) -> Chart:
    options = plan.get("options") or []
    labels = tuple(f"#{i + 1} {option_label(o)}" for i, o in enumerate(options))
    parts: list[str] = []
    for o in options:
        for k, v in (o.get("time", {}).get("breakdown_s") or {}).items():
            if v and k not in parts:
                parts.append(k)
    series = tuple(Series(field_label(p, lang), labels,
                          tuple((o.get("time", {}).get("breakdown_s") or {}).get(p, 0.0) for o in options))
                   for p in parts)
    return Chart("time", t("chart.time", lang), t("option", lang), t("seconds_per_step", lang), series, stacked=True)


def _points(plan: Mapping) -> list[tuple[float, float, str, int]]:
    kind = procurement(plan)
    out = []
    for i, o in enumerate(plan.get("options") or []):
        days = (o.get("time") or {}).get("train_days")
        _, price = pick_cost(o, kind)
        if days is not None and price is not None and mid(price) is not None:
            out.append((float(days), float(mid(price)), f"#{i + 1} {option_label(o)}", i))
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
        elif isinstance(p, Mapping) and p in options:
            idx.append(options.index(p))
    return idx


def pareto_chart(plan: Mapping, lang: str, currency: str) -> Chart:
    pts = _points(plan)
    front = sorted((p for p in pts if p[3] in set(pareto_indices(plan))), key=lambda p: p[0])
    rec = recommended(plan)
    series = [Series(t("chart.all_options", lang), tuple(p[0] for p in pts), tuple(p[1] for p in pts),
                     mode="markers", text=tuple(p[2] for p in pts))]
    if front:
        series.append(Series(t("chart.pareto_front", lang), tuple(p[0] for p in front), tuple(p[1] for p in front),
                             mode="lines+markers", text=tuple(p[2] for p in front)))
    chosen = [p for p in pts if p[3] == rec]
    if chosen:
        series.append(Series(t("recommended", lang), (chosen[0][0],), (chosen[0][1],), mode="markers",
                             text=(chosen[0][2],)))
    return Chart("pareto", t("chart.pareto", lang), t("chart.days", lang), f"{t('cost', lang)} ({currency})",
                 tuple(series))


def scaling_rows(plan: Mapping) -> dict[str, list[tuple[int, float, float | None]]]:
    """(GPU count, days, MFU) per accelerator: the plan's `scaling` block when it has one, else its options."""
    rows: dict[str, list[tuple[int, float, float | None]]] = {}
    source = plan.get("scaling")
    if isinstance(source, list) and source:
        for r in source:
            rows.setdefault(str(r.get("accelerator", "")), []).append(
                (int(r["count"]), float(r["train_days"]), r.get("mfu")))
    else:
        for o in plan.get("options") or []:
            hw, tm = o.get("hardware") or {}, o.get("time") or {}
            if hw.get("count") and tm.get("train_days") is not None:
                rows.setdefault(str(hw.get("accelerator")), []).append(
                    (int(hw["count"]), float(tm["train_days"]), tm.get("mfu")))
    return {k: sorted(set(v)) for k, v in rows.items()}


def scaling_chart(plan: Mapping, lang: str) -> Chart:
    series = []
    for i, (acc, rows) in enumerate(scaling_rows(plan).items()):
        xs, color = tuple(r[0] for r in rows), PALETTE[i % len(PALETTE)]
        series.append(Series(f"{acc}: {t('chart.days', lang)}", xs, tuple(r[1] for r in rows), mode="lines+markers",
                             color=color))
        if any(r[2] is not None for r in rows):
            series.append(Series(f"{acc}: MFU", xs, tuple(r[2] for r in rows), mode="lines+markers", axis="y2",
                                 color=color, dash=True))
    return Chart("scaling", t("chart.scaling", lang), t("gpus", lang), t("chart.days", lang), tuple(series),
                 y2_label="MFU", log_x=True)
