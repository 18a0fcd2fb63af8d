"""benchmarks/a2a_cross_host.py (docs/known-gaps.md 265 (a)): the all-to-all part the NIC bounds, read from the estimate
from its growth with the network's time a byte, is there for an EP group across hosts and nil inside one host; the implied factor
and the error-on-share slope are the arithmetic the listing states."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as hs

from trainsizer.catalog import load_catalog

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import a2a_cross_host as ax  # noqa: E402


@dataclass
class _Row:
    """The fields of accuracy_bands.Row the listing reads."""

    job: dict[str, Any]
    err: float = 0.0
    benchmark: str = "t"
    row_id: str = "r"
    overlay: str = ""
    quantity: str = "time"


def _job(count: int, ep: int, dispatcher: str = "alltoall") -> dict[str, Any]:
    return {"model": "qwen3-30b-a3b", "data": {"tokens": 1.0e9}, "seq_len": 4096,
            "global_batch": {"sequences": 512},
            "hardware": {"accelerator": "h100-sxm-80gb", "count": count, "per_node": 8, "network": "ib-ndr400"},
            "strategy": {"ep": ep, "micro_batch": 1, "recompute": "none", "distributed_optimizer": True,
                         "framework": "megatron-core", "moe_dispatcher": dispatcher}}


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.mark.parametrize("dispatcher", ["alltoall", "flex"])
def test_an_ep_group_across_hosts_has_a_nic_bound_part(catalog, dispatcher):
    c = ax.crossing(_Row(_job(16, 16, dispatcher)), catalog)
    assert c is not None and c.kind == "ib" and c.ep_domains == 2.0
    assert 0.0 < c.nic_s <= c.a2a_s < c.step_s
    # the off-host payload a GPU has: one NDR400 port's NCCL payload x the network's all-to-all share
    net = catalog.networks["ib-ndr400"]
    assert c.off_host_gb_s == pytest.approx(47.0 * net.alltoall_payload_share, rel=0.02)


def test_an_ep_group_inside_one_host_has_none(catalog):
    c = ax.crossing(_Row(_job(16, 8)), catalog)
    assert c is not None and c.a2a_s > 0.0 and c.nic_s == 0.0 and c.ep_domains == 1.0


def test_a_dense_job_runs_no_all_to_all(catalog):
    job = _job(16, 1)
    job["model"] = "llama-3.1-8b"
    assert ax.crossing(_Row(job), catalog) is None


@given(hs.floats(-0.5, 2.0), hs.floats(1.0, 1e4), hs.floats(0.01, 0.9))
def test_the_implied_factor_puts_the_whole_miss_on_the_nic_bound_part(err, step, share):
    nic = share * step
    f = ax.implied_factor(err, step, nic)
    # the step with that part taken f times is the measured one: step x (1 + err)
    assert step - nic + f * nic == pytest.approx(step * (1.0 + err), rel=1e-9)


def test_the_slope_reads_a_miss_that_grows_with_the_share():
    def cross(err: float, share: float) -> ax.Crossing:
        return ax.Crossing(_Row({}, err=err), "n", "ib", 40.0, 10.0, share * 10.0, share * 10.0, 2.0)

    shares = np.array([0.05, 0.1, 0.3, 0.5])
    a, b = ax.slope([cross(0.02 + 0.4 * s, s) for s in shares])
    assert a == pytest.approx(0.02) and b == pytest.approx(0.4)
    assert np.isnan(ax.slope([cross(0.1, 0.2)] * 3)[1])  # one share: no slope


def test_a_lower_all_to_all_share_slows_the_nccl_path_only(catalog):
    """error_at_share: at the network's own share the row's error is unchanged; a lower share slows NCCL's
    all-to-all across hosts (the predicted step grows, so the error falls), and leaves the flex dispatcher's (DeepEP / HybridEP) charge alone."""
    for dispatcher, moves in (("alltoall", True), ("flex", False)):
        c = ax.crossing(_Row(_job(16, 16, dispatcher), err=0.1), catalog)
        share = catalog.networks["ib-ndr400"].alltoall_payload_share
        assert ax.error_at_share(c, share) == pytest.approx(0.1, abs=1e-9)
        lower = ax.error_at_share(c, 0.5 * share)
        assert (lower < 0.1 - 1e-3) if moves else lower == pytest.approx(0.1, abs=1e-9), dispatcher


def test_no_development_row_sends_an_all_to_all_across_hosts():
    """perf_blackwell's MoE jobs (the development set's only ones) keep every all-to-all inside a host or an NVL72
    domain, so a change to the network's all-to-all rate cannot move the development set (known-gaps 265 (a))."""
    with_a2a, crossing = ax.development_rows()
    assert with_a2a >= 10 and crossing == 0
