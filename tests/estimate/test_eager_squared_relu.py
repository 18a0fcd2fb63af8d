"""The squared ReLU as NeMo 2's Nemotron configs run it, torch.pow(F.relu(x), 2) undecorated (known-gaps 339 (a)):
strategy.activation_kernel eager on a relu2 model streams 8 B per inner element forward (relu, pow) and 20 B backward
(benchmarks/eager_chain_bytes.py), against the fused kernel's 4 and 8 the layer charges a GeLU; fused it is the GeLU
MLP's cost (the same two GEMMs)."""

from __future__ import annotations

import dataclasses

import pytest

from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time

from .test_perf_common import h100_cluster, llama8b

K = load_constants()


def _relu2(mlp: str = "relu2"):
    return dataclasses.replace(llama8b(), mlp=mlp, norm="layernorm")


def _compute(model, tp: int = 2, **kw) -> float:
    training = Training(seq_len=4096, global_batch_seqs=8 // tp, precision="bf16")
    st = Strategy(tp=tp, dp=8 // tp, micro_batch=1, recompute="none", framework="megatron", **kw)
    return estimate_time(model, training, h100_cluster(8), st).breakdown_s["compute"]


def _bytes_s(model, per_inner: float, tp: int = 2) -> float:
    hbm = h100_cluster().hbm_gb_s * 1e9 * K.hbm_efficiency
    return 4096 * model.ffn / tp * model.layers * per_inner / hbm


def test_the_eager_squared_relu_streams_its_counted_bytes():
    """(8 - 4) forward and (20 - 8) backward: 16 B per inner element a layer more than the fused kernel."""
    m = _relu2()
    extra = _compute(m, activation_kernel="eager") - _compute(m, activation_kernel="fused")
    assert K.eager_bytes_per_element["relu2"] == 8.0 and K.eager_backward_bytes_per_element["relu2"] == 20.0
    assert extra == pytest.approx(_bytes_s(m, 16.0), rel=0.02)


def test_a_fused_squared_relu_costs_what_the_gelu_mlp_costs():
    """Megatron-LM's own squared_relu is @jit_fuser (torch.compile): one kernel, as the GeLU the rows took before."""
    assert _compute(_relu2()) == pytest.approx(_compute(_relu2("gelu")), rel=1e-12)
    assert _compute(_relu2("gelu"), activation_kernel="eager") == pytest.approx(_compute(_relu2("gelu")), rel=1e-12)
