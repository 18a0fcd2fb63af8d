"""The report prices an option the way the plan ranked it (score.cost_basis), not by the amortised buy share."""

from trainsizer.render.report.facts import pick_cost

RENT = {"low": 5.5, "mid": 6.4, "high": 7.4, "currency": "USD"}
BUY = {"low": 2.7, "mid": 2.85, "high": 3.0, "capex_total": 8565.0, "electricity": 0.83, "currency": "USD"}


def option(basis=None):
    o = {"cost": {"currency": "USD", "rent": RENT, "buy": BUY}}
    if basis:
        o["score"] = {"metric": "cost", "cost_basis": basis}
    return o


def test_either_follows_the_plans_basis_not_the_amortised_share():
    # the plan ranks a purchase at capex + electricity ($8,566), so renting ($6.41) was its choice
    assert pick_cost(option("rent"), "either") == ("rent", RENT)
    assert pick_cost(option("buy"), "either") == ("buy", BUY)


def test_either_without_a_basis_takes_the_cheaper_mid():
    assert pick_cost(option(), "either") == ("buy", BUY)


def test_rent_or_buy_asked_for_is_kept_whatever_the_basis():
    assert pick_cost(option("rent"), "buy") == ("buy", BUY)
    assert pick_cost(option("buy"), "rent") == ("rent", RENT)
