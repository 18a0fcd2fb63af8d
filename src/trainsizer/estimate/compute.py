"""Compute time of one decoder layer, one LM head and one optimizer step on one GPU (vectorised).

Model (each line names its origin):
- GEMM time: soft roofline sqrt(t_flop^2 + t_mem^2) + a fixed per-kernel cost, where t_flop = 2MNK / (peak x
  efficiency_max) and t_mem = bytes(A, B, C) / achieved HBM bandwidth (Williams et al. 2009 roofline; the
  quadratic blend models the partial overlap of load and math near the ridge point). Small per-GPU GEMMs
  after a TP split fall below the ridge point and pay the fixed cost more often, so they run at a lower
  fraction of peak without a per-shape fit.
- Backward GEMMs: dgrad (m x k output, inner n) + wgrad (k x n output, inner m = the tokens; none for frozen
  weights), each timed on its own shape (`linear_gemms`); under the soft roofline each takes the forward's time
  (2x forward, Narayanan 2021 s5.1).
- Fused or split input projections: Megatron fuses q, k, v (and gate, up) into one GEMM; torchtitan, HF and
  torchtune models run them as separate nn.Linear GEMMs, each re-reading the layer input (`split_projections`),
  whose input gradients autograd then sums (`_input_grad_sum`).
- FlashAttention: executed FLOPs = causal share of 4 s d per token and head, at a named fraction of the 16-bit
  peak per accelerator family; backward = 2.5x the forward FLOPs at lower efficiency, 3.1x the time
  (Dao 2023, FlashAttention-2 s3-4).
- Non-flash attention: QK^T and AV as batched GEMMs, softmax/mask/dropout streaming the s x s scores
  (Korthikanti 2022 s4.1: 5 a s^2 b bytes of such activations per layer).
- Element-wise work (norms, residual + dropout, activation, RoPE, cross-entropy, optimizer) at achieved
  HBM bandwidth; backward streams about twice the forward bytes (reads activation and gradient, writes
  gradient). With sequence parallelism the norm/dropout work is split over TP ranks (Korthikanti 2022 s4.2.2).
  Fused kernels (Transformer Engine, torch.compile) are the default; eager PyTorch runs each op as its own
  kernel and re-reads its inputs (`elementwise_passes`, perf_constants.yaml `eager`).
- FP8 training (Transformer Engine, torchao float8): only the linear layers' GEMMs run in FP8 (Micikevicius et
  al. 2022 "FP8 formats for deep learning" s4; TE docs "Using FP8 with Transformer Engine"); attention, the
  LM head and the MoE router stay 16-bit (an fp32 router, DeepSeek, on the FP32 units). Each FP8 GEMM operand is scaled and cast: activations in forward,
  output gradients in backward (`fp8_cast_bytes` HBM bytes per element, by recipe), and the weights (read
  16-bit, write FP8 + its transpose) once per step with an FP8 weight cache, else every micro-batch; each
  tensor cast is 1 kernel (scale known: delayed, MXFP8) or 2 (amax pass first: current scaling), by recipe.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from trainsizer.estimate.calibration import Rates, causal_tiles, load_constants
from trainsizer.estimate.flops import (
    attention_gemm_weights,
    causal_fraction,
    chunk_causal_keys,
    mla_up_proj_weights,
    op_sac_gate_kept,
    op_sac_moe_linears,
)
from trainsizer.models.arch import ModelArch

# memory-bound kernels per pass of each element-wise stage (perf_constants.yaml `kernels:`)
KERNELS: dict[str, float] = {name: float(n) for name, n in load_constants().raw["kernels"].items()}
# HBM bytes per logit element of the cross-entropy, forward and backward (perf_constants.yaml `cross_entropy:`)
CE_BYTES: dict[str, tuple[float, float]] = {name: (float(v["fwd"]), float(v["bwd"]))
                                            for name, v in load_constants().raw["cross_entropy"].items()}


# head dims each FlashAttention generation is compiled for (perf_constants.yaml attention.kernel_head_dims)
KERNEL_HEAD_DIMS: dict[str, tuple[int, ...]] = {
    name: tuple(int(d) for d in dims) for name, dims in load_constants().raw["attention"]["kernel_head_dims"].items()}


def flash_head_dim_ratio(d_qk: int, d_v: int, kernel: Any) -> Any:
    """Executed over actual head-dim width of a FlashAttention kernel: the smallest compiled head dim at or
    above each of d_qk and d_v (the tiles are that wide); 1 for kernels without a list (`native`) and for a
    head dim above the largest. `kernel`: a name or (auto framework) an array of names."""

    def padded(d: int, dims: tuple[int, ...]) -> int:
        return next((k for k in dims if k >= d), d)

    ratio = {name: (padded(d_qk, dims) + padded(d_v, dims)) / float(d_qk + d_v)
             for name, dims in KERNEL_HEAD_DIMS.items()}
    names = np.asarray(kernel)
    if names.ndim == 0:
        return ratio.get(str(names), 1.0)
    out = np.ones(names.shape)  # one comparison per compiled kernel, not a Python call per strategy
    for name, r in ratio.items():
        out[names == name] = r
    return out


def gemm_time(m, n, k, rates: Rates, batch=1.0, fixed: bool = True, linear: bool = True, flops: float = 0.0,
              out_bytes: Any = 0.0):
    """Seconds for `batch` GEMMs of (m x k)(k x n) on one GPU (soft roofline + per-kernel fixed cost).

    `linear`: a linear layer's GEMM (FP8 under FP8 training); False for the 16-bit ones (LM head, router,
    non-flash attention scores). `flops`: another FLOP/s for this GEMM (an fp32 router), 0 = by `linear`.
    `out_bytes`: HBM bytes per output element where not act_bytes (arrays allowed; 0 = act_bytes): a weight
    gradient accumulated into the main gradient (Rates.wgrad_out_bytes)."""
    m, n, k = np.asarray(m, float), np.asarray(n, float), np.asarray(k, float)
    t_flop = 2.0 * m * n * k / (flops or (rates.gemm_flops if linear else rates.gemm16_flops))
    out = np.where(np.asarray(out_bytes, float) > 0, out_bytes, rates.act_bytes)
    t_mem = (rates.act_bytes * (m * k + k * n) + out * m * n) / rates.hbm_bytes_s
    t = batch * np.sqrt(t_flop * t_flop + t_mem * t_mem)
    return t + (rates.kernel_fixed_s if fixed else 0.0)


def linear_gemms(m, n, k, rates: Rates, weights: bool = True, batch=1.0, linear: bool = True, flops: float = 0.0,
                 main_grad: bool = True):
    """(forward, backward) seconds of a linear layer's GEMMs, y (m x n) = x (m x k) W^T: the forward; dgrad
    dx (m x k) = dy W, inner n; and, when the weights train (`weights`), wgrad dW = x^T dy, a k x n output over an
    inner m, the tokens (Narayanan 2021 s5.1: the backward is 2x the forward FLOPs). Each is timed on its own
    shape (the three read and write the same operands, so under the soft roofline each takes the forward's time;
    a shape-dependent GEMM model, benchmarks/gemm_shape.py, sees a narrow layer's wgrad as few output tiles).
    `main_grad`: the wgrad accumulates into the main gradient where the stack fuses that (Rates.wgrad_out_bytes);
    False for a weight whose gradient autograd returns (Megatron-Core's router: RouterGatingLinearFunction)."""
    kw = dict(batch=batch, linear=linear, flops=flops)
    fwd = gemm_time(m, n, k, rates, **kw)
    bwd = gemm_time(m, k, n, rates, **kw)
    if weights:
        bwd = bwd + gemm_time(k, n, m, rates, out_bytes=rates.wgrad_out_bytes if main_grad else 0.0, **kw)
    return fwd, bwd


def eager_elementwise_traffic(model: ModelArch, eager_bytes: dict[str, float], rope_bytes: Any,
                              norm_kernel: str | None = None, fused_rest: bool = False,
                              act_kernel: str | None = None, rope_kernel: str | None = None) -> Any:
    """HBM traffic of a decoder layer's element-wise work run as eager PyTorch ops, relative to the fused count of
    `layer_times` (2 B per element read or written: norms 4h, residual adds and masks 7h, RoPE 2 (q + k + v),
    activation `act_elems_per_inner` x ffn elements). Eager: an RMSNorm streams eager_bytes["rmsnorm"] per
    element, a SwiGLU eager_bytes["swiglu"] per ffn element (a squared ReLU eager_bytes["relu2"]), RoPE
    `rope_bytes` per element of q and k (v has none); LayerNorm and GeLU are one kernel either way; residual adds are the same. Counted per op from the
    model code (perf_constants.yaml gemm.eager_bytes_per_element), arrays of `rope_bytes` allowed.
    `norm_kernel` (strategy.norm_kernel): "fused" charges the two norms the fused count (one kernel: torchtitan's
    fused_rmsnorm, Liger, Apex / TE), "eager" the eager count; None = eager unless `fused_rest`, where the
    framework's own kernels fuse RoPE, the activation and the norms (TE / Apex). `act_kernel`
    (strategy.activation_kernel) decides the SwiGLU (and squared ReLU) the same way: "eager" its eager bytes under fused kernels too
    (nanotron: fused RMSNorm and rotary, F.silu then the product), "fused" the fused count in an eager run;
    `rope_kernel` (strategy.rope_kernel) RoPE likewise (NeMo AutoModel's TE fused RoPE in an uncompiled run)."""
    shapes = ModelShapes.of(model)
    ffn = float(shapes.ffn)
    common, fused_common = _norm_residual_rope_bytes(model, shapes, eager_bytes, rope_bytes, norm_kernel, fused_rest,
                                                     rope_kernel)
    fused_act = 2.0 * shapes.act_elems_per_inner * ffn
    act = _eager_act_bytes(model, eager_bytes) * ffn if model.mlp in EAGER_ACT_MLPS and _runs_eager(act_kernel, fused_rest) \
        else fused_act
    return (common + act) / (fused_common + fused_act)


# MLP activations whose eager form is more than one kernel (GeLU is one either way): SwiGLU; the squared ReLU
# torch.pow(F.relu(x), 2) (perf_constants.yaml gemm.eager_bytes_per_element relu2)
EAGER_ACT_MLPS = ("swiglu", "relu2")


def _eager_act_bytes(model: ModelArch, eager_bytes: dict[str, float]) -> float:
    """Forward HBM bytes per inner element of a dense MLP's eager activation: the squared ReLU's relu then pow
    (eager_bytes["relu2"]), else the SwiGLU's (`_eager_swiglu_bytes`)."""
    return eager_bytes["relu2"] if model.mlp == "relu2" else _eager_swiglu_bytes(model, eager_bytes)


def moe_elementwise_traffic(model: ModelArch, eager_bytes: dict[str, float], rope_bytes: Any,
                            norm_kernel: str | None = None, fused_rest: bool = False,
                            act_kernel: str | None = None, rope_kernel: str | None = None) -> tuple[Any, float]:
    """`eager_elementwise_traffic` split for an MoE layer, whose parts are not the dense layer's mix: (the norms,
    residual adds and RoPE relative to their fused count; one MLP activation's relative to its fused count, an
    eager SwiGLU eager_bytes["swiglu"] against the fused 2 x 3 B per inner element, GeLU one kernel either way).
    The dense layer's single ratio weighs in its own MLP's width, so taken for a routed expert it charged the
    experts' activation the norms' and RoPE's eager ratio (gpt-oss: the eager RoPE's 1.7 on a compiled
    activation)."""
    shapes = ModelShapes.of(model)
    common, fused_common = _norm_residual_rope_bytes(model, shapes, eager_bytes, rope_bytes, norm_kernel, fused_rest,
                                                     rope_kernel)
    eager_act = model.mlp == "swiglu" and _runs_eager(act_kernel, fused_rest)
    act = _eager_swiglu_bytes(model, eager_bytes) / (2.0 * shapes.act_elems_per_inner) if eager_act else 1.0
    return common / fused_common, act


def _eager_swiglu_bytes(model: ModelArch, eager_bytes: dict[str, float]) -> float:
    """Forward HBM bytes per inner element of an eager SwiGLU: the clamped one where the model clamps its halves
    (ModelArch.activation_clamp: gpt-oss), else the plain one (perf_constants.yaml gemm.eager_bytes_per_element)."""
    return eager_bytes["swiglu_clamped"] if model.activation_clamp else eager_bytes["swiglu"]


def _runs_eager(kernel: str | None, fused_rest: bool) -> bool:
    """Whether an element-wise op runs as eager PyTorch ops: its kernel named "eager" (strategy.norm_kernel /
    activation_kernel), or not named where the framework's own kernels do not fuse it."""
    return kernel == "eager" or (kernel is None and not fused_rest)


def _norm_residual_rope_bytes(model: ModelArch, shapes: ModelShapes, eager_bytes: dict[str, float], rope_bytes: Any,
                              norm_kernel: str | None, fused_rest: bool,
                              rope_kernel: str | None = None) -> tuple[Any, float]:
    """(HBM bytes as run, fused bytes) per token of a layer's element-wise work other than the MLP activation: the
    norms (two, four with sandwich norms), the residual adds and masks, RoPE on q and k (counts of
    `eager_elementwise_traffic`; `rope_kernel` "fused" or "eager" decides RoPE either way, None follows `fused_rest`)."""
    h, qkv = float(shapes.hidden), float(shapes.qkv_out)
    v_width = (qkv - h) / 2.0 if qkv > h else qkv / 3.0
    # the widths RoPE (and qk-norm) run over: every query and key head (a query projection wider than the hidden size:
    # Qwen3 32B's 64 x 128, GPT-OSS's 64 x 64); MLA: the estimate's q + k share of its projection
    qk = qkv - v_width if model.attention == "mla" else float(model.q_dim + model.kv_dim)
    n_norms = float(shapes.norms)
    fused_norms, rest, fused_rope = n_norms * 4.0 * h, 2.0 * 7.0 * h, 2.0 * 2.0 * qkv
    eager_norm = model.norm == "rmsnorm" and _runs_eager(norm_kernel, fused_rest)
    norms = n_norms * eager_bytes["rmsnorm"] * h if eager_norm else fused_norms
    rope_fused_or_none = model.position != "rope" or not _runs_eager(rope_kernel, fused_rest)
    rope = fused_rope if rope_fused_or_none else _eager_rope_bytes(model, rope_bytes, eager_bytes) * qk
    return norms + rest + rope + _qk_norm_bytes(model, qk, eager_bytes, eager_norm, fused_rest), \
        fused_norms + rest + fused_rope


def _eager_rope_bytes(model: ModelArch, rope_bytes: Any, eager_bytes: dict[str, float]) -> Any:
    """Forward HBM bytes per q / k element of eager RoPE: the style's count over the rotated share of each head
    (ModelArch.rotary_fraction), and under a partial rotary the concatenation of the rotated slice with the rest
    (GPT-NeoX megatron/model/transformer.py ParallelSelfAttention.forward at v1.0: query_rot / query_pass slices,
    apply_rotary_pos_emb, torch.cat((query_layer, query_pass)); HF modeling_gpt_neox.py likewise;
    perf_constants.yaml gemm.eager_bytes_per_element rope_partial_cat)."""
    f = float(model.rotary_fraction)
    return np.asarray(rope_bytes, float) * f + (eager_bytes["rope_partial_cat"] if f < 1.0 else 0.0)


def _qk_norm_bytes(model: ModelArch, qk: float, eager_bytes: dict[str, float], eager_norm: bool,
                   fused_rest: bool) -> float:
    """Forward HBM bytes per token of qk-norm (an RMSNorm over each query and key head: Qwen3, OLMo 2; torchtitan
    GQAttention.forward runs q_norm / k_norm, then RoPE) beyond the fused count: none where the element-wise work is
    fused (Inductor fuses the per-head norm into the RoPE kernel that reads and writes q and k anyway); eager, the
    eager RMSNorm's ops, or one fused norm kernel's read and write (4 B) under norm_kernel "fused" (PyTorch's
    F.rms_norm on CUDA: aten._fused_rms_norm, PyTorch PR 153666, 2.9+; docs/known-gaps.md 311 (a))."""
    if not model.qk_norm:
        return 0.0
    if eager_norm:
        return eager_bytes["rmsnorm"] * qk
    return 0.0 if fused_rest else 4.0 * qk


def stream_time(nbytes, rates: Rates, kernels=1.0):
    """Seconds to stream `nbytes` through HBM in `kernels` memory-bound kernels."""
    return np.asarray(nbytes, float) / rates.hbm_bytes_s + kernels * rates.kernel_fixed_s


def l2_reread_credit(read_bytes, reuse_bytes, rates: Rates):
    """Seconds saved where a kernel reads back an intermediate an earlier kernel of the same eager op chain wrote and
    the bytes touched from that write to the read (`reuse_bytes`, its reuse distance) fit the part's measured resident
    set: the L2 is write-back, a written line stays until evicted, so those reads run at its measured re-read rate
    instead of the streaming DRAM rate (te42kyfo/gpu-benches gpu-l2-cache at 3088b333, catalog source gpu_benches_l2).
    Writes and every other read stay at DRAM. 0 where the part's L2 rate is not measured (docs/known-gaps.md 148)."""
    if rates.l2_read_bytes_s <= rates.hbm_bytes_s:
        return 0.0
    fits = np.asarray(reuse_bytes, float) <= rates.l2_resident_bytes
    return np.where(fits, np.asarray(read_bytes, float) * (1.0 / rates.hbm_bytes_s - 1.0 / rates.l2_read_bytes_s), 0.0)


@dataclass(frozen=True)
class ModelShapes:
    """Per-layer GEMM widths (unsplit) of a model, precomputed once for the vectorised path."""

    hidden: int
    qkv_out: int  # output width of the fused input projection(s) of attention
    attn_out_in: int  # input width of the output projection
    heads: int
    d_qk: int
    d_v: int
    ffn_up: int  # output width of the MLP input GEMM (2 x ffn for SwiGLU: gate + up)
    ffn: int
    act_elems_per_inner: float  # element-wise activation traffic per intermediate element (fwd)
    n_dense: int
    n_moe: int
    experts: int
    topk: int
    expert_up: int
    expert_ffn: int
    shared_up: int
    shared_ffn: int
    vocab: int
    layers: int
    norms: int = 2  # norms over the hidden size a layer (ModelArch.norms_per_layer: 4 with sandwich norms)
    router_fp32: bool = False  # ModelArch.router_fp32: the gate GEMM on the FP32 units
    # MLA: share of the attention input GEMM weights in the q / kv up projections (what recompute_modules
    # mla_up_proj re-runs: linear_q_up_proj, or linear_q_proj without a q low rank, and linear_kv_up_proj); 0 else
    qkv_up_share: float = 0.0
    # sliding-window attention (ModelArch.sliding_window): the window in tokens and the share of layers using it
    window: int = 0
    window_share: Any = 0.0  # an array where the framework style decides per strategy (step_time._windowed_shapes)
    # chunked attention (ModelArch.attention_chunk): the chunk in tokens and the share of layers using it
    chunk: int = 0
    chunk_share: float = 0.0
    # a hybrid model (ModelArch.layer_pattern): its layers are single blocks (`_hybrid_sums`); None otherwise
    hybrid: ModelArch | None = None
    # torchtitan's per-op SAC in an MoE block: the linears it recomputes, (shard, output width, input width)
    # (flops.op_sac_moe_linears), and whether it keeps the router gate's output (flops.op_sac_gate_kept)
    op_sac_moe_recomputed: tuple[tuple[str, int, int], ...] = ()
    op_sac_gate_kept: bool = False
    # LatentMoE (ModelArch.moe_latent): the routed experts' width (0: hidden) and the projections' latent (0: none)
    expert_width: int = 0
    latent: int = 0

    @classmethod
    def of(cls, model: ModelArch) -> ModelShapes:
        h = model.hidden
        swiglu = model.mlp == "swiglu"
        mult = 2 if swiglu else 1
        attn_in = attention_gemm_weights(model) - model.attn_out_dim * h
        d_qk, d_v = model.head_dims
        return cls(
            hidden=h,
            qkv_out=max(1, attn_in // h),
            attn_out_in=model.attn_out_dim,
            heads=model.heads,
            d_qk=d_qk,
            d_v=d_v,
            ffn_up=mult * model.ffn,
            ffn=model.ffn,
            act_elems_per_inner=3.0 if swiglu else 2.0,
            n_dense=model.dense_mlp_layers,
            n_moe=model.moe_layer_count,
            experts=model.experts,
            topk=model.experts_per_token,
            expert_up=mult * model.expert_ffn,
            expert_ffn=model.expert_ffn,
            shared_up=mult * model.shared_expert_ffn,
            shared_ffn=model.shared_expert_ffn,
            vocab=model.vocab,
            layers=model.layers,
            norms=model.norms_per_layer,
            router_fp32=model.router_fp32,
            qkv_up_share=_mla_up_share(model, attn_in),
            window=model.sliding_window,
            window_share=model.window_share,
            chunk=model.attention_chunk,
            chunk_share=model.chunk_share,
            op_sac_moe_recomputed=tuple((shard, out, inner) for shard, out, inner, kept in op_sac_moe_linears(model)
                                        if not kept and out > 0),
            op_sac_gate_kept=op_sac_gate_kept(model),
            hybrid=model if model.is_hybrid else None,
            expert_width=model.expert_width,
            latent=model.moe_latent,
        )


def _mla_up_share(model: ModelArch, attn_in_weights: int) -> float:
    """Share of the attention input projection weights that MLA's up projections hold (0 without MLA)."""
    return min(1.0, mla_up_proj_weights(model) / attn_in_weights) if attn_in_weights > 0 else 0.0


@dataclass(frozen=True)
class LayerTimes:
    """Seconds per micro-batch on one GPU for one *average* decoder layer (arrays)."""

    fwd: object  # forward
    bwd: object  # backward incl. recompute
    head_fwd: object  # LM head + loss forward (last stage only)
    head_bwd: object
    attn_fwd: object  # attention-core forward of one layer (what CP ring exchange hides behind)
    attn_bwd: object = 0.0  # attention-core backward of one layer (what PyTorch's ring hides its dK / dV behind)


def layer_times(shapes: ModelShapes, seq_len: int, rates: Rates, *, tp, cp, micro_batch, sp, recompute,
                ep, flash: bool, flash_rate: float, flash_bwd_over_fwd: float,
                trains_base_weights: bool = True, moe_capacity_factor: float = 1.0,
                elementwise_passes: Any = 1.0, fp8_weight_casts: Any = 1.0,
                selective_op_policy: Any = False, sac_attention_saved: Any = True, attention_span: float = 0.0,
                split_projections: Any = False, ce_unfused_fp32: Any = False,
                recompute_modules: tuple[str, ...] | None = None, flash_head_pad: Any = 1.0,
                full_recompute_share: Any = 1.0, sequence_first: Any = False,
                fp8_gathered_casts: Any = 0.0, block_tiles: tuple[Any, Any] = (0.0, 0.0),
                rate_length: Any = 0.0, moe_passes: tuple[Any, Any, Any] | None = None, etp: Any = None,
                router_gemm: bool = True, window_backward_skips: Any = True,
                tp_token_split: Any = True, fused_act_cast: Any = False,
                op_sac_linears_recomputed: Any = 0.0, pad_share: float = 0.0, full_square: Any = False) -> LayerTimes:
    """Compute seconds of one average decoder layer per micro-batch on one GPU.

    `recompute`: 0 none, 1 selective, 2 full (RECOMPUTE_CODE). Arrays broadcast. `moe_capacity_factor`: tokens
    on the busiest expert relative to balanced routing (Training.moe_capacity_factor): the expert GEMMs and the
    token permutation of the slowest GPU scale with it. `elementwise_passes`: HBM traffic of element-wise work
    relative to fused kernels (eager PyTorch > 1). FP8 casts cost `rates.fp8_cast_bytes` HBM bytes per operand
    element (0 when not training in FP8); `fp8_weight_casts`: weight casts per micro-batch (1/m with an FP8
    weight cache, 1 without; arrays allowed). `selective_op_policy` (bool, arrays allowed): "selective"
    recompute is torchtitan's per-op policy (saves attention and every other matmul output in forward order,
    recomputes the rest: the k, o and MLP-up projections and all element-wise work; torchtitan
    `_apply_ac_to_transformer_block`, `_save_list`) instead of Megatron's (recomputes the attention core).
    `sac_attention_saved` / `op_sac_linears_recomputed`: that policy without the attention op / any of a dense
    layer's linears in its save list (`_selective_recompute`).
    `attention_span`: keys a token attends over when sequences are packed (FlashAttention varlen / TE THD
    with cu_seqlens: each packed sample attends within itself); 0 = the whole sequence. `ce_unfused_fp32` (bool,
    arrays allowed): the loss upcasts the logits and runs Megatron's cross-entropy as separate kernels (CE_BYTES).
    `recompute_modules`: Megatron-Core's selective recompute by module (`_module_recompute`); None = the attention
    core. `flash_head_pad`: the flash kernel's executed over actual head-dim width (flash_head_dim_ratio).
    `full_recompute_share`: the share of the layers full recompute re-runs (partial_recompute.py; 1 = all).
    `sequence_first` (bool, arrays allowed): activations kept (s, b, h) (Megatron-Core; Mamba-2 mixers copy across).
    `fp8_gathered_casts`: under sequence parallelism, the share of the sequence-parallel all-gathers that carry FP8
    (step_time._fp8_tp_gather_share): an FP8 gather is cast before it, on the 1 / t shard, so the casts of gathered
    linear inputs (qkv, MLP up) and output gradients (o, MLP down) cover 1 / t of the tokens (Transformer Engine
    gather_along_first_dim(quantizer=...); torchao PrepareFloat8ModuleInput, _NoopFwToFloat8BwDynamic).
    `block_tiles` (forward, backward) and `rate_length`: a query block's fixed work in key tiles and the causal length
    `flash_rate` is taken at (`window_block_rate`); (0, 0): none. `full_square`: no key tile skipped (`_attention_core`).
    `window_backward_skips` (bool, arrays allowed): the backward kernel skips the key tiles outside a sliding window
    as the forward does; False: it runs the layer's whole causal row (step_time._window_backward_skips).
    `moe_passes` (common, routed, shared): an MoE layer's element-wise traffic relative to the fused count (norms,
    residuals and RoPE; routed; shared experts: `moe_elementwise_traffic`); None = `elementwise_passes` for all three.
    `etp`: the routed experts' TP degree (Strategy.etp resolved; None = tp), at whose shard's shapes they run on
    tok x etp / tp routed tokens (`_moe_layer`). `fused_act_cast` (bool, arrays allowed): the dense MLP's
    activation writes the FP8 operands its neighbour GEMMs read (`_dense_parts`).
    `tp_token_split` (bool, arrays allowed): at etp < tp each TP rank dispatches its 1 / tp of the TP group's tokens;
    False: every TP rank dispatches them all (PerfStyle.moe_tp_token_split), so tok routed tokens reach a GPU.
    `router_gemm`: the MoE gate computes its logits (False: NeMo AutoModel's FakeBalancedGate, Training.moe_routing
    "fake-balanced", assigns experts without a GEMM). `pad_share` (Training.pad_share): rows padded with one pad token,
    whose positions the router sends to one set of top-k experts (`expert_token_split`).
    """
    t = np.asarray(tp, float)
    et = t if etp is None else np.maximum(np.asarray(etp, float), 1.0)
    c = np.asarray(cp, float)
    b = np.asarray(micro_batch, float)
    e = np.maximum(np.asarray(ep, float), 1.0)
    rc = np.asarray(recompute)
    s = np.asarray(seq_len, float)  # positions per row (arrays: unpacked samples' padded rows per micro-batch)
    tok = b * s / c  # tokens entering this GPU's GEMMs (full TP-group sequence shard)
    weights = bool(trains_base_weights)
    d = _dense_parts(shapes, tok, t, np.asarray(sp, float), rates, np.asarray(split_projections, bool),
                     elementwise_passes, fp8_weight_casts, weights, fp8_gathered_casts, fused_act_cast)
    a_fwd, a_bwd = _attention_core(shapes, tok, b, c, s, t, rates, flash=flash, flash_rate=flash_rate,
                                   flash_bwd_over_fwd=flash_bwd_over_fwd, attention_span=attention_span,
                                   flash_head_pad=flash_head_pad, block_tiles=block_tiles, rate_length=rate_length,
                                   window_backward_skips=window_backward_skips, full_square=full_square)
    moe_passes = moe_passes if moe_passes is not None else (elementwise_passes,) * 3
    if shapes.hybrid is not None:
        return _hybrid_layer_times(shapes, d, a_fwd, a_bwd, tok, t, e, rates, rc, weights=weights, sequences=b * sequence_first,
                                   elementwise_passes=elementwise_passes, fp8_weight_casts=fp8_weight_casts,
                                   moe_passes=moe_passes, moe_capacity_factor=moe_capacity_factor,
                                   recompute_modules=recompute_modules, full_recompute_share=full_recompute_share,
                                   ce_unfused_fp32=ce_unfused_fp32, router_gemm=router_gemm, pad_share=pad_share)
    fwd_sum = shapes.n_dense * (d.fwd_gemm + a_fwd + d.fwd_ew)
    bwd_sum = shapes.n_dense * (d.bwd_gemm + a_bwd + 2.0 * (d.fwd_ew - d.cast_fwd) + d.cast_bwd)
    recomp_full_sum = shapes.n_dense * (d.fwd_gemm + a_fwd + d.fwd_ew)
    moe_ew = m_fwd_l = routed_g = 0.0
    # the MoE layer's norms, residuals and RoPE at their own ratio (d.ew_fwd_common carries the dense layer's)
    moe_common_ew = d.ew_fwd_common * (np.asarray(moe_passes[0], float) / np.asarray(elementwise_passes, float))
    if shapes.n_moe:
        _, moe_ew, m_fwd_l, m_bwd_l, routed_g = _moe_layer(
            shapes, tok, t, e, rates, et=et, g_attn=d.g_attn, b_attn=d.b_attn, a_fwd=a_fwd, a_bwd=a_bwd, weights=weights,
            attn_w=d.attn_w, ew_fwd_common=moe_common_ew, act_passes=moe_passes[1:],
            fp8_weight_casts=fp8_weight_casts, moe_capacity_factor=moe_capacity_factor, router_gemm=router_gemm,
            tp_token_split=tp_token_split, pad_share=pad_share)
        fwd_sum = fwd_sum + shapes.n_moe * m_fwd_l
        bwd_sum = bwd_sum + shapes.n_moe * m_bwd_l
        recomp_full_sum = recomp_full_sum + shapes.n_moe * m_fwd_l
    L = shapes.layers
    sel = _selective_recompute(shapes, d, tok, t, rates, a_fwd, m_fwd_l, moe_ew, moe_common_ew, routed_g,
                               selective_op_policy=selective_op_policy, recompute_modules=recompute_modules,
                               elementwise_passes=elementwise_passes, moe_capacity_factor=moe_capacity_factor,
                               moe_passes=moe_passes, all_linears=op_sac_linears_recomputed,
                               sac_attention_saved=sac_attention_saved)
    recomp = np.where(rc == 2, np.asarray(full_recompute_share, float) * recomp_full_sum / L,
                      np.where(rc == 1, sel, 0.0))
    head_fwd, head_bwd = _lm_head(shapes, tok, t, d.seq_share, weights, rates, ce_unfused_fp32)
    return LayerTimes(fwd=fwd_sum / L, bwd=bwd_sum / L + recomp, head_fwd=head_fwd, head_bwd=head_bwd,
                      attn_fwd=a_fwd, attn_bwd=a_bwd)


def _selective_recompute(shapes: ModelShapes, d: _DenseParts, tok, t, rates: Rates, a_fwd, m_fwd_l, moe_ew,
                         moe_common_ew, routed_g, *, selective_op_policy, recompute_modules, elementwise_passes,
                         moe_capacity_factor, moe_passes, all_linears: Any = 0.0,
                         sac_attention_saved: Any = True) -> Any:
    """Seconds a layer re-runs per micro-batch under "selective" recompute: torchtitan's per-op policy
    (`_op_policy_recompute`; on the share `all_linears` of the dense layers every linear's GEMM, not every other one:
    none of their ops in its save list, torchao's NVFP4, activations.op_sac_unsaved_share; with the attention forward
    where the save list leaves the attention out, `sac_attention_saved` False: torchtitan before b39377f9f,
    2025-12-01, listed only SDPA's flash and efficient backends) where
    `selective_op_policy`, else Megatron-Core's by module (`_module_recompute`; `recompute_modules` None = the
    attention core alone)."""
    op_recomp = _op_policy_recompute(shapes, tok, t, rates, d.fwd_ew, moe_ew, routed_g, d.fwd_gemm, all_linears) + np.where(
        np.asarray(sac_attention_saved, bool), 0.0, a_fwd)
    a_recomp = a_fwd if recompute_modules is None else _module_recompute(
        shapes, tuple(recompute_modules), tok, t, rates, elementwise_passes, moe_capacity_factor,
        _module_parts(shapes, d, a_fwd, m_fwd_l, rates, moe_common_ew), moe_passes[1:])
    return np.where(np.asarray(selective_op_policy, bool), op_recomp, a_recomp)


def _hybrid_layer_times(shapes: ModelShapes, d: _DenseParts, a_fwd, a_bwd, tok, t, e, rates: Rates, rc, *,
                        weights: bool, sequences, elementwise_passes, fp8_weight_casts, moe_capacity_factor, recompute_modules,
                        full_recompute_share, ce_unfused_fp32, moe_passes, router_gemm: bool = True,
                        pad_share: float = 0.0) -> LayerTimes:
    """`layer_times` of a hybrid model: the average of its layers, each one block with its own norm and residual
    (half of a transformer layer's 11 h element-wise bytes; Megatron-Core MambaLayer / TransformerLayer with one
    submodule): M the Mamba-2 mixer (estimate.mamba.mixer_times), * the attention projections and core (+ RoPE),
    - the dense MLP, E the MoE block (`_moe_layer` without attention). Selective recompute re-runs the attention
    core of the * layers only; Megatron-Core's recompute_modules act on the blocks they name."""
    from dataclasses import replace

    from trainsizer.estimate.mamba import mixer_times

    m = shapes.hybrid
    h, L = shapes.hidden, float(shapes.layers)
    n_m, n_a, n_d, n_e = m.mamba_layers, m.attention_layers, m.dense_mlp_layers, m.moe_layer_count
    block_ew = 5.5 * h * tok * d.seq_share * rates.act_bytes * elementwise_passes
    half_k = KERNELS["dense_elementwise"] / 2.0
    rope = 2.0 * (shapes.qkv_out / t) * tok * rates.act_bytes * elementwise_passes
    ca_f, ca_b = _fp8_casts(tok, h + shapes.attn_out_in / t, shapes.qkv_out / t + h, d.attn_w, rates,
                            fp8_weight_casts, (2.0, 2.0, 2.0))
    a_ew = stream_time(block_ew + rope, rates, kernels=half_k)
    attn_f = d.g_attn + a_fwd + a_ew + ca_f
    attn_b = d.b_attn + a_bwd + 2.0 * a_ew + ca_b
    cm_f, cm_b = _fp8_casts(tok, h + shapes.ffn / t, shapes.ffn_up / t + h, (shapes.ffn_up * h + shapes.ffn * h) / t,
                            rates, fp8_weight_casts, (2.0, 2.0, 2.0))
    mlp_ew = stream_time(block_ew + d.act_dense, rates, kernels=half_k)
    mlp_f = d.g_dense + mlp_ew + cm_f
    mlp_b = (d.bwd_gemm - d.b_attn) + 2.0 * mlp_ew + cm_b
    norm_ew = stream_time(block_ew, rates, kernels=2.0)
    mx_f, mx_b = mixer_times(m, tok, t, rates, weights=weights, elementwise_passes=elementwise_passes,
                             fp8_weight_casts=fp8_weight_casts, sequences=sequences) if n_m else (0.0, 0.0)
    mamba_f, mamba_b = mx_f + norm_ew, mx_b + 2.0 * norm_ew
    moe_f = moe_b = 0.0
    if n_e:
        bare = replace(shapes, qkv_out=0, attn_out_in=0)
        _, _, moe_f, moe_b, _ = _moe_layer(
            bare, tok, t, e, rates, g_attn=0.0, b_attn=0.0, a_fwd=0.0, a_bwd=0.0, weights=weights, attn_w=0.0,
            ew_fwd_common=block_ew * (np.asarray(moe_passes[0], float) / np.asarray(elementwise_passes, float)),
            act_passes=moe_passes[1:], fp8_weight_casts=fp8_weight_casts, moe_capacity_factor=moe_capacity_factor,
            router_gemm=router_gemm, pad_share=pad_share)
    fwd_sum = n_m * mamba_f + n_a * attn_f + n_d * mlp_f + n_e * moe_f
    bwd_sum = n_m * mamba_b + n_a * attn_b + n_d * mlp_b + n_e * moe_b
    a_share = n_a / L
    a_recomp = a_fwd * a_share
    if recompute_modules is not None:
        parts = {"a_fwd": a_fwd * a_share, "g_qkv": d.g_qkv * a_share, "g_dense": d.g_dense,
                 "act_dense": d.act_dense, "seq_share": d.seq_share, "moe_only": moe_f}
        a_recomp = _module_recompute(shapes, tuple(recompute_modules), tok, t, rates, elementwise_passes,
                                     moe_capacity_factor, parts, moe_passes[1:])
    recomp = np.where(rc == 2, np.asarray(full_recompute_share, float) * fwd_sum / L, np.where(rc == 1, a_recomp, 0.0))
    head_fwd, head_bwd = _lm_head(shapes, tok, t, d.seq_share, weights, rates, ce_unfused_fp32)
    return LayerTimes(fwd=fwd_sum / L, bwd=bwd_sum / L + recomp, head_fwd=head_fwd, head_bwd=head_bwd,
                      attn_fwd=a_fwd * a_share, attn_bwd=a_bwd * a_share)


@dataclass(frozen=True)
class _DenseParts:
    """One dense layer's forward pieces outside the attention core (seconds, or HBM bytes where named)."""

    g_qkv: Any  # q, k, v projection GEMMs
    g_attn: Any  # + the output projection
    b_attn: Any  # backward (dgrad + wgrad) of the attention projections
    g_dense: Any  # MLP GEMMs
    act_dense: Any  # MLP activation-function HBM bytes
    seq_share: Any  # share of the sequence a GPU's element-wise work covers (1/t under SP)
    ew_fwd_common: Any  # norm / residual / RoPE HBM bytes (both layer kinds)
    attn_w: Any  # attention weights per GPU (FP8 weight casts)
    fwd_gemm: Any  # attention + MLP GEMMs
    bwd_gemm: Any  # their backward GEMMs (linear_gemms)
    fwd_ew: Any  # element-wise kernels + FP8 casts
    cast_fwd: Any  # FP8 casts in the forward
    cast_bwd: Any  # FP8 casts in the backward


def _dense_parts(shapes: ModelShapes, tok, t, spf, rates: Rates, split, elementwise_passes,
                 fp8_weight_casts, weights: bool = True, fp8_gathered_casts: Any = 0.0,
                 fused_act_cast: Any = False) -> _DenseParts:
    """GEMMs (forward and backward: `weights` whether the base weights train), element-wise traffic and FP8 casts
    of one dense layer (attention projections and MLP). `fused_act_cast`: the MLP runs as Transformer Engine's fused
    ops (Megatron-Core TEFusedMLP under use_transformer_engine_op_fuser), whose activation writes only the quantized
    output fc2 reads and, backward, the quantized input gradient fc1's dgrad reads (TE ops/basic/activation.py
    op_forward `_activation_forward_impl(x, next_op_input_quantizer)`, op_backward with
    prev_op_grad_output_quantizer; NVIDIA/TransformerEngine d0067d0d). The layer already charges those quantized
    writes as casts fused into the producer (PerfStyle.fp8_cast_fused: the recipe's fused_cast_bytes_per_element);
    what the fuser removes is the 16-bit output the unfused activation writes beside them (Megatron-Core's
    bias_swiglu_impl returns it for TERowParallelLinear to cast): `act_bytes` per inner element forward, per
    gate-and-up element backward (the backward element-wise work is twice the forward's). FP8 recipes whose cast
    needs no amax pass of its own (one kernel: delayed, MXFP8), `_fused_act_cast`."""
    h = shapes.hidden
    # --- attention projections (both layer kinds)
    g_qkv, b_qkv = linear_gemms(tok, shapes.qkv_out / t, h, rates, weights)
    if np.any(split) and shapes.qkv_out > h:  # q, k, v as 3 GEMMs (not for MLA's low-rank projections)
        kv_out = (shapes.qkv_out - h) / 2.0
        q_f, q_b = linear_gemms(tok, h / t, h, rates, weights)
        kv_f, kv_b = linear_gemms(tok, kv_out / t, h, rates, weights)
        g_qkv = np.where(split, q_f + 2.0 * kv_f, g_qkv)
        b_qkv = np.where(split, q_b + 2.0 * kv_b + _input_grad_sum(3, tok, h, rates), b_qkv)
    o_f, o_b = linear_gemms(tok, h, shapes.attn_out_in / t, rates, weights)
    g_attn, b_attn = g_qkv + o_f, b_qkv + o_b
    # --- element-wise, sequence-sharded with SP: 2 norms (r+w; 4 with sandwich norms), 2 bias-dropout-residual
    # (2r+w) + masks
    seq_share = np.where((spf > 0) & (t > 1), 1.0 / t, 1.0)
    ew_h = (7.0 + 2.0 * shapes.norms) * h * tok * seq_share
    ew_rope = 2.0 * (shapes.qkv_out / t) * tok
    ew_fwd_common = (ew_h + ew_rope) * rates.act_bytes * elementwise_passes

    g_dense, act_dense, b_dense = _mlp_time(shapes, shapes.ffn_up, shapes.ffn, tok, t, rates, elementwise_passes,
                                            weights=weights)
    act_dense = act_dense - _fused_act_cast(rates, fused_act_cast) * shapes.ffn / t * tok * rates.act_bytes
    if np.any(split) and shapes.ffn_up == 2 * shapes.ffn:  # gate and up as 2 GEMMs
        one_f, one_b = linear_gemms(tok, shapes.ffn / t, h, rates, weights)
        both_f, both_b = linear_gemms(tok, shapes.ffn_up / t, h, rates, weights)
        g_dense = g_dense + np.where(split, 2.0 * one_f - both_f, 0.0)
        b_dense = b_dense + np.where(split, 2.0 * one_b - both_b + _input_grad_sum(2, tok, h, rates), 0.0)
    dense_fwd_g = g_attn + g_dense
    # the kernel count holds two norms; sandwich norms launch two more
    dense_fwd_ew = stream_time(ew_fwd_common + act_dense, rates,
                               kernels=KERNELS["dense_elementwise"] + shapes.norms - 2.0)
    # inputs of the linears: qkv and MLP-up share the normed hidden state (one cast each), o_proj and
    # MLP-down their own; outputs: qkv, o (h), up (+gate), down (h)
    attn_w = (shapes.qkv_out * h + h * shapes.attn_out_in) / t
    # the gathered ones (qkv and MLP-up inputs, o and MLP-down output gradients) cast on the sequence shard
    g = 1.0 - np.asarray(fp8_gathered_casts, float) * (1.0 - seq_share)
    c_fwd, c_bwd = _fp8_casts(tok, 2.0 * h * g + (shapes.attn_out_in + shapes.ffn) / t,
                              (shapes.qkv_out + shapes.ffn_up) / t + 2.0 * h * g,
                              attn_w + (shapes.ffn_up * h + shapes.ffn * h) / t, rates, fp8_weight_casts)
    dense_fwd_ew = dense_fwd_ew + c_fwd
    return _DenseParts(g_qkv=g_qkv, g_attn=g_attn, b_attn=b_attn, g_dense=g_dense, act_dense=act_dense,
                       seq_share=seq_share, ew_fwd_common=ew_fwd_common, attn_w=attn_w, fwd_gemm=dense_fwd_g,
                       bwd_gemm=b_attn + b_dense, fwd_ew=dense_fwd_ew, cast_fwd=c_fwd, cast_bwd=c_bwd)


def _fused_act_cast(rates: Rates, on: Any) -> Any:
    """1 where the MLP activation writes its quantized operands alone (`_dense_parts` fused_act_cast): FP8 training
    (rates.fp8_cast_bytes > 0) with a recipe whose scale is known before the cast (rates.fp8_cast_kernels 1: delayed,
    MXFP8); a current-scaling cast needs the 16-bit tensor's amax first, so the activation still writes it. Else 0."""
    one_pass = (np.asarray(rates.fp8_cast_bytes) > 0) & (np.asarray(rates.fp8_cast_kernels) == 1)
    return np.where(np.asarray(on, bool) & one_pass, 1.0, 0.0)


def _input_grad_sum(n: int, tok, h: int, rates: Rates):
    """Seconds to sum the input gradients of `n` separate linears that read the same input (q, k, v or gate, up as
    separate nn.Linear: autograd adds their dgrad outputs, one kernel reading n and writing one tensor of tok x h
    under torch.compile; a fused qkv / gate-up GEMM has one dgrad and nothing to add). Under TP the input is the
    gathered one, so the sum covers every token of the TP group (torch.autograd accumulation of a tensor used n
    times; DTensor Partial gradients are added locally before their reduce-scatter)."""
    return stream_time((n + 1.0) * tok * h * rates.act_bytes, rates)


def _module_parts(shapes: ModelShapes, d: _DenseParts, a_fwd, m_fwd_l, rates: Rates, moe_common_ew) -> dict[str, Any]:
    """The forward pieces `_module_recompute` re-runs by module; moe_only: an MoE layer's time beyond its
    attention (`moe_common_ew`: its norm / residual / RoPE bytes)."""
    return {"a_fwd": a_fwd, "g_qkv": d.g_qkv, "g_dense": d.g_dense, "act_dense": d.act_dense,
            "seq_share": d.seq_share,
            "moe_only": (m_fwd_l - d.g_attn - a_fwd - stream_time(moe_common_ew, rates)) if shapes.n_moe else 0.0}


def _module_recompute(shapes: ModelShapes, modules: tuple[str, ...], tok, t, rates: Rates, elementwise_passes,
                      moe_capacity_factor, parts: dict[str, Any], act_passes: tuple[Any, Any] | None = None):
    """Seconds of one average layer's forward re-run under Megatron-Core's selective recompute of `modules`
    (TransformerConfig.recompute_modules, names.RECOMPUTE_MODULES): core_attn the attention core; mla_up_proj the
    q / kv up-projection GEMMs (their share of the attention input GEMM); layernorm the separate norms (MLA's
    input norm, MoE layers' pre-MLP norm: read and write h per token); moe_act the routed experts' activation;
    mlp the dense MLPs; moe the whole MoE block but attention; shared_experts the shared MLP. Layer kinds are
    weighted by their share of the layers. `act_passes`: the routed and shared experts' activation traffic ratios
    (None: `elementwise_passes`)."""
    L, h = float(shapes.layers), shapes.hidden
    routed_passes, shared_passes = act_passes if act_passes is not None else (elementwise_passes,) * 2
    dense_w, moe_w = shapes.n_dense / L, shapes.n_moe / L
    out = 0.0 * np.asarray(tok, float)
    if "core_attn" in modules:
        out = out + parts["a_fwd"]
    if "mla_up_proj" in modules:
        out = out + parts["g_qkv"] * shapes.qkv_up_share
    if "layernorm" in modules:
        norms = (1.0 if shapes.qkv_up_share else 0.0) + moe_w
        out = out + norms * stream_time(2.0 * h * tok * parts["seq_share"] * rates.act_bytes * elementwise_passes,
                                        rates)
    if "mlp" in modules:
        out = out + dense_w * (parts["g_dense"] + stream_time(parts["act_dense"], rates))
    if shapes.n_moe and "moe" in modules:
        out = out + moe_w * parts["moe_only"]
    elif shapes.n_moe:
        if "moe_act" in modules:
            slots = tok * shapes.topk * moe_capacity_factor
            act = shapes.act_elems_per_inner * shapes.expert_ffn / t * slots * rates.act_bytes * routed_passes
            out = out + moe_w * stream_time(act, rates)
        if "shared_experts" in modules and shapes.shared_ffn:
            g_sh, act_sh, _ = _mlp_time(shapes, shapes.shared_up, shapes.shared_ffn, tok, t, rates,
                                        shared_passes)
            out = out + moe_w * (g_sh + stream_time(act_sh, rates))
    return out


def _mlp_time(shapes: ModelShapes, up: float, inner: float, tokens, t, rates: Rates, elementwise_passes,
              batch=1.0, weights: bool = True, width: int = 0):
    """(forward GEMM seconds, activation-function HBM bytes, backward GEMM seconds) of one gated or plain MLP on
    `width` (0: hidden; a routed expert's: ModelShapes.expert_width), TP-sharded by `t`."""
    h = width or shapes.hidden
    up_f, up_b = linear_gemms(tokens, up / t, h, rates, weights, batch=batch)
    down_f, down_b = linear_gemms(tokens, h, inner / t, rates, weights, batch=batch)
    act = shapes.act_elems_per_inner * inner / t * tokens * batch * rates.act_bytes * elementwise_passes
    return up_f + down_f, act, up_b + down_b


def _moe_layer(shapes: ModelShapes, tok, t, e, rates: Rates, *, et=None, g_attn, b_attn, a_fwd, a_bwd, weights: bool, attn_w,
               ew_fwd_common, act_passes, fp8_weight_casts, moe_capacity_factor, router_gemm: bool = True,
               tp_token_split: Any = True, pad_share: float = 0.0):
    """(GEMM s, element-wise s, forward s, backward s, routed GEMM s) of one MoE layer: attention as in a dense layer,
    router, routed experts on the busiest GPU, shared expert, token permutation and FP8 casts; routed GEMM s: the
    forward GEMMs of the routed experts and, unless kept, the router gate, what torchtitan's per-op SAC re-runs
    (`_op_policy_recompute`). `act_passes`: (routed,
    shared) experts' activation traffic relative to the fused count. `et`: the experts' TP degree (None = t): with
    et = t the tokens of the TP group reach each rank's expert shards (Megatron-Core's all-to-all dispatcher gathers
    the received tokens over the expert-TP group, moe/token_dispatcher.py MoEAlltoAllTokenDispatcher), with et < t
    each TP rank dispatches its own 1 / t of them to experts split et ways (et = 1: whole experts): tok x et / t
    routed tokens per GPU at expert widths / et, the same FLOPs at other GEMM shapes; `tp_token_split` False: each
    TP rank dispatches all of them (tok routed tokens per GPU whatever et). `pad_share`: the experts' GEMMs at the
    token counts of `expert_token_split` (the same routed slots)."""
    routed_passes, shared_passes = act_passes
    h = shapes.hidden
    w = shapes.expert_width or h  # the routed experts' width: the latent under LatentMoE
    et = t if et is None else et
    local_exp = np.maximum(shapes.experts / e, 1.0)
    # tokens whose routed copies reach this GPU's experts
    tok_e = np.where(np.asarray(tp_token_split, bool), tok * et / t, tok)
    # tokens per local expert: balanced routing x capacity factor (the busiest GPU sets the pace)
    m_e = tok_e * shapes.topk / local_exp * moe_capacity_factor
    # the gate: 16-bit, or fp32 on the CUDA cores (DeepSeek: torch.mm on float32, forward, dgrad and wgrad); none
    # where the gate assigns experts without logits (`router_gemm` False: AutoModel's FakeBalancedGate)
    g_router, b_router = linear_gemms(tok, shapes.experts, h, rates, weights, linear=False,
                                      flops=rates.fp32_flops if shapes.router_fp32 else 0.0, main_grad=False)
    if not router_gemm:
        g_router = b_router = 0.0
    g_exp = act_exp = b_exp = 0.0
    for experts, tokens in expert_token_split(shapes, m_e, local_exp, pad_share):
        g, act, b = _mlp_time(shapes, shapes.expert_up, shapes.expert_ffn, tokens, et, _expert_rates(rates),
                              routed_passes, batch=experts, weights=weights, width=w)
        g_exp, act_exp, b_exp = g_exp + g, act_exp + act, b_exp + b
    g_lat, b_lat, lat_w = _latent_proj_time(shapes, tok, t, rates, weights, tp_token_split)
    g_sh = act_sh = b_sh = 0.0
    if shapes.shared_ffn:
        g_sh, act_sh, b_sh = _mlp_time(shapes, shapes.shared_up, shapes.shared_ffn, tok, t, rates,
                                       shared_passes, weights=weights)
    # permute/unpermute of routed tokens: read+write the expert width per routed copy, twice
    perm = 4.0 * w * tok_e * shapes.topk * moe_capacity_factor * rates.act_bytes
    moe_g = g_attn + g_router + g_exp + g_sh + g_lat
    moe_ew = stream_time(ew_fwd_common + act_exp + act_sh + perm, rates, kernels=KERNELS["moe_elementwise"])
    # FP8 casts: attention as in a dense layer; routed tokens into and out of the experts; every local
    # expert's weights
    ex_tok = tok_e * shapes.topk * moe_capacity_factor
    sh_w = (shapes.shared_up * h + shapes.shared_ffn * h) / t
    lat = shapes.latent / t + h / t if shapes.latent else 0.0  # the projections' inputs / outputs on a TP rank's tokens
    m_fwd, m_bwd = _fp8_casts(tok, 2.0 * h + shapes.attn_out_in / t + shapes.shared_ffn / t + lat,
                              shapes.qkv_out / t + h + shapes.shared_up / t + h + lat,
                              attn_w + sh_w + lat_w + local_exp * (shapes.expert_up * w + shapes.expert_ffn * w) / et,
                              rates, fp8_weight_casts)
    e_fwd, e_bwd = _fp8_casts(ex_tok, w + shapes.expert_ffn / et, shapes.expert_up / et + w, 0.0, rates,
                              fp8_weight_casts, (2.0, 2.0, 0.0))
    moe_ew = moe_ew + m_fwd + e_fwd
    fwd = moe_g + a_fwd + moe_ew
    bwd = b_attn + b_router + b_exp + b_sh + b_lat + a_bwd + 2.0 * (moe_ew - m_fwd - e_fwd) + m_bwd + e_bwd
    # what torchtitan's per-op SAC re-runs of the router and the routed experts (`_op_policy_recompute`)
    routed_g = g_exp + (0.0 if shapes.op_sac_gate_kept else g_router)
    return moe_g, moe_ew, fwd, bwd, routed_g


def _latent_proj_time(shapes: ModelShapes, tok, t, rates: Rates, weights: bool, tp_token_split: Any):
    """(forward GEMM s, backward GEMM s, weight elements) of LatentMoE's fc1_latent_proj (hidden -> latent, before the
    dispatch) and fc2_latent_proj (latent -> hidden, after the combine); zeros without a latent. Both are TELinear
    parallel_mode "duplicated" (Megatron-LM moe/moe_layer.py at d98e8a64d): whole weights on every TP rank, run on
    its sequence-parallel share of the tokens (tok / t; `tp_token_split` False: all of them)."""
    if not shapes.latent:
        return 0.0, 0.0, 0.0
    h, lat = shapes.hidden, shapes.latent
    tok_p = np.where(np.asarray(tp_token_split, bool), tok / t, tok)
    down_f, down_b = linear_gemms(tok_p, lat, h, rates, weights)
    up_f, up_b = linear_gemms(tok_p, h, lat, rates, weights)
    return down_f + up_f, down_b + up_b, 2.0 * h * lat


def expert_token_split(shapes: ModelShapes, per_expert, local, pad_share: float) -> tuple[tuple[Any, Any], ...]:
    """((experts, tokens each), ...) of a GPU's `local` routed experts that take `per_expert` tokens each when balanced,
    where a share `pad_share` of the rows' positions hold one pad token (Training.pad_share; rows padded to seq_len,
    e.g. run_bench_lm.py's padding="max_length", deepspeedai/DeepSpeedExamples b76c7ccd): the pad positions carry the
    same token, so a layer's router gives them one set of top-k experts (the busiest GPU holds min(k, local) of them),
    which take every pad position besides their share of the sample tokens; the others share the sample tokens. The
    routed slots are the same. pad_share 0: one group, balanced."""
    if not pad_share > 0.0:
        return ((local, per_expert),)
    heavy = np.minimum(float(shapes.topk), local)
    light = per_expert * (1.0 - pad_share)
    return ((heavy, light + per_expert * local * pad_share / heavy), (local - heavy, light))


def expert_forward_time(shapes: ModelShapes, tokens, et, rates: Rates, act_passes) -> Any:
    """Forward seconds of ONE routed expert over its `tokens` on one GPU, as `_moe_layer` times its share: the gated
    MLP's GEMMs at that token count (expert TP `et`), its activation (`act_passes`: traffic relative to the fused
    count) and its tokens' gather and weighted scatter-add (read + write h each). Where the experts run one at a
    time behind a host sync (step_time._expert_loop_excess), this is the GPU work the CPU's issue time races."""
    g, act, _ = _mlp_time(shapes, shapes.expert_up, shapes.expert_ffn, tokens, et, _expert_rates(rates), act_passes,
                          width=shapes.expert_width)
    moved = 4.0 * (shapes.expert_width or shapes.hidden) * tokens * rates.act_bytes
    return g + stream_time(act + moved, rates)


def _expert_rates(rates: Rates) -> Rates:
    """`rates` with the routed experts' grouped-GEMM rate as the linear GEMM rate, where the style sets one
    (Rates.grouped_gemm_flops: torch._grouped_mm)."""
    grouped = np.asarray(rates.grouped_gemm_flops, float)
    if not np.any(grouped > 0):
        return rates
    return dataclasses.replace(rates, gemm_flops=np.where(grouped > 0, grouped, rates.gemm_flops))


def _fp8_casts(tokens, k_in: float, n_out: float, weights: float, rates: Rates, weight_casts: Any,
               tensors: tuple[float, float, float] = (4.0, 4.0, 4.0)):
    """(forward, backward) seconds of FP8 scaling + casts around linears with `k_in` summed input widths
    (activations cast in forward), `n_out` summed output widths (gradients cast in backward) and `weights`
    weight elements on this GPU, cast `weight_casts` times per micro-batch. `tensors`: how many activation,
    gradient and weight tensors those are (a dense layer: the inputs, output gradients and weights of its 4
    linears qkv, o, up(+gate), down); each cast pays `rates.fp8_cast_kernels` kernels (by recipe)."""
    cast = rates.fp8_cast_bytes
    if not np.any(cast):
        return 0.0, 0.0
    wc = np.asarray(weight_casts, float)
    w = weights * wc * rates.fp8_weight_cast_bytes  # read 16-bit, write fp8 (+ its transpose where one is made)
    per = rates.fp8_cast_kernels
    n_fwd, n_bwd, n_w = tensors
    w_kernels = np.where(np.asarray(weights) > 0, n_w * wc, 0.0)
    w_bwd = weights * wc * rates.fp8_weight_bwd_bytes  # torchao rowwise: the backward's weight re-cast and rescale
    w_bwd_kernels = np.where(np.asarray(w_bwd) > 0, w_kernels, 0.0)
    cast_bwd = np.where(np.asarray(rates.fp8_cast_bwd_bytes) > 0, rates.fp8_cast_bwd_bytes, cast)
    return (stream_time(tokens * k_in * cast + w, rates, kernels=per * (n_fwd + w_kernels)),
            stream_time(tokens * n_out * cast_bwd + w_bwd, rates, kernels=per * (n_bwd + w_bwd_kernels)))


def window_keys(window, span) -> Any:
    """Keys a query of a row of `span` positions sees on average under a sliding `window` (< span): w (1 - w / 2
    span), the first w queries seeing fewer."""
    w = np.asarray(window, float)
    return w * (1.0 - w / (2.0 * np.asarray(span, float)))


def window_block_rate(keys, rate_length, tiles) -> Any:
    """Rate of a kernel call whose queries each execute `keys` keys, relative to the causal row of `rate_length`
    its rate is taken at, for a query block's fixed work of `tiles` key tiles (calibration.native_block_tiles): a block
    of n tiles takes n + c tile times, n / (n + c) over the row's; 1 where c is 0 or the call is the longer."""
    n, c = np.asarray(keys, float) / 128.0, np.asarray(tiles, float)
    n_at = causal_tiles(rate_length)
    return np.minimum((n / (n + c)) / (n_at / (n_at + c)), 1.0)


def _grid_causal(blocks, heads, sms) -> Any:
    """Time of a causal attention call whose grid is n = `blocks` row blocks x `heads` (heads x sequences) CTAs, one a
    SM, over its time at the full-grid rate: block i runs i of the n (a query block the keys up to it; backward, a key
    block the queries from it), so the call lasts at least its longest CTA, n of a mean (n + 1) / 2: max(1, 2 sms /
    (heads (n + 1)))."""
    n = np.maximum(np.ceil(np.asarray(blocks, float)), 1.0)
    return np.maximum(1.0, 2.0 * sms / (np.asarray(heads, float) * (n + 1.0)))


def _grid_even(blocks, heads, sms) -> Any:
    """The same for an unmasked call, whose blocks each run the same work: max(1, sms / (n heads))."""
    n = np.maximum(np.ceil(np.asarray(blocks, float)), 1.0)
    return np.maximum(1.0, sms / (n * np.asarray(heads, float)))


def attention_grid_factors(length, heads, cp, ring, sms: float, q_rows: float, k_rows: float) -> tuple[Any, Any]:
    """(forward, backward) time of one layer's fused attention over its time at the full-grid rate, for calls of
    `length` query / key positions over `heads` (query heads on this GPU x sequences), one CTA a SM (perf_constants
    attention.grid: `sms`, query rows a forward CTA owns, key rows a backward CTA owns). Without a ring: one causal call.
    Transformer Engine's load-balanced ring (`ring`, cp > 1; AttnFuncWithCPAndKVP2P): `length` is the rank's 2 chunks;
    step 0 is causal over them, each later step runs, on one rank or another, the unmasked half-length call (the late
    chunk's queries against the whole K / V, or all queries against the early K / V chunk: the forward's and the
    backward's under-filled grid); the steps carry equal FLOPs, and each lasts as long as its slowest rank."""
    c = np.maximum(np.asarray(cp, float), 1.0)
    ring = np.asarray(ring, bool) & (c > 1)
    h = np.asarray(heads, float)
    some = h > 0  # a model without attention heads (a pure Mamba stack) has no call to time
    h = np.where(some, h, 1.0)
    out = []
    for rows in (q_rows, k_rows):
        blocks = np.asarray(length, float) / rows
        causal = _grid_causal(blocks, h, sms)
        steps = (causal + (c - 1.0) * _grid_even(blocks / 2.0, h, sms)) / c
        out.append(np.where(some, np.where(ring, steps, causal), 1.0))
    return out[0], out[1]


def _attention_core(shapes: ModelShapes, tok, b, c, s: Any, t, rates: Rates, *, flash: bool,
                    flash_rate: float, flash_bwd_over_fwd: float, attention_span: Any, flash_head_pad: Any = 1.0,
                    block_tiles: tuple[Any, Any] = (0.0, 0.0), rate_length: Any = 0.0,
                    window_backward_skips: Any = True, full_square: Any = False):
    """(forward, backward) seconds of one layer's attention core: FlashAttention by its FLOPs (on the head dims
    its kernel is compiled for: `flash_head_pad`, flash_head_dim_ratio), or eager batched GEMMs plus the
    softmax/dropout traffic over the s x s score matrix. `full_square`: the fused kernel is given the mask as an
    additive bias (SDPA's memory-efficient backend) and computes every key of the span for every query."""
    heads_l = shapes.heads / t
    if flash:
        # the span is the caller's (packed: the sample length; unpacked: per padded position, which may exceed
        # the mean padded row when lengths vary, E[L^2] / E[max L]); 0 = the whole row
        span = np.where(np.asarray(attention_span, float) > 0, attention_span, s)
        full = span * causal_fraction(span)  # keys a query attends over, causal, in 128-wide tiles
        keys_fwd = keys_bwd = full
        if np.any(np.asarray(shapes.window_share) > 0):
            # a windowed layer's query sees the last w positions: w (1 - w / 2 span) on average over the row, plus
            # the tiles the band's two edges cut (FlashAttention window_size, FlexAttention block masks, TE / cuDNN
            # windows skip the tiles outside the band; the eager branch below, like SDPA given the window as a mask,
            # computes every score); its few tiles per query block run at window_block_rate of the row's rate
            w = np.minimum(float(shapes.window), span)
            banded = np.minimum(np.where(w < span, window_keys(w, span) + 128.0, full), full)
            at = np.where(np.asarray(rate_length, float) > 0, rate_length, span)
            rate_fwd, rate_bwd = (np.where(w < span, window_block_rate(banded, at, tiles), 1.0)
                                  for tiles in block_tiles)
            keys_fwd = full + shapes.window_share * (banded / rate_fwd - full)
            keys_bwd = full + np.where(window_backward_skips, shapes.window_share, 0.0) * (banded / rate_bwd - full)
        if shapes.chunk_share > 0:
            # a chunked layer's query sees the earlier keys of its own chunk: each chunk a causal row of its own
            chunked = shapes.chunk_share * (np.minimum(chunk_causal_keys(span, float(shapes.chunk)), full) - full)
            keys_fwd, keys_bwd = keys_fwd + chunked, keys_bwd + chunked
        # an additive mask hides no tile from the kernel: every query runs the span's keys (the non-causal count)
        square = np.asarray(full_square, bool)
        if np.any(square):
            keys_fwd, keys_bwd = np.where(square, span, keys_fwd), np.where(square, span, keys_bwd)
        per_key = 2.0 * tok * heads_l * (shapes.d_qk + shapes.d_v) * flash_head_pad / flash_rate
        a_fwd = keys_fwd * per_key + rates.kernel_fixed_s
        return a_fwd, flash_bwd_over_fwd * (keys_bwd * per_key + rates.kernel_fixed_s)
    bh = b * heads_l
    sl = s / c
    a_fwd_g = (gemm_time(sl, s, shapes.d_qk, rates, batch=bh, linear=False)
               + gemm_time(sl, shapes.d_v, s, rates, batch=bh, linear=False))
    scores = bh * sl * s  # elements of the s x s score matrix on this GPU
    # fwd: scale+mask+softmax (r/w 16-bit) + dropout (r/w + 1-byte mask) ~ 4.5 elements of 2 B
    n_softmax = KERNELS["eager_softmax"]
    a_fwd = a_fwd_g + stream_time(scores * 4.5 * rates.act_bytes, rates, kernels=n_softmax)
    a_bwd = 2.0 * a_fwd_g + stream_time(scores * 5.5 * rates.act_bytes, rates, kernels=n_softmax)
    return a_fwd, a_bwd


def _op_policy_recompute(shapes: ModelShapes, tok, t, rates: Rates, dense_fwd_ew, moe_ew, routed_g, dense_fwd_gemm=0.0,
                         all_linears: Any = 0.0):
    """Recompute seconds per layer under torchtitan's per-op SAC: a dense layer's matmuls in forward order wq, wk,
    wv, wo, w1 (gate), w3 (up), w2 (down), the 2nd, 4th and 6th recomputed (every other mm), with every element-wise
    op (not in the save list); on the share `all_linears` of the dense layers all seven (`dense_fwd_gemm`, the
    layer's forward GEMMs: a linear whose ops are all outside the save list). An MoE layer re-runs the linears the
    policy does not keep (ModelShapes.op_sac_moe_recomputed: unbiased ones at an even mm count, a shared expert's
    included), `routed_g` (the routed experts' grouped GEMMs, torch._grouped_mm being outside the save list, and the
    router gate's unless kept: `_moe_layer`) and its element-wise work `moe_ew` (SelectiveAC runs with early_stop
    False, so every recomputable op re-runs; torchtitan distributed/activation_checkpoint.py at b5bcd76c6)."""
    h = shapes.hidden
    kv_out = max((shapes.qkv_out - h) / 2.0, 0.0)
    op_gemm = gemm_time(tok, kv_out / t, h, rates) + gemm_time(tok, h, shapes.attn_out_in / t, rates) + (
        gemm_time(tok, shapes.ffn / t, h, rates) if shapes.n_dense else 0.0)
    op_gemm = op_gemm + np.asarray(all_linears, float) * np.maximum(dense_fwd_gemm - op_gemm, 0.0)
    moe_linears = sum((gemm_time(tok, out / t, inner, rates) if shard == "tp" else gemm_time(tok, out, inner / t, rates))
                      for shard, out, inner in shapes.op_sac_moe_recomputed)
    return (shapes.n_dense * (op_gemm + dense_fwd_ew) + shapes.n_moe * (moe_linears + moe_ew + routed_g)) / shapes.layers


def lm_head_wgrad_time(shapes: ModelShapes, tok, t, rates: Rates):
    """Seconds of the LM head's weight-gradient GEMM a micro-batch, 16-bit as `_lm_head` times it (dW = x^T dy: a
    hidden x vocab / t output over the tokens; linear_gemms' backward with the weight trained less without): what
    Megatron-Core's defer_embedding_wgrad_compute moves out of the last stage's backward."""
    v_l = shapes.vocab / t
    trained = linear_gemms(tok, v_l, shapes.hidden, rates, True, linear=False)[1]
    return trained - linear_gemms(tok, v_l, shapes.hidden, rates, False, linear=False)[1]


def _lm_head(shapes: ModelShapes, tok, t, seq_share, weights: bool, rates: Rates, ce_unfused_fp32: Any = False):
    """(forward, backward) seconds of the LM head: GEMM over the vocab shard + vocab-parallel cross-entropy
    on fp32 logits (fused: read the 16-bit logits, write fp32 softmax statistics; unfused: Megatron's kernels over
    an fp32 copy, `CE_BYTES`), and the final norm."""
    h = shapes.hidden
    v_l = shapes.vocab / t
    # the LM head stays 16-bit under FP8 (TE, torchao); its weight trains with the base weights
    head_g, head_b = linear_gemms(tok, v_l, h, rates, weights, linear=False)
    logits = tok * v_l
    fused_f, fused_b = CE_BYTES["fused"]
    unf_f, unf_b = CE_BYTES["unfused_fp32"]
    unfused = np.asarray(ce_unfused_fp32, bool)
    ce_fwd = np.where(unfused, stream_time(logits * unf_f, rates, kernels=KERNELS["cross_entropy_unfused_fwd"]),
                      stream_time(logits * fused_f, rates, kernels=KERNELS["cross_entropy"]))
    ce_bwd = np.where(unfused, stream_time(logits * unf_b, rates, kernels=KERNELS["cross_entropy_unfused_bwd"]),
                      stream_time(logits * fused_b, rates, kernels=2.0 * KERNELS["cross_entropy"]))
    head_fwd = head_g + ce_fwd + stream_time(4.0 * h * tok * seq_share * rates.act_bytes, rates)  # final norm
    return head_fwd, head_b + ce_bwd


def mtp_projection(hidden: int, tok, t, seq_share, weights: bool, rates: Rates) -> tuple[Any, Any]:
    """(forward, backward) seconds of one multi-token-prediction module's input side (Megatron-Core
    multi_token_prediction.py MultiTokenPredictionLayer: enorm over the shifted embedding and hnorm over the hidden
    states, each reading and writing h a token; torch.cat of the two, 2h read and written; eh_proj, a
    column-parallel linear 2h -> h (h / t a GPU) run outside the FP8 context, so 16-bit). The element-wise work
    covers the sequence shard under sequence parallelism (`seq_share`); the backward streams it twice (as the
    decoder layer's element-wise backward). eh_proj's TP all-gathers are not charged."""
    h = float(hidden)
    g_f, g_b = linear_gemms(tok, h / np.asarray(t, float), 2.0 * h, rates, weights, linear=False)
    ew = stream_time(8.0 * h * tok * seq_share * rates.act_bytes, rates, kernels=3.0)
    return g_f + ew, g_b + 2.0 * ew


def fp8_lm_head_delta(shapes: ModelShapes, tok, t, weights: bool, rates: Rates, weight_casts: Any) -> tuple[Any, Any]:
    """(forward, backward) seconds the LM head's GEMMs change by when they run in FP8 (Megatron-Core fp8_output_proj:
    TELMHeadColumnParallelLinear, a TE Linear under the MXFP8 autocast; torchtitan's MXFP8LinearConverter, a torchao
    MXFP8 Linear that casts the same three operands): the three GEMMs at the FP8 rate instead of the
    16-bit one `_lm_head` charges, plus the casts of its input (forward), its output gradient over the vocab shard
    (backward) and its weight (`weight_casts` a micro-batch), one tensor each (`_fp8_casts`)."""
    h, v_l = shapes.hidden, shapes.vocab / t
    f8_f, f8_b = linear_gemms(tok, v_l, h, rates, weights, linear=True)
    b16_f, b16_b = linear_gemms(tok, v_l, h, rates, weights, linear=False)
    c_f, c_b = _fp8_casts(tok, h, v_l, v_l * h, rates, weight_casts, tensors=(1.0, 1.0, 1.0))
    return f8_f - b16_f + c_f, f8_b - b16_b + c_b


def optimizer_time(params_local, bytes_per_param: float, rates: Rates):
    """Fused optimizer step: stream `bytes_per_param` for each locally updated parameter (HBM-bound)."""
    return stream_time(np.asarray(params_local, float) * bytes_per_param, rates,
                       kernels=KERNELS["optimizer_step"])
