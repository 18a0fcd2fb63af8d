"""Primus-Turbo's grouped GEMM for the routed experts (strategy.moe_turbo_grouped_gemm, PerfStyle.moe_turbo_grouped_gemm):
its share of the dense GEMM rate by precision on MI355X, derived from Primus-Turbo PR 252's table
(benchmarks/turbo_grouped_gemm.py; perf_constants.yaml gemm.turbo_grouped_gemm_over_dense; docs/known-gaps.md 264 (a)),
applied to the routed experts' GEMMs only and only where the job states it."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import turbo_grouped_gemm as tg  # noqa: E402
from trainsizer.estimate.calibration import load_constants  # noqa: E402
from trainsizer.estimate.inputs import Strategy, System, Training  # noqa: E402
from trainsizer.estimate.step_time import step_time_arrays  # noqa: E402
from trainsizer.estimate.validate import unused_moe_options  # noqa: E402
from trainsizer.models.arch import ModelArch  # noqa: E402
from trainsizer.spec.job import STACK_OPTION_FIELDS, StrategySpec  # noqa: E402


@pytest.mark.parametrize("precision", ["bf16", "fp8"])
def test_the_mi355x_share_is_the_derived_one(precision):
    assert load_constants().turbo_grouped_gemm_over_dense("mi355x", precision) == pytest.approx(
        tg.derived_share("triton", precision), abs=5e-4)


def test_the_derivation_matches_the_table_at_the_derived_share():
    """At the derived share the estimate's time for the table's six cases is the measured one; at the dense rate it is
    shorter (the kernel runs under the dense share), more so in FP8 (its backward) than in BF16."""
    for precision in ("bf16", "fp8"):
        rt, share = tg.mi355x_rates(precision), tg.derived_share("triton", precision)
        assert tg.op_seconds(share, rt, precision) == pytest.approx(tg.measured_seconds("triton", precision), rel=1e-6)
        assert tg.op_seconds(1.0, rt, precision) < tg.measured_seconds("triton", precision)
    assert tg.derived_share("triton", "fp8") < tg.derived_share("triton", "bf16") < 1.0


@pytest.mark.parametrize("part", ["mi350x", "mi325x", "mi300x", "h100-sxm", "b200"])
def test_parts_without_a_table_keep_the_dense_rate(part):
    k = load_constants()
    assert k.turbo_grouped_gemm_over_dense(part, "fp8") == k.turbo_grouped_gemm_over_dense(part, "bf16") == 1.0


def test_every_16_bit_precision_takes_the_bf16_share():
    k = load_constants()
    assert k.turbo_grouped_gemm_over_dense("mi355x", "fp16") == k.turbo_grouped_gemm_over_dense("mi355x", "bf16")


def _mi355x() -> System:
    return System(accelerator="mi355x", gpus=8, gpus_per_node=8, memory_gib=288,
                  peak_tflops={"bf16": 2516.6, "fp16": 2516.6, "fp8": 5033.0}, hbm_gb_s=8000.0,
                  intra_node_gb_s=537.6, inter_node_gb_s=50.0)


def _moe(experts: int = 8) -> ModelArch:
    return ModelArch(name="moe", family="llama4", layers=4, hidden=4096, heads=32, kv_heads=8, ffn=0, vocab=32000,
                     max_position=8192, experts=experts, experts_per_token=1, expert_ffn=8192)


def _forward(model: ModelArch, stated, precision: str = "bf16", system: System | None = None) -> float:
    st = Strategy(dp=8, ep=8, micro_batch=1, framework="megatron-core", moe_turbo_grouped_gemm=stated)
    training = Training(seq_len=8192, global_batch_seqs=8, precision=precision)
    out = step_time_arrays(model, training, system or _mi355x(), st)
    return float(np.asarray(out["forward_compute"]))


def test_the_routed_experts_alone_run_at_the_share_on_mi355x():
    """One expert a GPU, 8,192 tokens: the forward's routed-expert GEMMs (two 8,192 x 8,192 x 4,096 and one 8,192 x
    4,096 x 8,192 a layer, compute-bound) take 1 / share their dense time; null and false are the dense rate."""
    k = load_constants()
    rate = 2516.6e12 * k.gemm_efficiency("mi355x")
    dense_s = 4 * 3 * 2.0 * 8192 * 8192 * 4096 / rate
    added = _forward(_moe(), True) - _forward(_moe(), False)
    assert added == pytest.approx(dense_s * (1.0 / k.turbo_grouped_gemm_over_dense("mi355x", "bf16") - 1.0), rel=0.03)
    assert _forward(_moe(), None) == _forward(_moe(), False)


def test_fp8_takes_its_own_share():
    k = load_constants()
    bf16 = _forward(_moe(), True) / _forward(_moe(), False)
    fp8 = _forward(_moe(), True, "fp8") / _forward(_moe(), False, "fp8")
    assert fp8 > 1.0 and bf16 > 1.0
    assert k.turbo_grouped_gemm_over_dense("mi355x", "fp8") < k.turbo_grouped_gemm_over_dense("mi355x", "bf16")


def test_a_part_without_a_table_is_unchanged():
    mi300x = System(accelerator="mi300x", gpus=8, gpus_per_node=8, memory_gib=192,
                    peak_tflops={"bf16": 1307.4, "fp16": 1307.4, "fp8": 2614.9}, hbm_gb_s=5300.0,
                    intra_node_gb_s=448.0, inter_node_gb_s=50.0)
    assert _forward(_moe(), True, system=mi300x) == _forward(_moe(), False, system=mi300x)


def test_the_job_field_is_a_stack_option_and_moe_only():
    assert "moe_turbo_grouped_gemm" in STACK_OPTION_FIELDS
    assert StrategySpec(framework="megatron-core", moe_turbo_grouped_gemm=True).moe_turbo_grouped_gemm is True
    dense = ModelArch(name="dense", family="llama", layers=4, hidden=4096, heads=32, kv_heads=8, ffn=14336,
                      vocab=32000, max_position=8192)
    st = Strategy(dp=8, micro_batch=1, framework="megatron-core", moe_turbo_grouped_gemm=True)
    assert unused_moe_options(dense, st) == ["moe_turbo_grouped_gemm"]
    assert unused_moe_options(_moe(), st) == []
