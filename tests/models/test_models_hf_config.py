"""Hugging Face config.json adapters: one small synthetic config per family, counted by hand.

The expected counts enumerate the tensors of the transformers modeling file (names in comments), so they do
not reuse `ModelArch`'s formulas.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainsizer.errors import SpecError
from trainsizer.models import arch_from_hf_config, load_model, supported_families


def write(tmp_path: Path, cfg: dict, folder: str = "m") -> Path:
    d = tmp_path / folder
    d.mkdir(parents=True, exist_ok=True)
    p = d / "config.json"
    p.write_text(json.dumps(cfg))
    return p


def lin(i: int, o: int, bias: bool = False) -> int:
    return i * o + (o if bias else 0)


# ------------------------------------------------------------------------------------------- llama family
LLAMA = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 3,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "vocab_size": 101,
    "max_position_embeddings": 256,
    "rms_norm_eps": 1e-5,
    "rope_theta": 500000.0,
    "rope_scaling": {"rope_type": "llama3", "factor": 8.0},
    "torch_dtype": "bfloat16",
    "transformers_version": "4.43.0",
    "initializer_range": 0.02,
    "tie_word_embeddings": False,
    "attention_bias": False,
    "mlp_bias": False,
    "hidden_act": "silu",
}


def llama_layer(h, heads, kv, hd, ffn, attn_bias=False, mlp_bias=False, qk_norm=False, q_bias_only=False):
    qkv_bias = attn_bias or q_bias_only
    p = lin(h, heads * hd, qkv_bias) + 2 * lin(h, kv * hd, qkv_bias)  # q_proj, k_proj, v_proj
    p += lin(heads * hd, h, attn_bias)  # o_proj
    p += 2 * h  # input_layernorm, post_attention_layernorm
    if qk_norm:
        p += 2 * hd  # q_norm, k_norm
    if ffn:
        p += 2 * lin(h, ffn, mlp_bias) + lin(ffn, h, mlp_bias)  # gate_proj, up_proj, down_proj
    return p


def test_llama(tmp_path):
    a = arch_from_hf_config(write(tmp_path, LLAMA))
    expected = 101 * 64 + 3 * llama_layer(64, 8, 2, 8, 96) + 64 + 101 * 64  # embed, layers, norm, lm_head
    assert a.params_total == a.params_active == expected
    assert (a.family, a.kv_heads, a.head_dim, a.max_position) == ("llama", 2, 8, 256)
    assert a.unknown_keys == () and a.notes == ()
    assert a.name == "m"  # the folder name


def test_llama_biases_and_tied(tmp_path):
    cfg = dict(LLAMA, attention_bias=True, mlp_bias=True, tie_word_embeddings=True, head_dim=16)
    a = arch_from_hf_config(cfg)
    expected = 101 * 64 + 3 * llama_layer(64, 8, 2, 16, 96, attn_bias=True, mlp_bias=True) + 64
    assert a.params_total == expected
    assert a.head_dim == 16 and a.tied_embeddings


def test_mistral(tmp_path):
    cfg = dict(LLAMA, model_type="mistral", sliding_window=4096)
    for k in ("attention_bias", "mlp_bias"):
        cfg.pop(k)
    a = arch_from_hf_config(write(tmp_path, cfg))
    assert a.params_total == 2 * 101 * 64 + 3 * llama_layer(64, 8, 2, 8, 96) + 64
    assert a.unknown_keys == ()


def test_mistral_reports_llama_only_key(tmp_path):
    # mistral's modeling file has no attention_bias: the key is reported, not silently applied
    a = arch_from_hf_config(dict(LLAMA, model_type="mistral"))
    assert a.unknown_keys == ("attention_bias", "mlp_bias")


def test_mixtral():
    cfg = dict(LLAMA, model_type="mixtral", num_local_experts=4, num_experts_per_tok=2, router_aux_loss_coef=0.02)
    for k in ("attention_bias", "mlp_bias"):
        cfg.pop(k)
    a = arch_from_hf_config(cfg)
    attn_norms = llama_layer(64, 8, 2, 8, 0)
    expert = 3 * 64 * 96
    gate = 64 * 4  # block_sparse_moe.gate, no bias
    assert a.params_total == 2 * 101 * 64 + 64 + 3 * (attn_norms + gate + 4 * expert)
    assert a.params_active == 2 * 101 * 64 + 64 + 3 * (attn_norms + gate + 2 * expert)


def test_qwen2_has_qkv_bias_only():
    cfg = dict(LLAMA, model_type="qwen2", use_sliding_window=False, max_window_layers=3, sliding_window=None)
    for k in ("attention_bias", "mlp_bias"):
        cfg.pop(k)
    a = arch_from_hf_config(cfg)
    assert a.params_total == 2 * 101 * 64 + 64 + 3 * llama_layer(64, 8, 2, 8, 96, q_bias_only=True)
    assert a.qkv_bias and not a.out_bias


def test_qwen3_qk_norm_and_explicit_head_dim():
    cfg = dict(LLAMA, model_type="qwen3", head_dim=32)
    cfg.pop("mlp_bias")
    a = arch_from_hf_config(cfg)
    assert a.params_total == 2 * 101 * 64 + 64 + 3 * llama_layer(64, 8, 2, 32, 96, qk_norm=True)
    assert a.head_dim == 32 and a.q_dim == 256


def test_qwen3_head_dim_default_is_noted():
    cfg = dict(LLAMA, model_type="qwen3")
    cfg.pop("mlp_bias")
    a = arch_from_hf_config(cfg)
    assert a.head_dim == 128
    assert any("head_dim absent" in n for n in a.notes)


QWEN2_MOE = dict(
    LLAMA,
    model_type="qwen2_moe",
    num_hidden_layers=4,
    num_experts=6,
    num_experts_per_tok=2,
    moe_intermediate_size=32,
    shared_expert_intermediate_size=48,
    decoder_sparse_step=2,
    mlp_only_layers=[3],
    norm_topk_prob=False,
    output_router_logits=False,
    router_aux_loss_coef=0.001,
)
for _k in ("attention_bias", "mlp_bias"):
    QWEN2_MOE.pop(_k)


def test_qwen2_moe_sparse_step_mlp_only_and_shared_expert():
    a = arch_from_hf_config(QWEN2_MOE)
    # layer i is MoE iff i not in mlp_only_layers and (i + 1) % 2 == 0 -> only layer 1 (layer 3 forced dense)
    assert [a.layer_is_moe(i) for i in range(4)] == [False, True, False, False]
    attn = llama_layer(64, 8, 2, 8, 0, q_bias_only=True)
    dense = attn + 3 * 64 * 96
    moe_common = attn + 64 * 6 + 3 * 64 * 48 + 64  # gate, shared_expert, shared_expert_gate (hidden -> 1)
    expert = 3 * 64 * 32
    base = 2 * 101 * 64 + 64
    assert a.params_total == base + 3 * dense + moe_common + 6 * expert
    assert a.params_active == base + 3 * dense + moe_common + 2 * expert
    assert a.unknown_keys == ()


def test_qwen3_moe(tmp_path):
    cfg = dict(
        LLAMA,
        model_type="qwen3_moe",
        head_dim=16,
        num_experts=8,
        num_experts_per_tok=2,
        moe_intermediate_size=32,
        decoder_sparse_step=1,
        mlp_only_layers=[],
        norm_topk_prob=True,
    )
    cfg.pop("mlp_bias")
    a = arch_from_hf_config(write(tmp_path, cfg))
    attn = llama_layer(64, 8, 2, 16, 0, qk_norm=True)
    layer_total = attn + 64 * 8 + 8 * 3 * 64 * 32
    layer_active = attn + 64 * 8 + 2 * 3 * 64 * 32
    base = 2 * 101 * 64 + 64
    assert a.params_total == base + 3 * layer_total
    assert a.params_active == base + 3 * layer_active
    assert a.shared_expert_ffn == 0


def test_qwen3_moe_transformers5_spelling():
    cfg = dict(LLAMA, model_type="qwen3_moe", num_local_experts=8, num_experts_per_tok=2, moe_intermediate_size=32)
    cfg.pop("mlp_bias")
    a = arch_from_hf_config(cfg)
    assert a.experts == 8 and a.head_dim == 8  # no head_dim key: hidden // heads, like modeling_qwen3_moe.py


DEEPSEEK_V3 = {
    "model_type": "deepseek_v3",
    "hidden_size": 64,
    "intermediate_size": 96,
    "moe_intermediate_size": 32,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "vocab_size": 101,
    "n_routed_experts": 8,
    "num_experts_per_tok": 2,
    "n_shared_experts": 2,
    "first_k_dense_replace": 1,
    "moe_layer_freq": 1,
    "q_lora_rank": 24,
    "kv_lora_rank": 16,
    "qk_nope_head_dim": 8,
    "qk_rope_head_dim": 4,
    "v_head_dim": 8,
    "n_group": 2,
    "topk_group": 1,
    "topk_method": "noaux_tc",
    "scoring_func": "sigmoid",
    "routed_scaling_factor": 2.5,
    "norm_topk_prob": True,
    "num_nextn_predict_layers": 1,
    "rope_scaling": {"type": "yarn", "factor": 40},
    "quantization_config": {"quant_method": "fp8"},
    "tie_word_embeddings": False,
    "attention_bias": False,
}


def mla(h, heads, q_lora, kv_lora, nope, rope, v):
    qk = nope + rope
    if q_lora:
        q = lin(h, q_lora) + q_lora + lin(q_lora, heads * qk)  # q_a_proj, q_a_layernorm, q_b_proj
    else:
        q = lin(h, heads * qk)  # q_proj
    kv = lin(h, kv_lora + rope) + kv_lora + lin(kv_lora, heads * (nope + v))  # kv_a_proj_with_mqa, norm, kv_b
    return q + kv + lin(heads * v, h)  # o_proj


def test_deepseek_v3(tmp_path):
    a = arch_from_hf_config(write(tmp_path, DEEPSEEK_V3))
    attn = mla(64, 4, 24, 16, 8, 4, 8) + 2 * 64
    dense = attn + 3 * 64 * 96
    moe_common = attn + 64 * 8 + 8 + 3 * 64 * (2 * 32)  # gate.weight, e_score_correction_bias, shared_experts
    base = 2 * 101 * 64 + 64
    assert a.params_total == base + dense + 3 * (moe_common + 8 * 3 * 64 * 32)
    assert a.params_active == base + dense + 3 * (moe_common + 2 * 3 * 64 * 32)
    assert a.mtp_layers == 1 and a.attention == "mla" and a.head_dim == 12
    assert a.unknown_keys == ()
    assert (a.expert_groups, a.expert_groups_per_token) == (2, 1)  # noaux_tc: n_group / topk_group


@pytest.mark.parametrize(("method", "groups"), [("greedy", (1, 1)), ("group_limited_greedy", (2, 1))])
def test_deepseek_v2_group_limited_routing_by_topk_method(method, groups):
    a = arch_from_hf_config(dict(DEEPSEEK_V3, model_type="deepseek_v2", topk_method=method,
                                 num_nextn_predict_layers=None))
    assert (a.expert_groups, a.expert_groups_per_token) == groups


@pytest.mark.parametrize(("key", "value", "where", "fragment"),
                         [("n_group", 3, "n_routed_experts", "not divisible by n_group (3)"),
                          ("topk_group", 3, "topk_group", "exceeds n_group")])
def test_deepseek_v3_bad_expert_groups_name_the_key(key, value, where, fragment):
    with pytest.raises(SpecError) as e:
        arch_from_hf_config(dict(DEEPSEEK_V3, **{key: value}))
    assert e.value.where.endswith(where)
    assert fragment in str(e.value)


def test_deepseek_v2_no_q_lora_and_layer_freq():
    cfg = dict(DEEPSEEK_V3, model_type="deepseek_v2", q_lora_rank=None, moe_layer_freq=2, topk_method="greedy")
    cfg.pop("num_nextn_predict_layers")
    a = arch_from_hf_config(cfg)
    # modeling_deepseek: MoE iff i >= first_k_dense_replace and i % moe_layer_freq == 0 -> only layer 2
    assert [a.layer_is_moe(i) for i in range(4)] == [False, False, True, False]
    attn = mla(64, 4, 0, 16, 8, 4, 8) + 2 * 64
    moe = attn + 64 * 8 + 3 * 64 * 64 + 8 * 3 * 64 * 32  # greedy routing: no correction bias
    assert a.params_total == 2 * 101 * 64 + 64 + 3 * (attn + 3 * 64 * 96) + moe
    assert a.q_lora_rank == 0 and not a.router_bias


def test_deepseek_v2_reports_mtp_key():
    a = arch_from_hf_config(dict(DEEPSEEK_V3, model_type="deepseek_v2"))
    assert a.unknown_keys == ("num_nextn_predict_layers",)


GPT2 = {
    "model_type": "gpt2",
    "vocab_size": 101,
    "n_positions": 32,
    "n_ctx": 32,
    "n_embd": 64,
    "n_layer": 2,
    "n_head": 4,
    "n_inner": None,
    "activation_function": "gelu_new",
    "resid_pdrop": 0.1,
    "embd_pdrop": 0.1,
    "attn_pdrop": 0.1,
    "layer_norm_epsilon": 1e-5,
    "summary_type": "cls_index",
    "task_specific_params": {"text-generation": {"do_sample": True}},
}


def gpt_layer(h, inner):
    # ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj (Conv1D with biases)
    return 2 * h + lin(h, 3 * h, True) + lin(h, h, True) + 2 * h + lin(h, inner, True) + lin(inner, h, True)


def test_gpt2(tmp_path):
    a = load_model(str(write(tmp_path, GPT2)))
    assert a.params_total == 101 * 64 + 32 * 64 + 2 * gpt_layer(64, 256) + 2 * 64  # wte, wpe, h, ln_f (tied)
    assert (a.position, a.mlp, a.norm, a.tied_embeddings) == ("learned", "gelu", "layernorm", True)
    assert a.unknown_keys == ()


@pytest.mark.parametrize(
    ("cfg", "width_key", "act_key"),
    [(GPT2, "n_embd", "activation_function"),
     ({"model_type": "gpt_neox", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
       "num_attention_heads": 4, "vocab_size": 101, "max_position_embeddings": 32}, "hidden_size", "hidden_act")],
)
def test_mha_families_check_width_and_note_activation(cfg, width_key, act_key):
    heads_key = "n_head" if width_key == "n_embd" else "num_attention_heads"
    with pytest.raises(SpecError, match=f"{width_key}.*{heads_key} \\(5\\)"):
        arch_from_hf_config(dict(cfg, **{heads_key: 5}))
    a = arch_from_hf_config(dict(cfg, **{act_key: "relu"}))
    assert any(n.startswith(f"{act_key}='relu'") for n in a.notes) and a.mlp == "gelu"


def test_gpt_neox(tmp_path):
    cfg = {
        "model_type": "gpt_neox",
        "hidden_size": 64,
        "intermediate_size": 96,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "vocab_size": 101,
        "max_position_embeddings": 32,
        "rotary_pct": 0.25,
        "rotary_emb_base": 10000,
        "use_parallel_residual": True,
        "layer_norm_eps": 1e-5,
        "hidden_act": "gelu",
        "tie_word_embeddings": False,
    }
    a = load_model(write(tmp_path, cfg).parent)  # a folder works too
    layer = 4 * 64 + lin(64, 3 * 64, True) + lin(64, 64, True) + lin(64, 96, True) + lin(96, 64, True)
    assert a.params_total == 101 * 64 + 2 * layer + 2 * 64 + 101 * 64  # embed_in, layers, final LN, embed_out
    assert (a.position, a.mlp, a.norm) == ("rope", "gelu", "layernorm")


# ------------------------------------------------------------------------------------ reporting & errors
def test_unknown_keys_are_reported_not_ignored(tmp_path):
    cfg = dict(LLAMA, fancy_new_attention=True, num_memory_tokens=16)
    a = arch_from_hf_config(write(tmp_path, cfg))
    assert a.unknown_keys == ("fancy_new_attention", "num_memory_tokens")
    assert any("fancy_new_attention" in n and "num_memory_tokens" in n for n in a.notes)
    assert a.to_dict()["unknown_keys"] == ["fancy_new_attention", "num_memory_tokens"]


def test_known_irrelevant_keys_are_not_reported():
    cfg = dict(LLAMA, bos_token_id=1, eos_token_id=[2, 3], pad_token_id=None, use_cache=True, pretraining_tp=1)
    assert arch_from_hf_config(cfg).unknown_keys == ()


def test_missing_required_key_names_file_and_key(tmp_path):
    cfg = dict(LLAMA)
    cfg.pop("intermediate_size")
    p = write(tmp_path, cfg)
    with pytest.raises(SpecError) as e:
        arch_from_hf_config(p)
    assert str(p) in str(e.value) and "intermediate_size" in str(e.value) and "missing" in str(e.value)


def test_unknown_model_type_lists_families(tmp_path):
    with pytest.raises(SpecError) as e:
        arch_from_hf_config(write(tmp_path, {"model_type": "lama", "hidden_size": 8}))
    msg = str(e.value)
    assert "lama" in msg and "Did you mean 'llama'" in msg
    for fam in supported_families():
        assert fam in msg


def test_missing_model_type(tmp_path):
    with pytest.raises(SpecError, match="model_type: missing"):
        arch_from_hf_config(write(tmp_path, {"hidden_size": 8}))


@pytest.mark.parametrize("value", [["llama"], {"name": "llama"}, 3])
def test_model_type_not_a_string_is_a_spec_error(tmp_path, value):
    with pytest.raises(SpecError, match="model_type: must be a string"):
        arch_from_hf_config(write(tmp_path, {"model_type": value, "hidden_size": 8}))


@pytest.mark.parametrize(
    ("key", "value"),
    [("hidden_size", "64"), ("hidden_size", 64.5), ("hidden_size", float("nan")), ("hidden_size", float("inf")), ("num_hidden_layers", True), ("vocab_size", 0), ("num_attention_heads", -8)],
)
def test_bad_values_name_the_key(key, value):
    with pytest.raises(SpecError) as e:
        arch_from_hf_config(dict(LLAMA, **{key: value}))
    assert key in str(e.value)


def test_integral_float_accepted():
    assert arch_from_hf_config(dict(LLAMA, hidden_size=64.0)).hidden == 64


def test_kv_heads_must_divide_heads():
    with pytest.raises(SpecError, match="num_key_value_heads"):
        arch_from_hf_config(dict(LLAMA, num_key_value_heads=3))


def test_topk_above_experts():
    with pytest.raises(SpecError, match="num_experts_per_tok"):
        arch_from_hf_config(dict(QWEN2_MOE, num_experts_per_tok=7))


def test_mlp_only_layers_out_of_range():
    with pytest.raises(SpecError, match="mlp_only_layers"):
        arch_from_hf_config(dict(QWEN2_MOE, mlp_only_layers=[4]))


def test_not_json(tmp_path):
    p = tmp_path / "config.json"
    p.write_text("{not json")
    with pytest.raises(SpecError, match="not readable as JSON") as err:
        load_model(str(p))
    # where (line:column) and the parser's problem in the reader's words, not json's own text
    assert f"{p}:1:2" in str(err.value) and "Expecting" not in str(err.value)
    assert "Expecting" not in err.value.render("zh") and "无法按 JSON 读取" in err.value.render("zh")


def test_top_level_not_object(tmp_path):
    p = tmp_path / "config.json"
    p.write_text("[1, 2]")
    with pytest.raises(SpecError, match="JSON object"):
        load_model(p)


def test_missing_file(tmp_path):
    with pytest.raises(SpecError, match="no such config.json"):
        load_model(str(tmp_path / "nothing" / "config.json"))
    with pytest.raises(SpecError, match="no such config.json"):
        load_model(tmp_path)  # a folder without config.json


def test_gpt2_cross_attention_rejected():
    with pytest.raises(SpecError, match="add_cross_attention"):
        arch_from_hf_config(dict(GPT2, add_cross_attention=True))


def test_mapping_with_model_type_goes_through_adapter():
    a = load_model(dict(LLAMA, foo=1))
    assert a.family == "llama" and a.unknown_keys == ("foo",)


def test_a_config_saved_under_its_own_name_is_named_by_the_file(tmp_path):
    """`models show /tmp/rv/qwen3-8b.json` named the model 'rv' (the folder); a file named config.json keeps the
    folder's name (a Hugging Face snapshot: .../Qwen3-8B/config.json)."""
    path = tmp_path / "qwen3-8b.json"
    path.write_text(json.dumps(LLAMA), encoding="utf-8")
    assert arch_from_hf_config(path).name == "qwen3-8b"
    assert arch_from_hf_config(write(tmp_path, LLAMA)).name == "m"


NEOX = {"model_type": "gpt_neox", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
        "num_attention_heads": 4, "vocab_size": 101, "max_position_embeddings": 32}
LLAMA_SMALL = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
               "num_attention_heads": 4, "vocab_size": 101}


@pytest.mark.parametrize(
    ("cfg", "expected"),
    [(NEOX, 0.25),  # GPTNeoXConfig's rotary_pct default
     (dict(NEOX, rotary_pct=0.5), 0.5),
     (dict(NEOX, rotary_pct=0.5, partial_rotary_factor=1.0), 1.0),  # the later transformers key wins
     (LLAMA_SMALL, 1.0),
     (dict(LLAMA_SMALL, partial_rotary_factor=0.75), 0.75),  # Phi-4-mini style, read by every Llama-like family
     (dict(LLAMA_SMALL, rope_parameters={"rope_type": "default", "partial_rotary_factor": 0.5}), 0.5),
     (dict(LLAMA_SMALL, model_type="glm", head_dim=16), 0.5),  # GlmConfig's default
     (dict(LLAMA_SMALL, model_type="phi3"), 1.0)],
)
def test_rotary_fraction_read_from_config(cfg, expected):
    assert arch_from_hf_config(cfg).rotary_fraction == pytest.approx(expected)


@pytest.mark.parametrize("bad", [0, 1.5, -0.25, "half", True])
def test_rotary_fraction_out_of_range_is_named(bad):
    with pytest.raises(SpecError, match="partial_rotary_factor.*above 0 and at most 1"):
        arch_from_hf_config(dict(LLAMA_SMALL, partial_rotary_factor=bad))
    with pytest.raises(SpecError, match="rotary_pct"):
        arch_from_hf_config(dict(NEOX, rotary_pct=bad))
