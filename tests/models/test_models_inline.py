"""Inline architectures (mappings in a job file) and the counting invariants of ModelArch."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.errors import SpecError
from trainsizer.models import ModelArch, load_model

LLAMA2_7B = {"layers": 32, "hidden": 4096, "heads": 32, "ffn": 11008, "vocab": 32000, "max_position": 4096}


def test_inline_matches_preset_counts():
    a = load_model(LLAMA2_7B)
    assert a.params_total == load_model("llama-2-7b").params_total == 6_738_415_616
    assert (a.kv_heads, a.head_dim, a.family, a.source) == (32, 128, "custom", "inline")


def test_inline_moe():
    a = load_model(
        {
            "layers": 4,
            "hidden": 64,
            "heads": 4,
            "kv_heads": 2,
            "ffn": 128,
            "vocab": 100,
            "experts": 8,
            "experts_per_token": 2,
            "expert_ffn": 32,
            "shared_expert_ffn": 32,
            "dense_layers": 1,
        }
    )
    assert [a.layer_is_moe(i) for i in range(4)] == [False, True, True, True]
    assert a.params_total - a.params_active == 3 * 6 * 3 * 64 * 32


def test_inline_pure_moe_needs_no_ffn():
    a = load_model({"layers": 2, "hidden": 64, "heads": 4, "vocab": 100, "experts": 4, "experts_per_token": 1,
                    "expert_ffn": 32})
    assert a.ffn == 0 and a.moe_layer_count == 2


def test_inline_mla():
    a = load_model({"layers": 2, "hidden": 64, "heads": 4, "ffn": 96, "vocab": 100, "attention": "mla",
                    "kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 8})
    assert a.attention == "mla" and a.q_dim == 48


def test_preset_with_overrides():
    base = load_model("llama-3.1-8b")
    a = load_model({"preset": "llama-3.1-8b", "layers": 40})
    assert a.params_total - base.params_total == 8 * base.layer_params(0).total
    assert a.name == "llama-3.1-8b+custom" and any("overrides: layers" in n for n in a.notes)
    wider = load_model({"preset": "llama-2-7b", "heads": 64})
    assert wider.head_dim == 64 and wider.kv_heads == 64


@pytest.mark.parametrize(
    ("spec", "key", "fragment"),
    [
        (dict(LLAMA2_7B, heads=30), "model.heads", "does not divide hidden"),
        (dict(LLAMA2_7B, kv_heads=5), "model.kv_heads", "must divide heads"),
        (dict(LLAMA2_7B, layers=-1), "model.layers", "greater than or equal to 1"),
        (dict(LLAMA2_7B, ffn=-3), "model.ffn", "greater than or equal to 0"),
        (dict(LLAMA2_7B, layers=True), "model.layers", "whole number"),
        (dict(LLAMA2_7B, hidden="4096"), "model.hidden", "whole number"),
        (dict(LLAMA2_7B, mlp="relu"), "model.mlp", "swiglu"),
        (dict(LLAMA2_7B, experts=4, experts_per_token=5, expert_ffn=10), "model.experts_per_token", "exceeds"),
        (dict(LLAMA2_7B, experts=4, expert_ffn=10), "model.experts_per_token", ">= 1"),
        (dict(LLAMA2_7B, experts=4, experts_per_token=1), "model.expert_ffn", "required"),
        (dict(LLAMA2_7B, experts_per_token=2), "model.experts_per_token", "only meaningful"),
        (dict(LLAMA2_7B, expert_groups=4), "model.expert_groups", "only meaningful"),
        (dict(LLAMA2_7B, experts=6, experts_per_token=2, expert_ffn=8, expert_groups=4), "model.expert_groups",
         "must divide experts (6)"),
        (dict(LLAMA2_7B, experts=8, experts_per_token=2, expert_ffn=8, expert_groups=4, expert_groups_per_token=5),
         "model.expert_groups_per_token", "exceeds expert_groups (4)"),
        (dict(LLAMA2_7B, experts=8, experts_per_token=2, expert_ffn=8, expert_groups=0), "model.expert_groups",
         "greater than or equal to 1"),
        ({"preset": "deepseek-v3", "experts": 100}, "model.expert_groups", "must divide experts (100)"),
        (dict(LLAMA2_7B, ffn=0), "model.ffn", "dense MLP"),
        (dict(LLAMA2_7B, attention="mla"), "model.kv_lora_rank", "required"),
        (dict(LLAMA2_7B, experts=4, experts_per_token=1, expert_ffn=8, dense_layers=40), "model.dense_layers",
         "exceeds layers"),
        ({"hidden": 64, "heads": 4, "vocab": 10}, "model.layers", "required"),
        ({"preset": "llama-9"}, "model.preset", "unknown model preset"),
        ({"preset": "qwen3-30b-a3b", "mlp_only_layers": [-1]}, "model.mlp_only_layers", "outside 0..47"),
        ({"preset": "qwen3-30b-a3b", "mlp_only_layers": [48]}, "model.mlp_only_layers", "outside 0..47"),
        (dict(LLAMA2_7B, sliding_window=128, window_layers=33), "model.window_layers", "exceeds layers"),
        (dict(LLAMA2_7B, window_layers=16), "model.window_layers", "needs sliding_window"),
        (dict(LLAMA2_7B, chunk_layers=16), "model.chunk_layers", "needs attention_chunk"),
        (dict(LLAMA2_7B, rope_attention_factor=0.0), "model.rope_attention_factor", "greater than 0"),
        (dict(LLAMA2_7B, rope_attention_factor="1.35"), "model.rope_attention_factor", "must be a number"),
        (dict(LLAMA2_7B, sliding_window=128, window_layers=20, attention_chunk=512, chunk_layers=20),
         "model.chunk_layers", "windowed or chunked"),
    ],
)
def test_inline_errors_name_the_key(spec, key, fragment):
    with pytest.raises(SpecError) as e:
        load_model(spec)
    assert e.value.where == key
    assert fragment in str(e.value)


def test_inline_unknown_key_suggests():
    with pytest.raises(SpecError) as e:
        load_model(dict(LLAMA2_7B, hiden=4096))
    assert e.value.where == "model.hiden" and "Did you mean 'hidden'" in str(e.value)


def test_head_dim_lifts_divisibility():
    a = load_model(dict(LLAMA2_7B, heads=30, kv_heads=10, head_dim=128))
    assert a.q_dim == 3840


def test_where_prefix():
    with pytest.raises(SpecError) as e:
        load_model(dict(LLAMA2_7B, heads=30), where="jobs[0].model")
    assert e.value.where == "jobs[0].model.heads"


def test_unknown_preset_did_you_mean():
    with pytest.raises(SpecError) as e:
        load_model("mixtral-8x7")
    assert "Did you mean 'mixtral-8x7b'" in str(e.value)


def test_bad_spec_type():
    with pytest.raises(SpecError):
        load_model(42)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------ invariants
@st.composite
def archs(draw) -> ModelArch:
    heads = draw(st.sampled_from([1, 2, 4, 8]))
    kv_heads = draw(st.sampled_from([k for k in (1, 2, 4, 8) if heads % k == 0]))
    head_dim = draw(st.sampled_from([4, 8, 16]))
    layers = draw(st.integers(1, 12))
    spec = {
        "layers": layers,
        "hidden": heads * head_dim,
        "heads": heads,
        "kv_heads": kv_heads,
        "ffn": draw(st.integers(1, 256)),
        "vocab": draw(st.integers(1, 1000)),
        "mlp": draw(st.sampled_from(["swiglu", "gelu"])),
        "norm": draw(st.sampled_from(["rmsnorm", "layernorm"])),
        "position": draw(st.sampled_from(["rope", "learned"])),
        "tied_embeddings": draw(st.booleans()),
        "qkv_bias": draw(st.booleans()),
        "mlp_bias": draw(st.booleans()),
        "qk_norm": draw(st.booleans()),
    }
    if draw(st.booleans()):
        experts = draw(st.integers(1, 16))
        spec.update(
            experts=experts,
            experts_per_token=draw(st.integers(1, experts)),
            expert_ffn=draw(st.integers(1, 64)),
            shared_expert_ffn=draw(st.integers(0, 64)),
            dense_layers=draw(st.integers(0, layers)),
            moe_every=draw(st.integers(1, 3)),
            router_bias=draw(st.booleans()),
        )
    if draw(st.booleans()):
        spec.update(attention="mla", kv_lora_rank=draw(st.integers(1, 32)), q_lora_rank=draw(st.integers(0, 32)),
                    qk_nope_head_dim=draw(st.integers(1, 16)), qk_rope_head_dim=draw(st.integers(1, 8)),
                    v_head_dim=draw(st.integers(1, 16)))
    return load_model(spec)


@settings(max_examples=200, deadline=None)
@given(archs())
def test_active_never_exceeds_total(a):
    assert 0 < a.params_active <= a.params_total
    if not a.is_moe or a.experts_per_token == a.experts or a.moe_layer_count == 0:
        assert a.params_active == a.params_total


@settings(max_examples=200, deadline=None)
@given(archs())
def test_adding_a_layer_adds_exactly_one_layer(a):
    bigger = a.with_(layers=a.layers + 1)
    new = bigger.layer_params(a.layers)
    assert bigger.params_total - a.params_total == new.total
    assert bigger.params_active - a.params_active == new.active


@settings(max_examples=200, deadline=None)
@given(archs())
def test_total_is_sum_of_parts(a):
    body = sum(a.layer_params(i).total for i in range(a.layers))
    assert a.params_total == body + a.embedding_params + a.lm_head_params + a.final_norm_params
    untied = a.with_(tied_embeddings=False)
    assert untied.params_total - a.with_(tied_embeddings=True).params_total == a.vocab * a.hidden


@settings(max_examples=100, deadline=None)
@given(archs())
def test_to_dict_round_trip(a):
    d = a.to_dict()
    assert d["params_total"] == a.params_total
    rebuilt = ModelArch(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items()
                           if k not in ("params_total", "params_active")})
    assert rebuilt == a


def test_mla_head_dim_defaults_to_qk_width():
    a = ModelArch(name="m", family="x", layers=1, hidden=64, heads=4, kv_heads=4, ffn=8, vocab=10, attention="mla",
                  kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=8)
    assert a.head_dim == 12 and a.v_dim == 32
    assert ModelArch(name="m", family="x", layers=1, hidden=64, heads=4, kv_heads=4, ffn=8, vocab=10).head_dim == 16


def test_sliding_window_layers_share():
    """Half of GPT-OSS 20B's 24 layers (layer_types alternating) use the 128-token window."""
    m = load_model(dict(LLAMA2_7B, sliding_window=128, window_layers=16))
    assert (m.sliding_window, m.window_share) == (128, 0.5)
    assert load_model(dict(LLAMA2_7B)).window_share == 0.0


def test_rope_attention_factor_inline_overrides_the_preset():
    assert load_model({"preset": "gpt-oss-20b", "rope_attention_factor": 1.0}).rope_attention_factor == 1.0
    assert load_model(dict(LLAMA2_7B, rope_attention_factor=2)).rope_attention_factor == 2.0
