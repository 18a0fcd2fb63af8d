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
    mem = result.get("memory")
    if mem:
        rows = [(t(k, L), v) for k, v in mem["breakdown_gib"].items()]
        rows += [(t("total", L) + " GiB", mem["per_gpu_gib"]), (t("capacity", L) + " GiB", mem["capacity_gib"]),
                 (t("headroom", L) + " GiB", mem["headroom_gib"])]
        con.print(_kv_table(t("memory_title", L) + f" — {mem.get('worst_gpu', '')}", rows, L))
        verdict = t("fits", L) if mem["fits"] else t("does_not_fit", L)
        con.print(f"[{'green' if mem['fits'] else 'red'}]{verdict}[/]")
    tm = result.get("time")
    if tm:
        rows = [(k, tm[k]) for k in ("step_s", "tokens_per_s", "model_tflops_per_gpu", "mfu",
                                     "hardware_tflops_per_gpu", "hfu", "train_days", "gpu_hours") if k in tm]
        rows += [(f"breakdown_s.{k}", v) for k, v in tm.get("breakdown_s", {}).items()]
        con.print(_kv_table(t("time_title", L), rows, L))
    extra = []
    for section in ("cost", "energy"):
        for k, v in (result.get(section) or {}).items():
            if not isinstance(v, dict | list):
                extra.append((f"{section}.{k}", v))
    if extra:
        con.print(_kv_table(t("cost_title", L), extra, L))
    for note in result.get("notes", []):
        con.print(f"note: {note}")
