"""FSDP2 (fully_shard) copies on the compute stream: each all-gather's output split into the unsharded parameters
(copy-out) and each reduce-scatter's input built from the gradients in the reduce dtype (copy-in), charged at the HBM
streaming rate (step_time._fsdp2_copies). FSDP1 (the `fsdp` style: llm-foundry) gathers into its flat parameter and
casts on its post-backward stream, so it pays none."""

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


def _dp(style, gpus=8, seqs=32, mb=1, pp=1, precision="bf16", **extra) -> float:
    training = Training(seq_len=4096, global_batch_seqs=seqs, precision=precision)
    st = Strategy(dp=gpus // pp, pp=pp, zero=3, micro_batch=mb, recompute="none", **extra)
    return estimate_time(llama8b(), training, h100_cluster(gpus), st, framework_style=style).breakdown_s["dp_comm"]


def _style(copies: bool = True, **changes):
    return dataclasses.replace(perf_style("torchtitan"), fsdp2_copies=copies, **changes)


def _copies(**kw) -> float:
    """dp_comm with the copies less without, the style's other options the same (`changes` for the style)."""
    changes = kw.pop("changes", {})
    return _dp(_style(True, **changes), **kw) - _dp(_style(False, **changes), **kw)


def _hbm() -> float:
    return h100_cluster().hbm_gb_s * 1e9 * K.hbm_efficiency


def test_fsdp2_styles_copy_and_fsdp1_does_not():
    assert perf_style("torchtitan").fsdp2_copies and perf_style("torchtune").fsdp2_copies
    assert not perf_style("fsdp").fsdp2_copies and not perf_style("megatron-core").fsdp2_copies


def test_copies_counted_per_micro_batch():
    """bf16 parameters, fp32 reduce (torchtitan's default): 2 + 2 B out of each of two all-gathers, 2 + 4 B into the
    reduce-scatter = 14 B per parameter per micro-batch, 4 micro-batches per GPU."""
    assert _copies() == pytest.approx(4 * 14 * llama8b().params_total / _hbm(), rel=1e-6)


def test_bf16_reduce_and_fp8_all_gather_copy_fewer_bytes():
    fp32 = _copies()
    assert _copies(changes={"grad_reduce_bytes": 2.0}) == pytest.approx(fp32 * 12 / 14, rel=1e-6)
    f8 = _copies(precision="fp8", changes={"fp8_param_allgather": True})
    assert f8 == pytest.approx(fp32 * 10 / 14, rel=1e-6)  # 1 + 1 B out of each all-gather


def test_pipelining_gathers_once_and_accumulates_each_micro_batch():
    """Under PP (4 stages, 8 micro-batches per step): one all-gather (4 B), the first gradient upcast (2 + 4), seven
    accumulations into fp32 (4 + 2 + 4) and the copy-in of the accumulator (4 + 4) per parameter of the stage."""
    stage_params = llama8b().params_total / 4
    assert _copies(gpus=16, seqs=32, pp=4) == pytest.approx(stage_params * (4 + 6 + 7 * 10 + 8) / _hbm(), rel=1e-6)


@settings(max_examples=25, deadline=None)
@given(mb=hs.sampled_from([1, 2, 4]), per_gpu=hs.sampled_from([4, 8, 16]))
def test_copies_grow_with_micro_batches_and_never_shrink_the_step(mb, per_gpu):
    extra = _copies(seqs=8 * per_gpu, mb=mb)
    assert extra == pytest.approx(per_gpu / mb * 14 * llama8b().params_total / _hbm(), rel=1e-6)
    assert extra > 0


def test_torchao_dgrad_transposes_the_gathered_fp8_weight_each_micro_batch():
    """FP8 all-gather under torchao: the forward uses the gathered row-major FP8 weight as it is, the dgrad needs it
    column-major, so each micro-batch copies it transposed (1 + 1 B per linear weight); a framework with an FP8
    weight cache (Transformer Engine's transpose cache) does not."""
    m = llama8b()
    fp8 = Training(seq_len=4096, global_batch_seqs=8, precision="fp8", fp8_recipe="tensorwise")
    st = Strategy(dp=8, zero=3, micro_batch=1, recompute="none")

    def compute_s(cache: bool) -> float:
        style = _style(True, fp8_param_allgather=True, fp8_weight_cache=cache)
        return estimate_time(m, fp8, h100_cluster(8), st, framework_style=style).breakdown_s["compute"]

    h, kv, f = m.hidden, m.kv_heads * m.hidden // m.heads, m.ffn
    linear = m.layers * (h * (h + 2 * kv) + h * h + 3 * h * f)
    extra = compute_s(False) - compute_s(True)
    assert 2.0 * linear / _hbm() <= extra <= 2.0 * linear / _hbm() * 1.05 + 2e-3


def test_one_rank_is_not_sharded_and_copies_nothing():
    """FSDP over one rank is no FSDP: torchtitan wraps only when dp_shard x cp > 1, AutoModel skips at world size 1."""
    assert _copies(gpus=1, seqs=4) == 0.0
    assert _copies(gpus=2, seqs=4) > 0.0
