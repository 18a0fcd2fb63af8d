"""An option's cost as every output shows it (CLI plan table, report, Excel, web page), with the basis it is on:

- rent: GPU-hours x price per GPU-hour (`cost.rent`);
- buy_full: the accelerators' purchase price + this job's electricity, nothing credited for the hardware
  afterwards: what the plan ranks options by and checks the budget against (evaluate.job_cost, `score.cost`);
- buy_amortised: this job's share of the purchase, straight-line over `cost.buy.amortisation_years`, + its
  electricity (evaluate._costs, `cost.buy.low / mid / high`).

A plan's figure is the one it ranked the option by (`score.cost_basis`); the amortised share is shown beside a
bought option, under its own label, never in its place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from trainsizer.render.i18n import t

BASES = ("rent", "buy_full", "buy_amortised")


def price_age(date: str, age_days: object, stale: bool, projection: bool, lang: str) -> str:
    """'2025 (700 days) ⚠ older than a year': a price's date, its age, and the warnings the catalog gives it
    (catalog.price_age: a year or more is stale); `estimate` and `catalog show prices` print it."""
    flags = ([t("price_stale", lang)] if stale else []) + ([t("price_projection", lang)] if projection else [])
    age = date + t("paren", lang).format(text=f"{age_days} {t('days', lang)}")
    return " ".join([age, *(f"⚠ {f}" for f in flags)])
# score.cost_basis / pareto[].cost_basis of a plan (plan.schema) -> the basis shown
SCORE_BASIS = {"rent": "rent", "buy": "buy_full"}


@dataclass(frozen=True)
class Cost:
    """One cost figure (typical, with its low / high where the prices give them) and its basis."""

    basis: str  # one of BASES
    low: float | None
    mid: float
    high: float | None
    currency: str
    years: float | None = None  # amortisation period of buy_amortised
    converted: bool = False  # from the catalog's other currency, as the plan ranked it (plan.core.converted_cost)

    def label(self, lang: str) -> str:
        """'rent' / 'buy, full price' / 'buy, amortised over 4 years' (en / zh); ', converted' where it was."""
        text = basis_label(self.basis, lang, self.years)
        return t("cost_converted", lang).format(label=text) if self.converted else text


def basis_label(basis: str, lang: str, years: float | None = None) -> str:
    text = t(f"cost_basis_{basis}", lang)
    return text.format(years=f"{years:g}") if basis == "buy_amortised" else text


def _block(o: Mapping, kind: str) -> Mapping | None:
    block = (o.get("cost") or {}).get(kind)
    return block if isinstance(block, Mapping) and block.get("mid") is not None else None


def _currency(o: Mapping, block: Mapping) -> str:
    return str(block.get("currency") or (o.get("cost") or {}).get("currency") or "")


def rent(o: Mapping) -> Cost | None:
    block = _block(o, "rent")
    if block is None:
        return None
    return Cost("rent", block.get("low"), float(block["mid"]), block.get("high"), _currency(o, block))


def buy_full(o: Mapping) -> Cost | None:
    """Purchase (quantity x unit price, + the host RAM an offloaded layout adds, low / typical / high) + the job's
    electricity (evaluate.job_cost)."""
    block = _block(o, "buy")
    if block is None or block.get("capex_total") is None:
        return None
    power = float(block.get("electricity") or 0.0)
    low, high = ((v + power if v is not None else None) for v in capex_bounds(block))
    return Cost("buy_full", low, float(block["capex_total"]) + power, high, _currency(o, block))


def capex_bounds(block: Mapping) -> tuple[float | None, float | None]:
    """(low, high) purchase price of a buy block: quantity x the unit price's low / high + the host RAM block's
    (evaluate.host_ram_block); None where the unit price gives no such bound."""
    up, qty = block.get("unit_price") or {}, block.get("quantity")
    ram = block.get("host_ram") or {}
    return tuple(qty * up[k] + float(ram.get(k) or 0.0) if qty and up.get(k) is not None else None
                 for k in ("low", "high"))  # type: ignore[return-value]


def buy_amortised(o: Mapping) -> Cost | None:
    block = _block(o, "buy")
    if block is None:
        return None
    return Cost("buy_amortised", block.get("low"), float(block["mid"]), block.get("high"), _currency(o, block),
                block.get("amortisation_years"))


def ranked(o: Mapping, procurement: str = "rent") -> Cost | None:
    """The figure the plan ranked the option by (score.cost_basis), in the plan's currency (a part priced in the
    other one converted as the plan converted it: score.cost); a plan without one (hand-written or older): the basis
    the job asked for, for `either` the cheaper."""
    cost = _ranked(o, procurement)
    k = _rate(o, cost)
    return cost if cost is None or k is None else _converted(cost, k, str(o["score"]["currency"]))


def _rate(o: Mapping, cost: Cost | None) -> float | None:
    """Plan-currency units per unit of `cost` (the ranked figure) where the plan converted it (score.cost in another
    currency than the option's catalog price), else None."""
    score = o.get("score") or {}
    if cost is None or not score.get("currency") or score["currency"] == cost.currency or not score.get("cost") \
            or not cost.mid:
        return None
    return float(score["cost"]) / cost.mid


def fx_rate(o: Mapping, procurement: str = "rent") -> float | None:
    """Plan-currency units per unit of the catalog's currency where the plan converted the option's ranked figure
    (the BOM's dated rate, recovered from the plan's own figures), else None."""
    return _rate(o, _ranked(o, procurement))


def _converted(cost: Cost, k: float, currency: str) -> Cost:
    return Cost(cost.basis, cost.low * k if cost.low is not None else None, cost.mid * k,
                cost.high * k if cost.high is not None else None, currency, cost.years, converted=True)


def _ranked(o: Mapping, procurement: str) -> Cost | None:
    basis = (o.get("score") or {}).get("cost_basis")
    if basis == "rent":
        return rent(o)
    if basis == "buy":
        return buy_full(o) or buy_amortised(o)
    found = [c for c in (rent(o) if procurement != "buy" else None,
                         (buy_full(o) or buy_amortised(o)) if procurement != "rent" else None) if c]
    if not found:
        found = [c for c in (rent(o), buy_full(o) or buy_amortised(o)) if c]
    return min(found, key=lambda c: c.mid) if found else None


def amortised_beside(o: Mapping, procurement: str = "rent") -> Cost | None:
    """The amortised share of a bought option, shown beside its full price (None for a rented one), in the currency
    the full price is shown in: a part the catalog prices in the other currency converted at the rate the plan
    converted its full price (one FX rate, buildout.bom.fx, on the catalog figures both are made of)."""
    full = _ranked(o, procurement)
    share = buy_amortised(o) if full is not None and full.basis == "buy_full" else None
    k = _rate(o, full)
    return share if share is None or k is None else _converted(share, k, str(o["score"]["currency"]))
