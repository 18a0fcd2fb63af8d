"""FSDP2's unsharded gradient hold (step_time._fsdp2_grad_hold_bytes): while gradient sync is off (torch's pipeline
stage under PerfStyle.pp_fsdp_once_per_step, or strategy.fsdp_no_sync) every micro-batch's unsharded 16-bit gradient
is cast to the fp32 reduce dtype (the first) or added into the held fp32 one (the rest), an HBM pass over the stage's
unsharded parameters each micro-batch (torch distributed/fsdp/_fully_shard/_fsdp_param.py to_accumulated_grad_if_needed
/ accumulate_unsharded_grad_if_needed)."""

from __future__ import annotations

import pytest

from trainsizer.estimate import step_time as st_mod
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time

from .test_perf_common import h100_cluster, llama8b


def _x(seqs=32, pp=4, dp=4, zero=3, **extra):
    training = Training(seq_len=4096, global_batch_seqs=seqs, precision="bf16")
    st = Strategy(dp=dp, pp=pp, zero=zero, micro_batch=1, recompute="full", framework="torchtitan", **extra)
    return st_mod._step(llama8b(), training, h100_cluster(dp * pp), st, None, None, None)


def _hold(**kw) -> float:
    return float(st_mod._fsdp2_grad_hold_bytes(_x(**kw)))


def test_the_constants_are_the_counted_passes():
    """Cast: read 2, write 4; add into fp32: read 4 + 2, write 4; 16-bit in-place add: read 2 + 2, write 2."""
    b = load_constants().raw["optimizer"]["fsdp2_grad_hold_bytes"]
    assert (b["first_fp32"], b["later_fp32"], b["first_16bit"], b["later_16bit"]) == (2 + 4, 4 + 2 + 4, 0, 2 + 2 + 2)


@pytest.mark.parametrize("seqs", [16, 32, 64])
def test_under_pipelining_each_micro_batch_casts_or_adds(seqs):
    """4 stages, DP 4: m = seqs / 4 micro-batches a step; the first casts (6 B), the others add (10 B)."""
    x = _x(seqs=seqs)
    m = float(x.m)
    assert m == seqs / 4
    assert float(st_mod._fsdp2_grad_hold_bytes(x)) == pytest.approx((6.0 + 10.0 * (m - 1.0)) / m)


def test_a_16bit_reduce_dtype_adds_in_place_after_the_first():
    m = float(_x(seqs=32).m)
    assert _hold(seqs=32, grad_reduce_in_fp32=False) == pytest.approx(6.0 * (m - 1.0) / m)


def test_no_hold_where_sync_runs_every_micro_batch_or_without_fsdp():
    assert _hold(pp_fsdp_once_per_step=False) == 0.0  # AutoModel's stage: FSDP syncs every micro-batch
    assert _hold(pp=1, dp=16) == 0.0  # no pipelining, no no-sync
    assert _hold(zero=1) == 0.0
    assert _hold(dp=1, pp=4) == 0.0  # a one-rank shard group: no FSDP wrap


def test_fsdp_no_sync_holds_without_pipelining_when_accumulating():
    assert _hold(pp=1, dp=16, seqs=64, fsdp_no_sync=True) == pytest.approx((6.0 + 10.0 * 3.0) / 4.0)
    assert _hold(pp=1, dp=16, seqs=16, fsdp_no_sync=True) == 0.0  # one micro-batch: nothing held


def test_the_hold_is_compute_time_on_every_micro_batch():
    """The pass runs in each micro-batch's backward: the step's compute grows by it, by about twice as much with
    twice the micro-batches at one layout."""

    def extra(seqs):
        training = Training(seq_len=4096, global_batch_seqs=seqs, precision="bf16")

        def compute(once):
            st = Strategy(dp=4, pp=4, zero=3, micro_batch=1, recompute="full", framework="torchtitan",
                          pp_fsdp_once_per_step=once)
            return estimate_time(llama8b(), training, h100_cluster(16), st).breakdown_s["compute"]
        return compute(True) - compute(False)

    assert extra(32) > 0
    assert extra(64) == pytest.approx(2 * extra(32), rel=0.05)
