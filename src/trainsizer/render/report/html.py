"""The HTML report: one self-contained file (styles, plotly.js, charts and the diagram inlined; nothing is
fetched when it is opened). `static=True` draws the charts as SVG images instead, for PDF and for pages that
must not run scripts. `plotly_src` links plotly.js from that address instead of inlining it: the web pages
serve it from their own server (one cached 4.6 MB file, not one copy per page)."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from trainsizer import __version__
from trainsizer.render.report.charts import plotly_js, to_plotly_div, to_static
from trainsizer.render.report.diagram import render_svg
from trainsizer.render.report.i18n import t
from trainsizer.render.report.view import ReportView, build_view


@lru_cache(maxsize=1)
def environment() -> Environment:
    return Environment(loader=PackageLoader("trainsizer.render.report", "templates"),
                       autoescape=select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True)


def _css() -> str:
    return resources.files("trainsizer.render.report").joinpath("templates/report.css").read_text(encoding="utf-8")


def _svg_markup(svg: str) -> Markup:
    """An SVG document as inline markup (the XML declaration is dropped: it is not allowed inside HTML)."""
    start = svg.find("<svg")
    return Markup(svg[start:] if start >= 0 else svg)


def generated_line(view: ReportView) -> str:
    return t("generated", view.lang, version=__version__, schema=view.plan.get("schema_version", "?"))


def render_view(view: ReportView, *, static: bool = False, plotly_src: str | None = None) -> str:
    if static:
        charts = {c.id: _svg_markup(to_static(c, "svg").decode("utf-8")) for c in view.charts}
    else:
        charts = {c.id: Markup(to_plotly_div(c)) for c in view.charts}
    context: dict[str, Any] = {
        "v": view, "t": lambda key, **kw: t(key, view.lang, **kw), "charts": charts,
        "diagram": _svg_markup(render_svg(view.plan, view.lang)), "css": Markup(_css()),
        "interactive": not static, "plotly_src": plotly_src,
        "plotly_js": Markup(plotly_js()) if not static and not plotly_src else "",
        "version": __version__, "generated": generated_line(view),
    }
    return environment().get_template("report.html").render(**context)


def render_html(plan: Any, lang: str = "en", *, static: bool = False, plotly_src: str | None = None) -> str:
    """The plan as one self-contained HTML page in `lang` ('en' or 'zh'); with `plotly_src`, the same page that
    loads plotly.js from that (same-server) address. Stable signature: the web page uses it."""
    return render_view(build_view(plan, lang), static=static, plotly_src=plotly_src)
