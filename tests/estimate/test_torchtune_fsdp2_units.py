"""torchtune's FSDP2 units outside the decoder layers (memory.py _torchtune_fsdp2_end_units): the root unit keeps the
embedding, final norm and LM head gathered through the step unless they are their own units
(Strategy.shard_embedding_head_separately, torchtune's custom_sharded_layers), which are gathered in the LM-head
backward beside its gradient. The gathered decoder layers are those of the peak phase
(_torchtune_fsdp2_phase_units): the loss phase holds the last layer, prefetched; a layer phase the layer being run
and the next one prefetched, with the unsharded gradient."""

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


def _items(framework: str = "torchtune", method: str = "lora", micro_batch: int = 2, **kw) -> dict[str, float]:
    training = Training(method=method, seq_len=2048, global_batch_seqs=8 * micro_batch,
                        **(LORA if method == "lora" else {}))
    # compiled unless a test says (torchtune compiles only with compile: true; the chunked loss's phases as compiled)
    st = Strategy(dp=8, zero=3, micro_batch=micro_batch, recompute="full", framework=framework,
                  **{"torch_compile": True, **kw})
    return estimate_memory(MODEL, training, NODE, st, check=False).items_bytes


def _buffers(framework: str = "torchtune", method: str = "lora", micro_batch: int = 2, **kw) -> float:
    return _items(framework, method, micro_batch, **kw)["framework_buffers"]


def _layer_bytes() -> float:
    return 2.0 * (MODEL.params_total - MODEL.embedding_params - MODEL.lm_head_params
                  - MODEL.final_norm_params) / MODEL.layers


ROOT = 2.0 * (MODEL.embedding_params + MODEL.lm_head_params + MODEL.final_norm_params)
HEAD, NORM = 2.0 * MODEL.lm_head_params, 2.0 * MODEL.final_norm_params


def test_lora_root_unit_stays_gathered():
    """LoRA (frozen root): the 16-bit embedding, final norm and LM head beside two gathered layers where a layer's
    backward is the peak (chunked loss), beside the one prefetched last layer where the loss phase is (fp32
    logits of the unchunked loss)."""
    layer = _layer_bytes()
    assert _items()["logits"] == 0.0  # the layer phase wins
    assert _buffers() == pytest.approx(2 * layer + ROOT, rel=1e-3)
    assert _items(loss_impl="compiled-fp32")["logits"] > 0.0  # the loss phase wins
    assert _buffers(loss_impl="compiled-fp32") == pytest.approx(layer + ROOT, rel=1e-3)


def test_own_head_unit_is_gathered_in_the_loss_phase_beside_the_last_layer():
    """LoRA, head its own unit, loss phase: the head and the prefetched last layer (the root keeps the norm)."""
    assert _items(shard_embedding_head_separately=True)["logits"] > 0.0
    assert _buffers(shard_embedding_head_separately=True) == pytest.approx(HEAD + _layer_bytes() + NORM, rel=1e-3)


def test_full_training_layer_phase_holds_two_layers_and_a_gradient():
    """Full training, head its own unit, a layer's backward the peak: two layers and one layer's gradient."""
    assert _items(method="full", shard_embedding_head_separately=True)["logits"] == 0.0
    assert _buffers(method="full", shard_embedding_head_separately=True) == pytest.approx(
        3 * _layer_bytes() + NORM, rel=1e-3)


@settings(max_examples=12, deadline=None)
@given(hs.sampled_from(["full", "lora"]), hs.integers(min_value=1, max_value=4), hs.booleans(),
       hs.sampled_from(["chunked", "compiled-fp32"]))
def test_gathered_units_are_the_peak_phases(method: str, micro_batch: int, own: bool, loss: str):
    """Whichever phase is the peak, the gathered units are that phase's: never more than the layer phase's two
    layers and gradient beside the held units, and one layer fewer where the loss phase wins (LoRA: no
    gradients)."""
    items = _items(method=method, micro_batch=micro_batch, shard_embedding_head_separately=own, loss_impl=loss)
    layer = _layer_bytes()
    held = NORM if own else ROOT * (2.0 if method == "full" else 1.0)
    layer_phase = held + (3 if method == "full" else 2) * layer
    if items["logits"] == 0.0 or method == "full":
        assert items["framework_buffers"] <= max(layer_phase, held + 3 * HEAD + layer) * (1 + 1e-3)
    else:
        assert items["framework_buffers"] == pytest.approx(held + layer + (HEAD if own else 0.0), rel=1e-3)


def test_other_styles_keep_their_wrapping():
    """Megatron-Core wraps no FSDP root; torchtitan-style roots are test_fsdp_root_unit.py's."""
    assert _buffers("megatron-core") == _buffers("megatron-core", shard_embedding_head_separately=True)


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
