"""benchmarks/allocator_replay.py: the caching allocator's rules (PyTorch c10/cuda/CUDACachingAllocator.cpp) and the
Qwen-1 loss path it replays for known-gaps 97."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import allocator_replay as ar  # noqa: E402
import perf_heldout35 as p35  # noqa: E402
from trainsizer.estimate.model_states import load_memory_constants  # noqa: E402

MIB = 1 << 20


def test_a_free_block_is_reused_best_fit_and_split_only_past_one_mib():
    a = ar.CachingAllocator()
    big, small = a.malloc(30 * MIB), a.malloc(12 * MIB)
    a.free(big), a.free(small)
    assert a.reserved == 42 * MIB and len(a.segments) == 2
    x = a.malloc(11 * MIB)  # the 12 MiB block is the smallest that holds it; 1 MiB left is not split off
    assert x.segment == small.segment and x.size == 12 * MIB
    y = a.malloc(20 * MIB)  # the 30 MiB block, split: 10 MiB stays free in that segment
    assert y.segment == big.segment and y.size == 20 * MIB
    z = a.malloc(10 * MIB)
    assert z.segment == big.segment and a.reserved == 42 * MIB


def test_segments_round_and_free_blocks_merge_within_their_segment_only():
    a = ar.CachingAllocator()
    assert a.malloc(10 * MIB + 1).size == 10 * MIB + 512  # the block: the request rounded to 512 B
    assert a.segments[0] == 12 * MIB  # the segment: rounded to 2 MiB
    a.malloc(5 * MIB)
    assert a.segments[1] == 20 * MIB  # a 1-10 MiB request cuts a 20 MiB buffer
    b = ar.CachingAllocator()
    first, second = b.malloc(12 * MIB), b.malloc(12 * MIB)
    b.free(first), b.free(second)
    b.malloc(20 * MIB)  # two free 12 MiB blocks of two segments do not merge: a third segment
    assert len(b.segments) == 3 and b.reserved == 44 * MIB
    c = ar.CachingAllocator()
    blocks = [c.malloc(8 * MIB) for _ in range(2)]  # both in one 20 MiB buffer
    for blk in blocks:
        c.free(blk)
    assert len(c.blocks) == 1 and c.blocks[0].size == 20 * MIB  # merged back into one block


def test_the_loss_path_peaks_at_the_estimates_hf_charge():
    lg = load_memory_constants()["logits"]
    charged = float(lg["hf_saved_bytes_per_element"]) + float(lg["hf_backward_extra_bytes_per_element"])
    tokens, vocab = 2048, 151936
    assert ar.live_peak_bytes(tokens, vocab) / ((tokens - 1) * vocab) == pytest.approx(charged, rel=1e-3)
    # a micro-batch of two rows holds twice as much; the allocator's blocks hold the requests, rounded
    assert ar.live_peak_bytes(tokens, vocab, rows=2) == pytest.approx(2 * ar.live_peak_bytes(tokens, vocab), rel=1e-3)
    a = ar.replay([tokens], vocab)
    assert 0 <= a.peak_allocated - ar.live_peak_bytes(tokens, vocab) < 4 * MIB
    assert a.allocated == 0  # every tensor of the path is freed by the end of the micro-batch


def test_one_shape_reserves_no_more_after_its_first_micro_batch_and_growing_lengths_do():
    vocab = 151936
    one, same = ar.replay([2048], vocab), ar.replay([2048] * 20, vocab)
    assert same.peak_reserved == one.peak_reserved
    # within one micro-batch the freed 16-bit logits and their shifted copy (two segments of 2 B an element) cannot
    # hold the 4-byte log-softmax gradient: a third of the path reserved past its peak, released under a full card
    assert one.peak_reserved / one.peak_allocated == pytest.approx(16 / 12, rel=0.01)
    assert ar.least_capacity([2048] * 20, vocab) - same.peak_allocated <= 16 * MIB
    growing = ar.replay(range(1024, 2049, 128), vocab)  # each sample longer than every earlier one
    assert growing.peak_reserved > 2 * growing.peak_allocated


def test_a_card_without_room_runs_on_less_than_the_reserved_peak():
    vocab = 151936
    lengths = p35.kept_length_draws(2048, samples=200, seeds=1)[0]
    roomy = ar.replay(lengths, vocab)
    need = ar.least_capacity(lengths, vocab)
    assert roomy.peak_allocated <= need < roomy.peak_reserved
    ar.replay(lengths, vocab, capacity_bytes=need)  # runs: whole free segments are released and the call retried
    with pytest.raises(ar.OutOfMemory):
        ar.replay(lengths, vocab, capacity_bytes=roomy.peak_allocated - 64 * MIB)


def test_kept_length_draws_follow_the_cut_and_the_seed():
    draws = p35.kept_length_draws(4096, samples=300, seeds=2)
    assert [len(d) for d in draws] == [300, 300] and draws[0] != draws[1]
    assert draws == p35.kept_length_draws(4096, samples=300, seeds=2)  # reproducible
    flat = [n for d in draws for n in d]
    assert min(flat) >= p35.DATASET_MIN_TOKENS and max(flat) <= 4096
    # the cut mean the rows take (kept_lengths) within a few percent
    assert sum(flat) / len(flat) == pytest.approx(p35.kept_lengths(4096)[1], rel=0.05)
