"""FlashAttention-2 on GeForce parts with half-rate FP32 accumulate (Ada, sm_120 Blackwell): the kernel's share of the
peak read from the RTX 4090's measured forward and backward, and carried to the RTX 5090 through its GEMM share."""

from __future__ import annotations

import pytest

from trainsizer.estimate.calibration import load_constants

# apache/tvm tl_doc/flash_perf.md at bd6f9570: FA2 on an RTX 4090, causal, head dim 128, 2K, TFLOPS
FWD_TFLOPS, BWD_TFLOPS, LENGTH = 151.19, 99.23, 2048
RTX_4090_PEAK_TFLOPS = 165.2  # catalog rtx-4090 bf16 dense (half-rate FP32 accumulate)


def test_the_4090_figure_is_its_measured_fa2_read_as_the_a100_figure_is():
    """Forward + backward time at flash_bwd_over_fwd, as a forward share at 2K, taken to 8K on the Ampere FA2 curve."""
    k = load_constants()
    bwd_flops = 2.5  # the backward's FLOPs over the forward's (FA2 paper)
    rate_2k = (1.0 + k.flash_bwd_over_fwd) / (1.0 / FWD_TFLOPS + bwd_flops / BWD_TFLOPS)
    at_2k = k.flash_fraction("rtx-4090", "fa2") * k.flash_length_factor("rtx-4090", "fa2", LENGTH)
    assert at_2k * RTX_4090_PEAK_TFLOPS == pytest.approx(rate_2k, rel=0.01)
    assert k.flash_length_factor("rtx-4090", "sdpa", LENGTH) == k.flash_length_factor("a100-sxm-80gb", "fa2", LENGTH)


@pytest.mark.parametrize("part", ["rtx-5090", "rtx-3090", "a10g", "l20"])
def test_the_other_half_rate_parts_keep_the_4090s_share_of_their_gemm_rate(part: str):
    """The same halved MMA and the same sm80 kernels: attention over GEMM share as on the 4090, on the same length
    curve; SDPA's flash backend is FA2's."""
    k = load_constants()

    def over_gemm(p: str) -> float:
        return k.flash_fraction(p, "fa2") / k.gemm_efficiency(p)

    assert over_gemm(part) == pytest.approx(over_gemm("rtx-4090"), rel=0.002)
    assert k.flash_fraction(part, "sdpa") == k.flash_fraction(part, "fa2")
    assert k.flash_length_factor(part, "fa2", 1024) == k.flash_length_factor("rtx-4090", "fa2", 1024) < 1.0


def test_full_rate_parts_keep_their_own_figures():
    """The halved MMA rate is what lifts the share: the full-rate RTX PRO 6000 (sm_120) and the A100 are not moved."""
    k = load_constants()
    assert k.flash_fraction("rtx-pro-6000", "fa2") < k.flash_fraction("rtx-5090", "fa2")
    assert k.flash_fraction("a100-sxm-80gb", "fa2") == pytest.approx(0.683)
