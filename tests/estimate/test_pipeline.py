from __future__ import annotations

import numpy as np
import pytest
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
    unhidden = float(pipeline.p2p_transfers_unhidden(p, m, v))
    assert unhidden <= float(pipeline.p2p_transfers_on_critical_path(p, m, v))
    if p > 1 and m >= p:
        assert unhidden == 2.0 * (p * v - 1)
    assert float(pipeline.p2p_transfers_unhidden(p)) == (2.0 * (p - 1) if p > 1 else 0.0)


def _interleaved_makespan(p: int, v: int, m: int, fwd: float, bwd: float, hop: float, head: float = 0.0) -> float:
    """Replay Megatron-Core's interleaved 1F1B order (schedules.py: get_pp_rank_microbatches warm-up
    (p - r - 1) x 2 + (v - 1) x p, get_model_chunk_id / microbatch ids in groups of p, one forward then one
    backward in the steady state) with every stage-to-stage transfer taking `hop` after its sender finishes and
    sends never blocking (overlap_p2p_comm); returns the step's makespan. `head`: the LM head's forward on the last
    stage's last chunk (its backward head x bwd / fwd), as a chunk's extra time."""
    total = m * v

    def chunk(k: int, forward: bool) -> int:
        c = (k // p) % v
        return c if forward else v - 1 - c

    orders = []
    for r in range(p):
        warm = min((p - r - 1) * 2 + (v - 1) * p, total)
        seq = [(True, k) for k in range(warm)]
        for k in range(total - warm):
            seq += [(True, k + warm), (False, k)]
        seq += [(False, k) for k in range(total - warm, total)]
        orders.append([(fw, chunk(k, fw), (k // (p * v)) * p + k % p) for fw, k in seq])
    done: dict[tuple, float] = {}
    clock, pos = [0.0] * p, [0] * p
    while any(pos[r] < len(orders[r]) for r in range(p)):
        moved = False
        for r in range(p):
            while pos[r] < len(orders[r]):
                fw, c, i = orders[r][pos[r]]
                if fw:
                    dep = (True, r - 1, c, i) if r > 0 else ((True, p - 1, c - 1, i) if c > 0 else None)
                else:
                    dep = (False, r + 1, c, i) if r < p - 1 else ((False, 0, c + 1, i) if c < v - 1 else None)
                if dep is not None and dep not in done:
                    break
                extra = head * (1.0 if fw else bwd / fwd) if (r, c) == (p - 1, v - 1) else 0.0
                clock[r] = max(clock[r], done[dep] + hop if dep else 0.0) + (fwd if fw else bwd) + extra
                done[(fw, r, c, i)] = clock[r]
                pos[r] += 1
                moved = True
        assert moved
    return max(clock)


@pytest.mark.parametrize(("p", "v", "bwd"), [(2, 1, 2.0), (4, 1, 2.0), (4, 2, 2.0), (4, 4, 1.0), (8, 2, 3.0),
                                             (8, 8, 2.0)])
def test_unhidden_transfers_match_a_replay_of_the_interleaved_schedule(p, v, bwd):
    """The replay's makespan is the ideal m v (f + b) plus the bubble (p - 1)(f + b) plus
    p2p_transfers_unhidden hops to fill and drain, whatever m: the steady state hides every transfer."""
    hop = 1e-3
    for m in (p, 3 * p):
        ideal = m * v * (1.0 + bwd) + (p - 1) * (1.0 + bwd)
        hops = (_interleaved_makespan(p, v, m, 1.0, bwd, hop) - _interleaved_makespan(p, v, m, 1.0, bwd, 0.0)) / hop
        assert _interleaved_makespan(p, v, m, 1.0, bwd, 0.0) == pytest.approx(ideal)
        assert hops == pytest.approx(float(pipeline.p2p_transfers_unhidden(p, m, v)), abs=1e-6)


@pytest.mark.parametrize(("p", "v", "head"), [(4, 1, 1.0), (8, 1, 0.27), (4, 7, 1.12), (4, 2, 0.5), (8, 2, 2.0)])
def test_a_head_on_the_last_stage_idles_the_others_at_their_own_rate(p, v, head):
    """With the LM head on the last stage's last chunk the replay paces the steady state on that stage, and its bubble
    is (p - 1) / v slots of a stage without the head, not of the paced one: the estimate's bubble ((p - 1) / (v m) x m
    x the paced stage's micro-batch) over-charges it by (p - 1) / v head passes (docs/known-gaps.md 331 (c); 0.3 of 7
    slots for Mixtral 8x22B at PP 8, whose head is 0.27 of a layer)."""
    bwd = 2.0
    headless, paced = v * (1.0 + bwd), v * (1.0 + bwd) + head * (1.0 + bwd)
    for m in (p, 4 * p):
        bubble = _interleaved_makespan(p, v, m, 1.0, bwd, 0.0, head) - m * paced
        assert bubble == pytest.approx((p - 1) / v * headless)
        assert bubble < float(pipeline.bubble_fraction(p, m, v)) * m * paced


def test_a_middle_stage_holds_one_layer_more_than_the_end_stages_under_slots():
    """Megatron-Core get_num_layers_to_build: (L + slots) // p slots a rank, one fewer decoder layer only on the
    rank whose slot the embedding or the loss takes. Llama 3 405B at PP 16: 126 + 2 = 128 slots, 7 | 8 x 14 | 7."""
    first, last = pipeline.first_last_stage_layers(126, 16, 1, 1)
    assert (float(first), float(last)) == (7, 7)
    assert float(pipeline.most_loaded_stage_layers(126, 16, 1, 1)) == 8
    assert float(pipeline.most_loaded_stage_layers(126, 2, 1, 1)) == 63  # two stages: no middle one
    assert float(pipeline.most_loaded_stage_layers(30, 4)) == 8  # no slots: the first stage, ceil(L / p)


@given(layers=hs.integers(1, 130), p=hs.integers(1, 32), e=hs.integers(0, 1), lo=hs.integers(0, 1))
def test_the_most_loaded_stage_is_never_below_either_end(layers, p, e, lo):
    first, last = pipeline.first_last_stage_layers(layers, p, e, lo)
    most = float(pipeline.most_loaded_stage_layers(layers, p, e, lo))
    assert most >= float(first) and most >= float(last)
    assert most <= np.ceil((layers + (e + lo) * (p > 1)) / p)
    if e == lo == 0:
        assert most == float(first)


@given(layers=hs.integers(1, 130), p=hs.integers(1, 32), e=hs.integers(0, 1), lo=hs.integers(0, 1))
def test_stage_layer_ranges_tile_the_model_and_the_most_loaded_is_their_max(layers, p, e, lo):
    """Every decoder layer sits on exactly one rank, in order; the end stages and the most loaded stage agree with
    the rank-by-rank split."""
    ranges = [tuple(float(x) for x in pipeline.stage_layer_range(layers, p, r, e, lo)) for r in range(p)]
    assert ranges[0][0] == 0 and ranges[-1][1] == layers
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))
    sizes = [stop - start for start, stop in ranges]
    first, last = pipeline.first_last_stage_layers(layers, p, e, lo)
    assert (sizes[0], sizes[-1]) == (float(first), float(last))
    if layers + (e + lo) * (p > 1) >= p:  # every rank holds a slot (Megatron-Core needs as many)
        assert float(pipeline.most_loaded_stage_layers(layers, p, e, lo)) == max(sizes)


def test_stated_end_stages_hold_their_layers_and_the_middle_ones_the_rest():
    """Megatron-Core num_layers_in_first/last_pipeline_stage, or a layout's per-rank counts: Megatron-Bridge's
    DeepSeek-V3 `Et*4|(t*4|)*14tmL` at PP 4 x VP 4 gives the last rank 4 + 4 + 4 + 1 = 13 of the 61 layers, the
    others 16; at PP 8 x VP 4 `Et|(tt|)*30mL` gives 7 / 8 x 6 / 6."""
    ranges = [tuple(float(x) for x in pipeline.stage_layer_range(61, 4, r, last_layers=13)) for r in range(4)]
    assert ranges == [(0, 16), (16, 32), (32, 48), (48, 61)]
    first, last = pipeline.first_last_stage_layers(61, 8, first_layers=7, last_layers=6)
    assert (float(first), float(last)) == (7, 6)
    assert float(pipeline.most_loaded_stage_layers(61, 8, first_layers=7, last_layers=6)) == 8
    assert float(pipeline.most_loaded_stage_layers(61, 16, last_layers=1)) == 4
    # stated on one rank of two: the other holds the rest; at p = 1 nothing is split
    assert [float(x) for x in pipeline.first_last_stage_layers(61, 2, last_layers=29)] == [32, 29]
    assert [float(x) for x in pipeline.first_last_stage_layers(61, 1, last_layers=29)] == [61, 61]


@given(p=hs.integers(2, 16), per=hs.integers(1, 8), f=hs.integers(0, 9), lo=hs.integers(0, 9))
def test_stated_edges_tile_the_model(p, per, f, lo):
    """Every layer on one rank, in order, for any stated first / last counts (0 = not stated) whose rest splits
    evenly over the middle ranks."""
    first, last = f or None, lo or None
    middle = p - (first is not None) - (last is not None)
    layers = (f or 0) + (lo or 0) + per * middle
    if middle == 0 and layers == 0:
        return
    ranges = [tuple(float(x) for x in pipeline.stage_layer_range(layers, p, r, 0, 0, first, last))
              for r in range(p)]
    assert ranges[0][0] == 0 and ranges[-1][1] == layers
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))
    sizes = [stop - start for start, stop in ranges]
    if first is not None:
        assert sizes[0] == first
    if last is not None:
        assert sizes[-1] == last
    assert float(pipeline.most_loaded_stage_layers(layers, p, 0, 0, first, last)) == max(sizes)


def test_a_pipeline_crosses_a_domain_edge_only_when_its_stages_fit_one_but_it_spans_several():
    """TP 4 x PP 16 on 8-GPU hosts (stride 4): two stages a host, every other boundary over the network; stride 8 on
    8-GPU hosts: every boundary leaves (not an edge case: the hop is already the network's); PP 2 x stride 4: one
    host, no edge."""
    p = np.array([16, 4, 2, 1, 4, 3])
    stride = np.array([4, 8, 4, 4, 16, 3])
    np.testing.assert_array_equal(pipeline.crosses_domain_edge(p, stride, 8), [True, False, False, False, False, True])
    # an NVL72 job on four domains of 64: TP 4 x DP 4 stages (stride 16), 16 of them, four a domain
    assert bool(pipeline.crosses_domain_edge(16, 16, 64)) and not bool(pipeline.crosses_domain_edge(4, 16, 64))


@given(p=hs.integers(1, 64), stride=hs.integers(1, 128), domain=hs.sampled_from([4, 8, 16, 64, 72]))
def test_an_edge_needs_stages_inside_a_domain_and_a_pipeline_beyond_it(p, stride, domain):
    edge = bool(pipeline.crosses_domain_edge(p, stride, domain))
    assert edge == (p > 1 and stride < domain < p * stride)
