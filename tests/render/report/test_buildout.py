"""The build-out blocks in their real shape: every block renders, generated files are shown verbatim, the
workbook's formulas reproduce the plan's totals and break-even month, the diagram reads the fabric."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from openpyxl import load_workbook

from trainsizer.render.report import render_html, render_markdown, render_svg, render_xlsx
from trainsizer.render.report.i18n import t

from .conftest import load_buildout


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_block_renders_with_its_rules_and_files(lang):
    plan = load_buildout()
    html = render_html(plan, lang)
    for block in ("bom", "network", "node", "storage", "facility", "software", "risks", "acceptance", "phases",
                  "rules_of_thumb"):
        section = html.split(f'<section id="{block}"', 1)[1].split("</section>", 1)[0]
        assert "<table" in section and t("block_missing", lang) not in section, block
    software = html.split('<section id="software"', 1)[1].split("</section>", 1)[0]
    assert "<figcaption>slurm.conf</figcaption><pre>" in software
    assert "NodeName=gpu[001-002]" in software
    node = html.split('<section id="node"', 1)[1].split("</section>", 1)[0]
    assert t("basis", lang) in node and "megatron_args" in node      # derived figures name their rule and source
    text, _ = render_markdown(plan, lang)
    assert "`gres.conf`\n\n```\nAutoDetect=nvml" in text


def test_workbook_reproduces_totals_and_break_even(tmp_path):
    pycel = pytest.importorskip("pycel")
    plan = load_buildout()
    bom = plan["build"]["bom"]
    path = tmp_path / "bom.xlsx"
    path.write_bytes(render_xlsx(plan, "en"))
    ws = load_workbook(path)["BOM"]
    total_row = len(bom["lines"]) + 2
    xl = pycel.ExcelCompiler(filename=str(path))
    got = [xl.evaluate(f"BOM!{c}{total_row}") for c in "IJK"]
    assert got == pytest.approx([bom["totals"][k] for k in ("low", "typical", "high")])
    unpriced = [r for r in range(2, total_row) if ws.cell(r, 6).value is None]
    assert len(unpriced) == sum(1 for ln in bom["lines"] if ln["unit_price"] is None)
    assert all(ws.cell(r, 9).value is None for r in unpriced)          # no amount invented for them
    even = next(r for r in range(total_row, ws.max_row + 1) if ws.cell(r, 2).value == "Break-even month")
    assert str(ws.cell(even, 4).value).startswith("=")
    assert xl.evaluate(f"BOM!D{even}") == pytest.approx(bom["buy_vs_rent"]["break_even_month"])


def test_diagram_reads_the_fabric_racks_and_nvlink():
    plan = load_buildout("405b")
    root = ET.fromstring(render_svg(plan, "en"))
    texts = ["".join(e.itertext()) for e in root.iter("{http://www.w3.org/2000/svg}text")]
    compute = plan["build"]["network"]["compute"]
    assert f"Leaf switches × {compute['leaves']}" in texts and f"Core switches × {compute['cores']:,}" in texts
    assert f"{compute['links']['node_leaf']:,} × 400 Gb/s" in texts
    racks = plan["build"]["facility"]["node_racks"]
    assert f"Rack {racks}" in texts and any("more racks" in s for s in texts)
    assert any("NVLink domain (8 GPUs)" in s for s in texts)
    assert any("sn2201" in s for s in texts)                            # the out-of-band network
