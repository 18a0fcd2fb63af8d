"""gpt_oss adapter (transformers modeling_gpt_oss.py): shapes, the sliding-window layers, what is noted, bad input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainsizer.errors import SpecError
from trainsizer.models import arch_from_hf_config, load_model


def _config(layers: int = 4, **over):
    cfg = {"model_type": "gpt_oss", "hidden_size": 64, "intermediate_size": 32, "num_hidden_layers": layers,
           "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 1000,
           "num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": 8,
           "layer_types": ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(layers)]}
    return {**cfg, **over}


def test_toy_config_counts_every_module_shape():
    arch = arch_from_hf_config(_config())
    h, q, kv, e, f = 64, 8 * 16, 2 * 16, 4, 32
    attn = h * q + q + 2 * (h * kv + kv) + q * h + h  # q/k/v/o with biases (attention_bias defaults true)
    experts = e * (h * 2 * f + 2 * f + f * h + h)  # gate_up_proj (+ bias), down_proj (+ bias)
    router = h * e + e  # router Linear with bias
    layer = attn + 2 * h + experts + router
    assert arch.params_total == 4 * layer + 2 * 1000 * h + h
    assert (arch.sliding_window, arch.window_layers) == (8, 2)
    assert arch.ffn == 0 and arch.moe_layer_count == 4


def test_preset_is_every_layer_moe_with_half_the_layers_windowed():
    arch = load_model("gpt-oss-120b")
    assert arch.family == "gpt_oss" and arch.moe_layer_count == 36
    assert (arch.sliding_window, arch.window_layers, arch.window_share) == (128, 18, 0.5)
    assert any("mxfp4" in n for n in arch.notes) and any("sinks" in n for n in arch.notes)
    assert arch.unknown_keys == ()


def test_without_layer_types_every_other_layer_is_windowed():
    """GptOssConfig's default layer_types: sliding on even indices, full on odd ones (noted)."""
    cfg = _config(layers=6)
    del cfg["layer_types"]
    arch = arch_from_hf_config(cfg)
    assert (arch.sliding_window, arch.window_layers) == (8, 3)
    assert any("layer_types" in n for n in arch.notes)


@pytest.mark.parametrize("bad", [["sliding_attention"], ["chunked_attention"] * 4, "sliding_attention"])
def test_layer_types_must_name_each_layer(bad):
    with pytest.raises(SpecError, match="layer_types"):
        arch_from_hf_config(_config(layer_types=bad))


def test_top_k_above_the_experts_is_refused():
    with pytest.raises(SpecError, match="num_experts_per_tok"):
        arch_from_hf_config(_config(num_experts_per_tok=5))


@given(st.lists(st.booleans(), min_size=1, max_size=12))
def test_window_layers_counts_the_sliding_entries(flags):
    kinds = ["sliding_attention" if f else "full_attention" for f in flags]
    arch = arch_from_hf_config(_config(layers=len(flags), layer_types=kinds))
    assert arch.window_layers == sum(flags)
    assert arch.sliding_window == (8 if any(flags) else 0)
