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


def _sdpa_job_s(accelerator: str, kernel: str | None, mask: bool) -> float:
    strategy = {"micro_batch": 2, "recompute": "full", "framework": "hf"}
    if kernel:
        strategy["attention_kernel"] = kernel
    return _step_s(accelerator=accelerator, mask=mask, strategy=strategy)


def test_rocm_runs_the_masked_call_on_its_flash_kernel_not_at_the_cuda_ratio():
    """On ROCm SDPA's memory-efficient backend is AOTriton's attn_fwd, the flash backend's own kernel, given the mask as
    its bias (sdp_utils.cpp "ME and FA share the backend"; perf_constants.yaml attention.mem_efficient_is_flash_vendors):
    halving the CUDA ratio moves the H100's masked job and leaves the MI300X's."""
    k = load_constants()
    assert CAT.accelerators["mi300x"].vendor in k.mem_efficient_is_flash_vendors
    assert CAT.accelerators["h100-sxm-80gb"].vendor not in k.mem_efficient_is_flash_vendors
    parts = ("mi300x", "h100-sxm-80gb")
    before = {acc: _step_s(mask=True, accelerator=acc) for acc in parts}
    ratio = k.mem_efficient_over_fa2
    object.__setattr__(k, "mem_efficient_over_fa2", ratio / 2)
    try:
        after = {acc: _step_s(mask=True, accelerator=acc) for acc in parts}
    finally:
        object.__setattr__(k, "mem_efficient_over_fa2", ratio)
    assert after["mi300x"] == before["mi300x"]
    assert after["h100-sxm-80gb"] > before["h100-sxm-80gb"]


@pytest.mark.parametrize("acc", ["mi300x", "mi355x"])
def test_rocm_masked_time_is_sdpas_whatever_kernel_the_style_times(acc):
    """Under a mask SDPA runs (AOTriton) whichever kernel the style would time unmasked (hf: FA2): the masked job is
    the same under either, and never faster than the unmasked SDPA job (the whole square, not the causal half)."""
    assert _sdpa_job_s(acc, None, True) == pytest.approx(_sdpa_job_s(acc, "sdpa", True), rel=1e-12)
    assert _sdpa_job_s(acc, "sdpa", True) > _sdpa_job_s(acc, "sdpa", False)


def _padded_job(**over) -> dict:
    """An hf LoRA job over unpacked samples of spread lengths, micro-batch 4 (dynamic padding to the longest)."""
    job = _job(seq_len=2048, data={"samples": 2e4, "avg_tokens": 400, "length_sigma": 0.6},
               strategy={"micro_batch": 4, "recompute": "full", "framework": "hf", "attention_kernel": "sdpa"})
    job["global_batch"] = {"sequences": 4}
    for key, value in over.items():
        if key in ("micro_batch", "framework", "attention_kernel"):
            job["strategy"][key] = value
        elif key in ("length_sigma",):
            job["data"][key] = value
        else:
            job[key] = value
    return job


def _resolved_mask(**over) -> bool:
    return resolve_job(_padded_job(**over), CAT).training.explicit_attention_mask


def test_hf_sdpa_over_a_padded_micro_batch_defaults_to_the_mask():
    """transformers (every release with SDPA) hands SDPA the padding mask of a padded batch: the default follows."""
    assert _resolved_mask() is True
    assert _resolved_mask(packing=False, pad_share=0.2, micro_batch=1, length_sigma=0.0) is True


@pytest.mark.parametrize("over", [
    {"micro_batch": 1},  # one sample a micro-batch: padded to itself, nothing masked
    {"length_sigma": 0.0},  # every sample the same length: no padding
    {"attention_kernel": "fa2"},  # flash_attention_2 unpads (varlen): no mask
    {"framework": "torchtune"},  # torchtune's SDPA call is is_causal over the padded rows
    {"flash_attention": False},  # eager attention: the mask is added to the materialised scores
])
def test_no_default_mask_where_the_job_does_not_state_a_padded_sdpa_batch(over):
    assert _resolved_mask(**over) is False


def test_a_stated_value_wins_over_the_default():
    assert _resolved_mask(explicit_attention_mask=False) is False
    assert _resolved_mask(micro_batch=1, explicit_attention_mask=True) is True


def _memory(**kw) -> dict:
    return evaluate(resolve_job(_job(**kw), CAT), CAT)["memory"]


@pytest.mark.parametrize("precision, width", [("bf16", 2), ("fp32", 4)])
def test_the_mask_is_held_as_micro_batch_times_the_square_in_the_model_dtype(precision, width):
    """transformers' 4-D mask: (micro-batch, 1, s, s) in the model dtype, counted among the activations; an unmasked
    job has no such item (known-gaps 181)."""
    masked = _memory(mask=True, precision=precision)
    assert float(masked["items"]["attention_mask"]["gib"]) == pytest.approx(2 * 8192**2 * width / 2**30, rel=1e-3)
    assert "attention_mask" not in _memory(mask=False, precision=precision)["items"]
