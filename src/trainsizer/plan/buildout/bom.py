"""The `bom` block: what to order, with dated, sourced price ranges in the job's currency, totals, the rent
alternative and the buy-vs-rent break-even.

A price is converted between USD and CNY only when the catalog has none in the job's currency, and the line says
so with the rate and its date (the options and the ranking are not converted: the plan notes such a part,
`plan.explain.other_currency_notes`). A line without a sourced price is listed with `unit_price: null` and left out of the totals (named in
`unpriced`). Break-even month = capex / (rent per month - running cost per month) (simple payback).
"""

from __future__ import annotations

from typing import Any

from trainsizer.plan.buildout import rules
from trainsizer.plan.buildout.common import Block
from trainsizer.plan.texts import MessageRef, as_msg


class Price(Block):
    low: float
    typical: float
    high: float
    currency: str
    source: str
    date: str
    converted: str | None = None  # "USD x 7.18 CNY/USD (china_prices_ref, 2024-01)" when converted


class BomLine(Block):
    item: str
    item_msg: MessageRef | None = None  # the catalogue messages of `item` and `note` (plan/texts.py)
    part: str | None
    quantity: float
    unit: str
    unit_price: Price | None
    total: dict[str, float] | None
    note: str = ""
    note_msg: MessageRef | None = None


class BuyVsRent(Block):
    capex: dict[str, float]
    running_per_month: float
    rent_per_month: float | None
    break_even_month: float | None
    job_months: float
    rent_for_job: float | None
    verdict: str
    verdict_msg: MessageRef | None = None
    # the rate `rent_per_month` is at: a committed-term (reserved) one where the catalog lists it, a purchase being
    # weighed against a year of full use; else on demand. The on-demand month beside it when they differ.
    rent_basis: str | None = None
    rent_basis_msg: MessageRef | None = None
    rent_per_month_on_demand: float | None = None


class BomBlock(Block):
    acquisition: str = "buy"  # "rent": `lines` are what is rented and what the renter arranges, not a purchase
    currency: str
    lines: list[BomLine]
    totals: dict[str, float]
    unpriced: list[str]
    unpriced_msg: list[MessageRef | None] | None = None
    rent: dict[str, Any] | None
    buy_vs_rent: BuyVsRent | None
    notes: list[str]
    notes_msg: list[MessageRef | None] | None = None


def _price(rec: Any, currency: str) -> Price:
    return Price(low=rec.low, typical=rec.mid, high=rec.high, currency=currency,
                 source=", ".join(rec.sources), date=str(rec.date))


def fx(source: str, target: str) -> tuple[float, str]:
    """(target units per source unit, its label) at the rule's dated FX rate: the one rate the bill of materials and
    the plan's ranking convert a USD / CNY price with (the catalog prices in those two)."""
    rate = rules.rule("bom", "fx_cny_per_usd")
    k = 1.0 if source == target else rate.value if (source, target) == ("USD", "CNY") else 1.0 / rate.value
    return k, f"{source} x {k:.4g} {target}/{source} ({rate.source}, {rules.value('bom', 'fx_date')})"


def convert(p: Price, currency: str) -> Price:
    """A USD price in CNY (or back) at the rule's FX rate, labelled (`fx`)."""
    if p.currency == currency:
        return p
    k, label = fx(p.currency, currency)
    return Price(low=p.low * k, typical=p.typical * k, high=p.high * k, currency=currency, source=p.source,
                 date=p.date, converted=label)


def catalog_price(cat: Any, kind: str, subject: str, currency: str, term: str | None = None) -> Price | None:
    rec = cat.price(kind, subject, currency, term)
    if rec is not None:
        return _price(rec, currency)
    other = "USD" if currency == "CNY" else "CNY"
    rec = cat.price(kind, subject, other, term)
    return convert(_price(rec, other), currency) if rec is not None else None


def part_price(cat: Any, part_id: str, currency: str) -> Price | None:
    part = cat.part(part_id)
    if currency in part.price:
        return _price(part.price[currency], currency)
    for other, rec in part.price.items():
        return convert(_price(rec, other), currency)
    return None


def line(item: Any, part: str | None, qty: float, unit: str, price: Price | None, note: Any = "") -> BomLine:
    total = None if price is None else {k: qty * getattr(price, k) for k in ("low", "typical", "high")}
    return BomLine(item=item, part=part, quantity=qty, unit=unit, unit_price=price, total=total, note=note)


def totals(lines: list[BomLine]) -> tuple[dict[str, float], list[str]]:
    out = {"low": 0.0, "typical": 0.0, "high": 0.0}
    unpriced = []  # each part once: one cable part may serve several fabrics' lines
    for ln in lines:
        if ln.total is None:
            name = ln.part or (as_msg(ln.item_msg) if ln.item_msg else ln.item)
            if ln.quantity and not ln.note.startswith("included") and name not in unpriced:
                unpriced.append(name)
            continue
        for k in out:
            out[k] += ln.total[k]
    return out, unpriced
