"""RoPE with a YaRN attention factor on Megatron-Core (step_time._rope_unfused_time): apply_rotary_pos_emb falls back
to the unfused _apply_rotary_pos_emb_bshd when mscale != 1 (TE's fused RoPE takes none), so gpt-oss's q and k stream
the eager ops' bytes beyond the fused kernel's; the forward runs again under full recompute; other styles, MLA and
models without the factor pay nothing."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer import models
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time
from trainsizer.models import load_model
from trainsizer.models.hf_config import arch_from_hf_config

from .test_perf_common import h100_cluster, mixtral

K = load_constants()
PRESETS = Path(models.__file__).parent / "presets"
YARN = dataclasses.replace(mixtral(), rope_attention_factor=1.35)


def _compute(model=YARN, framework="megatron-core", recompute="none", seqs=8, mb=1, tp=1) -> float:
    training = Training(seq_len=4096, global_batch_seqs=seqs, precision="bf16")
    st = Strategy(tp=tp, dp=8 // tp, ep=8 // tp, micro_batch=mb, recompute=recompute, framework=framework,
                  moe_dispatcher="alltoall")
    return estimate_time(model, training, h100_cluster(8), st).breakdown_s["compute"]


def _extra(**kw) -> float:
    return _compute(**kw) - _compute(model=mixtral(), **kw)


def _expected(passes_forward: float, tp: int = 1) -> float:
    b = K.rope_unfused_mcore_bytes
    elems = 4096 * (YARN.q_dim + YARN.kv_dim) / tp * YARN.layers
    hbm = h100_cluster().hbm_gb_s * 1e9 * K.hbm_efficiency
    return elems * (passes_forward * b["forward"] + b["backward"]) / hbm


def test_megatron_core_streams_the_unfused_rope_of_q_and_k():
    assert _extra() == pytest.approx(_expected(1.0), rel=1e-6)


def test_tp_splits_the_heads_it_rotates():
    assert _extra(tp=2, seqs=4) == pytest.approx(_expected(1.0, tp=2), rel=1e-6)  # one micro-batch a GPU


def test_full_recompute_runs_the_rope_forward_again():
    assert _extra(recompute="full") == pytest.approx(_expected(2.0), rel=1e-6)


def test_other_styles_and_models_without_the_factor_pay_nothing():
    assert _extra(framework="torchtitan") == 0.0
    assert _compute(model=mixtral()) == _compute(model=dataclasses.replace(mixtral(), rope_attention_factor=1.0))


def test_gpt_oss_preset_reads_yarn_attention_factor():
    assert load_model("gpt-oss-120b").rope_attention_factor == pytest.approx(0.1 * math.log(32.0) + 1.0)
    assert load_model("qwen3-30b-a3b").rope_attention_factor == 1.0


@pytest.mark.parametrize(("rope", "factor"), [
    ({"rope_type": "yarn", "factor": 32.0}, 0.1 * math.log(32.0) + 1.0),
    ({"rope_type": "yarn", "factor": 40.0, "mscale": 1.0, "mscale_all_dim": 1.0}, 1.0),
    ({"type": "yarn", "factor": 4.0, "attention_factor": 1.2}, 1.2),
    ({"rope_type": "linear", "factor": 8.0}, 1.0),
    (None, 1.0),
])
def test_yarn_attention_factor_follows_transformers_rule(rope, factor):
    raw = dict(json.loads(PRESETS.joinpath("gpt-oss-20b.json").read_text(encoding="utf-8")), rope_scaling=rope)
    assert arch_from_hf_config(raw, name="gpt-oss-20b").rope_attention_factor == pytest.approx(factor)


@settings(max_examples=10, deadline=None)
@given(mb=hs.sampled_from([1, 2, 4]))
def test_rope_time_grows_with_the_tokens_of_a_micro_batch(mb):
    assert _extra(seqs=8 * mb, mb=mb) == pytest.approx(mb * _extra(), rel=1e-6)
