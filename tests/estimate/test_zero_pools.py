"""DeepSpeed ZeRO's reserved bytes outside the forward / backward's segments (estimate.zero_pools; known-gaps 234):
ZeRO-3's reduce stream keeps its own caching-allocator pool (the bucket's flattened copy, fp16's overflow check), and
without expandable segments the optimizer step's flat gradient blocks cut segments of their own."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import GIB, estimate_memory
from trainsizer.estimate.zero_pools import reduce_stream_bytes, step_segment_bytes
from trainsizer.models.arch import ModelArch

# Llama 3 8B's shapes (32 layers, h 4096, ffn 14336, 32 / 8 heads, vocab 128256, untied)
LLAMA8B = ModelArch(name="llama-8b", family="llama", layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336,
                    vocab=128256, mlp="swiglu", norm="rmsnorm", position="rope", max_position=8192)
SYSTEM = System(accelerator="a100-sxm-80gb", gpus=8, gpus_per_node=8, memory_gib=80.0,
                peak_tflops={"fp16": 312.0, "bf16": 312.0}, hbm_gb_s=2039.0, intra_node_gb_s=300.0)


def _estimate(precision: str = "fp16", **kw):
    tr = Training(precision=precision, seq_len=1024, global_batch_seqs=8)
    strategy = Strategy(dp=8, micro_batch=1, recompute="none", zero=kw.pop("zero", 3), framework=kw.pop("framework", "hf"),
                        zero3_bucket_sizes="deepspeed", **kw)
    return estimate_memory(LLAMA8B, tr, SYSTEM, strategy, check=False)


def test_the_reduce_stream_keeps_the_overflow_checks_abs_copy_and_bool_or_the_bucket_copy():
    cat, part = 1.0e9, 1.004e9  # a 5e8-element 16-bit bucket; Llama 3 8B's partition on 8 ranks
    assert reduce_stream_bytes(cat, part, 2.0, True, True) == pytest.approx(3 * part)  # one range: its peak
    # the default segments: the copy's, the abs copy's (larger), the bool's (larger than the copy by 4e6 B)
    assert reduce_stream_bytes(cat, part, 2.0, True, False) == pytest.approx(cat + 3 * part)
    # a bool the copy's segment holds takes it
    assert reduce_stream_bytes(cat, 0.9e9, 2.0, True, False) == pytest.approx(cat + 2 * 0.9e9)
    # both check blocks in the copy's segment
    assert reduce_stream_bytes(cat, 0.3e9, 2.0, True, False) == pytest.approx(cat)
    # bf16 / fp32: no overflow check (stage3.py checks fp16 only), the bucket copy alone
    assert reduce_stream_bytes(cat, part, 2.0, False, False) == reduce_stream_bytes(cat, part, 2.0, False, True) == cat


@settings(max_examples=60, deadline=None)
@given(cat=st.floats(0.0, 4e9), part=st.floats(0.0, 4e9), fp16=st.booleans())
def test_the_default_segments_never_hold_less_than_the_pools_peak(cat, part, fp16):
    exp = reduce_stream_bytes(cat, part, 2.0, fp16, True)
    segs = reduce_stream_bytes(cat, part, 2.0, fp16, False)
    assert segs >= exp - 1e-6 * max(exp, 1.0)
    assert segs <= cat + 3 * part + 1e-6 * max(segs, 1.0)  # at most one segment a block


def test_step_blocks_cut_segments_only_where_no_forward_block_holds_them():
    flat, fp32 = 2e9, 4e9
    assert step_segment_bytes(flat, fp32, 1e9, 0.0, False) == pytest.approx(6e9)
    # the flat copy takes the logits' block
    assert step_segment_bytes(flat, fp32, 2.5e9, 0.0, False) == pytest.approx(4e9)
    assert step_segment_bytes(flat, fp32, 5e9, 0.0, False) == 0.0
    # the default segments never read the freed range: a block needs one segment that holds it
    assert step_segment_bytes(flat, fp32, 1e9, 1e12, False) == pytest.approx(6e9)


def test_under_expandable_segments_the_step_maps_what_the_freed_range_does_not_hold():
    """One range a stream (known-gaps 246 (a)): the two blocks laid in the forward / backward's freed range, the rest
    mapped at its end; the largest forward block plays no part."""
    flat, fp32 = 2e9, 4e9
    assert step_segment_bytes(flat, fp32, 1e9, 10e9, True) == 0.0  # a long sequence's activations hold both
    assert step_segment_bytes(flat, fp32, 1e9, 4.5e9, True) == pytest.approx(1.5e9)  # a checkpointed sample of one
    assert step_segment_bytes(flat, fp32, 9e9, 0.0, True) == pytest.approx(6e9)  # nothing freed: both mapped


@settings(max_examples=60, deadline=None)
@given(flat=st.floats(0.0, 4e9), fp32=st.floats(0.0, 8e9), freed=st.floats(0.0, 2e10), largest=st.floats(0.0, 8e9))
def test_the_step_never_maps_more_than_its_two_blocks_nor_more_for_a_larger_freed_range(flat, fp32, freed, largest):
    for exp in (True, False):
        got = float(step_segment_bytes(flat, fp32, largest, freed, exp))
        assert 0.0 <= got <= flat + fp32 + 1e-6
    more = step_segment_bytes(flat, fp32, largest, freed + 1e9, True)
    assert more <= step_segment_bytes(flat, fp32, largest, freed, True)


def test_zero3_fp16_reserves_its_reduce_streams_pool_beside_the_peak_not_in_it():
    """Llama 3 8B, HF Trainer + DeepSpeed ZeRO-3 fp16 on 8 GPUs (perf_heldout58's runs): the pool is reported beside
    the peak (reserved_peak_bytes), the peak itself (what a fit reads) is unchanged."""
    exp = _estimate(allocator_expandable_segments=True)
    default = _estimate(allocator_expandable_segments=False)
    assert exp.per_gpu_bytes == default.per_gpu_bytes  # never a requirement
    part = np.ceil(LLAMA8B.params_total / 8)
    assert exp.zero_pool_bytes == pytest.approx(3 * part, rel=0.01)  # the check's abs copy and bool
    # the default segments add the bucket copy's segment and the step's flat 16-bit copy and fp32 cast
    sub = min(part, 1e9)
    assert default.zero_pool_bytes == pytest.approx(2 * 5e8 + 3 * part + 6 * sub, rel=0.01)
    assert default.reserved_peak_bytes == pytest.approx(default.per_gpu_bytes + default.zero_pool_bytes)
    assert default.to_dict()["zero_pool_gib"] == pytest.approx(default.zero_pool_bytes / GIB, abs=1e-4)


def test_a_short_sequence_maps_the_step_blocks_its_activations_cannot_hold():
    """perf_heldout58's expandable-segments runs at 1 to 501 positions (known-gaps 246 (a)): the shorter the sequence,
    the less the forward / backward frees on the default stream and the more of the step's two blocks are mapped
    beside the forward / backward's peak, so the reserved peak stays flat in the length (the source's lines from 1 to
    501 positions: 42.4-43.2 GiB); at 1,024 positions the activations hold both (the reduce stream's pool alone)."""
    strategy = Strategy(dp=8, micro_batch=1, recompute="none", zero=3, framework="hf", zero3_bucket_sizes="deepspeed",
                        allocator_expandable_segments=True)
    est = {n: estimate_memory(LLAMA8B, Training(precision="fp16", seq_len=n, global_batch_seqs=8), SYSTEM, strategy,
                              check=False) for n in (8, 256, 1024)}
    part = np.ceil(LLAMA8B.params_total / 8)
    sub = min(part, 1e9)
    assert est[1024].zero_pool_bytes == pytest.approx(3 * part, rel=0.01)
    assert 3 * part + 2 * sub < est[8].zero_pool_bytes <= 3 * part + 6 * sub  # most of the two blocks, never more
    reserved = [est[n].reserved_peak_bytes for n in (8, 256, 1024)]
    assert reserved == sorted(reserved)
    assert reserved[1] == pytest.approx(reserved[0], rel=0.01)


def test_bf16_has_no_overflow_check_and_other_stacks_no_pool():
    fp16, bf16 = _estimate(allocator_expandable_segments=True), _estimate("bf16", allocator_expandable_segments=True)
    assert bf16.zero_pool_bytes == pytest.approx(2 * 5e8)  # the bucket copy alone
    assert fp16.zero_pool_bytes > bf16.zero_pool_bytes
    assert _estimate(fsdp="full").zero_pool_bytes == 0.0  # FSDP: no DeepSpeed engine
    assert _estimate(zero=0, framework="hf").zero_pool_bytes == 0.0
