"""PDF (optional extra): pages come out, Chinese renders with an embedded CJK font, pdftoppm rasterises them."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from trainsizer.render.report.pdf import weasyprint_available


@pytest.fixture(scope="module")
def zh_pdf(tmp_path_factory):
    why = weasyprint_available()
    if why:
        pytest.skip(why)
    from trainsizer.render.report import render_pdf

    from .conftest import load_fixture

    path = tmp_path_factory.mktemp("pdf") / "report.pdf"
    path.write_bytes(render_pdf(load_fixture(), "zh"))
    return path


def _tool(name: str) -> str:
    exe = shutil.which(name)
    if not exe:
        pytest.skip(f"{name} not found (apt-get install poppler-utils)")
    return exe


def test_pdf_pages_render_to_png(zh_pdf, tmp_path):
    assert zh_pdf.read_bytes().startswith(b"%PDF-")
    subprocess.run([_tool("pdftoppm"), "-r", "30", "-png", "-f", "1", "-l", "3", str(zh_pdf), str(tmp_path / "p")],
                   check=True, timeout=120)
    pages = sorted(tmp_path.glob("p-*.png"))
    assert len(pages) == 3 and all(p.stat().st_size > 2_000 for p in pages)


def test_chinese_text_uses_an_embedded_cjk_font(zh_pdf):
    if not shutil.which("fc-list") or "CJK" not in subprocess.run(["fc-list"], capture_output=True,
                                                                   text=True).stdout:
        pytest.skip("no CJK font installed (apt-get install fonts-noto-cjk)")
    fonts = subprocess.run([_tool("pdffonts"), str(zh_pdf)], capture_output=True, text=True, check=True).stdout
    cjk = [ln for ln in fonts.splitlines() if "CJK" in ln]
    assert cjk and all(ln.split()[-5] == "yes" for ln in cjk), fonts     # the 'emb' column
    text = subprocess.run([_tool("pdftotext"), "-l", "1", str(zh_pdf), "-"], capture_output=True, text=True).stdout
    assert "训练集群方案" in text
