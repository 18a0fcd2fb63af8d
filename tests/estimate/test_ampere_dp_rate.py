"""benchmarks/ampere_dp_rate.py (docs/known-gaps.md 323): the data-parallel rate what-if scales only the family's
data-parallel collectives, leaves the estimate as it found them, and carries a row's error with its step."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
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


def _job(accelerator: str, count: int = 8, **strategy: Any) -> dict[str, Any]:
    return {"model": "llama-3.1-8b", "method": "full", "data": {"tokens": 1.0e9}, "seq_len": 1024,
            "global_batch": {"sequences": 2 * count}, "precision": "bf16",
            "hardware": {"accelerator": accelerator, "count": count},
            "strategy": {"framework": "hf", "micro_batch": 1, "recompute": "full", **strategy}}


def _terms(job: dict[str, Any]) -> dict[str, float]:
    sc = resolve_job(job, load_catalog())
    out = step_time.step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
    return {k: float(np.asarray(out[k]).reshape(-1)[0]) for k in ("step_s", "compute", "dp_comm_serial")}


def test_dp_rate_slows_the_family_s_data_parallel_chain_only_and_restores_the_terms():
    saved = {name: getattr(step_time, name) for name in adr.DP_TERMS}
    a100, h100 = _job("a100-sxm-80gb", fsdp="full"), _job("h100-sxm-80gb", fsdp="full")
    base_a, base_h = _terms(a100), _terms(h100)
    with adr.dp_rate(0.5):
        half_a, half_h = _terms(a100), _terms(h100)
    assert {name: getattr(step_time, name) for name in adr.DP_TERMS} == saved  # restored
    assert _terms(a100) == base_a
    # the chain's bandwidth share doubles (its ring latencies and copies stay): more than 1.5x, at most 2x
    assert 1.5 * base_a["dp_comm_serial"] < half_a["dp_comm_serial"] <= 2.0 * base_a["dp_comm_serial"] + 1e-12
    assert half_a["step_s"] > base_a["step_s"] and half_a["compute"] == base_a["compute"]
    assert half_h == base_h  # a part outside the family as shipped


def test_dp_rate_reaches_ddp_reductions_and_leaves_one_gpu_alone():
    ddp = _job("a800-sxm-80gb", count=4)
    base = _terms(ddp)
    with adr.dp_rate(0.5):
        half = _terms(ddp)
    assert half["dp_comm_serial"] > 1.5 * base["dp_comm_serial"]
    one = _job("a100-sxm-80gb", count=1)
    before = _terms(one)
    with adr.dp_rate(0.5):
        assert _terms(one) == before


def test_dp_rate_restores_after_an_error_and_refuses_a_non_positive_factor():
    saved = {name: getattr(step_time, name) for name in adr.DP_TERMS}
    with pytest.raises(RuntimeError), adr.dp_rate(0.5):
        raise RuntimeError("inside")
    assert {name: getattr(step_time, name) for name in adr.DP_TERMS} == saved
    with pytest.raises(ValueError, match="positive factor"), adr.dp_rate(0.0):
        pass


def test_scaled_error_carries_a_row_s_error_with_its_step():
    assert adr.scaled_error(0.20, 1.0, 1.0) == pytest.approx(0.20)
    assert adr.scaled_error(0.20, 1.0, 1.2) == pytest.approx(0.0)  # a step 1.2x longer takes +20% to exact
    assert adr.scaled_error(-0.10, 2.0, 1.0) == pytest.approx(0.80)


@dataclass
class _Row:
    """The fields of accuracy_bands.Row the listing reads."""

    job: dict[str, Any]
    benchmark: str = "perf_heldout64"
    row_id: str = "fmsorca_x"
    quantity: str = "time"
    err: float = 0.0
    overlay: str = ""
    keys: tuple[str, ...] = field(default=())


def test_family_rows_and_groupings():
    rows = [(_Row(_job("a100-sxm-80gb")), ("hf/dense/ampere/node", "hf/dense/ampere", "hf/dense", "hf")),
            (_Row(_job("a100-sxm-40gb", count=1)), ("hf/dense/ampere/node",)),
            (_Row(_job("h100-sxm-80gb")), ("hf/dense/hopper/node",)),
            (_Row(_job("a800-sxm-80gb"), quantity="memory"), ("hf/dense/ampere/node",))]
    kept = adr.family_rows(rows, adr.FAMILY)
    assert [r.job["hardware"]["accelerator"] for r, _ in kept] == ["a100-sxm-80gb"]
    assert adr.by_class(*kept[0]) == ("hf/dense/ampere/node", "hf/dense/ampere")
    assert adr.by_family(*kept[0]) == ("perf_heldout64 fmsorca",)
    assert adr.in_family("a800-sxm-80gb", adr.FAMILY) and not adr.in_family("h800-sxm-80gb", adr.FAMILY)
    groups = adr.summary([(r, k, [10.0, -4.0]) for r, k in kept] + [(kept[0][0], kept[0][1], [-20.0, 2.0])],
                         adr.by_family)
    assert groups == [("perf_heldout64 fmsorca", 2, [15.0, 3.0], [-5.0, -1.0])]


def test_family_arg():
    assert adr.family_arg([]) == adr.FAMILY
    assert adr.family_arg(["--family", "h100,h800"]) == ("h100", "h800")
    with pytest.raises(SystemExit, match="--family needs"):
        adr.family_arg(["--family"])


def test_chain_multiple_reads_what_the_step_leaves_for_the_chain():
    t = {"step_s": 1.0, "dp_comm": 0.2, "dp_comm_serial": 0.25, "micro_batches": 2.0}
    assert adr.chain_multiple(0.0, t) == pytest.approx(0.8)  # exact row: the estimate's own exposure
    assert adr.chain_multiple(0.3, t) == pytest.approx(2.0)  # +30% fast: 0.3 s more left for the chain
    assert np.isnan(adr.chain_multiple(0.3, dict(t, dp_comm_serial=0.0)))
    assert np.isnan(adr.chain_multiple(0.3, dict(t, dp_comm_serial=0.05)))  # under CHAIN_SHARE of the step


def test_dp_terms_of_a_sharded_job():
    row = _Row(_job("a100-sxm-80gb", fsdp="full"))
    t = adr.dp_terms(row, {})
    assert t is not None and t["dp_comm_serial"] >= t["dp_comm"] > 0.0 and t["micro_batches"] >= 1.0
    assert adr.dp_terms(_Row({"model": "no-such-model"}), {}) is None


def test_dp_rate_interference_charges_more_of_the_hidden_chain_on_the_family_only():
    a100 = _job("a100-sxm-80gb", fsdp="full", micro_batch=8)
    h100 = _job("h100-sxm-80gb", fsdp="full", micro_batch=8)
    base_a, base_h = _terms(a100), _terms(h100)
    with adr.dp_rate(1.0, interference=adr.TRACE_INTERFERENCE):
        more_a, more_h = _terms(a100), _terms(h100)
    assert more_a["step_s"] > base_a["step_s"] and more_a["dp_comm_serial"] == base_a["dp_comm_serial"]
    assert more_h == base_h
    assert adr.TRACE_INTERFERENCE == pytest.approx(1.0 - 1.0 / 1.763, abs=1e-3)
