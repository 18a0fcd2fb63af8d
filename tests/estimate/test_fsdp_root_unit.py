"""The FSDP root unit on the PyTorch-native styles other than torchtune (memory.py _fsdp_root_unit): torchtitan's
apply_fsdp and AutoModel's dense path leave the embedding, final norm and LM head in the root, which FSDP2 never
reshards after forward, so their 16-bit copies (and in full training the LM head's gradient) stay on the GPU through
the backward; FSDP1 (HF Trainer fsdp) keeps its root's whole flat parameter and flat gradient. Sharded as their own
units (strategy shard_embedding_head_separately: OLMo-core, AutoModel's MoE path) they hold nothing more, nor on one
rank or under pipelining; torchtitan's own [norm, output] unit (apply_fsdp from 2025-07-28) is gathered in the loss
phase, where these 8B jobs peak, beside the one layer its backward prefetches (memory._titan_loss_units,
docs/known-gaps.md 275 (b))."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.models import load_model

MODEL = load_model("llama-3.1-8b")
NODE = System(accelerator="h100-sxm-80gb", gpus=8, gpus_per_node=8, memory_gib=80.0, peak_tflops={"bf16": 989.0},
              hbm_gb_s=3350.0, intra_node_gb_s=450.0)
ROOT = 2.0 * (MODEL.embedding_params + MODEL.lm_head_params + MODEL.final_norm_params)
HEAD = 2.0 * MODEL.lm_head_params
NORM = 2.0 * MODEL.final_norm_params
LAYER = 2.0 * (MODEL.params_total - MODEL.embedding_params - MODEL.lm_head_params - MODEL.final_norm_params) / MODEL.layers
LAYER_NORMS = 2.0 * 2 * MODEL.hidden  # a layer's two RMSNorm weights, 16-bit


def _buffers(framework: str = "torchtitan", method: str = "pretrain", own: bool | None = None, dp: int = 8,
             tp: int = 1, pp: int = 1, fsdp: str = "none", accum: int = 8) -> float:
    training = Training(method=method, seq_len=4096, global_batch_seqs=accum * dp,
                        **({"lora_rank": 16, "lora_targets": ("q_proj", "v_proj")} if method == "lora" else {}))
    st = Strategy(dp=dp, tp=tp, pp=pp, zero=3, micro_batch=1, recompute="full", framework=framework,
                  shard_embedding_head_separately=own, fsdp=fsdp)
    system = NODE if dp * tp * pp <= 8 else System(**{**NODE.__dict__, "gpus": dp * tp * pp})
    return estimate_memory(MODEL, training, system, st, check=False).items_bytes["framework_buffers"]


def test_torchtitan_root_holds_the_16_bit_embedding_norm_head_and_the_head_gradient():
    """In the loss phase: the root (embedding, norm, head, the head's gradient) beside two layers and a layer's
    gradient, against torchtitan's own head unit (head and norm) beside the one prefetched layer."""
    assert _buffers() - _buffers(own=True) == pytest.approx(ROOT + HEAD + 3 * LAYER - (HEAD + NORM + LAYER), rel=1e-6)


def test_a_frozen_root_holds_its_weights_only():
    assert _buffers(method="lora") - _buffers(method="lora", own=True) == pytest.approx(
        ROOT + 2 * LAYER - (HEAD + NORM + LAYER), rel=1e-6)


def test_fsdp1_keeps_the_whole_flat_gradient_of_the_root():
    assert _buffers("fsdp") - _buffers("fsdp", own=True) == pytest.approx(2 * ROOT, rel=1e-6)


def test_tp_shards_the_root_like_the_layers():
    root = (ROOT - NORM) / 2 + NORM + HEAD / 2  # the root's TP shards and its whole norm
    layer = (LAYER - LAYER_NORMS) / 2 + LAYER_NORMS  # a layer's TP shard and its replicated norms
    assert _buffers(tp=2, dp=4) - _buffers(tp=2, dp=4, own=True) == pytest.approx(
        root + 2 * layer - (HEAD / 2 + NORM), rel=1e-6)


@pytest.mark.parametrize("method", ["pretrain", "lora"])
def test_hf_under_accelerate_fsdp_holds_the_root_and_the_head_gradient(method):
    """HF Trainer / Axolotl with fsdp: accelerate's wrap leaves the embedding, norm and head in the root unit. With
    more than one micro-batch a step the head's gradient is in FSDP1's unsharded hold instead (docs/known-gaps.md
    250 (a)), so the root adds its weights only."""
    grad = HEAD if method == "pretrain" else 0.0
    assert _buffers("hf", method, fsdp="full", accum=1) - _buffers("hf", method, own=True, fsdp="full", accum=1) == \
        pytest.approx(ROOT + grad, rel=1e-6)
    assert _buffers("hf", method, fsdp="full") - _buffers("hf", method, own=True, fsdp="full") == pytest.approx(
        ROOT, rel=1e-6)


def test_hf_on_deepspeeds_engine_holds_no_root():
    """hf with zero 3 and no fsdp runs DeepSpeed's engine, which gathers module by module (no FSDP root)."""
    assert _buffers("hf") == _buffers("hf", own=True)


@pytest.mark.parametrize("kw", [{"dp": 1}, {"dp": 4, "pp": 2}])
def test_one_rank_or_a_pipeline_holds_nothing_more(kw):
    assert _buffers(**kw) == _buffers(own=True, **kw)


@pytest.mark.parametrize("framework", ["megatron-core", "deepspeed", "torchtune"])
def test_other_styles_keep_their_own_accounting(framework):
    """Megatron-Core / DeepSpeed wrap differently; torchtune's root is _torchtune_fsdp2_end_units'."""
    if framework == "torchtune":
        assert _buffers(framework) - _buffers(framework, own=True) != pytest.approx(ROOT + HEAD, rel=1e-3)
    else:
        assert _buffers(framework) == _buffers(framework, own=True)


@settings(max_examples=10, deadline=None)
@given(hs.sampled_from(["pretrain", "lora"]), hs.sampled_from([2, 4, 8]))
def test_the_root_never_holds_less_than_its_own_units(method: str, dp: int):
    assert _buffers(method=method, dp=dp) >= _buffers(method=method, dp=dp, own=True)


@pytest.mark.parametrize("framework", ["torchtitan", "fsdp", "hf", "torchtune"])
def test_one_data_parallel_rank_gathers_nothing(framework):
    """Nothing is sharded at one rank: torchtitan applies no FSDP (fsdp_enabled needs dp_shard > 1), FSDP1 switches to
    NO_SHARD, AutoModel returns the model unwrapped, torchtune runs its single-device recipe (docs/known-gaps.md
    42 (a)): no gathered layer beside the resident weights. At two ranks the layers are gathered again."""
    # the HF Trainer on FSDP (fsdp full); with zero 3 alone it runs DeepSpeed's engine (the test below)
    one = Strategy(dp=1, zero=3, micro_batch=1, recompute="full", framework=framework,
                   fsdp="full" if framework == "hf" else "none")
    training = Training(method="lora", seq_len=4096, global_batch_seqs=8, lora_rank=16, lora_targets=("q_proj",))
    system = System(**{**NODE.__dict__, "gpus": 1, "gpus_per_node": 1})
    assert estimate_memory(MODEL, training, system, one, check=False).items_bytes["framework_buffers"] == 0.0
    assert _buffers(framework, method="lora", dp=2) > 0.0


def test_deepspeed_zero3_still_gathers_at_one_rank():
    """DeepSpeed ZeRO-3 partitions into one shard and gathers each module into its own buffer even at one rank."""
    training = Training(method="pretrain", seq_len=4096, global_batch_seqs=8)
    system = System(**{**NODE.__dict__, "gpus": 1, "gpus_per_node": 1})
    for framework in ("deepspeed", "hf"):  # hf with zero 3 and no fsdp: the HF Trainer on DeepSpeed's engine
        one = Strategy(dp=1, zero=3, micro_batch=1, recompute="full", framework=framework)
        assert estimate_memory(MODEL, training, system, one, check=False).items_bytes["framework_buffers"] > 0.0
