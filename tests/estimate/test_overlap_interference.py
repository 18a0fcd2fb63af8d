"""benchmarks/overlap_interference.py (docs/known-gaps.md 335): the implied interference of an overlapped pair, the
microbenchmark read through the estimate's own terms, and the HBM-share what-if that leaves the estimate as it found it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from trainsizer.catalog import load_catalog
from trainsizer.estimate import step_time
from trainsizer.scenario import resolve_job

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import ampere_dp_rate as adr  # noqa: E402
import overlap_interference as oi  # noqa: E402


def _job(accelerator: str, count: int = 8, **strategy: Any) -> dict[str, Any]:
    return {"model": "llama-3.1-8b", "method": "full", "data": {"tokens": 1.0e9}, "seq_len": 1024,
            "global_batch": {"sequences": 2 * count}, "precision": "bf16",
            "hardware": {"accelerator": accelerator, "count": count},
            "strategy": {"framework": "hf", "micro_batch": 1, "recompute": "full", **strategy}}


def _step_s(job: dict[str, Any]) -> float:
    sc = resolve_job(job, load_catalog())
    out = step_time.step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
    return float(np.asarray(out["step_s"]).reshape(-1)[0])


def test_implied_share_reads_the_overlap_over_the_longer_as_a_share_of_the_shorter():
    # compute 2 s, collective 1 s: overlapped in 2 s hides the collective whole, in 3 s gains nothing
    assert oi.implied_share(3.0, 2.0, 1.0) == pytest.approx(0.0)
    assert oi.implied_share(3.0, 3.0, 1.0) == pytest.approx(1.0)
    assert oi.implied_share(3.0, 2.25, 1.0) == pytest.approx(0.25)
    # the longer side may be the collective's
    assert oi.implied_share(3.0, 2.5, 2.0) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="comm_s"):
        oi.implied_share(1.0, 0.8, 1.5)


def test_the_microbenchmark_s_gather_is_the_shipped_ring_on_eight_h100s():
    t = oi.microbench_terms()
    # 512 MiB gathered over 8 ranks: 7/8 of it through the ring at ~0.8 x 450 GB/s, plus 7 ring latencies
    assert 1.25e-3 < t["gather_s"] < 1.4e-3
    assert t["shipped"] == pytest.approx(0.20)
    # the measured sequential pair (2.96 ms) holds the estimate's gather, and with it a matmul between the
    # estimate's rate and the part's dense peak (989 TFLOP/s): the reading of 335 needs both splits positive
    matmul_s = oi.MICROBENCH["sequential_ms"] / 1e3 - t["gather_s"]
    assert 2.0 * 8192.0**3 / 989e12 < matmul_s < t["matmul_s"]


def test_hbm_share_charges_by_the_group_s_rate_and_restores_the_terms():
    saved = {name: getattr(step_time, name) for name in adr.DP_TERMS}
    fsdp = _job("a100-sxm-80gb", fsdp="full")
    base = _step_s(fsdp)
    with oi.hbm_share(0.0):
        none = _step_s(fsdp)
    with oi.hbm_share(3.0):
        three = _step_s(fsdp)
    assert {name: getattr(step_time, name) for name in adr.DP_TERMS} == saved  # restored
    assert _step_s(fsdp) == base
    # no interference at all is faster than the shipped 0.20, the 8-GPU NVLink share at 3 bytes (~0.44) slower
    assert none < base < three
    assert 0.25 < oi.node_share("a100-sxm-80gb", 2.0) < oi.node_share("a100-sxm-80gb", 3.0) <= 1.0
    one = _job("a100-sxm-80gb", count=1)
    before = _step_s(one)
    with oi.hbm_share(3.0):
        assert _step_s(one) == before  # one GPU: no data-parallel collective to charge
    with pytest.raises(ValueError, match="hbm_share"):
        with oi.hbm_share(-1.0):
            pass
