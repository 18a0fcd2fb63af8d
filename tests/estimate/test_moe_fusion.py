"""strategy.moe_permute_fusion / moe_router_fusion: Megatron-Core's MoE token permutation and router without
Transformer Engine's fused kernels run more kernels, more host calls and (the permutation) two masked_select host syncs
a forward (step_time._moe_unfused_counts, _moe_unfused_time, _moe_unfused_host; counts in perf_constants.yaml kernels:
moe_*_unfused_*, read in Megatron-LM core_r0.14.0). Unstated = the megatron-core style's (fused); the options are
Megatron-Core's, refused elsewhere, and change nothing on a dense model."""

from __future__ import annotations

import numpy as np
import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import (
    _moe_unfused_counts,
    _moe_unfused_host,
    _step,
    estimate_time,
    estimate_time_batch,
)
from trainsizer.evaluate import evaluate
from trainsizer.render.estimate_view import print_estimate
from trainsizer.scenario import resolve_job

from .test_perf_common import h100_cluster, llama8b, mixtral

CAT = load_catalog([])
TR = Training(seq_len=4096, global_batch_seqs=256)


def _st(**kw) -> Strategy:
    base = dict(tp=1, pp=1, dp=16, ep=8, micro_batch=1, recompute="none", distributed_optimizer=True,
                framework="megatron-core", moe_dispatcher="alltoall")
    return Strategy(**(base | kw))


def _step_s(model=None, **kw) -> float:
    return float(estimate_time(model or mixtral(), TR, h100_cluster(16), _st(**kw)).step_s)


def test_unfused_router_and_permutation_each_cost_time_and_stated_fused_is_the_default():
    fused = _step_s()
    permute, router = _step_s(moe_permute_fusion=False), _step_s(moe_router_fusion=False)
    both = _step_s(moe_permute_fusion=False, moe_router_fusion=False)
    assert fused < permute < both and fused < router < both
    assert _step_s(moe_permute_fusion=True, moe_router_fusion=True) == fused  # the style's default: fused


def test_counts_follow_the_code_and_the_syncs_come_with_the_permutation_only():
    x = _step(mixtral(), TR, h100_cluster(16), _st(moe_router_fusion=False), None, None, None)
    assert [float(v) for v in _moe_unfused_counts(x)] == [16.0, 5.0, 16.0, 0.0]
    x = _step(mixtral(), TR, h100_cluster(16), _st(moe_permute_fusion=False), None, None, None)
    assert [float(v) for v in _moe_unfused_counts(x)] == [7.0, 5.0, 11.0, 2.0]
    calls_s, syncs_s = _moe_unfused_host(x)
    # NVIDIA has no round-trip figure (host_sync.round_trip_s): a sync costs the next op's issue, 14.8 us
    assert float(syncs_s) == pytest.approx(2 * 14.8e-6)
    assert float(calls_s) == pytest.approx(11 * 14.8e-6)


def test_a_dense_model_is_unchanged_and_other_stacks_refuse_the_options():
    dense = Strategy(tp=1, pp=1, dp=16, micro_batch=1, recompute="none", framework="megatron-core")
    base = float(estimate_time(llama8b(), TR, h100_cluster(16), dense).step_s)
    # stated on a dense model: a warning (validate.unused_moe_options), the time unchanged
    assert float(estimate_time(llama8b(), TR, h100_cluster(16), dense.with_(moe_permute_fusion=False)).step_s) == base
    with pytest.raises(TrainsizerError, match="moe_router_fusion"):
        estimate_time(mixtral(), TR, h100_cluster(16), _st(framework="torchtitan", moe_dispatcher="auto",
                                                            distributed_optimizer=False, moe_router_fusion=False))


def test_batch_agrees_with_the_scalar_estimate():
    mbs = np.array([1, 2, 4])
    batch = estimate_time_batch(mixtral(), TR, h100_cluster(16),
                                _st(micro_batch=mbs, tp=np.ones(3, int), pp=np.ones(3, int), dp=np.full(3, 16),
                                    ep=np.full(3, 8), moe_permute_fusion=False, moe_router_fusion=False))
    for i, m in enumerate(mbs):
        assert float(batch["step_s"][i]) == pytest.approx(_step_s(micro_batch=int(m), moe_permute_fusion=False,
                                                                  moe_router_fusion=False), rel=1e-9)


def _job(**strategy) -> dict:
    return {"model": "gpt-oss-20b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
            "global_batch": {"sequences": 64}, "precision": "bf16", "hardware": {"accelerator": "mi355x", "count": 8},
            "strategy": {"micro_batch": 1, "recompute": "none", "framework": "megatron-core", "ep": 8, **strategy}}


def test_the_estimate_says_what_it_assumed_in_json_and_table(capsys):
    from rich.console import Console

    out = evaluate(resolve_job(_job(moe_permute_fusion=False), CAT), CAT)
    fusion = out["framework"]["moe_fusion"]
    assert fusion == {"permute": {"requested": False, "assumed": False},
                      "router": {"requested": None, "assumed": True}}
    for lang, words in (("en", ("token permutation unfused", "(stated)", "not stated")),
                        ("zh", ("令牌重排未融合", "作业已设置", "未设置"))):
        console = Console(record=True, width=400)
        print_estimate(out, lang, console)
        text = console.export_text()
        assert all(w in text for w in words), (lang, text)
    job = _job() | {"model": "llama-3.1-8b"}
    job["strategy"].pop("ep")
    dense = evaluate(resolve_job(job, CAT), CAT)
    assert "moe_fusion" not in dense["framework"]
