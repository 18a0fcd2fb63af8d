"""The PDF report (optional extra): the static HTML (charts as SVG, no scripts) laid out on A4 pages by
WeasyPrint, which embeds the subset of every font it uses, so Chinese renders wherever the PDF is opened
(install a CJK font such as Debian's fonts-noto-cjk where the PDF is made)."""

from __future__ import annotations

from typing import Any

from trainsizer.errors import TrainsizerError
from trainsizer.render.report.html import render_html


class PdfUnavailable(TrainsizerError):
    """WeasyPrint (or the Pango library it draws text with) is not installed."""


def weasyprint_available() -> str | None:
    """None when PDF can be made, else why not."""
    try:
        import weasyprint  # noqa: F401
    except (ImportError, OSError) as err:
        return f"PDF needs WeasyPrint and Pango: pip install 'trainsizer[pdf]' and apt-get install libpango-1.0-0 ({err})"
    return None


def render_pdf(plan: Any, lang: str = "en") -> bytes:
    why = weasyprint_available()
    if why:
        raise PdfUnavailable(why)
    from weasyprint import HTML

    return HTML(string=render_html(plan, lang, static=True)).write_pdf()
