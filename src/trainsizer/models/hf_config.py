"""Hugging Face `config.json` -> `ModelArch`, with one explicit adapter per `model_type`.

Each adapter reads the keys its family's `transformers` configuration class defines and maps them onto
the module shapes of the matching modeling file (`modeling_llama.py`, `modeling_mistral.py`,
`modeling_mixtral.py`, `modeling_qwen2.py`, `modeling_qwen3.py`, `modeling_qwen2_moe.py`,
`modeling_qwen3_moe.py`, `modeling_deepseek_v2.py` / DeepSeek-V3 `modeling_deepseek.py`, `modeling_gpt2.py`,
`modeling_gpt_neox.py`, `modeling_gemma2.py`, `modeling_gemma3.py`, `modeling_phi3.py`, `modeling_glm.py`,
`modeling_glm4.py`, `modeling_internlm3.py`, `modeling_gpt_oss.py`, `modeling_olmo2.py`, `modeling_olmo3.py`, `modeling_glm4_moe.py`, `modeling_llama4.py`; the remote-code files of ChatGLM, InternLM2 and Baichuan).
Hybrid Mamba-2 / attention models in Megatron-Core's layout (`nemotron_h`, modeling_nemotron_h.py) are read with
their layer pattern, and Granite 4.0 H (`granitemoehybrid`) as that pattern; other state-space, recurrent and hybrid models (Mamba, RWKV, Jamba, ...) are refused by name. Every key of the file is either used, listed as known-irrelevant to sizing for
its family, or reported in `ModelArch.unknown_keys` (and a line in `ModelArch.notes`): nothing is ignored
silently. Defaults for absent optional keys are the defaults of the `transformers` configuration class,
and each default that was applied is recorded in `notes`. Works offline: only local files are read.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainsizer.errors import SpecError, given, unknown_name
from trainsizer.messages import Listing, msg
from trainsizer.models.arch import ModelArch
from trainsizer.spec.parse_problems import parse_problem

# Keys that never change parameter counts or the shapes the estimators read, for every family.
COMMON_IRRELEVANT = frozenset(
    {
        "_name_or_path",
        "architectures",
        "auto_map",
        "bos_token_id",
        "eos_token_id",
        "pad_token_id",
        "sep_token_id",
        "decoder_start_token_id",
        "torch_dtype",
        "dtype",
        "transformers_version",
        "initializer_range",
        "use_cache",
        "tokenizer_class",
        "return_dict",
        "output_attentions",
        "output_hidden_states",
        "gradient_checkpointing",
        "is_decoder",
        "task_specific_params",
        "quantization_config",  # storage format of the released weights; training sizes bf16/fp32 copies
        "generation_config",
        "model_type",  # read before dispatch
        # generic PretrainedConfig attributes that transformers writes into every saved config
        "chunk_size_feed_forward",
        "id2label",
        "label2id",
        "is_encoder_decoder",
        "problem_type",
        "finetuning_task",
        "prefix",
        "pruned_heads",
        "torchscript",
        "use_bfloat16",
        "tf_legacy_loss",
        "tie_encoder_decoder",
        "cross_attention_hidden_size",
        "_attn_implementation_autoset",
        "_attn_implementation",
        "attn_implementation",
        # generation defaults that older transformers versions saved in config.json
        "max_length",
        "min_length",
        "do_sample",
        "early_stopping",
        "num_beams",
        "num_beam_groups",
        "diversity_penalty",
        "temperature",
        "top_k",
        "top_p",
        "typical_p",
        "repetition_penalty",
        "length_penalty",
        "no_repeat_ngram_size",
        "encoder_no_repeat_ngram_size",
        "bad_words_ids",
        "num_return_sequences",
        "output_scores",
        "return_dict_in_generate",
        "forced_bos_token_id",
        "forced_eos_token_id",
        "remove_invalid_values",
        "exponential_decay_length_penalty",
        "suppress_tokens",
        "begin_suppress_tokens",
    }
)
_ROPE = frozenset({"rope_theta", "rope_scaling", "rope_parameters", "partial_rotary_factor"})
_DROPOUT = frozenset({"attention_dropout", "hidden_dropout", "resid_pdrop", "embd_pdrop", "attn_pdrop"})
_LLAMA_IRRELEVANT = _ROPE | _DROPOUT | {"rms_norm_eps", "pretraining_tp"}
_SLIDING = frozenset({"sliding_window", "use_sliding_window", "max_window_layers", "layer_types"})
_MOE_ROUTING = frozenset(
    {"router_aux_loss_coef", "output_router_logits", "router_jitter_noise", "norm_topk_prob", "use_mrope"}
)


class ConfigReader:
    """A `config.json` mapping that records which keys the adapter read."""

    def __init__(self, raw: Mapping[str, Any], label: str) -> None:
        self.raw = raw
        self.label = label
        self.used: set[str] = set()
        self.notes: list[str] = []

    def where(self, key: str) -> str:
        return f"{self.label}:{key}"

    def has(self, key: str) -> bool:
        return key in self.raw and self.raw[key] is not None

    def _int(self, key: str, value: Any, minimum: int) -> int:
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or (isinstance(value, float) and not math.isfinite(value))
            or int(value) != value
        ):
            raise SpecError(self.where(key), msg("hf_int"), value=value)
        if value < minimum:
            raise SpecError(self.where(key), msg("hf_ge", limit=minimum), value=value)
        return int(value)

    def req_int(self, key: str, minimum: int = 1) -> int:
        self.used.add(key)
        if key not in self.raw or self.raw[key] is None:
            raise SpecError(self.where(key), msg("hf_missing_key"))
        return self._int(key, self.raw[key], minimum)

    def opt_int(self, key: str, default: int, minimum: int = 0, *, note: bool = True) -> int:
        """An optional integer; `None` or absent -> the transformers default (noted when `note`)."""
        self.used.add(key)
        if key not in self.raw or self.raw[key] is None:
            if note:
                self.notes.append(msg("hf_default_used", key=key, default=default))
            return default
        return self._int(key, self.raw[key], minimum)

    def opt_fraction(self, key: str, default: float) -> float:
        """An optional share in (0, 1]; `None` or absent -> the transformers default."""
        self.used.add(key)
        value = self.raw.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 < value <= 1.0:
            raise SpecError(self.where(key), msg("hf_fraction"), value=value)
        return float(value)

    def rotary_fraction(self, default: float, legacy: str | None = None) -> float:
        """The share of each head RoPE rotates: `partial_rotary_factor` (top level, or inside transformers 5's
        `rope_parameters`), else the family's older key (`legacy`), else the config class's default
        (transformers modeling_rope_utils.py _compute_default_rope_parameters reads partial_rotary_factor, 1.0)."""
        nested = self.raw.get("rope_parameters")
        if isinstance(nested, Mapping) and nested.get("partial_rotary_factor") is not None:
            reader = ConfigReader(nested, self.where("rope_parameters"))
            return reader.opt_fraction("partial_rotary_factor", default)
        if legacy is not None and not self.has("partial_rotary_factor"):
            return self.opt_fraction(legacy, default)
        return self.opt_fraction("partial_rotary_factor", default)

    def opt_bool(self, key: str, default: bool) -> bool:
        self.used.add(key)
        if key not in self.raw or self.raw[key] is None:
            return default
        value = self.raw[key]
        if not isinstance(value, bool):
            raise SpecError(self.where(key), msg("spec_bool"), value=value)
        return value

    def opt_str(self, key: str, default: str) -> str:
        self.used.add(key)
        value = self.raw.get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            raise SpecError(self.where(key), msg("hf_string"), value=value)
        return value

    def opt_int_list(self, key: str) -> tuple[int, ...]:
        self.used.add(key)
        value = self.raw.get(key)
        if value is None:
            return ()
        if not isinstance(value, list):
            raise SpecError(self.where(key), msg("hf_layer_list"), value=value)
        return tuple(sorted(self._int(key, v, 0) for v in value))

    def unknown(self, irrelevant: frozenset[str]) -> tuple[str, ...]:
        return tuple(sorted(k for k in self.raw if k not in self.used and k not in irrelevant))


# ---------------------------------------------------------------------------------------------- adapters
# An adapter reads a ConfigReader and returns ModelArch keyword arguments (without name/family/source).
Adapter = Callable[[ConfigReader], dict[str, Any]]


@dataclass(frozen=True)
class Family:
    model_type: str
    adapter: Adapter
    irrelevant: frozenset[str]
    description: str


def _gated_act(c: ConfigReader) -> None:
    act = c.opt_str("hidden_act", "silu")
    if act != "silu":
        c.notes.append(msg("hf_gated_act", act=repr(act)))


def _gqa_core(c: ConfigReader, *, head_dim_default: int | None = None, gated_act: bool = True,
              rotary_default: float = 1.0) -> dict[str, Any]:
    """Keys shared by the Llama-style decoders (modeling_llama.py and its copies), MLP width, embedding tying and
    the rotated share of each head (partial_rotary_factor; `rotary_default` the config class's) included."""
    hidden = c.req_int("hidden_size")
    heads = c.req_int("num_attention_heads")
    kv_heads = c.opt_int("num_key_value_heads", heads, 1, note=False)
    if heads % kv_heads:
        raise SpecError(
            c.where("num_key_value_heads"), msg("hf_must_divide_heads", heads=heads), value=kv_heads
        )
    if c.has("head_dim"):
        head_dim = c.req_int("head_dim")
    elif head_dim_default is not None:
        head_dim = c.opt_int("head_dim", head_dim_default, 1)
    else:
        c.used.add("head_dim")
        if hidden % heads:
            raise SpecError(
                c.where("hidden_size"),
                msg("hf_hidden_not_divisible_no_head_dim", heads=heads),
                value=hidden,
            )
        head_dim = hidden // heads
    if gated_act:
        _gated_act(c)
    return dict(
        layers=c.req_int("num_hidden_layers"),
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        vocab=c.req_int("vocab_size"),
        max_position=c.opt_int("max_position_embeddings", 2048, 1),
        mlp="swiglu",
        norm="rmsnorm",
        position="rope",
        rotary_fraction=c.rotary_fraction(rotary_default),
        ffn=c.req_int("intermediate_size"),
        tied_embeddings=c.opt_bool("tie_word_embeddings", False),
    )


def _llama(c: ConfigReader) -> dict[str, Any]:
    """modeling_llama.py: attention_bias on q/k/v/o, mlp_bias on gate/up/down."""
    kw = _gqa_core(c)
    bias = c.opt_bool("attention_bias", False)
    return dict(kw, qkv_bias=bias, out_bias=bias, mlp_bias=c.opt_bool("mlp_bias", False))


def _mistral(c: ConfigReader) -> dict[str, Any]:
    """modeling_mistral.py: Llama shapes without biases; every layer windowed by sliding_window (no parameters)."""
    kw = _gqa_core(c)
    return dict(kw, **_every_layer_window(c, kw["layers"], 4096))


def _mixtral(c: ConfigReader) -> dict[str, Any]:
    """modeling_mixtral.py: every layer is MoE; experts are SwiGLU of intermediate_size; gate has no bias."""
    kw = _gqa_core(c)
    experts = c.req_int("num_local_experts")
    k = c.req_int("num_experts_per_tok")
    _check_topk(c, "num_experts_per_tok", k, experts)
    return dict(kw, experts=experts, experts_per_token=k, expert_ffn=kw["ffn"],
                **_every_layer_window(c, kw["layers"], 0))


def _qwen2(c: ConfigReader) -> dict[str, Any]:
    """modeling_qwen2.py: q/k/v projections carry a bias, o_proj does not."""
    kw = _gqa_core(c)
    return dict(kw, qkv_bias=True, **_qwen_window(c, kw["layers"]))


def _qwen3(c: ConfigReader) -> dict[str, Any]:
    """modeling_qwen3.py: explicit head_dim (class default 128), q_norm/k_norm, attention_bias on q/k/v/o."""
    kw = _gqa_core(c, head_dim_default=128)
    bias = c.opt_bool("attention_bias", False)
    return dict(kw, qkv_bias=bias, out_bias=bias, qk_norm=True, **_qwen_window(c, kw["layers"]))


def _check_topk(c: ConfigReader, key: str, k: int, experts: int) -> None:
    if k > experts:
        raise SpecError(c.where(key), msg("hf_exceeds_experts", experts=experts), value=k)


def _expert_groups(c: ConfigReader, experts: int, limited: bool) -> dict[str, int]:
    """Group-limited routing (ModelArch.expert_groups): DeepSeek-V2's group_limited_greedy and V3's noaux_tc
    (modeling_deepseek.py MoEGate / DeepseekV3TopkRouter: scores viewed as n_group groups, the topk_group best kept)
    read n_group / topk_group; other methods route over every expert."""
    if not limited:
        c.used.update({"n_group", "topk_group"})
        return {}
    groups = c.opt_int("n_group", 1, 1, note=False)
    per_token = c.opt_int("topk_group", 1, 1, note=False)
    if experts % groups:
        raise SpecError(c.where("n_routed_experts"), msg("hf_not_divisible", key="n_group", heads=groups),
                        value=experts)
    if per_token > groups:
        raise SpecError(c.where("topk_group"), msg("hf_exceeds_groups", groups=groups), value=per_token)
    return {"expert_groups": groups, "expert_groups_per_token": per_token}


def _qwen_moe_common(c: ConfigReader) -> dict[str, Any]:
    """decoder_sparse_step / mlp_only_layers: layer i is MoE iff i not in mlp_only_layers and
    (i + 1) % decoder_sparse_step == 0 (modeling_qwen2_moe.py / modeling_qwen3_moe.py)."""
    # transformers >= 5 saves Qwen3-MoE's num_experts under its attribute_map name num_local_experts
    key = "num_local_experts" if "num_experts" not in c.raw and "num_local_experts" in c.raw else "num_experts"
    experts = c.req_int(key)
    k = c.req_int("num_experts_per_tok")
    _check_topk(c, "num_experts_per_tok", k, experts)
    layers = c.req_int("num_hidden_layers")
    mlp_only = c.opt_int_list("mlp_only_layers")
    bad = [i for i in mlp_only if i >= layers]
    if bad:
        raise SpecError(c.where("mlp_only_layers"), msg("hf_layer_index_too_big", layers=layers), value=bad)
    return dict(
        experts=experts,
        experts_per_token=k,
        expert_ffn=c.req_int("moe_intermediate_size"),
        moe_every=c.opt_int("decoder_sparse_step", 1, 1),
        moe_layer_offset=1,
        mlp_only_layers=mlp_only,
    )


def _qwen2_moe(c: ConfigReader) -> dict[str, Any]:
    """modeling_qwen2_moe.py: qkv bias; one shared expert of shared_expert_intermediate_size with a
    sigmoid gate Linear(hidden, 1)."""
    kw = _gqa_core(c)
    shared = c.opt_int("shared_expert_intermediate_size", 0, 0, note=False)
    return dict(
        kw,
        **_qwen_moe_common(c),
        qkv_bias=c.opt_bool("qkv_bias", True),  # a config key since transformers 5
        shared_expert_ffn=shared,
        shared_expert_gate=shared > 0,
        **_qwen_window(c, kw["layers"]),
    )


def _qwen3_moe(c: ConfigReader) -> dict[str, Any]:
    """modeling_qwen3_moe.py: Qwen3 attention (qk-norm, head_dim = getattr(config, "head_dim",
    hidden_size // num_attention_heads)), routed experts only."""
    kw = _gqa_core(c)
    bias = c.opt_bool("attention_bias", False)
    return dict(kw, **_qwen_moe_common(c), qkv_bias=bias, out_bias=bias, qk_norm=True,
                **_qwen_window(c, kw["layers"]))


def _deepseek(version: int) -> Adapter:
    def adapter(c: ConfigReader) -> dict[str, Any]:
        """DeepSeek-V2/V3 (modeling_deepseek.py): MLA attention; layer i is MoE iff n_routed_experts is set,
        i >= first_k_dense_replace and i % moe_layer_freq == 0; shared experts form one MLP of
        n_shared_experts * moe_intermediate_size; V3 `noaux_tc` routing adds e_score_correction_bias."""
        hidden = c.req_int("hidden_size")
        heads = c.req_int("num_attention_heads")
        c.used.add("num_key_value_heads")  # MLA: K and V are expanded per head from the latent
        _gated_act(c)
        nope = c.req_int("qk_nope_head_dim")
        rope = c.req_int("qk_rope_head_dim")
        experts = c.opt_int("n_routed_experts", 0, 0, note=False)
        kw: dict[str, Any] = dict(
            layers=c.req_int("num_hidden_layers"),
            hidden=hidden,
            heads=heads,
            kv_heads=heads,
            head_dim=nope + rope,
            ffn=c.req_int("intermediate_size"),
            vocab=c.req_int("vocab_size"),
            max_position=c.opt_int("max_position_embeddings", 2048, 1),
            tied_embeddings=c.opt_bool("tie_word_embeddings", False),
            attention="mla",
            q_lora_rank=c.opt_int("q_lora_rank", 0, 0, note=False),  # null: queries not compressed
            kv_lora_rank=c.req_int("kv_lora_rank"),
            qk_nope_head_dim=nope,
            qk_rope_head_dim=rope,
            v_head_dim=c.req_int("v_head_dim"),
        )
        bias = c.opt_bool("attention_bias", False)
        kw.update(qkv_bias=bias, out_bias=bias, mlp_bias=c.opt_bool("mlp_bias", False))
        if version == 3:
            kw["mtp_layers"] = c.opt_int("num_nextn_predict_layers", 0, 0, note=False)
        if experts:
            k = c.req_int("num_experts_per_tok")
            _check_topk(c, "num_experts_per_tok", k, experts)
            expert_ffn = c.req_int("moe_intermediate_size")
            shared = c.opt_int("n_shared_experts", 0, 0, note=False)
            method = c.opt_str("topk_method", "noaux_tc" if version == 3 else "greedy")
            kw.update(
                experts=experts,
                experts_per_token=k,
                expert_ffn=expert_ffn,
                shared_expert_ffn=shared * expert_ffn,
                dense_layers=c.opt_int("first_k_dense_replace", 0, 0),
                moe_every=c.opt_int("moe_layer_freq", 1, 1),
                moe_layer_offset=0,
                router_bias=method == "noaux_tc",
                router_fp32=True,  # MoEGate / DeepseekV3TopkRouter: F.linear on float32
                **_expert_groups(c, experts, method in ("noaux_tc", "group_limited_greedy")),
            )
        else:
            for key in ("num_experts_per_tok", "moe_intermediate_size", "n_shared_experts", "topk_method",
                        "first_k_dense_replace", "moe_layer_freq"):
                c.used.add(key)
        return kw

    return adapter


def _mha_width(c: ConfigReader, hidden_key: str, heads_key: str) -> tuple[int, int]:
    """(hidden, heads) of a multi-head-attention config without head_dim: the heads must divide the width."""
    hidden, heads = c.req_int(hidden_key), c.req_int(heads_key)
    if hidden % heads:
        raise SpecError(c.where(hidden_key), msg("hf_not_divisible", key=heads_key, heads=heads), value=hidden)
    return hidden, heads


def _gelu_act(c: ConfigReader, key: str, default: str) -> None:
    """A plain (not gated) MLP is costed as GELU; another activation is noted, not refused."""
    act = c.opt_str(key, default)
    if "gelu" not in act:
        c.notes.append(msg("hf_plain_mlp", key=key, act=repr(act)))


def _gpt2(c: ConfigReader) -> dict[str, Any]:
    """modeling_gpt2.py: c_attn/c_proj/c_fc with biases, LayerNorm, GELU MLP of n_inner (default 4 * n_embd),
    learned positions (wpe, n_positions), lm_head tied to wte."""
    hidden, heads = _mha_width(c, "n_embd", "n_head")
    _gelu_act(c, "activation_function", "gelu_new")
    c.used.add("n_ctx")  # legacy alias of n_positions in old GPT-2 configs
    if c.opt_bool("add_cross_attention", False):
        raise SpecError(c.where("add_cross_attention"), msg("hf_cross_attention"), value=True)
    return dict(
        layers=c.req_int("n_layer"),
        hidden=hidden,
        heads=heads,
        kv_heads=heads,
        ffn=c.opt_int("n_inner", 4 * hidden, 1, note=False),
        vocab=c.req_int("vocab_size"),
        mlp="gelu",
        norm="layernorm",
        position="learned",
        max_position=c.req_int("n_positions"),
        tied_embeddings=c.opt_bool("tie_word_embeddings", True),
        qkv_bias=True,
        out_bias=True,
        mlp_bias=True,
    )


def _gpt_neox(c: ConfigReader) -> dict[str, Any]:
    """modeling_gpt_neox.py: fused query_key_value + dense (bias = attention_bias, default true), MLP
    dense_h_to_4h / dense_4h_to_h with biases, LayerNorm, rotary, separate embed_out; use_parallel_residual
    (default true: GPTNeoXConfig) adds attention and MLP, both fed by the layer input, in one residual; rotary_pct
    (GPTNeoXConfig default 0.25; partial_rotary_factor in later transformers) of each head is rotated."""
    hidden, heads = _mha_width(c, "hidden_size", "num_attention_heads")
    _gelu_act(c, "hidden_act", "gelu")
    bias = c.opt_bool("attention_bias", True)
    return dict(
        layers=c.req_int("num_hidden_layers"),
        hidden=hidden,
        heads=heads,
        kv_heads=heads,
        ffn=c.req_int("intermediate_size"),
        vocab=c.req_int("vocab_size"),
        mlp="gelu",
        norm="layernorm",
        position="rope",
        rotary_fraction=c.rotary_fraction(0.25, legacy="rotary_pct"),
        max_position=c.opt_int("max_position_embeddings", 2048, 1),
        tied_embeddings=c.opt_bool("tie_word_embeddings", False),
        qkv_bias=bias,
        out_bias=bias,
        mlp_bias=True,
        parallel_residual=c.opt_bool("use_parallel_residual", True),
    )


# ---------------------------------------------------------------------------------------------- more families
def _sandwich(kw: dict[str, Any]) -> dict[str, Any]:
    """Gemma 2/3 and GLM-4-0414 put an RMSNorm after attention and after the MLP too (4 per layer:
    modeling_gemma2.py post_attention_layernorm / post_feedforward_layernorm, modeling_glm4.py
    post_self_attn_layernorm / post_mlp_layernorm): ModelArch.sandwich_norms."""
    return dict(kw, sandwich_norms=True)


def _gemma_act(c: ConfigReader) -> None:
    """Gemma's gated MLP uses GeLU (tanh) on the gate: 3 matrices like SwiGLU."""
    c.used.update({"hidden_act", "hidden_activation"})


def _gemma_core(c: ConfigReader) -> dict[str, Any]:
    """modeling_gemma2.py: Llama shapes with head_dim (default 256), gated GeLU MLP, tied embeddings (default),
    q/k/v/o bias = attention_bias, sandwich norms."""
    _gemma_act(c)
    kw = _gqa_core(c, head_dim_default=256, gated_act=False)
    bias = c.opt_bool("attention_bias", False)
    kw = dict(kw, qkv_bias=bias, out_bias=bias, tied_embeddings=c.opt_bool("tie_word_embeddings", True))
    return _sandwich(kw)


def _softcap(c: ConfigReader, default: bool) -> bool:
    """attn_logit_softcapping set (not null): the attention logits are soft-capped (ModelArch.attention_softcap);
    `default` where the key is absent (Gemma2Config 50.0, Gemma3TextConfig None)."""
    c.used.add("attn_logit_softcapping")
    return c.raw["attn_logit_softcapping"] is not None if "attn_logit_softcapping" in c.raw else default


def _gemma2(c: ConfigReader) -> dict[str, Any]:
    """Gemma2Config: sliding_window (default 4096) on every other layer, the even indices (layer_types); the
    attention logits soft-capped (attn_logit_softcapping, default 50.0)."""
    kw = _gemma_core(c)
    n = kw["layers"]
    return dict(kw, attention_softcap=_softcap(c, True), **_window_layers(c, n, 4096, _alternating(n, 2), "1 full_attention every 2 layers"))


def _gemma3_text(c: ConfigReader) -> dict[str, Any]:
    """modeling_gemma3.py (Gemma3TextConfig): the Gemma 2 shapes plus q_norm / k_norm; sliding_window (default
    4096) on all but every sliding_window_pattern-th layer (default 6: five local, one global) unless layer_types
    lists them."""
    kw = _gemma_core(c)
    n = kw["layers"]
    period = c.opt_int("sliding_window_pattern", 6, 1, note=False)
    return dict(kw, qk_norm=True, attention_softcap=_softcap(c, False),
                **_window_layers(c, n, 4096, _alternating(n, period), f"1 full_attention every {period} layers"))


def _gemma3(c: ConfigReader) -> dict[str, Any]:
    """Gemma 3 multimodal (Gemma3Config): the language model is `text_config`; the SigLIP vision tower and
    the projector are not sized (a note says so)."""
    c.used.update({"mm_tokens_per_image", "initializer_range"})
    return _text_config(c, "gemma3_text", _gemma3_text, "hf_gemma3_text_config", "hf_vision_not_counted")


def _text_config(c: ConfigReader, family: str, read, missing: str, vision_note: str) -> dict[str, Any]:
    """A multimodal config's language model, read from `text_config` by its text family's adapter; the vision
    tower and projector are not sized (the note `vision_note` says so)."""
    text = c.raw.get("text_config")
    c.used.update({"text_config", "vision_config", "boi_token_index", "eoi_token_index", "image_token_index"})
    if not isinstance(text, Mapping):
        raise SpecError(c.where("text_config"), msg(missing))
    inner = ConfigReader(text, c.label + ":text_config")
    kw = read(inner)
    unknown = inner.unknown(FAMILIES[family].irrelevant)
    c.notes.extend(inner.notes)
    if unknown:
        c.notes.append(msg("hf_text_config_unknown", keys=Listing(unknown)))
    c.notes.append(msg(vision_note))
    return kw


def _phi3(c: ConfigReader) -> dict[str, Any]:
    """modeling_phi3.py (Phi-3, Phi-3.5, Phi-4, Phi-4-mini): fused qkv_proj and gate_up_proj hold the same
    weights as Llama's separate projections; no biases; sliding_window (Phi3Config default None) on every layer."""
    kw = _gqa_core(c)
    return dict(kw, **_every_layer_window(c, kw["layers"], 0))


def _glm4(bias_default: bool, sandwich: bool) -> Adapter:
    def adapter(c: ConfigReader) -> dict[str, Any]:
        """modeling_glm.py / modeling_glm4.py: q/k/v carry a bias (attention_bias), o_proj none; fused
        gate_up_proj of 2 x intermediate_size; partial rotary (GlmConfig / Glm4Config partial_rotary_factor 0.5);
        GLM-4-0414 (glm4) adds sandwich norms."""
        kw = _gqa_core(c, rotary_default=0.5)
        kw = dict(kw, qkv_bias=c.opt_bool("attention_bias", bias_default))
        return _sandwich(kw) if sandwich else kw

    return adapter


def _chatglm(c: ConfigReader) -> dict[str, Any]:
    """THUDM modeling_chatglm.py (ChatGLM2/3, GLM-4-9B remote code): fused query_key_value with multi-query
    groups (bias = add_qkv_bias), dense out (bias = add_bias_linear), SwiGLU dense_h_to_4h of 2 x
    ffn_hidden_size, separate output_layer."""
    hidden = c.req_int("hidden_size")
    heads = c.req_int("num_attention_heads")
    mqa = c.opt_bool("multi_query_attention", False)
    kv = c.opt_int("multi_query_group_num", heads, 1, note=False) if mqa else heads
    c.used.add("multi_query_group_num")
    if heads % kv:
        raise SpecError(c.where("multi_query_group_num"), msg("hf_must_divide_heads", heads=heads), value=kv)
    linear_bias = c.opt_bool("add_bias_linear", False)
    return dict(
        layers=c.req_int("num_layers"), hidden=hidden, heads=heads, kv_heads=kv,
        head_dim=c.opt_int("kv_channels", hidden // heads, 1, note=False),
        ffn=c.req_int("ffn_hidden_size"), vocab=c.req_int("padded_vocab_size"),
        max_position=c.opt_int("seq_length", 2048, 1), mlp="swiglu", norm="rmsnorm", position="rope",
        # RotaryEmbedding(rotary_dim // 2) rotates the first half of each head, the rest passes (apply_rotary_pos_emb)
        rotary_fraction=0.5,
        tied_embeddings=c.opt_bool("tie_word_embeddings", False),
        qkv_bias=c.opt_bool("add_qkv_bias", False) or linear_bias, out_bias=linear_bias, mlp_bias=linear_bias,
    )


def _internlm2(c: ConfigReader) -> dict[str, Any]:
    """InternLM2 / 2.5 remote code (modeling_internlm2.py): fused wqkv and wo with bias = `bias`
    (class default true), feed_forward w1/w3/w2 without bias."""
    kw = _gqa_core(c)
    bias = c.opt_bool("bias", True)
    return dict(kw, qkv_bias=bias, out_bias=bias)


def _internlm3(c: ConfigReader) -> dict[str, Any]:
    """InternLM3 (modeling_internlm3.py): Llama shapes with head_dim; q/k/v bias = qkv_bias, o_proj and MLP
    bias = bias."""
    kw = _gqa_core(c)
    bias = c.opt_bool("bias", False)
    return dict(kw, qkv_bias=c.opt_bool("qkv_bias", False), out_bias=bias, mlp_bias=bias)


def _baichuan(c: ConfigReader) -> dict[str, Any]:
    """Baichuan / Baichuan 2 remote code (modeling_baichuan.py): fused W_pack (q, k, v) without bias, o_proj,
    SwiGLU gate/up/down; 13B uses ALiBi instead of RoPE (no parameters either way); NormHead lm_head has
    the same weights as a Linear."""
    return _gqa_core(c)


_NEMOTRON_H_IRRELEVANT = _ROPE | _DROPOUT | {
    "layer_norm_epsilon", "norm_eps", "rms_norm_eps", "rescale_prenorm_residual", "residual_in_fp32",
    "time_step_floor", "time_step_max", "time_step_min", "time_step_limit", "time_step_rank", "mamba_ssm_cache_dtype",
    "num_logits_to_keep", "use_mamba_kernels", "sliding_window", "mamba_hidden_act", "expand", "use_bias",
    "use_conv_bias", "n_group", "topk_group", "norm_topk_prob", "routed_scaling_factor", "n_shared_experts",
    "mamba_chunk_size"}


def _latent_moe(c: ConfigReader, hidden: int) -> int:
    """LatentMoE's width (Nemotron 3 Super / Ultra: moe_latent_size; absent, null or 0: none): Megatron-Core projects
    each token from the hidden size to it before the dispatch and back after the combine (Megatron-Bridge
    models/nemotronh/nemotron_h_bridge.py at 067f987df maps it to the provider's moe_latent_size and
    fc1_latent_proj / fc2_latent_proj; ModelArch.moe_latent says what runs at which width). A latent wider than the
    hidden size is refused: it would be no projection down (docs/known-gaps.md 247)."""
    latent = c.opt_int("moe_latent_size", 0, 0, note=False)
    if latent > hidden:
        raise SpecError(c.where("moe_latent_size"), msg("moe_latent_wider", hidden=hidden), value=latent)
    return latent


_BLOCK_TYPE_SYMBOLS = {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}  # transformers NemotronHConfig words


def _hybrid_mtp(c: ConfigReader, pattern: str) -> dict[str, Any]:
    """A Nemotron-H MTP head: num_nextn_predict_layers modules, each a block of its own pattern
    (mtp_hybrid_override_pattern '*E', or transformers' list form mtp_layers_block_type ["attention", "moe"], its
    default; Megatron-Bridge nemotron_h_bridge.py _hf_mtp_config at 067f987df) with eh_proj and its norms: ModelArch
    mtp_layers / mtp_pattern (docs/known-gaps.md 247)."""
    from trainsizer.models.hybrid import check_layer_pattern

    c.used.update({"mtp_hybrid_override_pattern", "mtp_layers_block_type"})
    depth = c.opt_int("num_nextn_predict_layers", 0, 0, note=False)
    if not depth:
        return {}
    key, block = "mtp_hybrid_override_pattern", c.raw.get("mtp_hybrid_override_pattern")
    if block is None:
        key, words = "mtp_layers_block_type", c.raw.get("mtp_layers_block_type", ["attention", "moe"])
        if not isinstance(words, list) or any(w not in _BLOCK_TYPE_SYMBOLS for w in words):
            raise SpecError(c.where(key), msg("hybrid_mtp_block_words", allowed=Listing(_BLOCK_TYPE_SYMBOLS)),
                            value=words)
        block = "".join(_BLOCK_TYPE_SYMBOLS[w] for w in words)
    if not isinstance(block, str) or not block:
        raise SpecError(c.where(key), msg("hf_string"), value=block)
    check_layer_pattern(block, len(block), c.where(key))
    if any(s not in pattern for s in block):  # weighed by the stack's own layers (estimate.mamba.mtp_block_layers)
        raise SpecError(c.where(key), msg("hybrid_mtp_kinds", pattern=pattern), value=block)
    return {"mtp_layers": depth, "mtp_pattern": block}


def _nemotron_h(c: ConfigReader) -> dict[str, Any]:
    """NemotronH (transformers modeling_nemotron_h.py; Megatron-Core MambaModel): one block per layer after
    hybrid_override_pattern (M Mamba-2 mixer, * attention, - MLP, E MoE), each with its own RMSNorm. The mixer's
    d_inner is mamba_num_heads x mamba_head_dim (`expand` is not read by the modeling code); attention is GQA with
    head_dim (or attention_head_dim); MLPs use mlp_hidden_act (relu2: squared ReLU, two matrices); MoE layers route
    to n_routed_experts (top num_experts_per_tok, sigmoid scores with a correction bias) beside one shared MLP of
    moe_shared_expert_intermediate_size."""
    from trainsizer.models.hybrid import check_layer_pattern, check_mixer

    layers = c.req_int("num_hidden_layers")
    c.used.add("hybrid_override_pattern")
    pattern = c.raw.get("hybrid_override_pattern")
    if not isinstance(pattern, str):
        raise SpecError(c.where("hybrid_override_pattern"), msg("hf_string"), value=pattern)
    check_layer_pattern(pattern, layers, c.where("hybrid_override_pattern"))
    hidden, heads = c.req_int("hidden_size"), c.req_int("num_attention_heads")
    kv_heads = c.opt_int("num_key_value_heads", heads, 1, note=False)
    if heads % kv_heads:
        raise SpecError(c.where("num_key_value_heads"), msg("hf_must_divide_heads", heads=heads), value=kv_heads)
    key = "head_dim" if c.has("head_dim") or not c.has("attention_head_dim") else "attention_head_dim"
    c.used.update({"head_dim", "attention_head_dim"})
    head_dim = c.opt_int(key, hidden // heads, 1)
    act = c.opt_str("mlp_hidden_act", c.opt_str("hidden_act", "relu2"))
    if act != "relu2":
        c.notes.append(msg("hf_plain_mlp", key="mlp_hidden_act", act=repr(act)))
    bias = c.opt_bool("attention_bias", False)
    if c.opt_bool("mamba_proj_bias", False):
        raise SpecError(c.where("mamba_proj_bias"), msg("hybrid_proj_bias"), value=True)
    latent = _latent_moe(c, hidden)
    mtp = _hybrid_mtp(c, pattern)
    kw: dict[str, Any] = dict(
        layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads, head_dim=head_dim,
        vocab=c.req_int("vocab_size"), max_position=c.opt_int("max_position_embeddings", 4096, 1),
        mlp="relu2", norm="rmsnorm", position="rope",
        ffn=c.opt_int("intermediate_size", 0, 0, note=False),
        tied_embeddings=c.opt_bool("tie_word_embeddings", False), qkv_bias=bias, out_bias=bias,
        mlp_bias=c.opt_bool("mlp_bias", False), layer_pattern=pattern, **mtp)
    if "M" in pattern:
        kw.update(ssm_heads=c.req_int("mamba_num_heads"), ssm_head_dim=c.req_int("mamba_head_dim"),
                  ssm_state=c.req_int("ssm_state_size"), ssm_groups=c.opt_int("n_groups", 8, 1),
                  ssm_conv=c.opt_int("conv_kernel", 4, 1), ssm_chunk=c.opt_int("chunk_size", 128, 1))
        check_mixer(kw["ssm_heads"], kw["ssm_groups"], c.where("n_groups"))
    if "-" in pattern and kw["ffn"] < 1:
        raise SpecError(c.where("intermediate_size"), msg("hf_missing_key"))
    if "E" in pattern:
        experts, k = c.req_int("n_routed_experts"), c.req_int("num_experts_per_tok")
        _check_topk(c, "num_experts_per_tok", k, experts)
        kw.update(experts=experts, experts_per_token=k, expert_ffn=c.req_int("moe_intermediate_size"),
                  shared_expert_ffn=c.opt_int("moe_shared_expert_intermediate_size", 0, 0, note=False),
                  router_bias=True, router_fp32=True,  # Megatron-Bridge NemotronHModelProvider moe_router_dtype "fp32"
                  moe_latent=latent)
    c.used.update({"mamba_num_heads", "mamba_head_dim", "ssm_state_size", "n_groups", "conv_kernel", "chunk_size",
                   "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size",
                   "moe_shared_expert_intermediate_size"})
    return kw


_GRANITE_HYBRID_IRRELEVANT = _ROPE | _DROPOUT | {
    "rms_norm_eps", "normalization_function", "embedding_multiplier", "logits_scaling", "residual_multiplier",
    "attention_multiplier", "router_aux_loss_coef", "output_router_logits", "position_embedding_type",
    "time_step_limit", "time_step_min", "time_step_max", "time_step_floor", "init_method"}


def _granite_hybrid(c: ConfigReader) -> dict[str, Any]:
    """GraniteMoeHybrid (transformers modeling_granitemoehybrid.py, Granite 4.0 H): each decoder layer is a mixer
    (layer_types: mamba or attention, after input_layernorm) and then, after post_attention_layernorm, the shared SwiGLU
    MLP of shared_intermediate_size plus, with num_local_experts > 0, the routed SwiGLU experts of intermediate_size
    (top num_experts_per_tok, softmax router without bias). Written as Megatron-Core's pattern, two blocks per layer:
    M or *, then E (MoE + shared MLP) or - (the shared MLP alone). The mixer: d_inner = mamba_expand x hidden,
    mamba_n_heads heads of mamba_d_head (auto: d_inner / heads), mamba_n_groups, mamba_d_state, mamba_d_conv."""
    from trainsizer.models.hybrid import check_mixer

    n = c.req_int("num_hidden_layers")
    c.used.add("layer_types")
    kinds = c.raw.get("layer_types")
    if not isinstance(kinds, list) or len(kinds) != n or any(k not in ("mamba", "attention") for k in kinds):
        raise SpecError(c.where("layer_types"), msg("hybrid_layer_types", layers=n), value=kinds)
    hidden, heads = _mha_width(c, "hidden_size", "num_attention_heads")
    kv_heads = c.opt_int("num_key_value_heads", heads, 1, note=False)
    if heads % kv_heads:
        raise SpecError(c.where("num_key_value_heads"), msg("hf_must_divide_heads", heads=heads), value=kv_heads)
    _gated_act(c)
    experts = c.opt_int("num_local_experts", 0, 0, note=False)
    shared = c.req_int("shared_intermediate_size")
    pattern = "".join(("M" if k == "mamba" else "*") + ("E" if experts else "-") for k in kinds)
    if c.opt_bool("mamba_proj_bias", False):
        raise SpecError(c.where("mamba_proj_bias"), msg("hybrid_proj_bias"), value=True)
    c.opt_bool("mamba_conv_bias", True)
    inner = c.opt_int("mamba_expand", 2, 1) * hidden
    ssm_heads = c.opt_int("mamba_n_heads", 128, 1)
    head_dim = c.raw.get("mamba_d_head", "auto")
    c.used.add("mamba_d_head")
    head_dim = inner // ssm_heads if head_dim in ("auto", None) else c.req_int("mamba_d_head")
    groups = c.opt_int("mamba_n_groups", 1, 1)
    check_mixer(ssm_heads, groups, c.where("mamba_n_groups"))
    bias = c.opt_bool("attention_bias", False)
    kw: dict[str, Any] = dict(
        layers=2 * n, hidden=hidden, heads=heads, kv_heads=kv_heads, vocab=c.req_int("vocab_size"),
        max_position=c.opt_int("max_position_embeddings", 4096, 1), mlp="swiglu", norm="rmsnorm", position="rope",
        ffn=shared, tied_embeddings=c.opt_bool("tie_word_embeddings", False), qkv_bias=bias, out_bias=bias,
        layer_pattern=pattern, ssm_heads=ssm_heads, ssm_head_dim=head_dim, ssm_state=c.opt_int("mamba_d_state", 256, 1),
        ssm_groups=groups, ssm_conv=c.opt_int("mamba_d_conv", 4, 1), ssm_chunk=c.opt_int("mamba_chunk_size", 256, 1))
    if experts:
        k = c.req_int("num_experts_per_tok")
        _check_topk(c, "num_experts_per_tok", k, experts)
        kw.update(experts=experts, experts_per_token=k, expert_ffn=c.req_int("intermediate_size"),
                  shared_expert_ffn=shared)
    c.used.update({"num_experts_per_tok", "intermediate_size"})
    c.notes.append(msg("hybrid_granite_layers", n=n, blocks=2 * n))
    return kw


def _alternating(n: int, period: int) -> list[str]:
    """transformers' alternating layer_types default: every `period`-th layer full, the others sliding
    (GptOssConfig / Gemma2Config period 2, Olmo3Config 4, Gemma3TextConfig sliding_window_pattern, 6)."""
    return ["full_attention" if (i + 1) % period == 0 else "sliding_attention" for i in range(n)]


def _window_layers(c: ConfigReader, n: int, window_default: int, default: list[str], described: str,
                   *, read_types: bool = True) -> dict[str, Any]:
    """sliding_window (the window; absent: the configuration class's default `window_default`, noted; null or 0:
    no window) and layer_types (transformers >= 4.54: one of sliding_attention / full_attention per layer; absent:
    the class's `default`, noted as `described`) -> the ModelArch keys sliding_window and window_layers. A family
    whose modeling file windows every layer (Mistral, Mixtral, Phi-3) passes read_types False: MistralConfig only
    warns about layer_types, its attention takes config.sliding_window on every layer."""
    c.used.update({"sliding_window", "layer_types"})
    kinds = c.raw.get("layer_types") if read_types else None
    if kinds is not None and (not isinstance(kinds, list) or len(kinds) != n or any(
            k not in ("sliding_attention", "full_attention") for k in kinds)):
        raise SpecError(c.where("layer_types"), msg("hf_layer_types", layers=n), value=kinds)
    absent = "sliding_window" not in c.raw
    window = window_default if absent else c.opt_int("sliding_window", 0, 0, note=False)
    windowed = (kinds or default).count("sliding_attention")
    if not window or not windowed:
        return {}
    if absent:
        c.notes.append(msg("hf_default_used", key="sliding_window", default=window_default))
    if kinds is None and read_types:
        c.notes.append(msg("hf_default_used", key="layer_types", default=described))
    return dict(sliding_window=window, window_layers=windowed)


def _every_layer_window(c: ConfigReader, n: int, window_default: int) -> dict[str, Any]:
    """Mistral / Mixtral / Phi-3 (modeling_mistral.py: sliding_window=config.sliding_window on every layer):
    MistralConfig's default 4096 (Mistral 7B v0.1; v0.2 and later publish null), MixtralConfig's and Phi3Config's
    None."""
    return _window_layers(c, n, window_default, ["sliding_attention"] * n, "", read_types=False)


def _qwen_window(c: ConfigReader, n: int) -> dict[str, Any]:
    """Qwen2 / Qwen3 and their MoE configs (configuration_qwen2.py): sliding_window (default 4096) only when
    use_sliding_window (default false), on the layers from max_window_layers (default 28) on, unless layer_types
    lists them."""
    c.used.update({"sliding_window", "layer_types", "max_window_layers"})
    if not c.opt_bool("use_sliding_window", False):
        return {}
    first = c.opt_int("max_window_layers", 28, 0)
    kinds = ["full_attention" if i < first else "sliding_attention" for i in range(n)]
    return _window_layers(c, n, 4096, kinds, f"sliding from layer {first} (max_window_layers)")


def _yarn_mscale(factor: float, mscale: float = 1.0) -> float:
    """transformers modeling_rope_utils get_mscale (YaRN, Peng et al. 2023): 0.1 x mscale x ln(factor) + 1 above 1."""
    return 0.1 * mscale * math.log(factor) + 1.0 if factor > 1.0 else 1.0


def _yarn_attention_factor(c: ConfigReader) -> float:
    """YaRN's attention factor from rope_scaling as transformers computes it (modeling_rope_utils.py
    _compute_yarn_parameters): attention_factor when given, else get_mscale(factor, mscale) / get_mscale(factor,
    mscale_all_dim) when both are given (DeepSeek-V3, Kimi K2: 1.0), else get_mscale(factor); 1.0 for other rope
    types. Megatron-Core's _yarn_get_concentration_factor is the same rule (yarn_rotary_pos_embedding.py)."""
    rope = c.raw.get("rope_scaling")
    if not isinstance(rope, Mapping) or (rope.get("rope_type") or rope.get("type")) != "yarn":
        return 1.0
    def num(key: str) -> float | None:
        v = rope.get(key)
        return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v > 0 else None
    factor = num("factor") or 1.0
    given, mscale, all_dim = num("attention_factor"), num("mscale"), num("mscale_all_dim")
    if given is not None:
        return given
    if mscale is not None and all_dim is not None:
        return _yarn_mscale(factor, mscale) / _yarn_mscale(factor, all_dim)
    return _yarn_mscale(factor)


_GPT_OSS_IRRELEVANT = _ROPE | _DROPOUT | {
    "rms_norm_eps", "router_aux_loss_coef", "output_router_logits", "swiglu_limit", "swiglu_alpha",
    "initial_context_length", "experts_per_token"}


def _gpt_oss(c: ConfigReader) -> dict[str, Any]:
    """GptOss (transformers modeling_gpt_oss.py, gpt-oss-20b / -120b): GQA with head_dim, q/k/v/o biases
    (attention_bias), a learned sink logit per head (`sinks`: heads x layers parameters, one extra softmax column,
    not counted: a note says so); every layer is MoE: router Linear(hidden, num_local_experts) with bias, top
    num_experts_per_tok (`experts_per_token` is the same figure in OpenAI's own key), experts of intermediate_size with
    biases (gate_up_proj_bias, down_proj_bias) and a clamped SwiGLU (swiglu_limit: activation_clamp; swiglu_alpha
    elementwise, costed as SwiGLU); layer_types alternate sliding (sliding_window) and full attention; YaRN RoPE
    (rope_scaling factor 32: attention factor 0.1 ln 32 + 1 = 1.35, rope_attention_factor)."""
    kw = _gqa_core(c, head_dim_default=64)
    experts = c.req_int("num_local_experts")
    k = c.req_int("num_experts_per_tok")
    _check_topk(c, "num_experts_per_tok", k, experts)
    bias = c.opt_bool("attention_bias", True)
    c.notes.append(msg("hf_gpt_oss_sinks", params=f"{kw['heads'] * kw['layers']:,}"))
    if isinstance(c.raw.get("quantization_config"), Mapping):
        c.notes.append(msg("hf_released_quantized", method=str(c.raw["quantization_config"].get("quant_method"))))
    return dict(kw, ffn=0, experts=experts, experts_per_token=k, expert_ffn=kw["ffn"], qkv_bias=bias, out_bias=bias,
                mlp_bias=True, router_bias=True, activation_clamp=c.has("swiglu_limit"),
                rope_attention_factor=_yarn_attention_factor(c), **_window_layers(c, kw["layers"], 128, _alternating(kw["layers"], 2),
                                                          "1 full_attention every 2 layers"))


_OLMO_IRRELEVANT = _ROPE | _DROPOUT | {"rms_norm_eps", "clip_qkv"}


def _olmo(version: int) -> Adapter:
    def adapter(c: ConfigReader) -> dict[str, Any]:
        """OLMo 2 / OLMo 3 (transformers modeling_olmo2.py / modeling_olmo3.py; OLMo-core reordered_norm block):
        Llama shapes (head_dim = hidden / heads unless given), q/k/v/o bias = attention_bias, SwiGLU MLP without
        bias; the two RMSNorms sit after attention and after the MLP (on the branch, before the residual add) instead
        of before them: the same weights, costed like pre-norm; q_norm / k_norm are RMSNorms over the whole q and k
        projections (heads x head_dim and kv_heads x head_dim wide), not per head: ModelArch counts 2 x head_dim, the
        rest is noted. OLMo 3 adds layer_types (3 sliding of every 4 by default) over sliding_window."""
        kw = _gqa_core(c)
        bias = c.opt_bool("attention_bias", False)
        kw = dict(kw, qkv_bias=bias, out_bias=bias, qk_norm=True)
        extra = (kw["heads"] + kw["kv_heads"] - 2) * kw["head_dim"] * kw["layers"]
        c.notes.append(msg("hf_olmo_norms", params=f"{extra:,}"))
        if version == 3:
            kw.update(_window_layers(c, kw["layers"], 4096, _alternating(kw["layers"], 4),
                                     "1 full_attention every 4 layers"))
        return kw

    return adapter


_GLM4_MOE_IRRELEVANT = _ROPE | _DROPOUT | {
    "rms_norm_eps", "routed_scaling_factor", "n_group", "topk_group", "norm_topk_prob", "output_router_logits",
    "router_aux_loss_coef", "decoder_sparse_step"}  # decoder_sparse_step: an early Glm4MoeConfig key no modeling reads


def _glm4_moe(c: ConfigReader) -> dict[str, Any]:
    """Glm4Moe (transformers modeling_glm4_moe.py; GLM-4.5, GLM-4.5-Air, GLM-4.6): GQA with head_dim, q/k/v bias =
    attention_bias (o_proj none), per-head q_norm / k_norm when use_qk_norm, partial rotary (no parameters); layers
    before first_k_dense_replace use a dense SwiGLU of intermediate_size, the others route to n_routed_experts of
    moe_intermediate_size (top num_experts_per_tok; sigmoid router in fp32 with e_score_correction_bias, as
    DeepseekV3TopkRouter) beside one shared MLP of n_shared_experts x moe_intermediate_size;
    num_nextn_predict_layers MTP modules are sized as DeepSeek-V3's (not in the headline count); Glm4MoeConfig's
    partial_rotary_factor defaults to 0.5."""
    kw = _gqa_core(c, head_dim_default=128, rotary_default=0.5)
    key = next((k for k in ("n_routed_experts", "num_experts", "num_local_experts") if c.has(k)), "n_routed_experts")
    c.used.update({"n_routed_experts", "num_experts", "num_local_experts"})
    experts = c.req_int(key)
    k = c.req_int("num_experts_per_tok")
    _check_topk(c, "num_experts_per_tok", k, experts)
    expert_ffn = c.req_int("moe_intermediate_size")
    layers = kw["layers"]
    dense = c.opt_int("first_k_dense_replace", 1, 0)
    if dense > layers:
        raise SpecError(c.where("first_k_dense_replace"), msg("hf_layer_index_too_big", layers=layers), value=dense)
    return dict(
        kw, qkv_bias=c.opt_bool("attention_bias", False), qk_norm=c.opt_bool("use_qk_norm", False),
        experts=experts, experts_per_token=k, expert_ffn=expert_ffn,
        shared_expert_ffn=c.opt_int("n_shared_experts", 1, 0) * expert_ffn, dense_layers=dense, moe_layer_offset=0,
        router_bias=True, router_fp32=True, mtp_layers=c.opt_int("num_nextn_predict_layers", 0, 0, note=False))


_LLAMA4_IRRELEVANT = _ROPE | _DROPOUT | {
    "rms_norm_eps", "output_router_logits", "router_aux_loss_coef", "router_jitter_noise", "no_rope_layers",
    "no_rope_layer_interval", "attn_temperature_tuning", "floor_scale", "attn_scale", "use_qk_norm"}


def _llama4_text(c: ConfigReader) -> dict[str, Any]:
    """Llama4TextConfig (transformers modeling_llama4.py): GQA with head_dim, q/k/v/o bias = attention_bias; the
    layers in moe_layers (default every interleave_moe_layer_step-th) route each token to num_experts_per_tok of
    num_local_experts SwiGLU experts of intermediate_size (no biases, router without bias) beside one shared SwiGLU
    of intermediate_size, the others use a dense SwiGLU of intermediate_size_mlp; use_qk_norm is a weightless L2
    norm and NoPE layers (no_rope_layers) skip the rotary embedding: neither changes parameters or GEMMs;
    layer_types chunked_attention (default: the RoPE layers) attend within blocks of attention_chunk_size."""
    kw = _gqa_core(c)
    layers = kw["layers"]
    bias = c.opt_bool("attention_bias", False)
    experts = c.req_int("num_local_experts")
    k = c.opt_int("num_experts_per_tok", 1, 1)
    _check_topk(c, "num_experts_per_tok", k, experts)
    step = c.opt_int("interleave_moe_layer_step", 1, 1)
    moe = c.opt_int_list("moe_layers") if c.has("moe_layers") else tuple(range(step - 1, layers, step))
    if any(i >= layers for i in moe):
        raise SpecError(c.where("moe_layers"), msg("hf_layer_index_too_big", layers=layers), value=list(moe))
    kw = dict(kw, ffn=c.opt_int("intermediate_size_mlp", 16384, 1), qkv_bias=bias, out_bias=bias, experts=experts,
              experts_per_token=k, expert_ffn=kw["ffn"], shared_expert_ffn=kw["ffn"], moe_every=1, moe_layer_offset=1,
              mlp_only_layers=tuple(i for i in range(layers) if i not in set(moe)))
    return dict(kw, **_chunk_layers(c, layers))


def _chunk_layers(c: ConfigReader, n: int) -> dict[str, Any]:
    """layer_types chunked_attention / full_attention (Llama4TextConfig default: chunked unless every 4th layer)
    -> attention_chunk (attention_chunk_size; null: no chunking) and chunk_layers."""
    c.used.add("layer_types")
    kinds = c.raw.get("layer_types")
    if kinds is None:
        kinds = ["full_attention" if (i + 1) % 4 == 0 else "chunked_attention" for i in range(n)]
        c.notes.append(msg("hf_default_used", key="layer_types", default="1 full_attention every 4 layers"))
    if not isinstance(kinds, list) or len(kinds) != n or any(
            k not in ("chunked_attention", "full_attention") for k in kinds):
        raise SpecError(c.where("layer_types"), msg("hf_layer_types_chunked", layers=n), value=kinds)
    chunk = c.opt_int("attention_chunk_size", 0, 0, note=False)
    chunked = kinds.count("chunked_attention")
    return dict(attention_chunk=chunk, chunk_layers=chunked) if chunk and chunked else {}


def _llama4(c: ConfigReader) -> dict[str, Any]:
    """Llama4Config (multimodal): the language model is text_config; the vision tower and projector are not sized."""
    c.used.add("tie_word_embeddings")
    return _text_config(c, "llama4_text", _llama4_text, "hf_llama4_text_config", "hf_llama4_vision_not_counted")


# Architectures that are not (only) transformers: their recurrences / state-space layers have no formulas here.
# model_type -> (kind: message hf_arch_<kind>, name)
NON_TRANSFORMER = {
    "mamba": ("ssm", "Mamba"), "mamba2": ("ssm", "Mamba-2"), "falcon_mamba": ("ssm", "Falcon Mamba"),
    "rwkv": ("rnn", "RWKV"), "rwkv5": ("rnn", "RWKV-5"), "rwkv6": ("rnn", "RWKV-6"), "rwkv7": ("rnn", "RWKV-7"),
    "recurrent_gemma": ("rnn", "Griffin / RecurrentGemma"), "xlstm": ("rnn", "xLSTM"),
    "retnet": ("retention", "RetNet"), "hyena": ("long_conv", "Hyena"),
    "striped_hyena": ("hybrid_hyena", "StripedHyena"), "jamba": ("hybrid_mamba", "Jamba"),
    "zamba": ("hybrid_mamba", "Zamba"), "zamba2": ("hybrid_mamba2", "Zamba2"), "bamba": ("hybrid_mamba2", "Bamba"),
    "falcon_h1": ("hybrid_mamba2", "Falcon-H1"), "lfm2": ("hybrid_conv", "LFM2"),
    # transformers whose attention has no formula here (modeling_qwen3_next.py, MiniMax-Text-01 / M1 remote code,
    # DeepSeek-V3.2-Exp inference/model.py)
    "qwen3_next": ("linear_gated_deltanet", "Qwen3-Next"), "minimax": ("lightning", "MiniMax-Text-01"),
    "minimax_m1": ("lightning", "MiniMax-M1"), "deepseek_v32": ("sparse_dsa", "DeepSeek-V3.2"),
    # 2026 families of Megatron-Bridge's model-verification cards (docs/known-gaps.md 240): Qwen3.5 / 3.6 / 3.8 keep
    # Qwen3-Next's Gated DeltaNet layers (Megatron-Bridge models/qwen/qwen35_bridge.py experimental_attention_variant
    # "gated_delta_net"; the VLM configs' model_type qwen3_5 / qwen3_5_moe, the text configs' *_text), GLM-5 adds
    # DSA to MLA (models/glm_moe_dsa/glm5_bridge.py), DeepSeek-V4 compresses and sparsifies attention and adds
    # hyper-connections (models/deepseek/deepseek_v4_bridge.py: CompressedSparseAttention, CSAIndexer,
    # HyperConnectionModule), all at Megatron-Bridge 067f987df
    "qwen3_5": ("linear_gated_deltanet", "Qwen3.5 / Qwen3.8"),
    "qwen3_5_text": ("linear_gated_deltanet", "Qwen3.5 / Qwen3.8"),
    "qwen3_5_moe": ("linear_gated_deltanet", "Qwen3.5 / Qwen3.6 MoE"),
    "qwen3_5_moe_text": ("linear_gated_deltanet", "Qwen3.5 / Qwen3.6 MoE"),
    "glm_moe_dsa": ("sparse_dsa", "GLM-5 / GLM-5.2"),
    "deepseek_v4": ("compressed_sparse", "DeepSeek-V4"),
}


_DEEPSEEK_IRRELEVANT = (
    _ROPE
    | _DROPOUT
    | {
        "rms_norm_eps",
        "pretraining_tp",
        "ep_size",
        "routed_scaling_factor",
        "n_group",
        "topk_group",
        "norm_topk_prob",
        "scoring_func",
        "aux_loss_alpha",
        "seq_aux",
        "rope_interleave",
        "output_router_logits",
        "head_dim",  # transformers' native DeepseekV3Config sets head_dim = qk_rope_head_dim; shapes use the MLA dims
        "qk_head_dim",
    }
)

_LLAMA_LIKE = COMMON_IRRELEVANT | _LLAMA_IRRELEVANT | _SLIDING | {"attn_implementation", "head_dim"}
_GEMMA_IRRELEVANT = _LLAMA_LIKE | {"query_pre_attn_scalar", "final_logit_softcapping",
                                   "cache_implementation", "hidden_activation", "hidden_act"}
_GEMMA3_IRRELEVANT = frozenset({"rope_local_base_freq", "sliding_window_pattern", "use_bidirectional_attention"})
_CHATGLM_IRRELEVANT = COMMON_IRRELEVANT | _DROPOUT | {
    "apply_query_key_layer_scaling", "apply_residual_connection_post_layernorm", "attention_softmax_in_fp32",
    "bias_dropout_fusion", "fp32_residual_connection", "layernorm_epsilon", "original_rope", "post_layer_norm",
    "rmsnorm", "rope_ratio", "quantization_bit", "pre_seq_len", "prefix_projection", "classifier_dropout"}

FAMILIES: dict[str, Family] = {
    f.model_type: f
    for f in (
        Family("llama", _llama, COMMON_IRRELEVANT | _LLAMA_IRRELEVANT, "Llama 2 / 3 / 3.1"),
        Family("nemotron_h", _nemotron_h, COMMON_IRRELEVANT | _NEMOTRON_H_IRRELEVANT,
               "Nemotron-H / Nemotron 3 (hybrid Mamba-2 / attention, MoE)"),
        Family("granitemoehybrid", _granite_hybrid, COMMON_IRRELEVANT | _GRANITE_HYBRID_IRRELEVANT,
               "Granite 4.0 H (hybrid Mamba-2 / attention, MoE)"),
        Family("gpt_oss", _gpt_oss, COMMON_IRRELEVANT | _GPT_OSS_IRRELEVANT,
               "gpt-oss (MoE, alternating sliding-window / full attention)"),
        Family("olmo2", _olmo(2), COMMON_IRRELEVANT | _OLMO_IRRELEVANT, "OLMo 2 (post-norm placement, QK-norm)"),
        Family("olmo3", _olmo(3), COMMON_IRRELEVANT | _OLMO_IRRELEVANT,
               "OLMo 3 (OLMo 2 with sliding-window layers)"),
        Family("glm4_moe", _glm4_moe, COMMON_IRRELEVANT | _GLM4_MOE_IRRELEVANT,
               "GLM-4.5 / GLM-4.5-Air / GLM-4.6 (MoE, shared expert, MTP)"),
        Family("llama4_text", _llama4_text, COMMON_IRRELEVANT | _LLAMA4_IRRELEVANT,
               "Llama 4 text model (MoE, chunked attention)"),
        Family("llama4", _llama4, COMMON_IRRELEVANT, "Llama 4 (multimodal config: its text model is sized)"),
        Family("kimi_k2", _deepseek(3), COMMON_IRRELEVANT | _DEEPSEEK_IRRELEVANT,
               "Kimi K2 (DeepSeek-V3 architecture under its own model_type)"),
        Family("mistral", _mistral, COMMON_IRRELEVANT | _LLAMA_IRRELEVANT | _SLIDING, "Mistral 7B"),
        Family(
            "mixtral", _mixtral, COMMON_IRRELEVANT | _LLAMA_IRRELEVANT | _SLIDING | _MOE_ROUTING, "Mixtral MoE"
        ),
        Family("qwen2", _qwen2, COMMON_IRRELEVANT | _LLAMA_IRRELEVANT | _SLIDING | {"use_mrope"}, "Qwen2 / 2.5"),
        Family("qwen3", _qwen3, COMMON_IRRELEVANT | _LLAMA_IRRELEVANT | _SLIDING, "Qwen3 dense"),
        Family(
            "qwen2_moe", _qwen2_moe, COMMON_IRRELEVANT | _LLAMA_IRRELEVANT | _SLIDING | _MOE_ROUTING, "Qwen2-MoE"
        ),
        Family(
            "qwen3_moe", _qwen3_moe, COMMON_IRRELEVANT | _LLAMA_IRRELEVANT | _SLIDING | _MOE_ROUTING, "Qwen3-MoE"
        ),
        Family("deepseek_v2", _deepseek(2), COMMON_IRRELEVANT | _DEEPSEEK_IRRELEVANT, "DeepSeek-V2 (MLA, MoE)"),
        Family("deepseek_v3", _deepseek(3), COMMON_IRRELEVANT | _DEEPSEEK_IRRELEVANT, "DeepSeek-V3 (MLA, MoE, MTP)"),
        Family("gemma2", _gemma2, _GEMMA_IRRELEVANT, "Gemma 2"),
        Family("gemma3_text", _gemma3_text, _GEMMA_IRRELEVANT | _GEMMA3_IRRELEVANT, "Gemma 3 (text model)"),
        Family("gemma3", _gemma3, COMMON_IRRELEVANT, "Gemma 3 (multimodal config: its text model is sized)"),
        Family("phi3", _phi3, _LLAMA_LIKE | {"original_max_position_embeddings"}, "Phi-3 / 3.5 / Phi-4"),
        Family("glm", _glm4(True, sandwich=False), _LLAMA_LIKE, "GLM-4 (transformers `glm`, GLM-4-9B-hf)"),
        Family("glm4", _glm4(True, sandwich=True), _LLAMA_LIKE, "GLM-4-0414 / GLM-Z1"),
        Family("chatglm", _chatglm, _CHATGLM_IRRELEVANT, "ChatGLM2/3, GLM-4-9B (THUDM remote code)"),
        Family("internlm2", _internlm2, _LLAMA_LIKE, "InternLM2 / 2.5 (remote code)"),
        Family("internlm3", _internlm3, _LLAMA_LIKE, "InternLM3"),
        Family("baichuan", _baichuan, _LLAMA_LIKE | {"z_loss_weight", "model_max_length"}, "Baichuan / Baichuan 2"),
        Family("yi", _llama, COMMON_IRRELEVANT | _LLAMA_IRRELEVANT, "Yi (Llama architecture; early configs)"),
        Family(
            "gpt2",
            _gpt2,
            COMMON_IRRELEVANT
            | _DROPOUT
            | {
                "layer_norm_epsilon",
                "scale_attn_weights",
                "scale_attn_by_inverse_layer_idx",
                "reorder_and_upcast_attn",
                "summary_type",
                "summary_use_proj",
                "summary_activation",
                "summary_proj_to_labels",
                "summary_first_dropout",
            },
            "GPT-2 style (learned positions, tied embeddings); also GPT-3 and Megatron GPT presets",
        ),
        Family(
            "gpt_neox",
            _gpt_neox,
            COMMON_IRRELEVANT
            | _ROPE
            | _DROPOUT
            | {
                "rotary_pct",
                "rotary_emb_base",
                "layer_norm_eps",
                "classifier_dropout",
                "rotary_emb_dim",
            },
            "GPT-NeoX / Pythia",
        ),
    )
}


def supported_families() -> list[str]:
    return sorted(FAMILIES)


# ---------------------------------------------------------------------------------------------- entry points
def read_config_file(path: str | Path) -> tuple[dict[str, Any], Path]:
    """Read a `config.json` (or the `config.json` inside a folder). Local files only."""
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / "config.json"
    if not p.is_file():
        raise SpecError(str(p), msg("hf_no_config"))
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:  # where, and the parser's problem in the reader's language
        raise SpecError(f"{p}:{exc.lineno}:{exc.colno}", msg("hf_not_json", detail=parse_problem(exc.msg))) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(str(p), msg("hf_not_json", detail=str(exc))) from None
    if not isinstance(raw, dict):
        raise SpecError(str(p), msg("hf_top_not_object"), value=given(raw))
    return raw, p


def arch_from_hf_config(
    config: str | Path | Mapping[str, Any],
    *,
    name: str | None = None,
    source: str | None = None,
) -> ModelArch:
    """Parse a Hugging Face `config.json` (path, folder or parsed mapping) into a `ModelArch`.

    Unknown keys end up in `ModelArch.unknown_keys` and in one line of `ModelArch.notes`.
    """
    if isinstance(config, Mapping):
        raw, label = dict(config), source or "config"
    else:
        raw, path = read_config_file(config)
        label = str(path)
        if name is None:
            name = path.parent.name if path.name == "config.json" and path.parent.name else path.stem
    model_type = raw.get("model_type")
    if model_type is None:
        raise SpecError(f"{label}:model_type", msg("hf_missing_key"), allowed=supported_families())
    if not isinstance(model_type, str):  # a list or mapping here is not hashable: no TypeError traceback
        raise SpecError(f"{label}:model_type", msg("hf_string"), value=model_type, allowed=supported_families())
    if model_type in NON_TRANSFORMER:
        kind, name = NON_TRANSFORMER[model_type]
        raise SpecError(f"{label}:model_type", msg("hf_not_transformer", model_type=model_type,
                                                   kind=msg(f"hf_arch_{kind}"), name=name),
                        allowed=supported_families())
    if model_type not in FAMILIES:
        raise unknown_name(f"{label}:model_type", "model_type (model family)", str(model_type), FAMILIES,
                           limit=len(FAMILIES))
    family = FAMILIES[model_type]
    reader = ConfigReader(raw, label)
    kwargs = family.adapter(reader)
    unknown = reader.unknown(family.irrelevant)
    notes = list(reader.notes)
    if unknown:
        notes.append(msg("hf_unknown_keys", n=len(unknown), model_type=model_type, keys=Listing(unknown)))
    return ModelArch(
        name=name or str(raw.get("_name_or_path") or model_type),
        family=model_type,
        source=source or label,
        notes=tuple(notes),
        unknown_keys=unknown,
        **kwargs,
    )
