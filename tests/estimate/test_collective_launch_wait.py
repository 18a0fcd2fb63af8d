"""A prefetched ZeRO-3 / FSDP collective's NCCL kernel waiting for SMs behind the running GEMM where its stream has the
compute stream's priority (step_time._collective_launch_wait; docs/known-gaps.md 144)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import (
    _collective_launch_wait,
    _layer_gemm_residual,
    estimate_time,
    perf_style,
)

from .test_perf_common import a100_cluster, gpt, llama8b

MODEL = gpt(layers=24, hidden=4096, heads=32)
DS = perf_style("deepspeed")


def _z3(style, micro_batch: int, inter_gb_s: float):
    st = Strategy(dp=64, zero=3, micro_batch=micro_batch, recompute="full")
    tr = Training(precision="bf16", seq_len=2048, global_batch_seqs=64 * micro_batch)
    return estimate_time(MODEL, tr, a100_cluster(64, inter_gb_s=inter_gb_s), st, framework_style=style)


def test_gpt_layer_gemm_residual():
    # qkv 3, proj 1, fc1 4, fc2 4 h^2: a random moment of the GEMM stream leaves E[g^2] / 2E[g] =
    # (9 + 1 + 16 + 16) / 2 / 144 of the layer's forward; Llama's split q / k / v / o and gate / up / down less
    assert _layer_gemm_residual(SimpleNamespace(model=MODEL, fw=SimpleNamespace(split_projections=False))) == \
        pytest.approx(42.0 / 288.0)
    split = _layer_gemm_residual(SimpleNamespace(model=llama8b(), fw=SimpleNamespace(split_projections=True)))
    assert 0.05 < split < 42.0 / 288.0


def test_each_collective_waits_the_residual_unless_high_priority():
    low = SimpleNamespace(model=MODEL, fw=SimpleNamespace(split_projections=False, collective_high_priority=False))
    assert float(_collective_launch_wait(low, np.array(10.0), 0.1)) == pytest.approx(10.0 * 42.0 / 288.0 * 0.1)
    high = SimpleNamespace(model=MODEL, fw=SimpleNamespace(split_projections=False, collective_high_priority=True))
    assert float(_collective_launch_wait(high, np.array(10.0), 0.1)) == 0.0


def test_a_comm_bound_zero3_step_waits_unless_its_collectives_run_high_priority():
    default = _z3(DS, 1, 12.5)
    high = _z3(replace(DS, collective_high_priority=True), 1, 12.5)
    extra = default.breakdown_s["dp_comm"] - high.breakdown_s["dp_comm"]
    assert extra > 0.0
    # each collective at most the residual of its layer's GEMMs: a fraction of the compute
    assert extra < 0.5 * default.breakdown_s["compute"]
    assert high.breakdown_s["compute"] == default.breakdown_s["compute"]


def test_a_compute_bound_zero3_step_hides_the_wait():
    default = _z3(DS, 8, 400.0)
    high = _z3(replace(DS, collective_high_priority=True), 8, 400.0)
    assert default.step_s == pytest.approx(high.step_s, rel=1e-12)


def test_which_stacks_launch_their_collectives_high_priority():
    # DeepSpeed (every release), FSDP1 and the HF stacks on them wait; torchtitan's FSDP2 on torch >= 2.8 does not
    assert not perf_style("deepspeed").collective_high_priority
    assert not perf_style("fsdp").collective_high_priority
    assert not perf_style("hf").collective_high_priority
    assert perf_style("torchtitan").collective_high_priority
