from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

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


def test_a_rental_bills_whole_units_for_at_least_the_shortest_term():
    """A 10-hour job on nodes rented by the month pays the month; 12 GPUs on 8-GPU units pay 16."""
    from trainsizer.estimate.cost import billed_gpu_hours

    assert billed_gpu_hours(8, 10.0) == 80.0  # on demand: what is used
    assert billed_gpu_hours(8, 10.0, 8, 730.0) == 8 * 730.0
    assert billed_gpu_hours(12, 1000.0, 8, 730.0) == 16 * 1000.0
    assert billed_gpu_hours(128, 5.0, 2) == 128 * 5.0


@given(st.integers(1, 4096), st.floats(0.01, 1e5), st.none() | st.integers(1, 72), st.none() | st.floats(1, 9000))
def test_billed_gpu_hours_never_undercut_use(gpus, hours, unit, least):
    from trainsizer.estimate.cost import billed_gpu_hours

    billed = billed_gpu_hours(gpus, hours, unit, least)
    assert billed >= gpus * hours * (1 - 1e-12)
    assert billed <= (gpus + (unit or 1) - 1) * max(hours, least or 0.0) * (1 + 1e-12)
