"""An eager SwiGLU's backward as autograd runs it (step_time._eager_swiglu_backward_time): the product's two gradients
and silu_backward, 18 B per inner element, plus the cat of both halves' gradients where gate and up come from one GEMM
split in eager PyTorch (nanotron), 26 B; the layer's element-wise count charges twice the forward's 10 B. Fused or
compiled activations and GeLU models pay nothing."""

from __future__ import annotations

import dataclasses

import pytest

from trainsizer.estimate import step_time
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time

from .test_perf_common import gpt, h100_cluster, llama8b

K = load_constants()
# what the layer charged before: the backward as twice the forward's eager bytes, no cat
TWICE_FORWARD = dataclasses.replace(
    K, eager_swiglu_backward_bytes={"products": 2.0 * K.eager_bytes_per_element["swiglu"], "silu": 0.0,
                                    "split_cat": 0.0})


def _compute(monkeypatch, constants, model=None, framework="megatron", tp=2, **kw) -> float:
    monkeypatch.setattr(step_time, "load_constants", lambda: constants)
    training = Training(seq_len=4096, global_batch_seqs=8 // tp, precision="bf16")
    st = Strategy(tp=tp, dp=8 // tp, micro_batch=1, recompute="none", framework=framework, **kw)
    return estimate_time(model or llama8b(), training, h100_cluster(8), st).breakdown_s["compute"]


def _extra(monkeypatch, **kw) -> float:
    return _compute(monkeypatch, K, **kw) - _compute(monkeypatch, TWICE_FORWARD, **kw)


def _bytes_s(per_inner: float, tp: int = 2) -> float:
    m = llama8b()
    hbm = h100_cluster().hbm_gb_s * 1e9 * K.hbm_efficiency
    return 4096 * m.ffn / tp * m.layers * per_inner / hbm


def test_a_fused_gate_up_split_eager_adds_the_cat(monkeypatch):
    """nanotron: one gate-up GEMM, torch.split, eager F.silu then the product: 26 B against 20, one kernel more."""
    expected = _bytes_s(26.0 - 20.0) + llama8b().layers * K.kernel_fixed_s
    assert _extra(monkeypatch, activation_kernel="eager") == pytest.approx(expected, rel=1e-6)


def test_separate_gate_and_up_stream_less_than_twice_the_forward(monkeypatch):
    """HF / torchtitan eager: two GEMMs, no split: 18 B against 20."""
    extra = _extra(monkeypatch, framework="torchtitan", torch_compile=False)
    assert extra == pytest.approx(_bytes_s(18.0 - 20.0), rel=1e-6)
    assert extra < 0.0


def test_fused_and_compiled_activations_and_gelu_pay_nothing(monkeypatch):
    assert _extra(monkeypatch) == 0.0  # Megatron-LM's fused kernels
    assert _extra(monkeypatch, framework="torchtitan", torch_compile=True) == 0.0
    assert _extra(monkeypatch, activation_kernel="fused", framework="torchtitan", torch_compile=False) == 0.0
    assert _extra(monkeypatch, model=gpt(), activation_kernel="eager") == 0.0
