"""Sequence parallelism on dim 1 of [batch, seq, hidden] (DTensor SequenceParallel, Shard(1): torchtitan): with more
than one row per micro-batch each TP all-gather is followed by a chunk-cat copy and each reduce-scatter's input is
chunk-cat into rank order (step_time._sp_layout_copies). Megatron's [seq, batch, hidden] layout gathers along dim 0
and copies nothing."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time, perf_style

from .test_perf_common import h100_cluster, llama8b

K = load_constants()


def _compute(copies: bool, tp=8, mb=2, recompute="none", precision="bf16", compile_=True, **changes) -> float:
    style = dataclasses.replace(perf_style("torchtitan"), sp_dim1_copies=copies, **changes)
    training = Training(seq_len=4096, global_batch_seqs=(8 // tp) * mb, precision=precision,
                        fp8_recipe="tensorwise" if precision == "fp8" else None)
    st = Strategy(tp=tp, dp=8 // tp, zero=3, micro_batch=mb, recompute=recompute, sequence_parallel=True,
                  torch_compile=compile_)
    return estimate_time(llama8b(), training, h100_cluster(8), st, framework_style=style).breakdown_s["compute"]


def _extra(**kw) -> float:
    return _compute(True, **kw) - _compute(False, **kw)


def _per_copy(mb: int, act_bytes: float = 2.0) -> float:
    """Seconds of all layers' copies of one gathered tensor (read + write); one micro-batch per step."""
    m = llama8b()
    rate = h100_cluster().hbm_gb_s * 1e9 * K.hbm_efficiency
    return m.layers * (2.0 * mb * 4096 * m.hidden * act_bytes / rate + K.kernel_fixed_s)


def test_torchtitan_copies_and_megatron_styles_do_not():
    assert perf_style("torchtitan").sp_dim1_copies
    assert not perf_style("megatron-core").sp_dim1_copies and not perf_style("megatron").sp_dim1_copies


def test_compiled_layer_copies_its_gathers_and_forward_scatters():
    """No recompute, compiled: forward 2 all-gathers + 2 reduce-scatters, backward 2 all-gathers (the backward
    reduce-scatters' cat takes the compiled gradient sum): 6 copies per layer and micro-batch."""
    assert _extra() == pytest.approx(6 * _per_copy(2), rel=1e-6)


def test_eager_backward_scatters_copy_too():
    assert _extra(compile_=False) == pytest.approx(8 * _per_copy(2), rel=1e-6)


def test_recompute_repeats_the_forward_copies():
    """torchtitan's per-op SAC re-runs the two all-gathers (8 copies); full recompute the whole forward (10)."""
    assert _extra(recompute="selective") == pytest.approx(8 * _per_copy(2), rel=1e-6)
    assert _extra(recompute="full") == pytest.approx(10 * _per_copy(2), rel=1e-6)


def test_fp8_gathers_copy_one_byte():
    """Tensorwise float8 gathers FP8 data (torchao Float8ColwiseParallel, _NoopFwToFloat8BwDynamic): the 4 gathers
    copy 1 B per element, the 2 forward reduce-scatters 2 B."""
    expected = 4 * _per_copy(2, act_bytes=1.0) + 2 * _per_copy(2)
    assert _extra(precision="fp8") == pytest.approx(expected, rel=1e-6)


def test_one_row_per_micro_batch_or_no_tp_copies_nothing():
    """One row: the gathered [tp, s/tp, h] buffer is [s, h] as it stands (a view); no TP: no sequence parallelism."""
    assert _extra(mb=1) == 0.0
    assert _extra(tp=1) == 0.0


@settings(max_examples=20, deadline=None)
@given(mb=hs.sampled_from([2, 4, 8]), tp=hs.sampled_from([2, 4, 8]), overlap=hs.booleans())
def test_copies_scale_with_the_micro_batch_and_survive_async_tp(mb, tp, overlap):
    """Async TP (the fused all-gather matmul moves the gather dim to the front and back) keeps them; bytes grow with
    the rows per micro-batch, whatever the TP degree."""
    extra = _extra(mb=mb, tp=tp, tp_comm_overlap=overlap)
    assert extra == pytest.approx(6 * _per_copy(mb), rel=1e-6)
    assert extra > 0
