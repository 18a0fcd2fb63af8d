"""Weight-gradient GEMMs that accumulate into the main gradient (Megatron's gradient_accumulation_fusion:
Transformer Engine's fuse_wgrad_accumulation, Apex's wgrad_gemm_accum_*): the GEMM reads and writes the main gradient
in its dtype instead of writing a fresh 16-bit output (calibration.Rates.wgrad_out_bytes, step_time._wgrad_accum_rate,
compute.gemm_time's out_bytes)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.estimate import compute, step_time
from trainsizer.estimate.calibration import rates
from trainsizer.scenario import resolve_job

# a Megatron-Core MoE job whose experts see few tokens each: 4,096 tokens x top-8 over 64 local experts = 512 a
# GEMM, so the expert weight gradients are memory-bound and their fp32 main gradient's traffic shows
JOB = {"model": "qwen3-30b-a3b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
       "global_batch": {"sequences": 256}, "precision": "bf16",
       "hardware": {"accelerator": "h100-sxm-80gb", "count": 8, "network": "ib-ndr400"}}
LAYOUT = {"tp": 1, "pp": 1, "ep": 2, "micro_batch": 1, "recompute": "none", "framework": "megatron-core",
          "distributed_optimizer": True, "grad_reduce_in_fp32": True}


def _scenario(job: dict = JOB, **strategy):
    return resolve_job({**job, "strategy": {**LAYOUT, **strategy}}, load_catalog())


def _out_bytes(job: dict = JOB, **strategy) -> float:
    sc = _scenario(job, **strategy)
    x = step_time._step(sc.model, sc.training, sc.system, sc.strategy, None, None, None)
    return float(np.asarray(x.r.wgrad_out_bytes).reshape(-1)[0])


def _step_s(job: dict = JOB, **strategy) -> float:
    sc = _scenario(job, **strategy)
    return float(np.asarray(step_time.step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)["step_s"])
                 .reshape(-1)[0])


def test_megatron_core_accumulates_into_the_fp32_main_gradient_by_default():
    # 16-bit training: TE's is_first_microbatch is set only under FP8, so every micro-batch reads and writes 4 B
    assert _out_bytes() == pytest.approx(8.0)
    # a bf16 reduce dtype keeps a bf16 main gradient
    assert _out_bytes(grad_reduce_in_fp32=False) == pytest.approx(4.0)


def test_fp8_overwrites_on_the_first_micro_batch_and_fsdp_always():
    m = 256 / 8  # sequences over DP 8 (EP splits the experts, not DP) x micro-batch 1
    fp8 = {**JOB, "precision": "fp8", "fp8_recipe": "delayed"}
    assert _out_bytes(fp8) == pytest.approx(4.0 * (1.0 + (m - 1.0) / m))
    # Megatron-FSDP sharding the gradients sets overwrite_main_grad: written, never read
    assert _out_bytes(fp8, zero=3, fsdp="full", distributed_optimizer=False) == pytest.approx(4.0)


def test_off_where_the_job_or_the_stack_does_not_fuse():
    assert _out_bytes(gradient_accumulation_fusion=False) == 0.0
    assert _out_bytes(framework="megatron") == 0.0  # Megatron-LM 2020-2022: off unless the job states it
    assert _out_bytes(framework="megatron", gradient_accumulation_fusion=True) == pytest.approx(8.0)  # Apex: always
    assert _out_bytes(framework="torchtitan", grad_reduce_in_fp32=None) == 0.0


def test_the_accumulating_weight_gradient_slows_a_step_with_few_tokens_an_expert():
    fused, plain = _step_s(), _step_s(gradient_accumulation_fusion=False)
    # unfused, the GEMM writes 2 B and a separate add streams 10 B a parameter: the fused step is still faster
    assert fused < plain
    # and slower than the same step with the accumulation left out of the GEMM
    sc = _scenario()
    original = step_time._wgrad_accum_rate
    try:
        step_time._wgrad_accum_rate = lambda r, *args, **kwargs: r
        bare = float(np.asarray(step_time.step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)["step_s"])
                     .reshape(-1)[0])
    finally:
        step_time._wgrad_accum_rate = original
    assert fused > bare * 1.005


@settings(max_examples=30, deadline=None)
@given(tokens=st.integers(64, 65536), out=st.sampled_from([0.0, 2.0, 4.0, 8.0]))
def test_gemm_time_grows_with_output_bytes_and_zero_keeps_act_bytes(tokens, out):
    sc = _scenario()
    r = rates(sc.system, "bf16")
    base = compute.gemm_time(4096, 1536, tokens, r)
    timed = compute.gemm_time(4096, 1536, tokens, r, out_bytes=out)
    if out in (0.0, r.act_bytes):
        assert timed == pytest.approx(base)
    else:
        assert (timed > base) == (out > r.act_bytes)


def test_the_router_gradient_is_not_accumulated_by_the_gemm():
    sc = _scenario()
    r = rates(sc.system, "bf16")
    import dataclasses

    fused = dataclasses.replace(r, wgrad_out_bytes=8.0)
    with_main = compute.linear_gemms(4096, 128, 2048, fused, True)[1]
    without = compute.linear_gemms(4096, 128, 2048, fused, True, main_grad=False)[1]
    assert without == pytest.approx(compute.linear_gemms(4096, 128, 2048, r, True)[1])
    assert with_main > without
