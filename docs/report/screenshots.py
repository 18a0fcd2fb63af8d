"""Regenerates the report screenshots in docs/report/ (needs Debian's chromium and poppler-utils):

    python docs/report/screenshots.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image
from playwright.sync_api import sync_playwright

from trainsizer.render.report import render_html, render_pdf

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parents[1]


def _plan(example: str) -> dict:
    from trainsizer.plan import make_plan

    return make_plan(REPO / "examples" / f"{example}.yaml").model_dump(mode="json")


def _shoot(html: str, out: Path, selector: str | None = None, clip_height: int | None = None) -> None:
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        page_file = Path(tmp) / "report.html"
        page_file.write_text(html, encoding="utf-8")
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1360, "height": 900})
        page.goto(page_file.as_uri())
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 4")
        if selector:
            page.locator(selector).screenshot(path=str(out))
        else:
            page.screenshot(path=str(out), clip={"x": 0, "y": 0, "width": 1360, "height": clip_height or 1600})
        browser.close()
    img = Image.open(out)
    img.thumbnail((1100, 1400))
    img.convert("RGB").quantize(colors=128).save(out, optimize=True)


def main() -> None:
    search = _plan("sft-70b-search")
    _shoot(render_html(search, "zh"), DOCS / "report-summary-zh.png", clip_height=1700)
    _shoot(render_html(search, "en"), DOCS / "report-pareto-en.png", selector="#pareto")
    _shoot(render_html(_plan("pretrain-405b"), "en"), DOCS / "architecture-405b-en.png", selector="#diagram")
    _shoot(render_html(_plan("sft-70b-16gpu"), "zh"), DOCS / "architecture-16gpu-zh.png", selector="#diagram")
    with tempfile.TemporaryDirectory() as tmp:
        pdf = Path(tmp) / "r.pdf"
        pdf.write_bytes(render_pdf(_plan("sft-70b-16gpu"), "zh"))
        subprocess.run(["pdftoppm", "-r", "60", "-png", "-f", "1", "-l", "1", "-singlefile", str(pdf),
                        str(DOCS / "pdf-page1-zh")], check=True)
    print("\n".join(str(p.relative_to(REPO)) for p in sorted(DOCS.glob("*.png"))), file=sys.stderr)


if __name__ == "__main__":
    main()
