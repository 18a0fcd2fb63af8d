"""Sliding windows read from config.json for Mistral / Mixtral / Phi-3 (every layer), Gemma 2 (every other layer),
Gemma 3 (sliding_window_pattern or layer_types) and Qwen2 / Qwen3 (use_sliding_window, max_window_layers), with
the transformers configuration classes' defaults where a key is absent."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainsizer.errors import SpecError
from trainsizer.models import arch_from_hf_config, load_model

BASE = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 12, "num_attention_heads": 8,
        "num_key_value_heads": 2, "vocab_size": 101}


def _arch(model_type: str, **over):
    return arch_from_hf_config({**BASE, "model_type": model_type, **over})


def _window(arch) -> tuple[int, int]:
    return arch.sliding_window, arch.window_layers


def test_mistral_7b_v01_preset_windows_every_layer_at_4096():
    assert _window(load_model("mistral-7b")) == (4096, 32)


@pytest.mark.parametrize("model_type", ["mistral", "mixtral", "phi3"])
def test_every_layer_family_reads_the_window_and_null_means_none(model_type):
    extra = {"num_local_experts": 4, "num_experts_per_tok": 2} if model_type == "mixtral" else {}
    assert _window(_arch(model_type, sliding_window=2047, **extra)) == (2047, 12)
    assert _window(_arch(model_type, sliding_window=None, **extra)) == (0, 0)  # Mistral 7B v0.2 on
    # Mistral's modeling windows every layer whatever layer_types says (MistralConfig only warns)
    kinds = ["full_attention"] * 12
    assert _window(_arch(model_type, sliding_window=512, layer_types=kinds, **extra)) == (512, 12)


def test_absent_window_takes_the_class_default_and_says_so():
    mistral = _arch("mistral")
    assert _window(mistral) == (4096, 12) and any("sliding_window" in n for n in mistral.notes)
    mixtral = _arch("mixtral", num_local_experts=4, num_experts_per_tok=2)
    assert _window(mixtral) == (0, 0) and not any("sliding_window" in n for n in mixtral.notes)


def test_gemma2_windows_the_even_layers():
    assert _window(_arch("gemma2", sliding_window=4096)) == (4096, 6)
    assert _window(_arch("gemma2", num_hidden_layers=13, sliding_window=4096)) == (4096, 7)


def test_gemma3_five_local_one_global_by_default():
    """Gemma 3 (sliding_window_pattern 6): layers 5, 11, ... are global; gemma-3-1b's 26 layers keep 22 local."""
    arch = _arch("gemma3_text", num_hidden_layers=26, sliding_window=512, sliding_window_pattern=6)
    assert _window(arch) == (512, 22)
    kinds = ["sliding_attention", "full_attention"] * 6
    assert _window(_arch("gemma3_text", sliding_window=1024, layer_types=kinds)) == (1024, 6)
    nested = arch_from_hf_config({"model_type": "gemma3", "text_config": {
        **BASE, "model_type": "gemma3_text", "sliding_window": 1024}})
    assert _window(nested) == (1024, 10)


@pytest.mark.parametrize("model_type", ["qwen2", "qwen3"])
def test_qwen_windows_only_with_use_sliding_window(model_type):
    assert _window(_arch(model_type, sliding_window=131072, use_sliding_window=False, max_window_layers=4)) == (0, 0)
    on = _arch(model_type, sliding_window=4096, use_sliding_window=True, max_window_layers=4)
    assert _window(on) == (4096, 8)  # layers 4..11
    assert _window(load_model("qwen2.5-14b")) == (0, 0)


@pytest.mark.parametrize("bad", [["sliding_attention"], "sliding_attention", ["local"] * 12])
def test_gemma_layer_types_must_name_each_layer(bad):
    with pytest.raises(SpecError, match="layer_types"):
        _arch("gemma2", layer_types=bad)


def test_negative_window_is_refused():
    with pytest.raises(SpecError, match="sliding_window"):
        _arch("mistral", sliding_window=-1)


@given(st.integers(1, 80), st.integers(1, 12))
def test_gemma3_pattern_keeps_one_global_layer_in_each_period(layers, period):
    arch = _arch("gemma3_text", num_hidden_layers=layers, sliding_window=1024, sliding_window_pattern=period)
    assert arch.window_layers == layers - layers // period
    assert arch.sliding_window == (1024 if layers - layers // period else 0)
