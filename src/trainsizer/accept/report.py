"""Human reports of a run: a rich table for the terminal and a self-contained HTML page."""

from __future__ import annotations

import html
import sys

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from trainsizer.accept.context import unit_word
from trainsizer.accept.results import CheckResult, RunResult
from trainsizer.messages import render as render_message
from trainsizer.messages import stored, tr

_STYLE = {"pass": "green", "fail": "bold red", "skipped": "yellow", "error": "bold magenta"}


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _m(key: str, lang: str, **params: object) -> str:
    return render_message(key, lang, params)


def unit_text(c: CheckResult, lang: str) -> str:
    """The unit column in the reader's words ('个端口' for 'ports'); the JSON keeps the unit as written."""
    return str(tr(unit_word(c.unit), lang))


def print_table(result: RunResult, console: Console | None = None, lang: str = "en") -> None:
    """The run as a table in `lang` (frame, columns, statuses, explanations and threshold sources)."""
    console = console or Console(width=None if sys.stdout.isatty() else 160)
    table = Table(title=escape(_m("accept_title", lang, verdict=_m(f"accept_status_{result.verdict}", lang).upper(),
                                  run=result.run_id, platform=result.platform or _m("accept_none", lang))),
                  show_lines=False)
    for col in ("check", "node", "status", "measured", "threshold", "unit"):
        table.add_column(_m(f"accept_col_{col}", lang), no_wrap=True)
    table.add_column(_m("accept_col_why", lang), overflow="fold", ratio=3)
    table.add_column(_m("accept_col_source", lang), overflow="fold", ratio=1)
    for c in result.checks:
        # measured text (tool output, paths like "[/dev/x]", "[rank0]:") is not rich markup: escape it
        table.add_row(*map(escape, (c.name, c.node or "")),
                      f"[{_STYLE[c.status]}]{_m(f'accept_status_{c.status}', lang)}[/]",
                      *map(escape, (_fmt(c.measured), _fmt(c.threshold), unit_text(c, lang), why_text(c, lang),
                                    source_text(c, lang))))
    console.print(table)
    counts = {s: sum(1 for c in result.checks if c.status == s) for s in _STYLE}
    colon = _m("accept_colon", lang)
    console.print(" ".join(f"{_m(f'accept_status_{k}', lang)}{colon}{v}" for k, v in counts.items())
                  + f"   {_m('accept_criteria', lang)}{colon}{escape(_criteria_source(result.criteria_source, lang, result.platform))}")


def why_text(check: CheckResult, lang: str) -> str:
    """A check's explanation in the reader's language (its stored message), else as recorded."""
    return str(tr(stored(check.why_msg), lang)) if check.why_msg else check.why


def source_text(check: CheckResult, lang: str) -> str:
    """Where a check's threshold came from, whole: a plan's threshold in the reader's language (its stored
    message), any other as recorded (catalog and platform-table sources are titles of documents)."""
    return str(tr(stored(check.source_msg), lang)) if check.source_msg else (check.source or "")


def _criteria_source(source: str, lang: str, platform: str | None = None) -> str:
    """Where the thresholds came from, as recorded; the built-in defaults and the platform table in the
    reader's language."""
    if source == _m("acc_criteria_defaults", "en"):
        return _m("acc_criteria_defaults", lang)
    if platform and source == _m("acc_criteria_platform", "en", platform=platform):
        return _m("acc_criteria_platform", lang, platform=platform)
    return source


def to_html(result: RunResult, lang: str = "en") -> str:
    """The run as one HTML page in `lang` (frame, columns, statuses, explanations and threshold sources)."""
    e = html.escape
    rows = "\n".join(
        f"<tr class='{e(c.status)}'><td>{e(c.name)}</td><td>{e(c.node or '')}</td>"
        f"<td>{e(_m(f'accept_status_{c.status}', lang))}</td>"
        f"<td>{e(_fmt(c.measured))}</td><td>{e(_fmt(c.threshold))}</td><td>{e(unit_text(c, lang))}</td>"
        f"<td>{e(why_text(c, lang))}</td><td>{e(source_text(c, lang))}</td></tr>"
        for c in result.checks)
    head = "".join(f"<th>{e(_m(f'accept_col_{col}', lang))}</th>" for col in
                   ("check", "node", "status", "measured", "threshold", "unit", "why", "source"))
    hist_head = "".join(f"<th>{e(_m(f'accept_col_{col}', lang))}</th>" for col in
                        ("check", "node", "now", "node_median", "fleet_median"))
    hist = "\n".join(
        f"<tr><td>{e(h['name'])}</td><td>{e(str(h['node']))}</td><td>{e(_fmt(h['measured']))}</td>"
        f"<td>{e(_fmt(h['node_past_median']))}</td><td>{e(_fmt(h['fleet_median']))}</td></tr>"
        for h in result.history)
    cal = e(result.calibration.model_dump_json(indent=2))
    nodes = ", ".join(str(n.get("hostname")) for n in result.nodes)
    return f"""<!DOCTYPE html>
<html lang="{'zh-CN' if lang == 'zh' else 'en'}"><head><meta charset="utf-8"><title>trainsizer accept {e(result.run_id)}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; }} table {{ border-collapse: collapse; }}
td, th {{ border: 1px solid #ccc; padding: 3px 6px; font-size: 13px; vertical-align: top; }}
tr.pass td:nth-child(3) {{ color: #080; }} tr.fail td:nth-child(3) {{ color: #c00; font-weight: bold; }}
tr.skipped td:nth-child(3) {{ color: #a60; }} tr.error td:nth-child(3) {{ color: #a0a; font-weight: bold; }}
</style></head><body>
<h1>{e(_m("accept_html_title", lang, verdict=_m(f"accept_status_{result.verdict}", lang).upper()))}</h1>
<p>{e(_m("accept_html_run", lang, run=result.run_id, started=result.started_at,
         finished=result.finished_at or _m("accept_not_finished", lang),
         platform=result.platform or _m("accept_none", lang), nodes=nodes))}<br>
{e(_m("accept_criteria", lang))}{e(_m("accept_colon", lang))}{e(_criteria_source(result.criteria_source, lang, result.platform))}</p>
<table><tr>{head}</tr>
{rows}
</table>
<h2>{e(_m("accept_html_history", lang))}</h2>
<table><tr>{hist_head}</tr>
{hist}
</table>
<h2>{e(_m("accept_html_calibration", lang))}</h2>
<pre>{cal}</pre>
</body></html>
"""
