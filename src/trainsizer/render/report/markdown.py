"""The Markdown report: the same sections as the HTML, charts as PNG files beside it (charts/*.png), the
deployment diagram as Mermaid text and as architecture.svg."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from jinja2 import Environment, PackageLoader

from trainsizer.render.report.charts import to_static
from trainsizer.render.report.diagram import render_svg
from trainsizer.render.report.html import generated_line
from trainsizer.render.report.i18n import t
from trainsizer.render.report.mermaid import render_mermaid
from trainsizer.render.report.view import build_view


def md_cell(value: object) -> str:
    """A table cell or caption: pipes escaped, line breaks flattened (they would end the row)."""
    text = str(value).replace("\\", "\\\\").replace("|", "\\|")
    return " ".join(text.split()) or " "


@lru_cache(maxsize=1)
def environment() -> Environment:
    env = Environment(loader=PackageLoader("trainsizer.render.report", "templates"), autoescape=False,
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["md"] = md_cell
    return env


def render_markdown(plan: Any, lang: str = "en") -> tuple[str, dict[str, bytes]]:
    """(report.md text, files to write beside it by relative path: charts/<id>.png, architecture.svg)."""
    view = build_view(plan, lang)
    files = {f"charts/{c.id}.png": to_static(c, "png") for c in view.charts}
    files["architecture.svg"] = render_svg(view.plan, lang).encode("utf-8")
    text = environment().get_template("report.md").render(
        v=view, t=lambda key, **kw: t(key, lang, **kw), chart_titles={c.id: c.title for c in view.charts},
        mermaid=render_mermaid(view.plan, lang), generated=generated_line(view))
    return text, files
