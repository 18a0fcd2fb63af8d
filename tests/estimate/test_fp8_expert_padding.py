"""Megatron-Core's FP8 padding of the routed experts' rows (step_time._fp8_expert_padding_time): under FP8 TEGroupedMLP
copies the dispatched rows into a buffer padded per expert (Transformer Engine Fp8Padding) and fc2's output back
(Fp8Unpadding), and the backward copies both gradients, unless the dispatcher handed the experts aligned splits
(HybridEP's padded receive buffer) or the layer runs sync-free. Counted, not fitted (docs/known-gaps.md 218 (b))."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.estimate import step_time
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Strategy, Training

from .test_perf_common import b200_cluster, mixtral

K = load_constants()


def _x(precision: str = "fp8", tokens: int = 4096, **options):
    training = Training(seq_len=tokens, global_batch_seqs=8, precision=precision,
                        fp8_recipe="mxfp8" if precision == "fp8" else "auto")
    strategy = Strategy(**({"dp": 8, "ep": 8, "micro_batch": 1, "framework": "megatron-core",
                            "moe_dispatcher": "alltoall"} | options))
    return step_time._step(mixtral(), training, b200_cluster(8), strategy, None, None, None)


def _padding(**kw) -> float:
    return float(np.asarray(step_time._fp8_expert_padding_time(_x(**kw))).reshape(-1)[0])


def _copy_s(tokens: int, copies: float) -> float:
    """`copies` reads and writes of a 16-bit hidden-wide row per routed slot of every layer, at the streaming rate."""
    m = mixtral()
    hbm = b200_cluster().hbm_gb_s * 1e9 * K.hbm_efficiency
    return 2.0 * copies * tokens * m.experts_per_token * m.hidden * 2.0 / hbm + copies * K.kernel_fixed_s


def test_alltoall_fp8_pays_four_copies_a_layer_and_micro_batch():
    assert _padding() == pytest.approx(_copy_s(4096, 4.0), rel=1e-9)


def test_a_recomputed_moe_block_copies_its_forward_rows_again():
    assert _padding(recompute="selective", recompute_modules=("moe",)) == pytest.approx(_copy_s(4096, 6.0), rel=1e-9)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([1024, 2048, 4096, 8192]))
def test_the_copies_grow_with_the_routed_tokens(tokens):
    """Linear in the routed rows, the kernels' fixed cost apart."""
    assert _padding(tokens=tokens) == pytest.approx(_copy_s(tokens, 4.0), rel=1e-9)


@pytest.mark.parametrize("options", [{"precision": "bf16"}, {"moe_dispatcher": "hybridep"}, {"moe_dispatcher": "flex"},
                                     {"moe_pad_to_capacity": True}, {"cuda_graphs": "full_iteration"}])
def test_nothing_is_copied_where_the_splits_arrive_aligned_or_bf16_runs(options):
    assert _padding(**options) == 0.0


def test_the_step_carries_the_copies_on_every_layer(monkeypatch):
    """One micro-batch a GPU: the step's compute exceeds the same job's with the term at zero by the copies of every
    layer."""
    training = Training(seq_len=4096, global_batch_seqs=8, precision="fp8", fp8_recipe="mxfp8")
    strategy = Strategy(dp=8, ep=8, micro_batch=1, framework="megatron-core", moe_dispatcher="alltoall")

    def compute() -> float:
        return step_time.estimate_time(mixtral(), training, b200_cluster(8), strategy).breakdown_s["compute"]

    with_copies = compute()
    monkeypatch.setattr(step_time, "_fp8_expert_padding_time", lambda _x: 0.0)
    assert with_copies - compute() == pytest.approx(_copy_s(4096, 4.0) * mixtral().layers, rel=1e-6)


def test_at_expert_tp_below_tp_each_rank_copies_its_share_of_the_rows():
    """TP 2 with expert TP 1: each TP rank dispatches half the TP group's tokens (moe_tp_token_split), so its experts
    receive, and TEGroupedMLP pads, half the rows expert TP 2 gives them."""
    half = _padding(dp=4, tp=2, ep=4, etp=1, sequence_parallel=True)
    whole = _padding(dp=4, tp=2, ep=4, etp=2, sequence_parallel=True)
    fixed = 4.0 * K.kernel_fixed_s
    assert half - fixed == pytest.approx(0.5 * (whole - fixed), rel=1e-9)
