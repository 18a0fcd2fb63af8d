"""strategy.activation_kernel: the SwiGLU as one fused kernel or as eager F.silu then the product (nanotron)."""

from __future__ import annotations

import dataclasses

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import estimate_time
from trainsizer.render.i18n import t
from trainsizer.scenario import resolve_job

JOB = {"model": "llama-2-13b", "data": {"tokens": 1e9}, "seq_len": 4096, "global_batch": {"sequences": 128},
       "hardware": {"accelerator": "h100-sxm-80gb", "count": 64, "network": "ib-ndr400"}}
TOKENS, LAYERS, FFN = 2 * 4096, 40, 13824


def _scenario(strategy: dict, model: str = "llama-2-13b"):
    job = {**JOB, "model": model, "strategy": {"micro_batch": 2, "recompute": "none", **strategy}}
    return resolve_job(job, load_catalog())


def _acts(strategy: dict, model: str = "llama-2-13b") -> float:
    sc = _scenario(strategy, model)
    e = estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False)
    return e.items_bytes["layer_activations"] + e.items_bytes.get("recompute_working_set", 0.0)


def _step_s(strategy: dict, model: str = "llama-2-13b") -> float:
    sc = _scenario(strategy, model)
    return float(estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False).step_s)


def test_eager_swiglu_keeps_the_silu_output_under_a_fused_profile():
    """Megatron's fused SwiGLU saves fc1's output (gate and up) and fc2's input; nanotron's eager
    `self.act(gate) * up` keeps the SiLU output too: 2 B per ffn element, TP-split."""
    base = {"framework": "megatron-core", "tp": 2}
    fused = _acts(base)
    assert _acts({**base, "activation_kernel": "fused"}) == fused
    assert _acts({**base, "activation_kernel": "eager"}) - fused == pytest.approx(2 * FFN * TOKENS * LAYERS / 2)


def test_fused_swiglu_drops_the_silu_output_under_an_eager_profile():
    base = {"framework": "hf", "zero": 3}
    eager = _acts(base)
    assert _acts({**base, "activation_kernel": "eager"}) == eager
    assert eager - _acts({**base, "activation_kernel": "fused"}) == pytest.approx(2 * FFN * TOKENS * LAYERS)


def test_a_gelu_model_is_not_changed():
    base = {"framework": "megatron-core", "tp": 2}
    assert _acts({**base, "activation_kernel": "eager"}, "gpt-3-175b") == _acts(base, "gpt-3-175b")
    assert _step_s({**base, "activation_kernel": "eager"}, "gpt-3-175b") == _step_s(base, "gpt-3-175b")


def test_eager_traffic_charges_the_swiglu_either_way():
    """SwiGLU fused: read gate and up, write the product, 6 B per ffn element; eager F.silu (2 + 2) then the product
    (2 + 2 + 2): 10 (perf_constants.yaml gemm.eager_bytes_per_element)."""
    from trainsizer.estimate.calibration import load_constants
    from trainsizer.estimate.compute import eager_elementwise_traffic
    from trainsizer.models import load_model

    model, eager_b = load_model("llama-2-13b"), load_constants().eager_bytes_per_element
    h, qkv, ffn = 5120, 3 * 5120, FFN
    fused_total = 22 * h + 4 * qkv + 6 * ffn
    rope_eager = 20 * 2 * h
    assert float(eager_elementwise_traffic(model, eager_b, 20.0, fused_rest=True, act_kernel="eager")) == (
        pytest.approx((22 * h + 4 * qkv + 10 * ffn) / fused_total))
    assert float(eager_elementwise_traffic(model, eager_b, 20.0, act_kernel="fused")) == pytest.approx(
        (86 * h + rope_eager + 6 * ffn) / fused_total)
    assert float(eager_elementwise_traffic(model, eager_b, 20.0, fused_rest=True, act_kernel="fused")) == 1.0


def test_step_time_honours_activation_kernel():
    mc = {"framework": "megatron-core", "tp": 2}
    assert _step_s({**mc, "activation_kernel": "fused"}) == _step_s(mc)
    assert _step_s({**mc, "activation_kernel": "eager"}) > _step_s(mc)
    hf = {"framework": "hf", "zero": 3, "torch_compile": False}
    assert _step_s({**hf, "activation_kernel": "eager"}) == _step_s(hf)
    assert _step_s({**hf, "activation_kernel": "fused"}) < _step_s(hf)


def test_unknown_activation_kernel_is_a_clear_error_with_words_in_both_languages():
    with pytest.raises(SpecError, match="activation_kernel"):
        resolve_job({**JOB, "strategy": {"activation_kernel": "triton"}}, load_catalog())
    assert t("field_strategy.activation_kernel", "en") == "activation kernel"
    assert t("field_strategy.activation_kernel", "zh") != t("field_strategy.activation_kernel", "en")
    sc = _scenario({"tp": 2})
    bad = dataclasses.replace(sc.strategy, activation_kernel="triton")
    with pytest.raises(SpecError, match="activation_kernel"):
        estimate_time(sc.model, sc.training, sc.system, bad, memory_note=False)
    with pytest.raises(SpecError, match="activation_kernel"):
        estimate_memory(sc.model, sc.training, sc.system, bad, check=False)
