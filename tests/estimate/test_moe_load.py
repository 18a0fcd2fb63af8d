"""The busiest EP rank's load under a trained router's own routing (Job.moe_routing natural; estimate.moe_load,
docs/known-gaps.md 318): the experts' popularity on real text (DODOCO's Gini, by attention kind), a rank's share of
it over its local experts, and the expected largest of EP ranks' loads."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.moe_load import expected_max_normal, expert_gini, natural_rank_load
from trainsizer.estimate.step_time import estimate_time, step_time_arrays

from .test_perf_common import h100_cluster, mixtral

TR = Training(seq_len=4096, global_batch_seqs=256)
# the expected largest of n standard normals, exact (Harter 1961, "Expected values of normal order statistics",
# Biometrika 48, Table 1): Blom's approximation is within 0.03 of each
EXACT_MAX = {2: 0.5642, 4: 1.0294, 8: 1.4236, 16: 1.7660, 32: 2.0697}


def test_blom_approximation_tracks_the_exact_order_statistic():
    got = expected_max_normal(np.array(list(EXACT_MAX)))
    assert np.allclose(got, list(EXACT_MAX.values()), atol=0.03)
    assert float(expected_max_normal(1)) == 0.0


def test_the_load_grows_with_ep_and_falls_with_the_experts_a_rank_holds():
    """At EP 1 no rank waits on another; at a fixed expert count more ranks (fewer experts each) load the busiest
    more; with no popularity spread (Gini 0) only the routed slots' sampling is left, under 2% at 32,768 slots."""
    assert float(natural_rank_load(128, 1, 4096, 0.15)) == 1.0
    by_ep = natural_rank_load(128, np.array([2.0, 4.0, 8.0, 16.0, 32.0]), 32768, 0.15)
    assert np.all(np.diff(by_ep) > 0) and 1.0 < by_ep[0] < by_ep[-1] < 1.5
    assert float(natural_rank_load(32, 8, 32768, 0.15)) > float(natural_rank_load(256, 8, 32768, 0.15))
    assert 1.0 < float(natural_rank_load(128, 8, 32768, 0.0)) < 1.02


def test_the_gini_follows_the_attention_kind():
    ginis = load_constants().raw["moe_natural_load"]["expert_gini"]
    assert expert_gini("mla", 16, 16, ginis) == 0.24
    assert expert_gini("gqa", 32, 32, ginis) == 0.105  # as many KV heads as query heads: MHA
    assert expert_gini("gqa", 32, 4, ginis) == 0.150


def test_natural_routing_charges_the_derived_load_unless_one_is_stated():
    """moe_routing natural with moe_capacity_factor left at 1.0 times the step as random routing at the derived load;
    a stated load is charged as stated; at EP 1 natural is random."""
    m, s = mixtral().with_(experts=64, experts_per_token=8, expert_ffn=1792), h100_cluster(64)
    st = Strategy(dp=64, ep=8, framework="megatron-core", moe_dispatcher="alltoall")
    natural = dataclasses.replace(TR, moe_routing="natural")
    load = float(natural_rank_load(64, 8, 4096 * 8, expert_gini(m.attention, m.heads, m.kv_heads,
                                                               load_constants().raw["moe_natural_load"]["expert_gini"])))
    assert 1.05 < load < 1.3
    at_load = estimate_time(m, dataclasses.replace(TR, moe_capacity_factor=load), s, st)
    got = estimate_time(m, natural, s, st)
    assert got.step_s == pytest.approx(at_load.step_s, rel=1e-9)
    assert got.step_s > estimate_time(m, TR, s, st).step_s
    stated = dataclasses.replace(natural, moe_capacity_factor=1.6)
    assert estimate_time(m, stated, s, st).step_s == pytest.approx(
        estimate_time(m, dataclasses.replace(TR, moe_capacity_factor=1.6), s, st).step_s, rel=1e-9)
    one = Strategy(dp=64, ep=1, framework="megatron-core")
    assert estimate_time(m, natural, s, one).step_s == estimate_time(m, TR, s, one).step_s


def test_the_load_is_per_strategy_in_a_batch():
    """A searched batch of EP degrees gets each its own load: the batch's steps are the single strategies'."""
    m, s = mixtral().with_(experts=64, experts_per_token=8, expert_ffn=1792), h100_cluster(64)
    natural = dataclasses.replace(TR, moe_routing="natural")
    eps = np.array([2.0, 8.0])
    batch = step_time_arrays(m, natural, s, Strategy(dp=64, ep=eps, framework="megatron-core",
                                                     moe_dispatcher="alltoall"))["step_s"]
    one = [estimate_time(m, natural, s, Strategy(dp=64, ep=int(e), framework="megatron-core",
                                                 moe_dispatcher="alltoall")).step_s for e in eps]
    assert np.allclose(batch, one, rtol=1e-9)
