"""Floating-point operations of one training step, from the architecture.

Conventions (each one names its source):
- A GEMM of an (M x K) by (K x N) matrix costs 2*M*N*K FLOPs; the backward pass costs twice the forward
  (dgrad + wgrad) -- Narayanan et al. 2021 (arXiv:2104.04473) section 5.1.
- Attention scores QK^T and the weighted sum AV cost 2*s*d_qk and 2*s*d_v FLOPs per query token and head.
  *Model* FLOPs count the full (non-causal) s x s matrix, as Narayanan Eq. 3, Korthikanti Eq. 7, the PaLM
  appendix B MFU definition and llm-foundry do; the *executed* work of a causal FlashAttention kernel is about
  half of it (`causal_fraction`).
- Model FLOPs per step = 3 x forward (Korthikanti 2022, arXiv:2205.05198, Eq. 7). Hardware FLOPs add the
  recomputed forward: full recompute = every decoder layer again (not the LM head: Narayanan Eq. 3's
  V/(16 L h) term); selective = the attention core forward once (Korthikanti 2022 s5; their printed Eq. 8
  charges it 3x, see `korthikanti_eq8_flops`).
- Mamba-2 layers of a hybrid model (ModelArch.layer_pattern): in_proj and out_proj are weight GEMMs; the SSD
  chunked scan is `estimate.mamba.scan_flops_per_token` (Dao & Gu 2024, arXiv:2405.21060 s6), counted like the
  attention core (not a weight GEMM, re-run by full recompute).
- LoRA/QLoRA: frozen base weights need no weight gradient, so the backward of a frozen GEMM is 1x forward
  (dgrad only) -- standard autograd accounting (Hu et al. 2021, LoRA; trainable adapters neglected).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from trainsizer.estimate.inputs import RECOMPUTE_CODE
from trainsizer.models.arch import ModelArch


@dataclass(frozen=True)
class LayerFlops:
    """Forward FLOPs per token of the decoder stack, summed over layers, split by operation class."""

    attn_proj: float  # Q/K/V/O projections (GQA or MLA low-rank parts)
    attn_core_per_ctx: float  # QK^T + AV per token per context token (x seq_len gives the non-causal cost)
    mlp_dense: float  # dense MLPs
    router: float  # MoE gates
    experts: float  # routed experts a token passes through (top-k)
    shared: float  # shared experts
    lm_head: float  # output projection (once, not per layer)
    # sliding-window layers (ModelArch.sliding_window / window_share): their tokens see at most `window` keys
    window: float = 0.0
    window_share: float = 0.0
    mixer: float = 0.0  # Mamba-2 in_proj + out_proj GEMMs (hybrid models)
    scan: float = 0.0  # Mamba-2 SSD scan, per token (no context dependence beyond the chunk)
    # chunked-attention layers (ModelArch.attention_chunk / chunk_share): a token sees only its own chunk
    chunk: float = 0.0
    chunk_share: float = 0.0
    # LatentMoE's fc1_latent_proj + fc2_latent_proj (ModelArch.moe_latent): dense GEMMs of every MoE layer's token
    latent_proj: float = 0.0

    def gemm(self) -> float:
        """All weight GEMMs of the decoder layers (no attention core, no SSD scan, no LM head)."""
        return self.attn_proj + self.mlp_dense + self.router + self.experts + self.shared + self.mixer + \
            self.latent_proj

    def moe_block(self) -> float:
        """An MoE block's GEMMs beyond attention: router, routed experts, shared experts, latent projections."""
        return self.router + self.experts + self.shared + self.latent_proj

    def mixing(self, seq_len: float) -> float:
        """Sequence-mixing work per token that is not a weight GEMM: the attention core and the SSD scan."""
        return self.attn_core(seq_len) + self.scan

    def attn_core(self, seq_len: float) -> float:
        """Non-causal attention score + value FLOPs per token at context `seq_len`; a windowed layer's token sees
        at most `window` keys."""
        if self.window_share <= 0 and self.chunk_share <= 0:
            return self.attn_core_per_ctx * seq_len
        ctx = (1.0 - self.window_share - self.chunk_share) * seq_len + self.window_share * np.minimum(
            seq_len, self.window)
        if self.chunk_share > 0:
            ctx = ctx + self.chunk_share * chunk_context(seq_len, self.chunk)
        return self.attn_core_per_ctx * ctx


def _mlp_gemm_weights(model: ModelArch, inner: int, width: int = 0) -> int:
    """Weight elements of one MLP's GEMMs (no biases) on `width` (0: hidden): SwiGLU has three matrices, GeLU two."""
    return (3 if model.mlp == "swiglu" else 2) * (width or model.hidden) * inner


def attention_gemm_weights(model: ModelArch) -> int:
    """Weight elements of one layer's attention projections (no biases or norms)."""
    h = model.hidden
    if model.attention == "mla":
        hd_qk = model.qk_nope_head_dim + model.qk_rope_head_dim
        if model.q_lora_rank:
            q = h * model.q_lora_rank + model.q_lora_rank * model.heads * hd_qk
        else:
            q = h * model.heads * hd_qk
        kv = h * (model.kv_lora_rank + model.qk_rope_head_dim) + model.kv_lora_rank * model.heads * (
            model.qk_nope_head_dim + model.v_head_dim
        )
        return q + kv + model.heads * model.v_head_dim * h
    return h * model.q_dim + 2 * h * model.kv_dim + model.attn_out_dim * h


def op_sac_moe_linears(model: ModelArch) -> tuple[tuple[str, int, int, bool], ...]:
    """The linears of one MoE block in forward order as torchtitan's per-op SAC meets them, each (shard, output
    width, input width, kept): wq, wk, wv (MLA: q, a zero-wide stand-in for k, kv), wo, then a shared expert's w1,
    w3 (SwiGLU) and w2; shard "tp" a column-parallel linear (output split over TP), "sp" a row-parallel one (input
    split). The policy keeps a biased linear's output (aten.addmm: in the save list, not counted as an mm) and an
    unbiased one's when its mm count is odd; the others it recomputes (SelectiveAC, torchtitan
    distributed/activation_checkpoint.py at b5bcd76c6). The router gate and the routed experts' grouped GEMMs are not
    here (`op_sac_gate_kept`; torch._grouped_mm is outside the save list)."""
    h = model.hidden
    q_dim = model.heads * (model.head_dim or h // model.heads)
    if model.attention == "mla":
        ops = [("tp", q_dim, h, False), ("tp", 0, h, False), ("tp", model.kv_dim, h, False),
               ("sp", h, model.attn_out_dim, False)]
    else:
        ops = [("tp", q_dim, h, model.qkv_bias), ("tp", model.kv_dim, h, model.qkv_bias),
               ("tp", model.kv_dim, h, model.qkv_bias), ("sp", h, model.attn_out_dim, model.out_bias)]
    f = model.shared_expert_ffn
    if f:
        ops += [("tp", f, h, False)] * (2 if model.mlp == "swiglu" else 1) + [("sp", h, f, False)]
    out, count = [], 0
    for shard, width, inner, biased in ops:
        count += not biased
        out.append((shard, width, inner, bool(biased or count % 2)))
    return tuple(out)


def router_score_bias(model: ModelArch) -> bool:
    """Whether ModelArch.router_bias is an expert score-correction bias outside the gate (DeepSeek-V3's
    e_score_correction_bias, aux-loss-free balancing; Megatron-Core moe_router_enable_expert_bias) rather than the
    gate linear's own bias (GPT-OSS): the presets set it with an fp32 router (models/hf_config.py)."""
    return bool(model.router_bias and model.router_fp32)


def op_sac_gate_kept(model: ModelArch) -> bool:
    """Whether torchtitan's per-op SAC keeps the MoE router gate's output: a biased gate runs aten.addmm (saved);
    an unbiased one's mm is always recomputed (SelectiveAC force_recompute_mm_shapes_by_fqns ["moe.router.gate"],
    b5bcd76c6). A score-correction bias (router_score_bias) is outside the gate."""
    return bool(model.router_bias and not router_score_bias(model))


def mla_up_proj_weights(model: ModelArch) -> int:
    """Weight elements of one layer's MLA up projections, what Megatron-Core's recompute_modules mla_up_proj
    re-runs (linear_q_up_proj, or linear_q_proj without a q low rank, and linear_kv_up_proj); 0 without MLA."""
    if model.attention != "mla":
        return 0
    nh, nope = model.heads, model.qk_nope_head_dim
    q_up = (model.q_lora_rank or model.hidden) * nh * (nope + model.qk_rope_head_dim)
    return q_up + model.kv_lora_rank * nh * (nope + model.v_head_dim)


def selective_recompute_flops(model: ModelArch, seq_len: float, modules: tuple[str, ...] | None = None) -> float:
    """Forward FLOPs per token that selective recompute runs again: the attention core (Korthikanti 2022 s5;
    Megatron-Core's default recompute_modules ["core_attn"]), or the GEMM and attention work of the listed
    modules (names.RECOMPUTE_MODULES; moe_act and layernorm re-run element-wise work only)."""
    lf = layer_flops(model)
    if modules is None:
        return lf.attn_core(seq_len)
    out = lf.attn_core(seq_len) if "core_attn" in modules else 0.0
    if "mla_up_proj" in modules:
        out += 2.0 * mla_up_proj_weights(model) * model.layers
    if "mlp" in modules:
        out += lf.mlp_dense
    if "moe" in modules:
        out += lf.moe_block()
    elif "shared_experts" in modules:
        out += lf.shared
    return out


def layer_flops(model: ModelArch) -> LayerFlops:
    """Forward FLOPs per token (2 x weight elements of each GEMM), summed over all decoder layers."""
    n_moe = model.moe_layer_count
    n_dense = model.dense_mlp_layers
    n_attn = model.attention_layers
    attn = 2.0 * attention_gemm_weights(model) * n_attn
    # QK^T: 2*d_qk per (query, key, head); AV: 2*d_v. MLA: d_qk = nope + rope, d_v = v_head_dim.
    d_qk, d_v = model.head_dims
    core = 2.0 * model.heads * (d_qk + d_v) * n_attn
    mlp = 2.0 * _mlp_gemm_weights(model, model.ffn) * n_dense
    router = experts = shared = latent = 0.0
    if n_moe:
        # the router reads the hidden state; under LatentMoE the routed experts run on the latent width and the two
        # projections (hidden x latent each) run once a token (Megatron-Bridge training/utils/flop_utils.py
        # moe_layer_flops at 067f987df: routed on moe_latent_size plus 4 x hidden x latent forward)
        router = 2.0 * model.hidden * model.experts * n_moe
        experts = 2.0 * model.experts_per_token * _mlp_gemm_weights(model, model.expert_ffn, model.expert_width) * n_moe
        if model.shared_expert_ffn:
            shared = 2.0 * _mlp_gemm_weights(model, model.shared_expert_ffn) * n_moe
        latent = 2.0 * 2.0 * model.hidden * model.moe_latent * n_moe
    lm_head = 2.0 * model.hidden * model.vocab
    mixer = scan = 0.0
    if model.mamba_layers:
        from trainsizer.estimate.mamba import mixer_gemm_weights, scan_flops_per_token

        mixer = 2.0 * mixer_gemm_weights(model) * model.mamba_layers
        scan = scan_flops_per_token(model) * model.mamba_layers
    return LayerFlops(attn, core, mlp, router, experts, shared, lm_head, float(model.sliding_window),
                      model.window_share, mixer, scan, float(model.attention_chunk), model.chunk_share, latent)


def forward_flops_per_token(model: ModelArch, seq_len: float) -> float:
    """Model forward FLOPs per token (non-causal attention convention)."""
    lf = layer_flops(model)
    return lf.gemm() + lf.mixing(seq_len) + lf.lm_head


def model_flops_per_token(model: ModelArch, seq_len: float, trains_base_weights: bool = True) -> float:
    """Model FLOPs per trained token, the MFU numerator: the work the training method needs, without recompute.

    Full training: 3 x forward (forward, input gradients, weight gradients; Korthikanti Eq. 7; PaLM app. B).
    Adapter methods (LoRA / QLoRA, `trains_base_weights=False`): 2 x forward -- the frozen base needs its
    forward and its input gradients but no weight gradients (Hu et al. 2021, LoRA s4.2; the "6N" convention
    would count ~N FLOPs per token never executed and lets MFU exceed 1). The adapters' own rank-r GEMMs
    (< 1% of the base at rank 16) are not counted. This is the one place MFU is defined for adapters:
    `hardware_flops_per_token` is the executed work (HFU), recompute included, so MFU <= HFU.
    """
    return (3.0 if trains_base_weights else 2.0) * forward_flops_per_token(model, seq_len)


def hardware_flops_per_token(
    model: ModelArch, seq_len: float, recompute: Any = "none", trains_base_weights: bool = True,
    recompute_modules: tuple[str, ...] | None = None, full_share: Any = 1.0, router_gemm: bool = True,
) -> Any:
    """FLOPs actually issued per token, counting recompute (Narayanan Eq. 3; Korthikanti Eq. 8).

    `recompute`: a mode name (-> float) or an array of RECOMPUTE_CODE values (-> array, one per strategy);
    `recompute_modules`: what selective re-runs (`selective_recompute_flops`); `full_share`: the share of the
    layers full recompute re-runs (partial_recompute.py: Megatron's block method; 1 = every layer).
    `router_gemm` False: the MoE gate runs no GEMM (NeMo AutoModel's FakeBalancedGate, moe_routing fake-balanced), so
    its FLOPs are not issued, in any pass. Non-causal attention convention (what the papers count); see
    `causal_fraction` for the executed share.
    """
    if isinstance(recompute, str):
        if recompute not in RECOMPUTE_CODE:
            from trainsizer.errors import unknown_name

            raise unknown_name("strategy.recompute", "recompute mode", recompute, RECOMPUTE_CODE)
        return float(hardware_flops_per_token(model, seq_len, RECOMPUTE_CODE[recompute], trains_base_weights,
                                              recompute_modules, full_share, router_gemm))
    lf = layer_flops(model)
    fwd_layers = lf.gemm() + lf.mixing(seq_len)
    bwd_mult = 2.0 if trains_base_weights else 1.0
    code = np.asarray(recompute)
    recomputed = np.where(code == RECOMPUTE_CODE["full"], fwd_layers * np.asarray(full_share, dtype=float),
                          np.where(code == RECOMPUTE_CODE["selective"],
                                   selective_recompute_flops(model, seq_len, recompute_modules), 0.0))
    # a frozen LM head (LoRA) needs its input gradient only, like the frozen decoder GEMMs
    issued = (1.0 + bwd_mult) * fwd_layers + (1.0 + bwd_mult) * lf.lm_head + recomputed
    if router_gemm:
        return issued
    router_again = np.where(code == RECOMPUTE_CODE["full"], np.asarray(full_share, dtype=float),
                            np.where((code == RECOMPUTE_CODE["selective"]) & ("moe" in (recompute_modules or ())),
                                     1.0, 0.0))
    return issued - lf.router * (1.0 + bwd_mult + router_again)


def chunk_context(seq_len: Any, chunk: float) -> Any:
    """Mean length of the chunk a position of a `seq_len` row falls in, for chunks of `chunk` positions (the last one
    r = seq_len mod chunk long): (n chunk^2 + r^2) / seq_len; seq_len itself up to one chunk. Chunked attention's
    non-causal context, as min(seq_len, window) is a sliding window's (Llama 4 chunked_attention layers)."""
    s = np.maximum(np.asarray(seq_len, float), 1.0)
    n = np.floor(s / chunk)
    r = s - n * chunk
    return (n * chunk * chunk + r * r) / s


def chunk_causal_keys(span: Any, chunk: float) -> Any:
    """Keys a query of a causal chunked-attention layer attends over, averaged over a `span`-long row, in 128-wide
    tiles: each chunk is a causal row of its own, L x causal_fraction(L) keys per query (Llama 4 chunked layers)."""
    s = np.maximum(np.asarray(span, float), 1.0)
    n = np.floor(s / chunk)
    r = s - n * chunk
    return (n * chunk * chunk * causal_fraction(chunk) + r * r * causal_fraction(np.maximum(r, 1.0))) / s


def causal_fraction(seq_len: float, block: float = 128.0) -> float:
    """Share of the s x s score matrix a causal block-sparse kernel computes: (1 + block/s)/2.

    FlashAttention skips tiles above the diagonal and computes the diagonal tiles fully (Dao 2023, FA2 s3.1).
    """
    return np.minimum(1.0, 0.5 * (1.0 + block / np.maximum(seq_len, 1.0)))


# ---------------------------------------------------------------------------- published closed forms
def narayanan_eq3_flops(batch: float, seq: float, layers: float, hidden: float, vocab: float) -> float:
    """Narayanan et al. 2021 Eq. 3: FLOPs per iteration with full recompute, GPT (ffn = 4h, MHA)."""
    return 96.0 * batch * seq * layers * hidden**2 * (1 + seq / (6 * hidden) + vocab / (16 * layers * hidden))


def gptneox_logged_flops(batch: float, seq: float, params: float, layers: float, hidden: float) -> float:
    """FLOPs per iteration as GPT-NeoX logged them from 2021 to September 2023 (megatron/logging.py get_flops,
    "approx flops per GPU" x GPUs x iteration time): batch x seq x (6 x all parameters + 60 x seq x hidden x
    layers), the parameters counted over every model-parallel rank (utils.get_total_params); replaced by
    Narayanan et al. 2021 Eq. 3 in EleutherAI/gpt-neox PR 1044 (commit 5f36401)."""
    return batch * seq * (6.0 * params + 60.0 * seq * hidden * layers)


def korthikanti_eq7_flops(batch: float, seq: float, layers: float, hidden: float, vocab: float) -> float:
    """Korthikanti et al. 2022 Eq. 7: model FLOPs per iteration (no recompute), GPT."""
    return 72.0 * batch * seq * layers * hidden**2 * (1 + seq / (6 * hidden) + vocab / (12 * hidden * layers))


def korthikanti_eq8_flops(batch: float, seq: float, layers: float, hidden: float, vocab: float) -> float:
    """Korthikanti et al. 2022 Eq. 8 as printed: hardware FLOPs per iteration with selective recompute, GPT.

    The printed s/(3h) charges 3x the attention-core forward for the recompute (the work re-run is 1x, which
    `hardware_flops_per_token(..., "selective")` counts); kept as the paper's HFU definition for its tables.
    """
    return 72.0 * batch * seq * layers * hidden**2 * (1 + seq / (3 * hidden) + vocab / (12 * hidden * layers))


def nemo_llama_flops(batch: float, seq: float, layers: float, hidden: float, query_groups: float, heads: float,
                     ffn: float, vocab: float) -> float:
    """NeMo's model FLOPs per iteration for the Llama 2 / 3 families (NVIDIA/NeMo nemo/utils/flops_formulas.py
    llama2 / llama3, 2025): b s L h^2 (12 + 12 g / a + 18 f / h + 12 s / h + 6 V / (L h)); attention counted
    non-causal (12 s / h), V the family's vocabulary (LLM_VOCAB_SIZE_MAP: 32,000 / 128,256)."""
    return batch * seq * layers * hidden**2 * (12.0 + 12.0 * query_groups / heads + 18.0 * ffn / hidden
                                              + 12.0 * seq / hidden + 6.0 * vocab / (layers * hidden))


def llmfoundry_flops_per_seq(num_params: float, layers: float, d_model: float, seq: float) -> float:
    """llm-foundry / PaLM appendix B: 6 * N * s + 3 * (4 * L * d * s^2) per sequence (MFU numerator).

    Source: mosaicml/llm-foundry scripts/train/benchmarking (`attn_flops_per_seq = 4 * L * d * s^2`).
    """
    return 6.0 * num_params * seq + 3.0 * 4.0 * layers * d_model * seq**2


def palm_flops_per_token(params_non_embedding: float, layers: float, heads: float, head_dim: float,
                         seq: float) -> float:
    """PaLM appendix B: 6N + 12 L H Q T model FLOPs per token (N non-embedding params)."""
    return 6.0 * params_non_embedding + 12.0 * layers * heads * head_dim * seq
