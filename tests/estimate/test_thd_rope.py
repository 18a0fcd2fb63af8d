"""Megatron-Core's unfused RoPE over THD-packed rows (step_time._thd_rope_host; docs/known-gaps.md 286 (b)): with
apply_rope_fusion False (strategy.rope_kernel eager) rope_utils._apply_rotary_pos_emb_thd reads cu_seqlens on the host
twice a call and runs each packed sub-sequence on its own, so every attention layer's forward exposes the loop's host
issue; its backward's nodes, 12 kernels a sub-sequence, join the layer's host floor (step_time.
_thd_rope_backward_host_s; 315 (a)). Unstated or fused RoPE, unpacked rows and styles other than megatron-core:
nothing."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.compute import KERNELS
from trainsizer.estimate.host_sync import host_figure
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import (
    _rope_thd_op_s,
    _step,
    _thd_rope_backward_host_s,
    _thd_rope_host,
    estimate_time,
    estimate_time_batch,
)

from .test_perf_common import h100_cluster, llama8b

PACKED = Training(seq_len=2048, global_batch_seqs=32, attention_span=385)


def _st(**kw) -> Strategy:
    base = dict(tp=1, pp=1, dp=1, micro_batch=1, recompute="none", distributed_optimizer=True,
                framework="megatron-core")
    return Strategy(**(base | kw))


def _host(training=PACKED, model=None, **kw) -> float:
    x = _step(model or llama8b(), training, h100_cluster(1), _st(**kw), None, None, None)
    return float(_thd_rope_host(x))


def _backward(training=PACKED, model=None, **kw) -> float:
    x = _step(model or llama8b(), training, h100_cluster(1), _st(**kw), None, None, None)
    return float(_thd_rope_backward_host_s(x))


def _op_s() -> float:
    """NVIDIA's eager element-wise op and the loop's measured glue a kernel (known-gaps 325 (a))."""
    return host_figure("elementwise_op_s", "nvidia") + load_constants().raw["eager_loop_glue"]["rope_thd_s_per_kernel"]


def _expected(samples: float, passes: float = 1.0) -> float:
    """Two calls (q, k) a layer: per call its fixed ops and 13 a sub-sequence at the loop's element-wise op (no
    round-trip figure: a sync costs nothing more than the issue after it)."""
    ops = KERNELS["rope_thd_host_per_call"] + samples * KERNELS["rope_thd_host_per_sequence"]
    return 2.0 * ops * _op_s() * passes


def test_the_loop_is_two_calls_of_the_packs_samples_at_the_elementwise_op():
    assert _host(rope_kernel="eager") == pytest.approx(_expected(2048 / 385))
    # full recompute runs the forward, and the loop, again
    assert _host(rope_kernel="eager", recompute="full") == pytest.approx(_expected(2048 / 385, passes=2.0))


def test_nothing_when_fused_unstated_unpacked_or_another_style():
    assert _host() == 0.0 and _host(rope_kernel="fused") == 0.0
    assert _host(Training(seq_len=2048, global_batch_seqs=32), rope_kernel="eager") == 0.0  # no packing
    assert _host(rope_kernel="eager", framework="torchtitan") == 0.0  # its own RoPE: no THD loop
    norope = dataclasses.replace(llama8b(), position="none")
    assert _host(model=norope, rope_kernel="eager") == 0.0


def test_the_step_grows_by_the_loop_on_every_layer_and_micro_batch():
    system, model = h100_cluster(1), llama8b()
    eager = float(estimate_time(model, PACKED, system, _st(rope_kernel="eager")).step_s)
    fused = float(estimate_time(model, PACKED, system, _st(rope_kernel="fused")).step_s)
    loop = _expected(2048 / 385) * model.layers * 32  # 32 micro-batches on the one GPU
    backward = _backward(rope_kernel="eager") * model.layers * 32
    # eager RoPE also moves more bytes (rope_eager_bytes): the step grows by the forward's loop, by part of the
    # backward's host (joined to the layer's floor in the soft maximum, so no more than all of it) and a little more
    assert loop < eager - fused < 1.2 * loop + backward
    assert eager - fused > loop + 0.05 * backward  # on this GPU-bound layer the backward still shows


def test_the_backward_is_twelve_kernels_a_sub_sequence_at_the_elementwise_op():
    """q and k once a layer, whatever the recompute (the recompute re-runs the forward only)."""
    per = 2.0 * (2048 / 385) * KERNELS["rope_thd_backward_per_sequence"] * _op_s()
    assert KERNELS["rope_thd_backward_per_sequence"] == 12
    assert _backward(rope_kernel="eager") == pytest.approx(per)
    assert _backward(rope_kernel="eager", recompute="full") == pytest.approx(per)
    assert _backward() == 0.0 and _backward(rope_kernel="fused") == 0.0
    assert _backward(Training(seq_len=2048, global_batch_seqs=32), rope_kernel="eager") == 0.0
    assert _backward(rope_kernel="eager", framework="torchtitan") == 0.0
    assert _backward(model=dataclasses.replace(llama8b(), position="none"), rope_kernel="eager") == 0.0


def test_a_host_bound_layer_pays_the_backward_in_full():
    """At TP 4 without sequence parallelism an 8B layer's GPU work is well under its host floor (Megatron-Bridge's
    Qwen3-8B SFT card item): the backward's host adds nearly all of itself to the step."""
    system, model = h100_cluster(4), llama8b()
    s = dict(tp=4, sequence_parallel=False, tp_comm_overlap=False)
    eager = float(estimate_time(model, PACKED, system, _st(rope_kernel="eager", **s)).step_s)
    fused = float(estimate_time(model, PACKED, system, _st(rope_kernel="fused", **s)).step_s)
    x = _step(model, PACKED, system, _st(rope_kernel="eager", **s), None, None, None)
    loop = float(_thd_rope_host(x)) * model.layers * 32
    backward = float(_thd_rope_backward_host_s(x)) * model.layers * 32
    assert loop + 0.8 * backward < eager - fused < 1.2 * (loop + backward)


def test_scalar_and_batch_agree():
    s = _st(rope_kernel="eager")
    one = float(estimate_time(llama8b(), PACKED, h100_cluster(1), s).step_s)
    batch = estimate_time_batch(llama8b(), PACKED, h100_cluster(1),
                                dataclasses.replace(s, tp=np.ones(2, int), dp=np.ones(2, int)))
    assert [float(v) for v in batch["step_s"]] == pytest.approx([one, one], rel=1e-9)


@settings(max_examples=25, deadline=None)
@given(span=st.integers(min_value=64, max_value=2048), shorter=st.integers(min_value=1, max_value=60))
def test_more_samples_a_pack_cost_more(span, shorter):
    """Shorter samples pack more into a row: the charge never falls as the mean sample length does."""
    longer = Training(seq_len=2048, global_batch_seqs=32, attention_span=span)
    more = Training(seq_len=2048, global_batch_seqs=32, attention_span=max(span - shorter, 32))
    assert _host(more, rope_kernel="eager") >= _host(longer, rope_kernel="eager") > 0.0


def test_a_loop_kernel_costs_an_elementwise_op_and_its_glue_not_an_mm():
    """The loop's kernels are element-wise: no cuBLAS handle, workspace or heuristic, so each costs the element-wise
    op (7.1 us, FlagGems issue 4558's torch.add on an A100) plus the views, Python and autograd bookkeeping measured
    between them on CPU (3.5 us): below torch.mm's launch-bound 14.8 us, above the bare op (known-gaps 325 (a))."""
    x = _step(llama8b(), PACKED, h100_cluster(1), _st(rope_kernel="eager"), None, None, None)
    op = _rope_thd_op_s(x)
    assert op == pytest.approx(_op_s())
    assert host_figure("elementwise_op_s", "nvidia") < op < host_figure("launch_bound_op_s", "nvidia")
    # a vendor without its own element-wise figure (AMD: none read) takes NVIDIA's
    amd = _step(llama8b(), PACKED, dataclasses.replace(h100_cluster(1), vendor="amd"), _st(rope_kernel="eager"),
                None, None, None)
    assert host_figure("elementwise_op_s", "amd") is None and _rope_thd_op_s(amd) == pytest.approx(op)


def test_multi_latent_attention_adds_its_interleave_both_ways():
    """MLA's calls gather the rotary channels (mla_rotary_interleaved=True at 61f31145): 14 kernels a sub-sequence
    forward and 17 backward, each at the loop's element-wise op (known-gaps 315 (b), charged 325 (a))."""
    from .test_memory import DSV2_LITE  # noqa: PLC0415 (an MLA model as that module writes it)

    assert DSV2_LITE.attention == "mla" and DSV2_LITE.position == "rope"
    x = _step(DSV2_LITE, PACKED, h100_cluster(1), _st(rope_kernel="eager"), None, None, None)
    share = DSV2_LITE.attention_layers / DSV2_LITE.layers
    per = 2048 / 385
    fwd = KERNELS["rope_thd_host_per_sequence"] + KERNELS["rope_thd_mla_interleave_per_sequence"]
    bwd = KERNELS["rope_thd_backward_per_sequence"] + KERNELS["rope_thd_mla_interleave_backward_per_sequence"]
    assert (fwd, bwd) == (14, 17)
    expected_fwd = 2.0 * (KERNELS["rope_thd_host_per_call"] + per * fwd) * _op_s() * share
    assert float(_thd_rope_host(x)) == pytest.approx(expected_fwd)
    assert float(_thd_rope_backward_host_s(x)) == pytest.approx(2.0 * per * bwd * _op_s() * share)
