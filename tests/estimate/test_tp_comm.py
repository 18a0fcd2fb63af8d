"""Tensor-parallel communication per layer (step_time._tp_comm, _sp_pair_time): with sequence parallelism each
all-reduce-equivalent is an NCCL ring reduce-scatter plus a ring all-gather, with no NVLink SHARP gain (NVLS sends S
and receives S/N per rank for a reduce-scatter, so its busier direction is slower than the ring's: nvidia/nccl issues
1083, 1506, 1670); without it, a real all-reduce, which NVLS speeds up. Under TP overlap the hidden share is Transformer
Engine's userbuffers figure (perf_constants comm.tp_overlap_fraction) unless the style states its own (torchtitan's
async TP); without sequence parallelism none."""

from __future__ import annotations

import dataclasses

import pytest

from trainsizer.errors import SpecError
from trainsizer.estimate import comm, step_time
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import perf_style

from .test_perf_common import h100_cluster, llama8b

K = load_constants()


def _tp_comm(sp: bool = True, nvls: bool = True, overlap: bool = False, style: str = "megatron", recipe=None):
    training = Training(seq_len=4096, global_batch_seqs=8, precision="fp8" if recipe else "bf16", fp8_recipe=recipe)
    st = Strategy(tp=8, dp=1, micro_batch=1, sequence_parallel=sp)
    fw = dataclasses.replace(perf_style(style), tp_comm_overlap=overlap)  # an explicit style takes no job options
    x = step_time._step(llama8b(), training, h100_cluster(8, nvls=nvls), st, None, fw, None)
    t_ar, per_layer = step_time._tp_comm(x)
    return x, float(t_ar), float(per_layer)


def _ring_pair(x, ag_share: float = 1.0) -> float:
    """A ring reduce-scatter of the layer's 16-bit activations plus an all-gather of `ag_share` of those bytes."""
    s = float(x.tok) * x.model.hidden * x.act
    return float(comm.reduce_scatter_time(s, 8, 8, x.r, x.system) + comm.all_gather_time(s * ag_share, 8, 8, x.r, x.system))


def test_sequence_parallel_collectives_are_rings_without_the_nvls_gain():
    x, t_ar, per_layer = _tp_comm(sp=True, nvls=True)
    assert t_ar == pytest.approx(_ring_pair(x), rel=1e-9)
    assert per_layer == pytest.approx(4 * t_ar, rel=1e-9)  # 2 forward + 2 backward all-reduce-equivalents
    assert _tp_comm(sp=True, nvls=False)[1] == pytest.approx(t_ar, rel=1e-9)


def test_a_plain_tp_all_reduce_keeps_the_nvls_gain():
    _, with_nvls, _ = _tp_comm(sp=False, nvls=True)
    _, ring, _ = _tp_comm(sp=False, nvls=False)
    assert with_nvls < ring / 1.2  # bandwidth-bound at 32 MiB: close to the 1.30 gain
    x, sp_pair, _ = _tp_comm(sp=True, nvls=True)
    assert with_nvls < sp_pair


def test_fp8_all_gathers_carry_one_byte_per_element():
    """Transformer Engine gathers the FP8 copy (megatron-core: fp8_tp_allgather 1.0); the reduce-scatter stays 16-bit.
    Delayed scaling reduces no amax per tensor, so with its per-chunk reductions off (test_delayed_amax_reductions)
    the layer's TP time is the four pairs alone."""
    style = dataclasses.replace(perf_style("megatron-core"), tp_comm_overlap=False, fp8_amax_group_reduction=False)
    training = Training(seq_len=4096, global_batch_seqs=8, precision="fp8", fp8_recipe="delayed")
    st = Strategy(tp=8, dp=1, micro_batch=1, sequence_parallel=True)
    x = step_time._step(llama8b(), training, h100_cluster(8), st, None, style, None)
    _, per_layer = step_time._tp_comm(x)
    assert float(per_layer) == pytest.approx(4 * _ring_pair(x, ag_share=0.5), rel=1e-9)


@pytest.mark.parametrize(("style", "hidden"), [("megatron-core", K.tp_overlap_fraction), ("megatron", K.tp_overlap_fraction),
                                               ("torchtitan", perf_style("torchtitan").tp_overlap_fraction)])
def test_overlap_hides_the_style_share_less_its_interference(style, hidden):
    x, t_ar, exposed = _tp_comm(overlap=False, style=style)
    _, _, overlapped = _tp_comm(overlap=True, style=style)
    assert overlapped == pytest.approx(exposed * (1.0 - hidden * (1.0 - K.overlap_interference)), rel=1e-9)


@pytest.mark.parametrize("style", ["megatron-core", "megatron", "torchtitan"])
def test_without_sequence_parallelism_nothing_is_overlapped(style):
    """The overlap splits sequence parallelism's all-gather / reduce-scatter over the GEMMs; a plain TP all-reduce
    has none to split (Megatron-Bridge's CommOverlapConfig turns tp_comm_overlap off at sequence_parallel False:
    docs/known-gaps.md 288 (b))."""
    _, _, exposed = _tp_comm(sp=False, overlap=False, style=style)
    _, _, stated = _tp_comm(sp=False, overlap=True, style=style)
    assert stated == pytest.approx(exposed, rel=1e-12)
    assert _tp_comm(sp=True, overlap=True, style=style)[2] < _tp_comm(sp=True, overlap=False, style=style)[2]


def test_torchtitan_async_tp_hides_less_than_te_userbuffers():
    assert 0.0 < perf_style("torchtitan").tp_overlap_fraction < K.tp_overlap_fraction < 1.0


def test_a_style_share_outside_zero_to_one_is_refused_by_name():
    with pytest.raises(SpecError) as err:
        step_time._load_perf_styles({"mine": {"grad_bucket_params": 4.0e7, "tp_overlap_fraction": 1.5}})
    assert "framework.mine.tp_overlap_fraction" in str(err.value)
    assert "1.5" in str(err.value)
