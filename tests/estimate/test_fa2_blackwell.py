"""FlashAttention-2 on datacenter Blackwell (attention.flash_efficiency b200 / b300 / gb200 / gb300, known-gaps 199):
flash-attn 2.x runs its sm80 kernels (mma.sync) on sm100, measured at about the H100's absolute rate, not at a share of
Blackwell's peak."""

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.step_time import estimate_time
from trainsizer.scenario import resolve_job

B200_OVER_H100_FWD_8K = 361.6 / 370.0  # tritonbench PR 171 (B200) over FA3 paper Fig. 5 (H100), non-causal, d 128, 8K


@pytest.mark.parametrize(("part", "peak_tflops"), [("b200", 2250), ("b300", 2250), ("gb200", 2500), ("gb300", 2500)])
def test_fa2_on_sm100_runs_at_the_h100s_measured_rate(part, peak_tflops):
    k = load_constants()
    h100_tflops = k.flash_fraction("h100-sxm-80gb", "fa2") * 989
    assert k.flash_fraction(part, "fa2") * peak_tflops == pytest.approx(h100_tflops * B200_OVER_H100_FWD_8K, rel=0.01)
    assert k.flash_fraction(part, "fa2") < 0.5 * k.flash_fraction(part, "native")  # cuDNN's tcgen05 kernels
    for length in (2048, 16384, 65536):  # the same kernels: Hopper's FA2 length curve
        assert k.flash_length_factor(part, "fa2", length) == k.flash_length_factor("h100-sxm-80gb", "fa2", length)


def _step(accelerator: str, seq_len: int) -> float:
    strategy = {"micro_batch": 1, "framework": "hf", "zero": 3, "recompute": "full", "attention_kernel": "fa2"}
    job = {"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": seq_len, "global_batch": {"sequences": 8},
           "hardware": {"accelerator": accelerator, "count": 8}, "strategy": strategy}
    sc = resolve_job(job, load_catalog())
    return estimate_time(sc.model, sc.training, sc.system, sc.strategy).step_s


def test_b200s_fa2_gain_over_h100_shrinks_as_attention_grows():
    """The GEMMs keep Blackwell's rate, FA2 does not: the longer the sequence (the larger attention's share), the
    nearer the B200 step comes to the H100's (prime-rl's Qwen3-4B: 1.375 at 16K measured)."""
    gain_4k = _step("h100-sxm-80gb", 4096) / _step("b200", 4096)
    gain_64k = _step("h100-sxm-80gb", 65536) / _step("b200", 65536)
    assert 1.0 < gain_64k < gain_4k
    assert gain_64k < 1.4


def _titan_step(accelerator: str, kernel: str | None = None) -> float:
    strategy = {"micro_batch": 1, "framework": "torchtitan", "zero": 3, "recompute": "selective",
                **({"attention_kernel": kernel} if kernel else {})}
    job = {"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": 8192, "global_batch": {"sequences": 8},
           "hardware": {"accelerator": accelerator, "count": 8}, "strategy": strategy}
    sc = resolve_job(job, load_catalog())
    return estimate_time(sc.model, sc.training, sc.system, sc.strategy).step_s


@pytest.mark.parametrize("part", ["b200", "gb200"])
def test_torchtitans_sdpa_on_sm100_is_cudnn(part):
    """torchtitan puts cuDNN first in SDPA on compute capability >= 10.0 (models/attention.py, PR 1196): its sdpa,
    unstated or stated, is timed as native there, faster than the FA2 a job states for a pre-2025-05 run."""
    assert _titan_step(part) == _titan_step(part, "sdpa") == pytest.approx(_titan_step(part, "native"), rel=1e-12)
    assert _titan_step(part, "fa2") > 1.05 * _titan_step(part)


def test_torchtitans_sdpa_elsewhere_is_still_fa2():
    """Off the listed families torchtitan's SDPA keeps PyTorch's order: FA2's figures on an H100."""
    assert _titan_step("h100-sxm-80gb") == pytest.approx(_titan_step("h100-sxm-80gb", "fa2"), rel=1e-12)
    assert _titan_step("h100-sxm-80gb") != pytest.approx(_titan_step("h100-sxm-80gb", "native"), rel=1e-3)
