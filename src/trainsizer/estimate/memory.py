"""Per-GPU memory of a training job: model states + activations + framework overhead, on the worst GPU.

`estimate_memory` evaluates one strategy and explains it (named items, the worst pipeline stage);
`memory_per_gpu_bytes` evaluates numpy arrays of strategies (the search calls it on ~1e6 at a time). Both run
the same vectorised code (`_evaluate`), so they agree by construction (and a test checks it).

Model states: see `model_states.py`; activations: see `activations.py`; overheads: named constants in
`data/memory_constants.yaml` (CUDA context, cuBLAS workspace, NCCL buffers, ZeRO buckets, fragmentation).

Memory profile: the defaults describe real stacks. `hf` = Hugging Face Trainer + DeepSpeed ZeRO / FSDP +
FlashAttention-2 (16-bit gradients, eager RMSNorm, unfused cross entropy); `megatron` = Megatron-Core +
Transformer Engine (fp32 main_grad, fused norms/SwiGLU/cross entropy). The profile comes from
`Strategy.framework` through `estimate.framework` (`auto` takes megatron when the strategy uses TP, PP, CP,
EP or the distributed optimizer, hf otherwise); `MemoryOptions.framework` overrides it when set.

Peak phase: the forward/backward peak (model states + activations) or, for DeepSpeed ZeRO-1/2 (hf profile),
the optimizer-step peak (model states + the flattened gradient partition and its fp32 cast, activations freed;
deepspeed/runtime/zero/stage_1_and_2.py `step`), whichever is larger; `MemoryEstimate.peak_phase` says which.

Worst GPU: the pipeline stage that holds the most of the first (embedding, the most micro-batches in flight,
and under an uneven split one more layer: `pipeline.stage_layer_range`), the last (LM head, final norm, logits)
and stage 1, the middle stage with the most micro-batches in flight and the most layers: under Megatron-Core's
embedding / loss slots it holds one decoder layer more than either end and, with interleaving, a full chunk 0
where the first stage's holds only the embedding, so it can peak above both (3-6 GiB on the NeMo 405B layouts,
docs/known-gaps.md 46). Later middle stages hold no more layers and fewer micro-batches; on models whose layers
differ (dense leading layers, hybrids) a later stage's heavier layers are not evaluated.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import numpy as np

from trainsizer.errors import SpecError, unknown_name
from trainsizer.estimate import (
    allocator,
    communicators,
    fsdp1_mixed,
    fsdp1_no_sync,
    grad_segments,
    megatron_fsdp,
    nf4_init,
    pipeline,
    zero_pools,
)
from trainsizer.estimate.activations import (
    ATTENTION_IMPLS,
    LayerItems,
    attention_impl,
    deepseek_selective_items,
    expanded_kv_bytes,
    first_layer_norm_discount,
    head_items,
    in_flight_chunk_microbatches,
    in_flight_layer_microbatches,
    layer_items,
    norm_bytes,
    op_sac_unsaved_share,
    recompute_module_items,
    router_upstream_bytes,
    titan_expert_slot_bytes,
    torchtitan_op_sac_items,
    torchtitan_sac_attention_bytes,
)
from trainsizer.estimate.calibration import fp4_training
from trainsizer.estimate.framework import (
    AUTO_CHOICES,
    DEFAULT_LOSS,
    auto_index,
    check_framework,
    compiles_by_default,
    deepspeed_engine,
    deepspeed_zero3_buckets,
    deepspeed_zero3_engine,
    dense_all_split,
    fp8_primary_weights_default,
    fused_expert_loop,
    kv_head_copies,
    memory_profile,
    rms_norm_fused_by_release,
    routed_model,
    stating_dense_all,
    style_number,
    style_option,
    torch_compile_of,
)
from trainsizer.estimate.inputs import LOSS_IMPLS, Strategy, System, Training, act_bytes
from trainsizer.estimate.model_states import (
    ParamLayout,
    StateBytes,
    check_training,
    deepspeed_zero3_kept_params,
    deepspeed_zero3_largest_module_params,
    frozen_base_bytes,
    kbit_upcast,
    load_memory_constants,
    lora_adapters_16bit,
    lora_targets,
    mtp_passes,
    nf4_recast,
    optimizer_impl,
    param_layout,
    state_bytes,
)
from trainsizer.estimate.partial_recompute import chunk_shares
from trainsizer.estimate.validate import (
    check_strategy,
    offload_layers_asked,
    require_one_strategy,
    shard_groups,
    strategy_arrays,
)
from trainsizer.messages import msg
from trainsizer.models.arch import ModelArch
from trainsizer.names import (
    ACTIVATION_KERNELS,
    FLEX_DISPATCHERS,
    FSDP_RESHARDS,
    LIVE_AT_RERUN,
    NORM_KERNELS,
    OPTIMIZER_PRECISIONS,
    bf16_master_conflict,
    optimizer_precisions_for,
    remainder_weights_conflict,
)

GIB = 2**30
PROFILES = ("hf", "megatron")

# Every item the estimator reports, with what it is. Coarse group in brackets.
ITEM_DOCS: dict[str, tuple[str, str]] = {
    "weights": ("weights", "trainable parameters in the training dtype (16-bit, or fp32 for fp32 training)"),
    "base_weights_frozen": ("weights", "frozen base model of LoRA (16-bit) / QLoRA (NF4 GEMM weights; "
                            "embeddings, head and norms upcast to fp32 by PEFT)"),
    "quant_constants": ("weights", "QLoRA block-wise quantisation constants (absmax, double-quantised)"),
    "lora_adapters": ("weights", "LoRA A/B matrices (fp32 under PEFT autocast_adapter_dtype, else 16-bit)"),
    "trainable_copies": ("weights", "PEFT modules_to_save copies (trained embedding / LM head) in 16-bit"),
    "reference_model": ("weights", "DPO frozen reference policy in 16-bit (forward under no_grad)"),
    "fp8_weight_cache": ("weights", "Transformer Engine FP8 copies of GEMM weights + their transposes"),
    "gradients": ("gradients", "gradients in the parameter dtype (16-bit under ZeRO/FSDP)"),
    "grad_accum_buffer": ("gradients", "fp32 gradient accumulation buffer (Megatron main_grad)"),
    "fsdp_unsharded_grads": ("gradients", "FSDP with gradient sync on the last micro-batch only (strategy "
                             "fsdp_no_sync; the HF Trainer's accumulation under FSDP1): the stage's unsharded "
                             "gradients held across micro-batches (FSDP2: the reduce dtype; FSDP1: the compute "
                             "dtype), in place of the sharded ones"),
    "master_weights": ("optimizer", "fp32 master copy of 16-bit trainable weights"),
    "optimizer_states": ("optimizer", "optimizer states (AdamW m+v fp32, 8-bit AdamW, SGD momentum, "
                         "Adafactor factored second moment); paged optimizers' states (paged_adamw, paged_adamw8bit) are "
                         "counted in host memory"),
    "grad_fp32_copy": ("optimizer", "fp32 gradient copy owned by the optimizer (Megatron fp16)"),
    "optimizer_step_grad_buffers": ("optimizer", "DeepSpeed ZeRO-1/2 optimizer step: the flattened 16-bit copy "
                                    "of the gradient partition and its fp32 cast, live beside master weights "
                                    "and Adam states (stage_1_and_2.py step); Megatron-Core with bf16 gradient "
                                    "buffers: the fp32 cast of the optimizer shard's gradients"),
    "offload_grad_copies": ("gradients", "DeepSpeed ZeRO-1/2 with the optimizer offloaded, the rank owning the "
                            "embedding at the end of the backward: its 16-bit gradient, the flattened copy all-reduced "
                            "(active until NCCL's stream passes it) and the fp64 copy of its partition slice the "
                            "gradient norm is taken of (stage_1_and_2.py copy_grads_in_partition, v0.14.2)"),
    "optimizer_step_foreach_temp": ("optimizer", "torch.optim.AdamW's foreach step (strategy optimizer_impl "
                                    "foreach): the square roots of the second moments, one moment-sized tensor "
                                    "per parameter made at once, live beside weights, gradients and both moments "
                                    "(torch/optim/adam.py _multi_tensor_adam)"),
    "layer_activations": ("activations", "tensors saved for backward by the stage's layers, all micro-batches "
                          "in flight (1F1B / interleaved)"),
    "recompute_working_set": ("activations", "one layer's activations re-created during backward under full "
                              "recompute"),
    "embedding_and_rope": ("activations", "token ids kept by a trainable embedding, RoPE cos/sin tables"),
    "final_norm_and_head_input": ("activations", "final norm and LM-head input saved on the last stage"),
    "logits": ("activations", "vocabulary logits on the last stage: the fp32 softmax / log-softmax the loss "
               "saves for backward"),
    "loss_backward_temporaries": ("activations", "logit-sized gradients live while the loss backward runs "
                                  "(fp32 NLL and log-softmax gradients; Megatron: the bf16 logits)"),
    "loss_chunk_working_set": ("activations", "TRL's chunked_nll loss (loss_impl chunked-nll): one chunk's fp32 "
                               "copy of the LM-head weight and its 16-bit autocast cast, or the cast and the chunk's "
                               "fp32 logits and gradients, whichever is larger; Liger's fused linear cross-entropy "
                               "(loss_impl liger): one chunk of logits, grad_input and, where the head trains, "
                               "grad_weight with a chunk's product and its fp32 copy"),
    "loss_chunk_buffers": ("activations", "torchtitan's chunked loss (loss_impl chunked: ChunkedCELoss / "
                           "ChunkedLossWrapper): the fp32 buffer its GradAccumulator fills with each chunk's "
                           "hidden-state gradient, and the contiguous 16-bit copies of the hidden-state chunks "
                           "(micro-batch above 1), live through the chunk loop"),
    "nf4_dequant_transient": ("weights", "QLoRA: the 16-bit copy of the largest NF4 weight made for its GEMM "
                              "(two at the fp16 -> bf16 recast): the LM head where it is quantised (Lightning), else "
                              "a decoder layer's largest linear, counted beyond what the loss holds"),
    "head_weight_cast": ("weights", "QLoRA under PEFT's fp32 upcast and autocast: the 16-bit cast of the fp32 "
                         "LM-head weight, saved by its matmul until the head's backward (not held in the "
                         "optimizer step)"),
    "frozen_weight_casts": ("activations", "LoRA on an fp32-loaded base under autocast (strategy frozen_base_dtype "
                            "fp32, no FSDP / DeepSpeed): the 16-bit casts of the frozen linear weights the matmuls "
                            "save for the backward, every layer's without recompute, one layer's under full "
                            "recompute, and the LM head's"),
    "cp_ring_attention_buffers": ("activations", "context-parallel ring attention (PyTorch context_parallel, "
                                  "torchtitan): K / V of every CP rank all-gathered, fp32 dQ / dK / dV accumulators "
                                  "and dK / dV exchange buffers during one layer's attention backward"),
    "pp_recv_buffers": ("activations", "torch.distributed.pipelining's receive buffers (torchtitan): one "
                        "stage-input buffer per micro-batch of the schedule on every stage but the first and one "
                        "output-gradient buffer per micro-batch on every stage but the last, allocated when the "
                        "schedule first runs and kept for the run; those of the micro-batches in flight are the "
                        "inputs the first block saves"),
    "cp_allgather_kv_buffers": ("activations", "all-gather context parallelism (cp_comm_type all_gather): the "
                                "whole sequence's K / V gathered for one layer's attention and, in its backward, "
                                "the whole sequence's dK / dV before their reduce-scatter"),
    "expert_loop_buffers": ("activations", "transformers' eager expert loop over fused expert parameters "
                            "(experts_implementation eager): with expert_weight_copies (4.55 / 4.56 GptOssExperts) "
                            "every hit expert's weights copied and saved by the layers whose activations are kept; in "
                            "full training a gradient of the whole fused gate_up_proj per hit expert beside the "
                            "accumulating one while a layer's backward runs"),
    "attention_mask": ("activations", "the 4-D mask transformers hands SDPA (explicit_attention_mask): micro-batch x "
                       "row length^2 in the model dtype (transformers <= 4.52's additive mask; 4.53's masking_utils "
                       "bool mask is 1 B a position), built once a forward, read by every layer and held until the "
                       "micro-batch's backward ends"),
    "held_rerun_graphs": ("activations", "the re-run graphs a MoE dispatcher's held router output keeps "
                          "(moe_router_output_held, torchtitan's non-reentrant full AC): each MoE layer's attention "
                          "and router saves from its backward to its next forward, at the end of the backward every "
                          "layer's but the running one's"),
    "returned_kv_cache": ("activations", "the K / V cache the model returns in training (returns_kv_cache: "
                          "transformers' use_cache on beside an outer checkpoint wrapper): each checkpointed layer's K "
                          "and V, to the forward's end; twice at the loss and once after it where the loop holds "
                          "its outputs (live_at_rerun logits)"),
    "cuda_context": ("other", "CUDA context + kernels + cuBLAS workspace (outside the caching allocator)"),
    "nccl_buffers": ("other", "NCCL communicator buffers: a ring's channels for each TP / CP / DP group, each pipeline neighbour's and all-to-all peer's point-to-point channels"),
    "framework_buffers": ("other", "ZeRO-1/2 gradient buckets; ZeRO-3/FSDP gathered layers and their "
                          "unsharded gradients"),
    "fragmentation": ("other", "PyTorch caching-allocator fragmentation (fraction of allocated bytes)"),
    "ddp_init_param_copies": ("weights", "Megatron-Core DDP with the distributed optimizer at model init: the "
                              "parameter buffer's copies allocated while the model's own parameters still are "
                              "(param_and_grad_buffer.py, dense buffer, then the experts'; known-gaps 270 (f))"),
    "held_logits": ("activations", "the model outputs' logits a loop keeps until its backward returns (strategy "
                    "live_at_rerun logits: `output = model(...); output.loss.backward()`), beside the re-run layer"),
    "forward_layer_segments": ("other", "caching-allocator segments a checkpointed layer's forward cut (its MLP's "
                               "ffn-wide tensors) that the loss's larger logit-sized tensors cannot reuse: reserved "
                               "beside the loss phase; under expandable segments on torchtitan only, whose freed "
                               "pages lie below the later checkpoints and the logits (known-gaps 214)"),
    "loss_path_segments": ("other", "caching-allocator segments the loss path cuts beyond what it holds at once (the "
                           "16-bit logits' freed segment, the slice's full-size fp32 gradient): reserved beside the "
                           "loss phase; under expandable segments the 16-bit logits' freed range alone"),
    "freed_gradient_segments": ("other", "caching-allocator segments of the gradients the loop freed at the last step "
                                "(zero_grad, set_to_none) beyond what the loss path's freed blocks held of them: "
                                "reserved beside a phase that no longer holds them"),
}
# items the caching allocator holds reserved but not allocated: torch.cuda.max_memory_allocated / active counts neither
CACHED_ONLY_ITEMS = ("fragmentation", "forward_layer_segments", "loss_path_segments", "freed_gradient_segments")
# loss_impl -> memory_constants.yaml logits key of the loss path's replayed segments (benchmarks/loss_segments.py)
LOSS_SEGMENT_KEYS = {"upcast": "hf", "upcast-shift": "hf_shift", "upcast-labels": "upcast_labels"}
GROUPS = ("weights", "gradients", "optimizer", "activations", "other")
# items live through the optimizer step (model states); activations and gradient buckets are freed by then
STEP_STATE_ITEMS = ("weights", "base_weights_frozen", "quant_constants", "lora_adapters", "trainable_copies",
                    "reference_model", "fp8_weight_cache", "gradients", "grad_accum_buffer", "master_weights",
                    "optimizer_states", "grad_fp32_copy")
PEAK_PHASES = ("forward/backward", "optimizer step", "model init")


@dataclass(frozen=True)
class MemoryOptions:
    """Modelling choices that are not part of the job description.

    framework: None (use `Strategy.framework`) or one of `inputs.FRAMEWORKS`, overriding it (see module
        docstring and `estimate.framework`).
    attention_impl: None (training.flash_attention -> flash, else eager) | flash | sdpa | eager.
    dropout: count dropout masks (GPT-2 / Megatron GPT with hidden and attention dropout; modern LLMs: off).
    overheads: add CUDA context, NCCL, framework buffers and fragmentation.
    """

    framework: str | None = None
    attention_impl: str | None = None
    dropout: bool = False
    overheads: bool = True

    def __post_init__(self) -> None:
        if self.framework is not None:
            check_framework(self.framework, "options.framework")
        if self.attention_impl is not None and self.attention_impl not in ATTENTION_IMPLS:
            raise unknown_name("options.attention_impl", "attention kernel", self.attention_impl,
                               ATTENTION_IMPLS)


DEFAULT_OPTIONS = MemoryOptions()


@dataclass(frozen=True)
class _Pre:
    """Per-(model, training, options) scalars, computed once."""

    layout: ParamLayout
    states: dict[str, StateBytes]
    dense: dict[tuple[str, int], LayerItems]  # (profile, recompute code) -> items
    moe: dict[tuple[str, int], LayerItems]
    heads: dict[str, Any]
    discount: dict[str, float]
    base: tuple[float, float, float]
    opt_in_param_dtype: float
    op_sac: tuple[LayerItems, LayerItems]  # torchtitan per-op selective AC: (dense, MoE) block
    gathered: tuple[float, float]  # bytes per token of the two TP-gathered block inputs (dense, MoE), hf profile
    ds_sel: tuple[LayerItems, LayerItems]  # DeepSeek-V3 recompute + FP8 caching: (dense, MoE) layer
    # QLoRA: the (dense, MoE) tables with every 4-bit linear keeping its input (bitsandbytes < 0.43.2); None otherwise
    kbit: tuple[dict, dict] | None = None


@lru_cache(maxsize=64)
def _precompute(model: ModelArch, training: Training, options: MemoryOptions) -> _Pre:
    check_training(training)
    layout = param_layout(model, training)
    impl = attention_impl(training, options.attention_impl)
    dense, moe, heads, states, discount = {}, {}, {}, {}, {}
    qlora = training.method == "qlora"
    kbit: tuple[dict, dict] = ({}, {})
    for prof in PROFILES:
        states[prof] = state_bytes(training, model, prof)
        heads[prof] = head_items(model, training, prof)
        discount[prof] = first_layer_norm_discount(model, training, prof)
        for code, rc in enumerate(("none", "selective", "full")):
            for saved, (d_tab, m_tab) in ((False, (dense, moe)), (True, kbit))[:1 + qlora]:
                kw = dict(profile=prof, recompute=rc, impl=impl, dropout=options.dropout, base_inputs_saved=saved)
                d_tab[(prof, code)] = layer_items(model, training, moe=False, **kw)
                m_tab[(prof, code)] = layer_items(model, training, moe=True, **kw) if model.is_moe else d_tab[
                    (prof, code)]
    c = load_memory_constants()
    per_dtype = c["optimizer_in_param_dtype"]
    pd = act_bytes(training.precision)  # the copies' dtype: 16-bit, fp32 when training in fp32
    opt_pd = {"adamw": pd * per_dtype["adamw_states_per_param"],
              "adamw8bit": per_dtype["adamw8bit_bytes_per_param"],
              "paged_adamw": per_dtype["bnb32_states_per_param"],
              "paged_adamw8bit": per_dtype["adamw8bit_bytes_per_param"],
              "sgd": pd * per_dtype["sgd_states_per_param"],
              "adafactor": per_dtype["adafactor_bytes_per_param"],
              "ao_adamw8bit": per_dtype["adamw8bit_bytes_per_param"],
              "ao_adamw4bit": per_dtype["adamw4bit_bytes_per_param"],
              "ao_adamw_fp8": per_dtype["adamw8bit_bytes_per_param"]}[training.optimizer]
    op_sac = (torchtitan_op_sac_items(model, training, moe=False), torchtitan_op_sac_items(model, training, moe=True))
    ds_sel = (deepseek_selective_items(model, training, moe=False),
              deepseek_selective_items(model, training, moe=True))
    gathered = tuple(float(items[("hf", 0)].detail.get("attn_input", 0.0) + items[("hf", 0)].detail.get("mlp_input", 0.0))
                     for items in (dense, moe))
    return _Pre(layout, states, dense, moe, heads, discount, frozen_base_bytes(training), float(opt_pd), op_sac,
                gathered, ds_sel, kbit if qlora else None)


@lru_cache(maxsize=64)
def _module_tables(model: ModelArch, training: Training, options: MemoryOptions,
                   modules: tuple[str, ...]) -> tuple[dict, dict]:
    """The (profile, recompute code) item tables with Megatron's "selective" re-running `modules`
    (Strategy.recompute_modules) instead of the attention core alone."""
    pre = _precompute(model, training, options)
    kw = dict(modules=modules, impl=attention_impl(training, options.attention_impl), dropout=options.dropout)
    dense = {**pre.dense, ("megatron", 1): recompute_module_items(model, training, moe=False, **kw)}
    moe = {**pre.moe, ("megatron", 1): recompute_module_items(model, training, moe=True, **kw)
           if model.is_moe else dense[("megatron", 1)]}
    return dense, moe


def _on(flag: Any, x: Any, other: float) -> Any:
    """x where flag else other; flag is True (the same for every strategy) or a boolean mask."""
    return x if flag is True else np.where(flag, x, other)


def _by_prof(mega: np.ndarray, f: Any) -> Any:
    """Per-profile value f(profile) per strategy (one float when both profiles agree)."""
    a, b = f("megatron"), f("hf")
    return a if a == b else np.where(mega, a, b)


@dataclass(frozen=True)
class _Batch:
    """Per-strategy arrays of one `_evaluate` call and what every stage derives from them alike."""

    model: ModelArch
    training: Training
    options: MemoryOptions
    pre: _Pre
    c: dict[str, Any]  # memory_constants.yaml
    s: dict[str, np.ndarray]  # strategy fields (`validate.strategy_arrays`), some also by short name below
    t: np.ndarray
    p: np.ndarray
    v: np.ndarray
    d: np.ndarray
    cp: np.ndarray
    ep: np.ndarray
    et: np.ndarray  # the routed experts' TP degree (validate.expert_tp: strategy.etp, or the framework's default)
    z: np.ndarray
    rec: np.ndarray
    off: np.ndarray
    name: str  # framework name (options override, else strategy.framework)
    mega: np.ndarray  # Megatron memory profile per strategy
    titan: np.ndarray  # torchtitan per strategy (its selective AC and FSDP2 + PP buffers)
    eager_sac: np.ndarray  # torchtitan per-op SAC without torch.compile (its recompute working set)
    bf16_grads: np.ndarray  # Megatron-Core gradient buffer in bf16 (grad_reduce_in_fp32 false), per strategy
    fp8_params: np.ndarray  # Megatron-Core FP8 primary weights (fp8_param_gather), per strategy
    fp8_transpose_bytes: float  # ... their cached transpose per GEMM weight (0: disable_parameter_transpose_cache)
    grad_reduce_in_fp32: bool | None  # the job's option (None: the style's default)
    kbit_upcast: bool  # QLoRA: non-quantised weights in fp32 (PEFT prepare_model_for_kbit_training)
    frozen_fp32: np.ndarray  # LoRA: the frozen base held in fp32 (`_frozen_base_fp32`), per strategy
    frozen_casts: np.ndarray  # ... and run under autocast, which saves each frozen linear's cast (`_frozen_weight_casts`)
    head_cast: bool  # ... and run under autocast: the LM head's 16-bit weight cast is saved (`_head_weight_cast`)
    fresh_grads: np.ndarray  # gradients created in this backward (`_backward_phases`), per strategy
    fp32_shard: np.ndarray  # the fsdp style's FSDP1 units keep only the fp32 shard (fsdp1_mixed), per strategy
    chunked_loss: bool  # the LM head runs chunk by chunk (torchtune's chunked output and loss)
    chunked_nll: bool  # TRL's chunked_nll: per-chunk fp32 LM-head copies, no logits (`_chunked_nll_working_set`)
    titan_chunked: np.ndarray  # torchtitan's chunked loss: head and loss forward + backward a chunk at a time
    loss_bytes: tuple[Any, Any]  # (saved, backward extra) bytes per logit element, per strategy
    dpc: np.ndarray  # DP x CP ranks (gradients and ZeRO shards span both)
    divisors: dict[int, tuple[np.ndarray, np.ndarray]]  # ZeRO level -> (dense, expert) shard divisors
    tokens: np.ndarray  # tokens per micro-batch per GPU (before TP/SP)
    n_micro: np.ndarray
    n_sched: np.ndarray  # micro-batches per pipeline schedule (pipeline.schedule_micro_batches: Strategy.local_batch)
    sp_div: np.ndarray  # TP degree under sequence parallelism, else 1
    dense_b: np.ndarray  # per-layer activation bytes of one micro-batch (chosen recompute)
    moe_b: np.ndarray
    dense_none: np.ndarray  # ... without recompute (the full-recompute working set)
    moe_none: np.ndarray
    st: dict[str, Any]  # model-state bytes per parameter, per strategy's profile
    w16: float  # 16-bit weight copies (fp32 when training in fp32)
    # Strategy.recompute_method (one per batch) / recompute_num_layers (one, or an array; partial_recompute.py)
    partial_recompute: tuple[str | None, Any] = (None, None)
    cp_all_gather: bool = False  # Strategy.cp_comm_type all_gather (one per batch; `_cp_allgather_buffers`)
    repeat_kv: bool = True  # torchtitan's K / V expanded to the query heads before SDPA (`titan_repeats_kv`)
    stage_edges: tuple[Any, Any, Any] = (None, None, None)  # the stated decoder layers (pipeline.stated_edges)
    head_own_unit: bool = False  # Strategy.shard_embedding_head_separately (one per batch; `_torchtune_fsdp2_end_units`)
    loss_impl: str = "auto"  # strategy.loss_impl as stated
    live_at_rerun: Any = "loss"  # names.LIVE_AT_RERUN per strategy: what the loop holds at a re-run (`_live_at_rerun`)
    drops_outputs: Any = False  # live_at_rerun none, per strategy (the loss path's segments: `_loss_path_segments`)
    held_logit_bytes: Any = 0.0  # bytes a logit element of the outputs the loop holds, per strategy (`_held_logit_bytes`)
    expandable: Any = False  # the allocator's expandable segments, per strategy (allocator.expandable_segments)
    capacity: float = np.inf  # the card's bytes (System.memory_gib), which cached-only segments never exceed
    device_map: bool = False  # Strategy.device_map: one process drives the chained cards, no NCCL communicator
    nccl_bytes: Any = 0.0  # the job's NCCL communicators' device bytes, per strategy (communicators.py; `_evaluate`)
    # ZeRO-3 on DeepSpeed's engine (framework.deepspeed_zero3_engine), per strategy; its bucket-size mode (the job's
    # strategy.zero3_bucket_sizes or the style's) and whether the stack builds q / k / v and gate / up apart
    ds_engine: Any = False
    ds_buckets: Any = "deepspeed"
    ds_split: bool = False
    # ... where the model was built outside deepspeed.zero.Init (strategy.zero_init false): torch's own linear
    # saves each gathered weight (`_deepspeed_zero3_live`)
    ds_torch_linear: Any = False
    # bytes a parameter of the master gradient a ZeRO optimizer's step casts into where strategy.optimizer_precision
    # states one (memory_constants.yaml optimizer_precision master_grads: bf16-master), else inf (the step's fp32 cast)
    master_grad_bytes: float = np.inf
    # QLoRA's bitsandbytes options (`nf4_options`) and the copies of a weight live at its dequantisation, in compute-
    # dtype widths (`_nf4_copies`)
    expert_copies: bool = False  # strategy.expert_weight_copies (`_expert_weight_copies`)
    expert_grad_zeros: bool = False  # ... or an eager loop over fused experts (framework.fused_expert_loop)
    nf4_saves_input: bool = False
    nf4_head: bool = False
    nf4_copies: float = 1.0
    nf4_double_quant: bool | None = None  # strategy.nf4_double_quant (None = memory_constants.yaml's count)
    # strategy.loss_parallel false: the LM head's output gathered to every TP rank (`_activations`)
    gathered_logits: bool = False
    # strategy.fsdp_no_sync, or fsdp_reshard step, or the hf style's FSDP1 no_sync, with more than one micro-batch a
    # step: (where unsharded gradients are held, where FSDP1 holds them; fsdp1_no_sync.no_sync_hold, `_full_states`)
    no_sync: tuple[Any, Any] = (False, False)
    # strategy.fsdp_reshard backward / step without pipelining: the parameters gathered in forward held to the
    # backward (`_overheads`)
    fsdp_held_weights: Any = False
    # torchtitan's pipelined FSDP2 syncs once a step (strategy.pp_fsdp_once_per_step not false): the stage's unsharded
    # gradients held across micro-batches (`_framework_buffers` pp_hold)
    pp_grad_hold: bool = True
    # strategy.embedding_parallel false: the token embedding whole on every TP rank (`_stage_params`); its TP divisor
    emb_t: Any = 1.0
    # torch.optim.AdamW's foreach step (strategy.optimizer_impl foreach, no optimizer in backward): its temporary
    foreach_adamw: bool = False

    def ssum(self, cum: np.ndarray, start: np.ndarray, stop: np.ndarray, n: np.ndarray) -> np.ndarray:
        """Sum of a per-layer cumulative table over a stage's layers (interleaved: the stage's layer count at
        the average layer)."""
        exact = cum[stop] - cum[start]
        return np.where(self.v > 1, cum[self.model.layers] * n / self.model.layers, exact)

    def shard(self, pd: Any, pe: Any, level: int) -> Any:
        """Dense and expert parameters on one GPU after ZeRO level `level` (3 params, 2 grads, 1 optimizer)."""
        div_d, div_e = self.divisors[level]
        return pd / div_d + pe / div_e

    def by_prof(self, f: Any) -> Any:
        return _by_prof(self.mega, f)

    @property
    def no_sync_hold(self) -> Any:
        return self.no_sync[0]

    @property
    def no_sync_fsdp1(self) -> Any:  # ... in the compute dtype (`_no_sync_grad_bytes`)
        return self.no_sync[1]

    @property
    def offload_opt(self) -> np.ndarray:
        return self.off >= 1

    @property
    def offload_par(self) -> np.ndarray:
        return self.off >= 2

    @property
    def largest_layer_params(self) -> np.ndarray:
        """Parameters of the largest decoder layer on one GPU: its TP-sharded and replicated parts and its experts'
        share (EP x expert TP)."""
        lay = self.pre.layout
        return lay.max_layer_tp / self.t + lay.max_layer_rep + lay.max_layer_exp / (self.ep * self.et)


def _state_bytes(mega: np.ndarray, pre: _Pre, name: str, training: Training, bf16_grads: np.ndarray,
                 precision: str | None = None, fp32_shard: Any = False) -> dict:
    """Bytes per parameter of each model state per strategy: the framework profile's, with torchtune's
    model-dtype states, Megatron-Core's bf16 gradient buffer, strategy.optimizer_precision (`precision`) and the
    fsdp style's FSDP1 sharded gradient in the fp32 shard's dtype (`fp32_shard`, fsdp1_mixed) where they apply."""
    st = {key: _by_prof(mega, lambda pr, n=key: getattr(pre.states[pr], n)) for key in
          ("weights", "grads", "grad_fp32_copy", "master", "grad_accum_fp32", "optimizer", "fp8_cache")}
    if name == "torchtune":
        # torchtune trains in the model dtype: no fp32 master copy, optimizer states in that dtype (torchtune
        # docs tutorials/memory_optimizations.rst "Model Precision": bf16 "uses 2 bytes per model and optimizer
        # parameter"; "we don't support mixed-precision training")
        st["master"], st["optimizer"] = 0.0, pre.opt_in_param_dtype
    if precision not in (None, "fp32") and training.precision != "fp32":
        # AdamW's master copy and moments as the job states them (memory_constants.yaml optimizer_precision);
        # an fp32 model has no separate master and keeps fp32 states
        row = load_memory_constants()["optimizer_precision"][precision]
        st["master"] = np.minimum(st["master"], float(row["master"]))
        st["optimizer"] = np.minimum(st["optimizer"], float(row["moments"]))
    if np.any(bf16_grads):
        st["grads"] = np.where(bf16_grads, float(act_bytes(training.precision)), st["grads"])
        st["grad_accum_fp32"] = np.where(bf16_grads, 0.0, st["grad_accum_fp32"])
    if np.any(fp32_shard):
        st["grads"] = fsdp1_mixed.sharded_grad_bytes(st["grads"], st["master"], fp32_shard)
    return st


def _optimizer_precision(strategy: Strategy, training: Training, fp8_params: Any = False) -> str | None:
    """strategy.optimizer_precision checked against names.OPTIMIZER_PRECISIONS; a precision other than fp32
    applies to AdamW's states only (names.optimizer_precisions_for: adamw / paged_adamw any, 8-bit AdamW bf16),
    fp32-remainders to bf16 weights only (names.remainder_weights_conflict: not under `fp8_params`)."""
    precision = getattr(strategy, "optimizer_precision", None)
    if precision is None:
        return None
    if precision not in OPTIMIZER_PRECISIONS:
        raise unknown_name("strategy.optimizer_precision", "optimizer precision", precision, OPTIMIZER_PRECISIONS)
    allowed = optimizer_precisions_for(training.optimizer)
    if precision not in allowed:  # a job file is refused as early by spec.Job (the same rule, names.py)
        raise SpecError("strategy.optimizer_precision", msg("error_optimizer_precision_adamw",
                                                            optimizer=training.optimizer),
                        value=precision, allowed=allowed)
    weights = remainder_weights_conflict(precision, training.precision, bool(np.any(fp8_params)))
    if weights is not None:
        raise SpecError("strategy.optimizer_precision",
                        msg("error_optimizer_remainders_weights", weights=weights, precision=precision), value=precision)
    weights = bf16_master_conflict(precision, training.precision)
    if weights is not None:
        raise SpecError("strategy.optimizer_precision", msg("error_optimizer_bf16_master_weights", weights=weights),
                        value=precision)
    return str(precision)


def _master_grad_bytes(precision: str | None, training: Training) -> float:
    """Bytes a parameter of the master gradient the ZeRO optimizer's step casts into under `precision`
    (memory_constants.yaml optimizer_precision master_grads; bf16-master: 2), inf where the precision states none or
    the model is fp32 (the step's own fp32 cast, optimizer_step fp32_grad_cast_bytes_per_param)."""
    if precision in (None, "fp32") or training.precision == "fp32":
        return np.inf
    return float(load_memory_constants()["optimizer_precision"][precision].get("master_grads", np.inf))


def _one_per_batch(strategy: Strategy, s: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """`s` with the settings that take one value for the whole batch: layers whose activations are offloaded (inf =
    every layer), the optimizer in backward, Megatron-Core's combined 1F1B, the returned K / V cache, the MoE
    dispatcher's held router output (0 / 1)."""
    s["activation_offload"] = np.asarray(offload_layers_asked(strategy))
    s["optimizer_in_backward"] = np.asarray(float(bool(getattr(strategy, "optimizer_in_backward", False))))
    s["moe_a2a_overlap"] = np.asarray(float(bool(getattr(strategy, "moe_a2a_overlap", None))))
    s["returns_kv_cache"] = np.asarray(float(bool(getattr(strategy, "returns_kv_cache", None))))
    s["moe_router_output_held"] = np.asarray(float(bool(getattr(strategy, "moe_router_output_held", None))))
    return s


def _batch(model: ModelArch, training: Training, strategy: Strategy, options: MemoryOptions,
           accelerator: str = "") -> _Batch:
    # dense_all: the routed experts' activations at tokens x experts
    model = routed_model(model, strategy, training.method in ("pretrain", "cpt"))
    pre = _precompute(model, training, options)
    s = _one_per_batch(strategy, strategy_arrays(strategy))
    t, p, d, cp, ep = s["tp"], s["pp"], s["dp"], s["cp"], s["ep"]
    z, mb, rec = s["zero"], s["micro_batch"], s["recompute"]

    name, mega, titan = _profiles(training, strategy, options, s)
    dpc, divisors = _shard_divisors(s)
    ds_engine, ds_buckets, ds_split = _deepspeed_engine(name, strategy, training, s)
    # tokens and micro-batches
    pairs = float(training.sequences_per_sample)  # DPO: chosen + rejected per sample
    seq = training.peak_row_tokens  # seq_len, or the longest unpacked sample (Training.peak_row_tokens)
    tokens = mb * seq / cp * pairs
    n_micro = pipeline.micro_batches(training.global_batch_seqs, d, mb)
    n_sched = pipeline.schedule_micro_batches(n_micro, mb, getattr(strategy, "local_batch", None))
    sp_div = np.where((t > 1) & (s["sequence_parallel"] > 0), t, 1.0)
    upcast_w, (dense_b, moe_b, dense_none, moe_none) = _saved_layer_bytes(
        model, training, strategy, options, pre, name, mega, titan, rec, tokens, sp_div, t, s["etp"])
    # DeepSpeed's bf16 / fp16 engine casts the module to 16 bit (engine.py _configure_distributed_model:
    # module.bfloat16()) and runs no autocast: no fp32 head to cast
    head_cast = training.method == "qlora" and kbit_upcast(strategy, name)[1] and name != "deepspeed"

    compiled = _compiled(strategy, name, training)
    # torchtitan per-op SAC without torch.compile: the non-reentrant checkpoint re-runs the block's whole forward
    # at the first unpack in backward, so everything it recomputes is live at once (as under full AC); compiled,
    # the min-cut partitioner recomputes inside the fused backward graph
    eager_sac = titan & (rec == 1) & ~compiled
    # Megatron-Core options the NeMo / Megatron-Bridge performance recipes set (one value per batch; None = the
    # style's default): grad_reduce_in_fp32 false keeps the DDP gradient buffer in bf16 instead of the fp32
    # main_grad (MixedPrecisionConfig / DistributedDataParallelConfig.grad_reduce_in_fp32); fp8_param_gather
    # stores the GEMM weights as FP8 tensors (te.fp8_model_init), no bf16 copy (MixedPrecisionConfig.fp8_param)
    half = training.precision in ("bf16", "fp8")
    g32 = getattr(strategy, "grad_reduce_in_fp32", None)
    bf16_grads = mega & (g32 is False) & half
    fp8_params = mega & _fp8_params(strategy, name, mega, z) & (training.precision == "fp8") & \
        (not fp4_training(training))
    loss_impl = getattr(strategy, "loss_impl", "auto")
    titan_chunked = titan & (loss_impl == "chunked")
    # torchtitan compiles its loss with the model unless CompileConfig components leave it out (strategy.compile_loss)
    asked = getattr(strategy, "compile_loss", None)
    titan_loss_compiled = titan & (compiled if asked is None else bool(asked))
    loss_bytes = _loss_bytes(name, loss_impl, mega, titan_loss_compiled, pre, bool(np.all(compiled)), titan_chunked)
    chunked = loss_impl == "chunked" or (loss_impl == "auto" and DEFAULT_LOSS.get(name) == "chunked")
    gathered_logits = getattr(strategy, "loss_parallel", None) is False
    loss_bytes = _logit_extras(training, strategy, name, loss_bytes, titan & (t > 1) & (not gathered_logits), z)
    loss_bytes = _compiled_loss_parallel(loss_bytes, titan & (t > 1) & (not gathered_logits) & titan_loss_compiled
                                         & ~titan_chunked)
    loss_bytes = _chunk_at_a_time(loss_bytes, titan_chunked, titan_loss_compiled, training)
    fp32_shard = fsdp1_mixed.fp32_shard_units(strategy, name, mega, titan, z, dpc, training)  # FSDP1's fp32 shard
    opt_precision = _optimizer_precision(strategy, training, fp8_params)
    st = _state_bytes(mega, pre, name, training, bf16_grads, opt_precision, fp32_shard)
    fresh = grad_segments.fresh_gradients(name, ~mega & ~titan, z, n_micro, p, ds_engine, fp32_shard)
    live = _live_at_rerun(strategy, name, loss_impl, mega)
    return _Batch(model=model, training=training, options=options, pre=pre, c=load_memory_constants(), s=s,
                  t=t, p=p, v=s["vpp"], d=d, cp=cp, ep=ep, et=s["etp"], z=z, rec=rec, off=s["offload"],
                  name=name, mega=mega, titan=titan, kbit_upcast=upcast_w, head_cast=head_cast,
                  frozen_fp32=_frozen_base_fp32(name, strategy, training, s),
                  frozen_casts=_autocast_fp32_base(name, strategy, training, s) & ~mega,
                  ds_engine=ds_engine, ds_buckets=ds_buckets, ds_split=ds_split,
                  ds_torch_linear=np.asarray(ds_engine, bool) & (getattr(strategy, "zero_init", None) is False),
                  master_grad_bytes=_master_grad_bytes(opt_precision, training),
                  bf16_grads=bf16_grads, live_at_rerun=live, drops_outputs=np.asarray(live == "none", bool),
                  loss_impl=loss_impl,
                  held_logit_bytes=_held_logit_bytes(live, loss_impl, name, float(act_bytes(training.precision))),
                  expandable=allocator.expandable_segments(strategy, name, titan),
                  fp8_params=fp8_params, fp8_transpose_bytes=_fp8_transpose_bytes(strategy, training, accelerator), eager_sac=eager_sac, grad_reduce_in_fp32=g32, fresh_grads=fresh, fp32_shard=fp32_shard,
                  chunked_loss=chunked, chunked_nll=loss_impl == "chunked-nll", titan_chunked=titan_chunked, head_own_unit=bool(getattr(strategy, "shard_embedding_head_separately", None)),
                  loss_bytes=loss_bytes, dpc=dpc, divisors=divisors, tokens=tokens, n_micro=n_micro, n_sched=n_sched,
                  sp_div=sp_div, dense_b=dense_b, moe_b=moe_b, dense_none=dense_none, moe_none=moe_none, st=st,
                  w16=float(act_bytes(training.precision)),
                  partial_recompute=(getattr(strategy, "recompute_method", None),
                                     getattr(strategy, "recompute_num_layers", None)),
                  cp_all_gather=getattr(strategy, "cp_comm_type", None) == "all_gather",
                  repeat_kv=titan_repeats_kv(strategy),
                  stage_edges=pipeline.stated_edges(strategy),
                  device_map=getattr(strategy, "device_map", None) is not None,
                  expert_copies=bool(getattr(strategy, "expert_weight_copies", None)) and model.is_moe,
                  expert_grad_zeros=(bool(getattr(strategy, "expert_weight_copies", None))
                                     or fused_expert_loop(strategy, model)) and model.is_moe,
                  nf4_saves_input=nf4_options(training, strategy)[0], nf4_head=nf4_options(training, strategy)[1],
                  nf4_copies=_nf4_copies(training, strategy),
                  nf4_double_quant=getattr(strategy, "nf4_double_quant", None),
                  gathered_logits=gathered_logits,
                  no_sync=fsdp1_no_sync.no_sync_hold(strategy, name, mega, titan, z, n_micro),
                  fsdp_held_weights=(_reshard(strategy) in ("backward", "step")) & (z >= 3) & (p <= 1),
                  pp_grad_hold=getattr(strategy, "pp_fsdp_once_per_step", None) is not False,
                  emb_t=1.0 if getattr(strategy, "embedding_parallel", None) is False else t,
                  foreach_adamw=_foreach_adamw(training, strategy))


# the styles whose loop was read for the backward's phases (names.LIVE_AT_RERUN "none"): transformers' Trainer
# (compute_loss returns the loss alone unless return_outputs; training_step `del inputs`, then accelerator.backward:
# trainer.py v4.30-v4.57, TRL's SFTTrainer returning the same), torchtune's recipes (`del logits` in _loss_step) and
# torchtitan's train step (`del pred` before loss.backward(), "need to free to before bwd to avoid peaking memory":
# train.py at ba2469780 (2024-12), 775a486ed and e7c0cae (2025); known-gaps 214 (a))
RERUN_FREES_OUTPUTS = ("hf", "torchtune", "torchtitan")


def _live_at_rerun(strategy: Strategy, name: str, loss_impl: str, mega: np.ndarray) -> np.ndarray:
    """What the loop still holds of the loss phase when a checkpointed layer is re-run (names.LIVE_AT_RERUN), per
    strategy: strategy.live_at_rerun where stated; else, on the styles in RERUN_FREES_OUTPUTS (framework auto where it
    resolves to hf or torchtitan: not Megatron-Core), none, or the logits under loss_impl upcast-held (its caller
    holds them by definition); the sum ("loss") elsewhere, as before."""
    stated = getattr(strategy, "live_at_rerun", None)
    if stated is not None:
        if stated not in LIVE_AT_RERUN:
            raise unknown_name("strategy.live_at_rerun", "loss-phase holding", stated, LIVE_AT_RERUN)
        return np.full(np.shape(mega), str(stated), dtype=object)
    frees = ~np.asarray(mega, bool) if name == "auto" else \
        np.full(np.shape(mega), name in RERUN_FREES_OUTPUTS)
    return np.where(frees, "logits" if loss_impl == "upcast-held" else "none", "loss").astype(object)


def _held_logit_bytes(live: np.ndarray, loss_impl: str, name: str, w16: float) -> np.ndarray:
    """Bytes a logit element of the outputs a loop holds through the backward (live_at_rerun "logits"), per strategy:
    what the model returns. fp32 where the loss upcasts inside the model (transformers <= 4.45's `logits =
    logits.float()` before the loss: loss_impl upcast, the hf style's default) or the caller's fp32 copy (upcast-held);
    the model dtype where the logits stay 16-bit (upcast-shift, upcast-labels: 4.46+ upcasts inside ForCausalLMLoss;
    native; compiled); none where the model returns none in training (fused, liger: Liger's LigerForCausalLMLoss; chunked,
    chunked-nll, Megatron's vocab-parallel and TE losses return the loss alone)."""
    impl = DEFAULT_LOSS.get(name, "upcast") if loss_impl == "auto" else loss_impl
    per = {"upcast": 4.0, "upcast-held": 4.0, "upcast-shift": w16, "upcast-labels": w16, "native": w16,
           "compiled": w16}.get(impl, 0.0)
    return np.where(live == "logits", per, 0.0)


def _reshard(strategy: Strategy) -> str | None:
    """strategy.fsdp_reshard (names.FSDP_RESHARDS; None = the style's), refused by name when unknown."""
    value = getattr(strategy, "fsdp_reshard", None)
    if value is not None and value not in FSDP_RESHARDS:
        raise unknown_name("strategy.fsdp_reshard", "FSDP reshard point", value, FSDP_RESHARDS)
    return value


def _foreach_adamw(training: Training, strategy: Strategy) -> bool:
    """Whether the optimizer step is torch.optim.AdamW's foreach one over the whole model: optimizer adamw with
    strategy.optimizer_impl foreach, and no optimizer in backward (each parameter's step in its own hook)."""
    in_bwd = bool(getattr(strategy, "optimizer_in_backward", False))
    return training.optimizer == "adamw" and optimizer_impl(strategy) == "foreach" and not in_bwd


def _compiled(strategy: Strategy, name: str, training: Training) -> np.ndarray:
    """Whether element-wise work runs fused, per strategy: strategy.torch_compile where stated, else the stack's
    default (framework.compiles_by_default; "auto" per strategy), as the step time resolves it."""
    default = compiles_by_default(name, strategy, training.method in ("pretrain", "cpt"))
    return np.asarray(torch_compile_of(strategy, default), dtype=bool)


def _profiles(training: Training, strategy: Strategy, options: MemoryOptions,
              s: dict[str, np.ndarray]) -> tuple[str, np.ndarray, np.ndarray]:
    """(framework name, Megatron memory profile mask, torchtitan mask) per strategy; "auto" per strategy."""
    t, p, cp, ep, z = s["tp"], s["pp"], s["cp"], s["ep"], s["zero"]
    name = options.framework if options.framework is not None else getattr(strategy, "framework", "auto")
    profile = memory_profile(name)
    if profile is None:
        idx = auto_index(t, p, cp, ep, s["distributed_optimizer"] > 0, z, training.method in ("pretrain", "cpt"))
        mega, titan = idx == 0, idx == 1
    else:
        mega = np.full(t.shape, profile == "megatron")
        titan = np.full(t.shape, name == "torchtitan")
    return name, mega, titan


def _deepspeed_engine(name: str, strategy: Strategy, training: Training,
                      s: dict[str, np.ndarray]) -> tuple[np.ndarray, Any, bool]:
    """(where ZeRO-3 runs on DeepSpeed's engine, its bucket-size mode, whether its stack splits the projections) per
    strategy: framework deepspeed, or HF Trainer / accelerate with zero 3 and no fsdp (framework.
    deepspeed_zero3_engine, as step_time._deepspeed_engine_options), so the gathered modules, the reuse rule's kept
    parameters and the buckets follow the engine, not the stack's name."""
    idx = auto_index(s["tp"], s["pp"], s["cp"], s["ep"], s["distributed_optimizer"] > 0, s["zero"],
                     training.method in ("pretrain", "cpt")) if name == "auto" else 0
    on, mode = deepspeed_zero3_engine(name, idx, s["zero"], getattr(strategy, "fsdp", None))
    stated = getattr(strategy, "zero3_bucket_sizes", None)
    on = np.broadcast_to(on, s["tp"].shape)
    stacks = {AUTO_CHOICES[int(i)] for i in np.unique(np.asarray(idx)[...])} if name == "auto" else {name}
    split = any(style_option(n, "split_projections") for n in stacks if n != "deepspeed")
    return on, (mode if stated is None else stated), split


def _frozen_base_fp32(name: str, strategy: Strategy, training: Training, s: dict[str, np.ndarray]) -> np.ndarray:
    """Where a LoRA job's frozen base is held in fp32, per strategy: strategy.frozen_base_dtype fp32 (the model loaded
    with torch_dtype float32: PEFT examples/sft/utils.py create_and_prepare_model without 4-bit, 6008f272a), except on
    DeepSpeed's engine (framework deepspeed, or the HF Trainer with a ZeRO stage), whose bf16 / fp16 mode casts the
    module before partitioning it (deepspeed
    runtime/engine.py _configure_distributed_model: self.module.bfloat16() / half(); zero.Init casts each module as it
    is built). FSDP's MixedPrecision casts a unit's shard to param_dtype only to all-gather it (torch FSDP1
    _flat_param.py _use_low_precision_shard, FSDP2 FSDPParam.all_gather_inputs), so the fp32 shard stays; without
    either (ZeRO 0), autocast casts each weight at each use and the fp32 weight stays (`_frozen_weight_casts`)."""
    if training.method != "lora" or getattr(strategy, "frozen_base_dtype", None) != "fp32":
        return np.zeros(np.shape(s["zero"]), dtype=bool)
    idx = auto_index(s["tp"], s["pp"], s["cp"], s["ep"], s["distributed_optimizer"] > 0, s["zero"],
                     False) if name == "auto" else 0
    engine = deepspeed_engine(name, idx, getattr(strategy, "fsdp", None)) & ((s["zero"] >= 1) | (name == "deepspeed"))
    return np.broadcast_to(~engine, np.shape(s["zero"]))


def _autocast_fp32_base(name: str, strategy: Strategy, training: Training, s: dict[str, np.ndarray]) -> np.ndarray:
    """Where an fp32-loaded LoRA base runs under autocast, per strategy: held in fp32 (`_frozen_base_fp32`) with no
    FSDP (ZeRO 0: one GPU or DDP; FSDP's MixedPrecision gathers bf16 units, so its layers see bf16 weights)."""
    return _frozen_base_fp32(name, strategy, training, s) & (s["zero"] == 0)


def _shard_divisors(s: dict[str, np.ndarray]) -> tuple[np.ndarray, dict[int, tuple[np.ndarray, np.ndarray]]]:
    """(DP x CP ranks, ZeRO level -> (dense, expert) shard divisors)."""
    z = s["zero"]
    dpc = s["dp"] * s["cp"]
    shard_d, shard_e = shard_groups(s)  # ZeRO / FSDP (hybrid shard when shard_group > 0); experts: the group / EP
    z1 = (z >= 1) | (s["distributed_optimizer"] > 0)
    divisors = {lvl: (np.where(act, shard_d, 1.0), np.where(act, shard_e, 1.0))
                for lvl, act in ((3, z >= 3), (2, z >= 2), (1, z1))}
    return dpc, divisors


def _saved_layer_bytes(model: ModelArch, training: Training, strategy: Strategy, options: MemoryOptions, pre: _Pre,
                       name: str, mega: np.ndarray, titan: np.ndarray, rec: np.ndarray, tokens: np.ndarray,
                       sp_div: np.ndarray, t: np.ndarray, et: Any = None) -> tuple[bool, tuple[Any, Any, Any, Any]]:
    """(QLoRA fp32 upcast of the non-quantised weights, per-layer saved bytes of one micro-batch: dense and MoE
    with the chosen recompute, and without it), with the fp32 residual checkpoint and torchtitan's extras. `et`: the
    routed experts' TP degree (None = t)."""
    upcast_w, upcast_res = kbit_upcast(strategy, name)
    dense_b, moe_b, dense_none, moe_none = _layer_bytes(model, training, strategy, options, pre, name, mega, titan,
                                                        rec, tokens, sp_div, t, et)
    if training.method != "qlora":  # LoRA on an fp32-loaded base under autocast: fp32 embedding and norm weights
        fp32_base = training.method == "lora" and getattr(strategy, "frozen_base_dtype", None) == "fp32"
        upcast_res = _autocast_fp32_base(name, strategy, training, strategy_arrays(strategy)) if fp32_base else False
    residual = _fp32_residual_checkpoint(model, training, upcast_res, mega, rec, tokens / sp_div)
    kv = _kv_subshard_bytes(model, training, name, mega, titan, tokens, t)
    dense_b, moe_b = dense_b + residual + np.where(rec <= 1, kv, 0.0), moe_b + residual + np.where(rec <= 1, kv, 0.0)
    dense_none, moe_none = dense_none + kv, moe_none + kv
    if np.any(titan):
        dense_none, moe_none = _titan_block_extras(model, training, strategy, pre, titan, tokens, t, sp_div,
                                                   dense_none, moe_none)
        if model.is_moe:
            moe_none = moe_none + _titan_expert_slot_delta(model, training, strategy, pre, titan, tokens, t)
        dense_b = np.where(titan & (rec == 0), dense_none, dense_b)
        dense_b = dense_b - _compiled_sac_unread(model, training, strategy, titan, rec, tokens, sp_div)
        unsaved = _sac_unsaved_attention(model, training, strategy, titan, rec, tokens, t)
        dense_b = dense_b - unsaved
        moe_b = np.where(titan & (rec == 0), moe_none, moe_b - unsaved) if model.is_moe else dense_b
        if model.is_moe:
            moe_b = moe_b + _titan_sac_a2a_bytes(model, training, strategy, titan, rec, tokens, t)
    if name == "torchtune":
        # torchtune's MultiHeadAttention expands K and V to every query head (k.unsqueeze(2).expand(...).flatten(1, 2),
        # a copy) before F.scaled_dot_product_attention, which saves them (torchtune/modules/attention.py, 2024-09
        # 30b8519 to 2025-05 e5ee1b2)
        kv = tokens * expanded_kv_bytes(model, training) / t
        dense_none, moe_none = dense_none + kv, moe_none + kv
        dense_b, moe_b = dense_b + np.where(rec <= 1, kv, 0.0), moe_b + np.where(rec <= 1, kv, 0.0)
    return upcast_w, (dense_b, moe_b, dense_none, moe_none)


def _kv_subshard_bytes(model: ModelArch, training: Training, name: str, mega: np.ndarray, titan: np.ndarray,
                       tokens: Any, t: Any) -> Any:
    """Bytes per layer of one micro-batch that TP above the K / V heads adds where the stack sub-shards them
    (framework.kv_head_copies; Megatron-Core core_v0.16.0+, attention.py get_query_key_value_tensors): each rank's
    attention keeps its query group's K and V heads whole, one head each, where the layer items count kv_heads / tp
    of a head. Kept with the items that keep q / k / v (no recompute, selective) and in the full-recompute working
    set; attention layers' share. The all-gathered QKV buffer's own lifetime is not counted (docs/known-gaps.md 227 (a))."""
    if model.attention == "mla" or not np.any(np.asarray(t) > model.kv_heads):  # the search's usual batch: none
        return 0.0
    auto_idx = np.where(mega, 0, np.where(titan, 1, 2))  # _profiles: "auto"'s megatron-core / torchtitan / hf
    copies = kv_head_copies(name, auto_idx, t, model.kv_heads, model.attention)
    if not np.any(copies > 1.0):
        return 0.0
    a = float(act_bytes(training.precision))
    share = model.attention_layers / model.layers
    return tokens * a * float(model.kv_dim + model.v_dim) * (copies - 1.0) / t * share


def _logit_extras(training: Training, strategy: Strategy, name: str, loss_bytes: tuple[Any, Any],
                  titan_tp: np.ndarray, z: np.ndarray) -> tuple[Any, Any]:
    """`loss_bytes` (saved, backward extra bytes per logit element) with what a framework adds around its loss:
    torchtitan's loss_parallel under TP, DeepSpeed's PipelineEngine keeping the 16-bit logits."""
    lg = load_memory_constants()["logits"]
    lp = titan_tp & (np.asarray(loss_bytes[0]) == lg["hf_saved_bytes_per_element"])
    if np.any(lp):  # torchtitan TP runs the eager fp32 loss under loss_parallel (vocabulary-sharded logits)
        loss_bytes = (loss_bytes[0], np.where(lp, lg["loss_parallel_backward_extra_bytes_per_element"], loss_bytes[1]))
    if name == "deepspeed" and getattr(strategy, "loss_impl", "auto") == "auto":
        # DeepSpeed's PipelineEngine (Megatron-DeepSpeed, GPT-NeoX; it refuses ZeRO-2/3) keeps the last stage's
        # 16-bit logits in pipe_buffers['outputs'] until the next micro-batch (runtime/pipe/engine.py
        # _exec_forward_pass; _exec_backward_pass returns after backward(loss) on the last stage)
        loss_bytes = (loss_bytes[0] + np.where(z <= 1, float(act_bytes(training.precision)), 0.0), loss_bytes[1])
    return loss_bytes


def _compiled_loss_parallel(loss_bytes: tuple[Any, Any], mask: Any) -> tuple[Any, Any]:
    """`loss_bytes` where torchtitan compiles its loss under TP's loss_parallel (vocabulary-sharded DTensor logits):
    the compiled graph saves the fp32 log-softmax (4 B a local logit element, logits.hf_saved_bytes_per_element) as
    the eager one does, not the compiled non-TP loss's 16-bit logits (2 B): loss_parallel's log-softmax handler
    all-reduces the row max and sum across the TP ranks (torch/distributed/tensor/parallel/loss.py), and the
    partitioner does not re-run collectives in the backward. Counted with torch 2.13 on the fake process group
    (known-gaps 348 (c)): 4.00 B a local element compiled under loss_parallel, 2.02 compiled without it. The
    backward's temporaries keep the compiled value (not measured here)."""
    hf = float(load_memory_constants()["logits"]["hf_saved_bytes_per_element"])
    return np.where(mask, np.maximum(np.asarray(loss_bytes[0], float), hf), loss_bytes[0]), loss_bytes[1]


def _chunk_at_a_time(loss_bytes: tuple[Any, Any], titan_chunked: np.ndarray, titan_compiled: np.ndarray,
                     training: Training) -> tuple[Any, Any]:
    """`loss_bytes` (its inner loss's saved and backward-extra bytes per logit element) under torchtitan's chunked
    loss (memory_constants.yaml logits.torchtitan_chunked; components/loss.py ChunkedCELoss 786e26f8e, 2026-04-27,
    ChunkedLossWrapper since 9530a874d): each chunk's LM head, loss and backward run before the next chunk, so no
    logit survives the loop (saved 0) and one chunk's tensors are live at a time: the inner loss's saved and
    backward tensors, and in eager code the loop's 16-bit chunk logits beside its fp32 upcast (compiled, the saved
    16-bit logits are that tensor), over num_chunks of the micro-batch's logit elements."""
    if not np.any(titan_chunked):
        return loss_bytes
    saved, extra = loss_bytes
    n = float(load_memory_constants()["logits"]["torchtitan_chunked"]["num_chunks"])
    held = np.where(titan_compiled, 0.0, float(act_bytes(training.precision)))
    return np.where(titan_chunked, 0.0, saved), np.where(titan_chunked, (saved + extra + held) / n, extra)


def _titan_chunk_buffers(b: _Batch) -> Any:
    """Bytes of torchtitan's chunked loss outside its logits (memory_constants.yaml logits.torchtitan_chunked):
    GradAccumulator's fp32 buffer of the hidden states' gradient (zeros_like(hidden_states, float32)) and the
    chunks' `.contiguous()` copies, which copy where a micro-batch holds more than one sequence (a split along the
    sequence of [B, L, D] is not contiguous then); the hidden states are whole on every TP rank (the chunks enter
    the LM head replicated), CP-split."""
    tc = b.c["logits"]["torchtitan_chunked"]
    copies = np.where(b.s["micro_batch"] > 1, float(tc["chunk_copy_bytes_per_element"]), 0.0)
    per = float(tc["grad_accumulator_bytes_per_element"]) + copies
    return np.where(b.titan_chunked, b.tokens * float(b.model.hidden) * per, 0.0)


def _fp8_params(strategy: Strategy, name: str, mega: np.ndarray, z: np.ndarray) -> Any:
    """FP8 primary weights per strategy: the job's strategy.fp8_param_allgather, else its style's default
    (framework.style_option, as the step time reads it): on in megatron-core, whose NeMo 2 / Megatron-Bridge
    FP8 recipes set fp8_params / fp8_param_gather, with the distributed optimizer only (NeMo turns it off under
    Megatron FSDP: scripts/performance/utils.py, v2.3.0); "auto" takes megatron-core's where it resolves to it."""
    asked = getattr(strategy, "fp8_param_allgather", None)
    if asked is not None:
        return bool(asked)
    style = "megatron-core" if name == "auto" else name
    default = fp8_primary_weights_default(style_option(style, "fp8_param_allgather"), z)
    return mega & default if name == "auto" else default


def _fp8_transpose_bytes(strategy: Strategy, training: Training | None = None, accelerator: str = "") -> float:
    """Bytes per GEMM weight of the FP8 primary weights' cached transpose (memory_constants.yaml fp8
    param_cache_bytes_per_gemm_param): none under strategy.fp8_transpose_cache false, Megatron-Core's
    disable_parameter_transpose_cache (TELinear.forward passes is_first_microbatch None, so Transformer Engine
    re-makes the transpose for each backward instead of keeping it between micro-batches; NeMo and AMD's MLPerf
    LoRA configs set it); none either under per-tensor scaling (delayed, tensorwise) on a part whose FP8 GEMMs
    take every layout (fp8.non_tn_fp8_gemm_families, Blackwell), where Transformer Engine makes no transpose.
    "auto" is MXFP8 there (perf_constants.yaml fp8.default_recipe), which keeps its column-wise copy."""
    if getattr(strategy, "fp8_transpose_cache", None) is False:
        return 0.0
    c = load_memory_constants()["fp8"]
    per_tensor = training is not None and training.fp8_recipe in ("delayed", "tensorwise")
    if per_tensor and any(accelerator.lower().startswith(f) for f in c["non_tn_fp8_gemm_families"]):
        return 0.0
    return float(load_memory_constants()["fp8"]["param_cache_bytes_per_gemm_param"])


def _titan_tp_rowwise_bytes(model: ModelArch, training: Training, strategy: Strategy, sp_div: np.ndarray) -> Any:
    """Bytes per token (before TP) that torchtitan's per-op SAC keeps in a dense block under TP with sequence
    parallelism beyond `torchtitan_op_sac_items`' sequence-sharded count. Its save list holds aten.mm and
    _c10d_functional.reduce_scatter_tensor (torchtitan/distributed/activation_checkpoint.py `_save_list`, late 2025),
    and a RowwiseParallel linear's mm yields the whole sequence's partial sum, reduce-scattered to Shard(1) by the
    module's output hook (llama3 parallelize.py apply_tp: wo, w2 RowwiseParallel(output_layouts=Shard(1))). Eager,
    SAC's dispatch mode caches w2's mm output whole (the items count it over TP) and both reduce-scatter outputs;
    compiled, the partitioner keeps only what the backward reads: wo's reduce-scatter output, from which the
    ffn_norm input is re-made (w2's output and its reduce-scatter are not read). Counted with torch 2.13 on a
    TP 2 block, benchmarks/titan_tp_sac_saves.py: eager +3.0 h, compiled +1.0 h bytes a token. 0 without SP."""
    a, h = float(act_bytes(training.precision)), float(model.hidden)
    kept = 1.0 - op_sac_unsaved_share(training, model)
    sp = np.asarray(sp_div, float)
    eager = a * h * kept * (1.0 - 1.0 / sp) + 2.0 * a * h / sp
    extra = np.where(_compiled(strategy, "torchtitan", training), a * h / sp, eager)
    return np.where(sp > 1, extra, 0.0)


def _layer_bytes(model: ModelArch, training: Training, strategy: Strategy, options: MemoryOptions, pre: _Pre,
                 name: str, mega: np.ndarray, titan: np.ndarray, rec: np.ndarray, tokens: np.ndarray,
                 sp_div: np.ndarray, t: np.ndarray, et: Any = None) -> tuple[Any, Any, Any, Any]:
    """Per-layer bytes of one micro-batch per strategy: (dense, MoE) with the chosen recompute (Megatron's
    selective re-running strategy.recompute_modules where given), and (dense, MoE) without it (the
    full-recompute working set); strategy.norm_kernel applied.
    Routed token-slots: tokens x top-k / t a GPU, each slot's items as saved (expert TP 1: a TP rank dispatches its
    own 1 / t of the tokens, its experts whole). With Megatron-Core at expert TP et > 1 a GPU receives tokens x top-k
    x et / t slots (its expert-TP group's, all-gathered by the alltoall dispatcher or sent to every expert-TP rank by
    the flex one: step_time._moe_tp_collectives), and keeps their full-width items -- the experts' hidden-wide input,
    the routing weight and the dispatch map (`_routed_unsplit`) -- while the expert-wide ones split over et."""
    seq = training.peak_row_tokens  # seq_len, or the longest unpacked sample (Training.peak_row_tokens)
    # routed token-slots on the busiest GPU: top-k x capacity factor (Training.moe_capacity_factor)
    k = float(model.experts_per_token or 0) * float(training.moe_capacity_factor)
    et_over = np.maximum(np.asarray(t if et is None else et, float), 1.0)  # slots a GPU keeps, over expert TP 1
    # (profile, recompute) item set per strategy: row 3*profile + recompute of a 9-row table (row 6: zeros,
    # for recompute codes outside 0..2, which validate rejects)
    # row 7: torchtitan's per-op selective AC (its "selective"); row 8: DeepSeek-V3's (deepseek-dualpipe)
    mega_i = mega.astype(np.intp)
    row = np.where((rec == 0) | (rec == 1) | (rec == 2), 3 * mega_i + rec.astype(np.intp), 6)
    row = np.where(titan & (rec == 1), 7, row)
    row = np.where((name == "deepseek-dualpipe") & (rec == 1), 8, row)
    row_none = 3 * mega_i
    # Megatron-based codebases under DeepSpeed (Megatron-DeepSpeed, GPT-NeoX: framework deepspeed) run Megatron's
    # FusedScaleMaskSoftmax, which saves its 16-bit output only (the megatron profile's eager score bytes)
    s2_prof = {prof: "megatron" if name == "deepspeed" else prof for prof in PROFILES}

    def pick(table: dict, rows: np.ndarray, kind: int) -> np.ndarray:
        """The (profile, recompute) item set chosen per strategy (kind 0 dense, 1 MoE)."""
        sets = [table[(prof, rc)] for prof in PROFILES for rc in range(3)]
        s2 = [table[(s2_prof[prof], rc)].s2 for prof in PROFILES for rc in range(3)]
        extra = [LayerItems(0.0, 0.0, 0.0, 0.0), pre.op_sac[kind], pre.ds_sel[kind]]
        s2 += [r.s2 for r in extra]
        sp_c = np.array([r.sp for r in sets + extra])
        rest = np.array([r.tp + r.routed * k + s2_r * seq for r, s2_r in zip(sets + extra, s2, strict=True)])
        gathered = np.array([_routed_unsplit(r) * k for r in sets + extra])[rows] * np.where(mega, et_over - 1.0, 0.0)
        return tokens * (sp_c[rows] / sp_div + (rest[rows] + gathered) / t)

    # strategy.norm_kernel: the two layer norms save what that kernel saves instead of the profile's, where the
    # item set keeps them (no recompute, Megatron / HF selective) and in the working set
    # torchtune under torch.compile (training.compile_model compiles each layer): Inductor's min-cut partitioner
    # recomputes the element-wise ops in the backward, so each norm keeps one 16-bit tensor and its fp32 rstd (as
    # a fused kernel) and SwiGLU drops the SiLU output (`_compiled_silu_bytes`)
    compiled_tt = name == "torchtune" and bool(np.all(_compiled(strategy, name, training)))
    norm = tokens / sp_div * _norm_kernel_delta(model, training, strategy, mega, "fused" if compiled_tt else None,
                                                _release_fused_norm(training, strategy, name, mega, titan))
    keeps = row < 6
    modules = getattr(strategy, "recompute_modules", None)
    # QLoRA on bitsandbytes < 0.43.2: the frozen 4-bit linears keep their inputs too (activations._Layer.W)
    base_d, base_m = pre.kbit if nf4_options(training, strategy)[0] and pre.kbit else (pre.dense, pre.moe)
    tab_d, tab_m = (base_d, base_m) if modules is None else _module_tables(model, training, options, tuple(modules))
    if compiled_tt:
        norm = norm - tokens * _compiled_silu_bytes(pre) / t
    # strategy.activation_kernel: an eager SwiGLU keeps the SiLU output for the product's backward, a fused one not
    # (the dense MLP's; MoE layers' experts keep their own kernels)
    act = tokens * _act_kernel_delta(model, strategy, pre, mega, hf_eager=not compiled_tt) / t
    dpa, fp8_act = _fp8_store_deltas(model, training, strategy, pre, mega)
    dpa, fp8_act = tokens * dpa / t, tokens * fp8_act / t
    impl = attention_impl(training, options.attention_impl)
    # eager layers only: under torch.compile the partitioner decides what is saved (the casts' copies not read)
    eager = ~_compiled(strategy, name, training)
    hf = ((name == "hf") | ((name == "auto") & ~np.asarray(titan, bool))) & ~np.asarray(mega, bool)  # auto's pick
    peft = eager * tokens * _peft_input_copies(model, training, hf, impl, rec) / t
    peft_none = eager * tokens * _peft_input_copies(model, training, hf, impl, np.zeros_like(rec)) / t
    dense_b = pick(tab_d, row, 0) + np.where(keeps & (rec <= 1), norm + act + fp8_act + peft, 0.0) + np.where(
        keeps & (rec == 0), dpa, 0.0)
    moe_b = pick(tab_m, row, 1) + np.where(keeps & (rec <= 1), norm, 0.0) + np.where(
        keeps & (rec == 0), dpa, 0.0) if model.is_moe else dense_b
    dense_b = dense_b + np.where(row == 7, tokens * _titan_tp_rowwise_bytes(model, training, strategy, sp_div), 0.0)
    dense_none = pick(base_d, row_none, 0) + norm + act + fp8_act + dpa + peft_none
    moe_none = pick(base_m, row_none, 1) + norm + dpa if model.is_moe else dense_none
    if model.is_moe and getattr(strategy, "moe_dispatcher", "auto") in FLEX_DISPATCHERS:
        # DeepEP experts on the hf-profile (PyTorch-native) stacks: their routed slots save Megatron's layout
        keep, full = _deepep_slot_delta(model, training, options)
        moe_b = moe_b + np.where(~mega & (row <= 1), tokens * k * np.where(row == 1, keep[1], keep[0]) / t, 0.0)
        moe_none = moe_none + np.where(~mega, tokens * k * full / t, 0.0)
    return dense_b, moe_b, dense_none, moe_none


def _peft_input_copies(model: ModelArch, training: Training, hf: Any, impl: str, rec: np.ndarray) -> Any:
    """Bytes per token of one layer's PEFT LoRA inputs beyond the shared ones the hf profile counts: HF PEFT's
    lora.Linear casts its input to the fp32 adapter and autocast casts it back for lora_A, which saves that copy
    (perf_constants.yaml lora.peft_fp32_input_cast; peft lora/layer.py Linear.forward `_cast_input_dtype`), so the
    adapted linears reading the normed input each keep a copy where the profile counts one (q / k / v, or MLA's q_a
    and kv_a; a dense layer's gate / up), and an adapted o_proj one of the attention output where the profile's o
    input is a view of the kernel's output (a flash / SDPA kernel without recompute; eager attention and selective
    recompute already count a copy, which the cast replaces); down_proj's and MLA's q_b / kv_b copies replace the
    inputs they saved. The hf style's plain LoRA only (`hf`: per strategy, the job's stack or what auto picks;
    QLoRA: bitsandbytes skips the cast under autocast; torchtune's and NeMo AutoModel's adapters take the base dtype).
    Checked: benchmarks/memory_ground_truth.py."""
    mods = lora_targets(training)
    if training.method != "lora" or training.lora_impl != "peft" or act_bytes(training.precision) >= 4 or not mods:
        return 0.0
    qkv = {m for m in ("q_proj", "k_proj", "v_proj") if m in mods or "qkv_proj" in mods}
    readers = len(qkv) if model.attention != "mla" else ("q_proj" in qkv) + bool(qkv & {"k_proj", "v_proj"})
    gate_up = sum(m in mods for m in (("gate_proj", "up_proj") if model.mlp == "swiglu" else ("up_proj",)))
    dense = model.dense_mlp_layers / model.layers
    copies = max(readers - 1, 0) * model.hidden + max(gate_up - 1, 0) * model.hidden * dense
    o_view = ("o_proj" in mods) and impl != "eager"
    per = act_bytes(training.precision) * (copies + np.where(o_view & (np.asarray(rec) == 0), model.attn_out_dim, 0))
    return np.where(hf, per, 0.0)


# per-slot items of the routed experts not split by expert TP (activations._moe_mlp): the hidden-wide expert input
# (fc1's saved input), the routing weight and the dispatch map
_UNSPLIT_SLOT_ITEMS = ("routed_expert_input_per_slot", "routed_routing_weight_per_slot",
                       "routed_dispatch_indices_per_slot")


def _routed_unsplit(items: LayerItems) -> float:
    """Bytes per routed token-slot of `items` that expert TP does not split (_UNSPLIT_SLOT_ITEMS, as kept)."""
    return float(sum(items.detail.get(key, 0.0) for key in _UNSPLIT_SLOT_ITEMS))


@lru_cache(maxsize=64)
def _deepep_slot_delta(model: ModelArch, training: Training, options: MemoryOptions) -> tuple[tuple[float, float],
                                                                                               float]:
    """Bytes per routed token-slot that DeepEP experts (activations.layer_items deepep_experts) save less what the
    hf profile's experts save: ((no recompute, selective), no recompute for the full-recompute working set)."""
    impl = attention_impl(training, options.attention_impl)

    def delta(rc: str) -> float:
        kw = dict(moe=True, profile="hf", recompute=rc, impl=impl, dropout=options.dropout)
        return layer_items(model, training, deepep_experts=True, **kw).routed - layer_items(model, training,
                                                                                            **kw).routed
    none = delta("none")
    return (none, delta("selective")), none


def _fp8_store_deltas(model: ModelArch, training: Training, strategy: Strategy, pre: _Pre,
                      mega: np.ndarray) -> tuple[Any, Any]:
    """Bytes per token per layer (before TP, negative: saved) of two Megatron-Core FP8 stores, 0 where the job
    leaves them off or the memory profile is not Megatron's:
    - strategy.fp8_attention (TE fp8_dot_product_attention with NVTE_FP8_DPA_BWD): the fused attention casts q, k
      and v to FP8 and keeps them and its output in FP8 for the FP8 backward (TE FusedAttnFunc saves the FP8
      q / k / v / out), 1 B instead of 2 per element; only without recompute (under selective recompute the core's
      16-bit inputs are the checkpoint, under full only the layer input is kept);
    - strategy.fp8_activation_store (activation_func_fp8_input_store): bias_swiglu_impl saves the SwiGLU input (fc1's
      output, 2 x ffn wide) cast to torch.float8_e4m3fn (fused_bias_swiglu.py SwiGLUFunction, fp8_input_store), 1 B
      instead of 2; dense MLPs (Megatron-Core MLP.forward passes it), without full recompute."""
    detail = pre.dense[("megatron", 0)].detail
    a = float(act_bytes(training.precision))
    dpa = 0.0
    if getattr(strategy, "fp8_attention", None) and training.precision == "fp8":
        dpa = -(a - 1.0) / a * sum(detail.get(key, 0.0) for key in ("q", "k", "v", "attn_out"))
    store = 0.0
    if getattr(strategy, "fp8_activation_store", None) and model.mlp == "swiglu":
        store = -(a - 1.0) / a * detail.get("mlp_fc1_out", 0.0)
    return _by_prof(mega, lambda pr: dpa if pr == "megatron" else 0.0), _by_prof(
        mega, lambda pr: store if pr == "megatron" else 0.0)


def _compiled_silu_bytes(pre: _Pre) -> float:
    """Bytes per token (before TP) of the SiLU output an eager SwiGLU keeps for the gate x up product and that a
    compiled layer recomputes from the saved gate: measured with saved_tensors_hooks on a torchtune-style Llama
    layer (torch 2.13 Inductor, CPU; RMSNorm, K / V expanded before SDPA, SiLU gate): eager 45.4 h bytes per
    token, compiled 32.0 h (the norms' fp32 upcasts and the SiLU output gone), LoRA 42.4 h -> 33.0 h."""
    return float(pre.dense[("hf", 0)].detail.get("mlp_act_out", 0.0))


def _act_kernel_delta(model: ModelArch, strategy: Strategy, pre: _Pre, mega: np.ndarray,
                      hf_eager: bool = True) -> Any:
    """Bytes per token per layer (before TP) by which strategy.activation_kernel (names.ACTIVATION_KERNELS)
    changes what a dense SwiGLU saves from the memory profile's (megatron: fused, fc1 output and fc2 input; hf:
    eager, gate, SiLU output and up, unless `hf_eager` is False: torchtune's compiled layers, which already drop
    it): the SiLU output (`_compiled_silu_bytes`), added for "eager" where the profile's SwiGLU is fused, taken
    away for "fused" where it is eager; 0 when the job leaves it to the style."""
    kernel = getattr(strategy, "activation_kernel", None)
    if kernel is None or model.mlp != "swiglu":
        return 0.0
    if kernel not in ACTIVATION_KERNELS:
        raise unknown_name("strategy.activation_kernel", "activation kernel", kernel, ACTIVATION_KERNELS)
    silu = _compiled_silu_bytes(pre)
    profile_eager = {"megatron": False, "hf": hf_eager}
    return _by_prof(mega, lambda pr: silu * ((kernel == "eager") - profile_eager[pr]))


def _norm_kernel_delta(model: ModelArch, training: Training, strategy: Strategy, mega: np.ndarray,
                       default: str | None = None, release_fused: Any = False) -> Any:
    """Bytes per token per layer by which strategy.norm_kernel (names.NORM_KERNELS; else `default`) changes what
    the layer's two norms save from the memory profile's norm (memory_constants.yaml framework_profiles: megatron
    fused, hf eager); 0 when the job leaves it to the style, except where `release_fused` (the fused kernel by the
    job's PyTorch release, `_release_fused_norm`)."""
    kernel = getattr(strategy, "norm_kernel", None) or default
    if kernel is None:
        on = np.asarray(release_fused, bool)
        return np.where(on, _norm_kernel_delta(model, training, strategy, mega, "fused"), 0.0) if np.any(on) else 0.0
    if kernel not in NORM_KERNELS:
        raise unknown_name("strategy.norm_kernel", "norm kernel", kernel, NORM_KERNELS)
    styles = load_memory_constants()["framework_profiles"]
    return 2.0 * _by_prof(mega, lambda pr: norm_bytes(model, training, kernel)
                          - norm_bytes(model, training, styles[pr]["norm"]))


def _release_fused_norm(training: Training, strategy: Strategy, name: str, mega: np.ndarray,
                        titan: np.ndarray) -> Any:
    """Where an eager run's RMSNorm is PyTorch's fused kernel by the job's release (framework.
    rms_norm_fused_by_release, the step time's rule; per strategy under "auto", whose pick `_profiles` split into
    `mega` / `titan`); a compiled run's norms are Inductor's either way (docs/known-gaps.md 311 (a))."""
    idx = np.where(mega, 0, np.where(titan, 1, 2)) if name == "auto" else None
    fused = rms_norm_fused_by_release(name, idx, getattr(strategy, "torch_version", None))
    return np.asarray(fused, bool) & ~_compiled(strategy, name, training) if np.any(fused) else False


def _titan_block_extras(model: ModelArch, training: Training, strategy: Strategy, pre: _Pre, titan: np.ndarray,
                        tokens: np.ndarray, t: np.ndarray, sp_div: np.ndarray, dense_none: np.ndarray,
                        moe_none: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(dense, MoE) bytes of a block that keeps its activations (no AC; the block re-run under full AC or eager
    per-op SAC) with what torchtitan's own block saves beyond the profile's items:
    - K and V expanded to every query head where the model repeats them (strategy.repeat_kv, else the torchtitan
      style's: repeat_kv before F.scaled_dot_product_attention, which saves the expanded copies; `expanded_kv_bytes`);
      none where it passes enable_gqa (torchtitan from ff0829c10, #2259, 2026-01-27: the flash / cuDNN / flex
      kernels index the K / V head, nothing expanded);
    - with TP (DTensor): PrepareModuleInput all-gathers the sequence-sharded norm outputs and the column-parallel
      wq / wk / wv and w1 / w3 save that gathered input whole (Megatron keeps the shard and re-gathers it in
      backward, Korthikanti 2022 s4.2.2); per-op SAC recomputes the two all-gathers (torchtitan_op_sac_items)."""
    whole = tokens * (1.0 - 1.0 / sp_div)
    kv = tokens * expanded_kv_bytes(model, training) / t if titan_repeats_kv(strategy) else 0.0
    dense_none = np.where(titan, dense_none + kv + whole * pre.gathered[0], dense_none)
    moe_none = np.where(titan, moe_none + kv + whole * pre.gathered[1], moe_none) if model.is_moe else dense_none
    return dense_none, moe_none


def titan_repeats_kv(strategy: Strategy) -> bool:
    """Whether a torchtitan model expands K and V to the query heads before SDPA: strategy.repeat_kv where the
    job states it (the one field for the fact, read by step_time._cp_torch_ring too), else the torchtitan perf
    style's repeat_kv (perf_constants.yaml: repeat_kv, torchtitan to ff0829c10, 2026-01-27)."""
    stated = getattr(strategy, "repeat_kv", None)
    return bool(stated) if stated is not None else style_option("torchtitan", "repeat_kv")


def _titan_expert_slot_delta(model: ModelArch, training: Training, strategy: Strategy, pre: _Pre,
                             titan: np.ndarray, tokens: Any, t: Any) -> Any:
    """Bytes per MoE block by which torchtitan's routed experts without recompute keep other than the hf profile's
    routed slots (activations.titan_expert_slot_bytes, eager or compiled per strategy); 0 off torchtitan and behind
    DeepEP (its own delta, `_deepep_slot_delta`)."""
    if getattr(strategy, "moe_dispatcher", "auto") in FLEX_DISPATCHERS:
        return 0.0
    compiled = _compiled(strategy, "torchtitan", training)
    hf = pre.moe[("hf", 0)].routed
    delta = np.where(compiled, titan_expert_slot_bytes(model, training, compiled=True),
                     titan_expert_slot_bytes(model, training, compiled=False)) - hf
    slots = float(model.experts_per_token) * float(training.moe_capacity_factor)
    return np.where(titan, tokens * slots * delta / t, 0.0)


def _compiled_sac_unread(model: ModelArch, training: Training, strategy: Strategy, titan: np.ndarray,
                         rec: np.ndarray, tokens: Any, sp_div: Any) -> Any:
    """Bytes per dense block that torchtitan's per-op SAC keeps in eager code but not under torch.compile: the w2
    output. Eager, the SAC dispatch mode caches the output of every op its policy marks MUST_SAVE
    (torch/utils/checkpoint.py _CachingTorchDispatchMode), w2's mm among them (`torchtitan_op_sac_items`);
    compiled (torchtitan's apply_compile compiles each AC-wrapped block), AOTAutograd's partitioner saves only what
    the backward graph reads, and nothing in the block's backward reads w2's output (the residual add's backward
    needs no input). MoE blocks are left as counted."""
    compiled = _compiled(strategy, "torchtitan", training)  # read where `titan` holds: torchtitan's default
    kept = 1.0 - op_sac_unsaved_share(training, model)  # blocks whose w2 output the items count (torchao NVFP4: none)
    w2_out = kept * tokens / sp_div * float(act_bytes(training.precision)) * model.hidden
    return np.where(titan & (rec == 1) & compiled, w2_out, 0.0)


def _titan_sac_a2a_bytes(model: ModelArch, training: Training, strategy: Strategy, titan: np.ndarray,
                         rec: np.ndarray, tokens: Any, t: Any) -> Any:
    """Bytes per MoE block that torchtitan's per-op SAC keeps under expert parallelism (EP > 1): the outputs of the
    dispatch and the combine all_to_all_single (or DeepEP's dispatch / combine), one hidden-wide 16-bit row per
    routed token-slot each, both in its save list (activation_checkpoint.py `_get_default_save_ops` comm_ops at
    b5bcd76c6) and both read by the backward: the dispatched tokens are the grouped GEMMs' input, the combined
    expert outputs are multiplied by the routing scores (models/common/token_dispatcher.py AllToAllTokenDispatcher
    combine); activations._op_sac_moe_items keeps the rest of the block."""
    ep = np.asarray(getattr(strategy, "ep", 1), float)
    slots = float(model.experts_per_token) * float(training.moe_capacity_factor)
    per_token = 2.0 * float(act_bytes(training.precision)) * model.expert_width * slots
    return np.where(titan & (rec == 1) & (ep > 1), tokens * per_token / t, 0.0)


def _sac_unsaved_attention(model: ModelArch, training: Training, strategy: Strategy, titan: np.ndarray,
                           rec: np.ndarray, tokens: Any, t: Any) -> Any:
    """Bytes per block that torchtitan's per-op SAC does not keep where its save list leaves the attention op out
    (strategy.sac_saves_attention false: releases before b39377f9f, 2025-12-01, listed SDPA's flash and efficient
    backends only, and from PR 1196, 2025-05-14, its SDPA wrapper ran cuDNN first on sm100): the attention output and
    its log-sum-exp, TP-sharded (`torchtitan_sac_attention_bytes`). The backward re-runs the attention with the rest
    of the block, so an eager block's recompute working set gains them (`_activations`' sac_rerun)."""
    if getattr(strategy, "sac_saves_attention", None) is not False:
        return 0.0
    return np.where(titan & (rec == 1), tokens * torchtitan_sac_attention_bytes(model, training) / t, 0.0)


def nf4_options(training: Training, strategy: Strategy) -> tuple[bool, bool]:
    """QLoRA's bitsandbytes options the job states (False off QLoRA and where unset): (every 4-bit linear keeps its
    input for the backward: strategy.nf4_saves_input, bitsandbytes < 0.43.2; the LM head is a 4-bit linear too:
    strategy.nf4_lm_head, Lightning's BitsandbytesPrecision). Unset = bitsandbytes >= 0.43.2 under transformers,
    which keeps the head in 16 bit (get_keys_to_not_convert), or torchao's NF4 (torchtune), whose linear_nf4 saves
    only the NF4 weight (torchao/dtypes/nf4tensor.py LinearNF4.forward `ctx.save_for_backward(weight)`, at 5e558f508)."""
    if training.method != "qlora":
        return False, False
    return bool(getattr(strategy, "nf4_saves_input", None)), bool(getattr(strategy, "nf4_lm_head", None))


def _fp32_residual_checkpoint(model: ModelArch, training: Training, fp32_residual: bool, mega: np.ndarray,
                              rec: np.ndarray, tokens: Any) -> Any:
    """Extra bytes per layer of a full-recompute checkpoint when the residual stream is fp32: PEFT's
    prepare_model_for_kbit_training (TRL's SFTTrainer calls it on a 4-bit model) casts the embeddings and norms
    to fp32, so the embedding output and every residual add (fp32 + 16-bit) are fp32, and gradient
    checkpointing keeps each decoder layer's fp32 input (memory_constants.yaml qlora.peft_residual_bytes).
    Applies where model_states.kbit_upcast says the residual stream is fp32, and to LoRA on an fp32-loaded base under autocast
    (`fp32_residual` per strategy: `_autocast_fp32_base`), whose fp32 embedding and norm weights do the same."""
    if training.method not in ("qlora", "lora") or not np.any(fp32_residual):
        return 0.0
    extra = float(load_memory_constants()["qlora"]["peft_residual_bytes"]) - act_bytes(training.precision)
    return np.where(~mega & (rec == 2) & np.asarray(fp32_residual, bool), tokens * extra * model.hidden, 0.0)


def _loss_bytes(name: str, impl: str, mega: np.ndarray, titan_compiled: Any, pre: _Pre,
                compiled: bool, titan_chunked: Any = False) -> tuple[Any, Any]:
    """(saved, backward-extra) bytes per logit element: the job's loss_impl, else the framework's own (torchtune
    chunked; torchtitan under torch.compile compiles its loss, `titan_compiled` per strategy), else by memory
    profile (megatron vocab-parallel, hf upcast). The chunked loss under torch.compile (`compiled`) is compiled
    chunk by chunk (torchtune training.compile_loss compiles CEWithChunkedOutputLoss.compute_cross_entropy).
    Under torchtitan (`titan_chunked`) chunked is its ChunkedLossWrapper, whose inner CrossEntropyLoss is returned
    here (compiled with the model, else the eager upcast) for `_chunk_at_a_time`. memory_constants.yaml `logits`."""
    if impl not in LOSS_IMPLS:
        raise unknown_name("strategy.loss_impl", "loss implementation", impl, LOSS_IMPLS)
    lg = load_memory_constants()["logits"]

    def named(which: str) -> tuple[float, float]:
        key = {"upcast": "hf", "upcast-labels": "hf", "upcast-shift": "hf_shift", "upcast-held": "upcast_held",
               "vocab-parallel": "megatron",
               "vocab-parallel-unfused": "megatron",
               "compiled-fp32": "compiled_fp32", "chunked-nll": "chunked_nll"}.get(which, which)
        key = "chunked_compiled" if key == "chunked" and compiled else key
        return float(lg[f"{key}_saved_bytes_per_element"]), float(lg[f"{key}_backward_extra_bytes_per_element"])

    if impl != "auto":
        saved, extra = named(impl)
        if impl == "chunked" and np.any(titan_chunked):
            (c_saved, c_extra), (e_saved, e_extra) = named("compiled"), named("upcast")
            saved = np.where(titan_chunked, np.where(titan_compiled, c_saved, e_saved), saved)
            extra = np.where(titan_chunked, np.where(titan_compiled, c_extra, e_extra), extra)
        return saved, extra
    if name in DEFAULT_LOSS:
        return named(DEFAULT_LOSS[name])
    saved = _by_prof(mega, lambda pr: pre.heads[pr].logits_saved_per_vocab)
    extra = _by_prof(mega, lambda pr: pre.heads[pr].logits_extra_per_vocab)
    if np.any(titan_compiled):  # torchtitan components/loss.py: loss_fn = torch.compile(loss_fn) with compile on
        c_saved, c_extra = named("compiled")
        saved, extra = np.where(titan_compiled, c_saved, saved), np.where(titan_compiled, c_extra, extra)
    return saved, extra


@dataclass(frozen=True)
class _Stage:
    """One pipeline stage evaluated for every strategy: its layer range and whether it holds either end."""

    start: np.ndarray
    stop: np.ndarray
    n_layers: np.ndarray
    rank: Any
    is_first: Any  # True (a constant for the whole batch) or a mask: single-stage strategies hold both ends
    is_last: Any


# DualPipe places stages r and p - 1 - r on one rank (DeepSeek-V3 report s3.2.1, Table 2: 2x parameters, PP + 1
# micro-batches of activations), so no rank holds stage 1 alone with the 1F1B counts the middle stage is given here;
# its ranks are evaluated as the end stages (docs/known-gaps.md 56)
MIRRORED_STAGE_SCHEDULES = ("deepseek-dualpipe",)


def _stages(b: _Batch) -> dict[str, _Stage]:
    """The pipeline stages that can hold the most: the first (embedding, the most micro-batches in flight), the last
    (LM head, logits) and, where any strategy has p > 2, stage 1: of the middle stages it holds the most
    micro-batches in flight (Megatron-Core / torch 1F1B and interleaved warm-ups fall with the rank) and the most
    layers (`pipeline.stage_layer_range`), one more than either end under Megatron-Core's embedding / loss slots,
    and a full chunk 0 where the first stage's holds only the embedding. Under a stated per-rank list
    (Strategy.pp_stage_layers) also every later middle rank holding more layers than those before it
    (`pipeline.fullest_middle_ranks`), named middle_r<rank>."""
    L, p = b.model.layers, b.p
    slots = (b.s["pipeline_embedding_layer"], b.s["pipeline_loss_layer"])
    single = p <= 1
    stages = {}
    later = tuple((f"middle_r{r}", float(r), False, False) for r in pipeline.fullest_middle_ranks(b.stage_edges[2]))
    for name, rank, is_first, is_last in (("first", 0.0, True, single), ("middle", 1.0, False, False), *later,
                                          ("last", p - 1.0, single, True)):
        if name.startswith("middle") and (not np.any(p > 2) or b.name in MIRRORED_STAGE_SCHEDULES):
            continue
        start, stop = pipeline.stage_layer_range(L, p, rank, *slots, *b.stage_edges)
        stages[name] = _Stage(start.astype(np.int64), stop.astype(np.int64), stop - start, rank, is_first, is_last)
    return stages


@dataclass(frozen=True)
class _States:
    """Model states of one stage: host bytes (offload, paged optimizer), the parameters the optimizer
    updates on this GPU (after ZeRO-1 sharding; full training only) and the trainable parameters per GPU."""

    host: Any
    opt_params: Any
    trainable_pg: Any


@dataclass(frozen=True)
class _StageParams:
    """Parameters of one stage on one GPU before ZeRO sharding (per strategy)."""

    dense: Any  # TP-split and replicated (embedding / head on the end stages)
    experts: Any  # routed experts, split over EP x expert TP
    gemm_dense: Any  # the dense linear weights (NF4 / FP8 targets); router kept with norms
    nongemm_dense: Any  # embedding, head, norms and the other replicated parameters


def _stage_params(b: _Batch, g: _Stage) -> _StageParams:
    lay = b.pre.layout
    t, p, ep = b.t, b.p, b.ep
    ssum = b.ssum
    start, stop, n = g.start, g.stop, g.n_layers
    # parameters on this GPU (before ZeRO): dense (TP-split + replicated) and routed experts
    emb = _on(g.is_first, lay.embedding, 0.0)
    head = _on(g.is_last, lay.lm_head_own + np.where(p > 1, lay.lm_head_tied_copy, 0.0), 0.0)
    fnorm = _on(g.is_last, lay.final_norm, 0.0)
    layers_tp = ssum(lay.cum_tp, start, stop, n) + _on(g.is_last, lay.mtp_tp, 0.0)
    layers_rep = ssum(lay.cum_rep, start, stop, n) + _on(g.is_last, lay.mtp_rep, 0.0)
    layers_exp = ssum(lay.cum_exp, start, stop, n) + _on(g.is_last, lay.mtp_exp, 0.0)
    p_dense = (layers_tp + head) / t + emb / b.emb_t + layers_rep + fnorm
    p_exp = layers_exp / (ep * b.et)
    gemm_dense = layers_tp / t  # linear weights (NF4 / FP8 targets); router kept with norms
    nongemm_dense = head / t + emb / b.emb_t + layers_rep + fnorm
    return _StageParams(dense=p_dense, experts=p_exp, gemm_dense=gemm_dense, nongemm_dense=nongemm_dense)


def _model_states(b: _Batch, g: _Stage, items: dict[str, Any]) -> _States:
    """Weights, gradients and optimizer states of one stage into `items` (model_states.py per parameter)."""
    params = _stage_params(b, g)
    if b.training.trains_base_weights:
        return _full_states(b, params, items)
    return _adapter_states(b, g, params, items)


def _full_states(b: _Batch, params: _StageParams, items: dict[str, Any]) -> _States:
    """Full training: weights, gradients, master weights and optimizer states (offloaded ones to the host)."""
    training, shard, st = b.training, b.shard, b.st
    p_dense, p_exp, gemm_dense = params.dense, params.experts, params.gemm_dense
    offload_opt, offload_par = b.offload_opt, b.offload_par
    # the fsdp style's FSDP1 units hold no 16-bit shard: the fp32 master is their only weights (fsdp1_mixed)
    w = np.where(b.fp32_shard, 0.0, st["weights"] * shard(p_dense, p_exp, 3))
    fp8c = b.c["fp8"]
    if np.any(b.fp8_params):  # FP8 primary weights: the GEMM weights' only copy is the 1-byte FP8 tensor
        fp8_w = (st["weights"] - fp8c["param_bytes_per_gemm_param"]) * shard(gemm_dense, p_exp, 3)
        w = w - np.where(b.fp8_params, fp8_w, 0.0)
    items["weights"] = np.where(offload_par, 0.0, w)
    # parameter offload (FSDP CPUOffload(offload_params=True) / FSDP2 CPUOffloadPolicy, torchtune
    # fsdp_cpu_offload): the sharded gradients live in host memory with the parameters (PyTorch FSDP docs,
    # CPUOffload: offload_params "offloads gradients to CPU as well"); host gradients are counted below
    items["gradients"] = np.where(offload_par, 0.0, st["grads"] * shard(p_dense, p_exp, 2))
    items["grad_accum_buffer"] = st["grad_accum_fp32"] * shard(p_dense, p_exp, 2)
    if np.any(b.no_sync_hold):
        # routed experts whose shard group is one rank are no FSDP unit (NeMo AutoModel apply_fsdp: ignored_params,
        # components/moe/parallelizer.py at 4074cd40d): their gradients accumulate in .grad in the parameters' dtype
        outside = np.where(b.divisors[3][1] > 1.0, 0.0, p_exp)
        items["fsdp_unsharded_grads"] = np.where(b.no_sync_hold, _no_sync_grad_bytes(b) * (p_dense + p_exp - outside),
                                                 0.0)
        items["gradients"] = np.where(b.no_sync_hold, st["grads"] * outside, items["gradients"])
    opt_params = shard(p_dense, p_exp, 1)
    host_grad = float(b.c["offload"]["host_fp32_grad_bytes_per_param"])
    host = (st["master"] + st["optimizer"] + st["grad_fp32_copy"] + host_grad) * opt_params
    items["master_weights"] = np.where(offload_opt, 0.0, st["master"] * opt_params)
    items["optimizer_states"] = np.where(offload_opt, 0.0, st["optimizer"] * opt_params)
    items["grad_fp32_copy"] = np.where(offload_opt, 0.0, st["grad_fp32_copy"] * opt_params)
    cache = np.where(b.fp8_params, b.fp8_transpose_bytes, st["fp8_cache"])
    items["fp8_weight_cache"] = np.where(b.z >= 3, 0.0, cache * (gemm_dense + p_exp))
    trainable_pg = p_dense + p_exp
    if training.method == "dpo":
        items["reference_model"] = b.w16 * shard(p_dense, p_exp, 3)
    host = host + np.where(offload_par, w, 0.0)
    host = np.where(offload_opt, host, 0.0)
    return _States(host=host, opt_params=opt_params, trainable_pg=trainable_pg)


def _no_sync_grad_bytes(b: _Batch) -> Any:
    """Bytes a parameter of FSDP2's unsharded gradient held under set_requires_gradient_sync(False) (strategy
    fsdp_no_sync): FSDPParamGroup.post_backward skips the reduce-scatter and FSDPParam.to_accumulated_grad_if_needed
    moves the unsharded gradient to unsharded_accumulated_grad cast to the reduce dtype (torch
    distributed/fsdp/_fully_shard/_fsdp_param.py, 2.6-2.9): fp32 under a reduce_dtype of fp32 (memory_constants.yaml
    fsdp2_pp_unsharded_grad_bytes_per_param), the parameters' dtype where gradients are reduced in it. FSDP1's
    no_sync keeps autograd's gradient as it is, in the compute dtype (fsdp1_no_sync). The sharded
    gradients are None meanwhile (zero_grad(set_to_none=True) after the step) and replace the unsharded ones layer by
    layer only in the last micro-batch's backward, so the hold stands in for them."""
    return np.where(b.no_sync_fsdp1, b.w16, float(_fsdp2_reduce_bytes(b)))


def _adapter_states(b: _Batch, g: _Stage, params: _StageParams, items: dict[str, Any]) -> _States:
    """LoRA / QLoRA: the frozen (possibly quantised) base, the adapters and their optimizer states."""
    lay, training, t, ep = b.pre.layout, b.training, b.t, b.ep
    ssum, shard, st = b.ssum, b.shard, b.st
    start, stop, n = g.start, g.stop, g.n_layers
    p_exp, gemm_dense, nongemm_dense = params.experts, params.gemm_dense, params.nongemm_dense
    offload_opt, offload_par = b.offload_opt, b.offload_par
    q_b, nq_b, qc_b = b.pre.base
    if b.nf4_double_quant is not None:  # strategy.nf4_double_quant: the block constants as the job states them
        qc_b = frozen_base_bytes(training, bool(b.nf4_double_quant))[2]
    if training.method == "qlora" and not b.kbit_upcast:
        nq_b = b.w16  # e.g. torchtune: embeddings, norms and the output layer stay bf16 (no PEFT fp32 upcast)
    # LoRA on a base loaded in fp32 where no stack casts it (`_frozen_base_fp32`): every frozen weight 4 bytes
    q_b, nq_b = np.where(b.frozen_fp32, 4.0, q_b), np.where(b.frozen_fp32, 4.0, nq_b)
    if training.method == "lora" and np.any(b.fp8_params):
        # FP8 primary weights under LoRA (NeMo fp8_params, Megatron-Core fp8_param_gather: te.fp8_model_init builds
        # every TE linear's weight as an FP8 tensor, frozen or not): the 1-byte FP8 data, and its transpose for the
        # input-gradient GEMM unless disable_parameter_transpose_cache re-makes it at each use
        fp8_q = b.c["fp8"]["param_bytes_per_gemm_param"] + b.fp8_transpose_bytes
        q_b = np.where(b.fp8_params, fp8_q, q_b)
    # Lightning's BitsandbytesPrecision quantises the LM head too (strategy.nf4_lm_head): NF4 with its constants
    head_q = _on(g.is_last, float(lay.lm_head_own), 0.0) / t if b.nf4_head else 0.0
    base = q_b * shard(gemm_dense + head_q, p_exp, 3) + nq_b * shard(nongemm_dense - head_q, 0.0, 3)
    items["base_weights_frozen"] = np.where(offload_par, 0.0, base)
    if np.any(b.frozen_casts):
        items["frozen_weight_casts"] = _frozen_weight_casts(b, g, gemm_dense + p_exp)
    items["quant_constants"] = qc_b * shard(gemm_dense + head_q, p_exp, 3)
    # the layers' adapters, and the LM head's on the last stage (its B column-parallel with the head: taken / t too)
    ld = (ssum(lay.cum_lora_dense, start, stop, n) + _on(g.is_last, float(lay.lora_head_adapter), 0.0)) / t
    le = ssum(lay.cum_lora_exp, start, stop, n) / (ep * b.et)
    cfg = b.c["lora"]
    # PEFT keeps A/B in fp32; torchtune's, NeMo AutoModel's and TRL >= 0.26's QLoRA adapters are 16-bit
    # (model_states.lora_adapters_16bit); the AdamW moments of lora.model_dtype_impls too (torchtune: st["optimizer"])
    model_dtype = lora_adapters_16bit(b.name, training.lora_impl)
    a_w, a_g = (b.w16, b.w16) if model_dtype else (cfg["adapter_weight_bytes"], cfg["adapter_grad_bytes"])
    opt_b = b.pre.opt_in_param_dtype if training.lora_impl in cfg["model_dtype_impls"] else st["optimizer"]
    items["lora_adapters"] = a_w * shard(ld, le, 3)
    trainable_pg = ld + le
    copies = (_on(g.is_first, lay.lora_embed_copy, 0.0) + _on(g.is_last, lay.lora_head_copy, 0.0)) / t
    items["trainable_copies"] = b.w16 * shard(copies, 0.0, 3)
    items["gradients"] = a_g * shard(ld, le, 2) + b.w16 * shard(copies, 0.0, 2)
    opt = opt_b * shard(ld, le, 1) + b.pre.opt_in_param_dtype * shard(copies, 0.0, 1)
    items["optimizer_states"] = np.where(offload_opt, 0.0, opt)
    host = np.where(offload_opt, opt + np.where(offload_par, base, 0.0), 0.0)
    return _States(host=host, opt_params=None, trainable_pg=trainable_pg)


def _activations(b: _Batch, g: _Stage, items: dict[str, Any]) -> None:
    """Saved activations of one stage into `items`: its layers x micro-batches in flight, the recompute
    working set, embedding/RoPE on the first stage, final norm, head input and logits on the last."""
    lay, model, pre = b.pre.layout, b.model, b.pre
    hi, tokens, sp_div, rec, t = pre.heads, b.tokens, b.sp_div, b.rec, b.t
    by_prof = b.by_prof
    # the MTP passes' layers (model_states.mtp_passes; a hybrid module's pattern, DeepSeek-V3's one MoE layer)
    mtp = _on(g.is_last, float(mtp_passes(model, b.training)), 0.0)
    n_moe = b.ssum(lay.cum_moe, g.start, g.stop, g.n_layers) + mtp * model.mtp_block_moe_layers()
    n_all = g.n_layers + mtp * len(model.mtp_block_params())
    # recompute full: the layers Megatron's recompute_method checkpoints keep the full-recompute items, the others
    # (block) every activation (partial_recompute.py; every layer checkpointed without a method)
    part = chunk_shares(*b.partial_recompute, g.n_layers / np.maximum(b.v, 1.0))
    full = rec == 2
    dense_l = np.where(full, part.checkpointed * b.dense_b + part.kept * b.dense_none, b.dense_b)
    moe_l = np.where(full, part.checkpointed * b.moe_b + part.kept * b.moe_none, b.moe_b)
    stage_layers = (n_all - n_moe) * dense_l + n_moe * moe_l
    # in flight within one pipeline schedule (Strategy.local_batch: a step may run several)
    fl = in_flight_layer_microbatches(b.p, b.v, b.n_sched, g.rank)
    # interleaved: the embedding / loss slot takes a decoder layer's place in chunk 0 of the first rank / chunk v - 1
    # of the last, whose in-flight micro-batches are not the average chunk's (2p - 1 and 1 of fl x v)
    n0 = in_flight_chunk_microbatches(b.p, b.v, b.n_sched, g.rank, 0.0)
    n_end = in_flight_chunk_microbatches(b.p, b.v, b.n_sched, g.rank, b.v - 1.0)
    multi = b.p > 1
    slot_fix = (_on(g.is_first, np.where(multi, b.s["pipeline_embedding_layer"], 0.0) * (fl - n0), 0.0)
                + _on(g.is_last, np.where(multi, b.s["pipeline_loss_layer"], 0.0) * (fl - n_end), 0.0))
    items["layer_activations"] = fl * stage_layers + slot_fix * stage_layers / np.maximum(n_all, 1.0)
    # Megatron-Core's combined 1F1B (moe_a2a_overlap) runs one more forward before its steady state, a chunk under
    # interleaving (schedules.py get_pp_rank_microbatches: num_warmup_microbatches + 1); without PP the next
    # micro-batch's forward pairs layer by layer with the backward that frees the previous one: one layer more
    extra = np.where(b.v > 1, np.where(fl * b.v < b.n_sched * b.v, 1.0 / b.v, 0.0), 1.0 / np.maximum(n_all, 1.0))
    items["layer_activations"] = items["layer_activations"] + b.s["moe_a2a_overlap"] * extra * stage_layers
    has_moe = n_moe > 0
    working = np.where(has_moe, b.moe_none, b.dense_none)
    sac_rerun = np.maximum(working - np.where(has_moe, b.moe_b, b.dense_b), 0.0)
    items["recompute_working_set"] = np.where(full, part.working * working, np.where(b.eager_sac, sac_rerun, 0.0))
    rope = by_prof(lambda pr: hi[pr].rope_per_token)
    first_sp = by_prof(lambda pr: hi[pr].first_sp)
    disc = by_prof(lambda pr: pre.discount[pr]) * ((rec == 0) | (full & (part.checkpointed == 0)))
    emb_act = tokens * (rope + first_sp / sp_div)
    # the first layer's norm saves nothing when its input needs no gradient (LoRA, frozen embedding); the embedding
    # and the first layer are in chunk 0
    items["layer_activations"] = items["layer_activations"] - _on(g.is_first, n0 * tokens * disc / sp_div, 0.0)
    if b.options.dropout or b.training.hidden_dropout > 0:  # the embedding dropout's 1-byte mask (Megatron-Core
        # LanguageModelEmbedding's embedding_dropout takes hidden_dropout)
        emb_act = emb_act + tokens * model.hidden / sp_div
    items["embedding_and_rope"] = _on(g.is_first, n0 * emb_act, 0.0)
    final_sp = by_prof(lambda pr: hi[pr].final_sp)
    labels = by_prof(lambda pr: hi[pr].labels)  # int64 token labels kept for the loss
    # a 4-bit LM head on bitsandbytes < 0.43.2 keeps its input, the final norm's output (LitGPT's 128-position
    # chunks of it are views: one copy)
    head_in = b.w16 * model.hidden if b.nf4_head and b.nf4_saves_input else 0.0
    items["final_norm_and_head_input"] = _on(g.is_last, tokens * ((final_sp + head_in) / sp_div + labels), 0.0)
    lg_saved, lg_extra = b.loss_bytes
    # loss_parallel false: the head's ColwiseParallel output is gathered (output_layouts Replicate), so every TP rank
    # holds and differentiates the whole micro-batch's logits
    logit_elems = _on(g.is_last, tokens * model.vocab / (1.0 if b.gathered_logits else t), 0.0)
    items["logits"] = logit_elems * lg_saved * (1 + mtp_passes(model, b.training))
    items["loss_backward_temporaries"] = logit_elems * lg_extra
    if b.training.method == "qlora":
        items["nf4_dequant_transient"] = _nf4_dequant_transient(b, g, items["logits"] + items["loss_backward_temporaries"])
    if b.head_cast:
        items["head_weight_cast"] = _head_weight_cast(b, g)
    if b.chunked_nll:
        items["loss_chunk_working_set"] = _chunked_nll_working_set(b, g)
    if b.loss_impl == "liger":
        items["loss_chunk_working_set"] = _liger_loss(b, g)[0]
    if np.any(b.titan_chunked):
        items["loss_chunk_buffers"] = _on(g.is_last, _titan_chunk_buffers(b), 0.0)
    if np.any(b.titan & (b.cp > 1)):
        items["cp_ring_attention_buffers"] = np.where(b.titan & (b.cp > 1), _cp_ring_buffers(b), 0.0)
    if np.any(b.titan & (b.p > 1)):
        items["pp_recv_buffers"] = _pp_recv_buffers(b, g)
    if b.cp_all_gather and np.any(~b.titan & (b.cp > 1)):
        items["cp_allgather_kv_buffers"] = np.where(~b.titan & (b.cp > 1), _cp_allgather_buffers(b), 0.0)
    if b.training.explicit_attention_mask:
        items["attention_mask"] = _attention_mask_bytes(b)
    if np.any(b.s["returns_kv_cache"]):
        items["returned_kv_cache"] = _returned_kv_bytes(b, g, np.where(full, part.checkpointed, 0.0))
    if b.expert_copies or b.expert_grad_zeros:
        items["expert_loop_buffers"] = _expert_weight_copies(b, np.where(full, np.minimum(n_moe, 1.0), fl * n_moe),
                                                              n_moe > 0)


def _pp_recv_buffers(b: _Batch, g: _Stage) -> Any:
    """Bytes of torch.distributed.pipelining's receive buffers on one rank under torchtitan's pipelining
    (pytorch/pytorch torch/distributed/pipelining/stage.py, PipelineStage._prepare_forward_infra and
    _create_grad_recv_info, v2.9.0 / main of 2025-12: `for chunk_id in range(num_microbatches)` a
    _make_tensor_from_meta stage-input buffer on every stage but the first, and in _prepare_backward_infra one
    output-gradient buffer a micro-batch on every stage but the last; "TODO: create args_recv_info lazily"). Each is
    the stage boundary's hidden state, 16-bit, sequence-sharded under TP (torchtitan's RowwiseParallel
    output_layouts Shard(1)). A rank's v chunks hold v stages; the input buffers of the micro-batches in flight
    are the block inputs `layer_activations` already counts, so only the others are charged here."""
    v = np.maximum(b.v, 1.0)
    first = _on(g.is_first, 1.0, 0.0)
    last = _on(g.is_last, 1.0, 0.0)
    held = sum(np.where(c < v, in_flight_chunk_microbatches(b.p, v, b.n_sched, g.rank, float(c)), 0.0)
               for c in range(int(np.max(v))))
    held = held - first * in_flight_chunk_microbatches(b.p, v, b.n_sched, g.rank, 0.0)
    inputs = np.maximum((v - first) * b.n_sched - held, 0.0)
    grads = (v - last) * b.n_sched
    per = b.tokens * float(b.model.hidden) * b.w16 / b.sp_div
    return np.where(b.titan & (b.p > 1), (inputs + grads) * per, 0.0)


def _held_rerun_graphs(b: _Batch, g: _Stage) -> tuple[Any, Any]:
    """(end of the backward, optimizer step) bytes that the re-run graphs kept by a MoE dispatcher's held router
    output hold (strategy.moe_router_output_held). torchtitan's full AC is a non-reentrant checkpoint
    (ptd_checkpoint_wrapper over torch.utils.checkpoint, use_reentrant False): its re-run in the backward builds a
    graph of its own that the backward never runs, whose nodes keep what they saved (the pack hook stores each
    recomputed tensor and returns it: _recomputation_hook, torch 2.9-2.13). Where the layer's dispatcher keeps the
    router's scores on an object that outlives the step (the Nous Research fork's PrimusTurboDeepepManager.
    setup_metadata at 366776ace: token_probs, never cleared by combine), that graph's nodes up to the router, with
    their saves (activations.router_upstream_bytes, K / V expanded where the model repeats them), live from the
    layer's backward until its next forward replaces them: the end of the backward holds every MoE layer's but the
    running one's beside its block input, the step all of them (docs/known-gaps.md 282 (a))."""
    on = b.titan & (b.rec == 2) & (b.s["moe_router_output_held"] > 0)
    if not (b.model.is_moe and np.any(on)):
        return 0.0, 0.0
    sp, tp = router_upstream_bytes(b.pre.moe[("hf", 0)], float(b.training.peak_row_tokens))
    kv = expanded_kv_bytes(b.model, b.training) if b.repeat_kv else 0.0
    upstream = b.tokens * (sp / b.sp_div + (tp + kv) / b.t)
    n = b.ssum(b.pre.layout.cum_moe, g.start, g.stop, g.n_layers)
    end = np.maximum(n - 1.0, 0.0) * np.maximum(upstream - b.moe_b, 0.0)
    return np.where(on, end, 0.0), np.where(on, n * upstream, 0.0)


def _returned_kv_bytes(b: _Batch, g: _Stage, checkpointed: Any) -> Any:
    """The K / V cache the model returns in training (strategy.returns_kv_cache) beyond what the layers save: each
    attention layer's K after RoPE and V as projected, model dtype, its heads split over TP (transformers v4.35.0
    modeling_llama.py: `past_key_value = (key_states, value_states) if use_cache`, gathered by LlamaModel.forward into
    next_decoder_cache and returned as past_key_values; GQA's before repeat_kv). Only the checkpointed layers' (share
    `checkpointed` of the stage's): a layer run without recompute saves the same K and V for its attention's backward.
    One forward's, at the forward's end; where the loop holds them after is `_backward_phases`' (docs/known-gaps.md
    271 (a))."""
    model = b.model
    layers = g.n_layers * checkpointed * model.attention_layers / max(model.layers, 1)
    return b.s["returns_kv_cache"] * layers * b.tokens * (model.kv_dim + model.v_dim) * b.w16 / b.t


def _attention_mask_bytes(b: _Batch) -> Any:
    """The 4-D mask SDPA is handed under Training.explicit_attention_mask: one (micro-batch, 1, s, s) tensor of the
    model dtype a micro-batch (transformers 4.49 _prepare_4d_causal_attention_mask_with_cache_position: the s x s
    causal mask expanded to the batch and cloned for the padding fill), which every layer's SDPA call reads, the
    memory-efficient backward and full recompute's checkpointed inputs included, so it lives through the backward.
    Its construction's temporaries come and go at the forward's start, below the peak: not counted."""
    return b.tokens * b.training.peak_row_tokens * b.w16


def _expert_weight_copies(b: _Batch, held_layers: Any, has_moe: Any) -> Any:
    """Bytes of transformers 4.55 / 4.56's GptOssExperts training loop beyond the layer's own tensors
    (strategy.expert_weight_copies; modeling_gpt_oss.py GptOssExperts.forward `if self.training`, read at 00d4b3d2):
    `self.gate_up_proj[expert_idx]` with expert_idx of shape [1] is advanced indexing, a copy of that expert's weights,
    which the matmul saves for its backward (down_proj's too), so each layer whose activations are kept (`held_layers`:
    under full recompute the one re-run) holds every hit expert's weights again; the expected experts hit by a
    micro-batch's T tokens at top-k of E: E (1 - (1 - k / E)^T). In full training each expert's IndexBackward returns a
    zero tensor of the whole fused parameter with that expert's slice filled (derivatives.yaml index.Tensor:
    index_backward(grad.new_zeros(self.sizes()), ...)), added into the parameter's accumulating gradient: the larger
    fused parameter (gate_up_proj) once more while a layer's backward runs; a 0-dim index (later releases, v5) takes a
    view, but its SelectBackward0 returns the same whole-parameter gradient (`expert_grad_zeros` without the copies:
    framework.fused_expert_loop). Counted, not fitted."""
    m = b.model
    e, k = float(m.experts), float(m.experts_per_token)
    hit = e * (1.0 - (1.0 - k / e) ** b.tokens)
    copies = b.w16 * hit * float(m.mlp_params(m.expert_ffn, m.expert_width)) * held_layers if b.expert_copies else 0.0
    gate_up = e * float(m.expert_width) * m.expert_ffn * (2.0 if m.mlp == "swiglu" else 1.0)
    temp = b.w16 * gate_up if b.training.trains_base_weights else 0.0
    return np.where(has_moe, copies + temp, 0.0)


def _chunked_nll_working_set(b: _Batch, g: _Stage) -> Any:
    """Bytes TRL's chunked_nll loss holds while one chunk runs (memory_constants.yaml logits.chunked_nll), on the last
    stage: `_chunk` computes h.float() @ w.float().t(), an fp32 copy of the LM-head weight that autocast casts back to
    16 bits for the matmul (bf16 / fp16 training; in fp32 no cast), both live at the cast; in the backward's re-run the
    cast is saved beside the chunk's fp32 logits, log-softmax and gradients (at most chunk_tokens labelled tokens,
    fewer when the micro-batch holds fewer). The head is the embedding weight when tied; TP does not apply (HF)."""
    cn = b.c["logits"]["chunked_nll"]
    lay, model = b.pre.layout, b.model
    head_p = float(lay.lm_head_own if lay.lm_head_own else (lay.embedding if model.tied_embeddings else 0.0)) / b.t
    half = b.training.precision != "fp32"  # in fp32, w.float() is the weight itself and autocast casts nothing
    fp32_copy = float(cn["head_fp32_copy_bytes"]) if half else 0.0
    cast = float(cn["head_autocast_copy_bytes"]) if half else 0.0
    chunk = np.minimum(float(cn["chunk_tokens"]), b.tokens) * model.vocab / b.t * float(cn["chunk_bytes_per_element"])
    peak = np.maximum((fp32_copy + cast) * head_p, cast * head_p + chunk)
    return _on(g.is_last, peak, 0.0)


def _liger_loss(b: _Batch, g: _Stage) -> tuple[Any, Any]:
    """(bytes, largest tensor) Liger's fused linear cross-entropy holds in its forward on the last stage (loss_impl
    liger): one chunk of next_power_of_2(ceil(BT / ceil(V / H))) rows (at most BT) of logits in the input dtype, the
    gradient written in place; grad_input (BT x H, kept for the backward); where the head trains, grad_weight (V x H,
    zeros_like the weight) and each chunk's V x H product with its fp32 copy at `grad_weight += torch.mm(
    grad_logits_chunk.t(), _input_chunk).float()` (liger_kernel/ops/fused_linear_cross_entropy.py at 7dd8ecc5,
    fused_linear_cross_entropy_forward). All freed by the function's backward, the first node of the backward. Counted
    from the code, not fitted (docs/known-gaps.md 203 (e), 198 (f))."""
    m = b.model
    bt = np.maximum(np.asarray(b.tokens, float), 1.0)
    h, v = float(m.hidden), float(m.vocab) / b.t
    rows = np.minimum(2.0 ** np.ceil(np.log2(np.maximum(np.ceil(bt / np.ceil(v / h)), 1.0))), bt)
    logits, grad_input = rows * v * b.w16, bt * h * b.w16
    lay = b.pre.layout
    head = bool(lay.lm_head_own or m.tied_embeddings) and b.training.trains_base_weights
    grad_weight = v * h * (2.0 * b.w16 + 4.0) if head else 0.0
    return (_on(g.is_last, logits + grad_input + grad_weight, 0.0),
            _on(g.is_last, np.maximum(logits, grad_input), 0.0))


def _nf4_dequant_transient(b: _Batch, g: _Stage, loss: Any) -> Any:
    """The 16-bit copy of one NF4 weight that QLoRA's linear makes for its GEMM, forward and backward, freed after it:
    bitsandbytes' MatMul4Bit `F.dequantize_4bit(B, state).to(A.dtype)` (autograd/_functions.py, 0.41.0-0.48.0; two
    copies live at the `.to` where the fp16 quant state is recast, `b.nf4_copies`), torchao's LinearNF4
    `weight.to(input.dtype)`. The largest is the LM head where it is quantised (strategy.nf4_lm_head), dequantised
    beside the logits on the last stage; otherwise a decoder layer's largest linear (`_largest_linear`), which the last
    stage's loss peak outweighs: only its excess over the logits and their gradients (`loss`) counts there."""
    per = b.w16 * b.nf4_copies
    head = _on(g.is_last, per * float(b.pre.layout.lm_head_own) / b.t, 0.0) if b.nf4_head else 0.0
    layer = per * _largest_linear(b.model) / b.t
    return np.maximum(head, np.maximum(layer - loss, 0.0))


def _nf4_copies(training: Training, strategy: Strategy) -> float:
    """The copies of one dequantised NF4 weight live at its GEMM, in compute-dtype widths: 1, or where the fp16 quant
    state is recast (model_states.nf4_recast) the fp16 copy beside the compute-dtype one: (2 + w) / w, 2 for bf16,
    1.5 for an fp32 compute dtype (bitsandbytes 0.41-0.46 taking an fp32 input's dtype, bnb_compute_from_input)."""
    if not nf4_recast(training, getattr(strategy, "nf4_dequant_dtype", None),
                      bool(getattr(strategy, "bnb_compute_from_input", None))):
        return 1.0
    w = float(act_bytes(training.precision))
    return (2.0 + w) / w


def _largest_linear(model: ModelArch) -> float:
    """Elements of a decoder layer's largest linear weight (a routed expert's own, before TP): the hidden size times
    the widest of the MLP's inner size, the query and the attention output (q / k / v and gate / up taken apart, as
    transformers builds them; LitGPT's fused qkv is within 10% on Llama-style shapes)."""
    widths = (model.ffn, model.q_dim, model.attn_out_dim, model.expert_ffn or 0, model.shared_expert_ffn or 0)
    return float(model.hidden * max(widths))


def _frozen_weight_casts(b: _Batch, g: _Stage, gemm_params: Any) -> Any:
    """The 16-bit casts of an fp32-loaded LoRA base's linear weights that autocast makes and the matmuls save for
    their input gradient (`b.frozen_casts`): torch autocast caches a cast only for a leaf that requires a gradient
    (aten/src/ATen/autocast_mode.cpp cached_cast: arg.requires_grad() && arg.is_leaf()), so each frozen weight is cast
    at each use, and the matmul keeps the copy while the input needs a gradient (`_head_weight_cast`). Without
    recompute every layer's are held to the backward; under full recompute the layer being recomputed (the largest);
    the LM head's from its forward to its backward."""
    layers = np.where(b.rec == 2, np.minimum(b.largest_layer_params, gemm_params), gemm_params)
    return np.where(b.frozen_casts, b.w16 * layers + _head_weight_cast(b, g), 0.0)


def _head_weight_cast(b: _Batch, g: _Stage) -> Any:
    """The 16-bit copy of the LM-head weight a QLoRA run keeps from the head's forward to its backward when
    PEFT's prepare_model_for_kbit_training has cast the non-quantised weights to fp32 and the model runs under
    autocast (HF Trainer / accelerate with bf16 or fp16): autocast casts the frozen fp32 weight for the matmul
    (torch autocast: a weight that needs no gradient is cast on every call, not cached) and the matmul saves the
    cast for its input gradient (tools/autograd/derivatives.yaml mm: self's gradient reads mat2; only what an
    input that needs a gradient reads is saved). With tied embeddings the head is the embedding weight. The
    same rule as the fp32 residual stream (model_states.kbit_upcast): DeepSpeed's 16-bit engine casts the module back."""
    lay, model = b.pre.layout, b.model
    head_p = lay.lm_head_own if lay.lm_head_own else (lay.embedding if model.tied_embeddings else 0.0)
    return np.where(b.mega, 0.0, _on(g.is_last, b.w16 * head_p / b.t, 0.0))


def _cp_ring_buffers(b: _Batch) -> Any:
    """Bytes live during one layer's attention backward under PyTorch's context-parallel ring attention
    (torch.distributed.tensor.experimental context_parallel, as torchtitan runs it: rotate method "allgather",
    its default, load balancing on; torch/distributed/tensor/experimental/_attention.py
    _templated_ring_attention_backward, 2024-2025): the K and V of every CP rank all-gathered once and kept for
    the whole backward, the local K / V concatenated to send, fp32 dQ / dK / dV accumulators, the fp32 dK / dV
    concatenated for the all-to-all and the buffer received, and each step's dQ / dK / dV from the flash backward
    (memory_constants.yaml `context_parallel`). K and V are as SDPA sees them: expanded to every query head where
    the model repeats them (`titan_repeats_kv`), else at their own (GQA) width (enable_gqa)."""
    cc, model, a = b.c["context_parallel"], b.model, b.w16
    q_w = float(model.q_dim)
    expanded = b.repeat_kv and model.attention != "mla"
    kv_w = 2.0 * q_w if expanded else float(model.kv_dim + model.v_dim)  # K + V widths
    per_token = (a * (cc["allgathered_kv_per_cp_rank"] * b.cp + cc["kv_send_copies"]) * kv_w
                 + 4.0 * cc["fp32_dkv_exchange_copies"] * kv_w
                 + (4.0 * cc["fp32_qkv_grad_accumulators"] + a * cc["step_qkv_grad_copies"]) * (q_w + kv_w))
    return b.tokens * per_token / b.t


def _cp_allgather_buffers(b: _Batch) -> Any:
    """Bytes live during one layer's attention under all-gather context parallelism (strategy.cp_comm_type
    all_gather: Megatron-Core / Transformer Engine AttnFuncWithCPAndKVAllGather, the Llama 3 paper's s3.3.2 scheme):
    K and V of the whole sequence all-gathered before the attention (again in the backward, not kept between
    layers), and in the backward the whole sequence's dK / dV until they are reduce-scattered
    (memory_constants.yaml `context_parallel_all_gather`). K and V at their own (GQA) width; MLA's K and V widths."""
    cc, model = b.c["context_parallel_all_gather"], b.model
    kv_w = float(model.kv_dim + model.v_dim)
    heads = b.t if model.attention == "mla" else np.minimum(b.t, max(model.kv_heads, 1))  # fewer K/V heads: copied
    copies = cc["gathered_kv_copies"] + cc["full_dkv_copies"]
    return b.tokens * b.cp * b.w16 * kv_w * copies / heads


def offloaded_layers(asked: Any, n_layers: Any) -> Any:
    """Layers of a stage of `n_layers` that leave the GPU: at most all but the last, whose activations the
    backward reads as soon as the forward ends (Megatron-Core requires cpu_offloading_num_layers < num_layers;
    torchtune keeps the layer it is working on)."""
    return np.minimum(asked, np.maximum(np.asarray(n_layers, dtype=float) - 1.0, 0.0))


def _offload_and_fuse(b: _Batch, g: _Stage, items: dict[str, Any], host: Any) -> Any:
    """Activation offloading (torchtune enable_activation_offloading, Megatron-Core cpu_offloading through
    Transformer Engine's AsyncDoubleBufferGroupOffloadHandler): the saved activations of the offloaded layers
    go to host memory on a side stream as each layer's forward ends and come back, one layer ahead, for its
    backward, so the GPU holds the layers not offloaded plus one layer in flight (TE 2.9
    pytorch/cpu_offload.py: a group is freed when its copy is waited on, layer_window_map spreads the copies
    over the forward; with every layer offloaded, two layers: the current and the prefetched one). Optimizer in
    backward (torchtune optimizer_in_bwd, PyTorch register_post_accumulate_grad_hook): each parameter is
    stepped and its gradient freed as soon as it is computed, so one layer's gradients are live instead of the
    whole stage's."""
    asked = b.s["activation_offload"]
    if np.any(asked > 0):
        lay = b.pre.layout
        in_flight = np.maximum(b.dense_b, b.moe_b if lay.max_layer_exp else b.dense_b)
        acts = items["layer_activations"]
        n = np.maximum(np.asarray(g.n_layers, dtype=float), 1.0)
        off = offloaded_layers(asked, n)
        keep = np.minimum(acts, acts * (n - off) / n + in_flight)
        host = host + np.where(off > 0, acts - keep, 0.0)
        items["layer_activations"] = np.where(off > 0, keep, acts)
    fused = b.s["optimizer_in_backward"] > 0
    if np.any(fused) and b.training.trains_base_weights:
        layer_g = b.st["grads"] * b.largest_layer_params
        items["gradients"] = np.where(fused, np.minimum(items["gradients"], layer_g), items["gradients"])
    return host


def _backward_phases(b: _Batch, g: _Stage, items: dict[str, Any], fsdp: tuple[Any, Any]) -> Any:
    """The backward's peak phase instead of the sum of what its phases hold, into `items` (the winning phase's
    items), where the loop frees its forward's outputs before the backward (`_Batch.live_at_rerun` none / logits;
    "loss" keeps the sum). The loss phase (the last stage's logits, loss temporaries and head input, from the end of
    the forward through the loss and LM-head backward) ends before the first decoder layer is re-run under full
    recompute, so the recompute working set and the loss items are never live together (PyTorch runs the backward
    in reverse order of the forward and frees each node's saved tensors as it runs; reentrant checkpointing re-runs a
    layer in its CheckpointFunction's backward, non-reentrant at the first unpack of its saved tensors). What the loop
    holds (`_held_logits`) is in both phases; the caching allocator's segments that the forward's layers cut and the
    loss's larger tensors cannot reuse (`_forward_segments`) in the loss phase.
    Where the gradients are created by this backward (`_Batch.fresh_grads`: torchtune's and the HF Trainer's
    set_to_none, one micro-batch, no pipeline; grad_segments), they grow as the activations are freed: the loss
    phase holds only the LM head's weight gradient (twice while a chunked head accumulates it chunk by chunk: the
    InputBuffer and the next chunk's), the layer phase that and the stage's activations, the end of the backward every gradient with the
    first layer's activations and working set (or, with tied embeddings, the embedding's gradient added to the
    head's); the loss and layer phases then keep the freed gradients' own segments reserved where the loss path's
    freed blocks could not hold them (item freed_gradient_segments, grad_segments; not in the phases' choice, and
    none under expandable segments, whose freed ranges merge). Read for torchtune (recipes/*_single_device.py
    _loss_step `del logits`, zero_grad(set_to_none=True)) and the HF Trainer (names.LIVE_AT_RERUN). `fsdp`: the (loss phase, layer phase) bytes of FSDP2's gathered units
    (`_torchtune_fsdp2_phase_units`), weighed with each phase. Returns the mask of strategies whose loss phase wins
    (False where the sum is kept)."""
    split = np.asarray(b.live_at_rerun != "loss", bool)
    if not np.any(split):
        return False
    summed = dict(items)
    acts, recomp, grads = items["layer_activations"], items["recompute_working_set"], items["gradients"]
    held = _held_logits(b, g, items)
    items["forward_layer_segments"] = _forward_segments(b, g, items)
    items["loss_path_segments"] = _loss_path_segments(b, g)
    loss_keys = ("final_norm_and_head_input", "logits", "loss_backward_temporaries", "loss_chunk_working_set",
                 "head_weight_cast", "forward_layer_segments", "loss_path_segments")
    loss = sum(items.get(k, 0.0) for k in loss_keys)
    g_loss, g_layer, tied = _phase_grads(b, g, grads)
    fresh = b.fresh_grads
    one_layer = acts / np.maximum(np.asarray(g.n_layers, dtype=float), 1.0)
    end_extra = np.maximum(recomp + one_layer, tied)
    fsdp_loss, fsdp_layer = fsdp
    kv_loss, kv_on = _kv_phases(b, items)
    kv_on = kv_on + items.get("held_rerun_graphs", 0.0)  # none at the loss: the forward replaced them (282 (a))
    phases = np.stack(np.broadcast_arrays(acts + held + loss + g_loss + fsdp_loss + kv_loss,
                                          acts + held + recomp + g_layer + fsdp_layer + kv_on,
                                          np.where(fresh, grads + end_extra + fsdp_layer + kv_on, -np.inf)))
    win = np.argmax(phases, axis=0)  # 0 loss, 1 layer, 2 end of the backward
    if "held_rerun_graphs" in items:
        items["held_rerun_graphs"] = np.where(win == 0, 0.0, items["held_rerun_graphs"])
    if "returned_kv_cache" in items:
        items["returned_kv_cache"] = np.where(win == 0, kv_loss, kv_on)
    for k in loss_keys:
        if k in items:
            items[k] = np.where(win == 0, items[k], 0.0)
    items["recompute_working_set"] = np.where(win == 0, 0.0, np.where((win == 2) & (tied > recomp + one_layer), 0.0,
                                                                        recomp))
    end_tied = (win == 2) & (tied > recomp + one_layer)
    items["layer_activations"] = np.where(win == 2, np.where(end_tied, 0.0, one_layer), acts)
    items["gradients"] = np.choose(win, np.broadcast_arrays(g_loss, g_layer, grads + np.where(end_tied, tied, 0.0)))
    # the freed gradients' own segments beside the winning phase where it lacks them (not in the choice: the
    # allocated readings take the winning phase's items)
    rows = float(b.model.hidden) if b.training.trains_base_weights else 0.0
    layer_blocks = grad_segments.freed_layer_blocks(acts, g.n_layers, b.rec == 0, b.tokens, b.w16, rows, b.st["grads"])
    kept = np.where(fresh & (win < 2) & ~np.asarray(b.expandable, bool), grad_segments.kept_gradient_segments(
        grads - items["gradients"], loss, layer_blocks, g.n_layers), 0.0)
    if np.any(kept):
        items["freed_gradient_segments"] = kept
    if np.any(held):
        items["held_logits"] = np.where(win == 2, 0.0, held)
    for k in set(items) | set(summed):  # the strategies whose loop holds the loss phase keep the sum
        items[k] = np.where(split, items.get(k, 0.0), summed.get(k, 0.0))
    return (win == 0) & split


def _kv_phases(b: _Batch, items: dict[str, Any]) -> tuple[Any, Any]:
    """(loss phase, layer and end phases) bytes of the returned K / V cache (`_returned_kv_bytes`) for
    `_backward_phases`. The forward's own cache is live at its loss (the model computes the loss inside its forward,
    beside its outputs). Where the loop holds the outputs (live_at_rerun logits: `outputs = model(**batch); loss =
    loss_func(None, outputs); loss.backward()`, ATorch's fsdp_llama2.py at 3a442b728) it keeps them through the
    backward and, rebinding the name only when the next forward returns, the previous step's cache beside the next
    forward's: twice in the loss phase, once after. Where the loop drops them (none): once, then none."""
    kv = items.get("returned_kv_cache", 0.0)
    hold = np.asarray(b.live_at_rerun == "logits", dtype=float)
    return kv * (1.0 + hold), kv * hold


def _phase_grads(b: _Batch, g: _Stage, grads: Any) -> tuple[Any, Any, Any]:
    """(loss phase, layer phase, tied-embedding end) gradient bytes for `_backward_phases`: every gradient where they
    outlive the step (accumulation, a pipeline, a style that keeps them), else the LM head's as the backward makes it."""
    lay, model = b.pre.layout, b.model
    head_g = 0.0
    if b.training.trains_base_weights:
        head_p = lay.lm_head_own if lay.lm_head_own else (lay.embedding if model.tied_embeddings else 0)
        head_g = _on(g.is_last, b.st["grads"] * b.shard(head_p / b.t, 0.0, 2), 0.0)
        head_g = np.where(b.offload_par, 0.0, head_g)  # parameter offload keeps the gradients in host memory
    tied = head_g * float(bool(model.tied_embeddings))
    fresh = b.fresh_grads
    return np.where(fresh, head_g * (1.0 + float(b.chunked_loss)), grads), np.where(fresh, head_g, grads), tied


def _held_logits(b: _Batch, g: _Stage, items: dict[str, Any]) -> Any:
    """Bytes of the model outputs' logits the loop holds through the backward (live_at_rerun logits): the last
    stage's logit elements at `_Batch.held_logit_bytes`. Under loss_impl upcast-held they are already in its saved
    bytes (memory_constants.yaml logits.upcast_held: the held fp32 copy and the log-softmax output), so they move
    out of the `logits` item here."""
    if not np.any(b.held_logit_bytes):
        return 0.0
    held = _on(g.is_last, b.tokens * b.model.vocab / (1.0 if b.gathered_logits else b.t), 0.0) * b.held_logit_bytes
    if b.loss_impl == "upcast-held":
        items["logits"] = np.maximum(items["logits"] - held, 0.0)
    return held


def _forward_segments(b: _Batch, g: _Stage, items: dict[str, Any]) -> Any:
    """Reserved bytes the loss phase cannot reuse: the caching allocator's segments cut by a checkpointed layer's
    forward (run without saving: its MLP's three ffn-wide tensors, act_fn(gate), up and their product, beside the
    residual and the normed input, 3 f + 2 h in the model dtype a token; a gelu MLP 2 f + 2 h; a MoE layer the larger
    of its shared experts over every token and its routed experts over an expert's share, k / E), which stay reserved
    when the loss's logit-sized tensors, larger than any of them, are cudaMalloc'd as new segments (allocator.py's
    rules: a request takes the smallest cached block that holds it; segments never merge). The re-run layer reuses
    both, so they are not a third phase. Under expandable segments (one growing address range a stream) the same
    holes stay mapped: the forward's freed layer tensors lie below the checkpoints of later layers, the final norm's
    output and the 16-bit logits, so the loss's larger tensors go above them (benchmarks/titan_step_layout.py: the
    forward's extent above what it holds at the loss, 5,888 B a token against 3 f + 2 h = 6,400, with the loss's
    tensors mapped above it); counted there for torchtitan (whose run_train.sh sets them), zero on the other styles
    (known-gaps 214 (b), for the hf / torchtune owner). Under torchtitan's tensor parallelism the normed input is
    all-gathered whole before the column-parallel linears (parallelize.py PrepareModuleInput desired_input_layouts
    Replicate), beside the residual's sequence-parallel shard: h + h / sp in place of 2 h / t. Zero where the loss's
    largest tensor fits an ffn-wide one (Liger's chunk at a large micro-batch) and without full recompute (the
    forward's tensors are then the saved activations themselves). Not fitted: counted from transformers'
    LlamaMLP.forward and the allocator's rules."""
    m = b.model
    a = b.w16
    n_ffn = 3.0 if m.mlp == "swiglu" else 2.0
    f = _widest_ffn(m)
    widest = b.tokens * a * f / b.t
    largest = np.maximum(items["logits"], np.where(items["logits"] > 0, 0.0, items["loss_backward_temporaries"]))
    chunk = _liger_loss(b, g)[1] if b.loss_impl == "liger" else items.get("loss_chunk_working_set", 0.0)
    largest = np.maximum(largest, chunk)
    titan = np.asarray(b.titan, bool)
    hidden = np.where(titan, m.hidden / b.sp_div + m.hidden, 2.0 * m.hidden / b.t)
    seg = b.tokens * a * (n_ffn * f / b.t + hidden)
    kept = (~np.asarray(b.expandable, bool) | titan) & (largest > widest) & (b.rec == 2)
    return _on(g.is_last, np.where(kept, seg, 0.0), 0.0)


def _widest_ffn(m: ModelArch) -> float:
    """The ffn width of a layer's widest forward tensor: a dense MLP's, or a MoE layer's shared experts over every token
    or its routed experts over an expert's share (k / E), whichever is larger."""
    moe_f = max(float(m.shared_expert_ffn), float(m.expert_ffn) * m.experts_per_token / max(m.experts, 1)) \
        if m.is_moe else 0.0
    dense = not m.is_moe or m.dense_layers > 0 or bool(m.mlp_only_layers)
    return max(float(m.ffn) if dense else 0.0, moe_f)


def _loss_path_segments(b: _Batch, g: _Stage) -> Any:
    """Reserved bytes the loss path's own segments hold beyond its allocated peak, where the loop drops the outputs
    before the backward (live_at_rerun none): the tensors and their order read from transformers per loss_impl
    (LOSS_SEGMENT_KEYS; benchmarks/loss_segments.py replays them with caching_allocator.py's rules, and
    tests/estimate/test_loss_segments.py holds this to the replay). `idle`: the 16-bit logits' segment, freed before
    the backward and too small for any of its fp32 tensors; `slice`: the slice's full-size zero-filled fp32 gradient
    (slice_backward of `logits[..., :-1, :]`), cut anew unless the shifted copy's segment, rounded up to 2 MiB
    (kRoundLarge), holds it: a micro-batch's rows x vocabulary x 4 B over the rounding. Under expandable segments the
    freed ranges merge and the slice gradient finds room, but the 16-bit logits' range, freed below the fp32 tensors,
    holds none of them at the backward's peak (`expandable`; caching_allocator.ExpandablePool). Counted where the job
    states which code runs the loss (LOSS_SEGMENT_KEYS; not under loss_impl auto, whose release and model code are
    unstated: Qwen-1's remote code, say, replays otherwise, known-gaps 213 (e)). Zero in fp32 training
    (no 16-bit logits, no upcast copy), where the 16-bit logits fit a layer's ffn-wide segment, under torchtitan (its
    loss not replayed) and for the other losses. On the last stage; memory_constants.yaml logits.<key>_segment_*."""
    key = LOSS_SEGMENT_KEYS.get(b.loss_impl)  # under auto the release, so the sequence, is not stated: not counted
    if key is None or b.w16 >= 4.0:
        return 0.0
    lg = b.c["logits"]
    idle = float(lg[f"{key}_segment_idle_bytes_per_element"])
    slice_b = float(lg[f"{key}_segment_slice_bytes_per_element"])
    expandable = np.asarray(b.expandable, bool)
    per_row = b.model.vocab / (1.0 if b.gathered_logits else b.t)
    rows = np.maximum(b.s["micro_batch"], 1.0) * float(b.training.sequences_per_sample)
    elements = b.tokens * per_row
    r = allocator.ROUND_LARGE_BYTES
    shifted_seg = np.ceil(slice_b * (elements - rows * per_row) / r) * r
    cut = shifted_seg < slice_b * elements
    seg = elements * np.where(expandable, float(lg[f"{key}_segment_expandable_bytes_per_element"]),
                              idle + np.where(cut, slice_b, 0.0))
    kept = ~np.asarray(b.titan, bool) & (elements * b.w16 > b.tokens * b.w16 * _widest_ffn(b.model) / b.t)
    return _on(g.is_last, np.where(kept & b.drops_outputs, seg, 0.0), 0.0)


def activation_offload_bytes(model: ModelArch, training: Training, strategy: Strategy,
                             n_layers: np.ndarray) -> Any:
    """Bytes of one micro-batch's saved activations that activation offloading moves to host memory in the
    forward and back in the backward, on a stage of `n_layers` decoder layers: those of its offloaded layers
    (`offloaded_layers`); 0 without `strategy.activation_offload`. The time model charges their transfers over
    the host link (step_time.py)."""
    asked = offload_layers_asked(strategy)
    if asked <= 0:
        return 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        b = _batch(model, training, strategy, DEFAULT_OPTIONS)
    moe_share = float(b.pre.layout.cum_moe[model.layers]) / model.layers
    per_layer = (1.0 - moe_share) * b.dense_b + moe_share * b.moe_b
    return offloaded_layers(asked, n_layers) * per_layer


def paged_bytes_moved(model: ModelArch, training: Training, system: System, strategy: Strategy) -> Any:
    """Bytes of a paged optimizer's states (paged_adamw, paged_adamw8bit: CUDA unified memory) that cross the host
    link each way every step, on the worse pipeline stage: none while they fit in the card's memory beside the
    stage's total (the caching allocator keeps what it reserved, so that room is all the pages get), all of them
    once they do not: the UVM driver evicts the oldest-allocated 2 MB root chunk (open-gpu-kernel-modules
    nvidia-uvm/uvm_pmm_gpu.c pick_root_chunk_to_evict), so a pass over states larger than the room finds none of
    them resident, and its thrashing mitigation (uvm_perf_thrashing.c) pins thrashing pages to host memory and maps
    them, which also reads and writes each state over the link once. 0 for other optimizers."""
    if not training.optimizer.startswith("paged_"):
        return 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        r = _evaluate(model, training, system, strategy, DEFAULT_OPTIONS, detail=False)
    room = system.memory_gib * GIB
    return np.maximum.reduce([np.where(st["paged"] > room - st["total"], st["paged"], 0.0)
                              for st in r["stages"].values()])


def _gathered_layer_bytes(b: _Batch) -> tuple[Any, Any]:
    """(16-bit weights, unsharded gradient) bytes of the largest decoder layer on one GPU (TP / EP shards; the
    weights in their stored format where the base is frozen)."""
    layer_p = b.largest_layer_params
    full_train = b.training.trains_base_weights
    return (b.w16 if full_train else b.pre.base[0]) * layer_p, (b.w16 if full_train else 0.0) * layer_p


def _torchtune_fsdp2_phase_units(b: _Batch, options: MemoryOptions) -> tuple[Any, Any]:
    """(loss phase, layer phase) bytes of the FSDP2 units torchtune holds gathered (ZeRO-3 strategies; 0 without
    overheads): the root or head units (`_torchtune_fsdp2_end_units`) in both; in the layer phase the layer being
    run and the one prefetched, with its unsharded gradient (memory_constants.yaml zero3_gathered_layers,
    zero3_unsharded_grad_layers)."""
    if b.name != "torchtune" or not options.overheads:
        return 0.0, 0.0
    oc = b.c["framework_overhead"]
    w_layer, g_layer = _gathered_layer_bytes(b)
    held, loss_units = _torchtune_fsdp2_end_units(b, w_layer)
    layer = oc["zero3_gathered_layers"] * w_layer + oc["zero3_unsharded_grad_layers"] * g_layer
    z3 = b.z >= 3
    return np.where(z3, held + loss_units, 0.0), np.where(z3, held + layer, 0.0)


def _fsdp2_reduce_bytes(b: _Batch) -> Any:
    """Bytes per parameter of FSDP2's reduce dtype: fp32 (torchtitan parallelize.py MixedPrecisionPolicy reduce_dtype
    = training.mixed_precision_reduce, default "float32"; memory_constants.yaml fsdp2_pp_unsharded_grad_bytes_per_param),
    the parameters' 16-bit dtype where gradients are reduced in it (strategy.grad_reduce_in_fp32 false)."""
    if b.grad_reduce_in_fp32 is False:
        return b.w16
    return b.c["framework_overhead"]["fsdp2_pp_unsharded_grad_bytes_per_param"]


def _titan_fsdp2_sharded(b: _Batch) -> Any:
    """torchtitan's FSDP2 units sharded over more than one rank without pipelining, per strategy: where its units
    reshard after the forward and reduce-scatter each layer's gradients (`_fsdp2_reduce_scatter_hold`,
    `_titan_loss_units`)."""
    return b.titan & (b.z >= 3) & (b.p == 1) & (b.dpc > 1)


def _titan_head_unit_p(b: _Batch) -> Any:
    """Parameters of torchtitan's [norm, output] FSDP2 unit on one GPU where the job shards the embedding and the LM
    head as their own units (strategy.shard_embedding_head_separately: apply_fsdp from 83e694105, 2025-07-28, PR
    1094), 0 elsewhere (the head in the root, `_fsdp_root_unit`) and with tied embeddings (one unit of the three)."""
    if not (b.head_own_unit and np.any(b.titan)) or b.model.tied_embeddings:
        return 0.0
    return np.where(b.titan, float(b.pre.layout.lm_head_own) / b.t, 0.0)


def _fsdp2_reduce_scatter_hold(b: _Batch, options: MemoryOptions) -> Any:
    """Bytes of the reduce-scatter input that FSDP2 keeps from one unit's post-backward to the next unit's, under
    torchtitan's FSDP2 without pipelining (0 without overheads): post_backward allocates the unit's gradients in the
    reduce dtype (foreach_reduce's reduce_scatter_input, `_fsdp2_reduce_bytes`) and stores it as
    comm_ctx.reduce_scatter_state, dropped only when the next unit's post_backward starts
    (torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py FSDPParamGroup.post_backward, torch 2.13 and the
    2024-2025 releases), so each layer's backward runs beside the previous unit's gradients in that dtype: the layer
    before it, or for the last layer the LM head's unit where it is one (`_titan_head_unit_p`); known-gaps 275 (a). A
    layer-phase item: the loss phase precedes the first reduce."""
    if not options.overheads or not np.any(b.titan) or not b.training.trains_base_weights:
        return 0.0
    sharded = _titan_fsdp2_sharded(b)
    unit_p = np.maximum(b.largest_layer_params, _titan_head_unit_p(b))
    return np.where(sharded, _fsdp2_reduce_bytes(b) * unit_p, 0.0)


def _titan_loss_units(b: _Batch, options: MemoryOptions) -> Any:
    """Change to the gathered units' bytes (`_overheads`: two layers and a layer's gradient) in torchtitan's loss phase
    where the LM head is its own unit (`_titan_head_unit_p`; 0 elsewhere): apply_fsdp shards [norm, output] with
    reshard_after_forward False and every block with it True (from 83e694105), so from the end of the forward to the
    LM head's backward the head unit's 16-bit weights are gathered beside one layer, the last, which the head unit's
    pre_backward prefetches (FSDPParamGroup._backward_prefetch), and no layer gradient yet; the head's gradient is
    made in its backward after the loss's saved tensors are freed (a chunked loss's own items hold it). The head unit's
    post_backward reshards it (reshard_after_backward), so the layer phase holds none of it (known-gaps 275 (b))."""
    head_p = _titan_head_unit_p(b)
    if not options.overheads or not np.any(head_p):
        return 0.0
    oc = b.c["framework_overhead"]
    w_layer, g_layer = _gathered_layer_bytes(b)
    layers = oc["zero3_gathered_layers"] * w_layer + oc["zero3_unsharded_grad_layers"] * g_layer
    sharded = _titan_fsdp2_sharded(b)
    return np.where(sharded, b.w16 * (head_p + float(b.model.final_norm_params)) + w_layer - layers, 0.0)


def _fsdp1_loss_units(b: _Batch, options: MemoryOptions) -> Any:
    """Change to the gathered units' bytes (`_overheads`) in the loss phase of the fsdp style's FSDP1 units
    (`_Batch.fp32_shard`; 0 elsewhere and without overheads): the root's 16-bit weights and one layer's, the last,
    prefetched at the backward's start; no layer gradient and no root gradient yet (fsdp1_mixed)."""
    if not options.overheads or not np.any(b.fp32_shard):
        return 0.0
    oc = b.c["framework_overhead"]
    w_layer, g_layer = _gathered_layer_bytes(b)
    root_grad = _fsdp_root_unit(b) - b.w16 * _fsdp_root_params(b)
    units = b.fp32_shard & (b.p == 1)  # pipelining gathers every unit (`_overheads` pp_hold)
    return fsdp1_mixed.loss_phase_units(units, w_layer, g_layer, oc["zero3_gathered_layers"],
                                        oc["zero3_unsharded_grad_layers"], root_grad)


def _fsdp2_phase_units(b: _Batch, options: MemoryOptions) -> tuple[Any, Any]:
    """(loss phase, layer phase) bytes of the FSDP units for `_backward_phases`: torchtune's gathered units,
    torchtitan's loss-phase units (`_titan_loss_units`) and held reduce-scatter input (`_fsdp2_reduce_scatter_hold`),
    the fsdp style's FSDP1 loss-phase units (`_fsdp1_loss_units`)."""
    in_loss, in_layer = _torchtune_fsdp2_phase_units(b, options)
    in_loss = in_loss + _titan_loss_units(b, options) + _fsdp1_loss_units(b, options)
    return in_loss, in_layer + _fsdp2_reduce_scatter_hold(b, options)


def _overheads(b: _Batch, g: _Stage, items: dict[str, Any], trainable_pg: Any, loss_phase: Any) -> None:
    """CUDA context, NCCL buffers, ZeRO buckets / gathered layers and allocator fragmentation into `items`
    (memory_constants.yaml `framework_overhead`); `loss_phase`: strategies whose peak is torchtune's loss phase
    (`_backward_phases`), which hold the FSDP2 units of that phase."""
    oc, t, p, z = b.c["framework_overhead"], b.t, b.p, b.z
    items["cuda_context"] = np.full(t.shape, (oc["cuda_context_gib"] + oc["cublas_workspace_gib"]) * GIB)
    # the communicators' connections (communicators.py; device_map auto's one process has no pipeline communicator)
    items["nccl_buffers"] = np.broadcast_to(b.nccl_bytes, t.shape).astype(float)
    h2 = float(b.model.hidden) ** 2
    bucket_elems = np.minimum(oc["zero_bucket_hidden_squares"] * h2, trainable_pg)
    buckets = np.where((~b.mega) & ((z == 1) | (z == 2)) & (b.dpc > 1), bucket_elems * 2.0, 0.0)
    layer_p = b.largest_layer_params
    full_train = b.training.trains_base_weights
    w_layer, g_layer = _gathered_layer_bytes(b)
    gathered = oc["zero3_gathered_layers"] * w_layer + oc["zero3_unsharded_grad_layers"] * g_layer
    if np.any(b.ds_engine):  # DeepSpeed's engine, under its own style or HF Trainer / accelerate's
        live_w, live_g = _deepspeed_zero3_live(b, g, layer_p, trainable_pg)
        ds = (b.w16 if full_train else b.pre.base[0]) * live_w + (b.w16 if full_train else 0.0) * live_g
        gathered = np.where(b.ds_engine, ds, gathered)
    # torchtitan FSDP2 + pipelining: reshard_after_forward is off and gradient sync waits for the last
    # micro-batch, so the stage's 16-bit weights stay unsharded and its gradients accumulate unsharded, in the
    # fp32 reduce dtype (torchtitan parallelize.py `reshard_after_forward = not pp_enabled`; the schedule's
    # set_requires_gradient_sync; FSDP2 FSDPParam.to_accumulated_grad_if_needed upcasts to reduce_dtype)
    stage_params = trainable_pg if full_train else 0.0
    unsharded_grad = _fsdp2_reduce_bytes(b)
    # a stage that syncs every micro-batch (strategy pp_fsdp_once_per_step false: NeMo AutoModel's stage module is no
    # FSDP module, so FSDP2 reduce-scatters each micro-batch's gradients, known-gaps 24) holds no gradient across them,
    # as the step time charges no hold pass (step_time._fsdp2_grad_hold_bytes; known-gaps 130 (e))
    unsharded_grad = np.where(b.pp_grad_hold, unsharded_grad, 0.0)
    pp_hold = np.where(b.titan & (z >= 3) & (p > 1), (b.w16 + unsharded_grad) * stage_params, 0.0)
    pp_hold = pp_hold + _held_weights(b, trainable_pg)
    if b.name == "torchtune":  # the units of the peak phase (`_torchtune_fsdp2_phase_units`)
        in_loss, in_layer = _torchtune_fsdp2_phase_units(b, DEFAULT_OPTIONS)
        gathered = np.where(z >= 3, np.where(loss_phase, in_loss, in_layer), gathered)
    gathered = gathered + np.where((z >= 3) & (p == 1) & (b.dpc > 1), _fsdp_root_unit(b), 0.0)
    gathered = gathered + np.where(loss_phase, _titan_loss_units(b, DEFAULT_OPTIONS) + _fsdp1_loss_units(
        b, DEFAULT_OPTIONS), _fsdp2_reduce_scatter_hold(b, DEFAULT_OPTIONS))
    # Nothing is gathered where nothing is sharded: at one data-parallel rank torchtitan applies no FSDP
    # (parallel_dims.fsdp_enabled = dp_shard > 1 or cp > 1), NeMo AutoModel returns the model unwrapped
    # (FSDP2Manager.parallelize at world size 1), FSDP1 switches to NO_SHARD ("FSDP is switching to use NO_SHARD ...
    # since the world size is 1", torch/distributed/fsdp/_init_utils.py) and torchtune runs its single-device
    # recipes; DeepSpeed ZeRO-3 still partitions into one shard and gathers each module into its own buffer.
    sharded = (z >= 3) & ((b.dpc > 1) | b.ds_engine)
    items["framework_buffers"] = buckets + np.where(sharded | b.offload_par, np.maximum(gathered, pp_hold), 0.0)
    allocated = sum(val for key, val in items.items() if key not in ("cuda_context", "nccl_buffers", *CACHED_ONLY_ITEMS))
    items["fragmentation"] = oc["allocator_fragmentation_fraction"] * allocated


def _held_weights(b: _Batch, stage_params: Any) -> Any:
    """Bytes of the 16-bit parameters FSDP2 keeps gathered from each unit's forward to its backward without
    pipelining (strategy.fsdp_reshard backward / step: fully_shard reshard_after_forward False, NeMo AutoModel's MoE
    parallelizer default, components/moe/config.py at 4074cd40d): every unit's unsharded copy at the backward's start,
    beside the shards; routed experts whose shard group is one rank are no FSDP unit (AutoModel apply_fsdp
    ignored_params), so nothing of theirs is gathered. Full training only (LoRA's frozen base: `gathered`)."""
    if not np.any(b.fsdp_held_weights) or not b.training.trains_base_weights:
        return 0.0
    experts = b.pre.layout.cum_exp[b.model.layers] / (b.ep * b.et)
    outside = np.where(b.divisors[3][1] > 1.0, 0.0, experts)
    return np.where(b.fsdp_held_weights, b.w16 * np.maximum(stage_params - outside, 0.0), 0.0)


def _torchtune_fsdp2_end_units(b: _Batch, w_layer: Any) -> tuple[Any, Any]:
    """(held through the step, held in the loss phase) bytes of torchtune's FSDP2 units outside the decoder layers
    (training/_distributed.py shard_model at 30b8519: fully_shard on each layers.i, on custom_sharded_layers, then
    on the whole model, whose root unit keeps every parameter no child took). The root is never resharded after
    forward (torch FSDP2 FSDPState._lazy_init: the root's post_forward_mesh_info = None), so by default the
    embedding, final norm and LM head stay gathered from the first forward to the end of the backward, and their
    unsharded gradients (full training) until the root's reduce-scatter at its end. With
    `shard_embedding_head_separately` (custom_sharded_layers ['tok_embeddings', 'output']) the head is its own unit,
    re-gathered in the LM-head backward beside its unsharded gradient (twice while a chunked head accumulates it,
    as `_backward_phases`). Either way the loss phase holds one decoder layer, the last, prefetched when the unit
    before it in the backward starts its backward (FSDPParamGroup.pre_backward -> _backward_prefetch: the unit
    at post_forward_order[index - 1]); no layer is being run there."""
    zero = np.zeros(b.t.shape)
    if b.name != "torchtune":
        return zero, zero
    lay, model = b.pre.layout, b.model
    head_p = float(lay.lm_head_own) / b.t
    grad = b.w16 if b.training.trains_base_weights else 0.0  # torchtune trains in the model dtype
    if b.head_own_unit:
        loss_units = (b.w16 + (1.0 + float(b.chunked_loss)) * grad) * head_p + w_layer
        return zero + float(model.final_norm_params) * b.w16, loss_units
    root_p = float(lay.embedding) / b.emb_t + head_p + float(model.final_norm_params)
    return zero + (b.w16 + grad) * root_p, zero + w_layer


def _fsdp_root_unit(b: _Batch) -> Any:
    """Bytes the FSDP root unit holds through the backward on the PyTorch-native styles other than torchtune's
    (`_torchtune_fsdp2_end_units`), where the framework leaves the embedding, final norm and LM head in the root
    (strategy.shard_embedding_head_separately null / false): torchtitan's apply_fsdp (parallelize_llama.py
    2024-12 to 2025-06: fully_shard on each block, then on the whole model) and NeMo AutoModel's dense path
    (parallelizer.py DefaultParallelizationStrategy: the root with reshard_after_forward False); FSDP2 never reshards
    the root after forward (FSDPState._lazy_init: post_forward_mesh_info = None), nor FSDP1 (HF Trainer `fsdp`:
    _runtime_utils._post_forward_reshard frees no root parameter). Their 16-bit copies stay gathered to the end of
    the backward, and in full training the gradients made before it: FSDP2's per-parameter LM-head gradient,
    FSDP1's whole flat gradient of the root. TP-sharded like the layers; one rank (no sharding: torchtitan
    ParallelDims.fsdp_enabled, AutoModel at world size 1) and pipelining (every unit gathered: `_overheads`
    pp_hold) hold nothing more. HF Trainer / Axolotl with strategy.fsdp (accelerate's wrap: fully_shard on each
    decoder layer, then on the whole model, accelerate utils/fsdp_utils.py fsdp2_prepare_model 2025, Axolotl's patched
    copy monkeypatch/accelerate/fsdp2.py; FSDP1's auto-wrap leaves the rest in the root's flat parameter) hold the
    same root, counted with FSDP2's head gradient only (FSDP1's whole root gradient is larger); not under DeepSpeed's
    engine. 0 on other styles or with the units sharded separately (OLMo-core, AutoModel's MoE path: their own
    embedding and LM-head units)."""
    fsdp1 = b.name == "fsdp"
    # hf named, or "auto" resolved to it (neither Megatron's profile nor torchtitan's: `_profiles`)
    accel = (b.name == "hf") | ((b.name == "auto") & ~b.mega & ~b.titan)
    if b.head_own_unit or b.name == "torchtune" or not (fsdp1 or np.any(accel) or np.any(b.titan)):
        return 0.0
    head_p = float(b.pre.layout.lm_head_own) / b.t
    root_p = _fsdp_root_params(b)
    # under fsdp_no_sync the head's gradient is in the unsharded hold (`_no_sync_grad_bytes`)
    grad = np.where(b.no_sync_hold, 0.0, b.w16 if b.training.trains_base_weights else 0.0)
    held = b.w16 * root_p + grad * (root_p if fsdp1 else head_p)
    return held if fsdp1 else np.where(b.titan | (accel & ~np.asarray(b.ds_engine, bool)), held, 0.0)


def _fsdp_root_params(b: _Batch) -> Any:
    """Parameters of the FSDP root unit on one GPU (`_fsdp_root_unit`): the embedding, the LM head and the final norm."""
    lay = b.pre.layout
    return float(lay.embedding) / b.emb_t + float(lay.lm_head_own) / b.t + float(b.model.final_norm_params)


def _deepspeed_zero3_live(b: _Batch, g: _Stage, layer_p: Any, trainable_pg: Any) -> tuple[Any, Any]:
    """(gathered parameters, unsharded gradient elements) live on one GPU under DeepSpeed ZeRO-3, which gathers
    per submodule: the embedding / LM head, or the layer's modules reused within half the reuse distance (at least
    its largest linear; the stack's projections fused or apart), plus the prefetch bucket; two reduce buckets of
    gradients (at most the GPU's trainable parameters), or two of the largest module when it is larger. The reuse
    distance is the DeepSpeed perf style's (perf_constants.yaml frameworks.deepspeed), the buckets the job's bucket
    sizes (framework.deepspeed_zero3_buckets: DeepSpeed's defaults, or the HF Trainer's "auto"), as the step time
    reads them."""
    m = b.model
    largest = deepspeed_zero3_largest_module_params(m, b.t)
    head = float(m.vocab) * float(m.hidden) / b.t
    kept = deepspeed_zero3_kept_params(m, b.t, layer_p, style_number("deepspeed", "zero3_max_reuse_distance_params"),
                                       b.ds_split)
    prefetch, _, reduce = deepspeed_zero3_buckets(b.ds_buckets, m.hidden)
    live_w = np.maximum(head, kept) + prefetch
    if np.any(b.ds_torch_linear):
        live_w = np.where(b.ds_torch_linear, _torch_linear_held(b, g, live_w, head, largest, prefetch), live_w)
    live_g = 2.0 * np.maximum(np.maximum(head, largest), reduce)
    return live_w, np.minimum(live_g, trainable_pg)


def _torch_linear_held(b: _Batch, g: _Stage, live_w: Any, head: Any, largest: Any, prefetch: Any) -> Any:
    """Gathered parameters live on one GPU under DeepSpeed ZeRO-3 when the model was built outside deepspeed.zero.Init
    (strategy.zero_init false): only that context swaps torch.nn.functional.linear for LinearFunctionForZeroStage3
    (deepspeed v0.14.2 partition_parameters.py patch_init_and_builtins; the engine's Init(module=...) in
    parameter_offload.py _convert_to_zero_parameters is never entered), which saves the parameter itself, so that
    free_param's `param.data = torch.empty(0)` frees the gathered storage (zero/linear.py's header). torch's linear
    saves the weight's transpose for the input gradient (derivatives.yaml mm: mat2), a view that keeps the gathered
    storage to that linear's backward. The first step's trace is incomplete (partitioned_param_coordinator.py
    release_sub_module: every module released after use, nothing prefetched), so each weight the backward needs is
    gathered again beside the held one. Without recompute: the stage's linears (decoder and LM head) held from the
    forward, with the head gathered again in its backward (the first step) or the prefetch bucket (later steps);
    under full recompute the forward saves nothing: the head twice, or the re-run layer held beside its largest
    module gathered again. Never less than the memory-efficient linear's `live_w`."""
    lay = b.pre.layout
    linears = b.ssum(lay.cum_tp, g.start, g.stop, g.n_layers) / b.t \
        + b.ssum(lay.cum_exp, g.start, g.stop, g.n_layers) / (b.ep * b.et)
    head = _on(g.is_last, head, 0.0)
    none = linears + head + np.maximum(head, prefetch)
    rerun = np.maximum(2.0 * head, b.largest_layer_params + largest)
    return np.maximum(live_w, np.where(b.rec == 2, rerun, none))


def _optimizer_step_peak(b: _Batch, items: dict[str, Any], step_states: dict[str, Any], total: Any, opt_params: Any,
                         detail: bool) -> tuple[Any, np.ndarray]:
    """(total, mask of strategies peaking in the optimizer step): the larger of the forward/backward peak and
    the DeepSpeed ZeRO-1/2 optimizer step (deepspeed/runtime/zero/stage_1_and_2.py `step`: per param group,
    single_grad_partition = flatten(averaged_gradients[i]).to(fp32) -- a 16-bit flat copy and its fp32 cast
    of the rank's gradient partition -- becomes single_partition_of_fp32_groups[i].grad while the fp32 master
    partition and the Adam states are live; activations are freed by then) or the Megatron-Core step with bf16
    gradient buffers (DistributedOptimizer._copy_model_grads_to_main_grads: shard_main_param.grad =
    shard_model_grad.float(), an fp32 copy of the shard's gradients). With `detail`, `items` become the peak
    phase's items; `step_states`: the model states the step holds (every gradient, taken before `_backward_phases`
    leaves the winning phase's)."""
    step_peak = np.zeros(b.t.shape, dtype=bool)
    mc_step = b.bf16_grads & (~b.offload_opt)
    deepspeed, flat_b, fp32_b = _deepspeed_step_blocks(b, opt_params)
    # torch.optim.AdamW's foreach step elsewhere (the HF Trainer's adamw_torch, LitGPT, torch DDP / FSDP stacks):
    # _multi_tensor_adam makes exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sqs), a moment-sized tensor for every
    # parameter at once, before its addcdiv_ (torch/optim/adam.py; the same lines from torch 2.1 to 2.13)
    fe_step = b.foreach_adamw & (~b.mega) & (~deepspeed) & (~b.offload_opt)
    if not (b.training.trains_base_weights and np.any(deepspeed | mc_step | fe_step)):
        return total, step_peak
    fp32 = float(b.c["optimizer_step"]["fp32_grad_cast_bytes_per_param"])
    extra = np.where(deepspeed, flat_b + fp32_b, fp32 * opt_params)
    step_items = dict(step_states)
    step_items["optimizer_step_grad_buffers"] = np.where(fe_step, 0.0, extra)
    # AdamW keeps two moments of one dtype: the temporary is half the state bytes per parameter
    step_items["optimizer_step_foreach_temp"] = np.where(fe_step, 0.5 * b.st["optimizer"] * opt_params, 0.0)
    if b.options.overheads:
        oc = b.c["framework_overhead"]
        step_items["cuda_context"] = items["cuda_context"]
        step_items["nccl_buffers"] = items["nccl_buffers"]
        alloc = sum(v_ for k_, v_ in step_items.items() if k_ not in ("cuda_context", "nccl_buffers"))
        step_items["fragmentation"] = oc["allocator_fragmentation_fraction"] * alloc
    step_total = sum(step_items.values())
    step_peak = (deepspeed | mc_step | fe_step) & (step_total > total)
    total = np.where(step_peak, step_total, total)
    if detail:
        for key in set(items) | set(step_items):
            items[key] = np.where(step_peak, step_items.get(key, 0.0), items.get(key, 0.0))
    return total, step_peak


def _ddp_init_peak(b: _Batch, g: _Stage, items: dict[str, Any], total: Any, detail: bool) -> tuple[Any, np.ndarray]:
    """(total, mask of strategies peaking at model init): Megatron-Core's DDP with the distributed optimizer allocates
    each buffer's parameter data (the weights' dtype) and gradient data with torch.zeros, then moves each parameter into
    it (`param.data = new_param_data`, a copy, the old storage freed after), the dense parameters' buffer before the
    experts' (megatron/core/distributed/param_and_grad_buffer.py _ParamAndGradBuffer.__init__ at core_v0.13.0;
    distributed_data_parallel.py: dense, then expert-parallel buffers). So the allocated peak of init is the weights,
    the dense gradients and the larger of the dense parameter copy or the expert parameter copy with its gradients,
    beside a DPO reference built and loaded before (swift/megatron/trainers/dpo_trainer.py at 1b184f296c); no master
    or optimizer state yet (the optimizer is built after). Without the distributed optimizer no parameter buffer is
    made. With `detail`, `items` become that phase's where it wins (docs/known-gaps.md 270 (f))."""
    dist = (b.s["distributed_optimizer"] > 0) | ((b.z >= 1) & (b.z < 3))
    on = b.mega & dist & (~b.offload_par) & bool(b.training.trains_base_weights)
    if not np.any(on):
        return total, np.zeros(np.shape(total), dtype=bool)
    params = _stage_params(b, g)
    share = params.experts / np.maximum(params.dense + params.experts, 1e-30)
    w, grads = items["weights"], items.get("grad_accum_buffer", 0.0) + items.get("gradients", 0.0)
    init_items = {"weights": w, "reference_model": items.get("reference_model", 0.0), "grad_accum_buffer": grads,
                  "ddp_init_param_copies": np.maximum(w * (1 - share) - grads * share, w * share)}
    if b.options.overheads:
        init_items["cuda_context"], init_items["nccl_buffers"] = items["cuda_context"], items["nccl_buffers"]
        alloc = sum(v for k, v in init_items.items() if k not in ("cuda_context", "nccl_buffers"))
        init_items["fragmentation"] = b.c["framework_overhead"]["allocator_fragmentation_fraction"] * alloc
    init_total = sum(init_items.values())
    init_peak = on & (init_total > total)
    if detail:
        for key in set(items) | set(init_items):
            items[key] = np.where(init_peak, init_items.get(key, 0.0), items.get(key, 0.0))
    return np.where(init_peak, init_total, total), init_peak


def _deepspeed_step_blocks(b: _Batch, opt_params: Any) -> tuple[Any, Any, Any]:
    """(where the step is DeepSpeed's ZeRO optimizer's, bytes of its flat 16-bit gradient copy, of its fp32 cast) per
    strategy: ZeRO-1/2 (hf-profile stacks with ZeRO 1/2 and no optimizer offload; not FSDP, whose sharded fp32
    gradients are the parameters' own .grad) over the rank's partition; ZeRO-3 on DeepSpeed's engine one sub-group
    of its partition at a time (stage3.py step: _prepare_fp32_grad_for_sub_group flattens and casts one sub-group's
    gradients, _release_sub_group frees them). fp32 training makes no flat 16-bit copy."""
    z = b.z
    ds_step = (~b.mega) & ((z == 1) | (z == 2)) & (~b.offload_opt) & (b.name != "fsdp")
    z3_step = (~b.mega) & (z >= 3) & (~b.offload_opt) & b.ds_engine
    deepspeed = ds_step | z3_step
    if opt_params is None:
        return deepspeed, 0.0, 0.0
    fp32 = min(float(b.c["optimizer_step"]["fp32_grad_cast_bytes_per_param"]), b.master_grad_bytes)
    sub_group = float(b.c["optimizer_step"]["zero3_sub_group_params"])
    elems = np.where(deepspeed, np.where(z3_step, np.minimum(opt_params, sub_group), opt_params), 0.0)
    return deepspeed, (b.w16 if b.w16 < fp32 else 0.0) * elems, fp32 * elems


def _zero_pools(b: _Batch, items: dict[str, Any], states: _States) -> tuple[Any, Any]:
    """(bytes DeepSpeed ZeRO-3's reduce stream keeps reserved, bytes the optimizer step's blocks reserve beyond the
    forward / backward's) on one stage (estimate.zero_pools), full training without the optimizer offloaded; the
    forward / backward `items` before the step's. The stream's bucket copy: a full reduce bucket of 16-bit gradients,
    at most the stage's trainable parameters; its partition: the optimizer's (ZeRO-3 shards them alike). The range
    the forward / backward freed on the default stream by the step: its items less the states the step keeps, the
    framework buffers (the persistent buckets; ZeRO-3's gathered weights, on the all-gather stream), the CUDA context,
    NCCL's buffers and the fragmentation allowance (slivers no large block takes)."""
    zero = np.zeros(b.t.shape)
    if not b.training.trains_base_weights or not np.any((b.z >= 1) & ~b.mega):
        return zero, zero
    m = b.model
    _, _, reduce = deepspeed_zero3_buckets(b.ds_buckets, m.hidden)
    bucket = b.w16 * np.minimum(reduce, states.trainable_pg)
    z3 = b.ds_engine & (b.z >= 3) & ~b.offload_opt
    stream = np.where(z3, zero_pools.reduce_stream_bytes(bucket, states.opt_params, b.w16,
                                                         b.training.precision == "fp16", b.expandable), 0.0)
    deepspeed, flat_b, fp32_b = _deepspeed_step_blocks(b, states.opt_params)
    head_grad = b.w16 * float(m.vocab) * float(m.hidden) / b.t  # the LM head's (or embedding's) 16-bit gradient
    fb_largest = np.maximum(items.get("logits", 0.0), head_grad)
    kept = (*STEP_STATE_ITEMS, "framework_buffers", "cuda_context", "nccl_buffers", "fragmentation")
    freed = sum(v for k, v in items.items() if k not in kept)
    step = np.where(deepspeed, zero_pools.step_segment_bytes(flat_b, fp32_b, fb_largest, freed, b.expandable), 0.0)
    return stream + zero, step + zero


def _offload_grad_peak(b: _Batch, items: dict[str, Any], total: Any, detail: bool) -> Any:
    """The forward / backward total with the end of the backward on the rank owning the embedding, under DeepSpeed
    ZeRO-1/2 with the optimizer offloaded (deepspeed v0.14.2 stage_1_and_2.py; the HF Trainer's ZeRO without fsdp).
    The embedding's gradient is the backward's last and, at more than reduce_bucket_size elements, is reduced from
    its own .grad (reduce_independent_p_g_buckets_and_remove_grads: extra_large_param_to_reduce): average_tensor ->
    allreduce_and_scatter -> allreduce_bucket all-reduces a flattened copy, which ProcessGroupNCCL records on its
    stream, so the caching allocator keeps the block active until that stream passes it; then, on the rank whose
    partition holds it, copy_grads_in_partition's cpu_offload branch takes set_norm_for_param_grad_in_gpu's
    `accumulated_grad.data.double().norm(2)` of its partition slice (8 B an element) before the fp32 copy to the host.
    The activations are freed by then; the weights and the gradient item (standing for the offload path's two 16-bit
    buffers, the largest parameter's temp_grad_buffer_for_gpu_offload and the reduce bucket) stay. Full training
    only."""
    z = b.z
    off = (~b.mega) & ((z == 1) | (z == 2)) & b.offload_opt & (b.name != "fsdp")
    if not (b.training.trains_base_weights and np.any(off)):
        return total
    emb = float(b.pre.layout.embedding) / b.emb_t
    slice_p = np.minimum(emb, b.shard(float(b.model.params_total), 0.0, 1))  # the embedding within one partition
    fp64 = float(b.c["optimizer_step"]["offload_norm_copy_bytes_per_param"])
    phase = {key: items[key] for key in STEP_STATE_ITEMS if key in items}
    phase["offload_grad_copies"] = np.where(off, 2.0 * b.w16 * emb + fp64 * slice_p, 0.0)
    for key in ("framework_buffers", "cuda_context", "nccl_buffers"):
        if key in items:
            phase[key] = items[key]
    if "fragmentation" in items:
        alloc = sum(v_ for k_, v_ in phase.items() if k_ not in ("cuda_context", "nccl_buffers"))
        phase["fragmentation"] = b.c["framework_overhead"]["allocator_fragmentation_fraction"] * alloc
    phase_total = sum(phase.values())
    wins = off & (phase_total > total)
    if detail and np.any(wins):
        for key in set(items) | set(phase):
            items[key] = np.where(wins, phase.get(key, 0.0), items.get(key, 0.0))
    return np.where(wins, phase_total, total)


def _paged_optimizer(b: _Batch, items: dict[str, Any], host: Any) -> tuple[Any, Any]:
    """A paged optimizer by name (paged_adamw, paged_adamw8bit): the paged optimizer (bitsandbytes, CUDA unified
    memory) moves states page by page to the GPU during the update and evicts them under pressure (QLoRA Sec. 3),
    so they do not set the GPU peak; they need host RAM. Returns the stage's host bytes and its paged bytes. QLoRA
    alone does not page: HF Trainer's default optim (adamw_torch), Unsloth's adamw_8bit, torchtune's QLoRA configs
    (torch.optim.AdamW) and DeepSpeed's AdamW keep the adapters' states on the GPU; only the paged_* optimizers use
    unified memory."""
    paged = np.zeros(b.t.shape)
    if b.training.optimizer.startswith("paged_"):
        paged = items["optimizer_states"] + paged
        items["optimizer_states"] = np.zeros(b.t.shape)
    return host + paged, paged


def _stage_bytes(b: _Batch, g: _Stage, options: MemoryOptions, detail: bool) -> dict[str, Any]:
    """One stage's total, host bytes and (detail=True) items: model states, activations, the QLoRA paged optimizer,
    overheads, then the optimizer-step peak."""
    items: dict[str, Any] = {}
    states = _model_states(b, g, items)
    _activations(b, g, items)
    host, paged = _paged_optimizer(b, items, states.host)
    host = _offload_and_fuse(b, g, items, host)
    step_states = {k: items[k] for k in STEP_STATE_ITEMS if k in items}  # every gradient, whichever phase wins
    rerun_end, rerun_step = _held_rerun_graphs(b, g)
    if np.any(rerun_step):
        items["held_rerun_graphs"], step_states["held_rerun_graphs"] = rerun_end, rerun_step
    loss_phase = _backward_phases(b, g, items, _fsdp2_phase_units(b, options))
    # the after-step figure for the detailed estimate only (not on the search's path)
    after_step = (sum(step_states.values()) + _main_grad_copy(b, states.opt_params) + _megatron_fsdp_sync_bytes(b)
                  if detail else None)
    if options.overheads:
        _overheads(b, g, items, states.trainable_pg, loss_phase)
    fb_total = sum(items.values())
    for key in ("loss_path_segments", "freed_gradient_segments"):
        seg = items.get(key, 0.0)
        if np.any(seg):  # a cudaMalloc that fails frees every wholly free segment and retries (allocator.py)
            items[key] = np.minimum(seg, np.maximum(b.capacity - (fb_total - seg), 0.0))
            fb_total = fb_total - seg + items[key]
    # the forward / backward phase's total and loss path, for the allocator's growth (detailed estimate only)
    loss_path = sum(items.get(k, 0.0) for k in allocator.LOSS_PATH_ITEMS) if detail else None
    stream, step_segs = _zero_pools(b, items, states) if detail else (0.0, 0.0)
    fb_total = _offload_grad_peak(b, items, fb_total, detail)
    total, step_peak = _optimizer_step_peak(b, items, step_states, fb_total, states.opt_params, detail)
    total, init_peak = _ddp_init_peak(b, g, items, total, detail)
    step_peak = np.where(init_peak, 2, step_peak.astype(int))
    # reserved beyond the peak: the reduce stream's pool and the step's own segments beside the forward / backward's
    zero_pool = stream + np.maximum(fb_total + step_segs - total, 0.0) if detail else None
    return {"total": total, "host": host, "items": items if detail else None, "n_layers": g.n_layers,
            "step_peak": step_peak, "paged": paged, "after_step": after_step, "fb_total": fb_total,
            "loss_path": loss_path, "zero_pool": zero_pool}


def _megatron_fsdp_sync_bytes(b: _Batch) -> Any:
    """Bytes of the unsharded buckets Megatron-FSDP's start_param_sync leaves gathered after the optimizer step, into
    the next forward (megatron_fsdp.param_sync_bucket_params: the input embedding's bucket and the layer buckets its
    prefetch window adds), in the 16-bit weights' dtype: zero 3 on a style with megatron_fsdp_hooks (the
    megatron-core style's fsdp full, optim_grads_params) over a shard group of 2 or more (at one rank the weight
    buffer is whole: DataParallelBuffer is_data_distributed needs a group above 1), full training, one pipeline stage
    (a later stage's first bucket is a layer's: not told apart). The after-step figure only: the forward's own window
    and the backward's reduce queue are the gathered layers of `_overheads`. docs/known-gaps.md 306 (b)."""
    if b.name == "auto" or not style_option(b.name, "megatron_fsdp_hooks") or not b.training.trains_base_weights:
        return 0.0
    m = b.model
    first = megatron_fsdp.embedding_bucket_params(m.vocab, m.hidden, bool(m.tied_embeddings), b.t)
    params = megatron_fsdp.param_sync_bucket_params(first, b.largest_layer_params, m.layers,
                                                    style_number(b.name, "megatron_fsdp_window_floor_params"))
    return np.where((b.z >= 3) & (b.dpc > 1) & (b.p == 1), b.w16 * params, 0.0)


def _main_grad_copy(b: _Batch, opt_params: Any) -> Any:
    """Bytes the optimizer step leaves allocated beyond the model states until the next step's zero_grad: Megatron-Core
    with a bf16 gradient buffer (grad_reduce_in_fp32 false) gives each fp32 main parameter (shard) an fp32 copy of
    its gradient as .grad (megatron/core/optimizer/distrib_optimizer.py _copy_model_grads_to_main_grads,
    `shard_main_param.grad = shard_model_grad.float()`, at d98e8a64dd; an fp32 buffer's .float() is the same tensor),
    freed by optimizer.zero_grad(set_to_none) at the start of the next train_step (megatron/training/training.py).
    Megatron-FSDP (zero 3 under the megatron profile) makes the same copy in update_main_grads (`optimizer_grad.to(
    param.dtype)`, kept in dist_main_grad) and dereferences it in its zero_grad (megatron_fsdp/param_and_grad_buffer.py,
    outside megatron_fsdp_cuda_graph_mode); DeepSpeed frees its fp32 partition gradients within the step."""
    if not b.training.trains_base_weights:
        return 0.0
    fp32 = float(b.c["optimizer_step"]["fp32_grad_cast_bytes_per_param"])
    return np.where(b.bf16_grads & (~b.offload_opt), fp32 * opt_params, 0.0)


def system_batch(model: ModelArch, training: Training, system: System, strategy: Strategy,
                 options: MemoryOptions) -> _Batch:
    """`_batch` on `system`: the card's capacity and the job's NCCL communicators (communicators.py) filled in."""
    b = _batch(model, training, strategy, options, system.accelerator)
    nccl = communicators.communicator_bytes(system, b.c["communicators"], b.t, b.p, b.d, b.cp, b.ep, b.et,
                                            pipeline_comm=not b.device_map)
    return replace(b, capacity=float(system.memory_gib * GIB), nccl_bytes=nccl)


def _evaluate(
    model: ModelArch, training: Training, system: System, strategy: Strategy, options: MemoryOptions,
    detail: bool,
) -> dict[str, Any]:
    """Bytes per GPU on the first, the last and (p > 2) the middle pipeline stage that can hold the most, for
    every strategy (numpy, no Python loops over strategies). Returns totals, the worst stage, and (detail=True)
    every item per stage (`_stage_bytes`)."""
    b = system_batch(model, training, system, strategy, options)
    results: dict[str, Any] = {}
    for stage, g in _stages(b).items():
        results[stage] = _stage_bytes(b, g, options, detail)
    worst_stage, worst = _worst_stage(b.p, results)
    per_stage = np.broadcast_arrays(*(results[k]["step_peak"] for k in results))
    step_peak = np.choose(worst_stage, per_stage)
    host = np.max(_over_stages(b.p, results, "host", 0.0), axis=0)
    return {"worst": worst, "worst_stage": worst_stage, "step_peak": step_peak, "host": host,
            "stages": results, "mega": b.mega, "arrays": b.s, "name": b.name, "titan": b.titan}


def _over_stages(p: np.ndarray, results: dict[str, dict[str, Any]], key: str, absent: float) -> np.ndarray:
    """`key` of every evaluated stage stacked (stage, strategy), `absent` where a strategy has no such stage (the
    last needs p > 1, stage 1 as a middle stage p > 2)."""
    exists = {"first": True, "last": p > 1}
    return np.stack(np.broadcast_arrays(*(np.where(exists.get(k, p > 2), v[key], absent)
                                          for k, v in results.items())))


def _worst_stage(p: np.ndarray, results: dict[str, dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """(index into `results` of the stage that holds the most, its total) per strategy; the first on a tie."""
    totals = _over_stages(p, results, "total", -np.inf)
    worst_stage = np.argmax(totals, axis=0)
    return worst_stage, np.take_along_axis(totals, worst_stage[None], axis=0)[0]


def memory_per_gpu_bytes(
    model: ModelArch, training: Training, system: System, strategy: Strategy,
    options: MemoryOptions = DEFAULT_OPTIONS,
) -> tuple[np.ndarray, np.ndarray]:
    """Worst-GPU bytes for each strategy in `strategy` (numpy arrays allowed) and a mask of those that fit
    in `system.memory_gib` (and, with CPU offload and a known `host_ram_gib`, in host RAM).
    Apply `validate.valid_mask` too: bytes of an impossible strategy (e.g. a zero degree) are not meaningful
    and such a strategy never fits."""
    worst, fits, _ = memory_arrays(model, training, system, strategy, options)
    return worst, fits


def memory_arrays(
    model: ModelArch, training: Training, system: System, strategy: Strategy,
    options: MemoryOptions = DEFAULT_OPTIONS,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`memory_per_gpu_bytes`' (worst-GPU bytes, fits) and the bytes each strategy keeps in a node's host RAM
    (MemoryEstimate.host_bytes_per_node: offloaded states, paged optimizer states; 0 without), so a search that
    judged the host RAM hands the figure on rather than estimating the chosen strategy again."""
    with np.errstate(divide="ignore", invalid="ignore"):
        r = _evaluate(model, training, system, strategy, options, detail=False)
        # framework auto with stacks that run the experts differently (Llama 4: dense under hf): each part as run
        split = dense_all_split(strategy, model, training.method in ("pretrain", "cpt"))
        if split is not None:
            dense = _evaluate(model, training, system, stating_dense_all(strategy), options, detail=False)
            r = {key: np.where(split, dense[key], r[key]) for key in ("worst", "host")}
    worst = r["worst"]
    fits = np.isfinite(worst) & (worst <= system.memory_gib * GIB)
    host = np.broadcast_to(np.asarray(r["host"], float) * min(system.gpus_per_node, max(system.gpus, 1)),
                           np.shape(worst))
    if system.host_ram_gib > 0:
        fits = fits & (host <= system.host_ram_gib * GIB)
    return worst, fits, host


@dataclass(frozen=True)
class MemoryEstimate:
    """Memory on the worst GPU of one strategy."""

    per_gpu_bytes: float
    capacity_bytes: float
    items_bytes: dict[str, float]  # the worst GPU's named items
    worst_gpu: str
    worst_stage: int
    stage_bytes: dict[str, float]  # total of the first, the last and (p > 2) the middle stage 1
    host_bytes_per_node: float
    host_capacity_bytes: float
    memory_profile: str  # hf | megatron (`PROFILES`), from the framework through `estimate.framework`
    notes: tuple[str, ...] = field(default=())
    peak_phase: str = PEAK_PHASES[0]  # when the worst GPU peaks: "forward/backward" or "optimizer step"
    # allocated on the worst GPU between steps (after the optimizer step, before the next zero_grad): the model states
    # and what the step leaves held (`_main_grad_copy`); 0 = not computed
    after_step_bytes: float = 0.0
    # reserved beyond the peak by the caching allocator under an unpacked run's varying micro-batch lengths, capped at
    # the card (estimate.allocator.growth_bytes): what torch.cuda.max_memory_reserved reads on a card with room, not a
    # requirement (a failing cudaMalloc releases the cached segments and retries); 0 = none
    allocator_growth_bytes: float = 0.0
    # reserved on the device after model init where the init's transients leave cached segments (torchtune 0.1's
    # QLoRA, estimate.nf4_init; CUDA context and NCCL buffers included), capped at the card; the training steps reuse
    # those segments, so the reserved peak is the larger of this and the steps'; 0 = none
    init_reserved_bytes: float = 0.0
    # reserved beyond the peak under DeepSpeed ZeRO by the caching allocator's pool of ZeRO-3's reduce stream and, with
    # the default segments, the optimizer step's flat gradient blocks cut apart from the forward / backward's
    # (estimate.zero_pools; reserved_peak_bytes caps the sum at the card): what torch.cuda.max_memory_reserved reads, not
    # a requirement; 0 = none
    zero_pool_bytes: float = 0.0

    @property
    def reserved_peak_bytes(self) -> float:
        """The peak with the allocator's growth and DeepSpeed ZeRO's pools (on the device: CUDA context and NCCL buffers
        included), or the init's reserved bytes where larger, at most the card."""
        grown = max(self.per_gpu_bytes + self.allocator_growth_bytes + self.zero_pool_bytes, self.init_reserved_bytes)
        return max(self.per_gpu_bytes, min(grown, self.capacity_bytes))

    @property
    def fits(self) -> bool:
        gpu_ok = self.per_gpu_bytes <= self.capacity_bytes
        host_ok = self.host_capacity_bytes <= 0 or self.host_bytes_per_node <= self.host_capacity_bytes
        return bool(gpu_ok and host_ok)

    @property
    def breakdown_bytes(self) -> dict[str, float]:
        out = dict.fromkeys(GROUPS, 0.0)
        for name, value in self.items_bytes.items():
            out[ITEM_DOCS[name][0]] += value
        return out

    def to_dict(self) -> dict[str, Any]:
        def g(x: float) -> float:
            return round(float(x) / GIB, 4)

        return {
            "per_gpu_gib": g(self.per_gpu_bytes),
            "capacity_gib": g(self.capacity_bytes),
            "fits": self.fits,
            "headroom_gib": g(self.capacity_bytes - self.per_gpu_bytes),
            "breakdown_gib": {k: g(v) for k, v in self.breakdown_bytes.items()},
            "worst_gpu": self.worst_gpu,
            "items": {k: {"gib": g(v), "group": ITEM_DOCS[k][0], "what": ITEM_DOCS[k][1]}
                      for k, v in self.items_bytes.items()},
            "stages_gib": {k: g(v) for k, v in self.stage_bytes.items()},
            "host_gib_per_node": g(self.host_bytes_per_node),
            "host_capacity_gib": g(self.host_capacity_bytes),
            "framework": self.memory_profile,  # JSON key kept: the memory profile the strategy resolved to
            "peak_phase": self.peak_phase,
            "after_step_gib": g(self.after_step_bytes),
            "allocator_growth_gib": g(self.allocator_growth_bytes),
            "init_reserved_gib": g(self.init_reserved_bytes),
            "zero_pool_gib": g(self.zero_pool_bytes),
            "notes": list(self.notes),
        }


# the pipeline rank of each evaluated stage (`_stages`) in a p-stage pipeline
STAGE_RANK = {"first": lambda p: 0, "middle": lambda p: 1, "last": lambda p: p - 1}


def _stage_rank(stage: str, p: int) -> int:
    """The pipeline rank of an evaluated stage: STAGE_RANK's, or a later middle rank's middle_r<rank>."""
    return STAGE_RANK[stage](p) if stage in STAGE_RANK else int(stage.removeprefix("middle_r"))


def _describe(model: ModelArch, stage: str, p: int, n_layers: int, training: Training) -> str:
    parts = []
    if stage == "first" or p == 1:
        parts.append(msg("part_embedding"))
    parts.append(msg("part_layers", n=n_layers))
    if stage == "last" or p == 1:
        parts.append(msg("part_head_fp32_logits" if training.precision != "fp32" else "part_head_logits"))
    if p == 1:
        return msg("worst_every_gpu", parts=tuple(parts))
    return msg("worst_stage", index=_stage_rank(stage, p), stages=p, parts=tuple(parts))


def estimate_memory(
    model: ModelArch, training: Training, system: System, strategy: Strategy,
    options: MemoryOptions = DEFAULT_OPTIONS, *, check: bool = True,
) -> MemoryEstimate:
    """Memory on the worst GPU of one strategy (scalar fields), with every item named.

    Raises StrategyError(rule, detail) for a strategy that breaks a rule of `validate.RULES`; soft-rule
    warnings go to `notes`. `check=False` skips the rules (memory limits alone: `fit.py` probes
    micro-batches and lengths that the global batch or the GPU count need not allow)."""
    require_one_strategy(strategy, "estimate_memory", "memory_per_gpu_bytes")
    warnings = check_strategy(model, training, system, strategy) if check else []
    r = _evaluate(model, training, system, strategy, options, detail=True)
    stage = list(r["stages"])[int(np.asarray(r["worst_stage"]).reshape(-1)[0])]
    sd = r["stages"][stage]
    items = {k: float(np.asarray(val).reshape(-1)[0]) for k, val in sd["items"].items()}
    for step_key in ("optimizer_step_grad_buffers", "optimizer_step_foreach_temp", "offload_grad_copies",
                     "ddp_init_param_copies"):
        if not items.get(step_key):
            items.pop(step_key, None)
    p = int(strategy.pp)
    n_layers = int(np.asarray(sd["n_layers"]).reshape(-1)[0])
    mega = bool(r["mega"].reshape(-1)[0])
    notes = list(warnings)
    if training.optimizer.startswith("paged_"):
        notes.append(msg("note_paged_optimizer"))
    phase = int(np.asarray(r["step_peak"]).reshape(-1)[0])
    if phase:
        notes.append(msg("note_zero_step_peak" if phase == 1 else "note_ddp_init_peak"))
    if int(np.asarray(strategy.vpp)) > 1:
        notes.append(msg("note_interleaved_average_layer"))
    growth = _allocator_growth(training, strategy, r, sd, float(r["worst"].reshape(-1)[0]))
    if growth > 0:
        notes.append(msg("note_allocator_growth", gib=f"{growth / GIB:.1f}"))
    zero_pool = float(np.asarray(sd["zero_pool"]).reshape(-1)[0])
    if zero_pool > 0:
        notes.append(msg("note_zero_pool", gib=f"{zero_pool / GIB:.1f}"))
    per_node = min(system.gpus_per_node, max(system.gpus, 1))
    stages = {k: v for k, v in r["stages"].items() if not k.startswith("middle") or p > 2}  # middle ones at p > 2
    return MemoryEstimate(
        per_gpu_bytes=float(r["worst"].reshape(-1)[0]),
        capacity_bytes=float(system.memory_gib * GIB),
        items_bytes=items,
        worst_gpu=_describe(model, stage, p, n_layers, training),
        worst_stage=_stage_rank(stage, p),
        stage_bytes={k: float(np.asarray(v["total"]).reshape(-1)[0]) for k, v in stages.items()},
        host_bytes_per_node=float(r["host"].reshape(-1)[0]) * per_node,
        host_capacity_bytes=float(system.host_ram_gib * GIB),
        memory_profile="megatron" if mega else "hf",
        notes=tuple(notes),
        peak_phase=PEAK_PHASES[int(np.asarray(r["step_peak"]).reshape(-1)[0])],
        after_step_bytes=float(np.asarray(sd["after_step"]).reshape(-1)[0]),
        allocator_growth_bytes=growth,
        init_reserved_bytes=nf4_init.floor_on_device(nf4_init.init_floor_bytes(model, training, strategy, r["name"]),
                                                     items),
        zero_pool_bytes=zero_pool,
    )


def _allocator_growth(training: Training, strategy: Strategy, r: dict[str, Any], sd: dict[str, Any],
                      peak: float) -> float:
    """Reserved bytes beyond the worst GPU's peak: its forward / backward total plus the caching allocator's growth of
    that phase's loss path (estimate.allocator.growth_bytes), less the peak; where the optimizer step peaks higher,
    its tensors take the cached segments the activations freed, so only the part above it counts."""
    expandable = allocator.expandable_segments(strategy, r["name"], r["titan"])
    loss_path = np.asarray(sd["loss_path"], float)
    growth = allocator.growth_bytes(training, loss_path, r["arrays"]["dp"], r["arrays"]["micro_batch"], expandable)
    fb_total = float(np.asarray(sd["fb_total"]).reshape(-1)[0])
    return max(0.0, fb_total + float(np.asarray(growth).reshape(-1)[0]) - peak)
