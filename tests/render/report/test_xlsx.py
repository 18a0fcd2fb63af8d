from __future__ import annotations

import io

import pytest
from openpyxl import load_workbook

from trainsizer.render.report import render_xlsx
from trainsizer.render.report.i18n import t


def _evaluate(data: bytes, tmp_path, cells: list[str]) -> list[float]:
    """Recompute the workbook's formulas as a spreadsheet would (pycel), reading it back from disk."""
    pycel = pytest.importorskip("pycel")
    path = tmp_path / "bom.xlsx"
    path.write_bytes(data)
    xl = pycel.ExcelCompiler(filename=str(path))
    return [xl.evaluate(c) for c in cells]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_bom_totals_are_live_formulas_that_add_up(plan, lang, tmp_path):
    data = render_xlsx(plan, lang)
    wb = load_workbook(io.BytesIO(data))
    sheet = t("x.sheet_bom", lang)
    assert wb.sheetnames[0] == sheet
    ws = wb[sheet]
    lines = plan["bom"]["lines"]
    total_row = len(lines) + 2
    assert ws.cell(total_row, 10).value == f"=SUM(J2:J{total_row - 1})"
    assert ws.cell(2, 10).value == "=D2*G2"
    got = _evaluate(data, tmp_path, [f"{sheet}!{c}{total_row}" for c in "IJK"])
    expected = [sum(ln["quantity"] * ln["unit_price"][k] for ln in lines) for k in ("low", "typical", "high")]
    assert got == pytest.approx(expected)
    assert got == pytest.approx([plan["bom"]["totals"][k] for k in ("low", "typical", "high")])


def test_one_sheet_per_option_with_cost_as_a_formula(plan, tmp_path):
    data = render_xlsx(plan, "en")
    wb = load_workbook(io.BytesIO(data))
    options = [n for n in wb.sheetnames if n.startswith("Option ")]
    assert len(options) == len(plan["options"])
    assert wb.sheetnames[-1] == t("x.sheet_assumptions", "en")
    ws = wb["Option 1"]
    row = next(r for r in range(1, ws.max_row + 1) if str(ws.cell(r, 1).value).startswith("Rent: per GPU-hour"))
    assert ws.cell(row + 1, 4).value == f"=B{row}*D{row}"
    (cost_mid,) = _evaluate(data, tmp_path, [f"Option 1!D{row + 1}"])
    assert cost_mid == pytest.approx(plan["options"][0]["cost"]["rent"]["mid"])


def test_assumptions_sheet_names_sources_and_dates(plan):
    wb = load_workbook(io.BytesIO(render_xlsx(plan, "zh")))
    ws = wb[t("x.sheet_assumptions", "zh")]
    rows = [[c.value for c in r] for r in ws.iter_rows(min_row=2)]
    price = next(r for r in rows if str(r[0]).startswith(t("a.price_rent", "zh")))
    assert price[2] == plan["options"][0]["cost"]["rent"]["source"] and price[3] == "2026-11"


def test_a_plan_without_bom_gets_a_note_not_a_made_up_bill(plan):
    del plan["bom"]
    ws = load_workbook(io.BytesIO(render_xlsx(plan, "en"))).worksheets[0]
    assert ws["A1"].value == t("x.bom_missing", "en") and ws.max_row == 1


def test_a_chinese_option_sheet_writes_units_and_price_units_the_chinese_way(plan):
    """'单步时间 (s)', '租用: per GPU-hour' and '激活卸载(PCIe,未重叠部分)': ASCII brackets, an English colon and an
    English price unit in a Chinese sheet."""
    wb = load_workbook(io.BytesIO(render_xlsx(plan, "zh")))
    labels = [str(c.value) for c in wb[f"{t('option', 'zh')} 1"]["A"] if c.value is not None]
    assert f"{t('step_time', 'zh')}（s）" in labels and any(x.endswith("（GiB）") for x in labels)
    assert "租用：每卡时" in labels
    assert not any(ch in x for x in labels for ch in "():,"), [x for x in labels if any(ch in x for ch in "():,")]
    en = [str(c.value) for c in load_workbook(io.BytesIO(render_xlsx(plan, "en")))["Option 1"]["A"] if c.value]
    assert "Step time (s)" in en and "Rent: per GPU-hour" in en


def test_the_memory_row_holds_the_memory_and_its_label_says_only_that(plan):
    """'单卡显存 / 容量' over one figure read as a ratio; the capacity has its own row."""
    for lang in ("en", "zh"):
        wb = load_workbook(io.BytesIO(render_xlsx(plan, lang)))
        sheet = wb[f"{t('option', lang)} 1"]
        labels = {str(row[0].value): row[1].value for row in sheet.iter_rows() if row[0].value}
        assert not any(label.startswith(t("memory_per_gpu", lang)) for label in labels)
        assert any(label.startswith(t("x.memory_per_gpu", lang)) for label in labels)


def test_chinese_assumptions_use_the_full_width_colon(plan):
    ws = load_workbook(io.BytesIO(render_xlsx(plan, "zh"))).worksheets[-1]
    labels = [str(c.value) for c in ws["A"] if c.value]
    assert labels and not any(": " in x for x in labels), [x for x in labels if ": " in x]


def test_a_bought_options_price_unit_reads_in_chinese():
    """The option sheet wrote '购买：per GPU (accelerator only)' in a Chinese workbook (a bought workstation)."""
    from trainsizer.evaluate import UNIT_BUY, UNIT_RENT
    from trainsizer.render.report.xlsx import _price_unit

    assert _price_unit(UNIT_BUY, "zh") == t("a.unit_buy", "zh") and _price_unit(UNIT_BUY, "en") == UNIT_BUY
    assert _price_unit(UNIT_RENT, "zh") == "每卡时"


def _rent_block(ws) -> dict[str, object]:
    """The 'Renting instead' rows of the BOM sheet: label (column B) -> value (column D)."""
    start = next(r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value == t("x.rent_alternative", "en"))
    return {str(ws.cell(r, 2).value): ws.cell(r, 4).value for r in range(start + 1, ws.max_row + 1)
            if ws.cell(r, 2).value is not None}


@pytest.mark.parametrize("even, verdict", [(None, "no purchase price for oam-8x-mi325x, mi325x: buy vs rent not "
                                                  "compared (add a quote with --catalog)"),
                                           (23.1, "buying pays back after 23.1 months of full use")])
def test_the_break_even_formula_is_written_only_where_the_plan_compared_buy_and_rent(even, verdict, tmp_path):
    """A rented MI325X plan (no purchase price for the GPUs, only cables and switches priced) read 'break-even
    month: none' in the CLI and the report, while the workbook's live formula gave the switches' price over a
    month of rent: 13,550 / (46,136 - 3,587) = 0.3 months."""
    from .conftest import load_buildout

    plan = load_buildout()
    bvr = plan["build"]["bom"]["buy_vs_rent"]
    bvr.update(capex={"low": 11500.0, "typical": 13550.0, "high": 15600.0}, running_per_month=3587.09663,
               rent_per_month=46136.0, break_even_month=even, verdict=verdict)
    data = render_xlsx(plan, "en")
    ws = load_workbook(io.BytesIO(data)).worksheets[0]
    rows = _rent_block(ws)
    label = t("f.break_even_month", "en")
    if even is None:
        assert label not in rows and verdict in rows
    else:
        start = next(r for r in range(1, ws.max_row + 1) if ws.cell(r, 2).value == label)
        (got,) = _evaluate(data, tmp_path, [f"{ws.title}!D{start}"])
        assert got == pytest.approx(13550.0 / (46136.0 - 3587.09663))
    assert f"{t('f.job_days', 'en')} ({t('x.days', 'en')})" in rows
