"""Transformer architecture description and exact parameter counts.

`ModelArch` is the one description every estimator reads. It covers dense decoder-only models
(Llama/Mistral/Qwen/GPT-2/NeoX/Megatron GPT), GQA/MQA, MLA (DeepSeek-V2/V3) and MoE layers with routed and
shared experts. Parameter counts follow the module shapes of the Hugging Face implementations
(`modeling_llama.py`, `modeling_qwen2_moe.py`, `modeling_deepseek_v3.py`, `modeling_gpt2.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from functools import cached_property

# relu2: squared ReLU, two matrices like gelu (So et al. 2021, Primer; Nemotron-H / Nemotron 3 mlp_hidden_act)
MLP_KINDS = ("swiglu", "gelu", "relu2")
NORM_KINDS = ("rmsnorm", "layernorm")
ATTENTION_KINDS = ("gqa", "mla")
POSITION_KINDS = ("rope", "learned", "alibi")
# Megatron-Core hybrid layer symbols (megatron/core/ssm/mamba_hybrid_layer_allocation.py Symbols; Nemotron-H's
# hybrid_override_pattern): each character is one layer with its own pre-norm and residual
HYBRID_SYMBOLS = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}


@dataclass(frozen=True)
class LayerParams:
    """Parameter counts of one decoder layer, split the way parallelism splits them."""

    attention: int  # q/k/v/o projections (+ biases, q/k norms, MLA low-rank parts)
    norms: int  # the layer's pre-attention and pre-MLP norms
    mlp_dense: int  # dense MLP (0 on an MoE layer)
    router: int  # MoE gate (+ correction bias)
    experts_total: int  # all routed experts
    experts_active: int  # routed experts one token passes through
    shared: int  # shared experts (+ their gate)
    is_moe: bool
    mixer: int = 0  # Mamba-2 mixer of a hybrid model's M layer (in_proj, conv1d, dt_bias, A_log, D, gated norm, out_proj)
    # LatentMoE's fc1_latent_proj / fc2_latent_proj (ModelArch.moe_latent): dense, replicated over TP
    latent_proj: int = 0

    @property
    def total(self) -> int:
        return self.attention + self.norms + self.mlp_dense + self.router + self.experts_total + self.shared + \
            self.mixer + self.latent_proj

    @property
    def active(self) -> int:
        return self.attention + self.norms + self.mlp_dense + self.router + self.experts_active + self.shared + \
            self.mixer + self.latent_proj


@dataclass(frozen=True)
class ModelArch:
    """A decoder-only transformer, as the estimators see it.

    Sizes are counts (not bytes). `ffn` is the dense MLP intermediate size; `expert_ffn` the intermediate
    size of one routed expert; `shared_expert_ffn` the *total* intermediate size of all shared experts
    together (DeepSeek: n_shared_experts * moe_intermediate_size; Qwen-MoE: shared_expert_intermediate_size).
    """

    name: str
    family: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    head_dim: int = 0  # 0 -> hidden // heads
    mlp: str = "swiglu"
    norm: str = "rmsnorm"
    position: str = "rope"
    max_position: int = 4096  # positions the model was trained at (max_position_embeddings); 0 = not stated (inline)
    tied_embeddings: bool = False
    qkv_bias: bool = False
    out_bias: bool = False
    mlp_bias: bool = False
    # the gated activation clamps both halves before it (gpt-oss swiglu_limit: glu at most the limit, linear within
    # +-limit; Megatron-Core activation_func_clamp_value, estimate.step_time._activation_clamp_time)
    activation_clamp: bool = False
    # YaRN's attention factor, multiplied into RoPE's cos / sin (transformers _compute_yarn_parameters attention_factor;
    # Megatron-Core's concentration factor, the mscale it passes to apply_rotary_pos_emb): 1 = none. Transformer
    # Engine's fused RoPE takes no such factor, so Megatron-Core runs RoPE unfused where it is not 1
    # (estimate.step_time._rope_unfused_time)
    rope_attention_factor: float = 1.0
    # the share of each head's dims RoPE rotates (GPT-NeoX / Pythia rotary_pct 0.25, HF GPTNeoXConfig rotary_pct):
    # eager code rotates that slice and concatenates it with the rest (compute._eager_rope_bytes); 1 = all
    rotary_fraction: float = 1.0
    qk_norm: bool = False
    # an RMSNorm after attention and after the MLP too, on the branch before its residual add (4 norms a layer:
    # Gemma 2 / 3, transformers modeling_gemma2.py post_attention_layernorm / post_feedforward_layernorm; LitGPT
    # config.py post_attention_norm / post_mlp_norm; GLM-4-0414): their weights, element-wise work and saved tensors
    # (estimate.compute._norm_residual_rope_bytes, activations._layer_items)
    sandwich_norms: bool = False
    # the attention logits are soft-capped, tanh(scores / cap) * cap before the softmax (Gemma 2: transformers
    # Gemma2Config attn_logit_softcapping 50.0, LitGPT config.py attention_logit_softcapping): a flash kernel applies
    # it inside, an eager attention streams three more passes over the scores (estimate.step_time._eager_attention_time)
    attention_softcap: bool = False
    # attention and MLP read the same layer input and their outputs are added once (GPT-J; GPT-NeoX / Pythia
    # gpt_j_residual, HF GPTNeoXConfig use_parallel_residual; PaLM): under TP one forward all-reduce of the summed
    # outputs instead of one per branch (estimate.step_time._tp_comm)
    parallel_residual: bool = False
    # MoE
    experts: int = 0
    experts_per_token: int = 0
    expert_ffn: int = 0
    shared_expert_ffn: int = 0
    shared_expert_gate: bool = False  # Qwen2-MoE: sigmoid gate on the shared expert (hidden -> 1)
    dense_layers: int = 0  # the first k layers use a dense MLP (DeepSeek first_k_dense_replace)
    moe_every: int = 1  # MoE on every n-th layer (Qwen2-MoE decoder_sparse_step)
    router_bias: bool = False  # DeepSeek-V3 e_score_correction_bias
    # gate logits computed in fp32 (DeepSeek-V2/V3: HF DeepseekV3TopkRouter F.linear on float32 inputs and weight;
    # Megatron-Bridge DeepSeekModelProvider moe_router_dtype "fp32"): the router GEMM runs on the FP32 units
    router_fp32: bool = False
    # group-limited routing (DeepSeek-V2 group_limited_greedy, V3 noaux_tc: HF n_group / topk_group; Megatron-Core
    # moe_router_num_groups / moe_router_group_topk): the routed experts form `expert_groups` contiguous groups and a
    # token's top-k are taken from the `expert_groups_per_token` groups with the highest scores (1 / 1: no limit)
    expert_groups: int = 1
    expert_groups_per_token: int = 1
    # Attention kind; MLA parameters (DeepSeek-V2/V3)
    attention: str = "gqa"
    q_lora_rank: int = 0  # 0: queries are not compressed
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    mtp_layers: int = 0  # DeepSeek-V3 multi-token prediction modules (not in the headline count)
    # a hybrid model's MTP module as HYBRID_SYMBOLS (Nemotron 3 Super: config.json mtp_hybrid_override_pattern '*E', an
    # attention and an MoE layer; Megatron-Bridge nemotron_h_bridge.py _hf_mtp_config at 067f987df); "" = the last
    # decoder layer repeated, DeepSeek-V3's form (Megatron-Core multi_token_prediction.py)
    mtp_pattern: str = ""
    source: str = ""  # where the config came from (preset file, config.json path)
    notes: tuple[str, ...] = field(default=())
    # Added after the skeleton (defaults keep older constructors valid):
    mlp_only_layers: tuple[int, ...] = field(default=())  # Qwen-MoE: layers forced to a dense MLP
    moe_layer_offset: int = 1  # MoE where (index + offset) % moe_every == 0: Qwen 1, DeepSeek 0
    unknown_keys: tuple[str, ...] = field(default=())  # config.json keys the loader did not understand
    # sliding-window attention (Mistral v0.1, Gemma 2 / 3, GPT-OSS, OLMo 3): `window_layers` of the layers attend only
    # to the last `sliding_window` positions (0: no window); their attention core spans the window, not the row
    sliding_window: int = 0
    window_layers: int = 0
    # chunked local attention (Llama 4 attention_chunk_size; transformers modeling_llama4.py chunked_attention layers):
    # `chunk_layers` of the layers split the row into blocks of `attention_chunk` positions and a query attends only
    # to the earlier positions of its own block (0: no chunking)
    attention_chunk: int = 0
    chunk_layers: int = 0
    # hybrid Mamba-2 / attention models (Megatron-Core MambaModel hybrid_override_pattern, Nemotron-H, Nemotron 3):
    # one symbol of HYBRID_SYMBOLS per layer; "" = every layer is attention + MLP. The Mamba-2 mixer (Dao & Gu 2024,
    # arXiv:2405.21060; Megatron-Core ssm/mamba_mixer.py): ssm_heads x ssm_head_dim = d_inner, ssm_state (N),
    # ssm_groups (B / C groups), ssm_conv (depthwise conv1d width), ssm_chunk (the SSD scan's chunk length Q)
    layer_pattern: str = ""
    ssm_heads: int = 0
    ssm_head_dim: int = 0
    ssm_state: int = 0
    ssm_groups: int = 1
    ssm_conv: int = 4
    ssm_chunk: int = 128
    # LatentMoE (Nemotron 3 Super / Ultra: config.json moe_latent_size; 0 = none): the router and the shared expert read
    # the hidden state, then fc1_latent_proj (hidden -> latent) runs before the dispatch, the routed experts run on the
    # latent width (fc1 latent -> ffn, fc2 ffn -> latent), the all-to-all carries latent-wide tokens and
    # fc2_latent_proj (latent -> hidden) runs after the combine (Megatron-LM megatron/core/transformer/moe/moe_layer.py
    # preprocess / postprocess, experts.py input_size, at d98e8a64d); both projections are TELinear
    # parallel_mode="duplicated", is_expert=False: whole on every TP rank, on its sequence-parallel tokens
    moe_latent: int = 0

    def __post_init__(self) -> None:
        if self.head_dim == 0 and self.heads:
            if self.attention == "mla" and self.qk_nope_head_dim + self.qk_rope_head_dim:
                # MLA: the query/key head width (V heads are v_head_dim wide; see q_dim / v_dim)
                object.__setattr__(self, "head_dim", self.qk_nope_head_dim + self.qk_rope_head_dim)
            else:
                object.__setattr__(self, "head_dim", self.hidden // self.heads)

    # ------------------------------------------------------------------ derived shapes
    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def expert_width(self) -> int:
        """The routed experts' input and output width: moe_latent under LatentMoE, else the hidden size."""
        return self.moe_latent or self.hidden

    @property
    def window_share(self) -> float:
        """Share of the decoder layers with a sliding attention window (0 without one)."""
        if self.sliding_window <= 0 or self.layers <= 0:
            return 0.0
        return min(self.window_layers, self.layers) / self.layers

    @property
    def chunk_share(self) -> float:
        """Share of the decoder layers with chunked local attention (0 without it)."""
        if self.attention_chunk <= 0 or self.layers <= 0:
            return 0.0
        return min(self.chunk_layers, self.layers) / self.layers

    @property
    def head_dims(self) -> tuple[int, int]:
        """(query/key, value) width of one attention head: MLA's nope + rope and v_head_dim, else head_dim."""
        if self.attention == "mla":
            return self.qk_nope_head_dim + self.qk_rope_head_dim, self.v_head_dim
        return self.head_dim, self.head_dim

    @property
    def q_dim(self) -> int:
        """Width of the concatenated query heads."""
        if self.attention == "mla":
            return self.heads * (self.qk_nope_head_dim + self.qk_rope_head_dim)
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of K (and of V) for GQA; for MLA the per-head K width times heads."""
        if self.attention == "mla":
            return self.heads * (self.qk_nope_head_dim + self.qk_rope_head_dim)
        return self.kv_heads * self.head_dim

    @property
    def v_dim(self) -> int:
        if self.attention == "mla":
            return self.heads * self.v_head_dim
        return self.kv_heads * self.head_dim

    @property
    def attn_out_dim(self) -> int:
        """Input width of the output projection."""
        if self.attention == "mla":
            return self.heads * self.v_head_dim
        return self.heads * self.head_dim

    @property
    def is_hybrid(self) -> bool:
        return bool(self.layer_pattern)

    def layer_kind(self, index: int) -> str:
        """"layer" (attention + MLP) or, in a hybrid model, the layer's HYBRID_SYMBOLS kind."""
        return HYBRID_SYMBOLS[self.layer_pattern[index]] if self.layer_pattern else "layer"

    @cached_property
    def attention_layers(self) -> int:
        """Layers with an attention block (every layer unless hybrid)."""
        return self.layer_pattern.count("*") if self.layer_pattern else self.layers

    @cached_property
    def dense_mlp_layers(self) -> int:
        """Layers with a dense MLP."""
        return self.layer_pattern.count("-") if self.layer_pattern else self.layers - self.moe_layer_count

    @cached_property
    def mamba_layers(self) -> int:
        return self.layer_pattern.count("M")

    @property
    def ssm_inner(self) -> int:
        """d_inner of the Mamba-2 mixer: heads x head dim."""
        return self.ssm_heads * self.ssm_head_dim

    @property
    def ssm_in_proj_out(self) -> int:
        """in_proj output width: z and x (d_inner each), B and C (groups x state each), dt (one per head)."""
        return 2 * self.ssm_inner + 2 * self.ssm_groups * self.ssm_state + self.ssm_heads

    def mamba_mixer_params(self) -> int:
        """One Mamba-2 mixer (Megatron-Core MambaMixer; HF NemotronHMamba2Mixer): in_proj (no bias), depthwise conv1d
        over x, B, C with bias, dt_bias / A_log / D per head, the gated RMSNorm over d_inner, out_proj (no bias)."""
        conv_dim = self.ssm_inner + 2 * self.ssm_groups * self.ssm_state
        return (self.hidden * self.ssm_in_proj_out + conv_dim * (self.ssm_conv + 1) + 3 * self.ssm_heads
                + self.ssm_inner + self.ssm_inner * self.hidden)

    def layer_is_moe(self, index: int) -> bool:
        """Whether decoder layer `index` (0-based) has an MoE MLP."""
        if self.layer_pattern:
            return self.layer_pattern[index] == "E"
        if not self.is_moe or index < self.dense_layers or index in self.mlp_only_layers:
            return False
        return (index + self.moe_layer_offset) % self.moe_every == 0

    @cached_property
    def moe_layer_count(self) -> int:
        return sum(self.layer_is_moe(i) for i in range(self.layers))

    # ------------------------------------------------------------------ parameter counts
    def _norm_params(self) -> int:
        return self.hidden * (2 if self.norm == "layernorm" else 1)

    @property
    def norms_per_layer(self) -> int:
        """Norms of a decoder layer over the hidden size: before attention and before the MLP, and after each where
        the model has sandwich norms."""
        return 4 if self.sandwich_norms else 2

    def attention_params(self) -> int:
        h = self.hidden
        if self.attention == "mla":
            hd_qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            if self.q_lora_rank:
                q = h * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * self.heads * hd_qk
            else:
                q = h * self.heads * hd_qk
            kv = (
                h * (self.kv_lora_rank + self.qk_rope_head_dim)
                + self.kv_lora_rank  # kv_a_layernorm
                + self.kv_lora_rank * self.heads * (self.qk_nope_head_dim + self.v_head_dim)
            )
            o = self.heads * self.v_head_dim * h
            if self.qkv_bias:  # DeepSeek attention_bias: biases on q_a_proj and kv_a_proj_with_mqa only
                q += self.q_lora_rank
                kv += self.kv_lora_rank + self.qk_rope_head_dim
            if self.out_bias:
                o += h
            return q + kv + o
        qd, kvd = self.heads * self.head_dim, self.kv_heads * self.head_dim
        p = h * qd + 2 * h * kvd + qd * h
        if self.qkv_bias:
            p += qd + 2 * kvd
        if self.out_bias:
            p += h
        if self.qk_norm:
            p += 2 * self.head_dim
        return p

    def mlp_params(self, inner: int, width: int = 0) -> int:
        """One MLP (dense, one expert, or the shared experts) of intermediate size `inner` on `width` (0: hidden)."""
        h = width or self.hidden
        if self.mlp == "swiglu":
            p = 3 * h * inner
            return p + (2 * inner + h if self.mlp_bias else 0)
        p = 2 * h * inner
        return p + (inner + h if self.mlp_bias else 0)

    def _hybrid_layer_params(self, kind: str) -> LayerParams:
        """One hybrid layer: its block and its own pre-norm (Megatron-Core MambaLayer / TransformerLayer)."""
        norm = self._norm_params()
        if kind == "mamba":
            return LayerParams(0, norm, 0, 0, 0, 0, 0, False, mixer=self.mamba_mixer_params())
        if kind == "attention":
            return LayerParams(self.attention_params(), norm, 0, 0, 0, 0, 0, False)
        if kind == "mlp":
            return LayerParams(0, norm, self.mlp_params(self.ffn), 0, 0, 0, 0, False)
        return self._moe_params(0, norm)

    def latent_proj_params(self) -> int:
        """LatentMoE's two projections, hidden x latent each (+ their biases with mlp_bias: Megatron-Core's
        add_bias_linear); 0 without a latent width."""
        if not self.moe_latent:
            return 0
        return 2 * self.hidden * self.moe_latent + (self.moe_latent + self.hidden if self.mlp_bias else 0)

    def _moe_params(self, attn: int, norms: int) -> LayerParams:
        one_expert = self.mlp_params(self.expert_ffn, self.expert_width)
        router = self.hidden * self.experts + (self.experts if self.router_bias else 0)
        shared = self.mlp_params(self.shared_expert_ffn) if self.shared_expert_ffn else 0
        if self.shared_expert_gate:
            shared += self.hidden
        return LayerParams(attention=attn, norms=norms, mlp_dense=0, router=router,
                           experts_total=self.experts * one_expert, experts_active=self.experts_per_token * one_expert,
                           shared=shared, is_moe=True, latent_proj=self.latent_proj_params())

    def layer_params(self, index: int) -> LayerParams:
        if self.layer_pattern:
            return self._hybrid_layer_params(self.layer_kind(index))
        attn = self.attention_params()
        norms = self.norms_per_layer * self._norm_params()
        if not self.layer_is_moe(index):
            return LayerParams(attn, norms, self.mlp_params(self.ffn), 0, 0, 0, 0, False)
        return self._moe_params(attn, norms)

    def mtp_block_params(self) -> tuple[LayerParams, ...]:
        """The layers of one MTP module (its eh_proj and norms apart): the pattern's, or the last decoder layer."""
        if self.mtp_pattern:
            return tuple(self._hybrid_layer_params(HYBRID_SYMBOLS[s]) for s in self.mtp_pattern)
        return (self.layer_params(self.layers - 1),)

    def mtp_block_moe_layers(self) -> int:
        """MoE layers in one MTP module (the last decoder layer's kind without a pattern, as memory counts it)."""
        return self.mtp_pattern.count("E") if self.mtp_pattern else 1

    @cached_property
    def embedding_params(self) -> int:
        """Input token embedding (+ learned position embedding)."""
        pos = self.max_position * self.hidden if self.position == "learned" else 0
        return self.vocab * self.hidden + pos

    @cached_property
    def lm_head_params(self) -> int:
        """Output projection; 0 when tied to the input embedding."""
        return 0 if self.tied_embeddings else self.vocab * self.hidden

    @cached_property
    def final_norm_params(self) -> int:
        return self._norm_params()

    @cached_property
    def params_total(self) -> int:
        """All parameters, as published (MTP modules excluded)."""
        body = sum(self.layer_params(i).total for i in range(self.layers))
        return body + self.embedding_params + self.lm_head_params + self.final_norm_params

    @cached_property
    def params_active(self) -> int:
        """Parameters one token passes through (equals `params_total` for dense models).

        Definition: attention, norms, dense MLPs, the router (incl. its correction bias), `experts_per_token`
        routed experts and the shared experts of every layer, plus the input embedding and the LM head (as
        Mixtral's 12.9B and Qwen3's 22B count them), MTP modules excluded. DeepSeek's own 37B / 36.7B for V3
        is 1.5% / 2.3% below this count (see models/presets/index.json).
        """
        body = sum(self.layer_params(i).active for i in range(self.layers))
        return body + self.embedding_params + self.lm_head_params + self.final_norm_params

    @cached_property
    def params_non_embedding(self) -> int:
        return self.params_total - self.embedding_params - self.lm_head_params

    def with_(self, **changes: object) -> ModelArch:
        """A copy with some fields changed (cached counts recomputed)."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, object]:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["notes"] = list(self.notes)
        d["mlp_only_layers"] = list(self.mlp_only_layers)
        d["unknown_keys"] = list(self.unknown_keys)
        d["params_total"] = self.params_total
        d["params_active"] = self.params_active
        return d
