from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainsizer.accept.busbw import algbw_gb_s, bus_factor, busbw_gb_s
from trainsizer.errors import SpecError


def test_nccl_tests_factors():
    assert bus_factor("all_reduce", 8) == pytest.approx(1.75)
    assert bus_factor("all_gather", 8) == pytest.approx(0.875)
    assert bus_factor("reduce_scatter", 2) == pytest.approx(0.5)
    assert bus_factor("broadcast", 8) == 1.0
    assert bus_factor("all_reduce", 1) == 0.0


def test_published_h200_example():
    # nccl-tests row: 16 GiB all-reduce on 8 GPUs at 66132 us -> algbw 259.78, busbw 454.6 GB/s
    size, t = 17179869184, 66132e-6
    assert algbw_gb_s(size, t) == pytest.approx(259.78, abs=0.01)
    assert busbw_gb_s("all_reduce", size, t, 8) == pytest.approx(259.78 * 1.75, abs=0.02)


@given(st.sampled_from(["all_reduce", "all_gather", "reduce_scatter"]), st.integers(1, 4096),
       st.integers(1, 2**34), st.floats(1e-6, 10.0))
def test_busbw_bounds(op, n, size, t):
    alg = algbw_gb_s(size, t)
    bus = busbw_gb_s(op, size, t, n)
    assert 0 <= bus <= 2 * alg + 1e-9
    assert busbw_gb_s(op, size, t, n + 1) >= bus - 1e-9  # grows with the rank count


def test_bad_inputs():
    with pytest.raises(SpecError, match="unknown collective"):
        bus_factor("allreduce", 8)
    with pytest.raises(SpecError):
        bus_factor("all_reduce", 0)
