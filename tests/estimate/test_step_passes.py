"""The step's gradient / weight passes beyond the fused update (step_time._step_passes): Megatron-LM's gradient norm
read and separate master -> model weight copy over the parameters a rank updates, and its gradient buffer cleared
over every local parameter (perf_constants.yaml frameworks: megatron step_update_extra_bytes / grad_buffer_zero_bytes)."""

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


def _optimizer_s(style, tp=1, dp=8, **extra) -> float:
    training = Training(seq_len=4096, global_batch_seqs=dp, precision="bf16")
    st = Strategy(dp=dp, tp=tp, micro_batch=1, recompute="full", **extra)
    system = h100_cluster(dp * tp)
    return estimate_time(llama8b(), training, system, st, framework_style=style).breakdown_s["optimizer"]


def _passes(tp=1, dp=8, **extra) -> float:
    """optimizer seconds with the megatron style's passes less without them."""
    off = dataclasses.replace(perf_style("megatron"), step_update_extra_bytes=0.0, grad_buffer_zero_bytes=0.0)
    return _optimizer_s(perf_style("megatron"), tp, dp, **extra) - _optimizer_s(off, tp, dp, **extra)


def _hbm() -> float:
    return h100_cluster().hbm_gb_s * 1e9 * K.hbm_efficiency


def test_megatron_counts_norm_copy_and_zero_other_styles_none():
    mega = perf_style("megatron")
    assert (mega.step_update_extra_bytes, mega.grad_buffer_zero_bytes) == (8.0, 4.0)
    for name in ("megatron-core", "torchtitan", "deepspeed", "hf", "torchtune"):
        style = perf_style(name)
        assert style.step_update_extra_bytes == 0.0 and style.grad_buffer_zero_bytes == 0.0


def test_replicated_optimizer_streams_12_bytes_per_local_parameter():
    assert _passes() == pytest.approx(12 * llama8b().params_total / _hbm(), rel=1e-6)


def test_distributed_optimizer_shards_the_norm_and_copy_not_the_zeroing():
    p = llama8b().params_total
    assert _passes(distributed_optimizer=True) == pytest.approx((8 * p / 8 + 4 * p) / _hbm(), rel=1e-6)


@settings(max_examples=15, deadline=None)
@given(tp=hs.sampled_from([1, 2, 4, 8]))
def test_passes_fall_with_tensor_parallelism(tp):
    """Each TP rank holds 1 / tp of the weights, so streams 1 / tp of the bytes (the embedding split too)."""
    assert _passes(tp=tp) == pytest.approx(_passes() / tp, rel=1e-6)
