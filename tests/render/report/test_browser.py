"""The HTML report as a person sees it: Debian's Chromium (driven by Playwright, no browser download) opens
the file offline; every chart and the diagram must draw, with no console error and no network request."""

from __future__ import annotations

import os
import shutil

import pytest

from trainsizer.render.report import render_html

from .conftest import large_plan, load_fixture

CHROMIUM = os.environ.get("TRAINSIZER_CHROMIUM", "/usr/bin/chromium")


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (dev extra) is not installed")
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        except Exception as err:  # noqa: BLE001  (a browser that cannot start is an environment problem)
            pytest.skip(f"Chromium did not start: {str(err).splitlines()[0]}")
        yield b
        b.close()


def _open(browser, html: str, tmp_path, name: str):
    path = tmp_path / f"{name}.html"
    path.write_text(html, encoding="utf-8")
    page = browser.new_page(viewport={"width": 1360, "height": 900})
    errors, requests = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(path.as_uri())
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 4", timeout=20_000)
    return page, errors, [u for u in requests if u != path.as_uri()]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_charts_and_diagram_draw_offline_without_errors(browser, tmp_path, lang):
    page, errors, requests = _open(browser, render_html(load_fixture(), lang), tmp_path, lang)
    drawn = page.evaluate("""() => [...document.querySelectorAll('figure.chart')].map(f => ({
        id: f.dataset.chart, traces: f.querySelectorAll('.trace').length,
        h: f.getBoundingClientRect().height}))""")
    assert [c["id"] for c in drawn] == ["memory", "time", "pareto", "scaling"]
    assert all(c["traces"] > 0 and c["h"] > 200 for c in drawn), drawn
    box = page.evaluate("(() => { const r = document.querySelector('#diagram svg').getBoundingClientRect();"
                        " return [r.width, r.height]; })()")
    assert box[0] > 800 and box[1] > 200
    assert page.locator("#diagram svg text").count() > 10
    assert errors == [] and requests == []
    page.close()


def test_two_thousand_nodes_draw_and_screenshot(browser, tmp_path):
    page, errors, requests = _open(browser, render_html(large_plan(2000), "en"), tmp_path, "large")
    shot = page.locator("#diagram").screenshot()
    assert shot.startswith(b"\x89PNG") and len(shot) > 20_000
    assert errors == [] and requests == []
    page.close()
