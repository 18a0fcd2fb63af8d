"""Reports from a plan, for the people who sign a purchase: HTML (self-contained, interactive charts),
Markdown (charts as images, diagram as Mermaid), Excel (BOM with live formulas), PDF, and the deployment
architecture as SVG. Chinese and English from the catalogue in data/i18n.yaml.

Stable entry points (the web page uses them): `render_html(plan, lang)`, `render_xlsx(plan, lang)`,
`render_svg(plan, lang)`, `render_markdown(plan, lang)`, `render_pdf(plan, lang)`, `write_report(...)`.
`plan` is a Plan or its JSON as a dict.
"""

from __future__ import annotations

from trainsizer.render.report.diagram import render_svg
from trainsizer.render.report.html import render_html
from trainsizer.render.report.markdown import render_markdown
from trainsizer.render.report.pdf import render_pdf
from trainsizer.render.report.writer import DEFAULT_FORMATS, FORMATS, load_plan_json, write_report
from trainsizer.render.report.xlsx import render_xlsx

__all__ = ["DEFAULT_FORMATS", "FORMATS", "load_plan_json", "render_html", "render_markdown", "render_pdf",
           "render_svg", "render_xlsx", "write_report"]
