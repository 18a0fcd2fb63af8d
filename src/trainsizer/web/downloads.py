"""A plan's downloads, rendered by the report package (`trainsizer.render.report`): one renderer for the
CLI's report files and the web page."""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from typing import Any

from trainsizer.messages import msg
from trainsizer.web.errors import NotFound


@dataclass(frozen=True)
class Format:
    suffix: str
    media_type: str


FORMATS: dict[str, Format] = {
    "json": Format("json", "application/json"),
    "html": Format("html", "text/html; charset=utf-8"),
    "md": Format("md.zip", "application/zip"),  # report.md with its chart images beside it
    "xlsx": Format("xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
    "svg": Format("svg", "image/svg+xml"),
    "pdf": Format("pdf", "application/pdf"),
}
# the result page's report: the HTML file with plotly.js linked from this server (not a download format)
PAGE = "page"


def pdf_unavailable() -> str | None:
    """None when this server can make PDFs, else why not."""
    from trainsizer.render.report.pdf import weasyprint_available

    return weasyprint_available()


def _markdown_zip(plan: dict[str, Any], lang: str) -> bytes:
    from trainsizer.render.report import render_markdown

    text, extra = render_markdown(plan, lang)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("report.md", text)
        for name, data in extra.items():
            zf.writestr(name, data)
    return buf.getvalue()


def render_download(plan: dict[str, Any], fmt: str, lang: str) -> bytes:
    """The file for one format; an unknown format or a missing PDF engine is a clear 404."""
    from trainsizer.render import report

    if fmt == "json":
        return json.dumps(plan, ensure_ascii=False, indent=2).encode("utf-8")
    if fmt == "html":
        return report.render_html(plan, lang).encode("utf-8")
    if fmt == PAGE:
        from trainsizer.web.assets import plotly_url

        return report.render_html(plan, lang, plotly_src=plotly_url()).encode("utf-8")
    if fmt == "md":
        return _markdown_zip(plan, lang)
    if fmt == "xlsx":
        return report.render_xlsx(plan, lang)
    if fmt == "svg":
        return report.render_svg(plan, lang).encode("utf-8")
    if fmt == "pdf":
        why = pdf_unavailable()
        if why:
            raise NotFound(msg("web_pdf_unavailable", why=why), field="fmt")
        return report.render_pdf(plan, lang)
    raise NotFound(msg("web_unknown_format", fmt=fmt, allowed=", ".join(FORMATS)), field="fmt")
