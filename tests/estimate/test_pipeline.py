from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as hs

from trainsizer.estimate import pipeline


def test_bubble_zero_at_pp1_and_formulas():
    assert float(pipeline.bubble_fraction(1, 8)) == 0.0
    assert float(pipeline.bubble_fraction(4, 8)) == 3 / 8
    assert float(pipeline.bubble_fraction(4, 8, 2)) == 3 / 16


@given(p=hs.integers(1, 64), m=hs.integers(1, 512), v=hs.integers(1, 8))
def test_interleaving_never_increases_bubble(p, m, v):
    assert float(pipeline.bubble_fraction(p, m, v)) <= float(pipeline.bubble_fraction(p, m, 1))


def test_micro_batches_and_layers_per_stage():
    assert float(pipeline.micro_batches(512, 8, 2)) == 32
    first, last = pipeline.first_last_stage_layers(30, np.array([1, 4, 8]))
    np.testing.assert_array_equal(first, [30, 8, 4])  # the most loaded stage: ceil(L/p)
    np.testing.assert_array_equal(last, [30, 7, 3])  # the first L mod p stages hold the extra layer
    assert float(pipeline.p2p_transfers_on_critical_path(1, 8)) == 0.0
    assert float(pipeline.p2p_transfers_on_critical_path(4, 8)) == 2 * (8 + 3)


def test_embedding_and_loss_slots_take_a_layer_each():
    """Megatron account_for_embedding/loss_in_pipeline_split: 30 layers + 2 slots over 4 stages = 8 slots each;
    the first stage holds 7 decoder layers (+ embedding), the last 7 (+ loss)."""
    first, last = pipeline.first_last_stage_layers(30, np.array([1, 4]), 1, 1)
    assert list(first) == [30, 7] and list(last) == [30, 7]
    first, last = pipeline.first_last_stage_layers(30, 4, 0, 1)  # 31 slots: 8, 8, 8, 7 -> last 7 - 1
    assert float(first) == 8 and float(last) == 6


@given(p=hs.integers(1, 64), m=hs.integers(1, 512), v=hs.integers(2, 8))
def test_overlapped_interleaving_leaves_only_the_warm_up_and_cool_down_transfers(p, m, v):
    unhidden = float(pipeline.p2p_transfers_unhidden(p))
    assert unhidden == (2.0 * (p - 1) if p > 1 else 0.0)
    assert unhidden <= float(pipeline.p2p_transfers_on_critical_path(p, m, v))
