"""strategy.moe_sync_free: routed experts that take their token splits on the device (Primus-Turbo's ragged grouped GEMM,
AMD-AGI/Primus PR 923) issue no per-expert launches after the MoE layer's host sync (step_time._moe_sync_free); the
layer keeps its per-pass host floor, and the option is Megatron-Core's (refused under other frameworks)."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError
from trainsizer.evaluate import evaluate
from trainsizer.scenario import resolve_job

CAT = load_catalog([])


def _job(model: str = "gpt-oss-20b", **strategy) -> dict:
    return {"model": model, "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 8192,
            "global_batch": {"sequences": 32}, "precision": "fp8", "fp8_recipe": "tensorwise",
            "hardware": {"accelerator": "mi355x", "count": 8},
            "strategy": {"micro_batch": 4, "recompute": "none", "framework": "megatron-core", **strategy}}


def _step(**kw) -> float:
    job = _job(**kw)
    return float(evaluate(resolve_job(job, CAT), CAT)["time"]["step_s"])


def test_sync_free_experts_drop_the_per_expert_host_cost_and_keep_the_layer_floor():
    plain, free, graphed = _step(), _step(moe_sync_free=True), _step(cuda_graphs="full_iteration")
    assert graphed < free < plain  # a full-iteration graph also drops the per-layer host floor
    assert _step(moe_sync_free=False) == plain


def test_sync_free_changes_nothing_for_a_dense_model():
    assert _step(model="llama-3.1-8b", moe_sync_free=True) == _step(model="llama-3.1-8b")


def test_sync_free_is_refused_outside_megatron_core():
    with pytest.raises(TrainsizerError, match="moe_sync_free"):
        _step(framework="torchtitan", moe_sync_free=True)


def _h100_step(ep: int, **strategy) -> float:
    """Qwen3-30B-A3B on 16 H100 under Megatron-Core's alltoall dispatcher, EP `ep` (128 / ep local experts)."""
    job = {"model": "qwen3-30b-a3b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
           "global_batch": {"sequences": 64}, "precision": "bf16",
           "hardware": {"accelerator": "h100-sxm-80gb", "count": 16, "network": "ib-ndr400"},
           "strategy": {"micro_batch": 1, "recompute": "none", "framework": "megatron-core", "ep": ep,
                        "moe_dispatcher": "alltoall", **strategy}}
    return float(evaluate(resolve_job(job, CAT), CAT)["time"]["step_s"])


def test_device_side_splits_save_the_host_cost_of_each_local_expert():
    # experts that take their splits on the device (moe_sync_free) issue no per-expert launches after a sync: what
    # they save is each local expert's, so twice the local experts (EP 8 against EP 16) save about twice as much
    saved = {ep: _h100_step(ep) - _h100_step(ep, moe_sync_free=True) for ep in (8, 16)}
    assert saved[16] > 0.0
    assert saved[8] == pytest.approx(2.0 * saved[16], rel=0.05)
