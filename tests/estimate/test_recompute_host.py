"""Megatron-Core's selective recompute re-issues the listed modules' forward kernels from the host in the backward
(CheckpointWithoutOutput / tensor_parallel.checkpoint call the module's forward from Python): step_time's
_recompute_kernels counts them (perf_constants.yaml kernels recompute_*), _recompute_host_s joins them to the layer's
host floor at the launch-bound op (docs/known-gaps.md 110 (b))."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from trainsizer.estimate import compute, step_time
from trainsizer.models import load_model

DSV3 = load_model("deepseek-v3")
LLAMA = load_model("llama-3.1-8b")


def _x(model, modules, precision="bf16", rc=1, cuda_graphs="none"):
    return SimpleNamespace(model=model, recompute_modules=modules, training=SimpleNamespace(precision=precision),
                           rc=rc, cuda_graphs=cuda_graphs, system=SimpleNamespace(vendor="nvidia"))


def test_mla_up_projection_re_issues_its_norms_gemms_and_rope():
    k = compute.KERNELS
    assert step_time._recompute_kernels(_x(DSV3, ("mla_up_proj",))) == k["recompute_mla_up_proj"]
    # a dense model has no MLA up-projection and no separate norms: nothing is re-issued for them
    assert step_time._recompute_kernels(_x(LLAMA, ("mla_up_proj", "layernorm", "moe_act"))) == 0.0


def test_kernels_follow_the_layer_kinds():
    shapes = compute.ModelShapes.of(DSV3)
    moe_w, dense_w = shapes.n_moe / shapes.layers, shapes.n_dense / shapes.layers
    k = compute.KERNELS
    # layernorm: MLA's input norm on every layer, the pre-MLP norm on MoE layers only
    assert step_time._recompute_kernels(_x(DSV3, ("layernorm",))) == pytest.approx((1.0 + moe_w) * k["recompute_norm"])
    assert step_time._recompute_kernels(_x(DSV3, ("mlp",))) == pytest.approx(dense_w * k["recompute_mlp"])


def test_host_time_is_per_kernel_and_only_for_selective_without_graphs():
    op_s = step_time._launch_op_s("nvidia")
    mods = ("mla_up_proj", "moe_act")
    n = step_time._recompute_kernels(_x(DSV3, mods))
    assert float(step_time._recompute_host_s(_x(DSV3, mods))) == pytest.approx(n * op_s)
    assert float(step_time._recompute_host_s(_x(DSV3, mods, rc=0))) == 0.0
    assert step_time._recompute_host_s(_x(DSV3, mods, cuda_graphs="layer")) == 0.0
    assert step_time._recompute_host_s(_x(DSV3, None)) == 0.0
