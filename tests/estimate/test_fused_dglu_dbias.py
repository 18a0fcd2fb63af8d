"""fc1's bias gradient in TE's fused grouped MLP (step_time._fused_dglu_dbias_time): with strategy.moe_fused_grouped_mlp
the backward's CuTe DSL grouped GEMM + dGLU kernel reduces the expert biases' gradient in its epilogue, measured at
perf_constants.yaml gemm.fused_dglu_us with / without over the same kernel (NVIDIA/cudnn-frontend PR 322, SM100);
charged as that ratio less one on the kernel's GEMM, fc2's data gradient. Models without expert biases and the eager
TEGroupedMLP path (BGRADB in cuBLAS's wgrad epilogue) pay nothing for it."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.estimate import calibration, compute
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import step_time_arrays

from .test_perf_common import b200_cluster, mixtral

K = load_constants()
BIASED = dataclasses.replace(mixtral(), mlp_bias=True)
TRAINING = Training(seq_len=4096, global_batch_seqs=8, precision="fp8", fp8_recipe="mxfp8")


def _with(extra: float):
    """The shipped constants with the bias gradient costing `extra` of the kernel without it."""
    base = K.fused_dglu_us["without_dbias"]
    return dataclasses.replace(K, fused_dglu_us={"with_dbias": base * (1.0 + extra), "without_dbias": base})


def _compute(model=BIASED, fused=True, constants=K) -> float:
    st = Strategy(dp=8, ep=8, micro_batch=1, framework="megatron-core", moe_dispatcher="alltoall",
                  moe_fused_grouped_mlp=fused)
    a = step_time_arrays(model, TRAINING, b200_cluster(8), st, constants=constants)
    return float(a["compute"].reshape(-1)[0])


def test_the_shipped_figures_are_pr_322s_kernel_times():
    assert K.fused_dglu_us == {"with_dbias": 155.632, "without_dbias": 139.392}


def test_the_fused_mlp_charges_the_bias_gradient_on_the_dglu_gemm():
    extra = _compute() - _compute(constants=_with(0.0))
    r = calibration.rates(b200_cluster(8), "fp8", fp8_recipe="mxfp8")
    slots = 4096 * BIASED.experts_per_token  # a GPU's routed slots a layer (EP 8 over 8 GPUs, one micro-batch)
    gemm = compute.gemm_time(slots, BIASED.expert_ffn, BIASED.hidden, r, fixed=False)
    ratio = K.fused_dglu_us["with_dbias"] / K.fused_dglu_us["without_dbias"] - 1.0
    assert extra == pytest.approx(ratio * float(gemm) * BIASED.layers, rel=1e-6)
    assert extra > 0.0


def test_unbiased_experts_and_the_eager_path_pay_nothing():
    plain = mixtral()
    assert _compute(model=plain) == _compute(model=plain, constants=_with(0.0))
    assert _compute(fused=False) == _compute(fused=False, constants=_with(0.0))


@given(a=hs.floats(0.0, 1.0), b=hs.floats(0.0, 1.0))
@settings(max_examples=20, deadline=None)
def test_the_charge_is_linear_in_the_measured_excess(a, b):
    zero = _compute(constants=_with(0.0))
    unit = _compute(constants=_with(1.0)) - zero
    assert _compute(constants=_with(a)) - zero == pytest.approx(a * unit, rel=1e-6, abs=1e-12)
    assert (_compute(constants=_with(a)) <= _compute(constants=_with(b))) == (a <= b) or a == pytest.approx(b)
