"""Activation memory: the tensors autograd saves for backward, tensor by tensor, per decoder layer.

Each layer kind (dense / MoE; GQA / MLA) is described as a list of named saved tensors with a width in
elements per token and a dtype; the total is split by how parallelism divides it (see `LayerItems`).
A tensor is counted once per storage (a view shares its base's storage). PyTorch saves an operand only when
the gradient that needs it is required, so a frozen (LoRA) base does not keep the inputs of its un-adapted
linears, but keeps everything non-linear ops need to pass gradients to earlier adapters.

Origins (one line each):
- Per-layer bytes s*b*h*(34 + 5*a*s/h), with TP (10 + 24/t), SP (34/t), selective recompute (drops
  5as^2b/t), full recompute (2sbh): Korthikanti et al. 2022 (arXiv:2205.05198) Sec. 4, Table 2, Eqs. 1-6.
- 1F1B keeps p micro-batches in flight on the first stage; interleaving multiplies by (1 + (p-1)/(p*v)):
  Korthikanti et al. 2022 Sec. 4.2.3; in-flight counts from Megatron-LM `schedules.py`
  (num_warmup_microbatches = (p - r - 1) * 2 + (v - 1) * p for the interleaved schedule).
- FlashAttention saves q, k, v, the output and the fp32 log-sum-exp, no s^2 tensor: Dao 2023
  (FlashAttention-2, arXiv:2307.08691) Sec. 3.1 (backward recomputes P).
- Eager attention (transformers `eager_attention_forward`): softmax in fp32 saved, its 16-bit copy saved by
  P @ V, K/V expanded to all heads by `repeat_kv`.
- RMSNorm eager (transformers `LlamaRMSNorm`): fp32 upcast + rsqrt saved, 16-bit normalised saved by the
  weight multiply; fused norms (Transformer Engine / Apex) save the input and fp32 rstd.
- SwiGLU: transformers `LlamaMLP` saves gate, act(gate), up, act*up; Megatron `fused_bias_swiglu` saves the
  fc1 output (2f) and the fc2 input (f).
- MoE dispatch (tokens x top-k routed slots, fp32 router probabilities, int64 indices): transformers
  `Qwen2MoeSparseMoeBlock`; Megatron-Core `MoEAlltoAllTokenDispatcher`.
- MLA (compressed q / kv with their own norms): DeepSeek-V2 paper (arXiv:2405.04434) Sec. 2.1.2 and
  transformers `DeepseekV3Attention`.
- FP8 (precision fp8, Transformer Engine): TE `Linear` / `LayerNormLinear` / `LayerNormMLP` save the FP8-cast
  GEMM input for the weight-gradient GEMM instead of the 16-bit input (TE pytorch/module/linear.py
  `ctx.save_for_backward(inputmat_no_fp8 if ... not fp8_wgrad else None, inputmat_t if ... fp8_wgrad ...)`;
  layernorm_linear.py saves the quantized `ln_out`), so GEMM inputs count 1 B/element. Everything else stays
  16-bit: norm inputs + fp32 rstd, attention core q/k/v/output + fp32 LSE (fp8_dpa off, the TE default),
  softmax, SwiGLU/GeLU inputs (fc1 output), residual and recompute checkpoints, LoRA outputs, the LM-head input
  (Megatron's output layer is not a TE module). Where the attention core keeps its 16-bit output, the output
  projection's FP8 copy is an extra 1 B/element.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from trainsizer.estimate.flops import op_sac_gate_kept, op_sac_moe_linears
from trainsizer.estimate.inputs import Training, act_bytes
from trainsizer.estimate.model_states import (
    load_memory_constants,
    lora_dropout_on_output,
    lora_layer_widths,
    lora_targets,
    trainable,
)
from trainsizer.models.arch import ModelArch
from trainsizer.names import FP4_RECIPES

ATTENTION_IMPLS = ("flash", "sdpa", "eager")


@dataclass(frozen=True)
class LayerItems:
    """Saved bytes per token of one layer and one micro-batch, split by what divides them.

    sp: per-token tensors not split by TP (divided by TP only under sequence parallelism).
    tp: split by TP (head- and ffn-wide tensors).
    s2: per token per key (eager attention scores), split by TP.
    routed: per routed token-slot (tokens x top-k), split by expert TP (= TP).
    detail: the named items (bytes per token; routed items per slot, s2 items per key).
    """

    sp: float
    tp: float
    s2: float
    routed: float
    detail: dict[str, float] = field(default_factory=dict)


def attention_impl(training: Training, override: str | None = None) -> str:
    """Attention kernel: `flash` (FlashAttention-2 / cuDNN / TE) when training.flash_attention, else `eager`."""
    if override:
        return override
    return "flash" if training.flash_attention else "eager"


def _norm(width: int, a: int, weight_trainable: bool, kind: str, style: str) -> float:
    """Saved bytes per token of one norm (excluding the following linear's input)."""
    if style == "fused":  # TE / Apex fused norm: input + fp32 rstd (+ mean for LayerNorm)
        return a * width + (8 if kind == "layernorm" else 4)
    if kind == "layernorm":  # torch native_layer_norm saves input, mean, rstd
        return a * width + 8
    # transformers LlamaRMSNorm (eager): fp32 copy (pow / mul) + rsqrt, and 16-bit normalised (weight mul)
    return 4 * width + 4 + (a * width if weight_trainable else 0)


def norm_bytes(model: ModelArch, training: Training, style: str) -> float:
    """Saved bytes per token of one of a layer's norms under a norm kernel style: fused (input + fp32 statistics)
    or eager (transformers LlamaRMSNorm: the fp32 upcast, rsqrt and the 16-bit output)."""
    return _norm(model.hidden, act_bytes(training.precision), training.trains_base_weights, model.norm, style)


@dataclass
class _Saved:
    """Running tally of one layer's saved tensors: named items and their totals by what divides them."""

    detail: dict[str, float] = field(default_factory=dict)
    sp: float = 0.0
    tp: float = 0.0
    s2: float = 0.0
    routed: float = 0.0

    def items(self) -> LayerItems:
        return LayerItems(sp=self.sp, tp=self.tp, s2=self.s2, routed=self.routed, detail=self.detail)


@dataclass(frozen=True)
class _Layer:
    """One layer kind under one (training, profile, recompute, kernel): what its saved tensors depend on."""

    model: ModelArch
    training: Training
    profile: str
    recompute: str
    impl: str
    dropout: bool
    style: dict  # memory_constants.yaml framework_profiles[profile]
    deepep_experts: bool = False  # routed experts behind DeepEP (`_moe_mlp`): Megatron's per-slot layout
    base_inputs_saved: bool = False  # QLoRA on bitsandbytes < 0.43.2: every 4-bit linear keeps its input (`W`)

    @property
    def a(self) -> int:
        return act_bytes(self.training.precision)

    @property
    def g(self) -> float:
        """Bytes per element of a saved GEMM input (FP8: the TE cast, see module docstring)."""
        return saved_gemm_input_bytes(self.training, self.model)

    def W(self, module: str) -> bool:
        """Whether `module`'s input is saved: its weight (or its adapter) is trained, or it is a 4-bit linear of
        bitsandbytes < 0.43.2, whose MatMul4Bit keeps its input A whenever A needs a gradient, though the backward
        never reads it (autograd/_functions.py MatMul4Bit.forward `ctx.tensors = (A, B)` at 0.41.0-0.43.1; 9e753741,
        #1270, 2024-07-16, keeps `(None, B)` from 0.43.2)."""
        return self.base_inputs_saved or trainable(module, self.training)

    def norm(self, width: int, kind: str | None = None) -> float:
        return _norm(width, self.a, self.training.trains_base_weights, kind or self.model.norm, self.style["norm"])

    def lora_out(self, *mods: str) -> float:
        """lora_B saves lora_A's output (r wide) for each adapted linear (MLA: q = q_a + q_b)."""
        t = lora_targets(self.training)
        lora_r = self.training.lora_rank if t else 0
        mla = self.model.attention == "mla"
        mult = {"q_proj": 2 if mla and self.model.q_lora_rank else 1, "k_proj": 1, "v_proj": 1}
        n = 0
        qkv = [m for m in mods if m in mult]
        if qkv and "qkv_proj" in t:
            n += sum(mult[m] for m in qkv) if mla else 1
        else:
            n += sum(mult[m] for m in qkv if m in t)
        n += sum(1 for m in mods if m not in mult and m in t)
        return float(self.a * lora_r * n)


def layer_items(
    model: ModelArch,
    training: Training,
    *,
    moe: bool,
    profile: str,
    recompute: str,
    impl: str,
    dropout: bool = False,
    style: dict | None = None,
    deepep_experts: bool = False,
    base_inputs_saved: bool = False,
) -> LayerItems:
    """Saved-for-backward bytes per token of one decoder layer (one micro-batch).

    `profile`: hf (transformers eager modules) or megatron (Megatron-Core + Transformer Engine);
    `recompute`: none / selective (attention core recomputed) / full (only the layer input is kept);
    `impl`: flash (FlashAttention-2 / cuDNN / TE fused attention) / sdpa (torch scaled_dot_product_attention
    flash or memory-efficient kernels: same saved tensors as flash) / eager (materialised softmax);
    `deepep_experts`: the routed experts run behind DeepEP on a PyTorch-native stack (`_moe_mlp`);
    `base_inputs_saved`: every frozen linear keeps its input (QLoRA on bitsandbytes < 0.43.2: `_Layer.W`).
    """
    from trainsizer.estimate.model_states import load_memory_constants

    a = act_bytes(training.precision)
    if recompute == "full":
        return LayerItems(sp=a * model.hidden, tp=0.0, s2=0.0, routed=0.0,
                          detail={"layer_input_checkpoint": a * model.hidden})
    x = _Layer(model, training, profile, recompute, impl, dropout,
               style or load_memory_constants()["framework_profiles"][profile], deepep_experts, base_inputs_saved)
    if model.is_hybrid:
        return _hybrid_items(x, moe)
    out = _Saved()
    _attention(x, out)
    out.detail["mlp_norm"] = x.norm(model.hidden)
    out.sp += out.detail["mlp_norm"]
    if model.sandwich_norms:  # the norms on the attention and MLP outputs save what a pre-norm does (no linear reads them)
        out.detail["post_attn_norm"] = out.detail["post_mlp_norm"] = x.norm(model.hidden)
        out.sp += 2.0 * x.norm(model.hidden)
    if moe:
        _moe_mlp(x, out)
    else:
        _dense_mlp(x, out)
    _lora_dropout(x, moe, out)
    return out.items()


def _lora_dropout(x: _Layer, moe: bool, out: _Saved) -> None:
    """LoRA dropout (lora.dropout > 0): native_dropout saves a 1-byte mask per element it drops over, on the adapter's
    output (d_out: NeMo AutoModel's dropout_position 'post'), or on its input (d_in: PEFT / torchtune, whose A then
    saves the dropped copy, act bytes, beside the input the other consumers keep); memory_constants.yaml
    lora.dropout_on_output names the side. Dense adapters split by TP, routed-expert ones per slot."""
    if x.training.lora_dropout <= 0:
        return
    d_in, d_out, e_in, e_out, _ = lora_layer_widths(x.model, x.training, moe)
    on_out = lora_dropout_on_output(x.training)
    if not on_out:
        d_in -= _shared_qkv_dropout_excess(x, moe)
    per = 1.0 if on_out else 1.0 + x.a
    dense, routed = per * (d_out if on_out else d_in), per * (e_out if on_out else e_in)
    if dense:
        out.detail["lora_dropout"] = dense
        out.tp += dense
    if routed:
        k = max(x.model.experts_per_token, 1)
        out.detail["lora_dropout_per_slot"] = routed / k
        out.routed += routed / k


def _shared_qkv_dropout_excess(x: _Layer, moe: bool) -> float:
    """Input width counted past the first of the q / k / v adapters where one dropout of the layer input serves them
    all (memory_constants.yaml lora.dropout_shared_qkv: LitGPT's LoRAQKVLinear, one mask and one dropped copy)."""
    if x.training.lora_impl not in load_memory_constants()["lora"]["dropout_shared_qkv"]:
        return 0.0
    if "qkv_proj" in lora_targets(x.training):  # the fused target is one linear already
        return 0.0
    qkv_in = lora_layer_widths(x.model, x.training, moe, only=("q_proj", "k_proj", "v_proj"))[0]
    return max(qkv_in - x.model.hidden, 0.0)


def _hybrid_items(x: _Layer, moe: bool) -> LayerItems:
    """A hybrid model's layer (ModelArch.layer_pattern): an E layer (moe) is its norm and the MoE block; otherwise the
    average over the pattern's M, * and - layers (each its own norm and one block: the Mamba-2 mixer's saved tensors,
    estimate.mamba.mixer_saved_items; attention; the dense MLP), weighted by their counts. Megatron-Core's
    recompute_modules drop items by name (`recompute_module_items`), so the names are the transformer layer's."""
    model = x.model
    # each hybrid layer holds one block and one residual dropout (Megatron-Core MambaLayer / TransformerLayer's
    # bias-dropout-add), not a transformer layer's two
    mask = _residual_mask(x)
    if moe:
        out = _Saved()
        out.detail["mlp_norm"] = x.norm(model.hidden)
        out.sp += out.detail["mlp_norm"] + mask
        if mask:
            out.detail["residual_dropout_mask"] = mask
        _moe_mlp(x, out)
        return out.items()
    kinds = []
    if model.mamba_layers:
        from trainsizer.estimate.mamba import mixer_saved_items

        sp, tp, d = mixer_saved_items(model, x.a, x.g, x.norm(model.hidden), x.training.trains_base_weights)
        if mask:
            d["residual_dropout_mask"] = mask
        kinds.append((model.mamba_layers, _Saved(detail=d, sp=sp + mask, tp=tp)))
    if model.attention_layers:
        att = _Saved()
        _attention(x, att)
        att.sp -= att.detail.pop("mlp_residual_dropout_mask", 0.0)
        kinds.append((model.attention_layers, att))
    if model.dense_mlp_layers:
        mlp = _Saved()
        mlp.detail["mlp_norm"] = x.norm(model.hidden)
        mlp.sp += mlp.detail["mlp_norm"] + mask
        if mask:
            mlp.detail["residual_dropout_mask"] = mask
        _dense_mlp(x, mlp)
        kinds.append((model.dense_mlp_layers, mlp))
    n = float(sum(k for k, _ in kinds)) or 1.0
    avg = _Saved()
    for k, part in kinds:
        w = k / n
        avg.sp, avg.tp, avg.s2, avg.routed = (avg.sp + w * part.sp, avg.tp + w * part.tp, avg.s2 + w * part.s2,
                                              avg.routed + w * part.routed)
        for key, v in part.detail.items():
            avg.detail[key] = avg.detail.get(key, 0.0) + w * v
    return avg.items()


def _attention(x: _Layer, out: _Saved) -> None:
    """Attention block: its norm, the QKV inputs (GQA or MLA's compressed q / kv), q, k, v, the core's saved
    tensors (kernel- and recompute-dependent), the output projection's input, LoRA outputs, dropout masks."""
    model, a, g, d = x.model, x.a, x.g, out.detail
    h, nh = model.hidden, model.heads
    d["attn_norm"] = x.norm(h)
    out.sp += d["attn_norm"]
    if model.attention == "mla":
        if x.W("q_proj") or x.W("k_proj"):
            d["attn_input"] = g * h
        rq, rkv = model.q_lora_rank, model.kv_lora_rank
        if rq:
            d["q_a_norm"] = x.norm(rq, "rmsnorm")
            if x.W("q_proj"):
                d["q_b_input"] = g * rq
        d["kv_a_norm"] = x.norm(rkv, "rmsnorm")
        if x.W("v_proj"):
            d["kv_b_input"] = g * rkv
        out.sp += d.get("attn_input", 0.0)
        out.tp += d.get("q_a_norm", 0.0) + d.get("q_b_input", 0.0) + d["kv_a_norm"] + d.get("kv_b_input", 0.0)
        full_k = model.kv_dim
    else:
        if x.W("q_proj") or x.W("k_proj") or x.W("v_proj"):
            d["attn_input"] = g * h
            out.sp += g * h
        full_k = nh * model.head_dim
    lo = x.lora_out("q_proj", "k_proj", "v_proj")
    if lo:
        d["lora_qkv_a_out"] = lo
        out.sp += lo
    core_eager = x.impl == "eager" and x.recompute == "none"
    d["q"] = a * model.q_dim
    if core_eager and model.attention != "mla":
        # repeat_kv expands K and V to every query head before the score matmul
        d["k"] = a * full_k
        d["v"] = a * nh * model.head_dim
    else:
        d["k"] = a * model.kv_dim
        d["v"] = a * model.v_dim
    out.tp += d["q"] + d["k"] + d["v"]
    _attention_core(x, out)
    out.tp += d.get("attn_out", 0.0) + d.get("softmax_lse", 0.0) + d.get("o_proj_input", 0.0)
    lo = x.lora_out("o_proj")
    if lo:
        d["lora_o_a_out"] = lo
        out.sp += lo
    if _residual_mask(x):
        d["attn_residual_dropout_mask"] = d["mlp_residual_dropout_mask"] = _residual_mask(x)
        out.sp += 2 * _residual_mask(x)


def _residual_mask(x: _Layer) -> float:
    """Bytes per token of one residual dropout's mask (torch native_dropout's bool mask, 1 B an element; Korthikanti
    et al. 2022 Table 2, sbh) where MemoryOptions.dropout or the job's hidden_dropout turns it on, else 0."""
    return float(x.model.hidden) if x.dropout or x.training.hidden_dropout > 0 else 0.0


def _attention_core(x: _Layer, out: _Saved) -> None:
    """What the attention core keeps beyond q, k, v: per recompute mode and kernel (s^2 terms under eager)."""
    model, a, g, d, nh = x.model, x.a, x.g, out.detail, x.model.heads
    if x.recompute == "selective":
        # the attention core is checkpointed: its inputs q, k, v are kept; its output is kept by o_proj
        # (Megatron: (s, b, h) layout, used directly) or, in (b, h, s, d) layout, only the reshaped copy
        # that o_proj saves (transformers-style modules).
        if x.profile == "megatron":  # under fp8 only the projection's FP8 copy is saved
            d["attn_out"] = g * model.attn_out_dim
        elif x.W("o_proj"):
            d["o_proj_input"] = g * model.attn_out_dim
    elif x.impl == "eager":
        if x.profile == "hf":
            # fp32 softmax output + its 16-bit copy (same storage when training in fp32)
            d["scores_per_key"] = (4 + (a if a != 4 else 0)) * nh
        else:  # Megatron fused scale-mask-softmax saves its 16-bit output
            d["scores_per_key"] = a * nh
        if x.dropout or x.training.attention_dropout > 0:
            d["attn_dropout_per_key"] = (1 + a) * nh
        out.s2 += d["scores_per_key"] + d.get("attn_dropout_per_key", 0.0)
        if x.W("o_proj"):  # P @ V output permuted to (b, s, h): a copy, saved by o_proj
            d["o_proj_input"] = g * model.attn_out_dim
    else:
        # FlashAttention / SDPA kernels keep their output and the fp32 log-sum-exp per head and token
        # (the kernels return a (b, s, h, d)-laid-out output, so the reshape for o_proj is a view)
        d["attn_out"] = a * model.attn_out_dim
        d["softmax_lse"] = 4 * nh
        fp8 = x.training.precision == "fp8"
        if (x.style.get("attention_out_copy") or fp8) and x.W("o_proj"):
            # a 16-bit reshaped copy (profile), or the FP8 cast the TE projection saves beside the kernel output
            d["o_proj_input"] = g * model.attn_out_dim


def _mlp(x: _Layer, d: dict[str, float], f: int, prefix: str) -> float:
    """Saved bytes of one MLP of inner size f (input excluded), added to `d` under `prefix`."""
    a, g, model = x.a, x.g, x.model
    known = set(d)
    if model.mlp == "swiglu":
        if x.profile == "megatron":
            d[f"{prefix}fc1_out"] = 2 * a * f
            d[f"{prefix}fc2_input"] = g * f
        else:
            d[f"{prefix}gate_out"] = a * f
            d[f"{prefix}act_out"] = a * f
            d[f"{prefix}up_out"] = a * f
            if x.W("down_proj"):
                d[f"{prefix}down_input"] = g * f
    else:
        d[f"{prefix}fc1_out"] = a * f
        if x.W("down_proj") or x.profile == "megatron":
            d[f"{prefix}fc2_input"] = g * f
    total = sum(v for k, v in d.items() if k not in known)
    lo_in = x.lora_out("gate_proj", "up_proj") if model.mlp == "swiglu" else x.lora_out("up_proj")
    lo_out = x.lora_out("down_proj")
    if lo_in + lo_out:
        d[f"{prefix}lora_a_out"] = lo_in + lo_out
        total += lo_in + lo_out
    return total


def _dense_mlp(x: _Layer, out: _Saved) -> None:
    if x.W("gate_proj") or x.W("up_proj"):
        out.detail["mlp_input"] = x.g * x.model.hidden
        out.sp += x.g * x.model.hidden
    out.tp += _mlp(x, out.detail, x.model.ffn, "mlp_")


def _moe_mlp(x: _Layer, out: _Saved) -> None:
    """MoE layer: router (replicated over TP), routed token-slots (per slot: expert input, MLP, routing weight,
    dispatch indices, and under hf the expert output unless behind DeepEP), shared experts. Under LatentMoE the routed
    slots are latent-wide and fc2_latent_proj keeps its input, the combined latent tokens of the rank's sequence share
    (TELinear saves its input; fc1_latent_proj's is the block input, kept once)."""
    model, a, g, d = x.model, x.a, x.g, out.detail
    h, w = model.hidden, model.expert_width
    E, k = model.experts, model.experts_per_token
    if x.training.trains_base_weights or x.W("gate_proj") or x.W("up_proj"):
        d["mlp_input"] = g * h
        out.sp += g * h
    # NeMo AutoModel's FakeBalancedGate (moe_routing fake-balanced) computes no scores: no E-wide probabilities
    d["router_probs_fp32"] = 0 if x.training.moe_routing == "fake-balanced" else 4 * E
    d["router_topk_indices"] = 8 * k
    out.sp += d["router_probs_fp32"] + d["router_topk_indices"]
    if model.moe_latent:
        d["latent_combined"] = g * model.moe_latent
        out.sp += d["latent_combined"]
    per_slot: dict[str, float] = {}
    if x.W("gate_proj") or x.W("up_proj"):
        per_slot["expert_input"] = g * w
    before = dict(d)
    # DeepEP experts on a PyTorch-native stack save what Megatron-Core's do (below): NeMo AutoModel's
    # GroupedExpertsDeepEP (components/moe/layers.py at 8d9bfb90e) runs ops.gmm on the permuted tokens (saves
    # them), the activation with the routing probabilities (weighted_bias_swiglu_impl / quick_geglu_deepep(x,
    # permuted_probs): the fc1 output and the probability), ops.gmm again (its input), and the combine
    # unpermutes without probabilities (token_unpermutation(output2)): no expert output, no weighted copy
    hf = x.profile == "hf" and not x.deepep_experts
    _mlp(x if not x.deepep_experts else dataclasses.replace(x, profile="megatron"), d, model.expert_ffn, "expert_")
    for key in list(d):
        if key not in before:
            per_slot[key] = d.pop(key)
    if hf:
        # transformers multiplies the expert output by its routing weight, which saves that output
        per_slot["expert_output"] = a * w
    # Megatron-Core (r0.13+) applies the routing probabilities inside the expert activation (TEGroupedMLP
    # bias_act_func / weighted_bias_swiglu_impl saves the probability beside the fc1 output it already keeps) and
    # unpermutes without them (token_dispatcher.py token_combine: unpermute(..., no probs)), so no expert
    # output is kept for the combine (megatron/core/transformer/moe/experts.py, core_r0.15.0)
    per_slot["routing_weight"] = a
    if hf:  # index_add_ keeps its source (the weighted expert output) for the backward shape
        per_slot["weighted_output"] = a * w
    # int64 token indices kept by the gather / index_add_ (hf: token and slot index; megatron / DeepEP: one map)
    per_slot["dispatch_indices"] = 16 if hf else 8
    out.routed = sum(per_slot.values())
    for key, v in per_slot.items():
        d[f"routed_{key}_per_slot"] = v
    if model.shared_expert_ffn:
        out.tp += _mlp(x, d, model.shared_expert_ffn, "shared_")
        if model.shared_expert_gate:
            d["shared_gate_sigmoid"] = a
            d["shared_output"] = a * h
            out.sp += a + a * h


def recompute_module_items(model: ModelArch, training: Training, *, moe: bool, modules: tuple[str, ...],
                           impl: str, dropout: bool = False, style: dict | None = None) -> LayerItems:
    """Saved bytes per token of one Megatron-Core layer whose selective recompute re-runs `modules`
    (TransformerConfig.recompute_modules, core_r0.15.0; names.RECOMPUTE_MODULES), from the Megatron profile's
    items without recompute (with the attention core's, "selective", when core_attn is listed):
    - mla_up_proj (MLA): CheckpointWithoutOutput keeps its inputs -- the compressed q and kv and k_pos_emb -- and
      frees q, k, v once the core attention has saved them (multi_latent_attention.py qkv_up_checkpoint,
      discard_output_and_register_recompute); the up projections' inputs and their fused norms' statistics go too;
    - layernorm: the outputs of the norms that are separate modules (MLA's input_layernorm, an MoE layer's
      pre_mlp_layernorm; fused into the next linear elsewhere, where Megatron-Core skips them) are discarded;
    - moe_act: the routed experts' activation output (fc2 input) per slot is discarded (experts.py TEGroupedMLP);
    - mlp (dense layers): the MLP is checkpointed whole; its input is the residual its fused norm kept already;
    - moe: the MoE layer is checkpointed whole: its input (the pre-MLP norm output) is kept, nothing else;
    - shared_experts: the shared experts' fc1 output and fc2 input go."""
    base = layer_items(model, training, moe=moe, profile="megatron",
                       recompute="selective" if "core_attn" in modules else "none", impl=impl, dropout=dropout,
                       style=style)
    d = dict(base.detail)
    a = float(act_bytes(training.precision))
    sp, tp, routed = base.sp, base.tp, base.routed

    def drop(*keys: str) -> float:
        return float(sum(d.pop(k, 0.0) for k in keys))

    if "mla_up_proj" in modules and model.attention == "mla":
        kept = a * ((model.q_lora_rank or 0) + model.kv_lora_rank + model.qk_rope_head_dim)
        tp += kept - drop("q_a_norm", "q_b_input", "kv_a_norm", "kv_b_input", "q", "k", "v")
        d["mla_up_proj_checkpoint_inputs"] = kept
    if "layernorm" in modules:
        sp -= drop(*(("attn_input",) if model.attention == "mla" else ()), *(("mlp_input",) if moe else ()))
    if "moe_act" in modules and moe:
        routed -= drop("routed_expert_fc2_input_per_slot")
    if "mlp" in modules and not moe:
        sp -= drop("mlp_input")
        tp -= drop("mlp_fc1_out", "mlp_fc2_input")
    if "moe" in modules and moe:
        sp += a * model.hidden - drop("mlp_input", "router_probs_fp32", "router_topk_indices", "shared_gate_sigmoid",
                                      "shared_output")
        tp -= drop(*[k for k in d if k.startswith("shared_")])
        drop(*[k for k in d if k.startswith("routed_")])
        routed = 0.0
        d["moe_checkpoint_input"] = a * model.hidden
    elif "shared_experts" in modules and moe:
        tp -= drop("shared_fc1_out", "shared_fc2_input")
    return LayerItems(sp=sp, tp=tp, s2=base.s2, routed=routed, detail=d)


@dataclass(frozen=True)
class HeadItems:
    """Last-stage (final norm, LM head, loss) and first-stage (token ids, RoPE tables) saved bytes/token."""

    final_sp: float  # final norm + LM head input (SP-split)
    logits_saved_per_vocab: float  # x vocab / TP
    logits_extra_per_vocab: float  # live on top of the saved logits while the loss backward runs
    labels: float
    first_sp: float  # token ids kept by a trainable embedding
    rope_per_token: float  # cos/sin tables, one copy shared by all layers of a micro-batch


def head_items(model: ModelArch, training: Training, profile: str) -> HeadItems:
    from trainsizer.estimate.model_states import load_memory_constants

    c = load_memory_constants()
    a = act_bytes(training.precision)
    prof = c["framework_profiles"][profile]
    h = model.hidden
    final = _norm(h, a, training.trains_base_weights, model.norm, prof["norm"])
    if training.trains_base_weights or "lm_head" in lora_targets(training):
        final += a * h
    if "lm_head_adapter" in lora_targets(training):  # the adapter's A saves its (dropped-out) input, B its r-wide input
        final += a * h + (h if training.lora_dropout > 0 else 0.0) + a * training.lora_rank
    lg = c["logits"]
    rope_dim = model.qk_rope_head_dim if model.attention == "mla" else model.head_dim
    return HeadItems(
        final_sp=float(final),
        logits_saved_per_vocab=float(lg[f"{profile}_saved_bytes_per_element"]),
        logits_extra_per_vocab=float(lg[f"{profile}_backward_extra_bytes_per_element"]),
        labels=8.0,
        first_sp=8.0 if (training.trains_base_weights or "embed_tokens" in lora_targets(training)) else 0.0,
        rope_per_token=float(2 * a * rope_dim) if model.position == "rope" else 0.0,
    )


def first_layer_norm_discount(model: ModelArch, training: Training, profile: str) -> float:
    """Bytes/token the first layer's norm does not save when its input needs no gradient (LoRA with a frozen
    embedding and no gradient checkpointing: HF enables input gradients only for checkpointing)."""
    if training.trains_base_weights or "embed_tokens" in lora_targets(training) or profile != "hf":
        return 0.0
    from trainsizer.estimate.model_states import load_memory_constants

    style = load_memory_constants()["framework_profiles"][profile]["norm"]
    return _norm(model.hidden, act_bytes(training.precision), False, model.norm, style)


def in_flight_layer_microbatches(p, v, n_micro, rank):
    """Layer-microbatches of activations held by pipeline rank `rank` at its peak, in units of (L/p layers x
    one micro-batch). 1F1B: min(m, p - r); interleaved with v chunks: min(m*v, 2(p - r - 1) + (v - 1)p + 1)
    chunks of L/(p*v) layers (Megatron-LM schedules.py)."""
    import numpy as np

    p = np.asarray(p, dtype=float)
    v = np.asarray(v, dtype=float)
    n_micro = np.asarray(n_micro, dtype=float)
    plain = np.minimum(n_micro, p - rank)
    chunks = np.minimum(n_micro * v, 2 * (p - rank - 1) + (v - 1) * p + 1)
    inter = chunks / v
    return np.where(v > 1, inter, plain)


def in_flight_chunk_microbatches(p, v, n_micro, rank, chunk):
    """Micro-batches of model chunk `chunk` (0..v-1) whose activations pipeline rank `rank` holds at its peak.
    Interleaved 1F1B runs the forwards in groups of p micro-batches per chunk, the k-th on chunk (k // p) mod v
    (Megatron-Core schedules.py get_model_chunk_id; microbatch_group_size_per_vp_stage = p by default), and the peak
    follows the warm-up forwards plus one (`in_flight_layer_microbatches` x v of them): on the first rank chunk 0
    holds 2p - 1 micro-batches and every other chunk p; on the last rank chunk v - 1 holds one. 1F1B (v = 1): all."""
    import numpy as np

    p = np.asarray(p, dtype=float)
    v = np.asarray(v, dtype=float)
    n_micro = np.asarray(n_micro, dtype=float)
    interleaved = np.minimum(n_micro * v, 2 * (p - rank - 1) + (v - 1) * p + 1)
    forwards = np.where(v > 1, interleaved, np.minimum(n_micro, p - rank))
    rounds = np.floor(forwards / (p * v))
    rest = forwards - rounds * p * v
    return rounds * p + np.clip(rest - np.asarray(chunk, dtype=float) * p, 0.0, p)


def expanded_kv_bytes(model: ModelArch, training: Training) -> float:
    """Bytes per token (before TP) that K and V expanded to every query head add to a block's saved tensors
    beyond the kv-wide K and V its items count: torchtitan's Attention.forward calls repeat_kv (a materialised
    copy) before F.scaled_dot_product_attention, which saves the expanded K and V (torchtitan
    models/llama/model.py 9dec370, December 2024, and models/llama3/model.py to January 2026, when #2259 passed
    enable_gqa instead). 0 for multi-head and MLA attention."""
    if model.attention == "mla":
        return 0.0
    a = float(act_bytes(training.precision))
    return a * max(2 * model.q_dim - model.kv_dim - model.v_dim, 0)


def router_upstream_bytes(items: LayerItems, seq: float) -> tuple[float, float]:
    """(not split by TP, split by TP) bytes per token that a MoE block without recompute saves up to its router's
    output: the attention's items (its norm, the projections' input, q / k / v, the core's saves at `seq` keys, the
    output projection's input), the MLP norm, the router's input, fp32 probabilities and top-k indices; not the routed
    slots', the shared experts' or the latent projection's, which follow the dispatch. `items`: layer_items(...,
    moe=True, recompute="none"). What a non-reentrant checkpoint's re-run graph keeps while a reference to the
    router's output outlives the layer's backward (memory._held_rerun_graphs; docs/known-gaps.md 282 (a))."""
    d = items.detail
    sp_after = sum(d.get(k, 0.0) for k in ("latent_combined", "shared_gate_sigmoid", "shared_output"))
    tp_after = sum(v for k, v in d.items() if k.startswith("shared_")) - d.get("shared_gate_sigmoid", 0.0) - d.get(
        "shared_output", 0.0)
    return items.sp - sp_after, items.tp + items.s2 * seq - tp_after


def op_sac_unsaved_share(training: Training, model: ModelArch) -> float:
    """Share of the decoder layers whose linear layers torchtitan's per-op SAC saves nothing of: the layers a recipe
    in memory_constants.yaml fp8.op_sac_unsaved_linear_recipes converts (torchao's NVFP4: its GEMM and casts are
    not in the save list), all but Training.bf16_layers; 0 otherwise. MoE blocks' routed experts are not converted
    (NVFP4LinearConverter swaps dense Linear only) and keep their saves."""
    if training.precision != "fp8":
        return 0.0
    if training.fp8_recipe not in load_memory_constants()["fp8"].get("op_sac_unsaved_linear_recipes", ()):
        return 0.0
    return low_precision_share(training, model)


def torchtitan_sac_attention_bytes(model: ModelArch, training: Training) -> float:
    """Bytes per token (before TP) of what torchtitan's per-op SAC keeps of the attention op: its output and the
    fp32 log-sum-exp per head (`torchtitan_op_sac_items`); what a release whose save list leaves the SDPA backend
    out does not keep (strategy.sac_saves_attention false, memory._sac_unsaved_attention)."""
    a = float(act_bytes(training.precision))
    q_dim = model.heads * (model.head_dim or model.hidden // model.heads)
    return a * q_dim + 4.0 * model.heads


def torchtitan_op_sac_items(model: ModelArch, training: Training, *, moe: bool) -> LayerItems:
    """Saved bytes per token of one block under torchtitan's per-op selective AC (activation_checkpoint.mode
    "selective", option "op", its default): the block input, and the outputs of the ops in its save list --
    the attention output with its fp32 log-sum-exp and every other matmul in forward order (wq, wv, w1, w2 of
    wq, wk, wv, wo, w1, w3, w2); everything else (norms, RoPE, wk, wo, w3, SiLU, products) is recomputed in
    backward. torchtitan/models/llama3/infra/parallelize.py `_save_list`, `_custom_policy` (mm_count % 2).
    MoE blocks: `_op_sac_moe_items`."""
    if moe:
        return _op_sac_moe_items(model, training)
    a = float(act_bytes(training.precision))
    h = model.hidden
    q_dim = model.heads * (model.head_dim or h // model.heads)
    kept = 1.0 - op_sac_unsaved_share(training, model)  # the share of blocks whose linears' outputs are saved
    sp = a * h + a * h * kept  # block input (checkpoint) + w2 output, sequence-sharded under SP
    tp = kept * (a * q_dim + a * model.kv_dim) + torchtitan_sac_attention_bytes(model, training)  # wq, wv, attention
    tp += kept * a * model.ffn
    return LayerItems(sp=sp, tp=tp, s2=0.0, routed=0.0,
                      detail={"block_input_and_w2_out": sp, "saved_matmul_and_attention_outputs": tp,
                              "routed_expert_outputs": 0.0})


def _op_sac_moe_items(model: ModelArch, training: Training) -> LayerItems:
    """Saved bytes per token of one MoE block under torchtitan's per-op SAC, as its policy runs from 114151ad4
    (2026-03-23; torchtitan/distributed/activation_checkpoint.py `_get_default_save_ops` and `SelectiveAC` at
    b5bcd76c6): it caches the outputs of the ops in its save list -- torch's compute-intensive ops
    (partitioners.get_default_op_list: mm, addmm, bmm, the SDPA kernels, _scaled_mm), linear, topk, the attention
    ops, the collectives -- except every second aten.mm and the router gate's mm (force_recompute_mm_shapes_by_fqns
    "moe.router.gate"). So it keeps: the block input; a biased linear's output (aten.addmm, not counted as an mm:
    gpt-oss's wqkv, wo and router gate); every other unbiased linear's (`_op_sac_linear_bytes`); the attention
    output and log-sum-exp; topk's fp32 values and int64 indices per routed slot. Not the routed experts: their
    torch._grouped_mm is not in the list, so mlp1 / mlp2 are recomputed in backward (models/gpt_oss/moe.py,
    models/common/moe.py at b5bcd76c6; Lambda's profile, gb300/RESULTS_1K.md at 20244c3a: "SelectiveAC does not
    save aten._grouped_mm"). Under EP the dispatch and combine all_to_all outputs are saved too (per strategy:
    memory._titan_sac_a2a_bytes)."""
    a = float(act_bytes(training.precision))
    kept = 1.0 - op_sac_unsaved_share(training, model)  # the share of blocks whose linears' outputs are saved
    lin_sp, lin_tp = _op_sac_linear_bytes(model, a)
    # torchtitan computes the gate under fp32 autocast: a biased gate (addmm) keeps E fp32 scores a token; the
    # router_bias of a model with an fp32 router is DeepSeek-V3's e_score_correction_bias, outside the gate
    gate = 4.0 * model.experts if op_sac_gate_kept(model) else 0.0
    sp = a * model.hidden + kept * lin_sp + gate  # block input (checkpoint), row-parallel outputs, router scores
    tp = kept * lin_tp + torchtitan_sac_attention_bytes(model, training)
    routed = 4.0 + 8.0  # topk's fp32 value and int64 expert index per routed slot
    return LayerItems(sp=sp, tp=tp, s2=0.0, routed=routed,
                      detail={"block_input_linear_outputs_and_router": sp, "saved_matmul_and_attention_outputs": tp,
                              "routed_topk_per_slot": routed})


def _op_sac_linear_bytes(model: ModelArch, a: float) -> tuple[float, float]:
    """(row-parallel, column-parallel) bytes per token of the linear outputs torchtitan's per-op SAC keeps in one
    MoE block (flops.op_sac_moe_linears: a biased linear always, an unbiased one when the policy's mm count is odd;
    `_op_sac_moe_items`). MLA blocks keep the wq / wv estimate (q and kv wide)."""
    kept = {"sp": 0.0, "tp": 0.0}
    for shard, width, _, saved in op_sac_moe_linears(model):
        if saved:
            kept[shard] += a * width
    return kept["sp"], kept["tp"]


def titan_expert_slot_bytes(model: ModelArch, training: Training, *, compiled: bool) -> float:
    """Bytes per routed token-slot that torchtitan's routed experts keep for the backward without recompute (the
    block kept, or re-run under full AC), models/common/moe.py GroupedExperts / models/gpt_oss/moe.py
    GptOssGroupedExperts and token_dispatcher.py at b5bcd76c6: the gathered input of the grouped GEMMs (hidden wide),
    the combine's product of the expert output with its routing score, taken in fp32 (routed_output.to(float32) *
    score: the fp32 copy kept), and, eager, the SwiGLU's operands -- silu(x w1) * (x w3): the w1 output, its SiLU, the
    w3 output and the product (w2's input); gpt-oss's clamped interleaved SwiGLU (activation_clamp): the mlp1 output
    (2 f, kept whole by the clamps' strided views), both clamped halves, the sigmoid, the gated half and w2's input.
    Compiled (the whole block, min-cut partitioner) the element-wise ops are recomputed: the input, the fc1 output
    (2 f), w2's input and the 16-bit expert output are kept. Plus the sorted token index, the expert order and the
    scatter index (int64) and the sorted fp32 score. Measured: benchmarks/titan_sac_moe_saves.py (torch 2.13, CPU)."""
    a = float(act_bytes(training.precision))
    h, f = model.expert_width, model.expert_ffn  # a routed slot's width (LatentMoE: the latent)
    ints = 3 * 8.0 + 4.0
    if compiled:
        return 2 * a * h + 3 * a * f + ints
    return a * h + 4.0 * h + (7 if model.activation_clamp else 4) * a * f + ints


def deepseek_selective_items(model: ModelArch, training: Training, *, moe: bool) -> LayerItems:
    """Saved bytes per token of one layer under DeepSeek-V3's memory savings (framework deepseek-dualpipe,
    recompute "selective"): DeepSeek-V3 report (arXiv:2412.19437) s3.2.3 "recompute all RMSNorm operations and
    MLA up-projections during back-propagation" -- so the norms keep only their inputs, MLA keeps its compressed
    latents (q_a and kv_a outputs) instead of q, k, v, and the attention core regenerates q, k, v in backward --
    and s3.3.2 low-precision storage: the input of the linear after attention cached in E5M6 (also used by the
    attention backward, with the fp32 log-sum-exp), the inputs of the MoE SwiGLU cached in FP8 (fine-grained,
    one fp32 scale per 128) with the SwiGLU output recomputed, the activations before the MoE up-projections
    quantised to FP8. Dense MLPs (the leading dense layers) keep Megatron's fc1 output and fc2 input; routed
    token-slots keep the expert output and routing weight for the combine (memory_constants.yaml `deepseek`)."""
    from trainsizer.estimate.model_states import load_memory_constants

    c = load_memory_constants()["deepseek"]
    a = float(act_bytes(training.precision))
    fp8 = training.precision == "fp8"
    cache = float(c["fp8_cache_bytes_per_element"]) if fp8 else a  # FP8 caching needs FP8 training
    attn_out = float(c["attention_output_bytes_per_element"]) if fp8 else a
    h = model.hidden
    sp = 2 * a * h  # inputs of the two recomputed RMSNorms (the residual stream)
    if model.attention == "mla":  # compressed latents the up-projections are recomputed from
        latents = a * ((model.q_lora_rank or h) + model.kv_lora_rank + model.qk_rope_head_dim)
    else:  # GQA: q, k, v are the projections' outputs, nothing smaller to recompute them from
        latents = a * (model.q_dim + 2 * model.kv_dim)
    tp = latents + attn_out * model.attn_out_dim + 4.0 * model.heads
    routed = 0.0
    if moe:
        sp += 4.0 * model.experts + 8.0 * model.experts_per_token  # router scores (fp32), top-k indices
        tp += cache * 2 * model.shared_expert_ffn  # shared expert's SwiGLU input
        # per routed slot: FP8 expert input, FP8 SwiGLU input, 16-bit expert output, routing weight, index
        routed = cache * model.expert_width + cache * 2 * model.expert_ffn + a * model.expert_width + a + 8.0
    else:
        g = saved_gemm_input_bytes(training, model)
        tp += 2 * a * model.ffn + g * model.ffn  # fc1 output (SwiGLU input) + fc2 input, as Megatron keeps them
    return LayerItems(sp=sp, tp=tp, s2=0.0, routed=routed,
                      detail={"norm_inputs_and_router": sp, "latents_attention_output_and_mlp": tp,
                              "routed_per_slot": routed})


def saved_gemm_input_bytes(training: Training, model: ModelArch | None = None) -> float:
    """Bytes per element of a linear layer's saved input, averaged over the decoder layers: the 16-bit activation,
    the FP8 cast under FP8 (1 B), the column-wise FP4 copy under fp8_recipe nvfp4 / mxfp4 (memory_constants.yaml fp8
    <recipe>_saved_input_bytes_per_element); the layers Training.bf16_layers keeps in BF16 save 16-bit inputs."""
    a = float(act_bytes(training.precision))
    if training.precision != "fp8":
        return a
    low = float(load_memory_constants()["fp8"][f"{training.fp8_recipe}_saved_input_bytes_per_element"]) \
        if training.fp8_recipe in FP4_RECIPES else 1.0
    share = low_precision_share(training, model) if model is not None else 1.0
    return share * low + (1.0 - share) * a


def low_precision_share(training: Training, model: ModelArch) -> float:
    """Share of the decoder layers that run the low-precision recipe: all but Training.bf16_layers (Megatron-Core
    first_last_layers_bf16: num_layers_at_start_in_bf16 + num_layers_at_end_in_bf16, TransformerBlock builds those
    layers outside the FP8 / FP4 autocast); 1 outside precision fp8."""
    n = int(getattr(training, "bf16_layers", 0) or 0)
    if training.precision != "fp8" or n == 0:
        return 1.0
    if n > model.layers:
        from trainsizer.errors import SpecError
        from trainsizer.messages import msg

        raise SpecError("bf16_layers", msg("bf16_layers_range", n=n, layers=model.layers), value=n,
                        allowed=f"0 to {model.layers}")
    return 1.0 - n / model.layers
