"""strategy.moe_a2a_overlap: Megatron-Core's overlap_moe_expert_parallel_comm (+ delay_wgrad_compute), the combined
1F1B schedule that runs one micro-batch's EP dispatch / combine on a communication stream beside another's compute.
Time: the all-to-all hides behind the paired micro-batch's compute, which loses the communication kernels' SMs
meanwhile (step_time._overlapped_ep). Memory: one more forward in flight (a chunk when interleaved, a layer
without PP). Refused where Megatron-Core refuses it."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.errors import StrategyError
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import estimate_time, perf_style
from trainsizer.render.i18n import t
from trainsizer.scenario import resolve_job

from .test_perf_common import h100_cluster, mixtral

TR = Training(seq_len=4096, global_batch_seqs=256)


def _moe():
    return mixtral().with_(experts=64, experts_per_token=8, expert_ffn=1792)


def _st(**kw) -> Strategy:
    base = dict(dp=64, ep=8, micro_batch=1, recompute="none", distributed_optimizer=True, framework="megatron-core")
    return Strategy(**(base | kw))


def test_overlap_hides_the_all_to_all_behind_the_paired_micro_batch():
    m, s = _moe(), h100_cluster(64)
    plain = estimate_time(m, TR, s, _st()).breakdown_s
    over = estimate_time(m, TR, s, _st(moe_a2a_overlap=True)).breakdown_s
    off = estimate_time(m, TR, s, _st(moe_a2a_overlap=False)).breakdown_s
    assert off == plain  # off is the style's default
    assert over["ep_comm"] < plain["ep_comm"]
    # not free: the communication kernels hold 20 of the 132 SMs while the compute runs beside them
    share = perf_style("megatron-core").ep_overlap_sm_share
    assert share == pytest.approx(20 / 132, rel=0.01)
    assert over["ep_comm"] >= share * plain["ep_comm"] * (1 - 1e-9)
    assert over["compute"] == pytest.approx(plain["compute"])


def test_overlap_keeps_one_more_forward_in_flight():
    m, s = _moe(), h100_cluster(64)
    tr = Training(seq_len=4096, global_batch_seqs=512)
    flat = _st(dp=64)
    a = estimate_memory(m, tr, s, flat).items_bytes["layer_activations"]
    b = estimate_memory(m, tr, s, flat.with_(moe_a2a_overlap=True)).items_bytes["layer_activations"]
    assert b == pytest.approx(a * (1 + 1 / m.layers))  # no PP: one layer more
    inter = _st(dp=32, pp=2, vpp=4)
    c = estimate_memory(m, tr, s, inter).items_bytes["layer_activations"]
    d = estimate_memory(m, tr, s, inter.with_(moe_a2a_overlap=True)).items_bytes["layer_activations"]
    assert d > c  # interleaved: one chunk (L / (p v) layers) of one micro-batch more
    assert d - c == pytest.approx(c / (2 * (2 - 0 - 1) + (4 - 1) * 2 + 1), rel=0.02)


@pytest.mark.parametrize("kw, words", [
    (dict(framework="torchtitan", zero=3, distributed_optimizer=False), "overlap_moe_expert_parallel_comm"),
    (dict(ep=1), "ep > 1"),
    (dict(recompute="full"), "full"),
    (dict(dp=32, pp=2), "vpp > 1"),
])
def test_refused_where_megatron_core_refuses_it(kw, words):
    m, s = _moe(), h100_cluster(64)
    with pytest.raises(StrategyError, match=words):
        estimate_time(m, TR, s, _st(moe_a2a_overlap=True, **kw))
    estimate_time(m, TR, s, _st(**kw))  # the same layout without the option is fine


def test_refused_for_an_fp32_model():
    m, s = _moe(), h100_cluster(64)
    with pytest.raises(StrategyError, match="16-bit"):
        estimate_time(m, Training(seq_len=4096, global_batch_seqs=256, precision="fp32"), s,
                      _st(moe_a2a_overlap=True))


def test_job_file_states_it_and_the_summary_says_so():
    job = yaml.safe_load(textwrap.dedent("""\
        model: qwen3-30b-a3b
        data: {tokens: 1.0e9}
        seq_len: 4096
        global_batch: {sequences: 512}
        hardware: {accelerator: h100-sxm-80gb, count: 16, network: ib-ndr400}
        strategy: {pp: 2, vpp: 12, ep: 8, micro_batch: 1, recompute: none, distributed_optimizer: true,
                   framework: megatron-core, moe_a2a_overlap: true}
        """))
    sc = resolve_job(job, load_catalog())
    assert sc.strategy.moe_a2a_overlap is True
    assert sc.summary()["strategy"]["moe_a2a_overlap"] is True
    assert np.isfinite(estimate_time(sc.model, sc.training, sc.system, sc.strategy).step_s)
    assert t("field_strategy.moe_a2a_overlap", "en") != t("field_strategy.moe_a2a_overlap", "zh")


@pytest.mark.parametrize("attn_fwd, mlp_fwd, attn_bwd, a2a, share", [
    (1.0, 1.0, 2.0, 0.1, 0.0), (1.0, 1.0, 2.0, 0.1, 0.15), (0.2, 0.9, 0.3, 2.3, 0.15), (1.0, 0.5, 2.0, 0.8, 0.0),
    (0.0, 0.0, 0.0, 1.0, 0.15), (2.0, 1.0, 3.0, 0.0, 0.15),
])
def test_combined_1f1b_layer_pairs_each_all_to_all_with_its_window(attn_fwd, mlp_fwd, attn_bwd, a2a, share):
    """One forward + one backward layer under the combined 1F1B (Megatron-LM model_chunk_schedule_plan.py): never
    faster than the compute or the four all-to-alls alone, never slower than both in series; an all-to-all shorter
    than every module costs only its SM share; one longer than all of them leaves the compute hidden."""
    from trainsizer.estimate.step_time import combined_1f1b_layer_s

    comp = attn_fwd + 3.0 * mlp_fwd + attn_bwd
    t = float(combined_1f1b_layer_s(attn_fwd, mlp_fwd, attn_bwd, a2a, share))
    assert max(comp, 4.0 * a2a) - 1e-12 <= t <= comp + 4.0 * a2a + 1e-12
    if a2a <= min(attn_fwd, mlp_fwd, attn_bwd):
        assert t == pytest.approx(comp + 4.0 * share * a2a)
    if a2a * (1.0 - share) >= max(attn_fwd, attn_bwd, 2.0 * mlp_fwd):
        assert t == pytest.approx(4.0 * a2a)


def test_combined_1f1b_window_shows_an_all_to_all_longer_than_attention():
    """A layer pair's four 2 ms all-to-alls against 13 ms of compute: the whole micro-batch's compute would hide
    them all, but combine_bwd's window holds only the 1 ms attention forward: 1 ms shows."""
    from trainsizer.estimate.step_time import _overlapped_ep, combined_1f1b_layer_s

    attn_fwd, mlp_fwd, attn_bwd, a2a = 1.0, 3.0, 2.0, 2.0
    comp = attn_fwd + 3.0 * mlp_fwd + attn_bwd
    whole = float(_overlapped_ep(np.asarray(4.0 * a2a), np.asarray(comp), 0.0))
    windowed = float(combined_1f1b_layer_s(attn_fwd, mlp_fwd, attn_bwd, a2a, 0.0)) - comp
    assert whole == 0.0
    assert windowed == pytest.approx(a2a - attn_fwd)


def test_overlap_across_nodes_exposes_more_than_the_whole_micro_batch_bound():
    """EP 32 over four 8-GPU nodes: each all-to-all crosses InfiniBand, longer than the paired attention module, so
    the estimate exposes more than max(ep - compute, share x ep) over the micro-batch; EP 8 inside a node keeps
    the SM share only, but for the first micro-batch's forward and the last one's backward, which run alone
    (combined_1f1b_schedule_for_no_pipelining): one of the step's 4 micro-batches exposes its all-to-alls whole."""
    m, s = _moe(), h100_cluster(64)
    share = perf_style("megatron-core").ep_overlap_sm_share
    wide = dict(dp=64, ep=32)
    plain = estimate_time(m, TR, s, _st(**wide)).breakdown_s
    over = estimate_time(m, TR, s, _st(moe_a2a_overlap=True, **wide)).breakdown_s
    assert over["ep_comm"] > 1.05 * max(plain["ep_comm"] - plain["compute"], share * plain["ep_comm"])
    assert over["ep_comm"] < plain["ep_comm"]
    near = estimate_time(m, TR, s, _st()).breakdown_s
    near_over = estimate_time(m, TR, s, _st(moe_a2a_overlap=True)).breakdown_s
    m_step = TR.global_batch_seqs / 64
    assert near_over["ep_comm"] == pytest.approx((share + (1.0 - share) / m_step) * near["ep_comm"], rel=1e-6)


def test_first_rank_warm_up_and_cool_down_passes_run_unpaired():
    """Megatron-Core schedules.py get_pp_rank_microbatches: rank 0 warms up with (p - 1) x 2 + (v - 1) x p forwards
    and the overlap's one more; without pipelining one forward and one backward run alone; never more than v x m."""
    from trainsizer.estimate.pipeline import combined_1f1b_unpaired

    assert float(combined_1f1b_unpaired(8, 128, 4)) == 39.0  # the Model Zoo's PP 8 x VP 4: 39 of 512 chunk passes
    assert float(combined_1f1b_unpaired(1, 64, 1)) == 1.0
    assert float(combined_1f1b_unpaired(2, 2, 4)) == 8.0  # 9 warm-up forwards wanted, 8 chunk passes in the step


@settings(max_examples=25, deadline=None)
@given(ep=st.sampled_from([8, 16, 32]), pp=st.sampled_from([1, 2, 4]), gbs=st.sampled_from([128, 256, 1024]))
def test_overlap_exposes_no_more_than_without_it_and_all_of_it_when_every_pass_is_warm_up(ep, pp, gbs):
    m, s = _moe(), h100_cluster(128)
    tr = Training(seq_len=4096, global_batch_seqs=gbs)
    kw = dict(dp=128 // pp, ep=ep, pp=pp, vpp=4 if pp > 1 else 1)
    plain = estimate_time(m, tr, s, _st(**kw)).breakdown_s
    over = estimate_time(m, tr, s, _st(moe_a2a_overlap=True, **kw)).breakdown_s
    assert over["ep_comm"] <= plain["ep_comm"] * (1 + 1e-9)
    assert over["pp_bubble"] == pytest.approx(plain["pp_bubble"], rel=1e-6)  # fill and drain run unpaired
    n_mb = gbs / (128 // pp)
    if pp > 1 and 2 * (pp - 1) + 3 * pp + 1 >= 4 * n_mb:  # the whole step is warm-up and cool-down
        assert over["ep_comm"] == pytest.approx(plain["ep_comm"], rel=1e-6)


def _pair(m=1.32, c=1.08, s=20 / 132, **kw) -> float:
    """One layer pair as the Model Zoo's EP 32 H100 layer (attention 1.20 / 2.68 ms, expert MLP forward m, each
    all-to-all c), in ms."""
    from trainsizer.estimate.step_time import combined_1f1b_layer_s

    return float(combined_1f1b_layer_s(1.20, m, 2.68, c, s, **kw))


def test_one_queue_without_delayed_wgrad_exposes_the_forward_dispatch_whole():
    """CUDA_DEVICE_MAX_CONNECTIONS=1 and the weight gradient inside mlp_bwd (the 2025 `--combined-1f1b-recipe ep_a2a`
    order): dispatch_fwd, issued behind mlp_bwd, starts as it ends and nothing issued after it may run beside it, so
    the pair shows one more all-to-all than the compute-bound overlap (3 m > 2 c: the other windows unchanged)."""
    m, c, s = 1.32, 1.08, 20 / 132
    comp = 1.20 + 3.0 * m + 2.68
    assert _pair() == pytest.approx(comp + 4.0 * s * c)  # every window compute-bound: the SM share only
    assert _pair(delayed=False, one_queue=True) == pytest.approx(comp + c + 3.0 * s * c)


def test_either_condition_alone_changes_nothing_where_the_expert_mlp_outlasts_the_all_to_all():
    """With the weight gradient delayed, one queue still runs dispatch_fwd beside mlp_bwd_dw and dispatch_bwd beside
    mlp_fwd; with several queues, dispatch_fwd runs beside the whole mlp_bwd: 3 m either way (m > c)."""
    base = _pair()
    assert _pair(one_queue=True) == pytest.approx(base)
    assert _pair(delayed=False) == pytest.approx(base)


def test_one_queue_costs_an_expert_mlp_where_the_all_to_alls_outlast_it():
    """c > 2 m: several queues run the middle window's two all-to-alls back to back (2 c); one queue holds
    dispatch_fwd until mlp_bwd's data gradient ends (m + 2 c)."""
    m, c = 0.5, 2.0
    assert _pair(m=m, c=c, s=0.0, one_queue=True) - _pair(m=m, c=c, s=0.0) == pytest.approx(m)


@settings(max_examples=200, deadline=None)
@given(st.floats(0.0, 3.0), st.floats(0.0, 3.0), st.floats(0.0, 3.0), st.floats(0.0, 3.0), st.floats(0.0, 0.5))
def test_each_order_is_bounded_and_never_faster_than_the_overlap_it_loses(af, m, ab, c, s):
    """Never faster than the delayed, several-queue order (each order starts its all-to-alls no earlier), never
    slower than the compute and the four all-to-alls in series; one queue without the delay slowest of all."""
    from trainsizer.estimate.step_time import combined_1f1b_layer_s

    def pair(**kw):
        return float(combined_1f1b_layer_s(af, m, ab, c, s, **kw))

    base, serial = pair(), af + 3.0 * m + ab + 4.0 * c
    for kw in (dict(delayed=False), dict(one_queue=True), dict(delayed=False, one_queue=True)):
        assert base - 1e-9 <= pair(**kw) <= serial + 1e-9
    assert pair(delayed=False, one_queue=True) >= max(pair(one_queue=True), pair(delayed=False)) - 1e-9


def test_the_job_fields_reach_the_estimate_and_bad_values_name_the_field():
    """Both stated, an EP overlap across nodes shows more all-to-all; neither changes a job without the overlap;
    a connection count below 1 is bad input naming strategy.cuda_device_max_connections."""
    from trainsizer.errors import TrainsizerError

    m, s = _moe(), h100_cluster(64)
    order = dict(delay_wgrad_compute=False, cuda_device_max_connections=1)
    over = estimate_time(m, TR, s, _st(moe_a2a_overlap=True)).breakdown_s["ep_comm"]
    assert estimate_time(m, TR, s, _st(moe_a2a_overlap=True, **order)).breakdown_s["ep_comm"] > over
    assert estimate_time(m, TR, s, _st(**order)).step_s == pytest.approx(estimate_time(m, TR, s, _st()).step_s)
    job = yaml.safe_load(textwrap.dedent("""\
        model: qwen3-30b-a3b
        data: {tokens: 1.0e9}
        seq_len: 4096
        global_batch: {sequences: 512}
        hardware: {accelerator: h100-sxm-80gb, count: 16, network: ib-ndr400}
        strategy: {pp: 2, vpp: 12, ep: 8, micro_batch: 1, recompute: none, distributed_optimizer: true,
                   framework: megatron-core, moe_a2a_overlap: true, delay_wgrad_compute: false,
                   cuda_device_max_connections: 1}
        """))
    sc = resolve_job(job, load_catalog())
    assert sc.summary()["strategy"]["cuda_device_max_connections"] == 1
    assert sc.summary()["strategy"]["delay_wgrad_compute"] is False
    job["strategy"]["cuda_device_max_connections"] = 0
    with pytest.raises(TrainsizerError, match="cuda_device_max_connections"):
        resolve_job(job, load_catalog())
    for field in ("delay_wgrad_compute", "cuda_device_max_connections"):
        assert t(f"field_strategy.{field}", "zh") != t(f"field_strategy.{field}", "en")
