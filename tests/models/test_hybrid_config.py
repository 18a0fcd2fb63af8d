"""Hybrid Mamba-2 / attention models from config.json (nemotron_h) and the shipped presets; other state-space and
hybrid families stay refused by name."""

from __future__ import annotations

import json

import pytest

from trainsizer.errors import SpecError
from trainsizer.models.hf_config import arch_from_hf_config
from trainsizer.models.shipped import _preset_dir, load_preset


def _raw(name: str) -> dict:
    return json.loads(_preset_dir().joinpath(f"{name}.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name,mamba,attention,mlp,moe", [
    ("nemotron-h-8b", 24, 4, 24, 0), ("nemotron-h-56b", 54, 10, 54, 0), ("nemotron-3-nano-30b-a3b", 23, 6, 0, 23)])
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
])
def test_bad_hybrid_configs_name_the_key(change, where, text):
    raw = _raw("nemotron-h-8b") | change
    with pytest.raises(SpecError, match=where) as err:
        arch_from_hf_config(raw)
    assert text in str(err.value)


@pytest.mark.parametrize("model_type", ["jamba", "falcon_h1", "bamba", "zamba2", "granitemoehybrid", "rwkv6"])
def test_other_hybrids_stay_refused_by_name(model_type):
    with pytest.raises(SpecError, match="which trainsizer does not model"):
        arch_from_hf_config({"model_type": model_type, "hidden_size": 768})


def test_errors_have_chinese_text():
    raw = _raw("nemotron-h-8b") | {"hybrid_override_pattern": "M-*"}
    with pytest.raises(SpecError) as err:
        arch_from_hf_config(raw)
    assert "每层一个符号" in err.value.render("zh")
