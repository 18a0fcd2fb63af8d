"""Model states: parameter counts per pipeline stage and bytes per parameter (weights, gradients, optimizer).

Pure functions, precomputed once per (model, training) and then evaluated with numpy over many strategies.

Origins (one line each):
- Mixed-precision Adam = (2 + 2 + K) Psi, K = 12; ZeRO stages 1/2/3 divide optimizer / + gradients / +
  parameters by N_d: Rajbhandari et al. 2020 (ZeRO, arXiv:1910.02054) Sec. 3.1 / 5, Fig. 1.
- Megatron-Core bytes per parameter (bf16 + fp32 main_grad: 6 + 12/d, fp16: 4 + 16/d, fp32: 8 + 8/d):
  Megatron-LM docs/user-guide/features/dist_optimizer.md.
- Layer split across pipeline stages (the first L mod p stages hold one more layer, `pipeline.py`; embedding
  on the first stage, final norm + LM head on the last; tied embeddings keep a copy on the last stage):
  Megatron-LM `get_num_layers_to_build` / `shared_embedding_or_output_weight`.
- Expert parameters sharded over EP (carved out of DP) then over expert-TP = TP; attention / shared experts /
  router replicated across EP: Megatron-Core MoE docs (moe/README.md, "Parallel folding").
- LoRA trainable parameters r * (d_in + d_out) per adapted matrix: Hu et al. 2021 (arXiv:2106.09685) Sec. 4.
- NF4 + quantisation constants: Dettmers et al. 2023 (QLoRA, arXiv:2305.14314) Sec. 3.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np
import yaml

from trainsizer.errors import SpecError, did_you_mean
from trainsizer.estimate.inputs import OPTIMIZERS, PRECISIONS, Training, act_bytes
from trainsizer.messages import msg
from trainsizer.models.arch import ModelArch
from trainsizer.names import (
    FP4_RECIPES,
    LORA_DEFAULT_TARGETS,
    LORA_LINEAR_TARGETS,
    LORA_TARGETS,
    MOE_ROUTINGS,
    OPTIMIZER_IMPLS,
)

LORA_TARGET_NAMES = LORA_TARGETS  # trainsizer.names
LINEAR_NAMES = ("q_proj", "k_proj", "v_proj", "qkv_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@lru_cache(maxsize=1)
def load_memory_constants() -> dict[str, Any]:
    """The named constants in `estimate/data/memory_constants.yaml` (cached)."""
    text = resources.files("trainsizer.estimate").joinpath("data/memory_constants.yaml").read_text()
    return yaml.safe_load(text)


def deepspeed_zero3_largest_module_params(model: ModelArch, tp: Any) -> Any:
    """Parameters (per TP rank) of a decoder layer's largest module, the unit DeepSpeed ZeRO-3 gathers and reduces
    whole: fc1 / fc2 (or w1, w2, w3) or the fused QKV."""
    h = float(model.hidden)
    inner = max(model.ffn, model.expert_ffn, model.shared_expert_ffn)
    return max(h * inner, h * (model.q_dim + 2 * model.kv_dim)) / tp


def deepspeed_layer_modules(model: ModelArch, is_moe: bool, split: bool) -> list[tuple[float, bool]]:
    """(elements before TP, a routed expert's) of one decoder layer's weight-owning modules in the order they run
    forward, the order of DeepSpeed's trace: q, k, v (one fused QKV where the stack fuses them: `split` false, as
    Megatron does), o; the MLP's in-projections (gate, up, or one fused) and out-projection, or on an MoE layer the
    router, each routed expert's linears and the shared expert's (transformers LlamaDecoderLayer,
    MixtralSparseMoeBlock). MLA's low-rank projections and a hybrid model's layers count as one module (their split
    is not modelled); norms and biases are left out (DeepSpeed keeps them gathered: ds_persist)."""
    h = float(model.hidden)
    if model.layer_pattern:
        return [(float(sum(model.layer_params(i).total for i in range(model.layers))) / max(model.layers, 1), False)]
    if model.attention == "mla":
        attn = [float(model.attention_params())]
    else:
        q, kv = h * model.q_dim, h * model.kv_dim
        attn = ([q, kv, kv] if split else [q + 2.0 * kv]) + [float(model.q_dim) * h]

    def mlp(inner: int) -> list[float]:
        if model.mlp == "swiglu":
            return ([h * inner] * 2 if split else [2.0 * h * inner]) + [h * inner]
        return [h * inner] * 2

    if not is_moe:
        return [(p, False) for p in attn + mlp(model.ffn)]
    shared = mlp(model.shared_expert_ffn) if model.shared_expert_ffn else []
    return ([(p, False) for p in attn + [h * model.experts]] + [(p, True) for p in mlp(model.expert_ffn) * model.experts]
            + [(p, False) for p in shared])


def deepspeed_zero3_kept_params(model: ModelArch, tp: Any, layer_params: Any, reuse_distance_params: Any,
                                split: bool = False) -> Any:
    """Parameters of a decoder layer (per TP rank) that DeepSpeed ZeRO-3 keeps gathered from one use to the next:
    a module is released after its fetch unless it recurs within stage3_max_reuse_distance elements of the trace
    (partitioned_param_coordinator.py __params_to_release, v0.6+: the modules after it are walked, the distance
    checked before each; stage3.py _keep_for_later, v0.3), and between a module's recompute and its backward the
    trace runs the modules after it in the layer twice (their recompute, then their backward), so a module stays
    when those hold less than half the distance: summed module by module (`deepspeed_layer_modules`, `split` as the
    stack builds its projections), averaged over the layers, at most `layer_params`. Used by the memory estimate
    (what stays live) and the step time (what is gathered again)."""
    reuse = np.asarray(reuse_distance_params, dtype=float)
    kinds = collections.Counter(model.layer_params(i).is_moe for i in range(model.layers))
    total = 0.0
    for is_moe, n in kinds.items():
        after, kept = 0.0, 0.0
        for size, _ in reversed(deepspeed_layer_modules(model, is_moe, split)):
            kept = kept + np.where(2.0 * after / tp < reuse, size / tp, 0.0)
            after += size
        total = total + n * kept
    return np.minimum(layer_params, total / max(model.layers, 1))


def check_training(training: Training) -> None:
    """Reject unknown names in `training` (SpecError with a suggestion)."""
    from trainsizer.errors import unknown_name
    from trainsizer.estimate.inputs import METHODS

    if training.method not in METHODS:
        raise unknown_name("training.method", "training method", training.method, METHODS)
    if training.precision not in PRECISIONS:
        raise unknown_name("training.precision", "precision", training.precision, PRECISIONS)
    if training.optimizer not in OPTIMIZERS:
        raise unknown_name("training.optimizer", "optimizer", training.optimizer, OPTIMIZERS)
    for t in training.lora_targets:
        if t not in LORA_TARGET_NAMES:
            raise unknown_name("training.lora_targets", "LoRA target module", t, LORA_TARGET_NAMES)
    if training.method in ("lora", "qlora") and training.lora_rank <= 0:
        raise SpecError(
            "training.lora_rank", msg("lora_rank_positive"), value=training.lora_rank, allowed="1, 2, ..."
        )
    if training.seq_len <= 0 or training.global_batch_seqs <= 0:
        raise SpecError("training.seq_len", msg("seq_and_batch_positive"))
    if training.sample_mean_tokens < 0 or not 0 <= training.sample_sigma <= 3:
        raise SpecError("training.sample_sigma", msg("sample_lengths_range"),
                        value=(training.sample_mean_tokens, training.sample_sigma),
                        allowed="sample_mean_tokens >= 0 (0 = rows of seq_len), 0 <= sample_sigma <= 3")
    if not training.moe_capacity_factor > 0:
        raise SpecError("training.moe_capacity_factor", msg("moe_capacity_positive"),
                        value=training.moe_capacity_factor, allowed="> 0: 1.0, 1.25, 2.0, ...")
    if not 0.0 <= training.pad_share < 1.0:
        raise SpecError("training.pad_share", msg("pad_share_range"), value=training.pad_share,
                        allowed="0 <= pad_share < 1: 0 (no padding), 0.88 (a 512-token row holding 62 tokens)")
    for name in ("hidden_dropout", "attention_dropout"):
        if not 0.0 <= getattr(training, name) < 1.0:
            raise SpecError(f"training.{name}", msg("dropout_range"), value=getattr(training, name),
                            allowed="0 <= p < 1: 0 (no dropout), 0.1 (Megatron-LM's default)")
    if training.moe_routing not in MOE_ROUTINGS:
        raise unknown_name("training.moe_routing", "MoE routing pattern", training.moe_routing, MOE_ROUTINGS)
    if min(training.eval_samples, training.eval_micro_batch, training.eval_passes) < 0:
        raise SpecError("training.eval_samples", msg("eval_fields_range"),
                        value=(training.eval_samples, training.eval_micro_batch, training.eval_passes),
                        allowed="eval_samples, eval_micro_batch, eval_passes >= 0 (0 samples or passes = no evaluation)")
    if training.save_count < 0:
        raise SpecError("training.save_count", msg("save_count_range"), value=training.save_count,
                        allowed="save_count >= 0 (0 = no checkpoint saves)")


def lora_targets(training: Training) -> frozenset[str]:
    """Adapted module names (none given: `names.LORA_DEFAULT_TARGETS`, PEFT's q_proj + v_proj)."""
    if training.method not in ("lora", "qlora"):
        return frozenset()
    names = set(training.lora_targets) or set(LORA_DEFAULT_TARGETS)
    if "all-linear" in names:
        names |= set(LORA_LINEAR_TARGETS)
    return frozenset(names)


def trainable(module: str, training: Training) -> bool:
    """Whether `module`'s weight gets a gradient (full training: all; LoRA: adapted linears only)."""
    if training.trains_base_weights:
        return True
    t = lora_targets(training)
    if module in ("q_proj", "k_proj", "v_proj") and "qkv_proj" in t:
        return True
    return module in t


def _lora_linear_shapes(model: ModelArch, moe_layer: bool) -> dict[str, list[tuple[int, int, int]]]:
    """(d_in, d_out, copies) of each adaptable linear of one layer, by target name."""
    h = model.hidden
    if model.attention == "mla":
        q = (
            [(h, model.q_lora_rank, 1), (model.q_lora_rank, model.q_dim, 1)]
            if model.q_lora_rank
            else [(h, model.q_dim, 1)]
        )
        kv_a = (h, model.kv_lora_rank + model.qk_rope_head_dim, 1)
        kv_b = (model.kv_lora_rank, model.heads * (model.qk_nope_head_dim + model.v_head_dim), 1)
        shapes = {"q_proj": q, "k_proj": [kv_a], "v_proj": [kv_b], "qkv_proj": [*q, kv_a, kv_b]}
    else:
        shapes = {
            "q_proj": [(h, model.q_dim, 1)],
            "k_proj": [(h, model.kv_dim, 1)],
            "v_proj": [(h, model.v_dim, 1)],
            "qkv_proj": [(h, model.q_dim + model.kv_dim + model.v_dim, 1)],
        }
    shapes["o_proj"] = [(model.attn_out_dim, h, 1)]
    mlps: list[tuple[int, int, int]] = []  # (inner, copies, width: a routed expert's is expert_width)
    if moe_layer:
        mlps.append((model.expert_ffn, model.experts, model.expert_width))
        if model.shared_expert_ffn:
            mlps.append((model.shared_expert_ffn, 1, h))
    else:
        mlps.append((model.ffn, 1, h))
    gated = model.mlp == "swiglu"
    shapes["gate_proj"] = [(w, f, n) for f, n, w in mlps] if gated else []
    shapes["up_proj"] = [(w, f, n) for f, n, w in mlps]
    shapes["down_proj"] = [(f, w, n) for f, n, w in mlps]
    return shapes


def module_weight_elements(model: ModelArch, training: Training) -> list[tuple[float, float]]:
    """(elements, tensors per average layer) of each trainable weight tensor as transformers' and torchtune's modules
    hold them: full training: q / k / v / o, gate / up / down (each routed expert's its own) and the layer's norms;
    LoRA: the A (d_in x r) and B (r x d_out) of each adapted linear. Biases left out. The embedding, LM head and
    final norm are not per layer: module_rest_elements. Counted from the model."""
    if not training.trains_base_weights:
        r = float(training.lora_rank)
        return [(r * d, copies) for d_in, d_out, copies in lora_dense_linears(model, training) for d in (d_in, d_out)]
    out: list[tuple[float, float]] = [(float(model.hidden), float(model.norms_per_layer))]
    for moe_layer, n_layers in ((False, model.layers - model.moe_layer_count), (True, model.moe_layer_count)):
        shapes = _lora_linear_shapes(model, moe_layer) if n_layers else {}
        for n in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj") if n_layers else ():
            out.extend((float(d_in * d_out), copies * n_layers / model.layers) for d_in, d_out, copies in shapes[n])
    return out


def module_rest_elements(model: ModelArch, training: Training) -> list[tuple[float, float]]:
    """(elements, tensors) of the trainable weights outside the decoder layers: the embedding, the LM head unless tied,
    the final norm (full training); a LoRA on the head (lm_head_adapter: its A and B). Counted from the model."""
    if not training.trains_base_weights:
        if "lm_head_adapter" not in lora_targets(training):
            return []
        r = float(training.lora_rank)
        return [(r * model.hidden, 1.0), (r * model.vocab, 1.0)]
    return [(float(model.vocab * model.hidden), 1.0 + (not model.tied_embeddings)), (float(model.hidden), 1.0)]


def lora_layer_params(model: ModelArch, training: Training, moe_layer: bool) -> tuple[int, int]:
    """LoRA adapter parameters of one layer: (dense part, routed-expert part). r * (d_in + d_out) each."""
    r = training.lora_rank
    t = lora_targets(training)
    if not t:
        return 0, 0
    shapes = _lora_linear_shapes(model, moe_layer)
    dense = experts = 0
    for n in _lora_adapted_names(t):
        for d_in, d_out, copies in shapes[n]:
            p = r * (d_in + d_out) * copies
            if _routed_linear(model, moe_layer, n, copies):
                experts += p
            else:
                dense += p
    return dense, experts


def _lora_adapted_names(targets: Any, only: tuple[str, ...] | None = None) -> list[str]:
    """The linears the adapters sit on, in LINEAR_NAMES order (`only`: of those alone); a fused qkv_proj target
    stands for q, k and v, which are then not adapted again."""
    names = [n for n in LINEAR_NAMES if n in targets and (only is None or n in only)]
    if "qkv_proj" in names:
        names = [n for n in names if n not in ("q_proj", "k_proj", "v_proj")]
    return names


def _routed_linear(model: ModelArch, moe_layer: bool, name: str, copies: int) -> bool:
    """Whether a linear of `_lora_linear_shapes` is a routed expert's (one copy per expert in an MoE layer's MLP)."""
    return moe_layer and copies == model.experts and name in ("gate_proj", "up_proj", "down_proj")


# Linears whose input is split over TP (row-parallel: Megatron RowParallelLinear, DTensor RowwiseParallel); the others
# are column-parallel, their output split
ROW_PARALLEL_LINEARS = ("o_proj", "down_proj")
# the MLP input projections, whose output the activation function reads (and its backward needs)
MLP_INPUT_LINEARS = ("gate_proj", "up_proj")


def lora_adapted_widths(model: ModelArch, training: Training,
                        only: tuple[str, ...] | None = None) -> tuple[float, float, float, float, float]:
    """Widths the LoRA adapters of an average layer read and write per token: (dense d_in, dense d_out, routed
    expert d_in, routed expert d_out, adapted linears), summed over the adapted linears (routed experts: the
    top-k a token passes); `only`: over those linears alone. 0 without LoRA. The time model streams the adapters'
    activations with these."""
    out = np.zeros(5)
    for moe_layer, n_layers in ((False, model.layers - model.moe_layer_count), (True, model.moe_layer_count)):
        out += n_layers * np.array(lora_layer_widths(model, training, moe_layer, only), float)
    w_in, w_out, e_in, e_out, n_lin = (float(v) for v in out / model.layers)
    return w_in, w_out, e_in, e_out, n_lin


def lora_dense_linears(model: ModelArch, training: Training) -> list[tuple[float, float, float]]:
    """(d_in, d_out, adapters per average layer) of each adapted linear that is not a routed expert's, unsplit: what
    `lora_adapted_widths` sums, one linear at a time (step_time._l2_reread_credit tests each one's tensors against
    the L2). [] without LoRA."""
    t = lora_targets(training)
    if not t:
        return []
    out: list[tuple[float, float, float]] = []
    for moe_layer, n_layers in ((False, model.layers - model.moe_layer_count), (True, model.moe_layer_count)):
        shapes = _lora_linear_shapes(model, moe_layer) if n_layers else {}
        for n in _lora_adapted_names(t) if n_layers else ():
            out.extend((float(d_in), float(d_out), copies * n_layers / model.layers) for d_in, d_out, copies in shapes[n]
                       if not _routed_linear(model, moe_layer, n, copies))
    return out


def lora_dropout_on_output(training: Training) -> bool:
    """Whether the job's LoRA implementation drops out the adapter's output (else its input);
    memory_constants.yaml lora.dropout_on_output."""
    return bool(load_memory_constants()["lora"]["dropout_on_output"][training.lora_impl])


def lora_layer_widths(model: ModelArch, training: Training, moe_layer: bool,
                      only: tuple[str, ...] | None = None) -> tuple[float, ...]:
    """`lora_adapted_widths` of one layer kind (dense or MoE): (d_in, d_out, routed d_in per token, routed d_out per
    token, adapted linears)."""
    t = lora_targets(training)
    if not t:
        return 0.0, 0.0, 0.0, 0.0, 0.0
    out = np.zeros(5)
    shapes = _lora_linear_shapes(model, moe_layer)
    for n in _lora_adapted_names(t, only):
        for d_in, d_out, copies in shapes[n]:
            routed = _routed_linear(model, moe_layer, n, copies)
            k = model.experts_per_token if routed else copies
            out += np.array([0, 0, k * d_in, k * d_out, 1] if routed else [k * d_in, k * d_out, 0, 0, k], float)
    return tuple(float(v) for v in out)


@dataclass(frozen=True)
class ParamLayout:
    """Per-layer parameter counts of one model as cumulative arrays (index i = layers [0, i)).

    `tp_*` parameters are split by TP; `rep_*` replicated across TP (norms, router); `exp_*` routed experts
    (split by EP x expert-TP).
    """

    layers: int
    cum_tp: np.ndarray
    cum_rep: np.ndarray
    cum_exp: np.ndarray
    cum_moe: np.ndarray  # MoE layers among the first i
    cum_lora_dense: np.ndarray
    cum_lora_exp: np.ndarray
    embedding: int
    lm_head_own: int  # untied LM head
    lm_head_tied_copy: int  # Megatron keeps a copy of tied embeddings on the last stage when pp > 1
    final_norm: int
    mtp_tp: int  # multi-token-prediction modules (last stage)
    mtp_rep: int
    mtp_exp: int
    max_layer_tp: int
    max_layer_rep: int
    max_layer_exp: int
    lora_embed_copy: int  # modules_to_save embedding copy
    lora_head_copy: int
    lora_head_adapter: int = 0  # r x (hidden + vocab): a LoRA adapter on the LM head (target lm_head_adapter)


def param_layout(model: ModelArch, training: Training) -> ParamLayout:
    L = model.layers
    tp = np.zeros(L + 1)
    rep = np.zeros(L + 1)
    exp = np.zeros(L + 1)
    moe = np.zeros(L + 1)
    lora_d = np.zeros(L + 1)
    lora_e = np.zeros(L + 1)
    mx = [0, 0, 0]
    cache: dict[bool, tuple] = {}
    for i in range(L):
        lp = model.layer_params(i)
        if lp.is_moe not in cache:
            cache[lp.is_moe] = lora_layer_params(model, training, lp.is_moe)
        ld, le = cache[lp.is_moe]
        # a hybrid's Mamba-2 mixer splits over TP as attention does (Megatron-Core MambaMixer: in_proj column-, out_proj
        # row-parallel, conv1d / dt_bias / A_log / D / norm over the TP rank's heads)
        t_i = lp.attention + lp.mlp_dense + lp.shared + lp.mixer
        tp[i + 1] = tp[i] + t_i
        # LatentMoE's projections are whole on every TP rank (TELinear parallel_mode "duplicated"), as the norms
        rep[i + 1] = rep[i] + lp.norms + lp.router + lp.latent_proj
        exp[i + 1] = exp[i] + lp.experts_total
        moe[i + 1] = moe[i] + int(lp.is_moe)
        lora_d[i + 1] = lora_d[i] + ld
        lora_e[i + 1] = lora_e[i] + le
        mx = [max(mx[0], t_i), max(mx[1], lp.norms + lp.router + lp.latent_proj), max(mx[2], lp.experts_total)]
    block = model.mtp_block_params()
    mtp = model.mtp_layers
    h = model.hidden
    # a hybrid module's own final norm beside enorm / hnorm (Megatron-Core MultiTokenPredictionLayer final_layernorm;
    # Nemotron 3 Super's card counts its 3 norms); DeepSeek-V3's two
    mtp_norms = 3 if model.mtp_pattern else 2
    t = lora_targets(training)
    return ParamLayout(
        layers=L,
        cum_tp=tp,
        cum_rep=rep,
        cum_exp=exp,
        cum_moe=moe,
        cum_lora_dense=lora_d,
        cum_lora_exp=lora_e,
        embedding=model.embedding_params,
        lm_head_own=model.lm_head_params,
        lm_head_tied_copy=model.vocab * h if model.tied_embeddings else 0,
        final_norm=model.final_norm_params,
        # DeepSeek-V3 MTP module: one decoder layer + eh_proj (2h -> h) + two norms (enorm, hnorm).
        mtp_tp=mtp * (sum(lp.attention + lp.mlp_dense + lp.shared + lp.mixer for lp in block) + 2 * h * h),
        mtp_rep=mtp * (sum(lp.norms + lp.router + lp.latent_proj for lp in block) + mtp_norms * model.final_norm_params),
        mtp_exp=mtp * sum(lp.experts_total for lp in block),
        max_layer_tp=mx[0],
        max_layer_rep=mx[1],
        max_layer_exp=mx[2],
        lora_embed_copy=model.embedding_params if "embed_tokens" in t else 0,
        lora_head_copy=(model.lm_head_params or model.vocab * h) if "lm_head" in t else 0,
        lora_head_adapter=training.lora_rank * (h + model.vocab) if "lm_head_adapter" in t else 0,
    )


def mtp_passes(model: ModelArch, training: Training) -> int:
    """MTP module passes a step on the last stage: Training.mtp_passes (Megatron-Core mtp_num_layers under
    mtp_use_repeated_layer), else one a module (ModelArch.mtp_layers); 0 for a model without MTP."""
    if not model.mtp_layers:
        return 0
    return training.mtp_passes or model.mtp_layers


@lru_cache(maxsize=64)
def lora_trainable_params(model: ModelArch, training: Training) -> float:
    """Trainable parameters of a LoRA / QLoRA job: the adapters of every layer (r * (d_in + d_out) per adapted
    matrix, routed experts included) + an adapter on the LM head + PEFT modules_to_save copies. The one count memory
    and time share."""
    lay = param_layout(model, training)
    return float(lay.cum_lora_dense[-1] + lay.cum_lora_exp[-1] + lay.lora_head_adapter + lay.lora_embed_copy
                 + lay.lora_head_copy)


@dataclass(frozen=True)
class StateBytes:
    """Bytes per parameter for one (training, framework profile)."""

    weights: float
    grads: float
    grad_fp32_copy: float
    master: float
    grad_accum_fp32: float
    optimizer: float
    fp8_cache: float


def optimizer_state_bytes(training: Training, model: ModelArch | None) -> float:
    """Optimizer-state bytes per trainable parameter (fp32 states; see memory_constants.yaml). Adafactor's
    depend on the matrices' width, so it needs `model`."""
    c = load_memory_constants()["optimizer_state_bytes"]
    if training.optimizer == "adafactor":
        if model is None:
            raise SpecError("model", msg("adafactor_needs_model"), value=None)
        # Shazeer & Stern 2018: one fp32 row + one column vector per matrix: 4 * (1/rows + 1/cols).
        return 4.0 * c["adafactor_factored_vectors"] / model.hidden
    return float(c[training.optimizer])


def optimizer_impl(strategy: Any) -> str:
    """Strategy.optimizer_impl checked against names.OPTIMIZER_IMPLS (None = fused): the step time's optimizer
    traffic and the memory estimate's foreach step peak both read it."""
    impl = getattr(strategy, "optimizer_impl", None) or "fused"
    if impl not in OPTIMIZER_IMPLS:
        raise SpecError("strategy.optimizer_impl", msg("error_unknown_name", kind=msg("kind_optimizer_impl")),
                        value=impl, allowed=OPTIMIZER_IMPLS, suggestion=did_you_mean(impl, OPTIMIZER_IMPLS))
    return str(impl)


def state_bytes(training: Training, model: ModelArch | None, profile: str) -> StateBytes:
    """Bytes per trainable parameter of each model-state kind under a framework profile (hf / megatron)."""
    c = load_memory_constants()
    row = c["model_states"][profile][training.precision]
    fp8 = c["fp8"]["weight_cache_bytes_per_gemm_param"] if training.precision == "fp8" else 0.0
    if training.precision == "fp8" and training.fp8_recipe in FP4_RECIPES:  # row- and column-wise FP4 copies
        fp8 = c["fp8"][f"{training.fp8_recipe}_weight_cache_bytes_per_gemm_param"]
    if model is not None and getattr(training, "bf16_layers", 0):  # BF16-kept layers keep no low-precision copy
        fp8 *= 1.0 - training.bf16_layers / max(model.layers, 1)
    return StateBytes(
        weights=float(row["weights"]),
        grads=float(row["grads"]),
        grad_fp32_copy=float(row["grad_fp32_copy"]),
        master=float(row["master"]),
        grad_accum_fp32=float(row["grad_accum_fp32"]),
        optimizer=optimizer_state_bytes(training, model),
        fp8_cache=float(fp8),
    )


def nf4_recast(training: Training, dequant_dtype: str | None, from_input: bool = False) -> bool:
    """Whether each dequantised NF4 weight is cast again before its GEMM: dequantize_4bit writes the quant_state's
    dtype, fp16 where bitsandbytes < 0.43 quantised a `.half()` copy (nn/modules.py Params4bit.cuda at 0.41.0 /
    0.42.0; dcfb6f81, 2024-01-16, keeps the weight's dtype from 0.43.0) or Lightning's BitsandbytesPrecision does
    (fabric/plugins/precision/bitsandbytes.py quantize: `.to(dtype=torch.half)`), and MatMul4Bit casts it to the
    input's dtype in the forward and again in the backward (autograd/_functions.py at 0.41.0: `.to(A.dtype)`,
    `.to(grad_output.dtype)`): a copy in every job whose compute dtype is not fp16 (Strategy.nf4_dequant_dtype); in an
    fp32 job where the 4-bit linears compute in their fp32 input's dtype (`from_input`, nf4_fp16_compute)."""
    if training.method != "qlora" or dequant_dtype != "fp16":
        return False
    return training.precision != "fp16" and (training.precision != "fp32" or from_input)


def nf4_fp16_compute(training: Training, dequant_dtype: str | None, from_input: bool = False) -> bool:
    """Whether an fp32 job's 4-bit linears compute in fp16 (Strategy.nf4_dequant_dtype fp16 under precision fp32:
    BitsAndBytesConfig bnb_4bit_compute_dtype float16 over a model whose other weights are fp32, as TRL's
    SFTTrainer leaves it after prepare_model_for_kbit_training): bitsandbytes' Linear4bit.forward casts its input to
    the compute dtype, runs MatMul4Bit on the fp16-dequantised weight and casts the output back
    (bitsandbytes/nn/modules.py at 0.44.1: `x = x.to(self.compute_dtype)` ... `out.to(inp_dtype)`): the GEMM at the
    fp16 rate, the weight not recast (nf4_recast), an fp32 <-> fp16 copy of each input and output (and of their
    gradients in the backward). Under precision fp32 with nf4_dequant_dtype compute (BitsAndBytesConfig's default
    compute dtype float32) the 4-bit linears run in fp32 like the rest. So they do under bitsandbytes 0.41.0-0.46.x
    (`from_input`, Strategy.bnb_compute_from_input): Linear4bit.set_compute_type, called on the first forward while
    compute_type_is_set is False (always, at init, before #1662, 812ef06a), sets the compute dtype to the input's where
    that is fp32 or bf16 ("the input is in a dtype that is safe to compute in, we switch to this type"; nn/modules.py
    at 0.43.0 and ROCm/bitsandbytes rocm_enabled 2f12498): fp32 GEMMs over the fp16 dequantised weight, recast
    (nf4_recast), no copies of the activations."""
    return training.method == "qlora" and dequant_dtype == "fp16" and training.precision == "fp32" and not from_input


def dense_linears(model: ModelArch) -> list[tuple[str, int, int]]:
    """(module name, d_in, d_out) of each of a dense decoder layer's linears (q, k, v, o and the MLP's), each
    projection its own linear as transformers' Llama-style modules hold them."""
    shapes = _lora_linear_shapes(model, False)
    return [(name, d_in, d_out) for name in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                             "down_proj") for d_in, d_out, _ in shapes[name]]


def dense_linear_widths(model: ModelArch) -> tuple[float, float, float]:
    """(sum of d_in, sum of d_out, linears) over `dense_linears`: what a per-linear cast reads and writes per token
    (step_time._nf4_compute_cast_time)."""
    linears = dense_linears(model)
    return (float(sum(d_in for _, d_in, _ in linears)), float(sum(d_out for _, _, d_out in linears)),
            float(len(linears)))


# frameworks (strategy.framework, unresolved) whose QLoRA does not run PEFT's prepare_model_for_kbit_training when the
# job leaves strategy.kbit_upcast unstated: hf (and auto, which resolves a data-parallel fine-tune to hf) as TRL's
# SFTTrainer runs it since v0.26.0 (trl 2af35fb0, #4577, 2025-12-04: get_peft_model, adapters cast to bf16, norms left
# in the loaded dtype; docs/known-gaps.md 258 (a)); torchtune (torchao NF4, bf16 norms). Every other framework: PEFT's
# upcast (its own QLoRA recipe, TRL <= 0.25), unread for deepspeed / fsdp / torchtitan (258 (c)).
KBIT_UPCAST_OFF_FRAMEWORKS = ("hf", "auto", "torchtune")


def kbit_upcast_default(name: str) -> bool:
    """The unstated strategy.kbit_upcast of framework `name` (KBIT_UPCAST_OFF_FRAMEWORKS)."""
    return name not in KBIT_UPCAST_OFF_FRAMEWORKS


def kbit_upcast(strategy: Any, name: str) -> tuple[bool, bool]:
    """(non-quantised QLoRA weights in fp32, fp32 residual stream): the job's strategy.kbit_upcast, else the
    framework's (kbit_upcast_default: none under hf / auto, TRL >= 0.26, and torchtune; PEFT's
    prepare_model_for_kbit_training elsewhere); either way DeepSpeed's 16-bit engine (loss_impl native) casts the
    module back to 16 bit, so its residual stream stays 16-bit. Read by the memory estimate (its fp32 weights and
    checkpoints) and the step time (step_time._kbit_fp32_stream_time)."""
    asked = getattr(strategy, "kbit_upcast", None)
    peft = kbit_upcast_default(name) if asked is None else bool(asked)
    return peft, peft and getattr(strategy, "loss_impl", "auto") != "native"


# frameworks (strategy.framework, unresolved) whose QLoRA adapters are bf16 when the job leaves lora.impl unstated: TRL's
# SFTTrainer casts a 4-bit / 8-bit model's trainable parameters to bf16 after get_peft_model since v0.26.0
# (trl/trainer/sft_trainer.py at v0.26.0 and still at v1.9.0; 2af35fb0, #4577), where PEFT's autocast_adapter_dtype
# keeps them fp32 (TRL <= 0.25 did not cast an unsharded 4-bit model's adapters): memory_constants.yaml lora
# peft-base-dtype. Not where the job states kbit_upcast true (TRL <= 0.25 or PEFT's own recipe, fp32 adapters).
# docs/known-gaps.md 268 (a)
ADAPTER_BF16_QLORA_FRAMEWORKS = ("hf", "auto")


def lora_impl_default(method: str, framework: str, kbit_upcast_stated: bool | None) -> tuple[str, str | None]:
    """(lora.impl, the i18n key of its origin) for a job that leaves lora.impl unstated
    (ADAPTER_BF16_QLORA_FRAMEWORKS): peft-base-dtype for QLoRA under hf / auto unless kbit_upcast is stated true,
    else peft (torchtune's adapters are 16-bit all the same: lora_adapters_16bit); the key None outside QLoRA."""
    if method != "qlora":
        return "peft", None
    if framework not in ADAPTER_BF16_QLORA_FRAMEWORKS:
        return "peft", "lora_adapter_default_" + ("torchtune" if framework == "torchtune" else "peft")
    if kbit_upcast_stated:
        return "peft", "lora_adapter_default_kbit"
    return "peft-base-dtype", "lora_adapter_default_" + framework


def lora_adapters_16bit(name: str, impl: str) -> bool:
    """Whether the LoRA adapters (their gradients and AdamW moments too) take the base weights' 16-bit dtype rather
    than PEFT's fp32: torchtune builds the whole model in its training dtype (recipes/lora_finetune_*.py
    `training.set_default_dtype(self._dtype)`); the implementations of memory_constants.yaml lora.model_dtype_impls."""
    return name == "torchtune" or impl in load_memory_constants()["lora"]["model_dtype_impls"]


def frozen_base_bytes(training: Training, double_quant: bool | None = None) -> tuple[float, float, float]:
    """(bytes per GEMM weight, bytes per non-GEMM weight, quant-constant bytes per GEMM weight) of a frozen
    base model. LoRA: 16-bit base (fp32 when training in fp32). QLoRA: NF4 + constants (double-quantised unless
    `double_quant` is False: Strategy.nf4_double_quant; None = memory_constants.yaml qlora.double_quant); non-quantised
    params upcast to fp32 by PEFT prepare_model_for_kbit_training."""
    c = load_memory_constants()
    if training.method == "qlora":
        q = c["qlora"]
        dq = q["double_quant"] if double_quant is None else double_quant
        bits = q["double_quant_constants_bits_per_param"] if dq else q["quant_constants_bits_per_param"]
        return float(q["nf4_bytes_per_param"]), float(q["unquantised_param_bytes"]), bits / 8.0
    b = float(act_bytes(training.precision))
    return b, b, 0.0


def model_state_bytes(params: Any, training: Training, model: ModelArch | None = None, *, zero: Any = 0,
                      shard: Any = 1, profile: str = "hf", distributed_optimizer: Any = False) -> Any:
    """Weights + gradients + master + optimizer bytes per GPU for `params` trainable dense parameters
    replicated over `shard` data-parallel ranks (ZeRO paper Sec. 5: stage 1 shards optimizer states,
    stage 2 + gradients, stage 3 + parameters). Numpy-broadcasting; the same rules as `estimate_memory`.
    `model` is needed for Adafactor only (its states scale with the width)."""
    sb = state_bytes(training, model, profile)
    p = np.asarray(params, dtype=float)
    z = np.asarray(zero, dtype=float)
    n = np.asarray(shard, dtype=float)
    z1 = (z >= 1) | np.asarray(distributed_optimizer, dtype=bool)
    w = sb.weights * p / np.where(z >= 3, n, 1.0)
    g = (sb.grads + sb.grad_accum_fp32) * p / np.where(z >= 2, n, 1.0)
    o = (sb.master + sb.optimizer + sb.grad_fp32_copy) * p / np.where(z1, n, 1.0)
    return w + g + o
