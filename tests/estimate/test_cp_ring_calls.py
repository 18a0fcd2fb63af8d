"""The native attention kernels under Transformer Engine's context-parallel ring (step_time._cp_ring_calls): each
ring step is its own kernel call, and each call pays a query block's fixed work (calibration.native_block_tiles, c key
tiles read from the part's measured rate at two lengths) again. With 2 cp load-balanced chunks a rank, a query block
runs in (3 cp + 1) / 4 calls on average, so a block of the row's n causal tiles takes n + k c tile times where the
rate at the call length gives n' / (n' + c) a tile."""

from __future__ import annotations

import pytest

from trainsizer.estimate import step_time as st
from trainsizer.estimate.calibration import causal_tiles, load_constants
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time

from .test_perf_common import b200_cluster, h100_cluster, llama8b

K = load_constants()


def _x(cp: int, seq: int = 8192, cp_comm_type: str | None = None, framework: str = "megatron-core",
       system=None, gpus: int = 8):
    training = Training(seq_len=seq, global_batch_seqs=gpus // cp, precision="bf16")
    strategy = Strategy(tp=1, cp=cp, dp=gpus // cp, micro_batch=1, recompute="none", distributed_optimizer=True,
                        framework=framework, cp_comm_type=cp_comm_type)
    return st._step(llama8b(), training, system or b200_cluster(gpus), strategy, None, None, None)


def _factors(*args, **kw) -> tuple[float, float]:
    return tuple(float(f) for f in st._cp_ring_calls(_x(*args, **kw)))  # type: ignore[return-value]


@pytest.mark.parametrize("cp, calls", [(2, 1.75), (4, 3.25), (8, 6.25)])
def test_a_query_block_pays_its_fixed_work_in_every_call_it_runs(cp, calls):
    """At 8K over CP 2-8 the call length is below the 8K reference, where the 8K rate is kept: (n + k c) / (n + c)."""
    c_fwd, c_bwd = K.native_block_tiles("b200")
    n = float(causal_tiles(8192))
    fwd, bwd = _factors(cp)
    assert fwd == pytest.approx((n + calls * c_fwd) / (n + c_fwd), rel=1e-9)
    assert bwd == pytest.approx((n + calls * c_bwd) / (n + c_bwd), rel=1e-9)
    assert fwd > 1.0 and bwd > 1.0


def test_a_long_row_pays_its_calls_against_the_rate_at_the_call_length():
    """128K over CP 8: the calls run at the 16K rate (n' tiles, one c), the row's n tiles pay k c."""
    c_fwd, _ = K.native_block_tiles("b200")
    n, n_at = float(causal_tiles(131072)), float(causal_tiles(16384))
    fwd, _ = _factors(8, seq=131072)
    assert fwd == pytest.approx((n + 6.25 * c_fwd) / n * n_at / (n_at + c_fwd), rel=1e-9)


@pytest.mark.parametrize("kw", [dict(cp=1), dict(cp=4, cp_comm_type="a2a"), dict(cp=4, cp_comm_type="all_gather"),
                                dict(cp=4, framework="torchtitan")])
def test_one_call_a_query_block_or_another_kernel_pays_nothing(kw):
    assert _factors(**kw) == (1.0, 1.0)


def test_hopper_pays_less_than_blackwell_at_cudnn_9_13():
    """The H100 curve is flat from 4K (c about 3 tiles), B200's 9.13.1 runs 4K at 0.73x its 8K rate (c about 20)."""
    h100 = _factors(4, system=h100_cluster(8))
    b200 = _factors(4)
    assert 1.0 < h100[0] < b200[0] and 1.0 < h100[1] < b200[1]


def test_the_ring_slows_the_attention_compute_of_the_step():
    training = Training(seq_len=8192, global_batch_seqs=2, precision="bf16")

    def compute(cp_comm_type):
        s = Strategy(tp=1, cp=4, dp=2, micro_batch=1, recompute="none", distributed_optimizer=True,
                     framework="megatron-core", cp_comm_type=cp_comm_type)
        return estimate_time(llama8b(), training, b200_cluster(8), s).breakdown_s["compute"]

    assert compute("p2p") > compute("a2a")
