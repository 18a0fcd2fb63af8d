"""The gradients the HF Trainer and torchtune free at each step (estimate.grad_segments, memory._backward_phases;
docs/known-gaps.md 242): the next step's loss phase allocates none of them with one micro-batch a step, the optimizer
step holds them all, and the caching allocator keeps the part of them the loss path's freed blocks could not hold."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.estimate.grad_segments import freed_layer_blocks, fresh_gradients, kept_gradient_segments
from trainsizer.estimate.memory import GIB, estimate_memory
from trainsizer.scenario import resolve_job

CAT = load_catalog([])


def _est(model: str = "llama-3.1-8b", micro_batch: int = 8, accumulation: int = 1, precision: str = "bf16",
         seq_len: int = 2048, accelerator: str = "h200-sxm-141gb", **strategy):
    job = {"model": model, "method": "full", "data": {"tokens": 1e8}, "seq_len": seq_len,
           "global_batch": {"sequences": micro_batch * accumulation}, "precision": precision,
           "hardware": {"accelerator": accelerator, "count": 1},
           "strategy": {"micro_batch": micro_batch, "recompute": "full", "framework": "hf", **strategy}}
    sc = resolve_job(job, CAT)
    return estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False)


@pytest.mark.parametrize(("name", "hf_auto", "zero", "n_micro", "pp", "engine", "fresh"), [
    ("hf", False, 0, 1, 1, False, True),
    ("hf", False, 0, 2, 1, False, False),  # accumulation: a later micro-batch holds them all
    ("hf", False, 0, 1, 2, False, False),  # a pipeline's stages hold them across micro-batches
    ("hf", False, 2, 1, 1, True, False),  # DeepSpeed's ZeRO-2 keeps its own partitions
    ("hf", False, 3, 1, 1, True, False),  # ... and ZeRO-3 on its engine
    ("hf", False, 3, 1, 1, False, True),  # FSDP under accelerate: the Trainer's zero_grad frees the shards
    ("auto", True, 0, 1, 1, False, True),
    ("auto", False, 0, 1, 1, False, False),  # auto resolving to Megatron-Core or torchtitan
    ("torchtune", False, 3, 1, 1, False, True),
    ("megatron-core", False, 0, 1, 1, False, False),
    ("deepspeed", False, 0, 1, 1, False, False),
])
def test_which_loops_create_every_gradient_in_the_backward(name, hf_auto, zero, n_micro, pp, engine, fresh):
    assert bool(fresh_gradients(name, hf_auto, zero, n_micro, pp, engine)) is fresh


@settings(max_examples=50, deadline=None)
@given(freed=st.floats(0, 1e11), blocks=st.floats(0, 1e11), more=st.floats(0, 1e10))
def test_the_kept_segments_are_at_most_the_freed_gradients_and_shrink_with_the_loss_blocks(freed, blocks, more):
    kept = float(kept_gradient_segments(freed, blocks))
    assert 0.0 <= kept <= freed
    assert float(kept_gradient_segments(freed, blocks + more)) <= kept
    assert float(kept_gradient_segments(freed, 0.0)) == freed


def test_one_micro_batch_leaves_the_loss_phase_the_heads_gradient_alone():
    """Llama 3.1 8B, full fine-tuning, micro-batch 8 of 2,048 positions on an H200: the loss phase holds the LM head's
    gradient only, where two micro-batches a step hold every gradient."""
    one, two = _est(), _est(accumulation=2)
    assert two.items_bytes["gradients"] > 5 * GIB
    head = one.items_bytes["gradients"]
    assert 0 < head < 0.15 * two.items_bytes["gradients"]
    assert one.per_gpu_bytes < two.per_gpu_bytes - 4 * GIB


def test_the_optimizer_step_holds_every_gradient():
    """Where the step peaks (micro-batch 1, torch's foreach AdamW: a moment-sized temporary), its items hold every
    gradient, not the loss phase's head alone, and so does the after-step figure."""
    est = _est(micro_batch=1, optimizer_impl="foreach")
    held = _est(micro_batch=1, accumulation=2, optimizer_impl="foreach")
    assert est.peak_phase == "optimizer step"
    assert est.items_bytes["gradients"] == pytest.approx(held.items_bytes["gradients"])
    assert est.after_step_bytes == pytest.approx(held.after_step_bytes)


def test_fp32_gradients_larger_than_the_loss_blocks_stay_reserved():
    """Llama-2-7B in fp32 without recompute at 7 x 512 positions: 25 GiB of fp32 gradients against about 2 GiB of
    loss-path blocks, and the layers' freed token-row saves (3,584 x 4 B a row) smaller than a gradient of their width
    (4,096 x 4 B), so the most of them keep segments of their own beside the loss phase (cached only: not in the
    allocated reading); none under expandable segments, whose freed ranges merge; never past the card (a failing
    cudaMalloc frees wholly free segments): on an H200 they are cut to what the card leaves."""
    run = {"model": "llama-2-7b", "micro_batch": 7, "seq_len": 512, "precision": "fp32", "recompute": "none"}
    est = _est(accelerator="mi300x", **run)
    kept = est.items_bytes.get("freed_gradient_segments", 0.0)
    grads = 4.0 * 6.7e9
    assert 0.8 * grads < kept < grads
    exp = _est(accelerator="mi300x", allocator_expandable_segments=True, **run)
    assert exp.items_bytes.get("freed_gradient_segments", 0.0) == 0.0
    h200 = _est(**run)
    assert h200.per_gpu_bytes == pytest.approx(h200.capacity_bytes)
    assert h200.items_bytes["freed_gradient_segments"] < kept


def test_without_recompute_the_freed_layer_saves_hold_the_gradients():
    """AMD's ROCm blog run, 4 x 1,024 positions without recompute (docs/known-gaps.md 254 (a)): each layer's backward
    frees its saved activations (token x h and token x ffn fp32 blocks at 4,096 tokens) before the layers below make
    their h x h and h x ffn gradients, so none keeps a segment of its own."""
    est = _est(model="llama-2-7b", micro_batch=4, seq_len=1024, precision="fp32", recompute="none",
               accelerator="mi300x")
    assert est.peak_phase == "forward/backward" and est.items_bytes["layer_activations"] > 30 * GIB
    assert est.items_bytes.get("freed_gradient_segments", 0.0) == 0.0


@settings(max_examples=50, deadline=None)
@given(freed=st.floats(0, 1e11), loss=st.floats(0, 1e10), layer=st.floats(0, 1e10), more=st.floats(0, 1e9),
       n=st.integers(1, 128))
def test_the_freed_layer_blocks_only_shrink_the_kept_segments(freed, loss, layer, more, n):
    """Never more than without them, never below one layer's share beyond the loss blocks, and less the more each
    layer frees."""
    kept = float(kept_gradient_segments(freed, loss, layer, n))
    assert kept <= float(kept_gradient_segments(freed, loss)) + 1e-3
    assert kept >= freed / n - loss - 1e-3
    assert float(kept_gradient_segments(freed, loss, layer + more, n)) <= kept + 1e-3


def test_the_freed_layer_blocks_need_no_recompute_and_blocks_as_large_as_a_gradient():
    acts, n, h = 32e9, 32, 4096
    assert float(freed_layer_blocks(acts, n, True, 4096, 4.0, h, 4.0)) == pytest.approx(1e9)
    assert float(freed_layer_blocks(acts, n, False, 4096, 4.0, h, 4.0)) == 0.0  # recompute
    assert float(freed_layer_blocks(acts, n, True, 2048, 2.0, h, 4.0)) == 0.0  # bf16 saves, fp32 gradients
    assert float(freed_layer_blocks(acts, n, True, 64, 2.0, 0.0, 4.0)) == pytest.approx(1e9)  # adapters only


def test_logit_sized_blocks_hold_the_gradients():
    """The 8B at micro-batch 8: the loss path's freed fp32 blocks (about 8 GiB each) hold every gradient: none kept."""
    assert _est().items_bytes.get("freed_gradient_segments", 0.0) == 0.0


def test_vectorised_and_scalar_agree():
    """fresh_gradients over arrays gives each element's scalar answer."""
    z, n, p = np.array([0, 3, 1, 0]), np.array([1, 1, 1, 2]), np.array([1, 1, 1, 1])
    eng = np.array([False, False, True, False])
    got = fresh_gradients("hf", False, z, n, p, eng)
    assert list(got) == [bool(fresh_gradients("hf", False, z[i], n[i], p[i], eng[i])) for i in range(4)]
