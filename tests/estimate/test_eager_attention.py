"""flash_attention: false on the HF stack (attn_implementation "eager", or a remote-code model run without flash-attn):
QK^T materialised as a b x heads x s x s tensor, softmax upcast to fp32 and cast back (transformers' eager_attention_
forward: softmax(..., dtype=torch.float32).to(query.dtype)), then PV. Both probability tensors are saved for backward,
so the saved bytes grow with s^2, and the two batched GEMMs plus the softmax passes over s^2 elements cost time."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.estimate.activations import layer_items
from trainsizer.estimate.inputs import Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import estimate_time
from trainsizer.scenario import resolve_job


def _scenario(seq: int, flash: bool, recompute: str = "none"):
    job = {"model": "llama-2-7b", "method": "lora", "lora": {"rank": 8}, "data": {"tokens": 1e8}, "seq_len": seq,
           "global_batch": {"sequences": 8}, "flash_attention": flash,
           "hardware": {"accelerator": "a100-sxm-80gb", "count": 1},
           "strategy": {"micro_batch": 1, "recompute": recompute, "framework": "hf"}}
    return resolve_job(job, load_catalog())


def _saved(seq: int, flash: bool) -> float:
    sc = _scenario(seq, flash)
    return estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False).items_bytes["layer_activations"]


def test_hf_eager_saves_the_fp32_probabilities_and_their_16_bit_copy():
    sc = _scenario(2048, False)
    items = layer_items(sc.model, Training(seq_len=2048, flash_attention=False), moe=False, recompute="none",
                        profile="hf", impl="eager")
    assert items.detail["scores_per_key"] == (4 + 2) * sc.model.heads  # bytes a token and key: fp32 + bf16


@pytest.mark.parametrize("seq", [2048, 4096])
def test_eager_score_memory_grows_with_the_square_of_the_length(seq):
    """What eager keeps beyond flash: per layer 6 heads bytes a token and key, s^2 a sequence (plus a few per-token
    tensors): doubling s multiplies it by nearly 4."""
    extra = _saved(seq, False) - _saved(seq, True)
    doubled = _saved(2 * seq, False) - _saved(2 * seq, True)
    sc = _scenario(seq, False)
    # the per-token tensors each kernel keeps differ by a little (eager: K and V for the score GEMMs; flash: its
    # output and log-sum-exp), so the s^2 term is all but the whole difference
    assert extra == pytest.approx(sc.model.layers * 6 * sc.model.heads * seq**2, rel=0.03)
    assert 3.9 < doubled / extra < 4.1


def test_eager_attention_costs_more_time_the_longer_the_sequence():
    def ratio(seq):
        e, f = (_scenario(seq, flash, "full") for flash in (False, True))
        te = estimate_time(e.model, e.training, e.system, e.strategy, memory_note=False).step_s
        tf = estimate_time(f.model, f.training, f.system, f.strategy, memory_note=False).step_s
        return te / tf
    assert 1.0 < ratio(1024) < ratio(4096)
