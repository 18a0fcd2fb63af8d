"""Pipelined FSDP2's memory hold (memory.py pp_hold, framework_buffers): torchtitan's stage syncs once a step, so it
holds its unsharded 16-bit weights and its unsharded gradients in the fp32 reduce dtype across micro-batches; a stage
that syncs every micro-batch (strategy pp_fsdp_once_per_step false: NeMo AutoModel's, known-gaps 24) holds the weights
only, as its step time charges no hold pass (known-gaps 130 (e))."""

from __future__ import annotations

import pytest

from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.memory import estimate_memory

from .test_perf_common import h100_cluster, llama8b


def _buffers(**kw) -> float:
    st = Strategy(dp=4, pp=4, zero=3, micro_batch=1, recompute="full", framework="torchtitan", **kw)
    training = Training(method="pretrain", seq_len=4096, global_batch_seqs=32)
    return estimate_memory(llama8b(), training, h100_cluster(16), st).items_bytes["framework_buffers"]


def test_a_stage_syncing_every_micro_batch_holds_no_gradient():
    once, default, each = _buffers(pp_fsdp_once_per_step=True), _buffers(), _buffers(pp_fsdp_once_per_step=False)
    assert once == default
    # weights 2 B and fp32 gradients 4 B a stage parameter against the weights alone
    assert each == pytest.approx(once * 2.0 / 6.0, rel=0.02)


def test_a_16bit_reduce_dtype_halves_the_hold_it_keeps():
    once = _buffers(grad_reduce_in_fp32=False)
    each = _buffers(grad_reduce_in_fp32=False, pp_fsdp_once_per_step=False)
    assert each == pytest.approx(once / 2.0, rel=0.02)
