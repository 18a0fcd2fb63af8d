"""The H20's attention figures (perf_constants.yaml attention.flash_efficiency / flash_efficiency_native h20): read
from FlashAttention-2 / cuDNN / FlashAttention-3 forward rates measured on an H20 at 2K (Dao-AILab/flash-attention
issue 1310) and carried to the 8K reference on the Hopper length curves, so the estimate gives the measured 2K figure
back; the H20 keys never reach the H200 (longest family prefix). docs/known-gaps.md 269 (c)."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.estimate.calibration import load_constants

PEAK_TFLOPS = 148.0  # catalog h20 dense BF16
FA2_2K, NATIVE_2K = 65.9, 107.8  # issue 1310: causal forward, head dim 128, 2K, batch 2 (cuDNN and FA3 alike)


def test_the_h20_figures_give_the_measured_2k_rates_back():
    k = load_constants()
    assert load_catalog().accelerator("h20").tflops_dense["bf16"] == PEAK_TFLOPS
    fa2 = k.flash_fraction("h20", "fa2") * float(k.flash_length_factor("h20", "fa2", 2048)) * PEAK_TFLOPS
    assert fa2 == pytest.approx(FA2_2K, rel=2e-3)
    lengths, fwd, _ = k.native_length_scaling["h20"]
    native_8k = NATIVE_2K * fwd[lengths.index(8192.0)] / fwd[lengths.index(2048.0)]
    assert k.flash_fraction("h20", "native") * PEAK_TFLOPS == pytest.approx(native_8k, rel=2e-3)


def test_the_h20_runs_the_native_kernels_faster_than_fa2_and_the_h100_does_not_move():
    """FA3 / cuDNN on the H20 (GH100: TMA and wgmma) at its own figure, above FA2's; both above the H100's shares, whose
    MMAs are not slowed per SM. The H200 keeps the H100's figures although its id starts with 'h20'."""
    k = load_constants()
    assert k.flash_fraction("h20", "native") > k.flash_fraction("h20", "fa2") > k.flash_fraction("h100", "fa2")
    assert k.flash_fraction("h20-141gb", "native") == k.flash_fraction("h20", "native")
    for part in ("h200-sxm-141gb", "h200-nvl-141gb"):
        for kernel in ("fa2", "native"):
            assert k.flash_fraction(part, kernel) == k.flash_fraction("h100-sxm-80gb", kernel), (part, kernel)
        assert k.flash_bwd_over_fwd_native["h200"] == k.flash_bwd_over_fwd_native["h20"]
    assert k.flash_bwd_ratio("h20", "native") == k.flash_bwd_ratio("h100-sxm-80gb", "native")
