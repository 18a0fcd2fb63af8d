"""The Excel workbook (openpyxl): the bill of materials with live formulas (line totals = quantity × unit
price, totals = SUM), one sheet per option compared (its cost = quantity × unit price, also live), and the
assumptions with their sources. Opens in Excel and LibreOffice; amounts stay in the plan's own currency."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from openpyxl import Workbook
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from trainsizer.layout_text import layout_in
from trainsizer.render import cost_basis, numbers
from trainsizer.render.report.blocks import mid
from trainsizer.render.report.facts import (
    as_dict,
    blocks,
    currency,
    network_name,
    option_label,
    option_number,
    procurement,
)
from trainsizer.render.report.fmt import Fmt
from trainsizer.render.report.i18n import has, t
from trainsizer.render.report.sources import assumptions, unit_text

HEAD = Font(bold=True)
FILL = PatternFill("solid", fgColor="DDE6F3")
PRICES = ("low", "typical", "high")


def money_format(cur: str, lang: str) -> str:
    """Cents shown: a rent of 0.475 per GPU-hour or a job's 9.29 of electricity rounded to whole units read 0 and 9."""
    symbol = numbers.currency_symbol(cur, lang) if cur else ""
    return f'"{symbol}"#,##0.00' if symbol else "#,##0.00"


# The option sheet's figures as the page writes them (the cell keeps the full value).
UNIT_FORMATS = {"GiB": "#,##0.0", "s": "#,##0.00"}
PERCENT, HOURS, DAYS = "0.0%", "#,##0", "#,##0.00"


def _header(ws: Worksheet, row: int, labels: list[str]) -> None:
    for c, label in enumerate(labels, 1):
        cell = ws.cell(row, c, label)
        cell.font, cell.fill = HEAD, FILL
        cell.alignment = Alignment(wrap_text=True, vertical="top")


def _widths(ws: Worksheet, widths: list[int]) -> None:
    for i, w in enumerate(widths, 1):
        ws.column_dimensions[get_column_letter(i)].width = w


BOM_COLUMNS = ("f.category", "f.item", "f.part", "f.quantity", "f.unit", "x.unit_low", "x.unit_typical", "x.unit_high",
               "x.line_low", "x.line_typical", "x.line_high", "f.currency", "f.source", "f.date", "f.note")


def _bom_line(ws: Worksheet, r: int, ln: Mapping, cur: str, lang: str) -> None:
    """One BOM line: quantity and unit prices as numbers, amounts as formulas (I:K = D × F:H)."""
    price = ln.get("unit_price") if isinstance(ln.get("unit_price"), Mapping) else {}
    line_cur = str(price.get("currency") or ln.get("currency") or cur)
    money = money_format(line_cur, lang)
    unit = ln.get("unit")
    unit = t(f"v.{unit}", lang) if isinstance(unit, str) and has(f"v.{unit}") else unit  # per_nic -> 每块网卡
    for c, v in enumerate((ln.get("category"), ln.get("item"), ln.get("part"), ln.get("quantity"), unit), 1):
        ws.cell(r, c, v)
    note = [str(ln["note"])] if ln.get("note") else []
    if price.get("low") is not None:
        for k, v in enumerate((price.get("low"), mid(price), price.get("high"))):
            ws.cell(r, 6 + k, v).number_format = money
            ws.cell(r, 9 + k, f"=D{r}*{get_column_letter(6 + k)}{r}").number_format = money
    elif not note:
        note.append(t("x.unpriced", lang))
    if price.get("converted"):
        note.append(f"{t('f.converted', lang)}{t('sep.field', lang)}{price['converted']}")
    for c, v in ((12, line_cur), (13, price.get("source") or ln.get("source")), (14, price.get("date") or ln.get("date")),
                 (15, "; ".join(note) or None)):
        ws.cell(r, c, v)


def bom_sheet(wb: Workbook, plan: Mapping, lang: str) -> None:
    ws = wb.active
    ws.title = t("x.sheet_bom", lang)[:31]
    bom = blocks(plan).get("bom")
    bom = bom if isinstance(bom, Mapping) else None
    lines = [ln for ln in (bom or {}).get("lines") or [] if isinstance(ln, Mapping)]
    if not lines:
        ws["A1"] = t("x.bom_missing", lang)
        ws.column_dimensions["A"].width = 100
        return
    cur = str(bom.get("currency") or currency(plan))
    money = money_format(cur, lang)
    _header(ws, 1, [t(k, lang) for k in BOM_COLUMNS])
    for r, ln in enumerate(lines, 2):
        _bom_line(ws, r, ln, cur, lang)
    total = len(lines) + 2
    ws.cell(total, 1, t("x.total_priced", lang)).font = HEAD
    for k in range(3):
        col = get_column_letter(9 + k)
        cell = ws.cell(total, 9 + k, f"=SUM({col}2:{col}{total - 1})")
        cell.font, cell.number_format = HEAD, money
    ws.freeze_panes = "A2"
    _widths(ws, [12, 40, 24, 9, 11, 13, 13, 13, 15, 15, 15, 9, 30, 10, 30])
    _rent_rows(ws, bom, total + 2, money, lang)


def _rent_rows(ws: Worksheet, bom: Mapping, row: int, money: str, lang: str) -> None:
    """Renting instead, and the break-even month as a formula over the figures it is made of."""
    rent = bom.get("rent") if isinstance(bom.get("rent"), Mapping) else {}
    bvr = bom.get("buy_vs_rent") if isinstance(bom.get("buy_vs_rent"), Mapping) else {}
    figures = [(k, v) for k, v in rent.items() if isinstance(v, int | float) and not isinstance(v, bool)]
    if isinstance(rent.get("per_month"), Mapping):
        figures.insert(0, ("per_month", mid(rent["per_month"])))
    if not figures and not bvr:
        return
    ws.cell(row, 1, t("x.rent_alternative", lang)).font = HEAD
    r = row + 1
    for key, value in figures:
        # a length says its unit in the label (job_days: days), as the option sheets' rows do
        ws.cell(r, 2, _in(t(f"f.{key}", lang), t("x.days", lang), lang) if key.endswith("days") else t(f"f.{key}", lang))
        ws.cell(r, 4, value).number_format = "#,##0.0" if key.endswith(("days", "months")) else money
        r += 1
    capex = mid(bvr["capex"]) if isinstance(bvr.get("capex"), Mapping) else None
    # the month only where the plan weighed buy against rent (break_even_month set): without a price for the GPUs,
    # or with rent no dearer than running the hardware, the priced lines over the rent would be a false month
    if capex is not None and bvr.get("break_even_month") is not None and bvr.get("rent_per_month") is not None \
            and bvr.get("running_per_month") is not None:
        for k, (key, value) in enumerate((("capex", capex), ("rent_per_month", bvr["rent_per_month"]),
                                          ("running_per_month", bvr["running_per_month"]))):
            ws.cell(r + k, 2, t(f"f.{key}", lang))
            ws.cell(r + k, 4, value).number_format = money
        ws.cell(r + 3, 2, t("f.break_even_month", lang)).font = HEAD
        ws.cell(r + 3, 4, f"=D{r}/(D{r + 1}-D{r + 2})").number_format = "0.0"
        r += 4
    if bvr.get("verdict"):
        ws.cell(r, 2, str(bvr["verdict"]))


def option_sheet(wb: Workbook, plan: Mapping, i: int, lang: str) -> None:
    o = plan["options"][i]
    ws = wb.create_sheet(f"{t('option', lang)} {option_number(o, i)}"[:31])
    hw, st, mem, tm = (o.get(k) or {} for k in ("hardware", "strategy", "memory", "time"))
    rows: list[tuple[str, Any]] = [
        (t("option", lang), option_label(o)), (t("x.accelerator", lang), hw.get("accelerator")),
        (t("x.server", lang), hw.get("server")), (t("gpus", lang), hw.get("count")),
        (t("nodes_x_gpus", lang), f"{hw.get('nodes')} × {hw.get('per_node')}"), (t("network", lang), network_name(hw)),
        (t("strategy", lang), layout_in(st, lang)), (_in(t("x.memory_per_gpu", lang), "GiB", lang), mem.get("per_gpu_gib")),
        (_in(t("capacity", lang), "GiB", lang), mem.get("capacity_gib")),
        *((_in(t(f"mem.{k}", lang), "GiB", lang), v) for k, v in (mem.get("breakdown_gib") or {}).items()),
        (_in(t("step_time", lang), "s", lang), tm.get("step_s")),
        *((_in(t(f"f.{k}", lang), "s", lang), v) for k, v in (tm.get("breakdown_s") or {}).items()),
        ("MFU", tm.get("mfu")), (t("gpu_hours", lang), tm.get("gpu_hours")),
        (_in(t("time_to_train", lang), t("x.days", lang), lang), tm.get("train_days")),
    ]
    _header(ws, 1, [t("item", lang), t("value", lang)])
    formats = {"MFU": PERCENT, t("gpu_hours", lang): HOURS, rows[-1][0]: DAYS}
    for r, (k, v) in enumerate(rows, 2):
        ws.cell(r, 1, k)
        cell = ws.cell(r, 2, v)
        unit = next((u for u in UNIT_FORMATS if k.endswith(t("paren", lang, text=u))), None)
        if isinstance(v, int | float) and not isinstance(v, bool) and (k in formats or unit):
            cell.number_format = formats.get(k) or UNIT_FORMATS[unit]
    _cost_rows(ws, o, len(rows) + 3, lang, procurement(plan))
    _widths(ws, [38, 40, 14, 14, 14, 30, 10])


def _in(label: str, unit: str, lang: str) -> str:
    """'Step time (s)' / '单步时间（s）': a label with its unit in the reader's brackets."""
    return label + t("paren", lang, text=unit)


def _price_unit(unit: str, lang: str) -> str:
    """A price's unit in the reader's words ('per GPU-hour' -> '每卡时', `v.<unit>`), else as stored."""
    key = "v." + unit.lower().replace(" ", "_").replace("-", "_")
    return t(key, lang) if has(key) else unit_text(unit, lang)  # 'per GPU (accelerator only)' -> 每张 GPU（仅加速卡）


def _cost_rows(ws: Worksheet, o: Mapping, row: int, lang: str, kind_asked: str) -> None:
    """Cost = quantity × unit price, as formulas over the option's own figures, in the currency of the catalog's
    prices; a purchase adds the job's electricity (full price, as the plan ranks it) and shows the amortised
    share under its own label. A price in the other currency is then converted as the page shows it."""
    cost = o.get("cost") or {}
    cur = str(cost.get("currency") or "")
    _header(ws, row, [t("cost", lang), t("x.quantity_unit", lang), t("x.unit_low", lang), t("x.unit_typical", lang),
                      t("x.unit_high", lang), t("f.source", lang), t("f.date", lang)])
    r = row + 1
    for kind in ("rent", "buy"):
        block = cost.get(kind)
        if not isinstance(block, Mapping) or not isinstance(block.get("unit_price"), Mapping):
            continue
        money = money_format(str(block.get("currency") or cur), lang)  # the price's own, not the plan's
        up = block["unit_price"]
        ws.cell(r, 1, f"{t(f'action.{kind}', lang)}{t('sep.field', lang)}{_price_unit(str(up.get('unit', '')), lang)}")
        ws.cell(r, 2, block.get("quantity"))
        for k, key in enumerate(("low", "mid", "high")):
            ws.cell(r, 3 + k, up.get(key, up.get("typical") if key == "mid" else None)).number_format = money
            ws.cell(r + 1, 3 + k, f"=B{r}*{get_column_letter(3 + k)}{r}").number_format = money
        ws.cell(r, 6, block.get("source"))
        ws.cell(r, 7, block.get("date"))
        # rent: whole committed terms at the reserved rate, beside the hours on demand; buy: the host RAM an
        # offloaded layout adds, beside the accelerators (evaluate.host_ram_block); the total adds both rows
        res = block.get("reserved" if kind == "rent" else "host_ram")
        if isinstance(res, Mapping) and isinstance(res.get("unit_price"), Mapping):
            what = t("x.reserved", lang, terms=res.get("terms")) if kind == "rent" else t("x.host_ram", lang)
            ws.cell(r + 1, 1, f"{t(f'action.{kind}', lang)}{t('sep.field', lang)}{what}")
            ws.cell(r + 1, 2, res.get("quantity"))
            for k, key in enumerate(("low", "mid", "high")):
                col = get_column_letter(3 + k)
                ws.cell(r + 1, 3 + k, res["unit_price"].get(key)).number_format = money
                ws.cell(r + 2, 3 + k, f"=B{r}*{col}{r}+B{r + 1}*{col}{r + 1}").number_format = money
            ws.cell(r + 1, 6, res.get("source"))
            ws.cell(r + 1, 7, res.get("date"))
            r += 1
        if kind == "rent":
            _cost_label(ws, r + 1, cost_basis.rent(o), lang)
            r += 3
            continue
        ws.cell(r + 1, 1, _in(f"{t('action.buy', lang)}{t('sep.field', lang)}{t('total', lang)}",
                              str(block.get("currency") or cur), lang))
        r = _buy_rows(ws, o, r + 2, money, lang)
    _converted_rows(ws, o, r, lang, kind_asked)


def _converted_rows(ws: Worksheet, o: Mapping, r: int, lang: str, kind_asked: str) -> None:
    """The ranked figure (and a purchase's amortised share) in the plan's currency where the catalog prices the
    part in the other one: the figures the page, the CLI and the ranking show, with the rate they were made at."""
    k = cost_basis.fx_rate(o, kind_asked)
    shown = cost_basis.ranked(o, kind_asked)
    if k is None or shown is None:
        return
    source = next(c.currency for c in (cost_basis.rent(o), cost_basis.buy_full(o), cost_basis.buy_amortised(o))
                  if c is not None and c.currency != shown.currency)
    ws.cell(r, 1, t("x.fx_rate", lang, to=shown.currency, source=source))
    ws.cell(r, 2, k).number_format = "0.00##"
    money = money_format(shown.currency, lang)
    for i, c in enumerate(x for x in (shown, cost_basis.amortised_beside(o, kind_asked)) if x is not None):
        _cost_label(ws, r + 1 + i, c, lang)
        for j, v in enumerate((c.low, c.mid, c.high)):
            if v is not None:
                ws.cell(r + 1 + i, 3 + j, v).number_format = money


def _cost_label(ws: Worksheet, r: int, c: cost_basis.Cost | None, lang: str) -> None:
    """'Cost (rent)' / 'Cost (buy, full price)': the basis, as the CLI and the report name it."""
    if c is not None:
        ws.cell(r, 1, _in(f"{t('cost', lang)}{t('paren', lang, text=c.label(lang))}", c.currency, lang)).font = HEAD


def _buy_rows(ws: Worksheet, o: Mapping, r: int, money: str, lang: str) -> int:
    """Under the purchase total (row r - 1): the job's electricity, the full price (= purchase + electricity,
    live) and the amortised share; the next free row."""
    block = (o.get("cost") or {}).get("buy") or {}
    if block.get("electricity") is None:
        return r + 1
    ws.cell(r, 1, t("x.electricity", lang))
    for k in range(3):
        col = get_column_letter(3 + k)
        ws.cell(r, 3 + k, block["electricity"]).number_format = money
        ws.cell(r + 1, 3 + k, f"={col}{r - 1}+{col}{r}").number_format = money
    _cost_label(ws, r + 1, cost_basis.buy_full(o), lang)
    amortised = cost_basis.buy_amortised(o)
    if amortised is not None:
        _cost_label(ws, r + 2, amortised, lang)
        for k, v in enumerate((amortised.low, amortised.mid, amortised.high)):
            ws.cell(r + 2, 3 + k, v).number_format = money
    return r + 4


def assumptions_sheet(wb: Workbook, plan: Mapping, lang: str) -> None:
    ws = wb.create_sheet(t("x.sheet_assumptions", lang)[:31])
    _header(ws, 1, [t("what", lang), t("value", lang), t("source", lang), t("date", lang)])
    for r, row in enumerate(assumptions(plan, Fmt(lang)), 2):
        for c, v in enumerate(row, 1):
            ws.cell(r, c, v)
    _widths(ws, [44, 40, 70, 10])


def render_xlsx(plan: Any, lang: str = "en") -> bytes:
    """The workbook as bytes (.xlsx). Stable signature: the web page uses it."""
    p = as_dict(plan, lang)
    wb = Workbook()
    bom_sheet(wb, p, lang)
    for i in range(len(p.get("options") or [])):
        option_sheet(wb, p, i, lang)
    assumptions_sheet(wb, p, lang)
    wb.properties.creator = "trainsizer"
    wb.properties.title = t("title", lang)
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()
