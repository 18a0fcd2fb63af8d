"""strategy.moe_pad_to_capacity: Megatron-Core's alltoall dispatcher with token drop padded to capacity waits for no
D2H copy of the token counts, so the dropless per-expert charge after the sync goes, but TE GroupedLinear still
launches each local expert's GEMMs (and FP8 casts) from the host: those join the layer's host floor at the launch-bound
op (step_time._padded_expert_host_s), unless CUDA graphs capture the now static-shaped layer (docs/known-gaps.md 110)."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError
from trainsizer.estimate.inputs import Strategy
from trainsizer.estimate.validate import unused_moe_options
from trainsizer.evaluate import evaluate
from trainsizer.models.arch import ModelArch
from trainsizer.scenario import resolve_job

CAT = load_catalog([])


def _step(ep: int = 8, model: str = "qwen3-30b-a3b", **strategy) -> float:
    """Qwen3-30B-A3B on 16 H100, micro-batch 1 (a host-bound layer), Megatron-Core's alltoall dispatcher at EP `ep`."""
    job = {"model": model, "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
           "global_batch": {"sequences": 64}, "precision": "bf16",
           "hardware": {"accelerator": "h100-sxm-80gb", "count": 16, "network": "ib-ndr400"},
           "strategy": {"micro_batch": 1, "recompute": "none", "framework": "megatron-core", "ep": ep,
                        **({"moe_dispatcher": "alltoall"} if ep > 1 else {}), **strategy}}
    return float(evaluate(resolve_job(job, CAT), CAT)["time"]["step_s"])


def test_padding_removes_the_wait_but_keeps_the_launches():
    dropless, padded, device_splits = _step(), _step(moe_pad_to_capacity=True), _step(moe_sync_free=True)
    # the launches stay (in the host floor), so padding sits between dropless and one kernel for all experts
    assert device_splits < padded < dropless
    assert _step(moe_pad_to_capacity=False) == dropless


def test_launches_kept_scale_with_the_local_experts():
    # EP 8 keeps 16 local experts, EP 16 keeps 8: the kept host time is larger with more local experts
    kept = {ep: _step(ep, moe_pad_to_capacity=True) - _step(ep, moe_sync_free=True) for ep in (8, 16)}
    assert kept[8] > kept[16] > 0.0


def test_cuda_graphs_capture_the_padded_experts():
    # padding makes the layer's shapes static: per-layer graphs hold the experts' launches
    graphed = _step(moe_pad_to_capacity=True, cuda_graphs="layer")
    assert graphed == pytest.approx(_step(moe_sync_free=True, cuda_graphs="layer"))


def test_padding_changes_nothing_for_a_dense_model_and_says_so():
    assert _step(ep=1, model="llama-3.1-8b", moe_pad_to_capacity=True) == _step(ep=1, model="llama-3.1-8b")
    st = Strategy(tp=1, pp=1, dp=16, framework="megatron-core", moe_pad_to_capacity=True)
    dense = ModelArch(name="dense", family="llama", layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336,
                      vocab=128256)
    assert unused_moe_options(dense, st) == ["moe_pad_to_capacity"]


def test_padding_is_refused_outside_megatron_core():
    with pytest.raises(TrainsizerError, match="moe_pad_to_capacity"):
        _step(framework="torchtitan", moe_pad_to_capacity=True)
