"""Fine-tuning loss memory by implementation: HF upcasts the whole micro-batch's logits to fp32; torchtune
chunks; Liger / Unsloth fuse the LM head with the loss and keep no logits. QLoRA's non-quantised weights: fp32
under PEFT's prepare_model_for_kbit_training, bf16 in torchtune."""

from __future__ import annotations

import pytest

from trainsizer.errors import SpecError
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import GIB, STEP_STATE_ITEMS, estimate_memory
from trainsizer.models import load_model

MODEL = load_model("llama-3.1-8b")
CARD = System(accelerator="rtx-4090", gpus=1, gpus_per_node=1, memory_gib=24.0, peak_tflops={"bf16": 165.0},
              hbm_gb_s=1008.0, intra_node_gb_s=25.0)
QLORA = Training(method="qlora", seq_len=2048, global_batch_seqs=8, lora_rank=16,
                 lora_targets=("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"))


def _mem(**kw):
    return estimate_memory(MODEL, QLORA, CARD, Strategy(micro_batch=2, recompute="full", **kw))


def test_loss_memory_follows_the_implementation():
    logit_elems = 2 * 2048 * MODEL.vocab
    hf = _mem(framework="hf").items_bytes
    assert hf["logits"] + hf["loss_backward_temporaries"] == pytest.approx(12 * logit_elems)
    # chunked under torch.compile (torchtune compiles each chunk's cross-entropy): the bf16 chunks are saved and
    # turn into their bf16 gradients one chunk at a time (2 + 2 / 8); eager, each chunk's fp32 log-softmax is
    # saved and the recipe still holds the bf16 chunks when the last chunk is upcast (4 + 2 + 4 / 8)
    chunked = _mem(loss_impl="chunked", torch_compile=True).items_bytes
    assert chunked["logits"] + chunked["loss_backward_temporaries"] == pytest.approx(2.25 * logit_elems)
    eager = _mem(loss_impl="chunked", torch_compile=False).items_bytes
    assert eager["logits"] + eager["loss_backward_temporaries"] == pytest.approx(6.5 * logit_elems)
    fused = _mem(loss_impl="fused").items_bytes
    assert fused["logits"] == 0 and fused["loss_backward_temporaries"] < 0.5 * logit_elems
    assert _mem(framework="torchtune", torch_compile=True).items_bytes["logits"] == chunked["logits"]  # its own loss
    # native: the same three logit-sized tensors as upcast (log-softmax, NLL and log-softmax gradients) in 16 bit
    native = _mem(loss_impl="native").items_bytes
    assert native["logits"] == pytest.approx(2 * logit_elems)
    assert native["logits"] + native["loss_backward_temporaries"] == pytest.approx(6 * logit_elems)


def test_native_loss_fits_a_longer_sequence_than_the_upcast_loss():
    """Half the bytes per logit: the same card holds more tokens; the rest of the estimate is unchanged."""
    up, nat = _mem(loss_impl="upcast"), _mem(loss_impl="native")
    assert nat.per_gpu_bytes < up.per_gpu_bytes
    # (QLoRA: the native loss means DeepSpeed's 16-bit engine, which also keeps the residual stream and the LM
    # head's matmul 16-bit: no autocast cast of the head)
    same = {k for k in up.items_bytes
            if k not in ("logits", "loss_backward_temporaries", "fragmentation", "layer_activations",
                         "head_weight_cast", "loss_path_segments")}
    assert all(nat.items_bytes[k] == up.items_bytes[k] for k in same)


def test_qlora_keeps_linears_in_nf4_and_the_rest_16_bit_in_torchtune():
    """All linear layers NF4 with double quantisation; embeddings, norms and the LM head bf16 (torchtune) or
    fp32 (PEFT upcast). Llama 3.1 8B: 6.98e9 linear weights x (0.5 + 0.127/8) B + 1.05e9 x 2 B = 5.3 GiB."""
    tt = _mem(framework="torchtune").items_bytes
    base = (tt["base_weights_frozen"] + tt["quant_constants"]) / GIB
    assert base == pytest.approx(5.3, abs=0.1)
    hf = _mem(framework="hf", kbit_upcast=True).items_bytes  # PEFT's prepare_model_for_kbit_training
    assert (hf["base_weights_frozen"] + hf["quant_constants"]) / GIB == pytest.approx(7.25, abs=0.1)
    # unstated, hf runs TRL >= 0.26's 16-bit base as torchtune does (docs/known-gaps.md 258 (a))
    assert _mem(framework="hf").items_bytes["base_weights_frozen"] == pytest.approx(tt["base_weights_frozen"])


def test_unknown_loss_impl_is_refused():
    with pytest.raises(SpecError, match="loss_impl"):
        _mem(loss_impl="sparse")


def _titan(**kw):
    training = Training(method="pretrain", seq_len=4096, global_batch_seqs=16)
    return estimate_memory(MODEL, training, CARD, Strategy(dp=1, zero=3, micro_batch=1, recompute="full",
                                                           framework="torchtitan", **kw), check=False)


def test_torchtitan_compiles_its_loss_under_torch_compile():
    """torchtitan (2025) wraps its loss in torch.compile when compile is on: the 16-bit logits are saved and the
    backward writes their 16-bit gradient (4 B per logit element) instead of the eager upcast's 4 + 8."""
    logit_elems = 4096 * MODEL.vocab
    compiled = _titan(torch_compile=True).items_bytes
    assert compiled["logits"] + compiled["loss_backward_temporaries"] == pytest.approx(4 * logit_elems)
    eager = _titan(torch_compile=False).items_bytes
    assert eager["logits"] + eager["loss_backward_temporaries"] == pytest.approx(12 * logit_elems)
    # an explicit loss_impl wins over the framework's default (torchtitan's 2024 versions did not compile it)
    pinned = _titan(torch_compile=True, loss_impl="upcast").items_bytes
    assert pinned["logits"] == eager["logits"]


def test_transformer_engine_cross_entropy_keeps_one_16_bit_logits_buffer():
    """TE's cross-entropy writes the gradient into the 16-bit logits in the forward (Megatron-Bridge 25.11 runs it):
    2 bytes per logit element saved, no backward temporaries."""
    te = _mem(loss_impl="te").items_bytes
    compiled = _mem(loss_impl="compiled").items_bytes
    elems = 2 * QLORA.seq_len * MODEL.vocab
    assert te["logits"] == pytest.approx(2 * elems)
    assert te["loss_backward_temporaries"] == 0.0
    assert compiled["loss_backward_temporaries"] == pytest.approx(2 * elems)


def test_peft_kbit_upcast_keeps_the_checkpointed_residual_stream_in_fp32():
    """PEFT prepare_model_for_kbit_training casts embeddings and norms to fp32, so each checkpointed decoder layer
    input is fp32 (4 B) under hf with kbit_upcast true; torchtune, kbit_upcast false or unstated under hf (TRL >= 0.26,
    docs/known-gaps.md 258 (a)) and DeepSpeed's 16-bit engine (native) keep 2 B."""
    tokens_x_hidden = 2 * 2048 * MODEL.hidden * MODEL.layers
    hf = _mem(framework="hf", kbit_upcast=True).items_bytes["layer_activations"]
    assert hf == pytest.approx(4 * tokens_x_hidden)
    for kw in ({"framework": "torchtune"}, {"framework": "hf", "kbit_upcast": False}, {"framework": "hf"},
               {"framework": "hf", "kbit_upcast": True, "loss_impl": "native"}):
        assert _mem(**kw).items_bytes["layer_activations"] == pytest.approx(2 * tokens_x_hidden), kw


def test_peft_upcast_under_autocast_keeps_the_16_bit_cast_of_the_lm_head():
    """Under PEFT's fp32 upcast the frozen LM head is fp32 and autocast casts it to 16 bit for the matmul, which
    saves the cast for the input gradient: one 16-bit head, on the GPU that holds the head. Not where the head stays
    16-bit (torchtune, kbit_upcast false), not under DeepSpeed's 16-bit engine, not in LoRA."""
    head_16 = 2 * MODEL.vocab * MODEL.hidden  # Llama 3.1 8B: untied head
    hf = _mem(framework="hf", kbit_upcast=True)
    assert hf.items_bytes["head_weight_cast"] == pytest.approx(head_16)
    for kw in ({"framework": "torchtune"}, {"framework": "hf", "kbit_upcast": False}, {"framework": "hf"},
               {"framework": "hf", "kbit_upcast": True, "loss_impl": "native"}, {"framework": "deepspeed"}):
        assert _mem(**kw).items_bytes.get("head_weight_cast", 0.0) == 0.0, kw
    lora = Training(method="lora", seq_len=2048, global_batch_seqs=8, lora_rank=16, lora_targets=("q_proj",))
    assert estimate_memory(MODEL, lora, CARD, Strategy(micro_batch=2, recompute="full", framework="hf")
                           ).items_bytes.get("head_weight_cast", 0.0) == 0.0
    # a copy of a weight, freed with the head's backward: not held through the optimizer step
    assert "head_weight_cast" not in STEP_STATE_ITEMS


@pytest.mark.parametrize(("seq", "mb"), [(512, 1), (2048, 2), (8192, 4)])
def test_head_weight_cast_is_one_head_whatever_the_tokens(seq, mb):
    """The cast is of the weight, not of the activations: the same bytes at any sequence length and micro-batch."""
    t = Training(method="qlora", seq_len=seq, global_batch_seqs=8, lora_rank=16, lora_targets=("q_proj",))
    e = estimate_memory(MODEL, t, CARD, Strategy(micro_batch=mb, recompute="full", framework="hf", kbit_upcast=True))
    assert e.items_bytes["head_weight_cast"] == pytest.approx(2 * MODEL.vocab * MODEL.hidden)


def test_kbit_upcast_false_keeps_the_unquantised_weights_16_bit():
    off = _mem(framework="hf", kbit_upcast=False).items_bytes
    tt = _mem(framework="torchtune").items_bytes
    assert off["base_weights_frozen"] == pytest.approx(tt["base_weights_frozen"])
    assert _mem(framework="torchtune", kbit_upcast=True).items_bytes["base_weights_frozen"] == pytest.approx(
        _mem(framework="deepspeed").items_bytes["base_weights_frozen"])  # PEFT's upcast, that stack's default


def test_transformers_4_47_loss_holds_the_shifted_fp32_copy_too():
    """upcast-shift (transformers 4.46-4.47 ForCausalLMLoss): the caller's 16-bit logits, the fp32 upcast and its
    shifted contiguous copy live with the fp32 log-softmax at the end of the forward, 14 B per logit element
    against upcast's 12; it saves the same 4 B for the backward."""
    logit_elems = 2 * 2048 * MODEL.vocab
    up = _mem(loss_impl="upcast").items_bytes
    shift = _mem(loss_impl="upcast-shift").items_bytes
    assert shift["logits"] == up["logits"] == pytest.approx(4 * logit_elems)
    assert shift["logits"] + shift["loss_backward_temporaries"] == pytest.approx(14 * logit_elems)


def test_fabric_fp32_logits_held_by_the_loop_add_their_copy_to_upcast():
    """upcast-held (Lightning Fabric's true-half precision converts the logits to fp32, LitGPT's loop holds them until
    the backward returns): the fp32 logits beside upcast's fp32 log-softmax (8 saved), upcast's 8 in the backward."""
    logit_elems = 2 * 2048 * MODEL.vocab
    up = _mem(loss_impl="upcast").items_bytes
    held = _mem(loss_impl="upcast-held").items_bytes
    # the held fp32 copy is its own item where the loss phase and a re-run layer are apart (known-gaps 203)
    assert held["logits"] + held.get("held_logits", 0.0) == pytest.approx(8 * logit_elems) == pytest.approx(2 * up["logits"])
    assert held["loss_backward_temporaries"] == pytest.approx(up["loss_backward_temporaries"])


def test_unfused_vocab_parallel_loss_keeps_megatron_memory_and_costs_the_unfused_kernels_time():
    """loss_impl vocab-parallel-unfused (Megatron-LM's default cross_entropy_loss_fusion false, nanotron): the memory
    of vocab-parallel; the step time charges the separate fp32 ops' traffic (perf_constants.yaml cross_entropy:
    unfused_fp32 38 + 14 B per logit element against fused 6 + 12) on every micro-batch's logits."""
    from trainsizer.estimate.calibration import rates
    from trainsizer.estimate.step_time import estimate_time

    from .test_perf_common import h100_cluster

    pre = Training(seq_len=4096, global_batch_seqs=64)
    sysm = h100_cluster(8)
    strat = Strategy(tp=1, dp=8, micro_batch=1, distributed_optimizer=True, framework="megatron-core")
    fused_mem = estimate_memory(MODEL, pre, sysm, strat.with_(loss_impl="vocab-parallel")).items_bytes
    unfused_mem = estimate_memory(MODEL, pre, sysm, strat.with_(loss_impl="vocab-parallel-unfused")).items_bytes
    assert unfused_mem == fused_mem
    base = estimate_time(MODEL, pre, sysm, strat)
    unfused = estimate_time(MODEL, pre, sysm, strat.with_(loss_impl="vocab-parallel-unfused"))
    logits = pre.global_batch_seqs / 8 * pre.seq_len * MODEL.vocab  # logit elements per GPU and step
    extra_s = logits * (38.0 + 14.0 - 6.0 - 12.0) / rates(sysm, "bf16").hbm_bytes_s
    assert unfused.step_s - base.step_s == pytest.approx(extra_s, rel=0.05)
