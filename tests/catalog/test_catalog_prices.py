"""Price coverage and sanity of the shipped price ranges (catalog/data/prices.yaml).

What `trainsizer estimate` needs: a USD rent or purchase range for every mainstream training accelerator,
ordered ranges, traceable sources and dates, and CNY/USD pairs whose ratio is a currency ratio, not a unit slip.
"""

from __future__ import annotations

import re

import pytest

from trainsizer.catalog import load_catalog

# Accelerators a training buyer is likely to ask about; each needs a USD rent or a USD purchase range.
MAINSTREAM_TRAINING_ACCELERATORS = [
    "v100-sxm-32gb", "a100-sxm-40gb", "a100-sxm-80gb", "a100-pcie-80gb", "a10g",
    "h100-sxm-80gb", "h100-pcie-80gb", "h100-nvl-94gb", "h200-sxm-141gb", "h200-nvl-141gb", "h20",
    "b200", "gb200", "b300", "l40s", "rtx-4090", "rtx-5090", "rtx-6000-ada", "rtx-a6000",
    "mi300x", "mi325x", "mi355x", "gaudi3",
]
# Both USD rent and USD purchase (the accelerators most jobs are costed on, rent-vs-buy needs both).
RENT_AND_BUY_USD = [
    "a100-sxm-80gb", "a100-pcie-80gb", "h100-sxm-80gb", "h100-pcie-80gb", "h200-sxm-141gb", "b200", "gb200",
    "b300", "l40s", "rtx-4090", "rtx-5090", "rtx-6000-ada", "mi300x",
]
# China-market parts: the CNY figures a China buyer needs.
CNY_PURCHASE = ["h20", "h800-sxm-80gb", "a800-sxm-80gb", "ascend-910b", "h100-pcie-80gb", "l20", "rtx-4090"]
CNY_RENT = ["h20", "a800-sxm-80gb", "h100-sxm-80gb", "rtx-4090"]

# Prices added by the 2026-11-30 coverage pass: each must carry at least one dated, addressable source.
NEW_PRICE_IDS = [
    "purchase-usd-a100-pcie-80gb", "purchase-usd-h100-pcie-80gb", "purchase-usd-rtx-6000-ada",
    "purchase-usd-a800-sxm-80gb", "purchase-usd-b300", "purchase-usd-mi300x",
    "purchase-usd-mi355x", "purchase-usd-gaudi3", "purchase-cny-h800-sxm-80gb", "purchase-cny-a800-sxm-80gb",
    "rent-usd-a100-pcie-80gb", "rent-usd-a100-pcie-40gb", "rent-usd-h100-pcie-80gb", "rent-usd-h200-nvl-141gb",
    "rent-usd-b300", "rent-usd-l40s", "rent-usd-l40", "rent-usd-rtx-4090", "rent-usd-rtx-5090",
    "rent-usd-rtx-6000-ada", "rent-usd-rtx-a6000", "rent-usd-a10g", "rent-usd-v100-sxm-32gb", "rent-usd-mi300x",
    "rent-usd-mi325x",
]
# Sources that are arithmetic or recollection, not documents: never enough on their own.
NON_DOCUMENT_SOURCES = {"catalog_derivation", "memory", "catalog_author_memory"}

# CNY per USD between the two planning mids. The market FX is ~7.2, but China GPU rent is cheaper than US rent
# (H100: 13 CNY vs 3.7 USD -> 3.5) and China purchase dearer (grey market, RTX 4090 retail -> 12.5). A unit slip
# moves the ratio ~8x (per-server vs per-GPU) or to ~1 (CNY figure filed as USD); these bands catch both.
CNY_PER_USD_BAND = {"rent": (2.0, 16.0), "purchase": (4.0, 16.0)}
# Rough per-GPU magnitude bounds (USD), to catch per-server figures filed as per-GPU and cents-vs-dollars slips.
USD_MAGNITUDE = {"per_gpu_hour": (0.05, 60.0), "per_gpu": (500.0, 150_000.0)}

DATE_RE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


@pytest.mark.parametrize("acc", MAINSTREAM_TRAINING_ACCELERATORS)
def test_mainstream_accelerator_has_usd_price(cat, acc):
    assert acc in cat.accelerators
    assert cat.rent_per_gpu_hour(acc, "USD") or cat.purchase(acc, "USD"), f"no USD rent or purchase for {acc}"


@pytest.mark.parametrize("acc", RENT_AND_BUY_USD)
def test_rent_and_purchase_usd(cat, acc):
    rent, buy = cat.rent_per_gpu_hour(acc, "USD"), cat.purchase(acc, "USD")
    assert rent is not None and rent.unit == "per_gpu_hour", acc
    assert buy is not None and buy.unit == "per_gpu", acc


@pytest.mark.parametrize("acc", CNY_PURCHASE)
def test_cny_purchase(cat, acc):
    buy = cat.purchase(acc, "CNY")
    assert buy is not None and buy.unit == "per_gpu", acc


@pytest.mark.parametrize("acc", CNY_RENT)
def test_cny_rent(cat, acc):
    rent = cat.rent_per_gpu_hour(acc, "CNY")
    assert rent is not None and rent.unit == "per_gpu_hour", acc


def test_ranges_are_ordered(cat):
    bad = [(p.id, p.low, p.typical, p.high) for p in cat.prices.values()
           if not (p.low <= (p.typical if p.typical is not None else p.low) <= p.high and p.low <= p.high)]
    assert not bad
    assert all(p.low > 0 for p in cat.prices.values())


def test_price_ids_follow_convention(cat):
    for pid, p in cat.prices.items():
        assert pid == f"{p.kind}-{p.currency.lower()}-{p.subject}" + (f"-{p.term}" if p.term else ""), pid


def test_accelerator_prices_use_accelerator_units(cat):
    for p in cat.prices.values():
        if p.subject in cat.accelerators:
            expected = "per_gpu_hour" if p.kind == "rent" else "per_gpu"
            assert p.unit == expected, (p.id, p.unit)


@pytest.mark.parametrize("pid", NEW_PRICE_IDS)
def test_new_price_is_dated_and_sourced(cat, pid):
    p = cat.prices[pid]
    assert DATE_RE.match(p.date), (pid, p.date)
    for sid in p.source_ids():
        assert sid in cat.sources, (pid, sid)
    documents = [cat.source(s) for s in p.sources if s not in NON_DOCUMENT_SOURCES]
    assert documents, f"{pid} rests only on {p.sources}"
    for src in documents:
        assert src.url and src.url.startswith("http"), (pid, src.id)
    assert any(src.date for src in documents), f"{pid}: none of its sources states a date"
    if "catalog_derivation" in p.sources:
        assert p.notes, f"{pid}: a derived figure must show its arithmetic in notes"


def test_every_price_source_resolves(cat):
    for p in [*cat.prices.values(), *cat.price_points.values()]:
        missing = [s for s in p.source_ids() if s not in cat.sources]
        assert not missing, (p.id, missing)
        assert DATE_RE.match(p.date), (p.id, p.date)


@pytest.mark.parametrize("kind", ["rent", "purchase"])
def test_cny_usd_ratio_is_plausible(cat, kind):
    lo, hi = CNY_PER_USD_BAND[kind]
    checked = 0
    for acc in cat.accelerators:
        usd, cny = cat.price(kind, acc, "USD"), cat.price(kind, acc, "CNY")
        if usd is None or cny is None:
            continue
        assert usd.unit == cny.unit, acc
        ratio = cny.mid / usd.mid
        assert lo <= ratio <= hi, f"{kind} {acc}: {cny.mid} CNY / {usd.mid} USD = {ratio:.2f} CNY per USD"
        checked += 1
    assert checked >= 3  # the check must actually compare something


def test_usd_magnitudes(cat):
    for p in cat.prices.values():
        if p.currency != "USD" or p.unit not in USD_MAGNITUDE:
            continue
        lo, hi = USD_MAGNITUDE[p.unit]
        assert lo <= p.low and p.high <= hi, (p.id, p.low, p.high)


def test_rent_ordering_between_generations(cat):
    # loose market-structure checks: a newer flagship does not rent for less than the part it replaces
    def mid(acc: str) -> float:
        rec = cat.rent_per_gpu_hour(acc, "USD")
        assert rec is not None, acc
        return rec.mid

    assert mid("v100-sxm-32gb") < mid("a100-sxm-80gb") < mid("h100-sxm-80gb") < mid("b200")
    assert mid("rtx-4090") < mid("l40s") < mid("h100-pcie-80gb")
    assert mid("b200") <= mid("b300")


# Prices added or refreshed for 2026 purchasing (issue 14): each rests on at least one dated, addressable document.
ISSUE14_PRICE_IDS = [
    "purchase-cny-h200-sxm-141gb", "purchase-cny-hgx-h200-8gpu", "purchase-cny-hgx-h20-141gb-8gpu",
    "purchase-usd-gb300-nvl72", "purchase-usd-gb300", "purchase-usd-ascend-910c", "purchase-usd-cloudmatrix-384",
    "purchase-usd-rtx-pro-6000", "purchase-usd-rtx-pro-6000d", "rent-usd-rtx-pro-6000",
    "purchase-usd-h100-sxm-80gb", "purchase-usd-h200-sxm-141gb", "purchase-usd-a100-sxm-80gb", "purchase-usd-b200",
    "purchase-usd-gb200", "purchase-usd-gb200-nvl72", "purchase-usd-mi300x", "rent-usd-h100-sxm-80gb",
    "rent-usd-h200-sxm-141gb", "rent-usd-b200", "rent-usd-gb200", "purchase-usd-rtx-5090",
    "purchase-usd-dgx-a100-640gb",
]


@pytest.mark.parametrize("pid", ISSUE14_PRICE_IDS)
def test_issue14_price_rests_on_a_document(cat, pid):
    test_new_price_is_dated_and_sourced(cat, pid)


def test_rent_spreads_come_from_several_sources(cat):
    """The headline rents keep a low/typical/high spread built from more than one provider or index."""
    for acc in ("h100-sxm-80gb", "h200-sxm-141gb", "b200"):
        rent = cat.rent_usd_per_gpu_hour(acc)
        assert rent.low < rent.typical < rent.high, acc
        documents = [s for s in rent.sources if s not in NON_DOCUMENT_SOURCES]
        assert len(documents) >= 3, (acc, rent.sources)


def test_h100_typical_rent_follows_the_market_indices(cat):
    rent = cat.rent_usd_per_gpu_hour("h100-sxm-80gb")
    indices = [cat.price_points[p] for p in ("pp-h100-1y-contract-2026-03", "pp-h100-aimultiple-2026-05",
                                             "pp-h100-index-2026")]
    mids = sorted(p.mid for p in indices)
    assert rent.typical == pytest.approx(mids[1])  # the median of the three index readings


def test_a_rent_range_is_on_one_billing_term(cat):
    """A job's rental price is on demand; a committed-term (reserved) rate is its own record, read by the
    buy-vs-rent comparison only: the H100 range read 1.85 (Lambda reserved) - 6.88 (AWS on demand), so a job of
    hours was priced from a rate it cannot get."""
    job = cat.rent_usd_per_gpu_hour("h100-sxm-80gb")
    reserved = cat.rent_reserved_per_gpu_hour("h100-sxm-80gb")
    assert job.term is None and reserved.term == "reserved" and reserved.min_hours >= 730
    assert reserved.mid < job.mid and job.low > reserved.low
    assert all(p.kind == "rent" and p.min_hours for p in cat.prices.values() if p.term == "reserved")
