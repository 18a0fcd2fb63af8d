"""DeepSpeed's ZeRO-2 reduces every micro-batch's gradients (step_time._zero2_reductions; docs/known-gaps.md 296 (c)):
its gradient hooks reduce whenever the gradients are partitioned (stage_1_and_2.py
reduce_ready_partitions_and_remove_grads), where ZeRO-1 reduces the accumulated gradients once, at the boundary."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import step_time_arrays

from .test_perf_common import a100_cluster, llama8b


def _dp(framework, zero, micro_batches, fsdp=None):
    kw = {"fsdp": fsdp} if fsdp else {}
    strategy = Strategy(tp=1, dp=16, zero=zero, micro_batch=1, framework=framework, recompute="full", **kw)
    out = step_time_arrays(llama8b(), Training(seq_len=2048, global_batch_seqs=16 * micro_batches),
                           a100_cluster(gpus=16), strategy)
    return float(np.asarray(out["dp_comm"]).reshape(-1)[0])


@pytest.mark.parametrize("framework", ["deepspeed", "hf"])
def test_zero2_reduces_every_micro_batch_zero1_once(framework):
    """On DeepSpeed's engine (the deepspeed style, the hf style's ZeRO without fsdp) ZeRO-2's exposed reduce grows with
    the micro-batches a step, each micro-batch's last bucket after its backward; ZeRO-1's does not."""
    one, four = _dp(framework, 2, 1), _dp(framework, 2, 4)
    assert four > one
    assert _dp(framework, 1, 4) == pytest.approx(_dp(framework, 1, 1))


def test_one_micro_batch_is_as_before():
    """At one micro-batch a step ZeRO-2 reduces once, as ZeRO-1 does on the hf style (both reduce-scatter the
    gradients and all-gather the updated parameters)."""
    assert _dp("hf", 2, 1) == pytest.approx(_dp("hf", 1, 1))


@settings(max_examples=10, deadline=None)
@given(m=st.integers(min_value=1, max_value=6))
def test_the_extra_is_linear_in_the_micro_batches(m):
    """Each further micro-batch adds the same reduction: the exposed time is linear in the micro-batches."""
    base, two = _dp("deepspeed", 2, 1), _dp("deepspeed", 2, 2)
    assert _dp("deepspeed", 2, m) == pytest.approx(base + (m - 1) * (two - base), rel=1e-6)
