"""Megatron-Core's fused expert and RoPE paths (strategy.moe_fused_grouped_mlp, strategy.fused_qkv_rope): under
use_transformer_engine_op_fuser with NVTE_CUTEDSL_FUSED_GROUPED_MLP the routed experts run Transformer Engine's
fused grouped MLP (fc1's bias, the clamped gated activation and fc2's probability-scaled bias in cuDNN CuTe DSL GEMM
epilogues: TE v2.15 ops/fused/forward_grouped_mlp.py), so the eager fc2 bias and clamp of TEGroupedMLP do not run;
fused_single_qkv_rope rotates q and k in one TE kernel that takes no YaRN mscale, so gpt-oss runs no unfused RoPE.
The fused MLP exists for MXFP8 on SM100 parts only and both options are Megatron-Core's: other jobs are refused."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import StrategyError
from trainsizer.estimate import calibration, compute
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time
from trainsizer.estimate.validate import check_strategy
from trainsizer.scenario import resolve_job

from .test_perf_common import b200_cluster, mixtral

K = load_constants()
PLAIN = mixtral()
GPT_OSS_LIKE = dataclasses.replace(mixtral(), mlp_bias=True, activation_clamp=True, rope_attention_factor=1.35)


def _compute(model=GPT_OSS_LIKE, **options) -> float:
    training = Training(seq_len=4096, global_batch_seqs=8, precision="fp8", fp8_recipe="mxfp8")
    st = Strategy(dp=8, ep=8, micro_batch=1, framework="megatron-core", moe_dispatcher="alltoall", **options)
    return estimate_time(model, training, b200_cluster(8), st).breakdown_s["compute"]


def _hbm() -> float:
    return b200_cluster().hbm_gb_s * 1e9 * K.hbm_efficiency


def _eager_expert_charges() -> float:
    """The clamp-and-cat and fc2 bias of every routed slot (one 4,096-token micro-batch, top-2, every layer)."""
    m, c, b = GPT_OSS_LIKE, K.activation_clamp_mcore_bytes, K.expert_bias_mcore_bytes
    slots = 4096 * m.experts_per_token * m.layers
    return slots * (m.expert_ffn * (c["forward"] + c["backward"])
                    + m.hidden * (b["down_forward_bf16"] + b["down_backward_bf16"])) / _hbm()


def _unfused_rope() -> float:
    m, b = GPT_OSS_LIKE, K.rope_unfused_mcore_bytes
    return 4096 * (m.q_dim + m.kv_dim) * m.layers * (b["forward"] + b["backward"]) / _hbm()


def _dglu_dbias() -> float:
    """fc1's bias gradient in the fused dGLU kernel (step_time._fused_dglu_dbias_time: PR 322's with / without over
    fc2's data-gradient GEMM, every layer), which the fused path pays instead."""
    m, us = GPT_OSS_LIKE, K.fused_dglu_us
    r = calibration.rates(b200_cluster(8), "fp8", fp8_recipe="mxfp8")
    gemm = compute.gemm_time(4096 * m.experts_per_token, m.expert_ffn, m.hidden, r, fixed=False)
    return (us["with_dbias"] / us["without_dbias"] - 1.0) * float(gemm) * m.layers


def _scaled_dbias() -> float:
    """fc2's probability-scaled bias gradient, TE's Triton grouped dbias / dscales kernel over fc2's output gradient
    (Megatron-Core 0.19 on, the unstated release's reading; docs/known-gaps.md 344 (a)), every layer."""
    m = GPT_OSS_LIKE
    r = calibration.rates(b200_cluster(8), "fp8", fp8_recipe="mxfp8")
    nbytes = 4096 * m.experts_per_token * m.hidden * K.fused_fc2_scaled_dbias_bytes
    return float(compute.stream_time(nbytes, r, kernels=1.0)) * m.layers


def test_fused_grouped_mlp_drops_the_eager_clamp_and_fc2_bias():
    saved = _compute() - _compute(moe_fused_grouped_mlp=True)
    assert saved == pytest.approx(_eager_expert_charges() - _dglu_dbias() - _scaled_dbias(), rel=1e-6)
    assert 0.0 < _dglu_dbias() + _scaled_dbias() < _eager_expert_charges()
    before = _compute(megatron_core_version="0.18") - _compute(moe_fused_grouped_mlp=True, megatron_core_version="0.18")
    assert before == pytest.approx(_eager_expert_charges() - _dglu_dbias(), rel=1e-6)


def test_fused_qkv_rope_drops_the_unfused_rope():
    saved = _compute() - _compute(fused_qkv_rope=True)
    assert saved == pytest.approx(_unfused_rope(), rel=1e-6)


def test_both_leave_a_model_without_bias_clamp_or_yarn_unchanged():
    assert _compute(PLAIN) == _compute(PLAIN, moe_fused_grouped_mlp=True, fused_qkv_rope=True)


def test_stated_off_is_the_default():
    assert _compute(moe_fused_grouped_mlp=False, fused_qkv_rope=False) == _compute()


def _job(**changes) -> dict:
    job = {"model": "gpt-oss-20b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 8192,
           "global_batch": {"sequences": 36}, "precision": "fp8", "fp8_recipe": "mxfp8",
           "hardware": {"accelerator": "gb300", "count": 72, "network": "ib-xdr800"},
           "strategy": {"tp": 1, "pp": 1, "cp": 2, "ep": 4, "micro_batch": 1, "framework": "megatron-core",
                        "moe_dispatcher": "flex", "moe_fused_grouped_mlp": True, "fused_qkv_rope": True}}
    for key, value in changes.items():
        target, name = (job["strategy"], key[9:]) if key.startswith("strategy_") else (job, key)
        target[name] = value
    return job


def _check(job: dict) -> list[str]:
    sc = resolve_job(copy.deepcopy(job), load_catalog())
    return check_strategy(sc.model, sc.training, sc.system, sc.strategy)


def test_mxfp8_on_an_sm100_part_is_accepted():
    assert _check(_job()) == []
    assert _check(_job(fp8_recipe="auto")) == []  # MXFP8 is GB300's default recipe


@pytest.mark.parametrize("changes", [{"precision": "bf16"}, {"fp8_recipe": "tensorwise"},
                                     {"hardware": {"accelerator": "h100-sxm-80gb", "count": 72,
                                                   "network": "ib-ndr400"}, "fp8_recipe": "auto"}])  # Hopper: no MXFP8
def test_the_fused_grouped_mlp_outside_mxfp8_on_sm100_is_refused(changes):
    with pytest.raises(StrategyError, match="moe_fused_grouped_mlp"):
        _check(_job(**changes))


def test_other_frameworks_are_refused_both_options():
    with pytest.raises(StrategyError, match="fused_qkv_rope"):
        _check(_job(strategy_framework="torchtitan", strategy_moe_fused_grouped_mlp=None))
