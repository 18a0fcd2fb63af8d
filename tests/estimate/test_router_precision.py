"""The MoE router's precision (ModelArch.router_fp32): DeepSeek-V2/V3 compute the gate logits in fp32 (HF
DeepseekV3TopkRouter, Megatron-Bridge moe_router_dtype "fp32"), a GEMM on the FP32 units, forward and backward;
other MoE models keep it in 16-bit."""

from __future__ import annotations

import dataclasses

import pytest

from trainsizer.estimate.calibration import load_constants, rates
from trainsizer.estimate.compute import ModelShapes, gemm_time, layer_times
from trainsizer.models import load_model
from trainsizer.models.inline import arch_from_inline

from .test_perf_common import h100_cluster, mixtral


def _h100_fp32():
    s = h100_cluster()
    return dataclasses.replace(s, peak_tflops=dict(s.peak_tflops, fp32=67.0))


def _fwd_bwd(model, system, tok: float = 4096.0) -> float:
    r = rates(system, "bf16", load_constants(), None, "native")
    lt = layer_times(ModelShapes.of(model), int(tok), r, tp=1, cp=1, micro_batch=1, sp=False, recompute=0, ep=1,
                     flash=True, flash_rate=r.flash_flops, flash_bwd_over_fwd=3.1)
    return float(lt.fwd + lt.bwd) * model.layers


def test_fp32_router_runs_at_the_fp32_rate_forward_and_backward():
    m, s = mixtral(), _h100_fp32()
    r = rates(s, "bf16", load_constants(), None, "native")
    assert r.fp32_flops == pytest.approx(67e12 * load_constants().gemm_efficiency("h100-sxm"))
    slower = _fwd_bwd(m.with_(router_fp32=True), s) - _fwd_bwd(m, s)
    per_gemm = float(gemm_time(4096, m.experts, m.hidden, r, flops=r.fp32_flops)
                     - gemm_time(4096, m.experts, m.hidden, r, linear=False))
    # forward + dgrad + wgrad of the gate on every MoE layer
    assert slower == pytest.approx(3.0 * per_gemm * m.moe_layer_count, rel=1e-6)
    assert slower > 0


def test_without_an_fp32_figure_the_router_keeps_the_16_bit_rate():
    m, s = mixtral(), h100_cluster()  # no fp32 in this test card
    assert rates(s, "bf16").fp32_flops == 0.0
    assert _fwd_bwd(m.with_(router_fp32=True), s) == _fwd_bwd(m, s)


def test_deepseek_configs_say_fp32_and_inline_models_may():
    assert load_model("deepseek-v3").router_fp32
    assert not load_model("qwen3-30b-a3b").router_fp32
    assert not load_model("mixtral-8x7b").router_fp32
    inline = {"layers": 4, "hidden": 1024, "heads": 8, "vocab": 32000, "ffn": 2816, "experts": 8,
              "experts_per_token": 2, "expert_ffn": 704}
    assert arch_from_inline(dict(inline, router_fp32=True)).router_fp32
    assert not arch_from_inline(inline).router_fp32
