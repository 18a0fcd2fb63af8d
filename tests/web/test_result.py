"""The result page and downloads: the report renderer's HTML under the web page's bar, files that open."""

from __future__ import annotations

import io
import json
import re
import zipfile

import pytest
import yaml

from .conftest import example
from .test_form import GOOD


@pytest.fixture(scope="module")
def result(client):
    """One LoRA plan through the form (the slowest step of these tests: the search)."""
    r = client.post("/plan", data=GOOD | {"name": "<b>bold</b> & co", "lang": "en"})
    assert r.status_code == 200, r.text[:2000]
    token = str(r.url).split("job=")[1].split("&")[0]
    return r, token


def test_result_page_is_the_report_with_a_bar(result):
    r, token = result
    html = r.text
    assert 'id="ts-bar"' in html and 'id="headline"' in html  # the bar, then the report
    assert html.index('id="ts-bar"') < html.index('id="headline"')
    for fmt in ("json", "html", "md", "xlsx", "yaml"):
        assert f'id="download-{fmt}"' in html
    assert "<b>bold</b>" not in html and "&lt;b&gt;bold&lt;/b&gt;" in html


def test_result_page_links_plotly_from_this_server_and_stays_small(client, result):
    """plotly.js (4.6 MB) is one cached file of this server, not inlined into every page; the HTML download
    keeps it inlined so the file works offline on its own."""
    from trainsizer.web.assets import plotly_url

    r, token = result
    assert len(r.content) < 1_000_000
    assert r.text.count(f'<script src="{plotly_url()}"></script>') == 1 and "Plotly.newPlot" in r.text
    js = client.get(plotly_url())
    assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
    assert "max-age=31536000" in js.headers["cache-control"] and "immutable" in js.headers["cache-control"]
    assert len(js.content) > 1_000_000 and b"Plotly" in js.content[:100_000]
    assert "script-src 'self'" in js.headers["content-security-policy"]
    html = client.get("/download/html", params={"job": token})
    assert len(html.content) > 1_000_000 and "<script src=" not in html.text
    assert client.get("/download/page", params={"job": token}).status_code == 404


def test_language_switch_link(client, result):
    _r, token = result
    zh = client.get("/result", params={"job": token, "lang": "zh"})
    assert zh.status_code == 200 and 'lang="zh-CN"' in zh.text and "English" in zh.text


def test_api_plan_is_the_plan_behind_the_page(client, result):
    _r, token = result
    plan = client.get("/download/json", params={"job": token}).json()
    assert plan["schema_version"] and plan["recommended"]["id"]
    from trainsizer.web.token import decode_job

    again = client.post("/api/plan", json=decode_job(token, 100_000))
    assert again.status_code == 200 and again.json() == plan


def test_downloads_open(client, result):
    _r, token = result
    import openpyxl

    x = client.get("/download/xlsx", params={"job": token, "lang": "zh"})
    assert x.status_code == 200 and "attachment" in x.headers["content-disposition"]
    book = openpyxl.load_workbook(io.BytesIO(x.content))
    assert book.sheetnames
    md = client.get("/download/md", params={"job": token})
    names = zipfile.ZipFile(io.BytesIO(md.content)).namelist()
    assert "report.md" in names
    y = client.get("/download/yaml", params={"job": token})
    assert yaml.safe_load(y.text)["name"] == "<b>bold</b> & co"
    assert json.loads(client.get("/download/json", params={"job": token}).text)["job"]


def test_unknown_download_format(client, result):
    _r, token = result
    r = client.get("/download/docx", params={"job": token})
    assert r.status_code == 404 and "xlsx" in r.json()["error"]["message"]


def test_broken_result_link_is_a_message_not_a_crash(client):
    r = client.get("/result", params={"job": "garbage!", "lang": "en"})
    assert r.status_code == 422 and "not a job link" in r.text


def test_api_plan_errors_are_the_cli_errors(client):
    job = example("sft-70b-search.yaml") | {"constraints": {"include": ["h100-sxm-80"]}}
    r = client.post("/api/plan", json=job)
    assert r.status_code == 422
    assert r.json()["error"]["field"] == "constraints.include"


def test_api_plan_speaks_the_language_asked(client):
    from .conftest import example

    job = example("lora-8b-one-gpu.yaml")
    zh = client.post("/api/plan", params={"lang": "zh"}, json=job)
    assert zh.status_code == 200
    import re

    assert re.search(r"[\u4e00-\u9fff]", zh.json()["recommended"]["why"])
    bad = client.post("/api/plan", params={"lang": "fr"}, json=job)
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "lang"


def test_chinese_result_page_has_no_english_left(client, result):
    """The result page in Chinese (the zh report under the bar) leaves English only for names, units, ids and
    the job itself (the same check as the reports': tests/render/report/test_zh_plan.py)."""
    from render.report.test_zh_plan import _visible_html, english_words

    _r, token = result
    zh = client.get("/result", params={"job": token, "lang": "zh"})
    assert zh.status_code == 200
    job_text = yaml.safe_dump(GOOD) + " ".join(str(v) for v in GOOD.values()) + " English bold"  # name: <b>bold</b>
    assert english_words(_visible_html(zh.text), job_text) == []


def test_result_page_writes_money_one_way(client, result):
    """Headline, tables and the "why" sentences write money by one rule (numbers.money): never "373 USD"
    beside "$372.75"."""
    import re

    _r, token = result
    for lang in ("en", "zh"):
        html = client.get("/result", params={"job": token, "lang": lang}).text
        assert not re.search(r"\d USD|\d CNY", html), re.search(r".{80}\d USD.{20}", html)
        assert re.search(r"(US)?\$\d", html)


def _plan_cny_a6000(client, **fields):
    """A China-market (CNY) plan on rtx-a6000, a card the catalog prices in USD only: its job token and plan JSON."""
    job = {**{k: v for k, v in GOOD.items() if k != "goal.budget.currency"}, "constraints.market": "china",
           "constraints.include": ["rtx-a6000"], "lang": "en", **fields}
    r = client.post("/plan", data=job)
    assert r.status_code == 200, r.text[:500]
    token = str(r.url).split("job=")[1].split("&")[0]
    return token, client.get("/download/json", params={"job": token}).json()


def test_excel_figures_are_the_pages_in_the_prices_own_currency(client):
    """A China-market plan (CNY) renting a card the catalog prices in USD only: the Excel option sheet wrote the
    USD rate and total under a ¥ format (0.475 USD per GPU-hour read "¥0", the USD total read as yuan) and had no
    row with the CNY figure the page ranks and shows. Now the USD block is in US$ with cents, and the converted
    figure is the page's, at the rate the plan used."""
    import openpyxl

    token, plan = _plan_cny_a6000(client)
    rec = plan["recommended"]
    assert rec["score"]["currency"] == "CNY" and rec["cost"]["rent"]["currency"] == "USD"
    book = openpyxl.load_workbook(io.BytesIO(client.get("/download/xlsx", params={"job": token}).content))
    rows = {str(row[0].value): row for row in book["Option 1"].iter_rows() if row[0].value}
    rate = rows["Rent: per GPU-hour"]
    assert rate[3].value == rec["cost"]["rent"]["unit_price"]["mid"] and rate[3].number_format == '"$"#,##0.00'
    assert rows["Cost (rent) (USD)"][3].number_format == '"$"#,##0.00'
    converted = rows["Cost (rent, converted) (CNY)"]
    assert converted[3].value == pytest.approx(rec["score"]["cost"]) and "CN¥" in converted[3].number_format
    assert rows["MFU"][1].number_format == "0.0%"


def test_a_download_that_fails_is_a_page_for_a_browser_and_json_for_a_program(client, result):
    """The page's links carried `download`, so a failed file (a time limit on a busy server) was saved as a
    broken file ("pdf.json" holding the error). Now the link is plain (content-disposition makes the file) and a
    browser asking for one that cannot be made gets a page with the message and a way back."""
    r, token = result
    assert re.search(r'id="download-xlsx" href="[^"]+">', r.text) and " download>" not in r.text
    page = client.get("/download/pdf", params={"job": "garbage!", "lang": "zh"}, headers={"accept": "text/html"})
    assert page.status_code == 422 and page.headers["content-type"].startswith("text/html")
    assert 'id="download-error"' in page.text and "文件未能生成" in page.text and 'id="back-to-plan"' in page.text
    program = client.get("/download/pdf", params={"job": "garbage!"}, headers={"accept": "application/json"})
    assert program.status_code == 422 and "not a job link" in program.json()["error"]["message"]
    ok = client.get("/download/xlsx", params={"job": token}, headers={"accept": "text/html"})
    assert ok.status_code == 200 and "attachment" in ok.headers["content-disposition"]


def test_a_file_past_the_time_limit_says_the_plan_is_made_and_how_to_get_the_file():
    """The time limit's message told the user to narrow the job ("fix the accelerator or GPU count") when only
    the PDF of a finished plan was slow."""
    import asyncio
    from types import SimpleNamespace

    from trainsizer.messages import msg
    from trainsizer.web.errors import TimeLimit
    from trainsizer.web.results import Results

    class SlowRender:
        config = SimpleNamespace(task_timeout_s=30.0)

        async def run(self, name, payload):
            if name == "plan":
                return {"plan": {"schema_version": "x"}, "json": b"{}"}
            raise TimeLimit(msg("web_time_limit", task=name, seconds="30"))

    with pytest.raises(TimeLimit) as err:
        asyncio.run(Results(SlowRender(), 8).file({"model": "llama-3.1-8b"}, "pdf", "en"))
    text = err.value.render("en")
    assert "making the PDF file took longer than this server's limit of 30 s" in text
    assert "trainsizer report plan.json" in text and "narrow the job" not in text
    assert "生成 PDF 文件超过了本服务器 30 秒的时限" in err.value.render("zh")


def test_the_bill_of_materials_follows_the_basis_the_option_was_ranked_on(client):
    """procurement either, a CNY plan, a card the catalog prices in USD rent only (rtx-a6000): the plan ranks it
    rented at the converted price, but its bill of materials said "Acquisition: buy" with a total of 0 (the
    basis was read in the plan's currency only). It is now the rented BOM, its total the page's figure."""
    _, plan = _plan_cny_a6000(client, **{"goal.procurement": "either"})
    rec = plan["recommended"]
    assert rec["score"]["cost_basis"] == "rent" and rec["cost"]["rent"]["currency"] == "USD"
    bom = plan["build"]["bom"]
    assert bom["acquisition"] == "rent" and bom["currency"] == "CNY"
    assert bom["totals"]["typical"] == pytest.approx(rec["score"]["cost"], rel=1e-4)  # its unit price rounded to 4 places
