from __future__ import annotations

import pytest

from trainsizer.errors import SpecError
from trainsizer.estimate.energy import energy, gpu_power_w


def test_power_between_idle_and_tdp():
    assert gpu_power_w(700, 0.0) == pytest.approx(175)
    assert gpu_power_w(700, 1.0) == pytest.approx(700)
    assert gpu_power_w(700, 2.0) == pytest.approx(700)


def test_energy_kwh():
    e = energy(1000, 24.0, 700, utilisation=1.0, pue=1.0, node_overhead_fraction=0.0)
    assert e.kwh == pytest.approx(1000 * 0.7 * 24)
    assert energy(1000, 24.0, 700, pue=1.5).kwh > energy(1000, 24.0, 700, pue=1.1).kwh


def test_bad_pue():
    with pytest.raises(SpecError):
        energy(8, 1, 700, pue=0.9)
