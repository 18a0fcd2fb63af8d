"""Per-layer activation accounting: mechanisms one at a time."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.estimate.activations import (
    head_items,
    in_flight_chunk_microbatches,
    in_flight_layer_microbatches,
    layer_items,
)
from trainsizer.estimate.inputs import Training
from trainsizer.models.arch import ModelArch

MHA = ModelArch(name="mha", family="llama", layers=4, hidden=4096, heads=32, kv_heads=32, ffn=11008,
                vocab=32000)
GQA = MHA.with_(name="gqa", kv_heads=8)
MOE = ModelArch(name="moe", family="qwen2_moe", layers=4, hidden=2048, heads=16, kv_heads=16, ffn=5632,
                vocab=151936, experts=60, experts_per_token=4, expert_ffn=1408, shared_expert_ffn=5632,
                shared_expert_gate=True)
MLA = ModelArch(name="mla", family="deepseek", layers=4, hidden=2048, heads=16, kv_heads=16, ffn=10944,
                vocab=102400, attention="mla", kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64,
                v_head_dim=128)
T = Training(seq_len=4096)


def items(model, training=T, **kw):
    base = dict(moe=False, profile="megatron", recompute="none", impl="flash")
    base.update(kw)
    return layer_items(model, training, **base)


def test_gqa_narrows_k_and_v() -> None:
    a, b = items(MHA), items(GQA)
    assert a.detail["k"] == 4 * b.detail["k"] and a.detail["v"] == 4 * b.detail["v"]
    assert a.detail["q"] == b.detail["q"]


def test_eager_adds_s_squared_term_and_expands_kv() -> None:
    e = items(GQA, impl="eager")
    assert e.s2 == pytest.approx(2 * GQA.heads)  # Megatron fused softmax saves its bf16 output
    assert e.detail["k"] == 2 * GQA.heads * GQA.head_dim  # repeat_kv
    hf = items(GQA, impl="eager", profile="hf")
    assert hf.s2 == pytest.approx((4 + 2) * GQA.heads)  # fp32 softmax + bf16 copy
    assert items(GQA).s2 == 0


def test_selective_drops_attention_core_only() -> None:
    none, sel = items(GQA, impl="eager"), items(GQA, impl="eager", recompute="selective")
    assert sel.s2 == 0 and none.sp == sel.sp
    full = items(GQA, recompute="full")
    assert full.sp == 2 * GQA.hidden and full.tp == 0


def test_swiglu_profiles() -> None:
    f = GQA.ffn
    meg, hf = items(GQA).detail, items(GQA, profile="hf").detail
    assert meg["mlp_fc1_out"] + meg["mlp_fc2_input"] == 3 * 2 * f
    assert sum(hf[k] for k in ("mlp_gate_out", "mlp_act_out", "mlp_up_out", "mlp_down_input")) == 4 * 2 * f


def test_moe_routed_slots_and_router() -> None:
    it = items(MOE, moe=True, profile="hf")
    assert it.routed > 0 and it.detail["router_probs_fp32"] == 4 * MOE.experts
    assert it.detail["router_topk_indices"] == 8 * MOE.experts_per_token
    assert it.detail["routed_expert_gate_out_per_slot"] == 2 * MOE.expert_ffn


def test_megatron_core_moe_keeps_no_expert_output_per_slot() -> None:
    """Megatron-Core weights the routed tokens inside the expert activation and unpermutes without the
    probabilities, so nothing h-wide is kept per slot after fc2; transformers multiplies the expert output by its
    routing weight and keeps that output (and index_add_'s source)."""
    meg, hf = items(MOE, moe=True), items(MOE, moe=True, profile="hf")
    assert "routed_expert_output_per_slot" not in meg.detail
    assert hf.detail["routed_expert_output_per_slot"] == 2 * MOE.hidden
    assert meg.detail["routed_routing_weight_per_slot"] == 2
    assert hf.routed - meg.routed == pytest.approx(2 * (2 * MOE.hidden) + 8 + 2 * MOE.expert_ffn)


def test_mla_compressed_path() -> None:
    it = items(MLA, profile="hf")
    assert "kv_a_norm" in it.detail and it.detail["kv_b_input"] == 2 * MLA.kv_lora_rank
    assert it.detail["k"] == 2 * MLA.heads * (128 + 64) and it.detail["v"] == 2 * MLA.heads * 128


def test_lora_saves_only_adapted_inputs() -> None:
    lora = Training(method="lora", lora_rank=16, lora_targets=("q_proj", "v_proj"), seq_len=4096)
    full, lo = items(GQA, profile="hf"), items(GQA, lora, profile="hf")
    assert "mlp_input" in full.detail and "mlp_input" not in lo.detail
    assert "mlp_down_input" not in lo.detail  # frozen down_proj needs no input
    assert lo.detail["lora_qkv_a_out"] == 2 * 16 * 2
    assert lo.detail["attn_norm"] < full.detail["attn_norm"]  # frozen norm weight: no normalised copy
    assert lo.sp + lo.tp < full.sp + full.tp


def test_fp32_training_doubles_widths() -> None:
    a = items(GQA, Training(precision="fp32", seq_len=4096))
    b = items(GQA)
    assert a.detail["q"] == 2 * b.detail["q"]


def test_heads_logits() -> None:
    assert head_items(GQA, T, "hf").logits_saved_per_vocab == 4
    assert head_items(GQA, T, "megatron").logits_extra_per_vocab == 2


def test_in_flight_never_exceeds_microbatches() -> None:
    assert in_flight_layer_microbatches(8, 1, 3, 0) == 3
    assert in_flight_layer_microbatches(8, 2, 3, 0) == 3


def _megatron_chunk_counts(p: int, v: int, m: int, rank: int) -> list[int]:
    """Forwards per model chunk on `rank` before its first backward, replayed from Megatron-Core's interleaved
    schedule (schedules.py core_r0.11: the schedule table in groups of microbatch_group_size_per_vp_stage = p
    micro-batches per chunk, the last group taking the remainder; warm-up (p - rank - 1) * 2 + (v - 1) * p forwards,
    then one more before the first backward)."""
    table = []
    for start in range(0, m, p):
        stop = m if start + p >= m else start + p
        table += [chunk for chunk in range(v) for _ in range(start, stop)]
    warmup = min((p - rank - 1) * 2 + (v - 1) * p, m * v)
    forwards = min(warmup + 1, m * v)
    return [table[:forwards].count(chunk) for chunk in range(v)]


@given(p=hs.integers(2, 16), v=hs.integers(2, 8), groups=hs.integers(1, 6), rank_at=hs.floats(0, 1))
@settings(max_examples=200, deadline=None)
def test_in_flight_chunks_replay_megatron_schedule(p: int, v: int, groups: int, rank_at: float) -> None:
    m = p * groups  # Megatron-Core takes micro-batch counts that the group size p divides (or p <= rest)
    rank = min(int(rank_at * p), p - 1)
    want = _megatron_chunk_counts(p, v, m, rank)
    got = [float(in_flight_chunk_microbatches(p, v, m, rank, c)) for c in range(v)]
    assert got == want
    assert sum(got) == pytest.approx(float(in_flight_layer_microbatches(p, v, m, rank)) * v)


def test_in_flight_chunks_first_and_last_rank() -> None:
    # first rank: chunk 0 holds 2p - 1 micro-batches, the others p; last rank: chunk v - 1 holds one
    assert [float(in_flight_chunk_microbatches(8, 4, 64, 0, c)) for c in range(4)] == [15, 8, 8, 8]
    assert [float(in_flight_chunk_microbatches(8, 4, 64, 7, c)) for c in range(4)] == [8, 8, 8, 1]
    assert float(in_flight_chunk_microbatches(4, 1, 64, 0, 0)) == 4  # 1F1B: all in flight


def test_fp8_saves_gemm_inputs_in_one_byte() -> None:
    # Transformer Engine under fp8 saves the FP8 cast of each GEMM input for the wgrad GEMM (linear.py
    # save_for_backward: inputmat_t when fp8_wgrad); norms, attention core, SwiGLU input stay 16-bit
    m = ModelArch(name="llama-3.1-8b", family="llama", layers=32, hidden=4096, heads=32, kv_heads=8,
                  ffn=14336, vocab=128256)
    kw = dict(moe=False, profile="megatron", recompute="none", impl="flash")
    b16 = layer_items(m, Training(precision="bf16"), **kw).detail
    f8 = layer_items(m, Training(precision="fp8"), **kw).detail
    h, f = m.hidden, m.ffn
    assert f8["attn_input"] == h and b16["attn_input"] == 2 * h
    assert f8["mlp_input"] == h and f8["mlp_fc2_input"] == f
    assert f8["mlp_fc1_out"] == b16["mlp_fc1_out"] == 4 * f  # SwiGLU input (2f) stays bf16
    assert f8["attn_out"] == b16["attn_out"] and f8["softmax_lse"] == b16["softmax_lse"]
    assert f8["q"] == b16["q"] and f8["attn_norm"] == b16["attn_norm"]
    # the output projection's FP8 copy of the attention output is saved beside the kernel's bf16 output
    assert f8["o_proj_input"] == m.attn_out_dim and "o_proj_input" not in b16
    total = lambda d: sum(d.values())  # noqa: E731
    assert total(b16) - total(f8) == pytest.approx(2 * h + f - m.attn_out_dim)
    # selective recompute: only the projection's FP8 copy of the attention output remains
    sel = layer_items(m, Training(precision="fp8"), **{**kw, "recompute": "selective"}).detail
    assert sel["attn_out"] == m.attn_out_dim
    # full recompute: the layer-input checkpoint stays 16-bit
    full = layer_items(m, Training(precision="fp8"), **{**kw, "recompute": "full"}).detail
    assert full["layer_input_checkpoint"] == 2 * h
