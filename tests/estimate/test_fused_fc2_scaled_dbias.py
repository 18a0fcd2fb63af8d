"""fc2's expert bias scaled by the routing probabilities in TE's fused grouped MLP (docs/known-gaps.md 344 (a)): from
Megatron-Core 0.19 (framework.MCORE_RELEASE_FACTS fused_mlp_scaled_fc2_bias; experts.py _make_fused_ops passes
GroupedLinear scale_bias, Megatron-LM PR 5850) the backward runs TE's Triton grouped dbias / dscales kernel, one read of
fc2's output gradient (perf_constants.yaml gemm.fused_fc2_scaled_dbias_bytes a hidden element of a routed slot); before
it the bias gradient rode in the quantize. Experts without biases and the eager TEGroupedMLP path pay nothing."""

from __future__ import annotations

import dataclasses

import pytest

from trainsizer.estimate import calibration, compute
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.framework import MCORE_RELEASE_FACTS, mcore_has
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import step_time_arrays

from .test_perf_common import b200_cluster, mixtral

K = load_constants()
BIASED = dataclasses.replace(mixtral(), mlp_bias=True)
TRAINING = Training(seq_len=4096, global_batch_seqs=8, precision="fp8", fp8_recipe="mxfp8")


def _compute(version: str | None, model=BIASED, fused=True) -> float:
    st = Strategy(dp=8, ep=8, micro_batch=1, framework="megatron-core", moe_dispatcher="alltoall",
                  moe_fused_grouped_mlp=fused, megatron_core_version=version)
    a = step_time_arrays(model, TRAINING, b200_cluster(8), st, constants=K)
    return float(a["compute"].reshape(-1)[0])


def test_the_release_fact_is_core_0_19():
    assert MCORE_RELEASE_FACTS["fused_mlp_scaled_fc2_bias"] == "0.19"
    assert not mcore_has("fused_mlp_scaled_fc2_bias", "0.18")
    assert mcore_has("fused_mlp_scaled_fc2_bias", "0.19") and mcore_has("fused_mlp_scaled_fc2_bias", None)
    assert K.fused_fc2_scaled_dbias_bytes == 2.0


def test_core_0_19_reads_fc2s_output_gradient_once_more():
    extra = _compute("0.19") - _compute("0.18")
    r = calibration.rates(b200_cluster(8), "fp8", fp8_recipe="mxfp8")
    slots = 4096 * BIASED.experts_per_token  # a GPU's routed slots a layer (EP 8 over 8 GPUs, one micro-batch)
    kernel = compute.stream_time(slots * BIASED.hidden * K.fused_fc2_scaled_dbias_bytes, r, kernels=1.0)
    assert extra == pytest.approx(float(kernel) * BIASED.layers, rel=1e-6)
    assert extra > 0.0
    assert _compute(None) == _compute("0.19")  # unstated: the present release


def test_unbiased_experts_and_the_eager_path_pay_nothing():
    plain = mixtral()
    assert _compute("0.19", model=plain) == _compute("0.18", model=plain)
    assert _compute("0.19", fused=False) == _compute("0.18", fused=False)


def test_the_mbridge_pins_state_their_core_release():
    """perf_mbridge26 states the Megatron-Core line of the Megatron-Bridge pins it reads (package_info.py MINOR at the
    submodule: v0.5.0 / v0.5.1 0.18, v0.6.0 0.19); MLPerf v6.0's GPT-OSS code ran the 0.17 line."""
    import perf_mbridge26 as mb
    import perf_mlperf6 as ml

    assert mb.mcore_version({"recipe_config": "GPT_OSS_120B_PRETRAIN_CONFIG_GB200_FP8_MX_V2 (v0.5.0)"}) == "0.18"
    assert mb.mcore_version({"recipe_config": "x (v0.5.1)"}) == "0.18"
    assert mb.mcore_version({"recipe_config": "gpt_oss_120b_pretrain_64gpu_gb200_fp8mx_config (v0.6.0)"}) == "0.19"
    assert mb.mcore_version({"recipe_config": "x (v0.4.0)"}) is None
    assert ml.RUN_STRATEGY["gpt-oss-20b"]["megatron_core_version"] == "0.17"
