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
    full = _acts({"framework": "hf", "recompute": "full"})
    fused = _acts({"framework": "hf", "recompute": "full", "norm_kernel": "fused"})
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
