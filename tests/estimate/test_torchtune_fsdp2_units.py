"""torchtune's FSDP2 units outside the decoder layers (memory.py _torchtune_fsdp2_end_units): the root unit keeps the
embedding, final norm and LM head gathered through the step unless they are their own units
(Strategy.shard_embedding_head_separately, torchtune's custom_sharded_layers), which are gathered in the LM-head
backward beside its gradient and the prefetched last layer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.models import load_model
from trainsizer.spec.job import StrategySpec

MODEL = load_model("llama-3.1-70b")
NODE = System(accelerator="a100-sxm-80gb", gpus=8, gpus_per_node=8, memory_gib=80.0, peak_tflops={"bf16": 312.0},
              hbm_gb_s=2039.0, intra_node_gb_s=300.0)
LORA = {"lora_rank": 16, "lora_targets": ("q_proj", "k_proj", "v_proj")}


def _buffers(framework: str = "torchtune", method: str = "lora", micro_batch: int = 2, **kw) -> float:
    training = Training(method=method, seq_len=2048, global_batch_seqs=8 * micro_batch,
                        **(LORA if method == "lora" else {}))
    st = Strategy(dp=8, zero=3, micro_batch=micro_batch, recompute="full", framework=framework, **kw)
    return estimate_memory(MODEL, training, NODE, st, check=False).items_bytes["framework_buffers"]


def _layer_bytes() -> float:
    return 2.0 * (MODEL.params_total - MODEL.embedding_params - MODEL.lm_head_params
                  - MODEL.final_norm_params) / MODEL.layers


def test_lora_root_unit_stays_gathered():
    """LoRA (frozen root): the 16-bit embedding, final norm and LM head on top of the two gathered layers; as their
    own units, the head gathered in its backward beside the prefetched last layer instead."""
    root = 2.0 * (MODEL.embedding_params + MODEL.lm_head_params + MODEL.final_norm_params)
    layer, head, norm = _layer_bytes(), 2.0 * MODEL.lm_head_params, 2.0 * MODEL.final_norm_params
    assert _buffers() == pytest.approx(2 * layer + root, rel=1e-3)
    assert _buffers(shard_embedding_head_separately=True) == pytest.approx(max(2 * layer, head + layer) + norm,
                                                                           rel=1e-3)


def test_own_head_unit_is_gathered_with_its_gradient_and_the_next_layer():
    """Full training, head its own unit: head weight + twice its gradient (chunked head) + one layer, when larger
    than two gathered layers and a layer's gradient."""
    own = _buffers(method="full", shard_embedding_head_separately=True)
    layer = _layer_bytes()
    head = 2.0 * MODEL.lm_head_params
    assert own == pytest.approx(max(3 * layer, 3 * head + layer) + 2.0 * MODEL.final_norm_params, rel=1e-3)


def test_other_styles_keep_their_wrapping():
    assert _buffers("torchtitan") == _buffers("torchtitan", shard_embedding_head_separately=True)


@settings(max_examples=10, deadline=None)
@given(hs.sampled_from(["full", "lora"]), hs.integers(min_value=1, max_value=4))
def test_separate_units_never_hold_more_than_the_root(method: str, micro_batch: int):
    """The root holds the head and embedding through the step (and full training their gradients): sharding
    them separately never needs more."""
    assert _buffers(method=method, micro_batch=micro_batch, shard_embedding_head_separately=True) <= _buffers(
        method=method, micro_batch=micro_batch) + 1.0


def test_job_option_is_a_boolean():
    assert StrategySpec(shard_embedding_head_separately=True).shard_embedding_head_separately is True
    with pytest.raises(ValueError):
        StrategySpec(shard_embedding_head_separately="both")
