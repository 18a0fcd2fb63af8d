from __future__ import annotations

import pytest

from trainsizer.errors import SpecError
from trainsizer.estimate.cost import buy_cost, rent_cost


def test_rent_is_gpu_hours_times_price():
    c = rent_cost(1000.0, 2.5)
    assert c.total == 2500.0 and c.mode == "rent"


def test_buy_amortises_capex_and_adds_energy():
    c = buy_cost(wall_hours=8760.0, capex=4e6, energy_kwh=1e6, price_per_kwh=0.1, years=4.0)
    assert c.compute == pytest.approx(1e6)
    assert c.energy == pytest.approx(1e5)
    assert c.to_dict()["total"] == pytest.approx(1.1e6)


def test_bad_inputs():
    with pytest.raises(SpecError):
        rent_cost(10, -1)
    with pytest.raises(SpecError):
        buy_cost(1, 1, 1, 1, years=0)
