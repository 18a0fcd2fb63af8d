"""DeepSpeed-style memory (framework deepspeed, the Megatron-DeepSpeed / GPT-NeoX era): ZeRO-3 gathers per submodule,
Megatron's fused softmax and vocab-parallel loss, the PipelineEngine's kept logits."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.models.arch import ModelArch

# the 529.6B GPT of Narayanan et al. 2021 Table 1 / 2 (h 20480, 128 heads, 105 layers, ffn 4h, vocab 51200)
GPT530 = ModelArch(name="gpt-529.6b", family="gpt", layers=105, hidden=20480, heads=128, kv_heads=128,
                   ffn=4 * 20480, vocab=51200, mlp="gelu", norm="layernorm", position="learned",
                   max_position=2048, qkv_bias=True, out_bias=True, mlp_bias=True)
# a small GPT (GPT-NeoX / Pythia-160M-like shape)
GPT_SMALL = ModelArch(name="gpt-small", family="gpt", layers=12, hidden=768, heads=12, kv_heads=12,
                      ffn=4 * 768, vocab=50304, mlp="gelu", norm="layernorm", position="rope",
                      max_position=2048, qkv_bias=True, out_bias=True, mlp_bias=True)
FP16 = Training(precision="fp16", seq_len=2048, global_batch_seqs=2560, flash_attention=False)


def a100(gpus: int) -> System:
    return System(accelerator="a100-sxm-80gb", gpus=gpus, gpus_per_node=8, memory_gib=80.0,
                  peak_tflops={"fp16": 312.0}, hbm_gb_s=2039.0, intra_node_gb_s=300.0)


def _items(model: ModelArch, training: Training, gpus: int, **kw) -> dict[str, float]:
    st = Strategy(dp=gpus, micro_batch=kw.pop("micro_batch", 4), recompute=kw.pop("recompute", "full"), **kw)
    return estimate_memory(model, training, a100(gpus), st, check=False).items_bytes


def test_zero3_gathers_one_module_of_a_large_layer_not_two_layers():
    ds = _items(GPT530, FP16, 640, zero=3, framework="deepspeed")["framework_buffers"]
    fsdp = _items(GPT530, FP16, 640, zero=3, framework="fsdp")["framework_buffers"]
    fc1 = 20480 * 4 * 20480  # the largest linear of a layer (h x 4h)
    # 16-bit: one gathered fc1 + the 5e7-element prefetch bucket, and two fc1-sized gradients (the bucket being
    # reduced and the one kept until the next is partitioned)
    assert ds == pytest.approx(2 * (fc1 + 5e7) + 2 * 2 * fc1, rel=1e-9)
    # FSDP units are whole layers: two gathered and one unsharded gradient, about 3x more here
    assert fsdp > 2.5 * ds


def test_zero3_gradient_buckets_stop_at_the_trainable_parameters():
    ds = _items(GPT_SMALL, FP16, 8, zero=3, framework="deepspeed")["framework_buffers"]
    n = GPT_SMALL.params_total
    # the 2 x 5e8-element reduce buckets cannot hold more than the model's gradients
    assert ds < 2 * (n + 5e7 + n)


def test_deepspeed_loss_is_megatrons_vocab_parallel_and_the_pipeline_engine_keeps_the_logits():
    tr = Training(precision="bf16", seq_len=2048, global_batch_seqs=1024, flash_attention=True)
    elems = 32 * 2048 * GPT_SMALL.vocab
    z1 = _items(GPT_SMALL, tr, 32, zero=1, micro_batch=32, framework="deepspeed")
    z3 = _items(GPT_SMALL, tr, 32, zero=3, micro_batch=32, framework="deepspeed")
    hf = _items(GPT_SMALL, tr, 32, zero=1, micro_batch=32, framework="hf")
    assert z3["logits"] == pytest.approx(4 * elems)  # the fp32 softmax, in place
    assert z1["logits"] == pytest.approx((4 + 2) * elems)  # + the 16-bit logits in pipe_buffers['outputs']
    assert z1["loss_backward_temporaries"] == pytest.approx(2 * elems)
    assert hf["loss_backward_temporaries"] == pytest.approx(8 * elems)  # HF's upcast loss: fp32 gradients
    asked = _items(GPT_SMALL, tr, 32, zero=1, micro_batch=32, framework="deepspeed", loss_impl="upcast")
    assert asked["logits"] == pytest.approx(hf["logits"])


def test_deepspeed_eager_attention_saves_16_bit_scores():
    tr = Training(precision="fp16", seq_len=2048, global_batch_seqs=8, flash_attention=False)
    ds = _items(GPT_SMALL, tr, 8, micro_batch=1, recompute="none", framework="deepspeed")["layer_activations"]
    hf = _items(GPT_SMALL, tr, 8, micro_batch=1, recompute="none", framework="hf")["layer_activations"]
    # HF eager keeps the fp32 softmax and its 16-bit copy (6 B per score), Megatron's fused softmax 2 B
    scores = GPT_SMALL.layers * GPT_SMALL.heads * 2048 * 2048
    assert hf - ds == pytest.approx(4 * scores)


def test_an_hf_job_on_deepspeeds_engine_holds_its_modules_not_fsdps_layers():
    """HF Trainer / accelerate with zero 3 and no fsdp runs DeepSpeed's engine (memory keyed on the engine, as the step
    time): the gathered and reduce buckets are DeepSpeed's, sized by the job's bucket sizes (the hf stack's default
    "auto": int(0.9 h^2) prefetch, h^2 reduce); with fsdp the stack's FSDP units, as before."""
    h = 20480
    fc1 = h * 4 * h
    tr = Training(precision="bf16", seq_len=2048, global_batch_seqs=2560)
    hf = _items(GPT530, tr, 640, zero=3, framework="hf")["framework_buffers"]
    assert hf == pytest.approx(2 * (fc1 + int(0.9 * h * h)) + 2 * 2 * fc1, rel=1e-9)
    stated = _items(GPT530, tr, 640, zero=3, framework="hf", zero3_bucket_sizes="deepspeed")["framework_buffers"]
    assert stated == pytest.approx(2 * (fc1 + 5e7) + 2 * 2 * fc1, rel=1e-9)
    fsdp = _items(GPT530, tr, 640, zero=3, fsdp="full", framework="hf")["framework_buffers"]
    assert fsdp > 2.5 * hf  # two gathered layers and one unsharded gradient layer


# Llama 3 8B's shapes (32 layers, h 4096, ffn 14336, 32 / 8 heads, vocab 128256, untied)
LLAMA8B = ModelArch(name="llama-8b", family="llama", layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336,
                    vocab=128256, mlp="swiglu", norm="rmsnorm", position="rope", max_position=8192)


def _hf_z3(micro_batch: int = 1, **kw) -> dict[str, float]:
    tr = Training(precision="fp16", seq_len=1024, global_batch_seqs=8 * micro_batch)
    return _items(LLAMA8B, tr, 8, zero=3, framework="hf", micro_batch=micro_batch, zero3_bucket_sizes="deepspeed", **kw)


def test_a_model_built_outside_zero_init_holds_every_gathered_linear_to_its_backward():
    """strategy.zero_init false (from_pretrained before the DeepSpeed config; known-gaps 225): torch's linear saves
    each gathered weight's transpose, so without recompute every decoder linear and the LM head stay gathered at the
    forward / backward turn, with the head gathered again in the first step's backward (nothing kept, no prefetch)."""
    h, f, kv = 4096, 14336, 1024
    linears = 32 * (2 * h * h + 2 * h * kv + 3 * h * f)  # 6.98e9
    head = 128256 * h
    base = _hf_z3(recompute="none")
    held = _hf_z3(recompute="none", zero_init=False)
    assert _hf_z3(recompute="none", zero_init=True) == base  # true = the memory-efficient linear, the default
    assert held["framework_buffers"] - base["framework_buffers"] == pytest.approx(
        2 * (linears + 2 * head) - 2 * (head + 5e7), rel=1e-6)
    # under full recompute the forward saves nothing: the head twice (the first step) is all that is added (a batch
    # whose forward / backward phase, not the optimizer step, is the peak)
    rec, rec_held = _hf_z3(8, recompute="full"), _hf_z3(8, recompute="full", zero_init=False)
    assert rec_held["framework_buffers"] - rec["framework_buffers"] == pytest.approx(2 * (2 * head - head - 5e7),
                                                                                     rel=1e-6)
    # FSDP's units and ZeRO-1/2 (nothing partitioned into zero.Init) are untouched
    z2 = _items(LLAMA8B, Training(precision="fp16", seq_len=1024, global_batch_seqs=8), 8, zero=2, framework="hf",
                micro_batch=1, recompute="none")
    assert z2["framework_buffers"] == _items(LLAMA8B, Training(precision="fp16", seq_len=1024, global_batch_seqs=8), 8,
                                             zero=2, framework="hf", micro_batch=1, recompute="none",
                                             zero_init=False)["framework_buffers"]


@settings(max_examples=25, deadline=None)
@given(micro_batch=st.integers(1, 8), seq_len=st.sampled_from([256, 1024, 4096]),
       recompute=st.sampled_from(["none", "selective", "full"]))
def test_outside_zero_init_never_needs_less(micro_batch, seq_len, recompute):
    """Holding weights only adds: zero_init false is never below the default, at any batch, length or recompute."""
    tr = Training(precision="bf16", seq_len=seq_len, global_batch_seqs=8 * micro_batch)
    kw = dict(zero=3, framework="hf", micro_batch=micro_batch, recompute=recompute)
    st_ = Strategy(dp=8, **kw)
    a = estimate_memory(LLAMA8B, tr, a100(8), st_, check=False).per_gpu_bytes
    b = estimate_memory(LLAMA8B, tr, a100(8), st_.with_(zero_init=False), check=False).per_gpu_bytes
    assert b >= a


def _offload_z2(seq_len: int, **kw):
    tr = Training(precision="fp16", seq_len=seq_len, global_batch_seqs=8)
    st_ = Strategy(dp=8, micro_batch=1, recompute="full", zero=2, offload="optimizer", framework="hf", **kw)
    return estimate_memory(LLAMA8B, tr, a100(8), st_, check=False)


def test_zero2_offload_peaks_where_the_embedding_gradient_is_reduced_whatever_the_length():
    """ZeRO-2 with the optimizer offloaded (known-gaps 225 (e)): on the rank owning the embedding, the end of the
    backward holds its 16-bit gradient, the flattened copy all-reduced and the fp64 copy of its partition slice taken
    for the norm (stage_1_and_2.py v0.14.2), with the activations freed: a peak that does not grow with the length."""
    emb = 128256 * 4096
    part = LLAMA8B.params_total / 8
    short, long_ = _offload_z2(256), _offload_z2(2048)
    assert short.items_bytes["offload_grad_copies"] == pytest.approx(2 * 2 * emb + 8 * min(emb, part), rel=1e-9)
    assert short.per_gpu_bytes == pytest.approx(long_.per_gpu_bytes, rel=1e-9)
    assert "layer_activations" not in short.items_bytes or not short.items_bytes["layer_activations"]
    # without the offload the gradients stay on the GPU: no such phase
    tr = Training(precision="fp16", seq_len=256, global_batch_seqs=8)
    on_gpu = estimate_memory(LLAMA8B, tr, a100(8), Strategy(dp=8, micro_batch=1, recompute="full", zero=2,
                                                           framework="hf"), check=False)
    assert "offload_grad_copies" not in on_gpu.items_bytes


@settings(max_examples=20, deadline=None)
@given(seq_len=st.sampled_from([128, 1024, 4096, 16384]), micro_batch=st.integers(1, 8))
def test_the_offload_phase_only_adds(seq_len, micro_batch):
    """The end-of-backward phase is a max with the forward / backward peak: never below the items without it."""
    tr = Training(precision="bf16", seq_len=seq_len, global_batch_seqs=8 * micro_batch)
    st_ = Strategy(dp=8, micro_batch=micro_batch, recompute="full", zero=2, offload="optimizer", framework="hf")
    e = estimate_memory(LLAMA8B, tr, a100(8), st_, check=False)
    grads_and_weights = e.items_bytes["weights"] + e.items_bytes["gradients"]
    assert e.per_gpu_bytes >= grads_and_weights + 2 * 2 * 128256 * 4096
