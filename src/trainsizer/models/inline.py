"""Inline model architectures (a mapping in a job file) -> `ModelArch`.

Keys are the `ModelArch` field names; `preset: <name>` starts from a shipped preset and overrides some
fields. Unknown keys and inconsistent values raise `SpecError` naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from trainsizer.errors import SpecError, did_you_mean
from trainsizer.messages import Listing, Msg, msg
from trainsizer.models.arch import ModelArch

Pos = Field(default=None, ge=1)
NonNeg = Field(default=None, ge=0)


class InlineModelSpec(BaseModel):
    """The accepted keys; `None` means "not given" (preset value, or the rule in `to_arch`)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    preset: str | None = None
    name: str | None = None
    family: str | None = None
    layers: int | None = Pos
    hidden: int | None = Pos
    heads: int | None = Pos
    kv_heads: int | None = Pos
    ffn: int | None = NonNeg
    vocab: int | None = Pos
    head_dim: int | None = Pos
    mlp: Literal["swiglu", "gelu", "relu2"] | None = None
    norm: Literal["rmsnorm", "layernorm"] | None = None
    position: Literal["rope", "learned", "alibi"] | None = None
    max_position: int | None = Pos
    tied_embeddings: bool | None = None
    qkv_bias: bool | None = None
    out_bias: bool | None = None
    mlp_bias: bool | None = None
    activation_clamp: bool | None = None
    rope_attention_factor: float | None = Field(default=None, gt=0)
    rotary_fraction: float | None = Field(default=None, gt=0, le=1)
    qk_norm: bool | None = None
    sandwich_norms: bool | None = None
    attention_softcap: bool | None = None
    parallel_residual: bool | None = None
    experts: int | None = NonNeg
    experts_per_token: int | None = NonNeg
    expert_ffn: int | None = NonNeg
    shared_expert_ffn: int | None = NonNeg
    shared_expert_gate: bool | None = None
    dense_layers: int | None = NonNeg
    moe_every: int | None = Pos
    moe_layer_offset: int | None = NonNeg
    mlp_only_layers: list[int] | None = None
    router_bias: bool | None = None
    router_fp32: bool | None = None
    moe_latent: int | None = NonNeg  # LatentMoE's width (ModelArch.moe_latent; 0: the experts on the hidden size)
    expert_groups: int | None = Pos  # group-limited routing (ModelArch.expert_groups)
    expert_groups_per_token: int | None = Pos
    attention: Literal["gqa", "mla"] | None = None
    q_lora_rank: int | None = NonNeg
    kv_lora_rank: int | None = NonNeg
    qk_nope_head_dim: int | None = NonNeg
    qk_rope_head_dim: int | None = NonNeg
    v_head_dim: int | None = NonNeg
    mtp_layers: int | None = NonNeg
    mtp_pattern: str | None = None  # a hybrid MTP module's symbols (ModelArch.mtp_pattern; "" = the last layer)
    sliding_window: int | None = NonNeg
    window_layers: int | None = NonNeg
    attention_chunk: int | None = NonNeg
    chunk_layers: int | None = NonNeg
    # hybrid Mamba-2 / attention (ModelArch.layer_pattern; Megatron-Core hybrid_override_pattern)
    layer_pattern: str | None = None
    ssm_heads: int | None = NonNeg  # 0: no Mamba-2 mixer (a pattern with M layers needs > 0)
    ssm_head_dim: int | None = NonNeg
    ssm_state: int | None = NonNeg
    ssm_groups: int | None = Pos
    ssm_conv: int | None = Pos
    ssm_chunk: int | None = Pos


_KEYS = tuple(InlineModelSpec.model_fields)
_REQUIRED = ("layers", "hidden", "heads", "vocab")


def _validation_error(where: str, exc: ValidationError, given: Mapping[str, Any]) -> SpecError:
    err = exc.errors()[0]
    key = ".".join(str(p) for p in err["loc"])
    top = str(err["loc"][0]) if err["loc"] else ""
    if err["type"] == "extra_forbidden":
        return SpecError(
            f"{where}.{key}", msg("model_unknown_key"), allowed=_KEYS, suggestion=did_you_mean(top, _KEYS)
        )
    from trainsizer.spec.load import pydantic_problem

    if err["type"] == "literal_error":
        expected = str((err.get("ctx") or {}).get("expected", ""))
        choices = [c.strip().strip("'") for c in expected.replace(" or ", ", ").split(",") if c.strip()]
        value = given.get(top, err.get("input"))
        return SpecError(f"{where}.{key}", msg("spec_not_allowed"), value=value, allowed=choices,
                         suggestion=did_you_mean(str(value), choices))
    return SpecError(f"{where}.{key}", pydantic_problem(err), value=given.get(top, err.get("input")))


def arch_from_inline(spec: Mapping[str, Any], *, where: str = "model") -> ModelArch:
    """Validate an inline architecture and build the `ModelArch`."""
    try:
        parsed = InlineModelSpec.model_validate(dict(spec))
    except ValidationError as exc:
        raise _validation_error(where, exc, spec) from None
    given = {k: v for k, v in parsed.model_dump().items() if v is not None and k != "preset"}
    if "mlp_only_layers" in given:
        given["mlp_only_layers"] = tuple(sorted(given["mlp_only_layers"]))

    if parsed.preset is not None:
        from trainsizer.models.shipped import load_preset

        base = load_preset(parsed.preset, where=f"{where}.preset")
        values = {f.name: getattr(base, f.name) for f in fields(ModelArch)}
        if "hidden" in given or "heads" in given:
            if "head_dim" not in given and base.attention == "gqa":
                values["head_dim"] = 0  # re-derive from the new hidden / heads
        if "heads" in given and "kv_heads" not in given and base.kv_heads == base.heads:
            values["kv_heads"] = given["heads"]
        values.update(given)
        values["notes"] = (*base.notes, msg("model_preset_overrides", preset=base.name, keys=Listing(sorted(given))))
        values["unknown_keys"] = ()
        if "name" not in given:
            values["name"] = f"{base.name}+custom"
    else:
        missing = [k for k in _REQUIRED if k not in given]
        if missing:
            raise SpecError(f"{where}.{missing[0]}", msg("model_required_key"))
        values = dict(given)
        values.setdefault("name", "custom")
        values.setdefault("family", "custom")
        values.setdefault("kv_heads", values["heads"])
        values.setdefault("ffn", 0)
        if values.get("position", "rope") != "learned":  # 0: no positions stated (a learned table needs its size)
            values.setdefault("max_position", 0)
        values["source"] = "inline"
    _check(values, where)
    return ModelArch(**values)


def _check(v: dict[str, Any], where: str) -> None:
    def bad(key: str, problem: Msg) -> SpecError:
        return SpecError(f"{where}.{key}", problem, value=v.get(key))

    layers, hidden, heads = v["layers"], v["hidden"], v["heads"]
    kv_heads = v.get("kv_heads", heads)
    attention = v.get("attention", "gqa")
    if attention == "gqa":
        if not v.get("head_dim") and hidden % heads:
            raise bad("heads", msg("model_heads_divide_hidden", hidden=hidden))
        if kv_heads > heads or heads % kv_heads:
            raise bad("kv_heads", msg("model_must_divide_heads", heads=heads))
    else:
        for key in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            if not v.get(key):
                raise bad(key, msg("model_required_for_mla"))
    experts = v.get("experts", 0)
    k = v.get("experts_per_token", 0)
    if experts:
        if k < 1:
            raise bad("experts_per_token", msg("model_experts_per_token_min"))
        if k > experts:
            raise bad("experts_per_token", msg("model_exceeds", what="experts", n=experts))
        if not v.get("expert_ffn"):
            raise bad("expert_ffn", msg("model_required_with_experts"))
        groups = v.get("expert_groups", 1)
        if experts % groups:
            raise bad("expert_groups", msg("model_must_divide_experts", experts=experts))
        if v.get("expert_groups_per_token", 1) > groups:
            raise bad("expert_groups_per_token", msg("model_exceeds", what="expert_groups", n=groups))
        if v.get("moe_latent", 0) > hidden:
            raise bad("moe_latent", msg("moe_latent_wider", hidden=hidden))
    else:
        for key in ("experts_per_token", "expert_ffn", "shared_expert_ffn", "dense_layers", "moe_latent"):
            if v.get(key):
                raise bad(key, msg("model_only_with_experts"))
        for key in ("expert_groups", "expert_groups_per_token"):
            if v.get(key, 1) > 1:
                raise bad(key, msg("model_only_with_experts"))
    if v.get("dense_layers", 0) > layers:
        raise bad("dense_layers", msg("model_exceeds", what="layers", n=layers))
    out_of_range = [i for i in v.get("mlp_only_layers", ()) if not 0 <= i < layers]  # -1 would match no layer
    if out_of_range:
        raise SpecError(f"{where}.mlp_only_layers", msg("model_layer_index_outside", last=layers - 1),
                        value=out_of_range, allowed=msg("model_layer_indices_below", layers=layers))
    if v.get("window_layers", 0) > layers:
        raise bad("window_layers", msg("model_exceeds", what="layers", n=layers))
    if v.get("window_layers", 0) and not v.get("sliding_window"):
        raise bad("window_layers", msg("model_window_layers_need_window"))
    if v.get("chunk_layers", 0) and not v.get("attention_chunk"):
        raise bad("chunk_layers", msg("model_chunk_layers_need_chunk"))
    if v.get("window_layers", 0) + v.get("chunk_layers", 0) > layers:  # a layer is windowed or chunked, not both
        raise bad("chunk_layers", msg("model_window_chunk_exceed", layers=layers))
    pattern = v.get("layer_pattern", "")
    if pattern:
        _check_hybrid(v, where)
    elif v.get("mtp_pattern"):
        raise bad("mtp_pattern", msg("hybrid_mtp_kinds", pattern=""))
    probe = ModelArch(**v)
    dense = [i for i in range(layers) if probe.layer_kind(i) in ("layer", "mlp") and not probe.layer_is_moe(i)]
    if dense and not v.get("ffn"):
        raise bad("ffn", msg("model_ffn_required", layer=dense[0]))


def _check_hybrid(v: dict[str, Any], where: str) -> None:
    """A hybrid layer pattern: its symbols and length, the Mamba-2 mixer's widths where it has M layers, experts where
    it has E layers (models/hybrid.py)."""
    from trainsizer.models.hybrid import check_layer_pattern, check_mixer

    pattern = v["layer_pattern"]
    check_layer_pattern(pattern, v["layers"], f"{where}.layer_pattern")
    if "M" in pattern:
        for key in ("ssm_heads", "ssm_head_dim", "ssm_state"):
            if not v.get(key):
                raise SpecError(f"{where}.{key}", msg("hybrid_needs_mixer", key=key), value=v.get(key))
        check_mixer(v["ssm_heads"], v.get("ssm_groups", 1), f"{where}.ssm_groups")
    if "E" in pattern and not v.get("experts"):
        raise SpecError(f"{where}.experts", msg("hybrid_needs_experts"), value=v.get("experts"))
    block = v.get("mtp_pattern", "")
    if block:  # an MTP module's layers are of the stack's kinds (estimate.mamba.mtp_block_layers weighs them so)
        check_layer_pattern(block, len(block), f"{where}.mtp_pattern")
        if any(s not in pattern for s in block):
            raise SpecError(f"{where}.mtp_pattern", msg("hybrid_mtp_kinds", pattern=pattern), value=block)
