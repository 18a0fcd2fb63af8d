"""Cross-check against the transformers modeling code itself (skipped when transformers is not installed).

A tiny model of every supported family is instantiated on the meta device and its parameters counted.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from trainsizer.models import arch_from_hf_config, supported_families  # noqa: E402

pytestmark = pytest.mark.torch

GQA = dict(hidden_size=64, intermediate_size=96, num_attention_heads=8, num_key_value_heads=2, vocab_size=101)
MLA = dict(hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_attention_heads=4,
           num_key_value_heads=4, vocab_size=101, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4,
           v_head_dim=8, n_group=1, topk_group=1)
TINY = {
    "llama": dict(GQA, num_hidden_layers=3, attention_bias=True, mlp_bias=True),
    "mistral": dict(GQA, num_hidden_layers=2, sliding_window=16),
    "mixtral": dict(GQA, num_hidden_layers=2, num_local_experts=4, num_experts_per_tok=2),
    "qwen2": dict(GQA, num_hidden_layers=2, tie_word_embeddings=True),
    "qwen3": dict(GQA, num_hidden_layers=2, head_dim=16),
    "qwen2_moe": dict(GQA, num_hidden_layers=4, moe_intermediate_size=32, shared_expert_intermediate_size=48,
                      num_experts=6, num_experts_per_tok=2, decoder_sparse_step=2, mlp_only_layers=[3]),
    "qwen3_moe": dict(GQA, num_hidden_layers=3, head_dim=16, moe_intermediate_size=32, num_experts=6,
                      num_experts_per_tok=2, mlp_only_layers=[0]),
    "deepseek_v2": dict(MLA, num_hidden_layers=3, n_routed_experts=6, num_experts_per_tok=2, n_shared_experts=2,
                        first_k_dense_replace=1, q_lora_rank=None),
    "deepseek_v3": dict(MLA, num_hidden_layers=3, n_routed_experts=8, num_experts_per_tok=2, n_shared_experts=1,
                        first_k_dense_replace=1, q_lora_rank=24),
    "gpt2": dict(n_embd=64, n_layer=2, n_head=4, vocab_size=101, n_positions=32, bos_token_id=0, eos_token_id=0),
    "gpt_neox": dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                     vocab_size=101, max_position_embeddings=32),
}


def test_every_family_is_cross_checked():
    assert set(TINY) == set(supported_families())


@pytest.mark.parametrize("model_type", sorted(TINY))
def test_count_matches_transformers(model_type):
    try:
        config = transformers.AutoConfig.for_model(model_type, **TINY[model_type])
    except ValueError:
        pytest.skip(f"this transformers version has no {model_type}")
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    n = sum(p.numel() for p in model.parameters())
    # DeepSeek-V3's e_score_correction_bias is a stored tensor (a parameter in DeepSeek's own modeling file,
    # a buffer in transformers' port); trainsizer counts it.
    n += sum(b.numel() for name, b in model.named_buffers() if name.endswith("e_score_correction_bias"))
    arch = arch_from_hf_config(config.to_dict())
    assert arch.params_total == n
    assert arch.unknown_keys == ()
