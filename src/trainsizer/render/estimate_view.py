"""Tables for `trainsizer estimate`, drawn from the same dict that `--json` prints."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from trainsizer.render.i18n import t


def _num(v: Any, digits: int = 3) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if v != 0 and (abs(v) >= 1e6 or abs(v) < 1e-3):
            return f"{v:.{digits}g}"
        return f"{v:,.{digits}f}".rstrip("0").rstrip(".") if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


def _kv_table(title: str, rows: list[tuple[str, Any]], lang: str) -> Table:
    table = Table(title=title)
    table.add_column(t("item", lang))
    table.add_column(t("value", lang), justify="right")
    for k, v in rows:
        table.add_row(k, _num(v))
    return table


def print_estimate(result: dict[str, Any], lang: str, console: Console | None = None) -> None:
    con = console or Console(soft_wrap=False)
    L = lang
    job = result.get("job", {})
    con.print(f"[bold]{job.get('name', '')}[/bold]")
    fw = result.get("framework")
    if fw:
        why = f" ({t('framework_auto', L)}: {t(fw['reason'], L)})" if fw.get("reason") else ""
        con.print(f"{t('framework', L)}: {fw['assumed']}{why} — {fw['assumes'].get('stack', '')}")
    mem = result.get("memory")
    if mem:
        rows = [(t(k, L), v) for k, v in mem["breakdown_gib"].items()]
        rows += [(t("total", L), mem["per_gpu_gib"]), (t("capacity", L), mem["capacity_gib"]),
                 (t("headroom", L), mem["headroom_gib"])]
        con.print(_kv_table(t("memory_title", L) + " (GiB)", rows, L))
        con.print(f"{t('worst_gpu', L)}: {mem.get('worst_gpu', '')}")
        verdict = t("fits", L) if mem["fits"] else t("does_not_fit", L)
        con.print(f"[{'green' if mem['fits'] else 'red'}]{verdict}[/]")
    tm = result.get("time")
    if tm:
        rows = [(t(k, L), tm[k]) for k in ("step_s", "tokens_per_s", "model_tflops_per_gpu", "mfu",
                                          "hardware_tflops_per_gpu", "hfu", "train_days", "gpu_hours") if k in tm]
        rows += [(f"  {t('breakdown', L)}: {k}", v) for k, v in tm.get("breakdown_s", {}).items() if v]
        con.print(_kv_table(t("time_title", L), rows, L))
    cost = result.get("cost") or {}
    rows = []
    for mode in ("rent", "buy"):
        block = cost.get(mode)
        if block:
            cur = block.get("currency", cost.get("currency", ""))
            rows.append((f"{t(mode, L)} ({cur})", f"{_num(block['low'])} – {_num(block['high'])} "
                                                  f"({t('typical', L)} {_num(block['mid'])})"))
            if block.get("date"):  # how old the price is; a year or more gets a warning
                flags = [t("price_stale", L)] if block.get("stale") else []
                flags += [t("price_projection", L)] if block.get("projection") else []
                age = f"{block['date']} ({block.get('age_days', '?')} {t('days', L)})"
                rows.append((f"  {t('price_date', L)}", " ".join([age, *[f"⚠ {f}" for f in flags]])))
    energy = result.get("energy") or {}
    if energy:
        rows.append((t("energy_kwh", L), _num(energy.get("kwh"))))
        rows.append((t("avg_power_kw", L), _num(energy.get("avg_power_kw"))))
    for k, v in (result.get("goal") or {}).items():
        rows.append((f"{t('goal', L)}: {k}", _num(v) if not isinstance(v, bool) else ("✓" if v else "✗")))
    if rows:
        table = Table(title=t("cost_title", L))
        table.add_column(t("item", L))
        table.add_column(t("value", L), justify="right")
        for k, v in rows:
            table.add_row(k, str(v))
        con.print(table)
    for note in result.get("notes", []):
        con.print(f"note: {note}")
