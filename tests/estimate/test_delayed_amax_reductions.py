"""Delayed scaling's amax reductions under Megatron-Core (step_time._delayed_amax_reductions): each model chunk runs in
one fp8_autocast whose fp8_group is the TP x DP x CP ranks of its pipeline stage (TransformerBlock.forward,
parallel_state.get_amax_reduction_group, core_v0.9.0), and Transformer Engine all-reduces the chunk's amaxes at the
autocast's exit and in its backward, synchronously (fp8.py reduce_tensor_across_group_op_max, async_op=False, v1.9 to
v2.5): two latency-bound all-reduces a chunk and micro-batch, over a group that grows with DP
(docs/known-gaps.md 245 (c)). tp_only_amax_red keeps them inside TP x CP; other recipes and styles pay none."""

from __future__ import annotations

import dataclasses

import pytest

from trainsizer.errors import TrainsizerError
from trainsizer.estimate import comm
from trainsizer.estimate.calibration import load_constants, rates
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import _job_options, estimate_time, perf_style

from .test_perf_common import h100_cluster, llama8b

K = load_constants()
M = 8  # micro-batches a step on every DP rank


def _step(dp: int, recipe: str | None = "delayed", flag: bool = True, framework: str = "megatron-core",
          pp: int = 2, vpp: int = 2, **kw) -> float:
    training = Training(seq_len=4096, global_batch_seqs=M * dp, precision="fp8" if recipe else "bf16",
                        fp8_recipe=recipe)
    st = Strategy(**({"tp": 4, "pp": pp, "vpp": vpp, "dp": dp, "micro_batch": 1, "sequence_parallel": True,
                      "distributed_optimizer": True, "framework": framework} | kw))
    # the style with its job options (tp_only_amax_red among them), the reductions on or off
    style = _job_options(st, dataclasses.replace(perf_style(framework), fp8_amax_group_reduction=flag))
    return estimate_time(llama8b(), training, h100_cluster(4 * pp * dp), st, framework_style=style).breakdown_s[
        "tp_comm"]


def _extra(dp: int, **kw) -> float:
    """TP-term seconds the reductions add: the style with them less the same style without."""
    return _step(dp, **kw) - _step(dp, flag=False, **kw)


def _pair(group: int) -> float:
    """One forward (3 amaxes a linear) and one backward (2) reduction of a 8-layer chunk's 32 linears."""
    system = h100_cluster(64)
    r = rates(system, "fp8", K, None, "native", "delayed")
    k = min(group, 8)
    return sum(float(comm.all_reduce_time(4.0 * n * 32, group, k, r, system, K.nvls_allreduce_gain))
               for n in (3.0, 2.0))


def test_two_reductions_a_chunk_and_micro_batch_over_tp_dp():
    """32 layers over PP 2 x VP 2: 8-layer chunks, 2 a rank, each reduced twice a micro-batch over TP 4 x DP."""
    for dp in (2, 8):
        assert _extra(dp) == pytest.approx(M * 2 * _pair(4 * dp), rel=1e-6)


def test_the_reductions_grow_with_data_parallelism():
    assert 0.0 < _extra(2) < _extra(8) < _extra(32)


def test_tp_only_amax_red_reduces_over_tp_alone():
    """Megatron-Core tp_only_amax_red: the group is TP x CP, whatever DP."""
    assert _extra(8, tp_only_amax_red=True) == pytest.approx(M * 2 * _pair(4), rel=1e-6)
    assert _extra(32, tp_only_amax_red=True) == pytest.approx(_extra(8, tp_only_amax_red=True), rel=1e-9)


@pytest.mark.parametrize("recipe", ["tensorwise", "blockwise", None])
def test_other_recipes_reduce_no_chunk_amaxes(recipe):
    assert _extra(8, recipe=recipe) == 0.0


def test_only_megatron_core_reduces_them():
    assert perf_style("megatron-core").fp8_amax_group_reduction
    assert not any(perf_style(f).fp8_amax_group_reduction for f in ("torchtitan", "fsdp", "hf", "deepspeed"))


def test_tp_only_amax_red_is_megatron_cores():
    with pytest.raises(TrainsizerError, match="tp_only_amax_red"):
        _step(8, framework="torchtitan", pp=1, vpp=1, tp_only_amax_red=True, zero=3)
