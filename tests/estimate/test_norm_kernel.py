"""strategy.norm_kernel: what a layer's two norms save for backward (fused kernel or eager PyTorch ops)."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError
from trainsizer.estimate.memory import estimate_memory
from trainsizer.render.i18n import t
from trainsizer.scenario import resolve_job

JOB = {"model": "llama-2-13b", "data": {"tokens": 1e9}, "seq_len": 4096, "global_batch": {"sequences": 128},
       "hardware": {"accelerator": "a100-sxm-80gb", "count": 64, "network": "ib-hdr200"}}


def _acts(strategy: dict) -> float:
    sc = resolve_job({**JOB, "strategy": {"micro_batch": 2, "zero": 3, **strategy}}, load_catalog())
    e = estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False)
    return e.items_bytes["layer_activations"] + e.items_bytes.get("recompute_working_set", 0.0)


def test_fused_rmsnorm_keeps_the_input_instead_of_the_fp32_upcast_and_the_output():
    """torchtitan's Triton fused_rmsnorm (its 2024 A100 presets) saves x (bf16) and the fp32 rstd; the eager
    RMSNorm its fp32 copy and its bf16 output: 4 B per hidden element more, twice per layer."""
    eager = _acts({"framework": "torchtitan", "recompute": "none"})
    fused = _acts({"framework": "torchtitan", "recompute": "none", "norm_kernel": "fused"})
    tokens, layers, hidden = 2 * 4096, 40, 5120
    assert eager - fused == pytest.approx(2 * 4 * hidden * tokens * layers)
    assert _acts({"framework": "torchtitan", "recompute": "none", "norm_kernel": "eager"}) == eager


def test_norm_kernel_moves_the_working_set_only_under_full_recompute():
    # the re-run layer's peak phase (micro-batch 2 x 4,096 of this 5,120-wide model: above its loss phase)
    full = _acts({"framework": "hf", "recompute": "full", "live_at_rerun": "loss"})
    fused = _acts({"framework": "hf", "recompute": "full", "live_at_rerun": "loss", "norm_kernel": "fused"})
    assert full - fused == pytest.approx(2 * 4 * 5120 * 2 * 4096)  # one layer re-created at a time


def test_eager_norms_under_megatron_save_more():
    fused = _acts({"framework": "megatron-core", "recompute": "none"})
    assert _acts({"framework": "megatron-core", "recompute": "none", "norm_kernel": "eager"}) > fused
    assert _acts({"framework": "megatron-core", "recompute": "none", "norm_kernel": "fused"}) == fused


def test_unknown_norm_kernel_is_a_clear_error_with_words_in_both_languages():
    with pytest.raises(SpecError, match="norm_kernel"):
        resolve_job({**JOB, "strategy": {"norm_kernel": "triton"}}, load_catalog())
    assert t("field_strategy.norm_kernel", "en") == "norm kernel"
    assert t("field_strategy.norm_kernel", "zh") != t("field_strategy.norm_kernel", "en")


# --- step time: the norms' element-wise traffic (compute.eager_elementwise_traffic via step_time._elementwise_passes)


def _step_s(strategy: dict) -> float:
    from trainsizer.estimate.step_time import estimate_time

    sc = resolve_job({**JOB, "strategy": {"micro_batch": 2, "zero": 3, "recompute": "none", **strategy}}, load_catalog())
    return estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False).step_s


def test_eager_traffic_charges_a_fused_norm_the_fused_bytes():
    """An RMSNorm in one kernel (torchtitan fused_rmsnorm) streams 4 B per element, its eager ops 36: with the norms
    fused, Llama 2 13B's element-wise traffic is (22 h + rope + act) / fused instead of (86 h + ...)."""
    from trainsizer.estimate.calibration import load_constants
    from trainsizer.estimate.compute import eager_elementwise_traffic
    from trainsizer.models import load_model

    model, eager_b = load_model("llama-2-13b"), load_constants().eager_bytes_per_element
    h, qkv, ffn = 5120, 3 * 5120, 13824
    fused_total = 22 * h + 4 * qkv + 6 * ffn
    rope_eager, act_eager = 20 * 2 * h, 10 * ffn
    assert float(eager_elementwise_traffic(model, eager_b, 20.0)) == pytest.approx(
        (86 * h + rope_eager + act_eager) / fused_total)
    assert float(eager_elementwise_traffic(model, eager_b, 20.0, "fused")) == pytest.approx(
        (22 * h + rope_eager + act_eager) / fused_total)
    # under a framework's own fused kernels (TE / Apex) only a norm said to be eager adds traffic
    assert float(eager_elementwise_traffic(model, eager_b, 20.0, fused_rest=True)) == pytest.approx(1.0)
    assert float(eager_elementwise_traffic(model, eager_b, 20.0, "eager", fused_rest=True)) == pytest.approx(
        (86 * h + 4 * qkv + 6 * ffn) / fused_total)


def test_step_time_honours_norm_kernel():
    eager = _step_s({"framework": "torchtitan", "torch_compile": False})
    fused = _step_s({"framework": "torchtitan", "torch_compile": False, "norm_kernel": "fused"})
    assert fused < eager
    assert _step_s({"framework": "torchtitan", "torch_compile": False, "norm_kernel": "eager"}) == eager
    # fused element-wise work (torch.compile, or Megatron-Core's TE kernels): a fused norm is the style's own, a
    # norm stated eager costs its eager ops
    compiled = _step_s({"framework": "torchtitan", "torch_compile": True})
    assert _step_s({"framework": "torchtitan", "torch_compile": True, "norm_kernel": "fused"}) == compiled
    assert compiled < _step_s({"framework": "torchtitan", "torch_compile": True, "norm_kernel": "eager"}) < eager
    mc = _step_s({"framework": "megatron-core"})
    assert _step_s({"framework": "megatron-core", "norm_kernel": "fused"}) == mc
    assert _step_s({"framework": "megatron-core", "norm_kernel": "eager"}) > mc


def test_unknown_norm_kernel_in_the_step_time_is_a_clear_error():
    import dataclasses

    from trainsizer.estimate.step_time import estimate_time

    sc = resolve_job({**JOB, "strategy": {"micro_batch": 2, "zero": 3}}, load_catalog())
    bad = dataclasses.replace(sc.strategy, norm_kernel="triton")
    with pytest.raises(SpecError, match="norm_kernel"):
        estimate_time(sc.model, sc.training, sc.system, bad, memory_note=False)
