"""DeepSpeed PipelineEngine and BF16_Optimizer terms of the step time (step_time._pipeline, _hp_grad_accum)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time, perf_style

from .test_perf_common import a100_cluster, gpt

MODEL = gpt(layers=24, hidden=4096, heads=32)
WHOLE = replace(perf_style("deepspeed"), p2p_partitioned_activations=False, p2p_partitioned_grads=False)


def _pp(style, tp=4, precision="bf16", zero=1):
    st = Strategy(tp=tp, pp=4, dp=64 // (4 * tp), zero=zero, micro_batch=1, sequence_parallel=False)
    tr = Training(precision=precision, seq_len=2048, global_batch_seqs=256)
    return estimate_time(MODEL, tr, a100_cluster(64), st, framework_style=style)


def test_tp_partitioned_p2p_sends_less_than_whole_tensors():
    ds = perf_style("deepspeed")
    assert ds.p2p_partitioned_activations and ds.p2p_partitioned_grads
    whole = _pp(WHOLE).breakdown_s["pp_comm"]
    acts_only = _pp(replace(ds, p2p_partitioned_grads=False)).breakdown_s["pp_comm"]
    both = _pp(ds).breakdown_s["pp_comm"]
    # every stage boundary crosses nodes here (TP x DP = 16 GPUs per stage): 1/4 of the bytes on the wire per
    # partitioned tensor, plus an all-gather over NVLink
    assert both < acts_only < whole
    assert both < 0.5 * whole


def test_p2p_partitioning_needs_tensor_parallelism():
    ds = perf_style("deepspeed")
    assert _pp(ds, tp=1).breakdown_s["pp_comm"] == pytest.approx(_pp(WHOLE, tp=1).breakdown_s["pp_comm"],
                                                                 rel=1e-12)


def test_bf16_optimizer_accumulates_every_micro_batch_in_fp32():
    ds = perf_style("deepspeed")
    off = replace(ds, hp_grad_accum_bytes=0.0)
    on, base = _pp(ds), _pp(off)
    extra = on.breakdown_s["compute"] - base.breakdown_s["compute"]
    assert extra > 0.0
    # 18 B per local parameter per micro-batch: this stage's 6 layers (12 h^2 + 13 h each, over TP 4) and the
    # vocabulary matrix it holds, streamed through HBM (A100 80 GB: its achieved HBM rate, between 1.4 and 2.04 TB/s)
    h, v = MODEL.hidden, MODEL.vocab
    local = (6 * (12 * h * h + 13 * h) + v * h) / 4
    per_mb_s = extra / on.micro_batches
    assert 18.0 * local / 2.04e12 < per_mb_s < 18.0 * local / 1.4e12
    # proportional to the micro-batches: twice the micro-batches, twice the accumulation
    tr2 = Training(precision="bf16", seq_len=2048, global_batch_seqs=512)
    st = Strategy(tp=4, pp=4, dp=4, zero=1, micro_batch=1, sequence_parallel=False)
    on2 = estimate_time(MODEL, tr2, a100_cluster(64), st, framework_style=ds)
    off2 = estimate_time(MODEL, tr2, a100_cluster(64), st, framework_style=off)
    assert on2.breakdown_s["compute"] - off2.breakdown_s["compute"] == pytest.approx(2.0 * extra, rel=1e-9)


def test_no_fp32_accumulation_pass_in_fp16():
    ds = perf_style("deepspeed")
    off = replace(ds, hp_grad_accum_bytes=0.0)
    a, b = _pp(ds, precision="fp16"), _pp(off, precision="fp16")
    assert a.breakdown_s["compute"] == pytest.approx(b.breakdown_s["compute"], rel=1e-12)


def test_no_fp32_accumulation_pass_under_zero3():
    # ZeRO-3 partitions the gradients (stage3.py), not BF16_Optimizer; DeepSpeed refuses ZeRO-3 with pipelining
    ds = perf_style("deepspeed")
    off = replace(ds, hp_grad_accum_bytes=0.0)
    st = Strategy(tp=2, pp=1, dp=32, zero=3, micro_batch=1)
    tr = Training(precision="bf16", seq_len=2048, global_batch_seqs=256)
    a = estimate_time(MODEL, tr, a100_cluster(64), st, framework_style=ds)
    b = estimate_time(MODEL, tr, a100_cluster(64), st, framework_style=off)
    assert a.breakdown_s["compute"] == pytest.approx(b.breakdown_s["compute"], rel=1e-12)


def test_scatter_gather_without_the_deepspeed_engine():
    # the same TP partitioning under a batched 1F1B (Megatron-LM's scatter/gather, Narayanan 2021 s4.1): one
    # activation and one gradient per slot, each 1/t on the wire and all-gathered once at its receiver
    batched = replace(WHOLE, serial_pipeline=False)
    sg = replace(batched, p2p_partitioned_activations=True, p2p_partitioned_grads=True)
    assert _pp(sg).breakdown_s["pp_comm"] < 0.5 * _pp(batched).breakdown_s["pp_comm"]
    # serial DeepSpeed engine: twice the transfers and one more all-gather per slot than the batched schedule
    assert _pp(perf_style("deepspeed")).breakdown_s["pp_comm"] > 1.5 * _pp(sg).breakdown_s["pp_comm"]
    assert _pp(sg, tp=1).breakdown_s["pp_comm"] == pytest.approx(_pp(batched, tp=1).breakdown_s["pp_comm"], rel=1e-12)
