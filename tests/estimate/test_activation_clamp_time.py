"""A clamped gated activation in Megatron-Core's routed experts (step_time._activation_clamp_time): gpt-oss's
activation_func_clamp_value clamps both halves and concatenates them, eager, before the compiled activation
(fused_bias_geglu.py weighted_bias_quick_geglu_impl); the forward runs again under moe_act recompute; other styles and
unclamped models pay nothing."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time
from trainsizer.models import load_model

from .test_perf_common import h100_cluster, mixtral

K = load_constants()
CLAMPED = dataclasses.replace(mixtral(), activation_clamp=True)


def _compute(model=CLAMPED, framework="megatron-core", modules=None, seqs=8, mb=1, torch_compile=None) -> float:
    training = Training(seq_len=4096, global_batch_seqs=seqs, precision="bf16")
    st = Strategy(dp=8, ep=8, micro_batch=mb, recompute="selective" if modules else "none",
                  recompute_modules=modules, framework=framework, moe_dispatcher="alltoall", torch_compile=torch_compile)
    return estimate_time(model, training, h100_cluster(8), st).breakdown_s["compute"]


def _extra(**kw) -> float:
    return _compute(**kw) - _compute(model=mixtral(), **kw)


def _expected(passes_forward: float) -> float:
    b = K.activation_clamp_mcore_bytes
    slots = 4096 * CLAMPED.experts_per_token * CLAMPED.layers
    hbm = h100_cluster().hbm_gb_s * 1e9 * K.hbm_efficiency
    return slots * CLAMPED.expert_ffn * (passes_forward * b["forward"] + b["backward"]) / hbm


def test_megatron_core_streams_the_clamp_and_cat_of_every_routed_slot():
    assert _extra() == pytest.approx(_expected(1.0), rel=1e-6)


def test_moe_act_recompute_runs_the_clamp_forward_again():
    assert _extra(modules=("moe_act",)) == pytest.approx(_expected(2.0), rel=1e-6)


def test_other_styles_and_unclamped_models_pay_nothing():
    assert _extra(framework="torchtitan", torch_compile=True) == 0.0  # compiled: the clamp fused with the activation
    assert _compute(model=mixtral()) == _compute(model=dataclasses.replace(mixtral(), activation_clamp=False))


def test_gpt_oss_preset_reads_its_swiglu_limit():
    assert load_model("gpt-oss-120b").activation_clamp
    assert not load_model("qwen3-30b-a3b").activation_clamp


@settings(max_examples=10, deadline=None)
@given(mb=hs.sampled_from([1, 2, 4]))
def test_clamp_time_grows_with_the_tokens_of_a_micro_batch(mb):
    assert _extra(seqs=8 * mb, mb=mb) == pytest.approx(mb * _extra(), rel=1e-6)
