"""The caching-allocator replay of benchmarks/caching_allocator.py (a diagnostic for known-gaps 178): PyTorch's
large-pool rules, no growth under a fixed micro-batch shape, growth when the micro-batch lengths vary."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import caching_allocator as ca  # noqa: E402
import perf_heldout47 as p47  # noqa: E402

MIB = ca.MIB


def test_segment_sizes_follow_the_allocator_rules():
    assert ca.segment_bytes(1) == (512, 2 * MIB)  # small pool: 2 MiB buffers
    assert ca.segment_bytes(5 * MIB) == (5 * MIB, 20 * MIB)  # below 10 MiB: a 20 MiB buffer
    assert ca.segment_bytes(11 * MIB + 1) == (11 * MIB + 512, 12 * MIB)  # from 10 MiB: rounded up to 2 MiB


def _step(pool, n):
    ca.chunked_loss_step(pool, 3 * MIB * n, 4, 3 * MIB * n, 16 * MIB * n, 8, 8 * MIB * n)


def test_a_fixed_shape_reserves_once():
    pool = ca.Pool()
    _step(pool, 10)
    once = pool.peak_reserved
    for _ in range(20):
        _step(pool, 10)
    assert pool.peak_reserved == once


def test_growing_lengths_reserve_more_than_the_longest_step():
    alone = ca.Pool()
    _step(alone, 10)
    grown = ca.Pool()
    for n in (4, 6, 8, 10):
        _step(grown, n)
    assert grown.peak_reserved > 1.3 * alone.peak_reserved


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 200 * MIB), st.booleans()), min_size=1, max_size=60))
def test_blocks_tile_the_segments(ops):
    """Free and used blocks always add up to the reserved bytes, and reserved never falls below what is in use."""
    pool, live = ca.Pool(), []
    for n, free_one in ops:
        if free_one and live:
            pool.release(live.pop(len(live) // 2))
        else:
            live.append(pool.malloc(n))
        assert sum(b[2] for b in pool.blocks.values()) == pool.reserved
        assert sum(pool.blocks[b][2] for b in live) <= pool.reserved <= pool.peak_reserved


def test_the_torchtune_row_replayed_at_one_length_reserves_what_the_estimate_holds():
    """With every sample the same length the replay reserves the estimate's length-dependent part (rounding aside);
    with the row's spread of lengths it reserves more (known-gaps 178)."""
    r = next(x for x in p47.rows() if x["id"] == p47.BF16_ROW)
    fixed = p47._peak_gib(r, 1.0)
    at_row = p47._peak_gib(r, float(r["seq_len"])) - fixed
    same = p47.replayed_reserved_gib(dict(r, length_sigma="0", avg_tokens=r["seq_len"]), 0)
    assert abs(same - at_row) < 0.1 * at_row
    assert p47.replayed_reserved_gib(r, 2) > 2.0 * at_row
