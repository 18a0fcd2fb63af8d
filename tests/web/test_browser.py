"""End to end in a real headless browser (Debian's Chromium driven by Playwright): fill the form for each tier,
submit, see the recommendation, switch language, download the Excel BOM and re-read it, and see an inline
message for a bad value. Skipped with a reason where Chromium or Playwright is missing.

Set TRAINSIZER_SCREENSHOTS=docs to refresh the screenshots kept under docs/.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed (dev extra)")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
if not Path(CHROMIUM).exists():
    pytest.skip("Debian's chromium is not installed (apt-get install chromium)", allow_module_level=True)

SHOTS = os.environ.get("TRAINSIZER_SCREENSHOTS")
PLAN_TIMEOUT_MS = 180_000  # a search on a loaded 2-core CI machine

# One job per tier of the guides, as a person would type them into the form.
TIERS = {
    "single-gpu": {"model": "qwen2.5-7b", "method": "qlora", "lora.rank": "64", "data_kind": "samples",
                   "data.samples": "50000", "data.avg_tokens": "1024", "data.epochs": "3", "seq_len": "2048",
                   "batch_value": "16", "goal.deadline_days": "3"},
    "single-node": {"model": "llama-3.1-70b", "method": "full", "data_kind": "dataset_gb",
                    "data.dataset_gb": "2", "text_language": "zh", "data.epochs": "2", "seq_len": "4096",
                    "batch_value": "128", "goal.deadline_days": "14", "goal.budget.amount": "200000"},
    "few-nodes": {"model": "qwen2.5-72b", "method": "dpo", "data_kind": "samples", "data.samples": "60000",
                  "data.avg_tokens": "2048", "seq_len": "4096", "batch_value": "64", "goal.deadline_days": "7",
                  "constraints.max_nodes": "4"},
    "large-cluster": {"model": "llama-3.1-405b", "method": "pretrain", "data_kind": "tokens",
                      "data.tokens": "1.5e13", "seq_len": "8192", "batch_kind": "tokens",
                      "batch_value": "16777216", "goal.deadline_days": "90", "goal.procurement": "buy",
                      "constraints.cooling": "liquid"},
}


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"])
        yield b
        b.close()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(viewport={"width": 1200, "height": 900}, accept_downloads=True)
    pg = context.new_page()
    problems: list[str] = []
    pg.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    # A form sent back with a message has status 422, which Chromium logs; every other console error counts.
    pg.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
          if m.type == "error" and "status of 422" not in m.text else None)
    # Everything comes from the server itself: any other host is a test failure.
    pg.route(re.compile(r"^(?!http://127\.0\.0\.1:).*"), lambda route: (problems.append(f"external: {route.request.url}"),
                                                                        route.abort()))
    pg.base = live_server
    yield pg
    context.close()
    assert problems == []


def shot(pg, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(Path(SHOTS) / name), full_page=False)


def fill(pg, values: dict[str, str]) -> None:
    for name, value in values.items():
        if name in ("data_kind", "batch_kind"):
            pg.check(f"input[name='{name}'][value='{value}']")
        elif pg.locator(f"select[name='{name}']").count():
            pg.select_option(f"select[name='{name}']", value)
        else:
            pg.fill(f"input[name='{name}']", value)


@pytest.mark.parametrize("tier", list(TIERS))
def test_each_tier_gets_a_recommendation(page, tier):
    page.goto(f"{page.base}/?lang=en")
    fill(page, TIERS[tier])
    page.click("#submit")
    page.wait_for_selector("#headline", timeout=PLAN_TIMEOUT_MS)
    headline = page.inner_text("#headline")
    assert re.search(r"\d", headline) and ("Rent" in headline or "Buy" in headline), headline
    page.wait_for_selector("figure.chart .js-plotly-plot .main-svg")   # plotly.js, from this server, drew it
    if tier == "single-node":
        shot(page, "web-result-en.png")


def test_language_switch_and_excel_download(page, tmp_path):
    import openpyxl

    page.goto(f"{page.base}/?lang=en")
    fill(page, TIERS["single-gpu"])
    page.click("#submit")
    page.wait_for_selector("#headline", timeout=PLAN_TIMEOUT_MS)
    assert "Likely error" in page.inner_text("table")  # the recommended option's held-out band (as the CLI)
    page.click("#lang-switch")
    page.wait_for_selector("#headline", timeout=PLAN_TIMEOUT_MS)
    assert page.locator("html").get_attribute("lang") == "zh-CN"
    assert "可能误差" in page.inner_text("table")
    assert re.search(r"[\u4e00-\u9fff]", page.inner_text("#headline"))
    shot(page, "web-result-zh.png")
    with page.expect_download(timeout=PLAN_TIMEOUT_MS) as info:
        page.click("#download-xlsx")
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    assert path.suffix == ".xlsx"
    book = openpyxl.load_workbook(path)
    text = " ".join(str(c.value) for ws in book.worksheets for row in ws.iter_rows() for c in row if c.value)
    recommended = page.inner_text("#headline")
    accelerator = re.search(r"[a-z0-9]+(?:-[a-z0-9]+)+", recommended)
    assert accelerator and accelerator.group(0) in text


def test_form_language_switch_keeps_values(page):
    page.goto(f"{page.base}/?lang=en")
    page.fill("input[name='seq_len']", "8192")
    page.click("#lang-switch")
    page.wait_for_selector("label[for='seq_len']:has-text('序列长度')")  # the label (help texts say it too)
    assert page.input_value("input[name='seq_len']") == "8192"
    shot(page, "web-form-zh.png")


def test_bad_value_shows_an_inline_message(page):
    page.goto(f"{page.base}/?lang=en")
    page.fill("input[name='data.tokens']", "-5")
    page.click("#submit")
    message = page.locator("[id='data.tokens-error']")
    message.wait_for()
    assert message.inner_text().startswith("Must be greater than")  # its label names the field: no path
    assert page.locator("#job-form").is_visible()
    assert page.input_value("input[name='data.tokens']") == "-5"
    shot(page, "web-form-error.png")


def test_the_file_input_speaks_the_page_language(page, tmp_path):
    """Chromium's own file control reads "Choose File / No file chosen" whatever the page's language: the
    form shows a labelled control in the page's words, which opens the native input (kept for the keyboard
    and the upload) and names the chosen file."""
    page.goto(f"{page.base}/?lang=zh")
    pick = page.locator(".file-pick[data-for='model_config']")
    assert pick.is_visible() and pick.inner_text().split() == ["选择文件", "未选择文件"]
    assert not page.locator("#model_config").is_visible() or page.locator("#model_config").bounding_box()["width"] <= 1
    config = tmp_path / "config.json"
    config.write_text((Path(__file__).resolve().parents[2] / "examples/configs/tiny-llama/config.json").read_text())
    with page.expect_file_chooser() as chooser:
        page.click("label.file-button")
    chooser.value.set_files(str(config))
    assert page.inner_text("#model_config-chosen") == "config.json"


def test_a_chosen_config_survives_the_language_switch(page):
    """The language switch sends the form by GET, which carries no file: a config.json chosen on the English form
    was gone on the Chinese one (and the default preset planned instead). Its text now travels as the hidden
    model_json, the preset box empties (the file replaces it), and the switched form plans the file's model."""
    config = Path(__file__).resolve().parents[2] / "examples/configs/tiny-llama/config.json"
    page.goto(f"{page.base}/?lang=en")
    page.set_input_files("#model_config", str(config))
    page.wait_for_function("() => (document.querySelector(\"input[name='model_json']\") || {}).value")
    assert page.input_value("#model") == ""
    page.click("#lang-switch")
    page.wait_for_selector("label[for='seq_len']:has-text('序列长度')")
    assert page.inner_text("#model_config-chosen") == "保留之前给出的 config.json"
    page.click("#submit")
    page.wait_for_selector("#headline", timeout=PLAN_TIMEOUT_MS)
    assert "model_type: llama" in page.text_content("#job-yaml")
