"""olmo2 / olmo3 and glm4_moe adapters (transformers modeling_olmo2.py, modeling_olmo3.py, modeling_glm4_moe.py):
module shapes on toy configs, what is noted, bad input."""

from __future__ import annotations

import pytest

from trainsizer.errors import SpecError
from trainsizer.models import arch_from_hf_config, load_model


def _olmo(model_type: str = "olmo2", **over):
    cfg = {"model_type": model_type, "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 8,
           "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 1000}
    return {**cfg, **over}


def test_olmo2_counts_llama_shapes_and_notes_the_full_width_qk_norm():
    arch = arch_from_hf_config(_olmo())
    h, q, kv = 64, 64, 16
    layer = h * q + 2 * h * kv + q * h + 2 * 8 + 3 * h * 96 + 2 * h  # q/k/v/o, per-head q/k norm, SwiGLU, 2 norms
    assert arch.params_total == 8 * layer + 2 * 1000 * h + h
    assert arch.qk_norm and arch.window_layers == 0
    # q_norm spans 8 x 8, k_norm 2 x 8: (64 + 16 - 16) x 8 layers beyond the per-head count
    assert any(f"{64 * 8:,} norm weights" in n for n in arch.notes)
    assert arch.unknown_keys == ()


def test_olmo3_windows_three_of_four_layers_by_default():
    arch = arch_from_hf_config(_olmo("olmo3"))
    assert (arch.sliding_window, arch.window_layers) == (4096, 6)
    assert any("layer_types" in n for n in arch.notes)  # the class default, noted


def test_olmo3_reads_its_layer_types():
    kinds = ["sliding_attention"] * 7 + ["full_attention"]
    arch = arch_from_hf_config(_olmo("olmo3", layer_types=kinds, sliding_window=512))
    assert (arch.sliding_window, arch.window_layers) == (512, 7)
    with pytest.raises(SpecError, match="layer_types"):
        arch_from_hf_config(_olmo("olmo3", layer_types=kinds[:4]))


def test_olmo2_has_no_window_keys():
    assert "layer_types" in arch_from_hf_config(_olmo(layer_types=["x"])).unknown_keys


def _glm(**over):
    cfg = {"model_type": "glm4_moe", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4,
           "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 1000,
           "moe_intermediate_size": 32, "n_routed_experts": 8, "n_shared_experts": 1, "num_experts_per_tok": 2,
           "first_k_dense_replace": 1, "attention_bias": True, "use_qk_norm": True, "partial_rotary_factor": 0.5,
           "num_nextn_predict_layers": 1, "routed_scaling_factor": 2.5, "n_group": 1, "topk_group": 1}
    return {**cfg, **over}


def test_glm4_moe_counts_dense_then_moe_layers():
    arch = arch_from_hf_config(_glm())
    h, q, kv, e = 64, 128, 32, 32
    attn = h * q + q + 2 * (h * kv + kv) + q * h + 2 * 16  # q/k/v bias, o without, per-head q/k norm
    dense = attn + 2 * h + 3 * h * 128
    moe = attn + 2 * h + 8 * 3 * h * e + 3 * h * e + h * 8 + 8  # experts, shared, router + correction bias
    assert arch.params_total == dense + 3 * moe + 2 * 1000 * h + h
    assert [arch.layer_is_moe(i) for i in range(4)] == [False, True, True, True]
    assert arch.mtp_layers == 1 and arch.router_fp32 and arch.unknown_keys == ()


def test_glm4_moe_refuses_bad_moe_keys():
    with pytest.raises(SpecError, match="num_experts_per_tok"):
        arch_from_hf_config(_glm(num_experts_per_tok=9))
    with pytest.raises(SpecError, match="first_k_dense_replace"):
        arch_from_hf_config(_glm(first_k_dense_replace=5))


@pytest.mark.parametrize("name", ["olmo-2-7b", "olmo-3-32b", "glm-4.5", "glm-4.5-air"])
def test_presets_load_without_unknown_keys(name):
    assert load_model(name).unknown_keys == ()


@pytest.mark.parametrize(("model_type", "mechanism"), [
    ("qwen3_next", "Gated DeltaNet"), ("minimax", "lightning"), ("deepseek_v32", "DeepSeek Sparse Attention"),
    # the 2026 Megatron-Bridge cards' families (docs/known-gaps.md 240): Qwen3.6-35B-A3B, Qwen3.8-27B, GLM-5.2, DeepSeek-V4
    ("qwen3_5_moe", "Gated DeltaNet"), ("qwen3_5", "Gated DeltaNet"), ("qwen3_5_moe_text", "Gated DeltaNet"),
    ("qwen3_5_text", "Gated DeltaNet"), ("glm_moe_dsa", "DeepSeek Sparse Attention"),
    ("deepseek_v4", "hyper-connections")])
def test_families_without_a_formula_are_refused_naming_the_mechanism(model_type, mechanism):
    with pytest.raises(SpecError, match=mechanism) as err:
        arch_from_hf_config({"model_type": model_type, "hidden_size": 64})
    assert "unknown" not in str(err.value).lower()


def test_kimi_k2_reads_as_deepseek_v3():
    cfg = {"model_type": "kimi_k2", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 3,
           "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 1000, "q_lora_rank": 32,
           "kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 8,
           "n_routed_experts": 8, "num_experts_per_tok": 2, "n_shared_experts": 1, "moe_intermediate_size": 16,
           "first_k_dense_replace": 1}
    kimi = arch_from_hf_config(cfg)
    ds = arch_from_hf_config({**cfg, "model_type": "deepseek_v3"})
    assert kimi.family == "kimi_k2" and kimi.params_total == ds.params_total and kimi.attention == "mla"


def _llama4(**over):
    cfg = {"model_type": "llama4_text", "hidden_size": 64, "intermediate_size": 32, "intermediate_size_mlp": 96,
           "num_hidden_layers": 8, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 8,
           "vocab_size": 1000, "num_local_experts": 4, "num_experts_per_tok": 1, "interleave_moe_layer_step": 2,
           "attention_chunk_size": 64, "use_qk_norm": True, "no_rope_layer_interval": 4}
    return {**cfg, **over}


def test_llama4_interleaves_moe_and_chunks_the_rope_layers():
    arch = arch_from_hf_config(_llama4())
    h, q, kv = 64, 64, 16
    attn = 2 * h * q + 2 * h * kv
    dense = attn + 2 * h + 3 * h * 96
    moe = attn + 2 * h + 4 * 3 * h * 32 + 3 * h * 32 + h * 4  # experts, shared expert, router without bias
    assert arch.params_total == 4 * dense + 4 * moe + 2 * 1000 * h + h
    assert [arch.layer_is_moe(i) for i in range(8)] == [False, True] * 4
    assert (arch.attention_chunk, arch.chunk_layers) == (64, 6) and arch.unknown_keys == ()


def test_llama4_multimodal_config_sizes_its_text_model():
    arch = arch_from_hf_config({"model_type": "llama4", "text_config": _llama4(), "vision_config": {"hidden_size": 8}})
    assert arch.params_total == arch_from_hf_config(_llama4()).params_total
    assert any("vision" in n for n in arch.notes)
    with pytest.raises(SpecError, match="text_config"):
        arch_from_hf_config({"model_type": "llama4"})


def test_llama4_layer_types_must_be_chunked_or_full():
    with pytest.raises(SpecError, match="layer_types"):
        arch_from_hf_config(_llama4(layer_types=["sliding_attention"] * 8))
    assert arch_from_hf_config(_llama4(attention_chunk_size=None)).chunk_layers == 0
