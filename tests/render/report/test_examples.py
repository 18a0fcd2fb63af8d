"""Every example job, planned for real and rendered in both languages: HTML, Markdown, Excel and SVG."""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path

import pytest
from openpyxl import load_workbook

from trainsizer.plan.texts import localise
from trainsizer.render.report import render_html, render_markdown, render_svg, render_xlsx
from trainsizer.render.report.facts import blocks, recommended
from trainsizer.render.report.i18n import t

EXAMPLES = sorted((Path(__file__).resolve().parents[3] / "examples").glob("*.yaml"))


@cache
def _plan(name: str, **overrides) -> dict:
    from trainsizer.catalog import load_catalog
    from trainsizer.plan import make_plan

    path = next(p for p in EXAMPLES if p.stem == name)
    return make_plan(path, load_catalog(), top=6, overrides=overrides or None).model_dump(mode="json")


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", [p.stem for p in EXAMPLES])
def test_every_example_renders_every_report(name, lang):
    plan = _plan(name)
    rec = recommended(plan)
    assert rec == 0, "the plan's recommended option is options[0]"
    hw = plan["options"][0]["hardware"]
    html = render_html(plan, lang)
    headline = re.search(r'<p class="headline" id="headline">(.*?)</p>', html, re.S).group(1)
    assert hw["accelerator"] in headline
    asked, priced = plan["goal"]["procurement"], set(plan["options"][0]["cost"]) - {"currency"}
    expected = [asked] if asked in priced or (not priced and asked != "either") else sorted(priced) or ["rent"]
    assert any(headline.startswith(t(f"action.{k}", lang)) for k in expected), headline
    if not priced:   # no price in the catalog for this accelerator: said, not invented
        assert t("headline.noprice", lang, action="", count="", accelerator="", where="", days="",
                 currency=plan["goal"]["currency"]).split("；" if lang == "zh" else "; ")[-1] in headline
    for block in ("bom", "network", "storage", "acceptance"):   # present blocks render, absent ones say so
        section = html.split(f'<section id="{block}"', 1)[1].split("</section>", 1)[0]
        assert ("<table" in section) == (block in blocks(plan))
        assert (t("block_missing", lang) in section) == (block not in blocks(plan))
    wb = load_workbook(io.BytesIO(render_xlsx(plan, lang)))
    assert len(wb.sheetnames) == len(plan["options"]) + 2
    svg = ET.fromstring(render_svg(plan, lang))
    texts = ["".join(e.itertext()) for e in svg.iter("{http://www.w3.org/2000/svg}text")]
    drawn = sum(1 for s in texts if re.fullmatch(r"#\d+", s))
    assert drawn == hw["nodes"] if hw["nodes"] <= 32 else 0 < drawn <= 32


@pytest.mark.parametrize("name", ["sft-70b-search", "pretrain-405b"])
def test_markdown_of_a_search_and_of_a_large_cluster(name):
    text, files = render_markdown(_plan(name), "zh")
    assert "```mermaid" in text and set(re.findall(r"\]\((charts/[a-z]+\.png)\)", text)) <= set(files)


def test_a_job_nothing_satisfies_explains_what_binds():
    plan = _plan("sft-70b-search", deadline_days=0.1)
    assert plan["recommended"] is None and plan["binding"]
    for lang in ("en", "zh"):
        html = render_html(plan, lang)
        assert t("headline.none", lang) in html
        binding = html.split('<section id="binding"', 1)[1].split("</section>", 1)[0]
        shown = localise(plan, lang)["binding"]["relaxations"][0]["change"]   # the plan's text in `lang`
        assert shown in binding and (shown == plan["binding"]["relaxations"][0]["change"]) == (lang == "en")
        assert t("f.relaxations", lang) in binding


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_bom_units_are_words_in_either_language(lang):
    """A BOM line's unit (per_server, per_nic, per_unit, ...) is read from the catalogue in the report and the
    Excel BOM, never printed as its key."""
    plan = _plan("sft-70b-search", procurement="buy")
    units = {ln["unit"] for ln in blocks(plan)["bom"]["lines"]}
    assert {"per_server", "per_nic"} <= units
    for u in ("per_gpu_hour", "per_tb_month", "per_gb"):  # a rented plan's lines (bom_lines.rent_lines)
        assert t(f"v.{u}", lang) != u
    md, _ = render_markdown(plan, lang)
    for u in units:
        assert f"| {u} |" not in md and f"| {t(f'v.{u}', lang)} |" in md
    ws = load_workbook(io.BytesIO(render_xlsx(plan, lang))).worksheets
    cells = {str(c.value) for w in ws for row in w.iter_rows() for c in row if c.value is not None}
    assert not units & cells and t("v.per_nic", lang) in cells
