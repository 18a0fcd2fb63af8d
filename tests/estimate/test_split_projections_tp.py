"""Split projections under TP without sequence parallelism (step_time._split_input_grad_reduces; docs/known-gaps.md
272 (c)): where q, k, v and the SwiGLU gate, up are separate column-parallel linears, each all-reduces its own input
gradient in the backward (ATorch's manual TP, copy_to_group per linear), 5 a layer against the fused 2; and the job
field strategy.split_projections that says so."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time, perf_style, step_time_arrays
from trainsizer.models.arch import ModelArch
from trainsizer.render.i18n import t
from trainsizer.scenario import resolve_job

from .test_perf_common import a100_cluster, gpt

TRAINING = Training(precision="fp16", seq_len=4096, global_batch_seqs=256)
FUSED = perf_style("deepspeed")
SPLIT = dataclasses.replace(FUSED, split_projections=True)


def llama(layers: int = 32) -> ModelArch:
    return ModelArch(name="llama-2-7b", family="llama", layers=layers, hidden=4096, heads=32, kv_heads=32,
                     ffn=11008, vocab=32000, max_position=4096)


def _tp_s(model: ModelArch, style, recompute: str = "full", sp: bool = False, tp: int = 2) -> float:
    s = Strategy(tp=tp, pp=1, dp=8 // tp, zero=1, micro_batch=8, recompute=recompute, sequence_parallel=sp)
    return estimate_time(model, TRAINING, a100_cluster(8), s, framework_style=style).breakdown_s["tp_comm"]


def _layers_tp(style, recompute: str = "full", sp: bool = False) -> float:
    """TP seconds a step of one decoder layer (two models one layer apart: the LM head's collectives cancel)."""
    return _tp_s(llama(2), style, recompute, sp) - _tp_s(llama(1), style, recompute, sp)


@pytest.mark.parametrize(("recompute", "split_per_fused"), [
    ("full", 9.0 / 6.0),  # forward 2 + its recompute 2 + backward 5 (q, k, v; gate, up), against 2 + 2 + 2
    ("none", 7.0 / 4.0),
])
def test_each_split_linear_reduces_its_input_gradient(recompute, split_per_fused):
    fused, split = _layers_tp(FUSED, recompute), _layers_tp(SPLIT, recompute)
    assert fused > 0.0
    assert split == pytest.approx(split_per_fused * fused, rel=1e-9)


def test_sequence_parallelism_gathers_once_so_nothing_is_added():
    assert _layers_tp(SPLIT, "full", sp=True) == pytest.approx(_layers_tp(FUSED, "full", sp=True), rel=1e-12)


def test_a_gelu_mlp_has_one_input_projection():
    """GeLU: one MLP input linear, so only the attention's q, k, v add (+2): 8 against 6 under full recompute."""
    model = gpt(layers=2, hidden=4096, heads=32)
    one = gpt(layers=1, hidden=4096, heads=32)
    fused = _tp_s(model, FUSED) - _tp_s(one, FUSED)
    split = _tp_s(model, SPLIT) - _tp_s(one, SPLIT)
    assert split == pytest.approx(8.0 / 6.0 * fused, rel=1e-9)


@settings(max_examples=6, deadline=None)
@given(tp=st.sampled_from([1, 2, 4, 8]), sp=st.booleans())
def test_never_less_tp_time_and_none_without_tp(tp, sp):
    fused, split = _tp_s(llama(), FUSED, sp=sp, tp=tp), _tp_s(llama(), SPLIT, sp=sp, tp=tp)
    assert split >= fused * (1.0 - 1e-12)
    if tp == 1:
        assert split == fused == 0.0


def test_vectorised_layouts_agree_with_single_ones():
    tps = np.array([1.0, 2.0, 4.0, 2.0])
    sps = np.array([0.0, 0.0, 0.0, 1.0])
    s = Strategy(tp=tps, pp=np.ones(4), dp=8 / tps, zero=np.ones(4), micro_batch=np.full(4, 8.0),
                 recompute=np.full(4, 2), sequence_parallel=sps)
    vec = step_time_arrays(llama(), TRAINING, a100_cluster(8), s, framework_style=SPLIT)["tp_comm"]
    one = [_tp_s(llama(), SPLIT, sp=bool(p), tp=int(n)) for n, p in zip(tps, sps, strict=True)]
    assert np.allclose(vec, one, rtol=1e-9)


# --- the job field

JOB = {"model": "llama-2-7b", "data": {"tokens": 1e9}, "seq_len": 4096, "global_batch": {"sequences": 256},
       "hardware": {"accelerator": "a100-sxm-80gb", "count": 8, "network": "ib-hdr200"}}
STRATEGY = {"framework": "deepspeed", "tp": 2, "zero": 1, "micro_batch": 8, "recompute": "full",
            "sequence_parallel": False}


def _job_tp(**strategy) -> float:
    sc = resolve_job({**JOB, "strategy": {**STRATEGY, **strategy}}, load_catalog())
    return estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False).breakdown_s["tp_comm"]


def test_the_job_field_overrides_the_style_and_null_keeps_it():
    fused = _job_tp()
    assert _job_tp(split_projections=False) == fused  # the deepspeed style fuses them (Megatron-DeepSpeed)
    assert _job_tp(split_projections=True) > 1.3 * fused


def test_a_bad_value_is_a_clear_error_with_words_in_both_languages():
    with pytest.raises(SpecError, match="split_projections"):
        resolve_job({**JOB, "strategy": {**STRATEGY, "split_projections": "sometimes"}}, load_catalog())
    assert t("field_strategy.split_projections", "zh") != t("field_strategy.split_projections", "en")
