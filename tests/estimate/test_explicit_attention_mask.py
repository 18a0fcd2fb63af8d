"""Job.explicit_attention_mask: the model hands PyTorch's SDPA an explicit additive mask (transformers'
attn_implementation sdpa given an attention_mask holding a 0), so SDPA's flash backend is refused
(sdp_utils.cpp check_for_attn_mask) and the memory-efficient backend computes every score of the s x s square, at its
measured share of FlashAttention-2's rate (perf_constants.yaml attention.mem_efficient_over_fa2; docs/known-gaps.md
180). Default false: is_causal, the causal tiles skipped."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.estimate.calibration import Rates, load_constants
from trainsizer.estimate.compute import ModelShapes, _attention_core
from trainsizer.estimate.flops import causal_fraction
from trainsizer.evaluate import evaluate
from trainsizer.models.shipped import load_preset
from trainsizer.scenario import resolve_job

CAT = load_catalog([])


def _job(seq_len: int = 8192, mask: object = None, accelerator: str = "h100-sxm-80gb", **extra) -> dict:
    job = {"model": "llama-3.1-8b", "method": "lora", "lora": {"rank": 8}, "data": {"tokens": 1e8},
           "seq_len": seq_len, "global_batch": {"sequences": 2}, "precision": "bf16",
           "hardware": {"accelerator": accelerator, "count": 1},
           "strategy": {"micro_batch": 2, "recompute": "full", "framework": "hf"}, **extra}
    if mask is not None:
        job["explicit_attention_mask"] = mask
    return job


def _step_s(**kw) -> float:
    return evaluate(resolve_job(_job(**kw), CAT), CAT)["time"]["step_s"]


def test_false_is_the_default():
    assert _step_s(mask=False) == _step_s()


@pytest.mark.parametrize("bad", ["maybe", 2, "causal"])
def test_a_value_other_than_true_or_false_is_refused_naming_the_field(bad):
    with pytest.raises(Exception, match="explicit_attention_mask"):
        resolve_job(_job(mask=bad), CAT)


def test_the_ratio_is_the_fa2_papers_xformers_over_fa2_bar():
    """FA2 paper Fig. 4(b) (A100, no causal mask, head dim 128, 8K): xformers 97, FlashAttention-2 201 TFLOPS."""
    assert load_constants().mem_efficient_over_fa2 == pytest.approx(97 / 201, abs=5e-4)


def _rates() -> Rates:
    return Rates(gemm_flops=1e14, gemm_peak_flops=1e14, flash_flops=1e14, hbm_bytes_s=1e12, intra_busbw=1e9,
                 inter_nic=1e9, kernel_fixed_s=0.0, act_bytes=2.0)


@settings(max_examples=40, deadline=None)
@given(span=st.sampled_from([256, 1024, 4096, 8192, 32768]), rows=st.sampled_from([1, 2, 8]))
def test_a_masked_call_runs_every_key_of_the_square(span, rows):
    """Same rate: the full square over the causal row's tiles (calibration.causal_tiles' count), both passes."""
    shapes = ModelShapes.of(load_preset("llama-3.1-8b"))
    tok = float(rows * span)
    kw = {"flash": True, "flash_rate": 1e14, "flash_bwd_over_fwd": 3.1, "attention_span": 0.0}
    causal = _attention_core(shapes, tok, rows, 1.0, float(span), 1.0, _rates(), **kw)
    square = _attention_core(shapes, tok, rows, 1.0, float(span), 1.0, _rates(), full_square=True, **kw)
    for c, q in zip(causal, square, strict=True):
        assert float(q) / float(c) == pytest.approx(1.0 / float(causal_fraction(span)), rel=1e-9)


def test_the_step_grows_with_the_square_and_the_cost_is_attention_alone():
    """A masked job is never faster, and its extra time grows faster than the tokens (the s^2 core): the gap is
    about 4x the causal FA2 attention core at 8K (twice the keys at 0.483 of the rate)."""
    extra = [(_step_s(seq_len=s, mask=True) - _step_s(seq_len=s)) / s for s in (1024, 4096, 8192)]
    assert all(e > 0.0 for e in extra)
    assert extra[0] < extra[1] < extra[2]


def test_every_part_is_charged_alike():
    """The share is one figure for every family: an A100 and an RTX PRO 6000 job grow like the H100's."""
    for acc in ("a100-sxm-80gb", "rtx-pro-6000"):
        assert _step_s(mask=True, accelerator=acc) > _step_s(accelerator=acc)
    assert np.isfinite(_step_s(mask=True, flash_attention=False))  # no fused kernel: the eager path, unchanged
    assert _step_s(mask=True, flash_attention=False) == _step_s(flash_attention=False)
