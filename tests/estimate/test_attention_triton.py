"""The FlashAttention-in-Triton kernel (attention_kernel triton: llm-foundry's attn_impl triton, 2023): its rate read
from the FA2 paper's measured figures (A100) and derived from them (Hopper), its length curve, its head-dim padding,
and kernels mixed in one batch of strategies (perf_constants.yaml attention.flash_efficiency_triton)."""

from __future__ import annotations

import dataclasses
from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.catalog import load_catalog
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.compute import flash_head_dim_ratio
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time, perf_style, step_time_arrays
from trainsizer.scenario import resolve_job

from .test_perf_common import h100_cluster, llama8b

# FA2 paper (arXiv:2307.08691) Fig. 4(d) / 7(d): causal, head dim 128, forward + backward TFLOPS at 2K
TRITON_A100_2K, FA2_A100_2K, FA2_H100_2K = 68.0, 155.0, 265.0


def test_triton_rates_are_the_measured_a100_figure_and_the_derived_hopper_one():
    """A forward + backward rate R (3.5x the forward FLOPs) is a forward share R (1 + bwd) / 3.5 of the peak, the
    backward FA2's ratio x 2 / 1.4 (FA2 paper s4.1: FA2 1.3-1.5x Triton's forward, 2x its backward); Hopper = the
    A100 Triton / FA2 ratio x FA2's measured H100 rate."""
    k = load_constants()
    bwd = k.flash_bwd_ratio("a100-sxm-80gb", "triton")
    assert bwd == pytest.approx(k.flash_bwd_over_fwd * 2.0 / 1.4, rel=1e-3)
    assert k.flash_bwd_ratio("h100-sxm", "triton") == bwd
    to_fwd = (1.0 + bwd) / 3.5
    assert k.flash_fraction("a100-sxm-80gb", "triton") == pytest.approx(TRITON_A100_2K * to_fwd / 312.0, rel=0.01)
    h100 = TRITON_A100_2K / FA2_A100_2K * FA2_H100_2K * to_fwd / 989.0
    for part in ("h100-sxm", "h800-sxm-80gb", "h200-sxm-141gb"):
        assert k.flash_fraction(part, "triton") == pytest.approx(h100, rel=0.01)
    assert k.flash_fraction("h100-sxm", "triton") < k.flash_fraction("h100-sxm", "fa2")


def test_triton_length_factor_follows_the_measured_curve():
    k = load_constants()
    for part in ("a100-sxm-80gb", "h100-sxm", "mi300x"):  # one measured shape for every family
        factor = partial(k.flash_length_factor, part, "triton")
        assert factor(2048) == pytest.approx(1.0)
        assert factor(512) == pytest.approx(50 / 68)
        assert factor(16384) == pytest.approx(80 / 68)
        assert factor(65536) == pytest.approx(80 / 68)  # the end value beyond
    assert k.flash_length_factor("h100-sxm", "native", 65536) == 1.0  # the native kernels' own curve, elsewhere
    mixed = k.flash_length_factor("a100-sxm-80gb", np.array(["triton", "native", "triton"]), np.array([8192, 8192, 1024]))
    assert list(mixed) == pytest.approx([78 / 68, 1.0, 61 / 68])


@settings(max_examples=50, deadline=None)
@given(hs.floats(min_value=64, max_value=2e6), hs.floats(min_value=1.0, max_value=4.0))
def test_flash_rates_never_fall_with_length(length, grow):
    k = load_constants()
    for kernel in ("triton", "fa2"):
        factor = partial(k.flash_length_factor, "h100-sxm", kernel)
        assert factor(length * grow) >= factor(length)


def test_triton_pads_a_head_dim_to_the_next_power_of_two():
    """flash_attn_triton.py: BLOCK_HEADDIM = max(next_power_of_2(d), 16), d <= 128."""
    assert flash_head_dim_ratio(80, 80, "triton") == pytest.approx(128 / 80)
    assert flash_head_dim_ratio(96, 96, "triton") == pytest.approx(128 / 96)
    assert flash_head_dim_ratio(8, 8, "triton") == pytest.approx(2.0)
    assert flash_head_dim_ratio(128, 128, "triton") == 1.0


def test_triton_job_is_slower_than_fa2_on_h100_and_states_its_kernel():
    def step(kernel):
        job = {"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": 2048, "global_batch": {"sequences": 64},
               "hardware": {"accelerator": "h100-sxm-80gb", "count": 8},
               "strategy": {"micro_batch": 8, "framework": "fsdp", "zero": 3, "attention_kernel": kernel}}
        sc = resolve_job(job, load_catalog())
        return estimate_time(sc.model, sc.training, sc.system, sc.strategy).step_s

    assert step("triton") > step("fa2") > step("native")


def test_kernels_mixed_in_one_batch_match_each_alone():
    """Under framework auto each strategy can resolve to another style's kernel: the batch path picks each one's
    rate (step_time._rates), as the scalar path does."""
    m, s, tr = llama8b(), h100_cluster(8), Training(seq_len=8192, global_batch_seqs=64)
    kernels = ("fa1", "fa2", "triton", "native")
    n = len(kernels)
    st = Strategy(dp=np.full(n, 8.0), zero=np.full(n, 3.0), micro_batch=np.ones(n), framework="fsdp")
    style = dataclasses.replace(perf_style("fsdp"), attention_kernel=np.array(kernels))
    batch = np.asarray(step_time_arrays(m, tr, s, st, framework_style=style)["step_s"])
    alone = [float(np.asarray(step_time_arrays(m, tr, s, Strategy(dp=8, zero=3, micro_batch=1, framework="fsdp"),
                                               framework_style=dataclasses.replace(perf_style("fsdp"),
                                                                                   attention_kernel=name))["step_s"])
                   .reshape(-1)[0]) for name in kernels]
    assert list(batch) == pytest.approx(alone, rel=1e-9)
    assert len(set(np.round(batch, 9))) == n


def test_fa2_on_hopper_runs_its_measured_rate_and_length_curve():
    """FA2's Hopper share is its measured causal forward at 8K (333 TFLOPS, FA3 paper Fig. 5), and its rate follows
    the FA2 paper's H100 forward + backward figures (Fig. 7(d)) relative to 8K; a family without a measured curve
    has no length factor."""
    k = load_constants()
    assert k.flash_fraction("h100-sxm", "fa2") == pytest.approx(333 / 989, rel=0.01)
    assert k.flash_fraction("h200-sxm-141gb", "fa2") == k.flash_fraction("h100-sxm", "fa2")
    factor = partial(k.flash_length_factor, "h100-sxm", "fa2")
    assert factor(8192) == pytest.approx(1.0)
    assert factor(2048) == pytest.approx(265 / 308)
    assert factor(131072) == pytest.approx(328 / 308)
    assert k.flash_length_factor("mi300x", "fa2", 2048) == 1.0


def test_fa2_on_a100_runs_its_measured_rate_and_length_curve():
    """A100: FA2 at its measured causal forward + backward rate, head dim 128 (FA2 paper Fig. 4(d): 182 TFLOPS at
    8K), read as a forward share at FA2's backward / forward time ratio, and its rate by length relative to 8K (155
    at 2K, 189 at 16K); the A800 takes the A100's. FA1 keeps the figure it had (flash_efficiency_fa1), a family
    without one the fa2 figure times fa1_over_fa2."""
    k = load_constants()
    to_fwd = (1.0 + k.flash_bwd_ratio("a100-sxm-80gb", "fa2")) / 3.5
    assert k.flash_fraction("a100-sxm-80gb", "fa2") == pytest.approx(182 * to_fwd / 312, rel=0.01)
    assert k.flash_fraction("a800-sxm-80gb", "fa2") == k.flash_fraction("a100-sxm-80gb", "fa2")
    assert k.flash_length_factor("a100-sxm-80gb", "fa2", 2048) == pytest.approx(155 / 182)
    assert k.flash_length_factor("a100-sxm-80gb", "fa2", 32768) == pytest.approx(189 / 182)
    assert k.flash_fraction("a100-sxm-80gb", "fa1") == pytest.approx(0.225)
    assert k.flash_length_factor("a100-sxm-80gb", "fa1", 2048) == 1.0
    assert k.flash_fraction("h100-sxm", "fa1") == pytest.approx(k.flash_fraction("h100-sxm", "fa2") * k.fa1_over_fa2)
