"""One cost per option in every output, on the basis the plan ranked it by (render.cost_basis): the CLI's plan
table, the report (headline, facts, options table), the Excel workbook; a purchase's amortised share only beside
its full price, under its own label."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from trainsizer.evaluate import job_cost
from trainsizer.render import cost_basis
from trainsizer.render.numbers import money

REPO = Path(__file__).resolve().parents[2]
RENT = {"low": 5.5, "mid": 6.4, "high": 7.4, "currency": "USD"}
BUY = {"low": 2.7, "mid": 2.85, "high": 3.0, "capex_total": 8565.0, "electricity": 0.83, "currency": "USD",
       "quantity": 1, "unit_price": {"low": 8000.0, "mid": 8565.0, "high": 9000.0}, "amortisation_years": 4.0}


def option(basis=None, **cost):
    o = {"cost": {"currency": "USD", **(cost or {"rent": RENT, "buy": BUY})}}
    if basis:
        o["score"] = {"metric": "cost", "cost_basis": basis}
    return o


def test_the_shown_figure_is_the_one_the_plan_ranked_by():
    rent = cost_basis.ranked(option("rent"), "either")
    assert (rent.basis, rent.mid, rent.low, rent.high) == ("rent", 6.4, 5.5, 7.4)
    buy = cost_basis.ranked(option("buy"), "either")
    assert (buy.basis, buy.mid, buy.low, buy.high) == ("buy_full", 8565.83, 8000.83, 9000.83)
    assert cost_basis.amortised_beside(option("buy"), "either").mid == 2.85
    assert cost_basis.amortised_beside(option("rent"), "either") is None


def test_a_converted_purchase_shows_its_amortised_share_in_the_plans_currency_too():
    """A part priced in CNY only, bought in a USD plan (known-gaps 55 (a)): the full price was shown converted and
    its amortised share beside it in CN¥ ('$71,568,372 (buy, full price, converted); CN¥20,480,502 (buy,
    amortised over 4 years)' for 2,048 H800); both are now in the plan's currency, at the one rate."""
    cny = {**BUY, "currency": "CNY"}
    o = {"cost": {"currency": "CNY", "buy": cny},
         "score": {"metric": "cost", "cost_basis": "buy", "cost": 8565.83 * 0.1393, "currency": "USD"}}
    full, share = cost_basis.ranked(o, "buy"), cost_basis.amortised_beside(o, "buy")
    assert (full.currency, full.converted) == (share.currency, share.converted) == ("USD", True)
    assert share.mid == pytest.approx(2.85 * 0.1393) and share.high == pytest.approx(3.0 * 0.1393)
    assert share.label("en") == "buy, amortised over 4 years, converted"
    same = {**o, "score": {**o["score"], "cost": 8565.83, "currency": "CNY"}}
    assert not cost_basis.amortised_beside(same, "buy").converted and cost_basis.amortised_beside(same, "buy").mid == 2.85


def test_without_a_ranked_basis_the_job_asked_for_decides():
    assert cost_basis.ranked(option(), "rent").basis == "rent"
    assert cost_basis.ranked(option(), "buy").basis == "buy_full"
    assert cost_basis.ranked(option(), "either").basis == "rent"  # $6.40 against $8,566 at full price
    only_amortised = {k: v for k, v in BUY.items() if k != "capex_total"}
    assert cost_basis.ranked(option(buy=only_amortised), "buy").basis == "buy_amortised"
    assert cost_basis.ranked({"cost": {}}, "rent") is None


@pytest.mark.parametrize(("basis", "en", "zh"), [("rent", "rent", "租用"), ("buy_full", "buy, full price", "购买，全价"),
                                                 ("buy_amortised", "buy, amortised over 4 years", "购买，按 4 年折旧分摊")])
def test_labels_say_the_basis_in_both_languages(basis, en, zh):
    assert cost_basis.basis_label(basis, "en", 4.0) == en
    assert cost_basis.basis_label(basis, "zh", 4.0) == zh


prices = st.floats(1.0, 1e5)


@given(unit=st.tuples(prices, prices, prices).map(sorted), qty=st.integers(1, 4096),
       power=st.floats(0.0, 1e6), rent=prices)
def test_full_price_is_the_plans_job_cost_and_inside_its_range(unit, qty, power, rent):
    buy = {"mid": 1.0, "capex_total": unit[1] * qty, "electricity": power, "currency": "USD", "quantity": qty,
           "unit_price": dict(zip(("low", "mid", "high"), unit, strict=True))}
    costs = {"rent": {"mid": rent, "low": rent, "high": rent, "currency": "USD"}, "buy": buy}
    cost, basis = job_cost(costs, "USD")
    shown = cost_basis.ranked(option(basis, **costs), "either")
    assert shown.mid == cost and shown.basis == cost_basis.SCORE_BASIS[basis]
    assert cost_basis.ranked(option(**costs), "either").mid == cost  # no basis stored: the same choice
    full = cost_basis.buy_full(option(**costs))
    assert full.low <= full.mid * (1 + 1e-12) and full.mid <= full.high * (1 + 1e-12)


@pytest.fixture(scope="module")
def bought_plan(tmp_path_factory):
    from trainsizer.catalog import load_catalog
    from trainsizer.plan.core import make_plan

    job = yaml.safe_load((REPO / "examples" / "sft-70b-search.yaml").read_text(encoding="utf-8"))
    job["goal"].update(procurement="buy", budget={"amount": 3_000_000, "currency": "USD"})
    path = tmp_path_factory.mktemp("buy") / "job.yaml"
    path.write_text(yaml.safe_dump(job), encoding="utf-8")
    return make_plan(str(path), load_catalog()).model_dump(mode="json", by_alias=True)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_cli_report_and_workbook_show_one_figure_with_one_label(bought_plan, lang):
    import io

    from openpyxl import load_workbook
    from rich.console import Console

    from trainsizer.render.plan_view import print_plan
    from trainsizer.render.report.view import build_view
    from trainsizer.render.report.xlsx import render_xlsx

    o = bought_plan["options"][0]
    full, amortised = cost_basis.ranked(o, "buy"), cost_basis.amortised_beside(o, "buy")
    assert full.basis == "buy_full" and full.mid == o["score"]["cost"]
    figure = money(full.mid, "USD", lang)
    con = Console(record=True, width=250)
    print_plan(bought_plan, lang, con)
    cli = con.export_text()
    assert f"{figure}{'（' if lang == 'zh' else ' ('}{full.label(lang)}" in cli
    assert money(amortised.mid, "USD", lang) in cli and amortised.label(lang) in cli

    view = build_view(bought_plan, lang)
    row = view.sections[0].tables[0].rows[0]
    assert row[10].startswith(figure) and row[10].endswith(full.label(lang) + ("）" if lang == "zh" else ")"))
    assert figure in view.headline and full.label(lang) in view.headline and amortised.label(lang) in view.headline
    facts = dict(view.facts.rows)
    assert any(full.label(lang) in k and v.startswith(figure) for k, v in facts.items())
    assert any(amortised.label(lang) in k and v.startswith(money(amortised.mid, "USD", lang)) for k, v in facts.items())

    ws = load_workbook(io.BytesIO(render_xlsx(bought_plan, lang))).worksheets[1]
    labels = {str(r[0].value): r for r in ws.iter_rows() if r[0].value}
    full_row = next(r for k, r in labels.items() if full.label(lang) in k)
    electricity = next(r for k, r in labels.items() if r[0].row == full_row[0].row - 1)
    capex = next(r for k, r in labels.items() if r[0].row == full_row[0].row - 2)
    qty, unit = ws.cell(capex[0].row - 1, 2).value, ws.cell(capex[0].row - 1, 4).value
    assert full_row[3].value == f"=D{capex[0].row}+D{electricity[0].row}"
    assert qty * unit + electricity[3].value == pytest.approx(full.mid, rel=1e-12)
