"""benchmarks/network_payload.py (docs/known-gaps.md 280 (a)): the network-bound part of a predicted step, read from its
growth with the network's time a byte, is there for a data-parallel group across hosts and nil on one host; the
implied factor and the what-ifs are the arithmetic the listing states; the development set's what-if reaches
perf_validation's rows."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as hs

import accuracy_bands as ab
import network_payload as npl
from trainsizer.catalog import load_catalog


def _row(job: dict[str, Any], err: float = 0.0) -> ab.Row:
    """A held-out time row of `job` whose tokens/s reads `err` (+ = predicted too fast)."""
    return ab.Row("t", "r", "tokens_per_s_per_gpu", 1.0, 1.0 + err, job)


def _job(count: int, network: str = "roce-200") -> dict[str, Any]:
    return {"model": "llama-3.1-8b", "data": {"tokens": 1.0e9}, "seq_len": 4096,
            "global_batch": {"sequences": 2 * count},
            "hardware": {"accelerator": "a100-sxm-80gb", "count": count, "per_node": 8, "network": network},
            "strategy": {"micro_batch": 1, "recompute": "full", "distributed_optimizer": True,
                         "framework": "megatron", "grad_reduce_overlap": False}}


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def test_a_data_parallel_group_across_hosts_has_a_network_bound_part(catalog):
    c = npl.crossing(_row(_job(32)), "megatron/dense/ampere/multi", catalog)
    assert c is not None and c.kind == "roce" and c.network == "roce-200" and c.gpu == "ampere"
    assert 0.0 < c.nic_s < c.step_s
    # the payload a GPU as charged: one 200 Gb/s port's line rate x the catalog's planning efficiency
    assert c.payload_gb_s == pytest.approx(25.0 * catalog.networks["roce-200"].efficiency_planning, rel=1e-6)


def test_one_host_has_none(catalog):
    c = npl.crossing(_row(_job(8)), "megatron/dense/ampere/node", catalog)
    assert c is None or c.nic_s == pytest.approx(0.0, abs=1e-9)


@given(hs.floats(-0.5, 2.0), hs.floats(1.0, 1e4), hs.floats(0.01, 0.9))
def test_the_implied_factor_puts_the_whole_miss_on_the_network_bound_part(err, step, share):
    nic = share * step
    f = npl.implied_factor(err, step, nic)
    # the step with that part taken f times is the measured one: step x (1 + err)
    assert step - nic + f * nic == pytest.approx(step * (1.0 + err), rel=1e-9)


def test_a_slower_network_lowers_the_error_of_a_row_across_hosts_only(catalog):
    """error_at_scale: at x1 the row's own error; at a lower payload a GPU the predicted step grows where the network
    bounds part of it, so a too-fast error falls; a one-host row does not move."""
    across = npl.crossing(_row(_job(32), 0.1), "c", catalog)
    assert npl.error_at_scale(across, 1.0) == pytest.approx(0.1, abs=1e-12)
    assert npl.error_at_scale(across, 0.5) < 0.1 - 1e-3
    one = npl.crossing(_row(_job(8), 0.1), "c", catalog)
    if one is not None:
        assert npl.error_at_scale(one, 0.5) == pytest.approx(0.1, abs=1e-9)


def test_the_development_what_if_reaches_perf_validations_rows():
    """At x1 the wrapped step is perf_validation's own (its MAPE as it prints it); at x0.5 the network-bound ZeRO-3
    rows of Narayanan et al. move (the what-if reaches the rows perf_validation builds itself)."""
    import perf_validation as pv
    from harness import mape

    table = npl.development((1.0, 0.5))
    assert table["all"][0] == pytest.approx(mape([c for c in pv.throughput_cases() if not c.skipped]), abs=1e-9)
    assert abs(table["Narayanan21 T2 ZeRO-3"][1] - table["Narayanan21 T2 ZeRO-3"][0]) > 1.0
