"""torchtitan's FSDP2 units in the backward (memory.py _fsdp2_reduce_scatter_hold, _titan_loss_units; known-gaps
275 (a) / (b)): each layer's backward runs beside the previous unit's reduce-scatter input in the reduce dtype (fp32
by default, 16-bit under grad_reduce_in_fp32 false), held in comm_ctx.reduce_scatter_state until the next unit's
post_backward; where the embedding and the [norm, output] pair are their own units
(shard_embedding_head_separately, apply_fsdp from 2025-07-28), the loss phase holds the head's unit beside the one
layer its backward prefetches, and the layer phase no root."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.models import load_model

MODEL = load_model("llama-3.1-70b")
MOE = load_model("mixtral-8x7b")  # layers larger than its LM head (vocabulary 32,000)
NODE = System(accelerator="h100-sxm-80gb", gpus=8, gpus_per_node=8, memory_gib=80.0, peak_tflops={"bf16": 989.0},
              hbm_gb_s=3350.0, intra_node_gb_s=450.0)
LAYER_P = (MODEL.params_total - MODEL.embedding_params - MODEL.lm_head_params - MODEL.final_norm_params) / MODEL.layers
ROOT = 2.0 * (MODEL.embedding_params + MODEL.lm_head_params + MODEL.final_norm_params) + 2.0 * MODEL.lm_head_params
HEAD_UNIT = 2.0 * (MODEL.lm_head_params + MODEL.final_norm_params)  # the head unit's 16-bit weights


def _items(framework: str = "torchtitan", loss_impl: str = "chunked", dp: int = 8, pp: int = 1, model=MODEL,
           **kw) -> dict[str, float]:
    """Full training of a 70B model on 8 GPUs under FSDP2 with full recompute: the chunked loss leaves the layer
    phase the peak, torchtitan's compiled loss over 16-bit logits (a larger micro-batch) the loss phase."""
    micro = 2 if loss_impl == "chunked" else 8
    training = Training(method="full", seq_len=4096, global_batch_seqs=dp * micro * pp)
    st = Strategy(dp=dp, pp=pp, zero=3, micro_batch=micro, recompute="full", framework=framework,
                  loss_impl=loss_impl, **kw)
    return estimate_memory(model, training, NODE, st, check=False).items_bytes


def _layer_phase(items: dict[str, float]) -> bool:
    return items["recompute_working_set"] > 0.0


def test_layer_phase_holds_the_previous_layers_fp32_reduce_scatter_input():
    """Layer phase: two gathered layers, the layer's 16-bit gradient and the previous layer's fp32 reduce-scatter
    input (4 B a parameter) beside the root unit; 2 B a parameter under a bf16 reduce."""
    items = _items()
    assert _layer_phase(items)
    assert items["framework_buffers"] == pytest.approx(6.0 * LAYER_P + 4.0 * LAYER_P + ROOT, rel=1e-3)
    bf16 = _items(grad_reduce_in_fp32=False)
    assert items["framework_buffers"] - bf16["framework_buffers"] == pytest.approx(2.0 * LAYER_P, rel=1e-3)


def test_loss_phase_holds_no_reduce_scatter_input():
    """The loss phase precedes the first reduce-scatter: two gathered layers, a gradient and the root alone."""
    items = _items(loss_impl="compiled")
    assert not _layer_phase(items)
    assert items["framework_buffers"] == pytest.approx(6.0 * LAYER_P + ROOT, rel=1e-3)


def test_own_head_unit_is_held_in_the_loss_phase_only():
    """Embedding and [norm, output] as their own units: the loss phase holds the head's unit and one prefetched
    layer (the 70B model, whose loss phase then wins), the layer phase no root (Mixtral, whose layer and its
    reduce-scatter input are larger than the head)."""
    loss = _items(loss_impl="compiled", shard_embedding_head_separately=True)
    assert not _layer_phase(loss)
    assert loss["framework_buffers"] == pytest.approx(2.0 * LAYER_P + HEAD_UNIT, rel=1e-3)
    layer = _items(model=MOE, shard_embedding_head_separately=True)
    assert _layer_phase(layer)
    moe_layer_p = (MOE.params_total - MOE.embedding_params - MOE.lm_head_params - MOE.final_norm_params) / MOE.layers
    assert layer["framework_buffers"] == pytest.approx(10.0 * moe_layer_p, rel=1e-3)


def test_other_styles_and_layouts_hold_no_reduce_scatter_input():
    """torchtune's units are its own (`_torchtune_fsdp2_phase_units`); one data-parallel rank shards nothing. (A
    pipelined stage accumulates its gradients unsharded in the reduce dtype instead: `_overheads` pp_hold.)"""
    for kw in ({"framework": "torchtune"}, {"dp": 1}):
        fp32, bf16 = _items(**kw), _items(grad_reduce_in_fp32=False, **kw)
        assert fp32["framework_buffers"] - bf16["framework_buffers"] == pytest.approx(0.0, abs=1.0), kw


@settings(max_examples=10, deadline=None)
@given(hs.sampled_from(["chunked", "compiled"]), hs.booleans(), hs.booleans())
def test_a_larger_reduce_dtype_never_lowers_the_peak(loss_impl: str, own: bool, fp32: bool):
    """The fp32 reduce-scatter input holds at least the 16-bit one's bytes, in whichever phase wins."""
    kw = {"loss_impl": loss_impl, "shard_embedding_head_separately": own}
    wide, narrow = _items(grad_reduce_in_fp32=None if fp32 else True, **kw), _items(grad_reduce_in_fp32=False, **kw)
    assert sum(wide.values()) >= sum(narrow.values()) - 1.0
