"""Hugging Face adapters for the families users meet (Gemma 2/3, Phi-3/4, GLM-4, InternLM2/3, Baichuan 2, Yi),
checked against the parameter counts their model cards publish; non-transformers are refused clearly."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.errors import SpecError
from trainsizer.models import arch_from_hf_config
from trainsizer.models.shipped import _preset_dir

# Shapes from each model's config.json on Hugging Face; expected = parameter count on the model card
# (safetensors total), in billions.
CONFIGS = {
    "gemma-2-9b": ({"model_type": "gemma2", "hidden_size": 3584, "intermediate_size": 14336,
                    "num_hidden_layers": 42, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256,
                    "vocab_size": 256000, "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": 256,
                    "final_logit_softcapping": 30.0, "attn_logit_softcapping": 50.0, "sliding_window": 4096},
                   9.24),
    "gemma-3-27b (text_config)": ({"model_type": "gemma3", "text_config": {
        "model_type": "gemma3_text", "hidden_size": 5376, "intermediate_size": 21504, "num_hidden_layers": 62,
        "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 128, "vocab_size": 262208,
        "rope_local_base_freq": 10000.0, "sliding_window": 1024}, "vision_config": {"hidden_size": 1152},
        "mm_tokens_per_image": 256}, 27.01),  # 27.43B on the card includes the 0.42B vision tower
    "phi-3-mini-4k": ({"model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192,
                       "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
                       "vocab_size": 32064, "original_max_position_embeddings": 4096}, 3.82),
    "phi-4": ({"model_type": "phi3", "hidden_size": 5120, "intermediate_size": 17920, "num_hidden_layers": 40,
               "num_attention_heads": 40, "num_key_value_heads": 10, "vocab_size": 100352}, 14.66),
    "glm-4-9b-chat-hf": ({"model_type": "glm", "hidden_size": 4096, "intermediate_size": 13696,
                          "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 2,
                          "head_dim": 128, "vocab_size": 151552, "attention_bias": True,
                          "partial_rotary_factor": 0.5}, 9.40),
    "glm-4-9b-chat (THUDM)": ({"model_type": "chatglm", "hidden_size": 4096, "ffn_hidden_size": 13696,
                               "num_layers": 40, "num_attention_heads": 32, "multi_query_attention": True,
                               "multi_query_group_num": 2, "kv_channels": 128, "padded_vocab_size": 151552,
                               "add_qkv_bias": True, "add_bias_linear": False, "seq_length": 131072}, 9.40),
    "internlm2_5-7b": ({"model_type": "internlm2", "hidden_size": 4096, "intermediate_size": 14336,
                        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                        "vocab_size": 92544, "bias": False}, 7.74),
    "internlm3-8b": ({"model_type": "internlm3", "hidden_size": 4096, "intermediate_size": 10240,
                      "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 2,
                      "head_dim": 128, "vocab_size": 128512, "bias": False, "qkv_bias": False}, 8.80),
    "baichuan2-7b": ({"model_type": "baichuan", "hidden_size": 4096, "intermediate_size": 11008,
                      "num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 125696,
                      "z_loss_weight": 0, "model_max_length": 4096}, 7.51),
    "yi-34b": ({"model_type": "llama", "hidden_size": 7168, "intermediate_size": 20480, "num_hidden_layers": 60,
                "num_attention_heads": 56, "num_key_value_heads": 8, "vocab_size": 64000}, 34.39),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_parameter_count_matches_the_model_card(name):
    config, billions = CONFIGS[name]
    arch = arch_from_hf_config(config)
    assert arch.params_total / 1e9 == pytest.approx(billions, rel=0.005)
    assert not arch.unknown_keys, arch.unknown_keys


def test_gemma3_says_the_vision_tower_is_not_counted():
    arch = arch_from_hf_config(CONFIGS["gemma-3-27b (text_config)"][0])
    assert arch.qk_norm and any("vision tower" in n for n in arch.notes)


@pytest.mark.parametrize("model_type", ["mamba", "mamba2", "rwkv", "jamba", "recurrent_gemma"])
def test_non_transformers_are_refused_with_what_they_are(model_type):
    with pytest.raises(SpecError, match=rf"{model_type} is a .*which trainsizer does not model") as err:
        arch_from_hf_config({"model_type": model_type, "hidden_size": 768})
    assert "Did you mean" not in str(err.value)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 27), st.integers(1, 4), st.sampled_from([(64, 6), (32, 2), (16, 16)]))
def test_moonlight_shapes_total_less_active_is_the_idle_experts(first_dense, shared, routing):
    """The Moonlight-16B-A3B preset (DeepSeek-V3 architecture, MLA without query compression) with its dense prefix,
    shared experts and routing varied: the MoE layers are the layers after first_k_dense_replace, and total less active
    is exactly the experts a token does not pass through (the router and its correction bias count as active)."""
    experts, k = routing
    raw = json.loads(_preset_dir().joinpath("moonlight-16b-a3b.json").read_text(encoding="utf-8")) | {"first_k_dense_replace": first_dense, "n_shared_experts": shared,
                                                      "n_routed_experts": experts, "num_experts_per_tok": k}
    m = arch_from_hf_config(raw)
    moe = 27 - first_dense
    assert m.moe_layer_count == moe and m.q_lora_rank == 0 and m.attention == "mla"
    assert m.params_total - m.params_active == moe * (experts - k) * m.mlp_params(1408)
    assert m.shared_expert_ffn == shared * 1408
