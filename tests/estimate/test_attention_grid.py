"""The native attention kernels' grid at short calls over few heads (step_time._attention_grid,
compute.attention_grid_factors, perf_constants attention.grid): a call launches ceil(L / rows) x heads CTAs, one a SM,
and cannot end before its longest CTA. The measured rates hold thousands of CTAs (128 heads, 4K-128K); a ring step of
Transformer Engine's CP over a TP shard of the heads holds tens."""

from __future__ import annotations

import dataclasses

import pytest

from trainsizer.estimate import step_time as st
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.compute import attention_grid_factors
from trainsizer.estimate.inputs import Strategy, Training

from .test_perf_common import a100_cluster, b200_cluster, h100_cluster, llama8b

K = load_constants()


def test_a_full_grid_runs_at_the_measured_rate():
    """The rates' own shape (8K causal over 128 heads: 32 x 128 forward CTAs on 148 SMs) pays nothing."""
    assert attention_grid_factors(8192, 128, 1, False, 148, 256, 128) == (1.0, 1.0)


def test_a_ring_step_over_eight_heads_waits_on_its_longest_cta():
    """TP 4 x CP 4 at 8K on 152 SMs: 2,048 positions a rank, 8 heads. Step 0 is causal over 8 query blocks
    (2 x 152 / (8 x 9)), each later step's half-length call has 4 x 8 CTAs of even work (152 / 32); the backward
    grids over 128-key blocks (16 and 8)."""
    fwd, bwd = attention_grid_factors(2048, 8, 4, True, 152, 256, 128)
    assert fwd == pytest.approx((2 * 152 / (8 * 9) + 3 * 152 / 32) / 4)
    assert bwd == pytest.approx((2 * 152 / (8 * 17) + 3 * 152 / 64) / 4)


def test_more_heads_fill_more_of_the_grid():
    few, more, full = (attention_grid_factors(2048, h, 4, True, 152, 256, 128)[0] for h in (8, 16, 256))
    assert few > more > full == 1.0


def _x(tp: int, cp: int, micro_batch: int = 1, system=None, framework: str = "megatron-core",
       cp_comm_type: str | None = None):
    gpus = tp * cp
    training = Training(seq_len=8192, global_batch_seqs=micro_batch, precision="bf16")
    strategy = Strategy(tp=tp, cp=cp, dp=1, micro_batch=micro_batch, recompute="none", distributed_optimizer=True,
                        sequence_parallel=tp > 1, framework=framework, cp_comm_type=cp_comm_type)
    return st._step(llama8b(), training, system or b200_cluster(gpus), strategy, None, None, None)


def test_the_step_times_the_grid_of_its_calls():
    """Llama 3 8B (32 heads) at TP 4 x CP 4 on B200: 8 heads a GPU, 2,048 positions a ring call."""
    fwd, bwd = (float(v) for v in st._attention_grid(_x(4, 4)))
    sms, q_rows, k_rows = K.attention_grid("b200")
    want = tuple(float(v) for v in attention_grid_factors(2048, 8, 4, True, sms, q_rows, k_rows))
    assert (fwd, bwd) == pytest.approx(want) and fwd > bwd > 1.0


def test_more_sequences_a_call_fill_the_grid():
    assert float(st._attention_grid(_x(4, 4, micro_batch=4))[0]) < float(st._attention_grid(_x(4, 4))[0])


@pytest.mark.parametrize("kw", [dict(tp=1, cp=1), dict(tp=4, cp=4, system=a100_cluster(16)),
                                dict(tp=4, cp=4, framework="torchtitan"), dict(tp=4, cp=4, cp_comm_type="all_gather")])
def test_no_grid_term_without_its_data_or_its_kernel(kw):
    """8K over 32 heads fills B200's grid; Ampere has no grid entry; torchtitan runs another kernel; the all-gather CP
    is not read."""
    assert tuple(float(v) for v in st._attention_grid(_x(**kw))) == (1.0, 1.0)


def test_the_all_to_all_cp_grids_the_whole_row_over_a_head_shard():
    """CP 8 by all-to-all at TP 1: each rank runs 8K queries over 4 of the 32 heads (32 x 4 forward CTAs)."""
    fwd, _ = (float(v) for v in st._attention_grid(_x(1, 8, cp_comm_type="a2a")))
    sms, q_rows, k_rows = K.attention_grid("b200")
    assert fwd == pytest.approx(attention_grid_factors(8192, 4, 8, False, sms, q_rows, k_rows)[0]) and fwd > 1.0


def test_the_grid_slows_the_step_where_it_is_short():
    """The same job at TP 4 x CP 4 with and without the family's grid data: the layer compute grows."""
    x = _x(4, 4)
    lt_grid, _ = st._layer_time(x)
    k = dataclasses.replace(K, raw={**K.raw, "attention": {**K.raw["attention"], "grid": {}}})
    lt_none, _ = st._layer_time(dataclasses.replace(x, k=k))
    assert float(lt_grid.attn_fwd) > float(lt_none.attn_fwd) and float(lt_grid.attn_bwd) > float(lt_none.attn_bwd)


def test_hopper_grids_128_query_rows_a_cta():
    """H100 (FlashAttention-3's tiles, 132 SMs): the same TP 4 x CP 4 job, 16 forward query blocks a ring call."""
    fwd, bwd = (float(v) for v in st._attention_grid(_x(4, 4, system=h100_cluster(16))))
    assert K.attention_grid("h100-sxm-80gb") == (132.0, 128.0, 128.0)
    want = tuple(float(v) for v in attention_grid_factors(2048, 8, 4, True, 132.0, 128.0, 128.0))
    assert (fwd, bwd) == pytest.approx(want) and fwd > 1.0


def test_no_heads_no_grid_term():
    """A model without attention heads (a pure Mamba stack) has no call to time: 1, no division by zero."""
    assert tuple(float(v) for v in attention_grid_factors(2048, 0.0, 4, True, 152, 256, 128)) == (1.0, 1.0)
