"""Human reports of a run: a rich table for the terminal and a self-contained HTML page."""

from __future__ import annotations

import html
import sys

from rich.console import Console
from rich.markup import escape
from rich.table import Table

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


def print_table(result: RunResult, console: Console | None = None, lang: str = "en") -> None:
    """The run as a table in `lang` (frame, columns and statuses; each check's `why` is the check's text)."""
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
                      *map(escape, (_fmt(c.measured), _fmt(c.threshold), c.unit or "", c.why,
                                    source_text(c, lang))))
    console.print(table)
    counts = {s: sum(1 for c in result.checks if c.status == s) for s in _STYLE}
    colon = _m("accept_colon", lang)
    console.print(" ".join(f"{_m(f'accept_status_{k}', lang)}{colon}{v}" for k, v in counts.items())
                  + f"   {_m('accept_criteria', lang)}{colon}{escape(_criteria_source(result.criteria_source, lang))}")


def source_text(check: CheckResult, lang: str) -> str:
    """Where a check's threshold came from, whole: a plan's threshold in the reader's language (its stored
    message), any other as recorded (catalog and platform-table sources are titles of documents)."""
    return str(tr(stored(check.source_msg), lang)) if check.source_msg else (check.source or "")


def _criteria_source(source: str, lang: str) -> str:
    """Where the thresholds came from, as recorded; the built-in defaults in the reader's language."""
    return _m("acc_criteria_defaults", lang) if source == _m("acc_criteria_defaults", "en") else source


def to_html(result: RunResult) -> str:
    e = html.escape
    rows = "\n".join(
        f"<tr class='{e(c.status)}'><td>{e(c.name)}</td><td>{e(c.node or '')}</td><td>{e(c.status)}</td>"
        f"<td>{e(_fmt(c.measured))}</td><td>{e(_fmt(c.threshold))}</td><td>{e(c.unit or '')}</td>"
        f"<td>{e(c.why)}</td><td>{e(c.source or '')}</td></tr>"
        for c in result.checks)
    hist = "\n".join(
        f"<tr><td>{e(h['name'])}</td><td>{e(str(h['node']))}</td><td>{e(_fmt(h['measured']))}</td>"
        f"<td>{e(_fmt(h['node_past_median']))}</td><td>{e(_fmt(h['fleet_median']))}</td></tr>"
        for h in result.history)
    cal = e(result.calibration.model_dump_json(indent=2))
    nodes = e(", ".join(str(n.get("hostname")) for n in result.nodes))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>trainsizer accept {e(result.run_id)}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; }} table {{ border-collapse: collapse; }}
td, th {{ border: 1px solid #ccc; padding: 3px 6px; font-size: 13px; vertical-align: top; }}
tr.pass td:nth-child(3) {{ color: #080; }} tr.fail td:nth-child(3) {{ color: #c00; font-weight: bold; }}
tr.skipped td:nth-child(3) {{ color: #a60; }} tr.error td:nth-child(3) {{ color: #a0a; font-weight: bold; }}
</style></head><body>
<h1>Acceptance: {e(result.verdict.upper())}</h1>
<p>Run {e(result.run_id)}, started {e(result.started_at)}, finished {e(result.finished_at or 'not finished')};
platform {e(result.platform or 'none')}; nodes: {nodes}.<br>Criteria: {e(result.criteria_source)}</p>
<table><tr><th>check</th><th>node</th><th>status</th><th>measured</th><th>threshold</th><th>unit</th>
<th>why</th><th>threshold source</th></tr>
{rows}
</table>
<h2>Compared with history</h2>
<table><tr><th>check</th><th>node</th><th>now</th><th>node's past median</th><th>fleet median</th></tr>
{hist}
</table>
<h2>Calibration (for trainsizer estimate --calibration)</h2>
<pre>{cal}</pre>
</body></html>
"""
