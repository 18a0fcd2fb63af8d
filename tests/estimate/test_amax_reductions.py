"""Transformer Engine's amax all-reduces over the TP group (step_time._amax_reductions): under current scaling and
NVFP4 with sequence parallelism, the input quantizer of a column-parallel linear and the output-gradient quantizer of
a row-parallel one reduce their amax over TP before the cast (TE module/linear.py, layernorm_linear.py,
layernorm_mlp.py: with_amax_reduction, amax_reduction_group = tp_group), one 4-byte all-reduce per sequence-parallel
all-gather of a linear operand, on the critical path. Delayed scaling, MXFP8, TP 1 and runs without sequence
parallelism pay none."""

from __future__ import annotations

import dataclasses

import pytest

from trainsizer.estimate import comm
from trainsizer.estimate.calibration import load_constants, rates
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time, perf_style

from .test_perf_common import b200_cluster, llama8b, mixtral

K = load_constants()


def _tp(recipe: str | None, tp: int = 2, sp: bool = True, recompute: str = "none", te: bool = True, model=None,
        bf16_layers: int = 0) -> float:
    style = dataclasses.replace(perf_style("megatron-core"), fp8_te_quantizer=te)
    training = Training(seq_len=4096, global_batch_seqs=8 // tp, precision="fp8" if recipe else "bf16",
                        fp8_recipe=recipe, bf16_layers=bf16_layers)
    # the TP overlap stated, so NVFP4's default (no userbuffers under TE: step_time._recipe_style) does not enter
    st = Strategy(tp=tp, dp=8 // tp, micro_batch=1, recompute=recompute, sequence_parallel=sp,
                  distributed_optimizer=True, tp_comm_overlap=True)
    return estimate_time(model or llama8b(), training, b200_cluster(8), st,
                         framework_style=style).breakdown_s["tp_comm"]


def _extra(recipe: str | None, **kw) -> float:
    """TP time a TE style adds over the same style without TE's quantizers (which reduces no amax)."""
    return _tp(recipe, **kw) - _tp(recipe, te=False, **kw)


def _one(tp: int) -> float:
    """One 4-byte all-reduce over a TP group inside the node."""
    system = b200_cluster(8)
    r = rates(system, "fp8", K, None, "native", "tensorwise")
    return float(comm.all_reduce_time(4.0, tp, tp, r, system, K.nvls_allreduce_gain))


@pytest.mark.parametrize("recipe", ["tensorwise", "nvfp4"])
def test_current_scaling_and_nvfp4_reduce_four_amaxes_a_layer(recipe):
    """Forward: the qkv and MLP inputs; backward: the output projection's and MLP output's gradients."""
    assert _extra(recipe) == pytest.approx(4 * llama8b().layers * _one(2), rel=1e-6)


def test_the_reduction_is_latency_bound_and_grows_with_the_tp_group():
    assert _one(2) < _one(4) < _one(8) < 30e-6
    assert _extra("tensorwise", tp=4) == pytest.approx(4 * 32 * _one(4), rel=1e-6)


@pytest.mark.parametrize("recipe", ["delayed", "mxfp8", None])
def test_other_recipes_reduce_nothing_per_tensor(recipe):
    assert _extra(recipe) == 0.0


def test_no_reduction_without_sequence_parallelism_or_tp_or_te_quantizers():
    assert _extra("tensorwise", sp=False) == 0.0
    assert _tp("tensorwise", tp=1) == 0.0
    assert _extra("tensorwise") > 0.0


def test_full_recompute_reduces_the_forward_amaxes_again():
    assert _extra("tensorwise", recompute="full") == pytest.approx(6 * 32 * _one(2), rel=1e-6)


def test_moe_layers_reduce_for_their_attention_only():
    assert _extra("tensorwise", model=mixtral()) == pytest.approx(2 * 32 * _one(2), rel=1e-6)


def test_bf16_layers_reduce_nothing():
    assert _extra("tensorwise", bf16_layers=8) == pytest.approx(4 * 24 * _one(2), rel=1e-6)
