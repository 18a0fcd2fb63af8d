"""Hybrid Mamba-2 / attention models from config.json (nemotron_h) and the shipped presets; other state-space and
hybrid families stay refused by name."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.errors import SpecError
from trainsizer.models.hf_config import arch_from_hf_config
from trainsizer.models.shipped import _preset_dir, load_preset


def _raw(name: str) -> dict:
    return json.loads(_preset_dir().joinpath(f"{name}.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name,mamba,attention,mlp,moe", [
    ("nemotron-h-8b", 24, 4, 24, 0), ("nemotron-h-56b", 54, 10, 54, 0), ("nemotron-3-nano-30b-a3b", 23, 6, 0, 23),
    ("nemotron-3-nano-4b", 21, 4, 17, 0)])
def test_presets_read_their_layer_pattern(name, mamba, attention, mlp, moe):
    m = load_preset(name)
    assert (m.mamba_layers, m.attention_layers, m.dense_mlp_layers, m.moe_layer_count) == (mamba, attention, mlp, moe)
    assert not m.unknown_keys and m.mlp == "relu2"


def test_nemotron_3_nano_counts_as_published():
    """NVIDIA's model card: 31.6B parameters, about 3.6B active with the embeddings."""
    m = load_preset("nemotron-3-nano-30b-a3b")
    assert m.params_total / 1e9 == pytest.approx(31.6, abs=0.05)
    assert m.params_active / 1e9 == pytest.approx(3.6, abs=0.05)
    assert m.router_bias and m.router_fp32 and m.shared_expert_ffn == 3712


@pytest.mark.parametrize("change,where,text", [
    ({"hybrid_override_pattern": "M-X*"}, "hybrid_override_pattern", "'X'"),
    ({"hybrid_override_pattern": "M-*"}, "hybrid_override_pattern", "3 symbols but the model has 52 layers"),
    ({"mamba_proj_bias": True}, "mamba_proj_bias", "not modelled"),
    ({"n_groups": 6}, "n_groups", "must divide its 128 heads"),
    ({"hybrid_override_pattern": 7}, "hybrid_override_pattern", "string"),
    ({"moe_latent_size": 8192}, "moe_latent_size", "wider than the hidden size 4096"),
    ({"moe_latent_size": 512.5}, "moe_latent_size", "integer"),
    ({"moe_latent_size": "1024"}, "moe_latent_size", "integer"),
])
def test_bad_hybrid_configs_name_the_key(change, where, text):
    raw = _raw("nemotron-h-8b") | change
    with pytest.raises(SpecError, match=where) as err:
        arch_from_hf_config(raw)
    assert text in str(err.value)


@pytest.mark.parametrize("model_type", ["jamba", "falcon_h1", "bamba", "zamba2", "rwkv6"])
def test_other_hybrids_stay_refused_by_name(model_type):
    with pytest.raises(SpecError, match="which trainsizer does not model"):
        arch_from_hf_config({"model_type": model_type, "hidden_size": 768})


def test_latent_moe_reads_and_an_unset_latent_is_as_before():
    """Nemotron 3 Super / Ultra route on a latent width (Megatron-Bridge nemotron_h_bridge.py moe_latent_size): read
    into ModelArch.moe_latent, no longer refused (docs/known-gaps.md 247); a config that writes the key as null or 0
    reads as before; one wider than the hidden size is refused with its Chinese text."""
    raw = _raw("nemotron-3-nano-30b-a3b")
    latent = arch_from_hf_config(raw | {"moe_latent_size": 512})
    assert (latent.moe_latent, latent.expert_width, latent.hidden) == (512, 512, 2688) and not latent.unknown_keys
    base = arch_from_hf_config(raw)
    assert latent.params_total < base.params_total
    for unset in (None, 0):
        same = arch_from_hf_config(raw | {"moe_latent_size": unset})
        assert same == base.with_(source=same.source) and not same.unknown_keys
    with pytest.raises(SpecError, match="moe_latent_size") as err:
        arch_from_hf_config(raw | {"moe_latent_size": 2689})
    assert "LatentMoE" in err.value.render("zh") and "潜在维度" in err.value.render("zh")


def test_nemotron_3_nano_4b_mixer_and_tensor_count():
    """Megatron-Bridge's card: 263 BF16 tensors, 21 Mamba layers; the mixer is 96 heads x 80 = 7,680 wide (not
    2 x hidden = 6,272, which `expand` would say)."""
    m = load_preset("nemotron-3-nano-4b")
    assert (m.ssm_inner, m.ssm_groups, m.ssm_state, m.ssm_chunk, m.kv_heads, m.head_dim) == (7680, 8, 128, 256, 8, 128)
    tensors = 9 * m.mamba_layers + 5 * m.attention_layers + 3 * m.dense_mlp_layers + 3  # + embedding, final norm, head
    assert tensors == 263


def test_errors_have_chinese_text():
    raw = _raw("nemotron-h-8b") | {"hybrid_override_pattern": "M-*"}
    with pytest.raises(SpecError) as err:
        arch_from_hf_config(raw)
    assert "每层一个符号" in err.value.render("zh")


GRANITE_TOY = {  # transformers' GraniteMoeHybrid documentation example (8 layers, 8 experts)
    "model_type": "granitemoehybrid", "hidden_size": 512, "intermediate_size": 1024, "hidden_act": "silu",
    "layer_types": ["mamba", "mamba", "mamba", "attention", "mamba", "mamba", "mamba", "attention"],
    "mamba_chunk_size": 256, "mamba_conv_bias": True, "mamba_d_conv": 4, "mamba_d_head": 128, "mamba_d_state": 128,
    "mamba_expand": 2, "mamba_n_groups": 1, "mamba_n_heads": 8, "mamba_proj_bias": False,
    "max_position_embeddings": 4096, "num_attention_heads": 8, "num_experts_per_tok": 2, "num_hidden_layers": 8,
    "num_key_value_heads": 8, "num_local_experts": 8, "position_embedding_type": "nope",
    "shared_intermediate_size": 512, "tie_word_embeddings": True, "vocab_size": 49152}


def test_granite_layers_are_a_mixer_then_an_moe_block():
    m = arch_from_hf_config(GRANITE_TOY)
    assert m.layer_pattern == "MEMEME*EMEMEME*E" and m.layers == 16
    h, d_in, n = 512, 1024, 128
    mixer = h * (2 * d_in + 2 * n + 8) + (d_in + 2 * n) * 5 + 3 * 8 + d_in + d_in * h
    moe = h * 8 + 8 * 3 * h * 1024 + 3 * h * 512  # router, SwiGLU experts, the shared SwiGLU MLP
    assert m.params_total == 6 * mixer + 2 * 4 * h * h + 8 * moe + 16 * h + 49152 * h + h
    assert any("counted as two" in str(note) for note in m.notes)


def test_granite_4_h_small_counts_as_published():
    """ibm-granite/granite-4.0-h-small: 32B parameters, 9B active (its model card); widths as its config.json lists
    them (36 Mamba-2 and 4 attention layers), mamba_n_heads / n_groups at the transformers defaults (128 / 1)."""
    kinds = ["mamba"] * 5 + ["attention"] + (["mamba"] * 9 + ["attention"]) * 3 + ["mamba"] * 4
    raw = {"model_type": "granitemoehybrid", "hidden_size": 4096, "num_hidden_layers": 40, "num_attention_heads": 32,
           "num_key_value_heads": 8, "num_local_experts": 72, "num_experts_per_tok": 10,
           "shared_intermediate_size": 1536, "intermediate_size": 768, "mamba_d_state": 128, "mamba_d_conv": 4,
           "mamba_expand": 2, "tie_word_embeddings": True, "vocab_size": 100352, "layer_types": kinds}
    m = arch_from_hf_config(raw)
    assert m.params_total / 1e9 == pytest.approx(32, abs=0.5)
    assert m.params_active / 1e9 == pytest.approx(9, abs=0.5)


def test_granite_layer_types_must_match_the_layers():
    with pytest.raises(SpecError, match="layer_types") as err:
        arch_from_hf_config(GRANITE_TOY | {"layer_types": ["mamba"] * 7})
    assert "each of the 8 layers" in str(err.value)


_KIND_SYMBOL = {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from("M*-E"), min_size=1, max_size=24).map("".join))
def test_a_pattern_counts_each_layer_by_its_symbol(pattern):
    """Any hybrid_override_pattern over Nemotron 3 Nano 30B-A3B's widths: the total is the embedding, head and final norm
    plus, per symbol, that block's own count (its norm and mixer / attention / MLP / MoE), whatever the order."""
    raw = _raw("nemotron-3-nano-30b-a3b") | {"hybrid_override_pattern": pattern, "num_hidden_layers": len(pattern),
                                             "intermediate_size": 1856}
    m = arch_from_hf_config(raw)
    one = {k: m._hybrid_layer_params(k).total for k in _KIND_SYMBOL}
    body = sum(one[k] * pattern.count(s) for k, s in _KIND_SYMBOL.items())
    assert m.params_total == body + m.embedding_params + m.lm_head_params + m.final_norm_params
    assert (m.mamba_layers, m.attention_layers, m.dense_mlp_layers, m.moe_layer_count) == tuple(
        pattern.count(s) for s in "M*-E")
    assert m.params_active <= m.params_total


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 3), st.sampled_from([None, "*E", ["attention", "moe"]]))
def test_a_hybrid_mtp_head_reads_its_block(depth, block):
    """Nemotron 3 Super / 3.5 Lightning write an MTP head of its own pattern ('*E', or transformers' list, whose
    default is ["attention", "moe"]): read into mtp_layers / mtp_pattern, the headline counts unchanged (MTP excluded,
    as for every model; docs/known-gaps.md 247)."""
    raw = _raw("nemotron-3-nano-30b-a3b")
    extra = {"num_nextn_predict_layers": depth}
    if isinstance(block, str):
        extra["mtp_hybrid_override_pattern"] = block
    elif block:
        extra["mtp_layers_block_type"] = block
    m = arch_from_hf_config(raw | extra)
    base = arch_from_hf_config(raw)
    assert (m.params_total, m.mtp_layers, m.mtp_pattern, m.unknown_keys) == (base.params_total, depth, "*E", ())
    assert [lp.is_moe for lp in m.mtp_block_params()] == [False, True] and m.mtp_block_moe_layers() == 1


@pytest.mark.parametrize("extra,key", [
    ({"mtp_hybrid_override_pattern": "*X"}, "mtp_hybrid_override_pattern"),
    ({"mtp_hybrid_override_pattern": 3}, "mtp_hybrid_override_pattern"),
    ({"mtp_layers_block_type": ["attention", "dense"]}, "mtp_layers_block_type"),
    ({"mtp_hybrid_override_pattern": "*-"}, "mtp_hybrid_override_pattern"),  # no MLP layer in the Nano stack
])
def test_a_bad_mtp_block_names_its_key(extra, key):
    with pytest.raises(SpecError, match=key):
        arch_from_hf_config(_raw("nemotron-3-nano-30b-a3b") | {"num_nextn_predict_layers": 1} | extra)
