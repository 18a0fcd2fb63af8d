"""FSDP1's forward hooks on each decoder-layer unit run with the GPU idle behind transformers' eager MoE loop under a
reentrant checkpoint around the unit (step_time._fsdp1_unit_hooks_s, weighed by _fsdp_run_ahead_lost; docs/known-gaps.md
273 (e)): 26 calls a unit and forward pass (perf_constants.yaml lora.fsdp1_unit_calls), the forward and the recompute,
and the pre-backward hook's 17 after the recompute's last sync (283 (e)), at the launch-bound eager op."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.estimate import step_time
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.host_sync import host_figure
from trainsizer.evaluate import evaluate
from trainsizer.scenario import resolve_job

CAT = load_catalog([])


def _job(model: str = "mixtral-8x7b", impl: str = "eager", **strategy) -> dict:
    st = {"micro_batch": 1, "recompute": "full", "framework": "hf", "fsdp": "full",
          "checkpoint_impl": "reentrant_outer", "experts_implementation": impl, **strategy}
    if model != "mixtral-8x7b":
        st.pop("experts_implementation")
    return {"model": model, "method": "full", "data": {"tokens": 1e8}, "seq_len": 512,
            "global_batch": {"sequences": 32}, "precision": "bf16",
            "hardware": {"accelerator": "a100-sxm-80gb", "count": 8}, "strategy": st}


def _dp_comm(job: dict) -> float:
    return float(evaluate(resolve_job(job, CAT), CAT)["time"]["breakdown_s"]["dp_comm"])


def _added(monkeypatch, job: dict) -> float:
    """dp_comm seconds a step the hooks add: as shipped less with the term at 0."""
    with_hooks = _dp_comm(job)
    monkeypatch.setattr(step_time, "_fsdp1_unit_hooks_s", lambda x, n_coll: 0.0)
    without = _dp_comm(job)
    monkeypatch.undo()
    return with_hooks - without


def test_every_unit_pays_its_forward_hooks_twice_and_its_pre_backward_hook_once_a_micro_batch(monkeypatch):
    """32 units x (26 calls x 2 forward passes + the pre-backward hook's 17) x NVIDIA's launch-bound op, for each of
    the 4 micro-batches a rank runs (32 sequences over 8 ranks at micro-batch 1)."""
    calls = load_constants().raw["lora"]["fsdp1_unit_calls"]
    assert calls["pre_backward"] < calls["backward"]
    expected = 4 * 32 * (calls["forward"] * 2 + calls["pre_backward"]) * host_figure("launch_bound_op_s", "nvidia")
    assert _added(monkeypatch, _job()) == pytest.approx(expected, rel=1e-6)


def test_none_where_the_cpu_keeps_its_run_ahead_or_off_fsdp1(monkeypatch):
    """grouped_mm (no host sync in the MoE layer), a dense model, the checkpoint inside the unit and DeepSpeed's
    engine (its own hooks, 262) pay none."""
    assert _added(monkeypatch, _job(impl="grouped_mm")) == 0.0
    assert _added(monkeypatch, _job(model="llama-3.1-8b")) == 0.0
    assert _added(monkeypatch, _job(checkpoint_impl="non_reentrant")) == 0.0
    assert _added(monkeypatch, _job(fsdp="none", zero=3, checkpoint_impl=None)) == 0.0
