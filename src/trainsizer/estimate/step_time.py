"""Step time, throughput, MFU/HFU of a training job under a parallel strategy (scalar and vectorised).

Assembly (each term names its origin):
- Per micro-batch on the most loaded pipeline stage: compute (compute.py) + exposed TP / CP / EP
  communication (comm.py). TP: Megatron column/row-parallel layers do 2 all-reduces (or, with SP, 2 all-gather
  + 2 reduce-scatter of the same volume) in forward and 2 in backward per layer (Shoeybi 2019 s3;
  Korthikanti 2022 s4.2.2); full recompute repeats the forward ones.
- Step = m x t_mb + bubble (p-1)/(v m) x m x t_mb + pipeline p2p + exposed DP/ZeRO communication + optimizer
  + data loading (Narayanan 2021 s2.2, s3.5); DualPipe styles use its bubble instead (pipeline.py).
- The slowest stage sets the pace: uneven splits put one more layer on the first L mod p stages, the last
  stage adds the LM head + loss; t_mb is that of whichever of the two is slower (pipeline.py).
- What overlaps with what is the framework's perf style (perf_constants.yaml `frameworks:`), taken from
  `Strategy.framework` through `estimate.framework` ("auto": per strategy, Megatron-style or HF);
  `framework_style=` overrides it. FP8: GEMMs at the FP8 peak, attention in 16-bit (calibration.rates).
- DeepSpeed PipelineEngine (`serial_pipeline`): per slot 2 activation + 2 gradient transfers in blocking calls,
  each TP rank sending 1/t of the tensor and the receiver all-gathering it over TP (pipe/engine.py
  PartitionedTensor); bf16 with ZeRO <= 1 adds every micro-batch's gradients into fp32 after its backward
  (BF16_Optimizer.update_hp_grads, `_hp_grad_accum`).
- DP gradient reduction (Megatron/DDP style): bucketed and overlapped with the backward of the last
  micro-batch; what does not fit in that window and the last bucket stay exposed (Li et al. 2020, PyTorch
  DDP, VLDB s3.2.3). Distributed optimizer / ZeRO-1/2: reduce-scatter grads + all-gather params (Rajbhandari
  2020 s5). ZeRO-3 / FSDP: per micro-batch all-gather params in forward and backward + reduce-scatter grads,
  prefetched one unit ahead (Zhao et al. 2023, PyTorch FSDP s3.3).
- MFU = model FLOPs / (step x GPUs x dense peak of the training precision) (PaLM appendix B); HFU counts the
  recompute (Korthikanti 2022 s6).
"""

from __future__ import annotations

import collections
import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from functools import lru_cache
from typing import Any

import numpy as np

from trainsizer.errors import SpecError, TrainsizerError, did_you_mean, quoted, unknown_name
from trainsizer.estimate import comm, compute, megatron_fsdp, moe_load, pipeline, sample_lengths
from trainsizer.estimate.activations import low_precision_share, op_sac_unsaved_share, saved_gemm_input_bytes
from trainsizer.estimate.calibration import (
    Calibration,
    PerfConstants,
    causal_tiles,
    fp4_training,
    load_constants,
    rates,
)
from trainsizer.estimate.device_map import card_shares
from trainsizer.estimate.flops import (
    forward_flops_per_token,
    hardware_flops_per_token,
    layer_flops,
    model_flops_per_token,
    router_score_bias,
)
from trainsizer.estimate.framework import (
    deepspeed_zero3_buckets,
    dense_all_split,
    family_listed,
    fp8_primary_weights_default,
    mcore_has,
    routed_model,
    stating_dense_all,
    torch_compile_of,
)
from trainsizer.estimate.host_sync import drain_excess_s, host_figure
from trainsizer.estimate.inputs import System, Training
from trainsizer.estimate.kbit_stream import Fp32Stream, fp32_stream
from trainsizer.estimate.mamba import mtp_block_layers
from trainsizer.estimate.model_states import (
    MLP_INPUT_LINEARS,
    ROW_PARALLEL_LINEARS,
    check_training,
    deepspeed_layer_modules,
    deepspeed_zero3_kept_params,
    dense_linear_widths,
    frozen_base_bytes,
    kbit_upcast,
    load_memory_constants,
    lora_adapted_widths,
    lora_dense_linears,
    lora_dropout_on_output,
    lora_targets,
    lora_trainable_params,
    mtp_passes,
    nf4_fp16_compute,
    nf4_recast,
    optimizer_impl,
)
from trainsizer.estimate.optimizer_kernels import bnb_8bit_kernel_s, bnb_block
from trainsizer.estimate.partial_recompute import strategy_chunk_shares
from trainsizer.estimate.validate import check_strategy, require_one_strategy, shard_groups, strategy_arrays
from trainsizer.messages import msg
from trainsizer.models.arch import ModelArch
from trainsizer.names import (
    ACTIVATION_KERNELS,
    ADAMW8BIT_OPTIMIZERS,
    ATTENTION_KERNELS,
    BITSANDBYTES_OPTIMIZERS,
    CHECKPOINT_IMPLS,
    DDP_IMPLS,
    EAGER_ATTENTION_IMPLS,
    EXPERTS_IMPLEMENTATIONS,
    FLEX_DISPATCHERS,
    FSDP_MODES,
    FSDP_RESHARDS,
    FSDP_VERSIONS,
    MOE_AUX_LOSSES,
    MOE_DISPATCHERS,
    NF4_DECODES,
    NORM_KERNELS,
    ROPE_KERNELS,
    ZERO3_BUCKET_SIZES,
    ZERO3_EXPERT_FETCHES,
)

PIPELINE_SCHEDULES = ("1f1b", "dualpipe")
BREAKDOWN_KEYS = ("compute", "tp_comm", "cp_comm", "ep_comm", "dp_comm", "pp_bubble", "pp_comm", "optimizer",
                  "data_loading", "act_offload")


@dataclass(frozen=True)
class PerfStyle:
    """A framework's perf style: how it schedules communication (what overlaps with what).

    Not the framework name (`Strategy.framework`, mapped to a style by `estimate.framework`) nor the memory
    profile (`memory.PROFILES`)."""

    name: str
    tp_comm_overlap: bool = False  # Megatron-Core --tp-comm-overlap (userbuffers)
    # share of the TP communication hidden when it overlaps (tp_comm_overlap), for a style whose overlap is not
    # Transformer Engine's userbuffers; nan: perf_constants.yaml comm.tp_overlap_fraction (TE's, counted)
    tp_overlap_fraction: float = math.nan
    dp_overlap: bool = True  # gradient reduction bucketed and overlapped with backward
    # parameters per gradient bucket (the last one is exposed): every style states its own (perf_constants.yaml
    # `frameworks:`, _load_perf_styles refuses one without), so no number here
    grad_bucket_params: float = math.nan
    # buckets grow with the DP size so ring chunks stay bandwidth-bound (Megatron-Core DDP: max(4e7, 1e6 x dp))
    grad_bucket_params_per_dp_rank: float = 0.0
    param_gather_overlap: bool = False  # distributed-optimizer param all-gather hidden in next forward
    zero3_prefetch: bool = True  # ZeRO-3/FSDP param all-gathers prefetched one unit ahead
    # the prefetched ZeRO-3 / FSDP collectives' NCCL kernels run on a high-priority stream, so they wait for no GEMM
    # (step_time._collective_launch_wait; docs/known-gaps.md 144): FSDP2 on torch >= 2.8 (sync collectives on its
    # priority -1 streams), TORCH_NCCL_HIGH_PRIORITY=1; false for DeepSpeed (every release), FSDP1, FSDP2 before 2.8
    collective_high_priority: bool = False
    zero3_bucket_params: float = 0.0  # parameters per ZeRO-3 collective; 0 = one per decoder layer
    zero3_nic_aggregation: bool = True  # ZeRO-3 rings spread over all NICs of a node (NCCL multi-channel)
    # coalesced ZeRO-3 all-gathers per decoder layer and pass (0: one; DeepSpeed fetches module by module),
    # prefetched or not, and without prefetch (_zero3_on_demand) whether the gradient reduce-scatter still overlaps
    # the backward (DeepSpeed overlap_comm)
    zero3_fetch_units_per_layer: float = 0.0
    zero3_rs_overlap: bool = False
    # stage3_max_reuse_distance of a style that fetches and releases module by module (DeepSpeed): under full recompute
    # a module whose next use lies further in the trace is released after the recompute and gathered again for its
    # backward (_zero3_regathered_share); 0 = every gathered unit is kept from the recompute to its backward (FSDP)
    zero3_max_reuse_distance_params: float = 0.0
    # DeepSpeed's stage3_prefetch_bucket_size and stage3_param_persistence_threshold (elements), the deepspeed style's:
    # framework.deepspeed_zero3_buckets reads them (zero3_bucket_sizes "deepspeed") for a stack on DeepSpeed's engine
    zero3_prefetch_bucket_params: float = 0.0
    zero3_persistence_threshold_params: float = 0.0
    # this stack runs ZeRO-3 on DeepSpeed's engine as well as on FSDP (HF Trainer / accelerate): a job on DeepSpeed's
    # (zero 3, strategy.fsdp none) takes its coordinator (_deepspeed_engine_options), one on FSDP keeps the style's
    zero3_runs_deepspeed: bool = False
    # ZeRO-3 all-gathers per layer counted from the layer's modules as DeepSpeed's coordinator issues them
    # (_deepspeed_gathers_per_layer) instead of zero3_fetch_units_per_layer
    zero3_deepspeed_fetch: bool = False
    # DeepSpeed's ZeRO-3 engine hooks every module of the model it wraps, whatever built it, and every trained
    # parameter's gradient (parameter_offload.py _register_deepspeed_module, stage3.py's gradient hooks): their host
    # calls are charged (_deepspeed_hook_excess; the deepspeed style's, taken with its engine: docs/known-gaps.md 296 (a))
    zero3_module_hooks: bool = False
    # ZeRO-3 / fsdp full on this style is Megatron-FSDP, whose per-unit hooks' host calls are charged
    # (_megatron_fsdp_host_s; the megatron-core style's: docs/known-gaps.md 306 (a))
    megatron_fsdp_hooks: bool = False
    # Megatron-FSDP's optim / optim_grads (strategy.megatron_fsdp_sharding): no FSDP unit, every module's hooks
    # charged instead (_megatron_fsdp_host_s; set by _job_options on a style with megatron_fsdp_hooks: 316 (a))
    megatron_fsdp_modules: bool = False
    # TP through DTensor (torch parallelize_module: ColwiseParallel / RowwiseParallel): every op on a sharded linear's
    # weight passes DTensor's dispatcher on the host, charged without compile (_dtensor_tp_host_s; docs/known-gaps.md
    # 313 (a))
    dtensor_tp: bool = False
    # Megatron-FSDP's prefetch window floor, in parameters (suggested_AG_prefetch_size's 1e9); read by the memory
    # estimate's after-step buckets (memory._megatron_fsdp_sync_bytes via style_number; docs/known-gaps.md 306 (b))
    megatron_fsdp_window_floor_params: float = 0.0
    # DeepSpeed's ZeRO-2 reduces the gradients every micro-batch (_zero2_reductions; the deepspeed style's, taken with
    # its engine: docs/known-gaps.md 296 (c))
    zero2_micro_batch_reduce: bool = False
    # DeepSpeed ZeRO-3's bucket sizes on DeepSpeed's engine (names.ZERO3_BUCKET_SIZES; strategy.zero3_bucket_sizes
    # overrides): "deepspeed" = zero/config.py's defaults, "auto" = the HF Trainer / accelerate fill from the hidden
    # size, whose coefficients the hf style states (framework.deepspeed_zero3_buckets)
    zero3_bucket_sizes: str = "deepspeed"
    zero3_auto_prefetch_hidden_squares: float = 0.0
    zero3_auto_persistence_hiddens: float = 0.0
    zero3_auto_reduce_hidden_squares: float = 0.0
    grad_reduce_bytes: float = 2.0  # bytes per gradient element on the wire
    ep_overlap: bool = False  # EP all-to-all hidden behind another micro-batch's compute (DualPipe-style)
    # EP dispatch / combine through the stack's own kernels (DeepSeek-V3's), not NCCL's all-to-all: the ring rates,
    # not nccl_alltoall_rates (_ep_comm)
    ep_own_kernels: bool = False
    # share of the GPU's SMs the overlapped all-to-all kernels hold while in flight, taken from that compute
    # (_overlapped_ep); DeepSeek-V3 gives 20 of the H800's 132 SMs to communication (report s3.2.2)
    ep_overlap_sm_share: float = 0.0
    # the combined 1F1B's order (combined_1f1b_layer_s): the expert MLP's weight gradient delayed past the next
    # dispatch (strategy.delay_wgrad_compute), and one hardware work queue (strategy.cuda_device_max_connections 1)
    ep_overlap_delay_wgrad: bool = True
    ep_overlap_one_queue: bool = False
    pipeline_schedule: str = "1f1b"  # "1f1b" (incl. interleaved via vpp) or "dualpipe" (DeepSeek-V3)
    attention_kernel: str = "fa2"  # "fa2" (FlashAttention-2 / Triton), "native" (cuDNN fused / FA3), "fa1" (v1)
    # how the stack's activation checkpointing re-runs a layer (names.CHECKPOINT_IMPLS; strategy.checkpoint_impl
    # overrides): reentrant_outer re-gathers each FSDP unit and loses the backward prefetch under full recompute
    # (_reentrant_outer_exposed); the other two schedule ZeRO-3 / FSDP alike
    checkpoint_impl: str = "non_reentrant"
    # whether the stack fuses element-wise work (torch.compile or its own kernels) when the job leaves
    # strategy.torch_compile unstated: false where it runs eager unless asked (the HF Trainer, torchtune, torchtitan);
    # both estimates resolve the unstated field to it (framework.torch_compile_of), the output says so
    compiles_by_default: bool = True
    # the kernel the stack's library runs where its user names none, when the style times another (hf: transformers'
    # attn_implementation defaults to sdpa, the style times flash_attention_2): the estimate then says which SDPA
    # runs on the part (_sdpa_cudnn_note); "" = the style's kernel is the library's default
    library_attention_kernel: str = ""
    # part families (catalog id prefixes, comma-separated) on which the stack itself puts cuDNN's fused attention
    # first in SDPA, whatever the torch release: a style kernel or a stated `sdpa` there is timed as `native`
    # (_stack_kernel); "" = PyTorch's own dispatch order, timed at FA2's figures
    sdpa_cudnn_families: str = ""
    # the stack's native attention is Transformer Engine's DotProductAttention, whose cuDNN backend trains only some
    # head dims on sm100 (attention.te_fused_training_sm100): others run its flash-attn backend (_te_attention_kernel)
    te_attention: bool = False
    # how DeepSpeed ZeRO-3 (zero 3 without fsdp) gathers the stack's routed experts (names.ZERO3_EXPERT_FETCHES;
    # strategy.zero3_expert_fetch overrides): "" = inside the style's gathered unit (every stack that runs its own MoE
    # modules, and FSDP); "auto" = as transformers' modules are built: per_expert under its 4.x eager loop (ModuleList
    # experts), block under v5's packed experts (step_time._deepspeed_expert_gathers)
    zero3_expert_fetch: str = ""
    # model families (ModelArch.family, comma-separated) whose transformers MoE block DeepSpeed's engine makes a ZeRO-3
    # leaf by default, so "auto" fetches their experts as one block whatever the experts implementation
    # (zero3_expert_fetch_default)
    zero3_leaf_families: str = ""
    # model families (ModelArch.family, comma-separated) whose MoE block in this framework runs every routed expert on
    # every token (strategy.experts_implementation dense_all where the job states none; framework.experts_implementation_of)
    dense_expert_families: str = ""
    # model families (ModelArch.family, comma-separated) whose transformers experts are fused 3-D parameters in every
    # release, so an eager loop's hit experts each return a whole-parameter gradient (memory: framework.
    # fused_expert_loop; time: _fused_expert_grad_time)
    fused_expert_families: str = ""
    # model families whose eager loop syncs once a layer and then runs every expert (GraniteMoeParallelExperts), not
    # a sync per hit expert (_expert_loop_excess)
    split_expert_loop_families: str = ""
    # strategy.norm_kernel: "fused" | "eager" (names.NORM_KERNELS), the layer norms' kernel in the element-wise
    # traffic (_elementwise_passes); None = the style's (eager PyTorch ops unless fused_kernels or torch.compile)
    norm_kernel: str | None = None
    # strategy.activation_kernel: "fused" | "eager" (names.ACTIVATION_KERNELS), the SwiGLU's kernel in the same
    # traffic; None = the style's (as the rest of its element-wise work)
    activation_kernel: str | None = None
    # strategy.rope_kernel: "fused" | "eager" (names.ROPE_KERNELS), RoPE's kernel in the same traffic; None = the
    # style's (rope_eager_bytes unless fused_kernels or torch.compile)
    rope_kernel: str | None = None
    # strategy.eager_attention: the element-wise chain over the scores of a non-flash attention (names.
    # EAGER_ATTENTION_IMPLS): "fused" Megatron's fused scale-mask-softmax (compute._attention_core's count),
    # "fp32_softmax" separate PyTorch ops with an fp32 softmax (perf_constants.yaml eager_attention,
    # _eager_attention_time)
    eager_attention: str = "fused"
    fused_kernels: bool = False  # the framework's own fused element-wise kernels (TE / Apex): eager or not
    fp8_weight_cache: bool = False  # FP8 weights cast once per step and reused by every micro-batch (TE)
    fp8_param_allgather: bool = False  # FSDP2 all-gathers FP8 weights (torchtitan enable_fsdp_float8_all_gather)
    selective_op_policy: bool = False  # "selective" recompute = torchtitan's per-op SAC (compute.layer_times)
    # under the per-op SAC, the attention output is in the save list (torchtitan from b39377f9f, 2025-12-01); false
    # (strategy.sac_saves_attention): the backward re-runs the attention forward (compute._selective_recompute)
    sac_saves_attention: bool = True
    # precision fp32: the stack runs fp32 GEMMs on the TF32 / XF32 tensor cores unless the job states strategy.tf32
    # (calibration.rates); false = PyTorch's default matmul precision since 1.12, "highest" (full fp32)
    fp32_matmul_tf32: bool = False
    # DeepSpeed PipelineEngine (Megatron-DeepSpeed: BLOOM, MT-NLG): blocking p2p.send / p2p.recv issued as
    # separate instructions and the gradient reduction after the pipeline flush (_pipeline, _dp_comm_replicated)
    serial_pipeline: bool = False
    # DeepSpeed PipelineEngine with TP > 1 (is_pipe_partitioned / is_grad_partitioned): each TP rank sends its
    # 1/t share of the stage's output activation (gradient) and the receiver all-gathers it over TP (_pipeline)
    p2p_partitioned_activations: bool = False
    p2p_partitioned_grads: bool = False
    # bytes per local trainable parameter per micro-batch of a separate fp32 gradient accumulation pass in bf16
    # training with ZeRO <= 1 (DeepSpeed BF16_Optimizer.update_hp_grads after every backward; _hp_grad_accum)
    hp_grad_accum_bytes: float = 0.0
    # the weight-gradient GEMM that accumulates into the main gradient under gradient accumulation fusion
    # (_wgrad_accum_rate): "te" Transformer Engine's modules, "apex" Megatron's own linear (Apex's
    # fused_weight_gradient_mlp_cuda), "" none in this stack; and whether the stack fuses when the job leaves
    # strategy.gradient_accumulation_fusion unset
    wgrad_accum_kernel: str = ""
    wgrad_accum_default: bool = False
    # fp16 ZeRO-1 step of DeepSpeed v0.3 (zero/stage1.py): overflow check and gradient norm over every local
    # gradient tensor, one host read each (_fp16_serial_checks)
    fp16_zero1_serial_checks: bool = False
    # fp16 with ZeRO <= 1: bytes per local parameter of autograd's in-place .grad accumulation on every micro-batch
    # after the first (_hp_grad_accum)
    fp16_grad_accum_bytes: float = 0.0
    # passes of the step beyond the fused update's count (_step_passes): bytes per parameter this rank updates (the
    # gradient norm's read, a separate master -> model weight copy) and per local trainable parameter (zeroing the
    # full gradient buffer before the next step); perf_constants.yaml frameworks:
    step_update_extra_bytes: float = 0.0
    grad_buffer_zero_bytes: float = 0.0
    # DeepSpeed ZeRO-3's own passes around the update (stage3.py step, v0.6+ prefetched engine), bytes per parameter
    # this rank updates; where > 0 at zero 3 they replace step_update_extra_bytes and clip_scales_always (the stack's
    # own clipping does not run on DeepSpeed's engine: _step_passes); the deepspeed style's, taken by a stack on its
    # engine (_deepspeed_engine_options)
    zero3_step_update_bytes: float = 0.0
    # DeepSpeed's engine (v0.6+) synchronizes the device at both ends of every micro-batch and waits for its last
    # gradient bucket, so the input embedding's all-gather (the first fetch) and its gradient's reduce-scatter (the
    # last) are a micro-batch's edges (_deepspeed_micro_batch_edges); the deepspeed style's, taken with its engine
    zero3_microbatch_syncs: bool = False
    # DeepSpeed's engine (v0.6+) copies each full gradient on its reduce stream before reduce-scattering it (into its
    # bucket, the coalesced interleave, the pre-divide: _deepspeed_grad_copies); the deepspeed style's, taken with
    # its engine
    zero3_grad_copies: bool = False
    # torch FSDP1 divides each unit's padded unsharded gradient in place by the predivide factor before its
    # reduce-scatter, on the post-backward stream (_fsdp1_predivide_s); the FSDP1 styles', not on DeepSpeed's engine
    fsdp1_grad_predivide: bool = False
    # torch FSDP1's original parameters are autograd views of each unit's flat parameter (torch.split in
    # _get_unflat_views), so autograd's SplitWithSizesBackward concatenates their gradients into the flat gradient
    # on the compute stream before the post-backward hook (_fsdp1_view_grad_cat_s); the FSDP1 styles', not on
    # DeepSpeed's engine
    fsdp1_view_grad_cat: bool = False
    # the style's loop runs all but a step's last micro-batch under FSDP1's no_sync (the hf style): read by the memory
    # estimate only (estimate/fsdp1_no_sync.py), not timed here
    fsdp1_accumulate_no_sync: bool = False
    # the gradient buffer cleared is the DDP buffer in the reduce dtype (grad_reduce_bytes per local trainable
    # parameter: Megatron-Core zero_grad_buffer), not grad_buffer_zero_bytes
    grad_buffer_reduce_dtype: bool = False
    # the step casts its share of a 16-bit gradient buffer to fp32 main gradients (Megatron-Core
    # _copy_model_grads_to_main_grads `shard_model_grad.float()`: read 2, write 4 B per updated parameter)
    main_grad_cast: bool = False
    # replicated data parallelism through torch DDP (strategy.ddp_impl torch; names.DDP_IMPLS): each 16-bit
    # gradient copied into its bucket and back once a step (_step_passes)
    torch_ddp: bool = False
    # torch-style clipping: every gradient the update reads multiplied in place by the clamped coefficient,
    # whether or not the norm exceeds the threshold (torch.nn.utils.clip_grad_norm_; _step_passes)
    clip_scales_always: bool = False
    # without ZeRO / FSDP, gradient accumulation in `.grad` through autograd: every micro-batch after the first of a
    # step adds its 16-bit gradients into them in place (AccumulateGrad; torch DDP's no_sync micro-batches, the HF
    # Trainer's and torchtune's accumulation steps): _grad_accum_bytes
    autograd_grad_accum: bool = False
    split_projections: bool = False  # q, k, v and gate, up are separate nn.Linear GEMMs (torchtitan, HF Llama)
    # padded micro-batches of unpacked samples: the attention kernel skips the padding, so each sample attends
    # over its own length (transformers' _flash_attention_forward unpads by the attention mask: _upad_input,
    # flash_attn_varlen_func); otherwise it runs over the padded rows (_rows)
    unpads_padding: bool = False
    # eager RoPE: forward HBM bytes per element of q and k as the model code runs it (perf_constants.yaml
    # frameworks:; HF's rotate_half and torchtitan's complex product 20, torchtune's float stack 48)
    rope_eager_bytes: float = 20.0
    # its backward's bytes per element (perf_constants.yaml frameworks:; HF's counted at 20, docs/known-gaps.md 304 (a));
    # twice the forward where not counted (the layer's rule: step_time._eager_chain_backward_time charges the difference)
    rope_eager_backward_bytes: float = 40.0
    # its fused RoPE takes no YaRN attention factor (Transformer Engine fused_apply_rotary_pos_emb), so a model whose
    # factor is not 1 (ModelArch.rope_attention_factor) runs RoPE unfused (Megatron-Core: _rope_unfused_time)
    rope_mscale_unfused: bool = False
    # its unfused RoPE over THD-packed rows (strategy.rope_kernel eager) runs each packed sub-sequence on its own after
    # two host syncs a call (Megatron-Core rope_utils._apply_rotary_pos_emb_thd: _thd_rope_host)
    rope_thd_loop: bool = False
    # the attention wrapper copies q, k, v into flash's packed layout and the output back (GPT-NeoX v1.0; a job's
    # strategy.flash_qkv_pack, no style's default: _flash_qkv_pack_time)
    flash_qkv_pack: bool = False
    # ZeRO-1 all-reduces the gradients, not RS (DeepSpeed PipelineEngine v0.3 buffered_allreduce_fallback,
    # BF16_Optimizer); ZeRO-2 reduces in hooks either way
    zero1_grad_allreduce: bool = False
    # lowest ZeRO stage whose gradient reduction overlaps the backward; below it the gradients are reduced after the
    # last micro-batch's backward (DeepSpeed engine.allreduce_gradients at the accumulation boundary: ZeRO-0
    # buffered_allreduce_fallback, ZeRO-1 stage1.py reduce_scatter_gradients in v0.3 / stage_1_and_2.py
    # reduce_gradients without overlap_comm, its default) (_dp_comm_replicated)
    dp_overlap_min_zero: float = 0.0
    # the loss is Megatron's vocab_parallel_cross_entropy on output.float(): cast, max, subtract, exp, sum and divide
    # as separate kernels over fp32 logits (compute._lm_head; Megatron-LM 2020-2023, Megatron-DeepSpeed, GPT-NeoX)
    ce_unfused_fp32: bool = False
    moe_host_sync: bool = False  # its alltoall MoE token dispatcher synchronises with the host (_host_excess)
    # TP above the K / V heads: the QKV activations all-gathered over TP, one K / V head a rank (_kv_subshard_time)
    kv_head_subshard: bool = False
    # the style's RMSNorm is nn.RMSNorm / F.rms_norm, one fused kernel from PyTorch 2.9 (framework.
    # rms_norm_fused_by_release reads it with strategy.torch_version; _job_options)
    rms_norm_functional: bool = False
    # the routed experts run Transformer Engine's fused grouped MLP (Megatron-Core use_transformer_engine_op_fuser with
    # NVTE_CUTEDSL_FUSED_GROUPED_MLP: TEGroupedMLP._fused_forward, MXFP8 on SM100): fc1 with its bias, the gated
    # activation (clamped quick-GeGLU included) and fc2 with its probability-scaled bias run in cuDNN CuTe DSL grouped
    # GEMM epilogues, so the eager fc2 bias and clamp of the TEGroupedMLP path do not run (_expert_bias_time,
    # _activation_clamp_time)
    moe_fused_grouped_mlp: bool = False
    # the routed experts run PyTorch's grouped GEMM (torch._grouped_mm; torchtitan models/moe/moe.py
    # _run_experts_grouped_mm), at its measured share of the dense rate (perf_constants.yaml gemm.grouped_mm_over_dense,
    # _grouped_mm_rate); false: the dense GEMM rate (Transformer Engine's GroupedLinear, Megatron-Core)
    moe_torch_grouped_mm: bool = False
    # the routed experts run Primus-Turbo's grouped GEMM (AMD-AGI/Primus use_turbo_grouped_gemm, its Triton backend),
    # at its measured share of the dense rate by precision (perf_constants.yaml gemm.turbo_grouped_gemm_over_dense,
    # _turbo_grouped_rate); false: the framework's kernel
    moe_turbo_grouped_gemm: bool = False
    # LoRA adapters are HF PEFT's lora.Linear, fp32 beside 16-bit activations (get_peft_model autocast_adapter_dtype):
    # each casts its input to fp32 and autocast casts it back for lora_A (perf_constants.yaml lora.peft_fp32_input_cast,
    # _lora_adapters)
    peft_fp32_input_cast: bool = False
    # the style's own loss under loss_impl auto where it runs F.cross_entropy eager on fp32 logits (a FP32_CE_KEYS
    # name: hf "upcast", transformers ForCausalLMLoss; torchtune "chunked"); "" = the fused count (_fp32_loss_excess)
    auto_loss_fp32: str = ""
    # a full fine-tune at ZeRO 0 keeps fp32 weights under the framework's 16-bit autocast (the HF Trainer's bf16 / fp16
    # AMP): the residual stream is fp32 and autocast casts weights and linear inputs (perf_constants.yaml
    # amp_fp32_weights, _amp_fp32_weights_time)
    amp_fp32_weights: bool = False
    # the routed experts take their token splits on the device (Primus-Turbo's ragged grouped GEMM: one kernel, no
    # .tolist() host sync), so no per-expert launches follow the MoE layer's host sync (_moe_sync_free)
    moe_sync_free: bool = False
    # Megatron-Core's alltoall dispatcher pads every expert to capacity (moe_pad_expert_input_to_capacity): no D2H
    # copy of the token counts is waited for, but TE GroupedLinear still launches each local expert's GEMMs and casts
    # from the host, so they join the layer's host floor instead of following a drained queue (_padded_expert_host_s)
    moe_pad_to_capacity: bool = False
    # Megatron-Core's token permutation and router run Transformer Engine's fused kernels (moe_permute_fusion /
    # moe_router_fusion); false: the unfused torch ops, their kernels, host calls and the permutation's masked_select
    # host syncs (_moe_unfused_time, _moe_unfused_host). Other styles time their own path at the fused count: true
    moe_permute_fused: bool = True
    moe_router_fused: bool = True
    # Megatron-Core's router load-balancing loss (strategy.moe_aux_loss, names.MOE_AUX_LOSSES): none drops the aux
    # loss's host calls and unfused kernels from the count (_moe_aux_loss_counts), global_aux_loss adds its own and its
    # all-reduce over TP x DP x CP (_global_aux_loss_time); aux_loss / seq_aux_loss run the same ops
    moe_aux_loss: str = "aux_loss"
    # Megatron-Core's routed experts run one grouped GEMM call (--moe-grouped-gemm: TEGroupedMLP / GroupedMLP); false:
    # SequentialMLP, the local experts one after another, with its copies of the routed buffer (_sequential_mlp_time)
    moe_grouped_gemm: bool = True
    # the routed experts run one at a time in a Python loop, each behind a host sync (transformers' eager MoE blocks:
    # torch.where on the routing mask per expert), so the CPU cannot issue an expert's kernels ahead of the GPU in a
    # forward pass (_expert_loop_excess); false: one grouped GEMM call (transformers >= 5.0 grouped_mm)
    moe_expert_loop: bool = False
    # the MoE layer's gather / permute / scatter / weighted combine run eager even under torch.compile (torchtitan
    # before 2026-05 compiles an MoE layer's children, not MoE.forward or the EP hooks): their bytes beyond the
    # charged permutation (perf_constants.yaml gemm.moe_eager_glue_bytes, _moe_eager_glue_time); not behind DeepEP
    moe_eager_glue: bool = False
    # the routed experts' biases are added per routed row in eager PyTorch: repeat_interleave'd copies added to the
    # grouped GEMMs' outputs, their gradient an index_add_ of every row into its expert's bias row, bound by its bf16
    # atomics (torchtitan's gpt-oss port; perf_constants.yaml gemm.expert_bias_index_add, _expert_bias_index_add_time)
    moe_bias_index_add: bool = False
    # model families whose MoE weights the routed outputs after the experts in the style's port (the rest before):
    # which of gemm.moe_eager_glue_bytes' two combine paths the eager glue runs (_moe_eager_glue_time)
    moe_score_after_families: str = ""
    # blocking host syncs a MoE layer's forward makes on the standard all-to-all path at EP > 1 (torchtitan
    # ExpertParallel._token_dispatch: output_splits .to("cpu", non_blocking=False), .tolist()) and behind DeepEP
    # (moe_dispatcher flex); each drains the GPU's queue (_moe_dispatch_sync_excess)
    moe_dispatch_syncs: float = 0.0
    moe_deepep_syncs: float = 0.0
    # Megatron-Core overlap_p2p_comm: with an interleaved schedule (vpp > 1) the next chunk's send / recv is posted
    # asynchronously and waited on only when that chunk runs, so the steady state hides the transfers (_pipeline)
    p2p_overlap: bool = False
    # share of the sequence-parallel all-gathers that carry FP8 (1 B) under FP8 training, reduce-scatters staying
    # 16-bit (_tp_comm): Transformer Engine casts GEMM inputs and output gradients before it gathers (1.0);
    # torchtitan's Float8ColwiseParallel the forward inputs only (0.5; not with rowwise scaling)
    fp8_tp_allgather: float = 0.0
    # Transformer Engine LayerNormLinear / LayerNormMLP write the FP8 copy of the norm output themselves, so the
    # cast costs the recipe's fused figure (perf_constants.yaml fp8 recipes); standalone te.Linear / torchao
    # casts read the 16-bit tensor again (_rates)
    fp8_cast_fused: bool = False
    # the FP8 casts are Transformer Engine's quantizers (TE >= 2.0), which write no transpose on parts whose FP8
    # GEMMs take every layout (calibration.fp8_transpose_free); torchao writes its own (float8 preprocess)
    fp8_te_quantizer: bool = False
    # torchao's MX linears cast each operand along dim 0 and dim 1 in separate passes, one in the forward and one in
    # the backward (the recipe's per_dim_ figures, calibration._per_dim_recipe); Transformer Engine's MXFP8 quantizer
    # writes both in one
    fp8_cast_per_dim: bool = False
    # delayed scaling reduces each model chunk's amax buffer over the TP x DP x CP ranks of its pipeline stage, once
    # a forward and once a backward, a synchronous all-reduce (Megatron-Core TransformerBlock's fp8_autocast with
    # get_amax_reduction_group: _delayed_amax_reductions)
    fp8_amax_group_reduction: bool = False
    fp8_amax_tp_only: bool = False  # ... over the TP x CP ranks only (Megatron-Core tp_only_amax_red)
    # weights, gradients and optimizer states in the model dtype, no fp32 master (torchtune; any style where the job
    # states strategy.optimizer_precision bf16: _job_options): the optimizer step streams
    # optimizer.model_dtype_bytes_per_param (_optimizer), and no fp32 weight is cast under autocast
    model_dtype_states: bool = False
    # parameter offload is FSDP2's CPUOffloadPolicy (torchtune fsdp_cpu_offload, torchtitan enable_cpu_offload):
    # the reduce-scattered gradient shard is copied to host memory in each unit's post-backward, overlapping the
    # rest of the backward, and the optimizer steps the host shards in place, so nothing is uploaded after the
    # step (the next forward's all-gather copies each shard in: _optimizer)
    fsdp2_cpu_offload: bool = False
    # DeepSpeed's optimizer offload (offload_optimizer): bytes per updated parameter its step streams in host memory
    # beside CPU-Adam at any stage (unscale_and_clip_grads' in-place multiply of the fp32 gradient partition) and at
    # ZeRO-3 (the 16-bit copy cast on the host), and bytes per parameter ZeRO-1/2 upload after the update (0: the
    # model dtype); the deepspeed style's, taken by a stack on its engine (_deepspeed_engine_options; _optimizer;
    # docs/known-gaps.md 251 (a))
    offload_host_pass_bytes: float = 0.0
    offload_zero3_host_cast_bytes: float = 0.0
    offload_upload_bytes: float = 0.0
    # bytes per updated parameter of the fused update's count that the offloaded CPU step does not stream
    # (DeepSpeed's CPU-Adam updates the fp32 partition only; the 16-bit copy is the passes above)
    offload_update_unwritten_bytes: float = 0.0
    # FSDP2 (fully_shard) copies on the compute stream around its collectives: after each all-gather the flat
    # output is split into the unsharded parameters (foreach_all_gather_copy_out, split_with_sizes_copy) and
    # before each reduce-scatter the unsharded gradients are chunk-cat into the reduce buffer in the reduce dtype
    # (foreach_reduce_scatter_copy_in) -- both on the current stream, not the collective's (PyTorch
    # torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py, read at main 010ae4a; so since FSDP2 in 2.4). FSDP1's flat parameter all-gathers
    # into the unsharded storage itself and casts the gradient on its post-backward stream (_fsdp2_copies)
    fsdp2_copies: bool = False
    # FSDP2 under torch.distributed.pipelining: the stage's parameters are gathered once a step and its gradients
    # reduce-scattered once, after the last backward, and waited on (_fsdp_once_per_step)
    pp_fsdp_once_per_step: bool = False
    # FSDP2: a backward call waits for its reduce-scatters before it returns, so each call's last unit's
    # reduce-scatter is exposed (_fsdp_call_edges)
    fsdp_call_waits: bool = False
    # packed samples go into packs in order, each closed and padded once the next sample does not fit (next fit:
    # torchtune PackedDataset); Training.pack_fill (scenario) reads it
    packs_next_fit: bool = False
    # a model's sliding windows (ModelArch.sliding_window) save attention work: the kernel skips the tiles outside
    # the band (FlashAttention-2 window_size, FlexAttention block masks, TE / cuDNN); false: every layer runs the
    # whole causal row (torchtune: its Mistral builder has no window, its Gemma 2 attention masks a full matmul)
    sliding_windows: bool = True
    # context parallelism is PyTorch's ring attention (torch/distributed/tensor/experimental/_attention.py) over a
    # model that repeats K / V to the query heads before SDPA (torchtitan repeat_kv): _cp_torch_ring; otherwise
    # Transformer Engine's ring (AttnFuncWithCP) over the model's K / V heads
    cp_torch_ring: bool = False
    # under cp_torch_ring the model repeats K / V to the query heads before SDPA (torchtitan's Llama repeat_kv), so
    # the ring moves them at the query width; false: SDPA's enable_gqa (Hugging Face sdpa_attention_forward)
    repeat_kv: bool = False
    # cp_comm_type a2a is an autograd all-to-all around the local attention (DeepSpeed-Ulysses DistributedAttention,
    # deepspeed/sequence/layer.py _SeqAllToAll; xtuner's sequence_parallel_wrapper, xtuner/parallel/sequence at
    # 43ef6ab99): its backward sends the output's gradient and dq, dk, dv back, 4 tensors; false: Transformer
    # Engine's AttnFuncWithCPAndQKVOA2A, which sends the output and its gradient, 5 (step_time._cp_te_a2a)
    cp_a2a_autograd: bool = False
    # at expert TP 1 under TP each TP rank dispatches its 1 / tp of the MoE layer's tokens (torchtitan's
    # ReordererSequenceParallel, later its dispatchers' sp_size; Megatron-Core's sequence-parallel shard); false:
    # every TP rank dispatches, computes and combines the TP group's whole token set (torchtitan's DeepEP path at
    # 1a36996b, 2026-02: DeepEPMoE sets its reorderer to None, so apply_moe_ep_tp's ReordererSequenceParallel entry
    # matches no module, and the MoE input is all-gathered to Replicate; split from 963c20cba, 2026-05-20)
    moe_tp_token_split: bool = True
    # at expert TP > 1 every TP rank dispatches the TP group's whole token set over the EP group (torchtitan's
    # ExpertTensorParallel); false: its sequence shard, the expert-TP gather after (Megatron-Core, _moe_tp_collectives)
    etp_dispatch_replicated: bool = False
    # activations are kept sequence-first (s, b, h), as Megatron-Core does; the Mamba-2 mixer then copies across to the
    # batch-first fused kernels where a micro-batch holds several sequences (mamba.layout_copy_time)
    sequence_first: bool = False
    # sequence parallelism shards dim 1 of [batch, seq, hidden] activations (DTensor SequenceParallel, Shard(1):
    # torchtitan), so with more than one row per micro-batch each TP all-gather is followed by a chunk-cat copy into
    # [batch, seq] order and each reduce-scatter's input is chunk-cat into rank order (_sp_layout_copies)
    sp_dim1_copies: bool = False
    # QLoRA's base layers are bitsandbytes Linear4bit with double quantisation: each dequantisation runs
    # kernels.nf4_dequantise_nested kernels (_layer_time, _adapter_host_s)
    bnb_nested_dequant: bool = False

    def __post_init__(self) -> None:
        if not np.all(np.isin(self.attention_kernel, ATTENTION_KERNELS)):
            raise SpecError(f"framework.{self.name}.attention_kernel", msg("error_unknown_name", kind=msg("kind_attention_kernel")),
                            value=self.attention_kernel, allowed=ATTENTION_KERNELS,
                            suggestion=did_you_mean(self.attention_kernel, ATTENTION_KERNELS))
        share = np.asarray(self.tp_overlap_fraction, float)
        if np.any(~np.isnan(share) & ((share < 0.0) | (share > 1.0))):  # a share of the TP time: nan = the constant
            raise SpecError(f"framework.{self.name}.tp_overlap_fraction", msg("spec_range_ge_le", low=0, high=1),
                            value=self.tp_overlap_fraction)
        if self.pipeline_schedule not in PIPELINE_SCHEDULES:
            raise SpecError(f"framework.{self.name}.pipeline_schedule", msg("error_unknown_name", kind=msg("kind_pipeline_schedule")),
                            value=self.pipeline_schedule, allowed=PIPELINE_SCHEDULES,
                            suggestion=did_you_mean(self.pipeline_schedule, PIPELINE_SCHEDULES))


def _load_perf_styles(raw: dict[str, Any] | None = None) -> dict[str, PerfStyle]:
    """Perf styles from perf_constants.yaml (`frameworks:`, or `raw`), values coerced to the field types; a style
    must state its gradient bucket (the one field with no default)."""
    raw = load_constants().raw.get("frameworks", {}) if raw is None else raw
    defaults = PerfStyle("defaults")
    out = {}
    for name, opts in raw.items():
        typed = {key: type(getattr(defaults, key))(val) for key, val in (opts or {}).items()}
        if "grad_bucket_params" not in typed:
            raise SpecError(f"frameworks.{name}.grad_bucket_params", msg("error_style_needs_bucket", style=name))
        out[name] = PerfStyle(name, **typed)
    return out


PERF_STYLES: dict[str, PerfStyle] = _load_perf_styles()  # perf_constants.yaml `frameworks:`


def perf_style(name: str | PerfStyle) -> PerfStyle:
    """The perf style named `name` (perf_constants.yaml `frameworks:`), or `name` itself if it is one."""
    if isinstance(name, PerfStyle):
        return name
    try:
        return PERF_STYLES[name]
    except KeyError:
        raise SpecError("framework", msg("error_unknown_name", kind=msg("kind_framework_style")), value=name, allowed=sorted(PERF_STYLES),
                        suggestion=did_you_mean(name, PERF_STYLES)) from None


_STYLE_FIELDS = tuple(f.name for f in fields(PerfStyle) if f.name != "name")
_SCALAR_ONLY = ("pipeline_schedule",)


def _style(strategy, framework_style: str | PerfStyle | None, pretraining: bool = False) -> PerfStyle:
    """The perf style: the explicit `framework_style` if given, else `strategy.framework` through
    `estimate.framework` ("auto": one style per strategy, `framework.auto_index`; fields where the styles differ
    become arrays, except the pipeline schedule, which must agree)."""

    if framework_style is not None:
        return perf_style(framework_style)
    return _job_options(strategy, _framework_style(strategy, pretraining), pretraining)


def _named_option(strategy, key: str, label: str, allowed) -> str | None:
    """strategy.<key> as a string, or None when unset; a name outside `allowed` is refused by its field."""
    value = getattr(strategy, key, None)
    if value is None:
        return None
    if value not in allowed:
        raise unknown_name(f"strategy.{key}", label, value, allowed)
    return str(value)


def _job_options(strategy, style: PerfStyle, pretraining: bool = False) -> PerfStyle:
    """The strategy's own framework options (async TP / TP overlap, FP8 all-gather, gradient reduce dtype and
    overlap, attention kernel, EP all-to-all overlap) over the style's."""
    changes: dict = {key: bool(getattr(strategy, key)) for key in ("tp_comm_overlap", "fp8_param_allgather")
                     if getattr(strategy, key, None) is not None}
    if getattr(strategy, "fp8_param_allgather", None) is None and np.any(style.fp8_param_allgather):
        changes["fp8_param_allgather"] = fp8_primary_weights_default(style.fp8_param_allgather, strategy.zero)
    g32 = getattr(strategy, "grad_reduce_in_fp32", None)
    if g32 is not None:  # gradients on the wire in fp32 (4 bytes) or bf16 (2)
        changes["grad_reduce_bytes"] = 4.0 if g32 else 2.0
    overlap = getattr(strategy, "grad_reduce_overlap", None)
    if overlap is not None:  # reduced in backward hooks at every ZeRO stage, or after the last backward
        changes["dp_overlap"] = bool(overlap)
        changes["dp_overlap_min_zero"] = 0.0
    if getattr(strategy, "zero1_grad_allreduce", None) is not None:  # all-reduce, not reduce-scatter, at ZeRO-1
        changes["zero1_grad_allreduce"] = bool(strategy.zero1_grad_allreduce)
    changes |= _megatron_fsdp_sharding_options(strategy, style)
    bucket = getattr(strategy, "grad_bucket_params", None)
    if bucket is not None:  # the job's bucket size, as given: Megatron-Core scales it with DP only when unset
        changes["grad_bucket_params"] = float(bucket)
        changes["grad_bucket_params_per_dp_rank"] = 0.0
    if getattr(strategy, "optimizer_precision", None) in ("bf16", "bf16-master"):
        # no fp32 master (memory_constants.yaml optimizer_precision): the model is held and stepped in bf16, as the
        # style flag model_dtype_states says: the update streams bf16 states and gradients (_optimizer,
        # _step_passes) and autocast finds no fp32 weight to cast (_amp_fp32_weights_time); e.g. ms-swift 1.5 loads
        # the model in bf16 (argument.py select_dtype: dtype AUTO -> bf16, modelscope/ms-swift 97e4d198b); bf16-master's
        # states are all bf16 too (DeepSpeed's bf16 master copy; its copy into the weights not counted: known-gaps 296 (b))
        changes["model_dtype_states"] = True
    if getattr(strategy, "attention_kernel", None) is not None:
        changes["attention_kernel"] = str(strategy.attention_kernel)
    if getattr(strategy, "repeat_kv", None) is not None:
        changes["repeat_kv"] = bool(strategy.repeat_kv)
    if getattr(strategy, "split_projections", None) is not None:  # _layer_time, _tp_collectives_per_pass
        changes["split_projections"] = bool(strategy.split_projections)
    if getattr(strategy, "moe_tp_token_split", None) is not None:  # _layer_time, _ep_comm
        changes["moe_tp_token_split"] = bool(strategy.moe_tp_token_split)
    for key, label, allowed in (("norm_kernel", "norm kernel", NORM_KERNELS),
                                ("activation_kernel", "activation kernel", ACTIVATION_KERNELS),
                                ("rope_kernel", "RoPE kernel", ROPE_KERNELS),
                                ("eager_attention", "eager attention chain", EAGER_ATTENTION_IMPLS)):
        value = _named_option(strategy, key, label, allowed)
        if value is not None:
            changes[key] = value
    if "norm_kernel" not in changes:  # an unnamed norm kernel: fused by the job's PyTorch release (framework)
        changes |= _release_norm_kernel(strategy, pretraining)
    if getattr(strategy, "pp_fsdp_once_per_step", None) is not None:  # _dp_comm_zero3
        changes["pp_fsdp_once_per_step"] = bool(strategy.pp_fsdp_once_per_step)
    if getattr(strategy, "moe_a2a_overlap", None) is not None:  # Megatron-Core combined 1F1B (_micro_batch)
        changes["ep_overlap"] = bool(strategy.moe_a2a_overlap)
    if getattr(strategy, "delay_wgrad_compute", None) is not None:  # the combined 1F1B's order (combined_1f1b_layer_s)
        changes["ep_overlap_delay_wgrad"] = bool(strategy.delay_wgrad_compute)
    if getattr(strategy, "cuda_device_max_connections", None) is not None:  # one hardware queue: the same
        changes["ep_overlap_one_queue"] = int(strategy.cuda_device_max_connections) == 1
    if getattr(strategy, "moe_fused_grouped_mlp", None) is not None:  # TE's fused grouped MLP (_expert_bias_time)
        changes["moe_fused_grouped_mlp"] = bool(strategy.moe_fused_grouped_mlp)
    if getattr(strategy, "moe_torch_grouped_mm", None) is not None:  # the experts' grouped GEMM (_grouped_mm_rate)
        changes["moe_torch_grouped_mm"] = bool(strategy.moe_torch_grouped_mm)
    if getattr(strategy, "moe_turbo_grouped_gemm", None) is not None:  # Primus-Turbo's (_turbo_grouped_rate)
        changes["moe_turbo_grouped_gemm"] = bool(strategy.moe_turbo_grouped_gemm)
    if getattr(strategy, "sac_saves_attention", None) is not None:  # per-op SAC's save list (_layer_time)
        changes["sac_saves_attention"] = bool(strategy.sac_saves_attention)
    if getattr(strategy, "tf32", None) is not None:  # fp32 matmuls on TF32 / XF32 (_rates)
        changes["fp32_matmul_tf32"] = bool(strategy.tf32)
    if getattr(strategy, "moe_eager_glue", None) is not None:  # torchtitan's eager MoE glue (_moe_eager_glue_time)
        changes["moe_eager_glue"] = bool(strategy.moe_eager_glue)
    if getattr(strategy, "moe_sync_free", None) is not None:  # device-side expert splits (_moe_sync_free)
        changes["moe_sync_free"] = bool(strategy.moe_sync_free)
    if getattr(strategy, "moe_pad_to_capacity", None) is not None:  # padded token drop (_padded_expert_host_s)
        changes["moe_pad_to_capacity"] = bool(strategy.moe_pad_to_capacity)
    if getattr(strategy, "moe_permute_fusion", None) is not None:  # TE's fused permutation (_moe_unfused_time)
        changes["moe_permute_fused"] = bool(strategy.moe_permute_fusion)
    if getattr(strategy, "moe_router_fusion", None) is not None:  # TE's fused router (_moe_unfused_time)
        changes["moe_router_fused"] = bool(strategy.moe_router_fusion)
    aux = _named_option(strategy, "moe_aux_loss", "MoE router aux loss", MOE_AUX_LOSSES)
    if aux is not None:  # the router's load-balancing loss (_moe_aux_loss_counts)
        changes["moe_aux_loss"] = aux
    if getattr(strategy, "moe_grouped_gemm", None) is not None:  # SequentialMLP (_sequential_mlp_time)
        changes["moe_grouped_gemm"] = bool(strategy.moe_grouped_gemm)
    if getattr(strategy, "tp_only_amax_red", None) is not None:  # _delayed_amax_reductions' group
        changes["fp8_amax_tp_only"] = bool(strategy.tp_only_amax_red)
    impl = _named_option(strategy, "experts_implementation", "experts implementation", EXPERTS_IMPLEMENTATIONS)
    if impl is not None:  # transformers' experts: a loop with a host sync each, or torch._grouped_mm
        changes["moe_expert_loop"] = impl == "eager"
        changes["moe_torch_grouped_mm"] = impl == "grouped_mm"
    if getattr(strategy, "fused_qkv_rope", None):  # Megatron-Core fused_single_qkv_rope (_rope_unfused_time)
        changes["rope_mscale_unfused"] = False
    if getattr(strategy, "flash_qkv_pack", None):  # GPT-NeoX's flash wrapper copies (_flash_qkv_pack_time)
        changes["flash_qkv_pack"] = True
    ckpt = _named_option(strategy, "checkpoint_impl", "checkpoint implementation", CHECKPOINT_IMPLS)
    if ckpt is not None:  # how recompute re-runs a layer around / inside the FSDP unit (_reentrant_outer_exposed)
        changes["checkpoint_impl"] = ckpt
    changes |= _deepspeed_engine_options(strategy, style) | _fsdp_version_option(strategy)
    fetch = _zero3_expert_fetch_option(strategy, style)
    if fetch is not None:
        changes["zero3_expert_fetch"] = fetch
    ddp = _named_option(strategy, "ddp_impl", "DDP implementation", DDP_IMPLS)
    if ddp is not None:  # torch DDP + torch-style clipping, or Megatron's gradient buffer (names.DDP_IMPLS)
        changes["torch_ddp"] = changes["clip_scales_always"] = ddp == "torch"
    return dataclasses.replace(style, **changes) if changes else style


def _release_norm_kernel(strategy, pretraining: bool) -> dict[str, Any]:
    """{"norm_kernel": "fused"} where the style's RMSNorm is F.rms_norm on a release that runs it as one fused kernel
    (framework.rms_norm_fused_by_release: torchtitan on strategy.torch_version >= 2.9; docs/known-gaps.md 311 (a)), per
    strategy under "auto" (an object array, None where the picked style runs its own); {} elsewhere."""
    from trainsizer.estimate import framework as fwmod

    name = getattr(strategy, "framework", "auto")
    idx = fwmod.auto_index_of(strategy, pretraining) if name == "auto" else None
    fused = np.asarray(fwmod.rms_norm_fused_by_release(name, idx, getattr(strategy, "torch_version", None)), bool)
    if not np.any(fused):
        return {}
    return {"norm_kernel": "fused" if fused.ndim == 0 or np.all(fused) else np.where(fused, "fused", None)}


def _megatron_fsdp_sharding_options(strategy, style: PerfStyle) -> dict[str, Any]:
    """The style's fields Megatron-FSDP's optim / optim_grads change (strategy.megatron_fsdp_sharding, where the
    style runs Megatron-FSDP: megatron_fsdp_hooks), read at NVIDIA/Megatron-LM 0d8e0714 (megatron_fsdp.py,
    param_and_grad_buffer.py): both hook every module (megatron_fsdp_modules); optim keeps the gradient buffer whole
    and all-reduces it on the last micro-batch (is_delay_grad_reduce; _bucket_group_gradient_reduce's all_reduce
    where the buffer is not distributed: zero1_grad_allreduce); optim_grads reduce-scatters every micro-batch
    (grad_reduce_every_bprop: zero2_micro_batch_reduce). docs/known-gaps.md 316 (a), (b)."""
    sharding = getattr(strategy, "megatron_fsdp_sharding", None)
    if sharding not in ("optim", "optim_grads"):
        return {}
    hooks = np.asarray(style.megatron_fsdp_hooks, bool)
    on = bool(hooks) if hooks.ndim == 0 else hooks
    key = "zero1_grad_allreduce" if sharding == "optim" else "zero2_micro_batch_reduce"
    return {"megatron_fsdp_modules": on, key: on | np.asarray(getattr(style, key), bool)}


def _deepspeed_engine_options(strategy, style: PerfStyle) -> dict[str, Any]:
    """The style's fields a job on DeepSpeed's ZeRO-3 engine changes (strategy.fsdp none: the job wrote zero: 3, not
    fsdp; on a style that runs either engine: zero3_runs_deepspeed), taken from the deepspeed style, where DeepSpeed's
    defaults are stated once: gathers module by module in prefetch buckets (_deepspeed_gathers_per_layer) and the
    re-gather under full recompute past stage3_max_reuse_distance (_zero3_regathered_share). HF Trainer / accelerate hand the job to DeepSpeed's
    engine (deepspeed/runtime/zero/partitioned_param_coordinator.py, v0.16.6), whatever runs the model around it.
    Under framework auto the style's fields are arrays (one per strategy): the options apply where it runs DeepSpeed."""
    fsdp = getattr(strategy, "fsdp", None)
    if fsdp is not None and fsdp not in FSDP_MODES:
        raise unknown_name("strategy.fsdp", "FSDP mode", fsdp, FSDP_MODES)
    buckets = getattr(strategy, "zero3_bucket_sizes", None)
    if buckets is not None and buckets not in ZERO3_BUCKET_SIZES:
        raise unknown_name("strategy.zero3_bucket_sizes", "ZeRO-3 bucket sizes", buckets, ZERO3_BUCKET_SIZES)
    on = np.asarray(style.zero3_runs_deepspeed, bool) & (fsdp in (None, "none"))
    if not np.any(on):
        return {}
    ds = perf_style("deepspeed")
    # the bucket sizes: framework.deepspeed_zero3_buckets, by the job's or the style's zero3_bucket_sizes
    flag = on if on.ndim else bool(on)
    # its reuse rule (_zero3_regathered_share) and its step's passes around the update (_step_passes)
    out = {key: _when(flag, getattr(ds, key), getattr(style, key))
           for key in ("zero3_max_reuse_distance_params", "zero3_step_update_bytes", "zero3_microbatch_syncs",
                       "zero3_grad_copies", "offload_host_pass_bytes", "offload_zero3_host_cast_bytes",
                       "offload_upload_bytes", "offload_update_unwritten_bytes", "zero3_module_hooks",
                       "zero2_micro_batch_reduce")}
    if buckets is not None:
        out["zero3_bucket_sizes"] = np.where(on, buckets, style.zero3_bucket_sizes) if on.ndim else str(buckets)
    return out | {"zero3_deepspeed_fetch": on if on.ndim else True}


def _fsdp_version_option(strategy) -> dict[str, Any]:
    """The style's FSDP engine fields a job's strategy.fsdp_version sets where the job shards with FSDP (fsdp full or
    hybrid; {} where it does not, or states no version: the style's own). 1 = torch FSDP1 (FullyShardedDataParallel's
    flat parameters: each unit's gradient pre-divided in place, _fsdp1_predivide_s, and its views' gradients
    concatenated, _fsdp1_view_grad_cat_s); 2 = FSDP2 (fully_shard's per-parameter DTensors: neither, but its copy-out
    after each all-gather and copy-in before each reduce-scatter, _fsdp2_copies; torch/distributed/fsdp/_fully_shard/
    _fsdp_collectives.py foreach_all_gather_copy_out / foreach_reduce). accelerate's fsdp_version picks one
    (accelerate/utils/dataclasses.py FullyShardedDataParallelPlugin, default 1; Axolotl's FSDP2 configs write 2)."""
    version = getattr(strategy, "fsdp_version", None)
    if version is None or getattr(strategy, "fsdp", None) in (None, "none"):
        return {}
    if version not in FSDP_VERSIONS:
        raise unknown_name("strategy.fsdp_version", "FSDP version", str(version), [str(v) for v in FSDP_VERSIONS])
    one = int(version) == 1
    return {"fsdp1_grad_predivide": one, "fsdp1_view_grad_cat": one, "fsdp2_copies": not one}


def _zero3_expert_fetch_option(strategy, style: PerfStyle) -> Any:
    """PerfStyle.zero3_expert_fetch for the job, or None to keep the style's: "" where FSDP shards (its unit is the
    decoder layer, experts and all: the job's fsdp is full or hybrid), the stated strategy.zero3_expert_fetch where the
    style gathers transformers' experts module by module (validate refuses it elsewhere)."""
    if getattr(strategy, "fsdp", None) not in (None, "none"):
        return ""
    fetch = getattr(strategy, "zero3_expert_fetch", None)
    if fetch is None:
        return None
    if fetch not in ZERO3_EXPERT_FETCHES:
        raise unknown_name("strategy.zero3_expert_fetch", "ZeRO-3 expert fetch", fetch, ZERO3_EXPERT_FETCHES)
    return np.where(np.asarray(style.zero3_expert_fetch) != "", str(fetch), "")


def _framework_style(strategy, pretraining: bool) -> PerfStyle:
    from trainsizer.estimate import framework as fwmod

    styles = fwmod.perf_styles(getattr(strategy, "framework", "auto"))
    if not isinstance(styles, tuple):
        return perf_style(styles)
    cands = [perf_style(n) for n in styles]
    idx = np.asarray(fwmod.auto_index_of(strategy, pretraining))
    out = {}
    for key in _STYLE_FIELDS:
        vals = [getattr(c, key) for c in cands]
        if all(v == vals[0] for v in vals):
            out[key] = vals[0]
        elif key in _SCALAR_ONLY:
            raise SpecError(f"frameworks.{cands[-1].name}.{key}", msg("auto_styles_must_agree", key=key), value=vals[-1], allowed=[vals[0]])
        else:
            out[key] = np.asarray(vals)[idx]  # = np.choose(idx, vals), a gather from a few values
    return PerfStyle("auto (" + " / ".join(c.name for c in cands) + ")", **out)


def _when(flag: Any, yes: Any, no: Any) -> Any:
    """`yes` where flag else `no`; flag is a bool or (auto framework) a bool array."""
    if isinstance(flag, np.ndarray):
        return np.where(flag, yes, no)
    return yes if flag else no


@dataclass(frozen=True)
class TimeEstimate:
    """One strategy's step time and derived figures.

    MFU = model FLOPs (3 x forward, non-causal attention: PaLM appendix B / Korthikanti Eq. 7) per second per
    GPU over the dense peak of the training precision (FP8 training: FP8 peak). HFU adds the recomputed
    forward. `breakdown_s` holds the exposed (critical-path) seconds of each term; they sum to `step_s`.
    `train_days` / `gpu_hours` include the goodput lost to failures and checkpoints (0 when
    `training.tokens_total` is 0). `notes` carries the memory estimator's verdict when it is available.
    """

    step_s: float
    tokens_per_s: float
    model_flops_per_step: float
    hardware_flops_per_step: float
    model_tflops_per_gpu: float
    mfu: float
    hardware_tflops_per_gpu: float
    hfu: float
    breakdown_s: dict[str, float]
    micro_batches: float
    gpus: int
    train_days: float = 0.0
    gpu_hours: float = 0.0
    goodput: float = 1.0
    notes: tuple[str, ...] = field(default=())
    eval_s: float = 0.0  # the run's evaluation passes (estimate.evaluation; in train_days, not in step_s)
    save_s: float = 0.0  # the run's checkpoint saves (estimate.checkpoint_saves; in train_days, not in step_s)

    def to_dict(self) -> dict[str, Any]:
        return {
            "step_s": self.step_s,
            "tokens_per_s": self.tokens_per_s,
            "model_tflops_per_gpu": self.model_tflops_per_gpu,
            "mfu": self.mfu,
            "hardware_tflops_per_gpu": self.hardware_tflops_per_gpu,
            "hfu": self.hfu,
            "breakdown_s": dict(self.breakdown_s),
            "train_days": self.train_days,
            "gpu_hours": self.gpu_hours,
            "goodput": self.goodput,
            "eval_s": self.eval_s,
            "save_s": self.save_s,
            "micro_batches": self.micro_batches,
            "gpus": self.gpus,
            "model_flops_per_step": self.model_flops_per_step,
            "hardware_flops_per_step": self.hardware_flops_per_step,
            "notes": list(self.notes),
        }


@lru_cache(maxsize=64)
def _shapes(model: ModelArch) -> compute.ModelShapes:
    return compute.ModelShapes.of(model)


@lru_cache(maxsize=64)
def _param_split(model: ModelArch) -> tuple[float, float]:
    """(all parameters, routed-expert parameters)."""
    expert = float(sum(model.layer_params(i).experts_total for i in range(model.layers)))
    return float(model.params_total), expert


@dataclass(frozen=True)
class _Step:
    """What every term of one `step_time_arrays` call reads: inputs, constants, rates, the perf style and the
    strategy arrays (t, p, v, d, c, e = TP, PP, VPP, DP, CP, EP degrees; b micro-batch; rc recompute code)."""

    model: ModelArch
    training: Training
    system: System
    k: PerfConstants
    fw: PerfStyle
    r: Any  # calibration.rates
    a: dict[str, np.ndarray]  # strategy fields (`validate.strategy_arrays`)
    t: np.ndarray
    p: np.ndarray
    v: np.ndarray
    d: np.ndarray
    c: np.ndarray
    e: np.ndarray
    et: np.ndarray  # the routed experts' TP degree (validate.expert_tp)
    b: np.ndarray
    rc: np.ndarray
    zero: np.ndarray
    sp: np.ndarray  # sequence parallel in effect (requested and TP > 1)
    m: np.ndarray  # micro-batches per step
    tok: np.ndarray  # tokens of one micro-batch on one GPU (after CP), padding included
    act: float  # bytes per activation element on the wire
    row: Any = 0.0  # positions per sequence row (seq_len, or the padded length of unpacked samples: _rows)
    span: Any = 0.0  # keys a position attends over (0 = the whole row; Training.attention_span, _rows)
    strategy_dispatcher: str = "auto"  # Strategy.moe_dispatcher (one of MOE_DISPATCHERS)
    optimizer_impl: str = "fused"  # Strategy.optimizer_impl (one of OPTIMIZER_IMPLS; None = fused)
    loss_impl: str = "auto"  # Strategy.loss_impl (one of LOSS_IMPLS)
    recompute_modules: tuple[str, ...] | None = None  # Strategy.recompute_modules (Megatron-Core)
    # the share of a chunk's layers whose forward runs again in the backward: 1 under full recompute of every layer,
    # less under Megatron's block method (partial_recompute.py), 0 without full recompute
    full_share: Any = 0.0
    cp_comm_type: str = "p2p"  # Strategy.cp_comm_type (one of CP_COMM_TYPES; None = p2p)
    fp8_attention: bool = False  # Strategy.fp8_attention (None = off)
    fp8_lm_head: bool = False  # Strategy.fp8_lm_head (None = off)
    cuda_graphs: str = "none"  # Strategy.cuda_graphs (one of CUDA_GRAPHS; None = none)
    bnb_block: int = 256  # Strategy.bnb_optimizer_block (one of BNB_OPTIMIZER_BLOCKS; None = 256)
    cudnn_release: str | None = None  # Strategy.cudnn_release (one of CUDNN_RELEASES; None = the base release)
    aiter_mla_bwd_asm: bool = True  # Strategy.aiter_mla_bwd_asm (None = true: AITER >= 7a41cca)
    nf4_dequant_dtype: str = "compute"  # Strategy.nf4_dequant_dtype (one of NF4_DEQUANT_DTYPES; None = compute)
    nf4_decode: str = "lut"  # Strategy.nf4_decode (one of NF4_DECODES; None = lut, bitsandbytes 0.48.0+)
    nf4_double_quant: bool | None = None  # Strategy.nf4_double_quant (None = the style's count)
    bnb_compute_from_input: bool = False  # Strategy.bnb_compute_from_input (bitsandbytes 0.41-0.46; None = false)
    kbit_residual: bool = False  # QLoRA's norms and residual stream fp32 (model_states.kbit_upcast)
    # QLoRA's 4-bit LM head (Strategy.nf4_lm_head) and the positions a row hands it a call (Strategy.lm_head_chunk;
    # None = the whole row in one call)
    nf4_lm_head: bool = False
    lm_head_chunk: Any = None
    te_op_fuser: bool = False  # Strategy.te_op_fuser (None = off)
    no_autocast: bool = False  # Strategy.autocast is False: the loop runs its 16-bit forward without autocast
    local_batch: Any = None  # Strategy.local_batch (sequences per DP rank per pipeline schedule; None = the step's)
    stage_edges: tuple[Any, Any, Any] = (None, None, None)  # the stated decoder layers (pipeline.stated_edges)
    # the busiest EP rank's routed tokens over its balanced share: Training.moe_capacity_factor, or under a trained
    # router's own routing with none stated the derived load (_natural_routing_load; estimate.moe_load), per strategy
    moe_load: Any = 1.0
    grad_accum_fusion: bool | None = None  # Strategy.gradient_accumulation_fusion (None = the style's)
    defer_wgrad: bool = False  # Strategy.defer_embedding_wgrad (None = off)
    wgrad_deferral_limit: Any = None  # Strategy.wgrad_deferral_limit (0 / None = every micro-batch deferred)
    fsdp_no_sync: bool = False  # Strategy.fsdp_no_sync (None = off): FSDP2's sync on the last micro-batch only
    fsdp_reshard: str | None = None  # Strategy.fsdp_reshard (one of FSDP_RESHARDS; None = the style's)
    mcore_version: str | None = None  # Strategy.megatron_core_version ("MAJOR.MINOR"; None = the present reading)
    # the model as defined, for its model FLOPs (MFU), where `model` runs every routed expert on every token
    # (experts_implementation dense_all: framework.routed_model); None = `model`
    defined_model: ModelArch | None = None

    @property
    def routed_slots(self) -> Any:
        """Expert-token slots per micro-batch of an average layer: tokens x top-k x capacity factor, over the MoE
        layers' share of the layers."""
        m = self.model
        return self.tok * m.experts_per_token * self.moe_load * m.moe_layer_count / m.layers

    @property
    def trainable_params(self) -> float:
        """Parameters the job trains: all, or the LoRA adapters' where the base is frozen."""
        if self.training.trains_base_weights:
            return _param_split(self.model)[0]
        return lora_trainable_params(self.model, self.training)

    @property
    def moe_rerun(self) -> np.ndarray:
        """The MoE block's forward runs again in backward: full recompute, or selective with recompute_modules
        "moe" (its dispatch and combine all-to-alls and per-expert kernels with it)."""
        again = self.recompute_modules is not None and "moe" in self.recompute_modules
        selective = (self.rc == 1) & again & ~np.asarray(self.fw.selective_op_policy, bool)
        return np.where(selective, 1.0, self.full_share)

    @property
    def expert_fetch(self) -> np.ndarray:
        """How DeepSpeed ZeRO-3 gathers the routed experts, elementwise: the style's zero3_expert_fetch with "auto"
        resolved for this model (`zero3_expert_fetch_default`): "", "block" or "per_expert"."""
        fw = self.fw
        return np.asarray(zero3_expert_fetch_default(np.asarray(fw.zero3_expert_fetch), fw.moe_expert_loop,
                                                     fw.zero3_leaf_families, self.model.family)[0])

    @property
    def domain(self) -> int:
        return self.system.domain_gpus

    def link(self, size: Any, stride: Any, p2p: bool = False) -> Any:
        """The rates a group of `size` ranks at rank stride `stride` communicates at: inside one NVLink bridge of a
        PCIe host, the bridge's (comm.bridge_rates); `r` elsewhere."""
        return comm.bridge_rates(self.r, size, stride, self.system, p2p)


def _step(model: ModelArch, training: Training, system: System, strategy: Any, calibration: Calibration | None,
          framework_style: str | PerfStyle | None, constants: PerfConstants | None) -> _Step:
    k = constants or load_constants()
    check_training(training)
    fw = _style(strategy, framework_style, training.method in ("pretrain", "cpt"))
    defined, model = model, routed_model(model, strategy, training.method in ("pretrain", "cpt"))
    if model is not defined:  # dense_all: one torch.bmm over every expert, no per-expert loop or grouped GEMM
        fw = dataclasses.replace(fw, moe_expert_loop=False, moe_torch_grouped_mm=False)
    fw = _recipe_style(fw, strategy, training, system, k)
    fw = dataclasses.replace(fw, attention_kernel=_te_attention_kernel(_stack_kernel(fw.attention_kernel, fw, system),
                                                                       fw, system, model, k))
    r = _nf4_compute_rate(_rates(system, training, k, calibration, fw), system, training, strategy, k, calibration)
    r = _turbo_grouped_rate(_grouped_mm_rate(_bf16_layers(r, training, model), system, k, fw), system, k, fw,
                            training.precision)
    a = strategy_arrays(strategy)
    r = _wgrad_accum_rate(r, fw, getattr(strategy, "gradient_accumulation_fusion", None),
                          pipeline.micro_batches(training.global_batch_seqs, a["dp"], a["micro_batch"]), a["zero"],
                          training.precision == "fp8")
    # fused element-wise kernels: as the job states, else the timed stack's default (per strategy under auto)
    a["torch_compile"] = np.array(np.broadcast_to(
        np.asarray(torch_compile_of(strategy, fw.compiles_by_default), float), a["tp"].shape))
    t, d, c, b = a["tp"], a["dp"], a["cp"], a["micro_batch"]
    # a micro-batch of b samples is b x sequences_per_sample sequences (DPO: chosen + rejected)
    seqs = float(training.sequences_per_sample)
    row, span = _rows(training, b * seqs, fw.unpads_padding, training.global_batch_seqs * seqs / d)
    return _Step(model=model, training=training, system=system, k=k, fw=fw, r=r, a=a, t=t, p=a["pp"],
                 v=np.maximum(a["vpp"], 1.0), d=d, c=c, e=np.maximum(a["ep"], 1.0), et=np.maximum(a["etp"], 1.0), b=b, rc=a["recompute"],
                 zero=a["zero"], sp=(a["sequence_parallel"] > 0) & (t > 1),
                 m=pipeline.micro_batches(training.global_batch_seqs, d, b),
                 tok=b * seqs * row / c, act=r.act_bytes, row=row, span=span,
                 moe_load=_natural_routing_load(model, training, a["ep"], b * seqs * row / c, k),
                 strategy_dispatcher=str(getattr(strategy, "moe_dispatcher", "auto")),
                 optimizer_impl=optimizer_impl(strategy), loss_impl=str(getattr(strategy, "loss_impl", "auto")),
                 recompute_modules=getattr(strategy, "recompute_modules", None),
                 full_share=(a["recompute"] == 2) * strategy_chunk_shares(
                     strategy, model.layers / np.maximum(a["pp"] * np.maximum(a["vpp"], 1.0), 1.0)).rerun,
                 cp_comm_type=str(getattr(strategy, "cp_comm_type", None) or "p2p"),
                 fp8_attention=bool(getattr(strategy, "fp8_attention", None)) and training.precision == "fp8",
                 fp8_lm_head=bool(getattr(strategy, "fp8_lm_head", None)) and training.precision == "fp8",
                 cuda_graphs=str(getattr(strategy, "cuda_graphs", None) or "none"), bnb_block=bnb_block(strategy),
                 cudnn_release=getattr(strategy, "cudnn_release", None),
                 aiter_mla_bwd_asm=getattr(strategy, "aiter_mla_bwd_asm", None) is not False,
                 nf4_dequant_dtype=str(getattr(strategy, "nf4_dequant_dtype", None) or "compute"),
                 nf4_decode=_named_option(strategy, "nf4_decode", "NF4 decode", NF4_DECODES) or "lut",
                 nf4_double_quant=getattr(strategy, "nf4_double_quant", None),
                 bnb_compute_from_input=bool(getattr(strategy, "bnb_compute_from_input", None)),
                 kbit_residual=training.method == "qlora" and kbit_upcast(
                     strategy, str(getattr(strategy, "framework", None) or "auto"))[1],
                 nf4_lm_head=training.method == "qlora" and bool(getattr(strategy, "nf4_lm_head", None)),
                 lm_head_chunk=getattr(strategy, "lm_head_chunk", None),
                 te_op_fuser=bool(getattr(strategy, "te_op_fuser", None)),
                 no_autocast=getattr(strategy, "autocast", None) is False,
                 local_batch=getattr(strategy, "local_batch", None),
                 stage_edges=pipeline.stated_edges(strategy),
                 grad_accum_fusion=getattr(strategy, "gradient_accumulation_fusion", None),
                 defer_wgrad=bool(getattr(strategy, "defer_embedding_wgrad", None)),
                 wgrad_deferral_limit=getattr(strategy, "wgrad_deferral_limit", None),
                 fsdp_no_sync=bool(getattr(strategy, "fsdp_no_sync", None)),
                 fsdp_reshard=_fsdp_reshard_of(strategy), defined_model=defined,
                 mcore_version=getattr(strategy, "megatron_core_version", None))


def _fsdp_reshard_of(strategy: Any) -> str | None:
    """Strategy.fsdp_reshard checked against names.FSDP_RESHARDS (None = the style's)."""
    value = getattr(strategy, "fsdp_reshard", None)
    if value is not None and value not in FSDP_RESHARDS:
        raise unknown_name("strategy.fsdp_reshard", "FSDP reshard point", value, FSDP_RESHARDS)
    return value


def _recipe_style(fw: PerfStyle, strategy: Any, training: Training, system: System, k: PerfConstants) -> PerfStyle:
    """The style under the job's low-precision recipe: an FP4-peak recipe keeps 16-bit primary weights, so no FP8
    parameter all-gather (calibration.fp4_training, which the memory estimate reads too); a recipe whose quantizer
    Transformer Engine's userbuffers do not take (perf_constants.yaml fp8.recipes te_userbuffers_all_gather: NVFP4)
    runs a TE style (fp8_te_quantizer) without TP communication overlap unless the job states it."""
    changes: dict = {}
    if fp4_training(training, k):
        changes["fp8_param_allgather"] = False
    if training.precision == "fp8" and getattr(strategy, "tp_comm_overlap", None) is None and \
            not k.fp8_recipe(system.accelerator, training.fp8_recipe).get("te_userbuffers_all_gather", 1.0):
        te = np.asarray(fw.fp8_te_quantizer, bool)
        changes["tp_comm_overlap"] = np.asarray(fw.tp_comm_overlap, bool) & ~te if te.ndim else \
            bool(fw.tp_comm_overlap) and not bool(te)
    return dataclasses.replace(fw, **changes) if changes else fw


def _stack_kernel(kernel: Any, fw: PerfStyle, system: System) -> Any:
    """The attention kernel timed on this part: `sdpa` as `native` where the stack puts cuDNN first in SDPA on the
    part's family (PerfStyle.sdpa_cudnn_families: torchtitan on sm100, models/attention.py since PR 1196), per style
    under auto; the kernel as given elsewhere."""
    acc = system.accelerator.lower()
    families = np.asarray(fw.sdpa_cudnn_families)
    # the styles' few values, each compared once (no per-strategy mapping: the search batches 10^6 strategies)
    listed = {str(v) for v in ([families.item()] if families.ndim == 0 else
                               {s.sdpa_cudnn_families for s in PERF_STYLES.values()})}
    cudnn = np.zeros(families.shape, bool)
    for value in listed:
        if value and acc.startswith(tuple(f for f in value.split(",") if f)):
            cudnn |= families == value
    out = np.where((np.asarray(kernel) == "sdpa") & cudnn, "native", np.asarray(kernel))
    return str(out) if out.ndim == 0 else out


def _te_attention_kernel(kernel: Any, fw: PerfStyle, system: System, model: ModelArch, k: PerfConstants) -> Any:
    """`native` as `fa2` where the stack's attention is Transformer Engine's (PerfStyle.te_attention) and its cuDNN
    backend does not train the model's head dims on the part (PerfConstants.te_fused_trains: sm100, d_qk = d_v = 192):
    TE then runs flash-attn's FlashAttention 2, which takes d_qk = d_v (other dims keep the native figures); the
    kernel as given elsewhere (per style under auto)."""
    d_qk, d_v = model.head_dims
    if d_qk != d_v or k.te_fused_trains(system.accelerator, d_qk, d_v):
        return kernel
    out = np.where((np.asarray(kernel) == "native") & np.asarray(fw.te_attention, bool), "fa2", np.asarray(kernel))
    return str(out) if out.ndim == 0 else out


def _rows(training: Training, sequences, unpads: Any, per_device=1.0) -> tuple[Any, Any]:
    """(positions per row, attention span) for micro-batches of `sequences` rows. Unpacked samples
    (Training.per_sample_rows) are padded to the longest of the micro-batch, E[max L] (sample_lengths); their
    attention covers each sample's own length where the kernel skips the padding (`unpads`: transformers'
    FlashAttention-2 path unpads the rows by the attention mask and runs flash_attn_varlen_func), E[L^2] per
    sample, else the padded rows (SDPA / fused attention with is_causal over the padded batch), E[max L^2] per
    row; as a span per padded position both divide by E[max L]. Micro-batches grouped by length
    (Training.length_grouped_samples: LengthGroupedSampler over `per_device` rows a step) are padded to their
    longest in a length-sorted megabatch (sample_lengths.grouped_padded). Other rows: seq_len and
    Training.attention_span."""
    if not training.per_sample_rows:
        return float(training.seq_len) + 0.0 * np.asarray(sequences, float), training.attention_span
    mean, sigma, cut = training.sample_mean_tokens, training.sample_sigma, training.row_cap
    if training.length_grouped_samples > 0:
        mega = sample_lengths.grouped_megabatch(training.length_grouped_samples, per_device)
        row, squared = sample_lengths.grouped_padded(mean, sigma, cut, sequences, mega)
    else:
        row = sample_lengths.padded_tokens(mean, sigma, cut, sequences)
        squared = sample_lengths.padded_squared(mean, sigma, cut, sequences)
    varlen = sample_lengths.squared_tokens(mean, sigma, cut) / row
    return row, np.where(np.asarray(unpads, bool), varlen, squared / row)


def _rates(system: System, training: Training, k: PerfConstants, calibration: Calibration | None,
           fw: PerfStyle) -> Any:
    """calibration.rates for the style's attention kernel (under "auto" one kernel per strategy: the flash
    rate becomes an array), the job's FP8 recipe and whether the style fuses FP8 casts (an array under "auto"
    too)."""
    kernels = np.asarray(fw.attention_kernel)
    fused, te, dims = np.broadcast_arrays(np.asarray(fw.fp8_cast_fused), np.asarray(fw.fp8_te_quantizer),
                                          np.asarray(fw.fp8_cast_per_dim))
    tf32 = bool(np.asarray(fw.fp32_matmul_tf32, bool).reshape(-1)[0])  # each strategy's own: _tf32_rates
    r = rates(system, training.precision, k, calibration, str(kernels.reshape(-1)[0]), training.fp8_recipe,
              bool(fused.reshape(-1)[0]), bool(te.reshape(-1)[0]), tf32, bool(dims.reshape(-1)[0]))
    if kernels.ndim and not np.all(kernels == kernels.reshape(-1)[0]):
        each = {str(name): rates(system, training.precision, k, calibration, str(name), training.fp8_recipe, tf32=tf32)
                for name in np.unique(kernels)}
        r = dataclasses.replace(r, **{field: np.select([kernels == name for name in each],
                                                       [getattr(one, field) for one in each.values()])
                                      for field in ("flash_flops", "flash_bwd_over_fwd")})
    pairs = {(bool(f), bool(t), bool(d)) for f, t, d in zip(fused.reshape(-1), te.reshape(-1), dims.reshape(-1),
                                                             strict=True)}
    if len(pairs) > 1:  # styles differ by strategy (framework auto): each strategy its style's casts
        each = {p: rates(system, training.precision, k, calibration, fp8_recipe=training.fp8_recipe, fused_cast=p[0],
                         te_quantizer=p[1], per_dim_cast=p[2]) for p in pairs}
        pick = [(fused == p[0]) & (te == p[1]) & (dims == p[2]) for p in each]
        r = dataclasses.replace(r, **{name: np.select(pick, [getattr(one, name) for one in each.values()])
                                      for name in ("fp8_cast_bytes", "fp8_cast_kernels", "fp8_weight_cast_bytes",
                                                   "fp8_weight_bwd_bytes", "fp8_cast_bwd_bytes")})
    return _tf32_rates(r, system, training, k, calibration, fw)


def _tf32_rates(r: Any, system: System, training: Training, k: PerfConstants, calibration: Calibration | None,
                fw: PerfStyle) -> Any:
    """`r` (at the first strategy's fp32 matmul precision) with each strategy's own where they differ (framework
    auto under precision fp32: PerfStyle.fp32_matmul_tf32 per stack): the GEMM rates of the other precision, its
    attention rate as the ratio of the two at the first kernel (the kernel's share of the peak is the same)."""
    tf32 = np.asarray(fw.fp32_matmul_tf32, bool)
    first = bool(tf32.reshape(-1)[0])
    if training.precision != "fp32" or np.all(tf32 == first):
        return r
    base, other = (rates(system, "fp32", k, calibration, str(np.asarray(fw.attention_kernel).reshape(-1)[0]),
                         tf32=flag) for flag in (first, not first))
    same = tf32 == first
    return dataclasses.replace(r, **{name: np.where(same, getattr(r, name), getattr(other, name))
                                     for name in ("gemm_flops", "gemm_peak_flops", "gemm16_flops")},
                               flash_flops=np.where(same, r.flash_flops, r.flash_flops * other.flash_flops
                                                    / base.flash_flops))


def _grouped_mm_rate(r: Any, system: System, k: PerfConstants, fw: PerfStyle) -> Any:
    """The routed experts' GEMM rate where the style runs torch._grouped_mm (PerfStyle.moe_torch_grouped_mm): the
    dense rate of the precision (FP8: the recipe's) x its measured share of it on the part
    (gemm.grouped_mm_over_dense; benchmarks/grouped_mm.py derives it from TorchAO's B200 table)."""
    on = np.asarray(fw.moe_torch_grouped_mm, bool)
    if not np.any(on):
        return r
    grouped = r.gemm_flops * k.grouped_mm_over_dense(system.accelerator)
    return dataclasses.replace(r, grouped_gemm_flops=np.where(on, grouped, r.gemm_flops))


def _turbo_grouped_rate(r: Any, system: System, k: PerfConstants, fw: PerfStyle, precision: str) -> Any:
    """The routed experts' GEMM rate where they run Primus-Turbo's grouped GEMM (PerfStyle.moe_turbo_grouped_gemm):
    the dense rate of the precision x the kernel's measured share of it on the part (gemm.turbo_grouped_gemm_over_dense,
    derived from Primus-Turbo PR 252's MI355X table by benchmarks/turbo_grouped_gemm.py); it replaces torch._grouped_mm's
    where both are stated (one kernel runs the experts). Parts without a figure keep the dense rate."""
    on = np.asarray(fw.moe_turbo_grouped_gemm, bool)
    if not np.any(on):
        return r
    grouped = r.gemm_flops * k.turbo_grouped_gemm_over_dense(system.accelerator, precision)
    return dataclasses.replace(r, grouped_gemm_flops=np.where(on, grouped, r.grouped_gemm_flops))


def _wgrad_accum_rate(r: Any, fw: PerfStyle, fusion: bool | None, m: Any, zero: Any, low_precision: bool) -> Any:
    """`r` with the weight-gradient GEMMs' output bytes where they accumulate into the main gradient (Rates.
    wgrad_out_bytes): the job's gradient_accumulation_fusion, else the style's default (PerfStyle.wgrad_accum_default),
    in a stack that has such a GEMM (PerfStyle.wgrad_accum_kernel). The GEMM writes the main gradient in its dtype, the
    reduce dtype (Megatron-Core's DDP buffer: torch.float under grad_reduce_in_fp32, else the parameters'), and reads
    it first where it accumulates. Transformer Engine ("te") accumulates unless the module's is_first_microbatch is
    set (module/linear.py, grouped_linear.py: accumulate_wgrad_into_param_main_grad = fuse_wgrad_accumulation and not
    is_first_microbatch) or the parameter is to be overwritten (Megatron-FSDP's sharded gradients, ZeRO >= 2:
    overwrite_main_grad); Megatron-Core sets it at each step's first micro-batch only under FP8 / FP4
    (MegatronModule.set_is_first_microbatch), so a read on (m - 1) / m of the micro-batches there and on every one in
    16-bit training (TransformerEngine d0067d0d, Megatron-LM d98e8a64). Apex's wgrad_gemm_accum_fp32 / fp16 ("apex":
    Megatron's LinearWithGradAccumulationAndAsyncCommunication) always reads."""
    kernel = np.asarray(fw.wgrad_accum_kernel)
    on = np.asarray(fw.wgrad_accum_default, bool) if fusion is None else np.full(kernel.shape, bool(fusion))
    on = on & (kernel != "")
    if not np.any(on):
        return r
    m = np.maximum(np.asarray(m, float), 1.0)
    main = np.maximum(np.asarray(fw.grad_reduce_bytes, float), r.act_bytes)
    te_reads = np.where(np.asarray(zero) >= 2, 0.0, (m - 1.0) / m if low_precision else 1.0)
    reads = np.where(kernel == "te", te_reads, 1.0)
    return dataclasses.replace(r, wgrad_out_bytes=np.where(on, main * (1.0 + reads), 0.0))


def _bf16_layers(r: Any, training: Training, model: ModelArch) -> Any:
    """The average decoder layer's linear GEMM rate and casts when Training.bf16_layers layers run in BF16 (Megatron-Core
    first_last_layers_bf16): a share s of the layers at the low-precision rate, the rest at the 16-bit GEMM rate with
    no casts, of activations or of weights (time-weighted: 1 / (s / low + (1 - s) / bf16))."""
    s = low_precision_share(training, model)
    if s >= 1.0:
        return r
    return dataclasses.replace(r, gemm_flops=1.0 / (s / r.gemm_flops + (1.0 - s) / r.gemm16_flops),
                               fp8_cast_bytes=r.fp8_cast_bytes * s, fp8_cast_kernels=r.fp8_cast_kernels * s,
                               fp8_cast_bwd_bytes=r.fp8_cast_bwd_bytes * s,
                               fp8_weight_cast_bytes=r.fp8_weight_cast_bytes * s,
                               fp8_weight_bwd_bytes=r.fp8_weight_bwd_bytes * s)


def _elementwise_passes(x: _Step) -> Any:
    """HBM traffic of a layer's element-wise work relative to the fused count (compute.eager_elementwise_traffic):
    under torch.compile or the framework's own fused kernels (TE / Apex) 1; eager PyTorch op by op otherwise.
    strategy.norm_kernel, where given, decides the two norms either way: "fused" the fused count (torchtitan's
    fused_rmsnorm in an eager run), "eager" the eager ops' (a model whose norm is left out of the fused kernels);
    strategy.activation_kernel the SwiGLU likewise (nanotron's eager F.silu and product beside its fused norm)."""
    model, k, fw = x.model, x.k, x.fw

    def traffic(norm_kernel: str | None, fused_rest: bool) -> Any:
        return compute.eager_elementwise_traffic(model, k.eager_bytes_per_element, fw.rope_eager_bytes, norm_kernel,
                                                 fused_rest=fused_rest, act_kernel=fw.activation_kernel,
                                                 rope_kernel=fw.rope_kernel)
    return np.where(_fused_elementwise(x), _per_norm_kernel(x, lambda n: traffic(n, True)),
                    _per_norm_kernel(x, lambda n: traffic(n, False)))


def _per_norm_kernel(x: _Step, fn: Callable[[str | None], Any]) -> Any:
    """fn(the style's norm kernel); per strategy where that is an array (framework auto with strategy.torch_version:
    the strategies whose picked style runs F.rms_norm fused, _release_norm_kernel): fn("fused") there, fn(None) elsewhere."""
    kernel = x.fw.norm_kernel
    if not isinstance(kernel, np.ndarray):
        return fn(kernel)
    return np.where(kernel == "fused", fn("fused"), fn(None))


def _fused_elementwise(x: _Step) -> Any:
    """Whether the element-wise ops run fused: torch.compile, or the framework's own fused kernels (TE / Apex)."""
    return (x.a["torch_compile"] > 0) | np.asarray(x.fw.fused_kernels)


def _inductor_fused(x: _Step) -> Any:
    """Whether torch.compile's Inductor fuses the element-wise ops: compiled, where the framework has no fused kernels
    of its own (a style's own fused kernels leave the eager ops they do not cover eager)."""
    return (np.asarray(x.a["torch_compile"]) > 0) & ~np.asarray(x.fw.fused_kernels, bool)


def _moe_passes(x: _Step) -> tuple[Any, Any, Any] | None:
    """An MoE layer's element-wise traffic relative to the fused count, by part (compute.moe_elementwise_traffic):
    its norms, residuals and RoPE; the routed experts' activation; the shared experts' (and the dense MLP's) as
    strategy.activation_kernel and the style say, eager unless torch.compile or the framework's fused kernels.
    The routed experts' activation is compiled on its own behind DeepEP on a PyTorch-native style (`moe_dispatcher:
    flex`, as activations.layer_items deepep_experts): NeMo AutoModel's GroupedExpertsDeepEP calls
    weighted_bias_swiglu_impl (@torch.compile'd weighted_swiglu / weighted_swiglu_back, components/moe/megatron/
    moe_utils.py) or the @torch.compile'd quick_geglu_deepep (gpt-oss), while its shared experts and dense layers
    are the MLP class's eager F.silu(gate) * up (components/moe/layers.py at 8d9bfb90e). None for a dense model."""
    model, k, fw = x.model, x.k, x.fw
    if not model.is_moe:
        return None

    def traffic(norm_kernel: str | None, fused_rest: bool) -> tuple[Any, float]:
        return compute.moe_elementwise_traffic(model, k.eager_bytes_per_element, fw.rope_eager_bytes, norm_kernel,
                                               fused_rest=fused_rest, act_kernel=fw.activation_kernel,
                                               rope_kernel=fw.rope_kernel)
    # the norms, residuals and RoPE by the norm kernel; the activation's part does not read it
    eager = (_per_norm_kernel(x, lambda n: traffic(n, False)[0]), traffic(None, False)[1])
    fused = (_per_norm_kernel(x, lambda n: traffic(n, True)[0]), traffic(None, True)[1])
    compiled = _fused_elementwise(x)
    common, shared = (np.where(compiled, f, e) for f, e in zip(fused, eager, strict=True))
    routed = np.where(x.strategy_dispatcher in FLEX_DISPATCHERS, 1.0, shared)
    return common, routed, shared


def _ce_unfused(x: _Step) -> Any:
    """The loss runs as separate kernels over an fp32 copy of the logits: the style's (Megatron-DeepSpeed, GPT-NeoX),
    or the job's loss_impl vocab-parallel-unfused (Megatron-LM's default, cross_entropy_loss_fusion false; nanotron)."""
    return np.asarray(x.fw.ce_unfused_fp32, bool) | (x.loss_impl == "vocab-parallel-unfused")


def _fp8_weight_casts(x: _Step) -> Any:
    """FP8 weight casts per micro-batch: once per step with the style's FP8 weight cache, every micro-batch
    without; FP8 primary weights (fp8_param_allgather) cast only the shard ZeRO-3 / FSDP updates, and a frozen
    base stored in FP8 (LoRA under NeMo's fp8_params / Megatron-Core fp8_param_gather: TE fp8_model_init creates
    the base weights as FP8 tensors at load) is never cast again, since no optimizer step changes it."""
    casts = np.where(np.asarray(x.fw.fp8_weight_cache), 1.0 / x.m, 1.0)
    gathered = np.asarray(x.fw.fp8_param_allgather) & (x.zero >= 3)
    casts = casts / np.where(gathered, x.d * x.c, 1.0)
    # torchao's dgrad takes the gathered FP8 weight column-major: a transposed copy of it (read 1 B, write 1 B: half
    # a 4-B cast) every micro-batch (torchao float8 preprocess_data: b.t().contiguous().t() for a row-major b)
    casts = casts + np.where(gathered & ~np.asarray(x.fw.fp8_weight_cache), 0.5, 0.0)
    if x.training.trains_base_weights:
        return casts
    return np.where(np.asarray(x.fw.fp8_param_allgather), 0.0, casts)


def _windowed_shapes(x: _Step) -> compute.ModelShapes:
    """The model's shapes with its sliding windows kept only where the style's kernel skips the tiles outside them
    (PerfStyle.sliding_windows; arrays under auto)."""
    shapes = _shapes(x.model)
    if shapes.window_share <= 0 or np.all(x.fw.sliding_windows):
        return shapes
    return dataclasses.replace(shapes, window_share=np.where(x.fw.sliding_windows, shapes.window_share, 0.0))


def _layer_time(x: _Step) -> tuple[compute.LayerTimes, np.ndarray]:
    """Compute time of one average decoder layer (compute.py) and its forward + backward for one micro-batch,
    with QLoRA's dequantisation of the NF4 weights."""
    model, training, k, r, t, rc = x.model, x.training, x.k, x.r, x.t, x.rc
    seqs = float(training.sequences_per_sample)
    bwd_ratio = r.flash_bwd_over_fwd if np.any(r.flash_bwd_over_fwd) else k.flash_bwd_over_fwd
    # FP8 attention (strategy.fp8_attention): the forward and the backward each at the part's measured FP8 / BF16
    # throughput (perf_constants.yaml attention.fp8_attention_speedup; MXFP8's under that recipe), times the cuDNN
    # release's (_cudnn_release) and the kernel's rate at its sequence length (_native_length) and head dims (_narrow_head)
    recipe = k.fp8_recipe(x.system.accelerator, training.fp8_recipe)["name"] if x.fp8_attention else ""
    fp8_fwd, fp8_bwd = k.fp8_attention(x.system.accelerator, model.head_dims[0], recipe) if x.fp8_attention else (1.0, 1.0)
    len_fwd, len_bwd = _native_length(x)
    rel_fwd, rel_bwd = _cudnn_release(x)
    head_fwd, head_bwd = _narrow_head(x)
    ring_fwd, ring_bwd = _cp_ring_calls(x)
    grid_fwd, grid_bwd = _attention_grid(x)
    # an explicit mask (Training.explicit_attention_mask) runs SDPA's memory-efficient backend over the whole square
    mem_fwd, mem_bwd, bwd_ratio = _mask_backend(x, bwd_ratio)
    att_fwd = mem_fwd * fp8_fwd * rel_fwd * len_fwd / (head_fwd * ring_fwd * grid_fwd)
    att_bwd = mem_bwd * fp8_bwd * rel_bwd * len_bwd / (head_bwd * ring_bwd * grid_bwd * _ck_mla_bwd_pad(x))
    tiles, rate_length = _native_blocks(x)
    lt = compute.layer_times(_windowed_shapes(x), x.row, r, tp=t, cp=x.c, micro_batch=x.b * seqs, sp=x.sp,
                             recompute=rc, ep=x.e, flash=training.flash_attention, flash_rate=r.flash_flops * att_fwd,
                             flash_bwd_over_fwd=bwd_ratio * att_fwd / att_bwd,
                             trains_base_weights=training.trains_base_weights,
                             moe_capacity_factor=x.moe_load,
                             elementwise_passes=_elementwise_passes(x), moe_passes=_moe_passes(x),
                             fp8_weight_casts=_fp8_weight_casts(x),
                             selective_op_policy=x.fw.selective_op_policy,
                             sac_attention_saved=x.fw.sac_saves_attention, attention_span=x.span, sequence_first=x.fw.sequence_first,
                             split_projections=x.fw.split_projections, ce_unfused_fp32=_ce_unfused(x),
                             recompute_modules=x.recompute_modules, full_recompute_share=x.full_share,
                             fp8_gathered_casts=_fp8_tp_gather_share(x),
                             flash_head_pad=compute.flash_head_dim_ratio(*model.head_dims, x.fw.attention_kernel),
                             block_tiles=tiles, rate_length=rate_length, etp=x.et,
                             router_gemm=training.moe_routing != "fake-balanced",
                             window_backward_skips=_window_backward_skips(x), tp_token_split=x.fw.moe_tp_token_split,
                             fused_act_cast=x.te_op_fuser,
                             op_sac_linears_recomputed=op_sac_unsaved_share(training, model),
                             pad_share=training.pad_share, full_square=training.explicit_attention_mask)
    lt = _with_l2_rereads(x, lt)
    if x.loss_impl == "chunked-nll":
        lt = dataclasses.replace(lt, head_bwd=lt.head_bwd + _chunked_nll_time(x, lt))
    fp32_fwd, fp32_bwd = _fp32_loss_excess(x)
    lt = dataclasses.replace(lt, head_fwd=lt.head_fwd + fp32_fwd, head_bwd=lt.head_bwd + fp32_bwd)
    if "lm_head_adapter" in lora_targets(training):
        lora_fwd, lora_bwd = _lora_head_time(x)
        lt = dataclasses.replace(lt, head_fwd=lt.head_fwd + lora_fwd, head_bwd=lt.head_bwd + lora_bwd)
    if x.fp8_lm_head:  # Megatron-Core fp8_output_proj, torchtitan's MXFP8 converter (validate.py: MXFP8 only)
        d_fwd, d_bwd = compute.fp8_lm_head_delta(_shapes(model), x.tok, t, training.trains_base_weights, r,
                                                 _fp8_weight_casts(x))
        lt = dataclasses.replace(lt, head_fwd=lt.head_fwd + d_fwd, head_bwd=lt.head_bwd + d_bwd)
    if x.nf4_lm_head:  # Lightning's BitsandbytesPrecision: the LM head dequantised at every call, each pass
        d = _nf4_head_time(x)
        lt = dataclasses.replace(lt, head_fwd=lt.head_fwd + d, head_bwd=lt.head_bwd + d)
    layer_mb = lt.fwd + lt.bwd + _nf4_dequant_time(x)
    return lt, (layer_mb + _lora_adapters(x) + _expert_bias_time(x) + _expert_bias_index_add_time(x)
                + _activation_clamp_time(x) + _fp8_expert_padding_time(x) + _rope_unfused_time(x)
                + _flash_qkv_pack_time(x) + _fused_expert_grad_time(x) + _expert_loop_input_grad_time(x)
                + _expert_loop_glue_time(x)
                + _moe_unfused_time(x) + _moe_eager_glue_time(x) + _sequential_mlp_time(x)
                + _sp_layout_copies(x) + _eager_swiglu_backward_time(x) + _eager_chain_backward_time(x)
                + _amp_fp32_weights_time(x)
                + _kbit_fp32_stream_time(x)
                + _eager_attention_time(x) + _mask_read_time(x))


def _mask_read_time(x: _Step) -> Any:
    """Seconds per average layer and micro-batch SDPA's memory-efficient kernels spend reading the explicit mask
    (Training.explicit_attention_mask; transformers' (micro-batch, 1, s, s), broadcast over heads, in the query's
    dtype): each pass loads every score's mask element from global memory into shared memory between its two GEMMs,
    outside the MMA pipeline (kernel_forward.h MM0::BiasLoader::load; the backward's MatmulQK before recomputing P).
    The grids (query or key blocks fastest, then heads: getBlocksGrid, SDPA passing no num_splits_key) put two heads'
    reads of one tile a batch element's whole mask apart (s^2 x bytes), so where that exceeds the part's measured L2
    resident set (or none is measured) every head reads it from DRAM, else the first head only (known-gaps 216 (g)).
    Charged at the HBM stream rate: the forward, once more under full recompute, and the backward; nothing on the
    vendors whose flash kernel runs it (ROCm, attention.mem_efficient_is_flash_vendors), nor on the eager path."""
    if (not x.training.explicit_attention_mask or not x.training.flash_attention
            or x.system.vendor in x.k.mem_efficient_is_flash_vendors):
        return 0.0  # the eager path's chain reads the mask already (eager_attention)
    s, elem = np.asarray(x.row, float), float(x.r.act_bytes)
    resident = float(x.r.l2_resident_bytes)
    readers = np.where((resident <= 0) | (s * s * elem > resident), float(x.model.heads) / x.t, 1.0)
    mask = x.b * float(x.training.sequences_per_sample) * readers * s / x.c * s * elem
    return compute.stream_time(mask * (2.0 + x.full_share), x.r, kernels=0.0)


def _mask_backend(x: _Step, bwd_ratio: Any) -> tuple[Any, Any, Any]:
    """(forward rate, backward rate over the job kernel's, backward / forward time) of the attention under an explicit
    mask (Training.explicit_attention_mask: SDPA's memory-efficient backend). NVIDIA and others: xFormers' CUTLASS
    kernels at their measured share of the kernel's rate (calibration.mem_efficient_over_fa2_at: the kMaxK 64 kernels'
    at head dims to 64, attention.mem_efficient_over_fa2 above), its backward ratio, on the head dims their tiles run
    (calibration.mem_efficient_head_pad in place of the job kernel's compiled-head-dim padding,
    compute.flash_head_dim_ratio); a 16-bit backward on a part whose block shared memory does not hold the 128x128
    tiles at the 64x64 tiles' figure (calibration.mem_efficient_bwd_over_fa2_at); a vendor whose PyTorch runs that backend as its flash kernel
    (attention.mem_efficient_is_flash_vendors, ROCm's AOTriton: sdp_utils.cpp at 21c3369e) at SDPA's own figures there
    (flash_efficiency_sdpa / flash_bwd_over_fwd_sdpa; FA2's where none)."""
    k, acc = x.k, x.system.accelerator
    if not x.training.explicit_attention_mask:
        return 1.0, 1.0, bwd_ratio
    kernels = np.asarray(x.fw.attention_kernel)
    if x.system.vendor not in k.mem_efficient_is_flash_vendors:
        dims = x.model.head_dims
        ratio = compute.flash_head_dim_ratio(*dims, kernels)
        rate = k.mem_efficient_over_fa2_at(*dims) * ratio
        bwd = k.mem_efficient_bwd_over_fa2_at(acc, *dims) * ratio if x.training.precision != "fp32" else rate
        pad_fwd, pad_bwd = k.mem_efficient_head_pad(*dims)
        return rate / pad_fwd, bwd / pad_bwd, bwd_ratio
    names = [str(n) for n in np.unique(kernels)]
    own = np.select([kernels == n for n in names], [k.flash_fraction(acc, n) for n in names])
    rate = k.flash_fraction(acc, "sdpa") / own
    return rate, rate, k.flash_bwd_ratio(acc, "sdpa")


def _eager_attention_time(x: _Step) -> Any:
    """Seconds per average layer and micro-batch a non-flash attention's element-wise chain streams over the score
    matrix beyond the fused count compute._attention_core charges (perf_constants.yaml eager_attention, counted from
    the code, not fitted): the job's or the style's chain (strategy.eager_attention, PerfStyle.eager_attention) and,
    on a soft-capped model (ModelArch.attention_softcap), the cap's three passes. Forward once more under full
    recompute; 16-bit activations only (the counts are of bf16 / fp16 scores); nothing under torch.compile (Inductor
    fuses the chain) or a flash kernel (the scores never reach HBM)."""
    if x.training.flash_attention or x.training.precision not in ("bf16", "fp16"):
        return 0.0
    ea = x.k.raw["eager_attention"]
    unfused = np.asarray(x.fw.eager_attention).astype(str) == "fp32_softmax"
    extra = {key: np.where(unfused, ea["fp32_softmax"][key] - ea["fused"][key], 0.0)
             + (ea["softcap"][key] if x.model.attention_softcap else 0.0)
             for key in ("fwd", "bwd", "kernels_fwd", "kernels_bwd")}
    compiled = _inductor_fused(x)
    s = np.asarray(x.row, float)
    scores = x.b * float(x.training.sequences_per_sample) * float(x.model.heads) / x.t * s / x.c * s
    passes = 1.0 + x.full_share
    fwd = compute.stream_time(scores * extra["fwd"], x.r, kernels=extra["kernels_fwd"])
    bwd = compute.stream_time(scores * extra["bwd"], x.r, kernels=extra["kernels_bwd"])
    return np.where(compiled, 0.0, passes * fwd + bwd)


def _amp_fp32_weights_time(x: _Step) -> Any:
    """Seconds per average layer and micro-batch of 16-bit autocast over fp32 weights beyond what the layer counts in
    the activations' 16-bit dtype (perf_constants.yaml amp_fp32_weights, counted from transformers' Llama code, not
    fitted): the embedding's fp32 output keeps the residual stream fp32, so the eager RMSNorms lose their two casts
    and multiply the weight in fp32, each residual add reads and writes 4 B, every linear reading a normed stream
    (q, k, v; gate and up, or one up projection) casts it to 16 bit, and RoPE runs on fp32 cos / sin and is cast
    back for attention; autocast casts each layer weight once per forward (again in a recomputed one) and its
    gradient back in the backward. Element-wise backward at twice the forward bytes, as the layer's. Where the style
    keeps fp32 weights under autocast (PerfStyle.amp_fp32_weights), a full fine-tune in bf16 / fp16 at ZeRO 0 (ZeRO /
    FSDP under the HF Trainer run 16-bit weights: DeepSpeed's engine, FSDP's param_dtype), eager element-wise work,
    dense models (an MoE layer's routed casts not counted)."""
    m = x.model
    if m.is_moe or m.is_hybrid:
        return 0.0
    on = _fp32_weights(x) & ~np.asarray(_fused_elementwise(x), bool)
    if not np.any(on):
        return 0.0
    b = x.k.raw["amp_fp32_weights"]
    h = float(m.hidden)
    inputs = 3.0 + (2.0 if m.mlp == "swiglu" else 1.0)  # linears reading a normed stream (split projections)
    norms = 2.0 * b["norm"] * h if m.norm == "rmsnorm" else 0.0
    rope = b["rope"] * float(m.q_dim + m.kv_dim) if m.position == "rope" else 0.0
    per_tok = norms + inputs * b["input_cast"] * h + 2.0 * b["residual_add"] * h + rope
    kernels = inputs + 2.0 * (m.position == "rope") - 2.0 * 2.0 * (m.norm == "rmsnorm")  # casts added, norms' gone
    ew = compute.stream_time(x.tok * per_tok / x.t, x.r, kernels=kernels)
    lf = layer_flops(m)
    weights = (lf.gemm() - lf.experts) / 2.0 / m.layers / x.t  # GEMM weight elements per layer on this GPU
    n_lin = 4.0 + (3.0 if m.mlp == "swiglu" else 2.0)
    cast = compute.stream_time(weights * b["weight_cast"], x.r, kernels=n_lin)
    passes = 1.0 + x.full_share
    return np.where(on, passes * (ew + cast) + 2.0 * ew + cast, 0.0)


def _fp32_weights(x: _Step) -> np.ndarray:
    """Whether the layer weights (and so their gradients) are fp32 under 16-bit autocast: the style keeps them so
    (PerfStyle.amp_fp32_weights) for a full fine-tune in bf16 / fp16 at ZeRO 0 unless the job states model-dtype
    states (strategy.optimizer_precision); else they are in the 16-bit dtype."""
    t = x.training
    if t.method != "full" or t.precision not in ("bf16", "fp16"):
        return np.zeros(np.shape(x.zero), bool)
    return np.asarray(x.fw.amp_fp32_weights, bool) & ~np.asarray(x.fw.model_dtype_states, bool) & (x.zero == 0)


def _kbit_fp32_stream_time(x: _Step) -> Any:
    """Seconds per average layer and micro-batch of QLoRA's fp32 stream beyond the layer in 16 bit (kbit_stream;
    docs/known-gaps.md 243 (a)): where PEFT's prepare_model_for_kbit_training leaves the norms fp32
    (model_states.kbit_upcast) under 16-bit autocast, the 4-bit linears reading them return fp32, so each of their
    inputs is cast to 16 bit and each output back to fp32 (and each gradient the other way in the backward), the
    residual stream, RoPE and the MLP's product run fp32; where bitsandbytes takes the fp32 input's dtype as its
    compute dtype (Strategy.bnb_compute_from_input) each dequantised weight is cast to fp32 and back to 16 bit for
    the GEMM, forward and recompute. Upcasts at the part's dynamic-cast rate (perf_constants.yaml dynamic_cast; the
    stream elsewhere), downcasts and element-wise bytes at the stream, element-wise backward at twice the forward as
    the layer's. An MoE layer's router and routed experts where transformers' expert loop runs them
    (PerfStyle.moe_expert_loop), every local expert's weights cast. Eager element-wise work (none where fused), a
    bf16 / fp16 job under autocast, not a hybrid model."""
    m, t = x.model, x.training
    if not x.kbit_residual or x.no_autocast or t.precision not in ("bf16", "fp16") or m.is_hybrid:
        return 0.0
    on = ~np.asarray(_fused_elementwise(x), bool)
    if not np.any(on):
        return 0.0
    loop = np.asarray(x.fw.moe_expert_loop, bool)
    c = x.k.raw["kbit_fp32_stream"]
    return np.where(on, np.where(loop, _kbit_stream_s(x, fp32_stream(m, t, c, True)),
                                 _kbit_stream_s(x, fp32_stream(m, t, c, False))), 0.0)


def _kbit_stream_s(x: _Step, c: Fp32Stream) -> Any:
    """`_kbit_fp32_stream_time` of the counts `c`: the forward's casts and bytes (again under recompute), the
    backward's casts the other way and element-wise at twice the forward, the weight casts a forward pass."""
    tok = x.tok / x.t  # QLoRA runs without TP: the split of the column-parallel widths not taken apart
    up_fwd, down_fwd = _upcast_s(x, tok * c.up_elems), compute.stream_time(tok * c.down_elems * 6.0, x.r, kernels=0.0)
    up_bwd, down_bwd = _upcast_s(x, tok * c.down_elems), compute.stream_time(tok * c.up_elems * 6.0, x.r, kernels=0.0)
    ew = compute.stream_time(tok * c.extra_bytes, x.r, kernels=c.casts)
    weights = c.weight_elems / x.t + c.expert_weight_elems / (x.et * x.e)
    weight_casts = np.where(x.bnb_compute_from_input, _upcast_s(x, weights) + compute.stream_time(
        weights * 6.0, x.r, kernels=c.casts), 0.0)
    return (1.0 + x.full_share) * (up_fwd + down_fwd + ew + weight_casts) + up_bwd + down_bwd + 2.0 * ew


def _upcast_s(x: _Step, elems: Any) -> Any:
    """Seconds of 16-bit -> fp32 copies of `elems` elements: PyTorch's unvectorised dynamic-cast copy at the part's
    rate (perf_constants.yaml dynamic_cast) where that is below the HBM stream of their 6 B, else the stream."""
    stream = compute.stream_time(elems * 6.0, x.r, kernels=0.0)
    rate = x.k.dynamic_cast_elems_s(x.system.accelerator)
    return stream if rate is None else np.maximum(stream, elems / rate)


def _nf4_dequant_time(x: _Step) -> Any:
    """Seconds per average layer and micro-batch of QLoRA's dequantisation (0 otherwise): NF4 weights are dequantised
    to 16-bit before every use (forward, backward, recompute): read 0.5 B, write 2 B per weight element (Dettmers et
    al. 2023, QLoRA s3; bitsandbytes dequantize kernel). Weight elements per average layer on this GPU: the dense GEMMs
    and every local expert (each one that receives tokens is dequantised, not only a token's top-k)."""
    if x.training.method != "qlora":
        return 0.0
    model = x.model
    passes = 2.0 + x.full_share
    lf = layer_flops(model)
    dense_w = (lf.gemm() - lf.experts) / 2.0 / model.layers
    expert_w = _param_split(model)[1] / model.layers
    gemm_w = dense_w / x.t + expert_w / (x.et * x.e)
    return passes * (_nf4_weights_pass_s(x, gemm_w) + _nf4_compute_cast_time(x))


def _nf4_weights_pass_s(x: _Step, w: Any) -> Any:
    """Seconds to dequantise `w` NF4 weight elements once (read 0.5 B, write the quant state's dtype: 2 B, 4 B for
    an fp32 job's fp32 4-bit linears; its kernels) and, where the quant state is fp16, recast them
    (`_nf4_recast_time`): what every use of a 4-bit weight costs before its GEMM."""
    written = 4.0 if x.training.precision == "fp32" and x.nf4_dequant_dtype != "fp16" else 2.0
    return (compute.stream_time(w * (0.5 + written), x.r,
                                kernels=compute.KERNELS["nf4_dequantise"] * _nf4_kernels(x))
            + _nf4_tree_excess(x, w, 0.5 + written) + _nf4_recast_time(x, w))


def _nf4_tree_excess(x: _Step, w: Any, nbytes: float) -> Any:
    """Seconds the NF4 kernel over `w` values (`nbytes` read and written a value) runs beyond its HBM stream where it
    decodes through dDequantizeNF4's branching tree (Strategy.nf4_decode tree: bitsandbytes 0.39-0.47,
    kDequantizeBlockwise) on a part where that is issue-bound: w / the part's tree rate (perf_constants.yaml
    nf4_tree_decode, counted from the kernel's SASS) less the stream. 0 for the table lookup (0.48.0+) and elsewhere."""
    rate = x.k.nf4_tree_decode_values_s(x.system.accelerator) if x.nf4_decode == "tree" else None
    if rate is None:
        return 0.0
    return np.maximum(w / rate - w * nbytes / x.r.hbm_bytes_s, 0.0)


def _nf4_fp16_compute(x: _Step) -> bool:
    """Whether an fp32 job's 4-bit linears compute in fp16 (model_states.nf4_fp16_compute)."""
    return nf4_fp16_compute(x.training, x.nf4_dequant_dtype, x.bnb_compute_from_input)


def _nf4_compute_cast_time(x: _Step) -> Any:
    """Seconds of one pass's fp32 <-> fp16 copies around a dense layer's 4-bit linears where they compute in fp16
    (`_nf4_fp16_compute`; 0 otherwise): each linear's input to fp16 and output back to fp32 in the forward, the
    output gradient to fp16 and the input gradient back in the backward (the autograd of the two .to copies): 4 + 2
    B per element, two kernels a linear; the widths of the layer's linears (model_states.dense_linear_widths), the
    column-parallel split over TP ignored (QLoRA runs without TP)."""
    if not _nf4_fp16_compute(x):
        return 0.0
    d_in, d_out, n_lin = dense_linear_widths(x.model)
    return compute.stream_time(x.tok * (d_in + d_out) * 6.0, x.r, kernels=2.0 * n_lin)


def _nf4_compute_rate(r: Any, system: System, training: Training, strategy: Any, k: PerfConstants,
                      calibration: Calibration | None) -> Any:
    """`r` with the linear layers' GEMMs at the fp16 rate where an fp32 job's 4-bit linears compute in fp16
    (model_states.nf4_fp16_compute); the LM head, the attention and the other 16-bit-class GEMMs keep fp32's."""
    if not nf4_fp16_compute(training, getattr(strategy, "nf4_dequant_dtype", None),
                            bool(getattr(strategy, "bnb_compute_from_input", None))):
        return r
    return dataclasses.replace(r, gemm_flops=rates(system, "fp16", k, calibration).gemm_flops)


def _nf4_head_time(x: _Step) -> Any:
    """Seconds of one pass (forward or backward) of a micro-batch over an NF4 LM head (Strategy.nf4_lm_head): each call
    of the head runs MatMul4Bit, which dequantises the whole weight before its GEMM, forward and again for the input
    gradient (bitsandbytes autograd/_functions.py, 0.41.0-0.48.0), plus the fp16 recast where the quant state is fp16
    (`_nf4_recast_time`). LitGPT calls its head on each lm_head_chunk_size = 128 positions of the rows
    (litgpt/model.py GPT.forward `[self.lm_head(x_i) for x_i in x.split(lm_head_chunk_size, dim=1)]`, finetune/lora.py
    at 8641822 and 00af8b0d): ceil(row / chunk) calls a pass (Strategy.lm_head_chunk), else one."""
    head_w = float(x.model.lm_head_params) / x.t  # an untied head (LitGPT unties its checkpoints: known-gaps 100 (d))
    chunk = x.lm_head_chunk
    calls = np.ceil(np.asarray(x.row, float) / float(chunk)) if chunk else 1.0
    return calls * _nf4_weights_pass_s(x, head_w)


def _nf4_recast(x: _Step) -> bool:
    """Whether each dequantised NF4 weight is cast again before its GEMM (model_states.nf4_recast)."""
    return nf4_recast(x.training, x.nf4_dequant_dtype, x.bnb_compute_from_input)


def _nf4_recast_time(x: _Step, gemm_w: Any) -> Any:
    """Seconds of one pass's fp16 -> compute-dtype copies of a layer's dequantised weights (`gemm_w` elements, 0
    unless _nf4_recast): PyTorch's copy between two dtypes is its unvectorised dynamic-cast kernel (aten Copy.cu
    direct_copy_kernel_cuda -> gpu_kernel with LoadWithCast), at perf_constants.yaml dynamic_cast's per-SM rate on
    the parts it lists, else the HBM stream (read 2 B, write the compute dtype's); one kernel per linear weight."""
    if not _nf4_recast(x):
        return 0.0
    stream = compute.stream_time(gemm_w * (2.0 + x.act), x.r, kernels=compute.KERNELS["nf4_dequantise"])
    rate = x.k.dynamic_cast_elems_s(x.system.accelerator)
    if rate is None:
        return stream
    return np.maximum(stream, gemm_w / rate + compute.KERNELS["nf4_dequantise"] * x.r.kernel_fixed_s)


def _launch_op_s(vendor: str) -> float:
    """Host seconds to issue one launch-bound op on `vendor`'s stack (host_figure launch_bound_op_s), NVIDIA's where
    the vendor has no figure."""
    return _vendor_host_s("launch_bound_op_s", vendor)


def _vendor_host_s(name: str, vendor: str) -> float:
    """host_sync figure `name` for the vendor, NVIDIA's where the vendor has none."""
    return host_figure(name, vendor) or host_figure(name, "nvidia")


def _rope_thd_op_s(x: _Step) -> float:
    """Host seconds a kernel of Megatron-Core's unfused THD RoPE loop costs, forward or backward: an eager
    element-wise op end to end (host_sync elementwise_op_s, NVIDIA's where the vendor has none; no BLAS path, as
    launch_bound_op_s's torch.mm has) and the loop's views, Python and autograd bookkeeping between its kernels
    (eager_loop_glue rope_thd_s_per_kernel, measured on CPU: device independent). docs/known-gaps.md 325 (a)."""
    return _vendor_host_s("elementwise_op_s", x.system.vendor) + float(x.k.raw["eager_loop_glue"]["rope_thd_s_per_kernel"])


def _nf4_kernels(x: _Step) -> Any:
    """Kernels of one NF4 weight's dequantisation: bitsandbytes' double quantisation (perf style bnb_nested_dequant,
    or the job's strategy.nf4_double_quant) dequantizes the absmax and adds its offset first
    (kernels.nf4_dequantise_nested); without it (nf4_double_quant false: functional.py dequantize_4bit reads the fp32
    absmax as stored) and in other 4-bit layers 1."""
    nested = x.fw.bnb_nested_dequant if x.nf4_double_quant is None else x.nf4_double_quant
    return np.where(np.asarray(nested, bool), compute.KERNELS["nf4_dequantise_nested"], 1.0)


def _adapter_host_s(x: _Step) -> Any:
    """Host seconds per average layer and micro-batch of the kernels an eager layer's LoRA adapters (the job's
    implementation's counts with PEFT's fp32 input casts, _peft_cast_counts; dropout) and QLoRA's NF4 dequantisations add beyond a base
    layer's (host_s_per_layer_pass), each issued from Python one by one at the vendor's launch-bound eager op
    (perf_constants.yaml host_sync launch_bound_op_s; NVIDIA's where the vendor has none): forward, the recompute's
    forward and backward. PEFT runs four more ops per adapted linear beside the base GEMM (peft/tuners/lora/layer.py
    Linear.forward: lora_A, lora_B, the scaling, the add); bitsandbytes' MatMul4Bit dequantizes in the forward and
    again in the backward (autograd/_functions.py). Lit-GPT's adapter before v0.3.1 also builds its padding index on
    the host every forward (_lora_index_host_s). A compiled layer (Inductor's wrapper launches its kernels without
    the dispatcher) and CUDA graphs, per layer or of the whole iteration (the adapters are captured in them), add
    nothing."""
    if x.cuda_graphs != "none":
        return 0.0
    n_lin = lora_adapted_widths(x.model, x.training)[4]
    ops = 0.0
    if n_lin > 0:
        lc = x.k.raw["lora"]
        c = _adapter_counts(x, lc)  # PEFT's input casts included; TE's fused adapters where they run
        drop = float(x.training.lora_dropout > 0)
        ops = n_lin * ((c["fwd_kernels"] + drop) * (1.0 + x.full_share) + c["bwd_kernels"] + drop)
    if x.training.method == "qlora":
        recast = float(_nf4_recast(x))  # the fp16 -> compute-dtype copy, one op a weight (_nf4_recast)
        casts = 2.0 * dense_linear_widths(x.model)[2] * float(_nf4_fp16_compute(x))  # _nf4_compute_cast_time's
        ops = ops + (compute.KERNELS["nf4_dequantise"] * (_nf4_kernels(x) + recast) + casts) * (2.0 + x.full_share)
    eager = ~_inductor_fused(x)
    op_s = _launch_op_s(x.system.vendor)
    return np.where(eager, ops * op_s + _lora_index_host_s(x), 0.0)


QKV_LINEARS = ("q_proj", "k_proj", "v_proj")


def _lora_index_host_s(x: _Step) -> Any:
    """Host seconds per average layer and micro-batch an adapter implementation spends building its qkv padding
    index from a Python list every forward (perf_constants.yaml lora.index_list_per_forward: Lit-GPT before v0.3.1,
    LoRAQKVLinear.zero_pad): one element per adapted q / k / v output at lora.tensor_from_list_s_per_elem, and the
    stream synchronisation of its pageable copy at the vendor's round trip (none where no figure is read), in the
    forward and the recompute's forward. Nothing where q, k and v are all adapted (zero_pad returns its input)."""
    lc = x.k.raw["lora"]
    targets = lora_targets(x.training)
    if x.training.lora_impl not in lc["index_list_per_forward"] or "qkv_proj" in targets or targets >= set(QKV_LINEARS):
        return 0.0
    elems = lora_adapted_widths(x.model, x.training, only=QKV_LINEARS)[1]
    if elems <= 0.0:
        return 0.0
    sync_s = host_figure("round_trip_s", x.system.vendor) or 0.0
    return (elems * float(lc["tensor_from_list_s_per_elem"]) + sync_s) * (1.0 + x.full_share)


def _chunked_nll_time(x: _Step, lt: compute.LayerTimes) -> Any:
    """Seconds per micro-batch TRL's chunked_nll loss (loss_impl chunked-nll) adds to the LM head: each chunk of 256
    labelled tokens runs under torch.utils.checkpoint, so the head's GEMM and loss run again in the backward (the
    head's forward time once more), and every run of a chunk copies the head weight to fp32 (`w.float()`: read 2 B,
    write 4) and, under autocast, casts the copy back to 16 bits for the matmul (read 4, write 2): 12 B per head
    weight per chunk and run, two runs (memory_constants.yaml logits.chunked_nll; trl/trainer/sft_trainer.py _chunk
    at f2cd577). Every token is taken as labelled (a prompt-masked dataset runs fewer chunks); in fp32 `w.float()` is
    the weight itself, no copy. The head is the embedding weight when tied."""
    cn = load_memory_constants()["logits"]["chunked_nll"]
    model = x.model
    head_p = float(model.vocab * model.hidden) / x.t
    chunks = np.ceil(np.asarray(x.tok, float) / float(cn["chunk_tokens"]))
    # w.float(): read the 16-bit weight, write fp32; autocast's cast: read fp32, write 16-bit
    per_run = 0.0 if x.training.precision == "fp32" else 2.0 * (float(cn["head_fp32_copy_bytes"])
                                                                + float(cn["head_autocast_copy_bytes"]))
    casts = compute.stream_time(2.0 * chunks * per_run * head_p, x.r, kernels=4.0 * chunks)
    return lt.head_fwd + casts


# losses that run F.cross_entropy eager on an fp32 copy of the logits: loss_impl -> perf_constants.yaml
# cross_entropy key (torchtune's chunked upcasts each chunk and calls it the same way)
FP32_CE_KEYS = {"upcast": "upcast", "upcast-shift": "upcast_shift", "upcast-held": "upcast_held",
                "chunked": "upcast", "upcast-labels": "upcast"}  # upcast-labels timed as upcast (known-gaps 213 (d))


def _fp32_loss_excess(x: _Step) -> tuple[Any, Any]:
    """(forward, backward) seconds per micro-batch a loss run as eager PyTorch on fp32 logits streams beyond the
    fused count `compute._lm_head` charges (perf_constants.yaml cross_entropy upcast / upcast_shift / upcast_held,
    counted from the code, not fitted): the 16-bit logits cast to fp32 (Lightning Fabric's convert_output, HF
    ForCausalLMLoss's logits.float(), torchtune's chunk.float()), HF 4.46-4.47's shifted copy, and F.cross_entropy,
    whose log-softmax over a vocabulary row too wide for shared memory reads it three times; backward the zero-filled
    NLL gradient, the two-pass log-softmax backward, the slice's zero-filled gradient where the logits were shifted,
    and the cast back to 16 bits. The job's loss_impl (FP32_CE_KEYS), or under "auto" its style's
    (PerfStyle.auto_loss_fp32: an array where "auto" picks a style per strategy).
    Nothing inside a compiled model (HF computes its loss in the model's forward; torchtune compiles its loss with
    the model) or for other losses. Per launch the kernels match the fused count's, so none are added."""
    own = np.asarray(x.fw.auto_loss_fp32)
    names = own.astype(str) if x.loss_impl == "auto" else np.full(own.shape, x.loss_impl)
    # a style's few values, mapped once each: np.vectorize over a 10^6-strategy batch cost 10% of the search
    unique, where = np.unique(names, return_inverse=True)
    keys = [FP32_CE_KEYS.get(str(n), "") for n in unique]
    compiled = _inductor_fused(x)
    fused_fwd, fused_bwd = compute.CE_BYTES["fused"]
    fwd_b = np.array([compute.CE_BYTES[k][0] - fused_fwd if k else 0.0 for k in keys])[where].reshape(names.shape)
    bwd_b = np.array([compute.CE_BYTES[k][1] - fused_bwd if k else 0.0 for k in keys])[where].reshape(names.shape)
    if x.loss_impl != "upcast-held":  # Lightning Fabric's convert_output runs outside any compiled model
        fwd_b, bwd_b = np.where(compiled, 0.0, fwd_b), np.where(compiled, 0.0, bwd_b)
    logits = np.asarray(x.tok, float) * float(x.model.vocab) / x.t
    return (compute.stream_time(logits * fwd_b, x.r, kernels=0.0),
            compute.stream_time(logits * bwd_b, x.r, kernels=0.0))


def _lora_head_time(x: _Step) -> tuple[Any, Any]:
    """(forward, backward) seconds per micro-batch of a LoRA adapter on the LM head (lora target lm_head_adapter:
    LitGPT's lora_head, a LoRALinear whose forward is linear(x) + (dropout(x) @ A^T @ B^T) * scaling, litgpt/lora.py
    at 00af8b0d; PEFT's lora.Linear on a target_modules 'lm_head' the same), counted as any adapted linear's
    (perf_constants.yaml `lora:`, the job's implementation, `_adapter_counts`) over d_in = hidden and d_out = the
    vocabulary (its 1 / t under TP, column-parallel): on the vocabulary side B writes its output, the scaling reads
    and writes it and the add reads both outputs and writes the sum, and in the backward the scaling's gradient and
    B's two GEMMs stream the logits' gradient again. Eager (the head runs outside any compiled layer), with the
    dropout on its input where lora.dropout > 0; its launches are not in the layers' host floor."""
    lc, r = x.k.raw["lora"], x.r
    c = _adapter_counts(x, lc)
    h, v = float(x.model.hidden), float(x.model.vocab) / x.t
    drop = float(x.training.lora_dropout > 0)
    on_out = drop * float(lora_dropout_on_output(x.training))
    on_in = drop - on_out

    def seconds(pass_: str) -> Any:
        d = lc[f"dropout_{pass_}_elems"]
        elems = x.tok * ((c[f"{pass_}_in_elems"] + on_in * d) * h + (c[f"{pass_}_out_elems"] + on_out * d) * v)
        return compute.stream_time(elems * r.act_bytes, r, kernels=c[f"{pass_}_kernels"] + drop)

    return seconds("fwd"), seconds("bwd")


def _expert_bias_time(x: _Step) -> Any:
    """Seconds per average layer and micro-batch of routed experts' biases added outside the grouped GEMMs: NeMo
    AutoModel's DeepEP experts (`moe_dispatcher: flex` on a PyTorch-native style, as activations.layer_items
    deepep_experts) split each GEMM output per local expert, add its bias and concatenate the parts, eager, the down
    projection's in fp32 (perf_constants.yaml gemm.expert_bias_deepep_bytes); a rank receives tokens x top-k routed
    slots (balanced routing), the forward again where the MoE block is recomputed. Megatron-Core (the styles with
    moe_host_sync): TE GroupedLinear adds fc1's bias in its GEMM epilogue, fc2's is returned (skip_bias_add) and added
    the same eager way (TEGroupedMLP._apply_bias, gemm.expert_bias_mcore_bytes), unless the experts run TE's fused
    grouped MLP (strategy.moe_fused_grouped_mlp: fc2's bias scaled by the probabilities in the GEMM epilogue, fc1's
    bias gradient reduced in the dGLU kernel, _fused_dglu_dbias_time); other fused styles pay nothing."""
    m = x.model
    if not (m.is_moe and m.mlp_bias):
        return 0.0
    slots = x.routed_slots
    b = x.k.expert_bias_deepep_bytes
    gate_up = 2.0 * m.expert_ffn / x.t
    fwd = gate_up * b["gate_up_forward"] + m.expert_width * b["down_forward"]
    bwd = gate_up * b["gate_up_backward"] + m.expert_width * b["down_backward"]
    deepep = compute.stream_time(slots * (fwd * (1.0 + x.moe_rerun) + bwd), x.r, kernels=0.0)
    native = np.where(np.asarray(x.fw.fused_kernels, bool) | (x.strategy_dispatcher not in FLEX_DISPATCHERS), 0.0, deepep)
    mcore = np.where(np.asarray(x.fw.moe_fused_grouped_mlp, bool), _fused_dglu_dbias_time(x, slots),
                     _mcore_expert_bias_time(x, slots))
    return np.where(np.asarray(x.fw.moe_host_sync, bool), mcore, native)


def _expert_bias_index_add_time(x: _Step) -> Any:
    """Seconds per average layer and micro-batch of routed experts' biases added per routed row in eager PyTorch
    (PerfStyle.moe_bias_index_add: torchtitan's gpt-oss port, models/gpt_oss/moe.py GptOssGroupedExperts.forward at
    58b034444 / b5bcd76c6): forward, each bias repeat_interleave'd to one row a routed slot and added to its grouped
    GEMM's output (perf_constants.yaml gemm.expert_bias_index_add `forward` bytes per element of the mlp1 and mlp2
    outputs, again where the MoE block is recomputed); backward, index_select's gradient, an index_add_ of every routed
    row into its expert's bias row, timed at aten index_add_'s measured bf16 rate under contention. Not under
    torch.compile (the block's compiled kernels: not charged, docs/known-gaps.md 196 (b)) nor behind DeepEP (flex:
    _expert_bias_time's path)."""
    m = x.model
    on = np.asarray(x.fw.moe_bias_index_add, bool) & ~np.asarray(_fused_elementwise(x), bool)
    if not (m.is_moe and m.mlp_bias) or not np.any(on) or x.strategy_dispatcher in FLEX_DISPATCHERS:
        return 0.0
    b = x.k.expert_bias_index_add
    split = np.where(np.asarray(x.fw.moe_tp_token_split, bool), x.et / x.t, 1.0)
    elements = x.routed_slots * split * (2.0 * m.expert_ffn / x.et + m.expert_width)
    share = m.moe_layer_count / m.layers
    again = 1.0 + x.moe_rerun
    fwd = compute.stream_time(elements * b["forward"] * again, x.r, kernels=2.0 * b["forward_kernels"] * share * again)
    bwd = elements / b["index_add_elements_per_s"] + 2.0 * b["backward_kernels"] * share * x.r.kernel_fixed_s
    return np.where(on, fwd + bwd, 0.0)


def _moe_unfused_counts(x: _Step) -> tuple[Any, Any, Any, Any]:
    """(forward kernels, backward kernels, forward host calls, host syncs a forward) one MoE layer adds where
    Megatron-Core runs its router and token permutation without Transformer Engine's fused kernels
    (PerfStyle.moe_router_fused / moe_permute_fused false: strategy.moe_router_fusion / moe_permute_fusion), counted
    from Megatron-Core's code (perf_constants.yaml kernels: moe_router_unfused_*, the group-limited top-k's
    moe_router_unfused_grouped_* where the model routes by groups, moe_permute_unfused_*), and, fused or not, Primus's
    forced-balance map where the job routes round-robin on Megatron-Core's layer (moe_router_round_robin_*;
    docs/known-gaps.md 338 (b)); without the aux loss (strategy.moe_aux_loss none) the unfused router's aux scores and
    switch loss less (moe_router_aux_unfused_*; 343 (a)); zeros where neither runs or the model has no routed experts."""
    if not x.model.is_moe:
        return 0.0, 0.0, 0.0, 0.0
    router = ~np.asarray(x.fw.moe_router_fused, bool)
    permute = ~np.asarray(x.fw.moe_permute_fused, bool)
    grouped = x.model.expert_groups > 1  # group-limited top-k: moe_utils.group_limited_topk's ops
    balance = np.asarray(x.fw.moe_host_sync, bool) & (x.training.moe_routing == "round-robin")
    no_aux = x.fw.moe_aux_loss == "none"  # compute_routing_scores_for_aux_loss and the switch loss not run
    kern = compute.KERNELS

    def count(name: str) -> Any:
        routing = kern.get(f"moe_router_unfused_{name}", 0.0) - no_aux * kern.get(f"moe_router_aux_unfused_{name}", 0.0)
        routing = routing + grouped * kern.get(f"moe_router_unfused_grouped_{name}", 0.0)
        return (router * routing + permute * kern.get(f"moe_permute_unfused_{name}", 0.0)
                + balance * kern.get(f"moe_router_round_robin_{name}", 0.0))
    return count("fwd"), count("bwd"), count("host_fwd"), count("syncs")


def _moe_unfused_time(x: _Step) -> Any:
    """GPU seconds per average layer and micro-batch of the unfused router and permutation's extra kernels
    (_moe_unfused_counts), each over a [tokens, experts] tensor (kernels: moe_unfused_tensor_bytes per element) at the
    streaming rate plus its launch gap, the forward again where the MoE block is recomputed, over the MoE layers'
    share. The token copies themselves move the same bytes fused or not (index_select / scatter_add against TE's
    permute / unpermute: one read and one write per routed copy), so only the kernels on the routing tensors add."""
    kf, kb, _, _ = _moe_unfused_counts(x)
    if not np.any(np.asarray(kf) + np.asarray(kb)):
        return 0.0
    m = x.model
    element_bytes = compute.KERNELS["moe_unfused_tensor_bytes"] * x.tok * m.experts
    fwd = compute.stream_time(kf * element_bytes, x.r, kernels=kf)
    bwd = compute.stream_time(kb * element_bytes, x.r, kernels=kb)
    return (m.moe_layer_count / m.layers) * (fwd * (1.0 + x.moe_rerun) + bwd)


def _moe_unfused_host(x: _Step) -> tuple[Any, Any]:
    """(host issue seconds, sync seconds) per average layer and micro-batch of the unfused router and permutation:
    their forward's host calls at the vendor's launch-bound eager op (perf_constants.yaml host_sync; a vendor with
    none at NVIDIA's), issued beside the GPU's work (_host_excess's soft maximum); and each masked_select's host sync,
    which drains the queue: its round trip and the next op's issue (host_sync.drain_excess_s over one kernel; a vendor
    with no round-trip figure pays the issue alone). Both again in a recomputed forward, over the MoE layers' share."""
    _, _, calls, syncs = _moe_unfused_counts(x)
    if not np.any(np.asarray(calls) + np.asarray(syncs)):
        return 0.0, 0.0
    vendor = x.system.vendor
    op_s = _launch_op_s(vendor)
    trip_s = host_figure("round_trip_s", vendor) or 0.0
    passes = (x.model.moe_layer_count / x.model.layers) * (1.0 + x.moe_rerun)
    return passes * calls * op_s, passes * syncs * drain_excess_s(1.0, op_s, 0.0, trip_s)


def _moe_layer_host_s(x: _Step) -> Any:
    """Host seconds per average layer and micro-batch that Megatron-Core's MoE layer issues beyond a dense layer's MLP
    (PerfStyle.moe_host_sync), joined to the layer's host floor (_host_excess's soft maximum): the router and its aux
    loss (and an expert score bias's update), the alltoall dispatcher's preprocess, D2H copies, permutation and
    all-to-alls, a shared expert and fc2's per-expert bias adds, forward and the Python autograd Functions' backward,
    each call at the vendor's launch-bound eager op (perf_constants.yaml kernels moe_layer_*, counted at Megatron-LM
    61f31145; docs/known-gaps.md 297 (a)). The flex dispatcher's own path is counted where DeepEP's backend is stated
    (moe_dispatcher deepep: _DeepepManager's calls, kernels moe_layer_deepep_*; 334 (a)); flex and hybridep count
    the router alone. The router's aux loss as the job states it (_moe_aux_loss_counts). The fused path's count; an
    unfused router / permutation adds its own (_moe_unfused_host). The forward again where the MoE block is recomputed. 0 on a dense model, other styles,
    under CUDA graphs (Megatron-Core's graph scopes capture the router and preprocess; partial capture not modelled)
    and where the layer runs sync-free or with padded token drop (a path of its own, not counted)."""
    m = x.model
    if not m.is_moe or not np.any(x.fw.moe_host_sync) or _moe_sync_free(x) or x.cuda_graphs != "none":
        return 0.0
    k = compute.KERNELS
    alltoall = moe_alltoall(x.strategy_dispatcher, x.system, x.e, x.t)
    local = np.maximum(m.experts / x.e, 1.0)
    ep = (x.e > 1.0) | (x.et > 1.0)
    sort = np.where(local > 1.0, k["moe_layer_alltoall_sort_host"], 0.0)
    fwd = k["moe_layer_router_host_fwd"] + np.where(
        alltoall, k["moe_layer_alltoall_host_fwd"] + sort + ep * k["moe_layer_alltoall_ep_host_fwd"], 0.0)
    if m.mlp_bias:
        fwd = fwd + local * k["moe_layer_expert_bias_host_per_expert"] + k["moe_layer_expert_bias_host"]
    deepep_fwd, deepep_bwd = _deepep_host_calls(x)
    fwd = fwd + deepep_fwd
    shared = 1.0 if m.shared_expert_ffn else 0.0
    fwd = (fwd + router_score_bias(m) * k["moe_layer_router_bias_host_fwd"]
           + shared * k["moe_layer_shared_expert_host_fwd"])
    bwd = k["moe_layer_router_host_bwd"] + m.router_fp32 * k["moe_layer_router_fp32_host_bwd"] + np.where(
        alltoall, k["moe_layer_alltoall_host_bwd"] + sort + ep * k["moe_layer_alltoall_ep_host_bwd"], 0.0)
    bwd = bwd + deepep_bwd + shared * k["moe_layer_shared_expert_host_bwd"]
    aux_fwd, aux_bwd = _moe_aux_loss_counts(x)
    fwd, bwd = fwd + aux_fwd, bwd + aux_bwd
    calls = (m.moe_layer_count / m.layers) * (fwd * (1.0 + x.moe_rerun) + bwd)
    return np.where(np.asarray(x.fw.moe_host_sync, bool), calls * _launch_op_s(x.system.vendor), 0.0)


def _moe_aux_loss_counts(x: _Step) -> tuple[float, float]:
    """(forward, backward) host calls a MoE layer and micro-batch the router's load-balancing loss adds to or takes
    from the router's count, which holds aux_loss on (kernels moe_layer_router_host_*; Megatron-LM 61f31145 router.py
    TopKRouter.routing): none (strategy.moe_aux_loss; Megatron-Core skips compute_routing_scores_for_aux_loss, the
    token counts, the loss, its tracker record and MoEAuxLossAutoScaler: is_aux_loss_enabled false) takes
    moe_layer_aux_loss_host_*; global_aux_loss adds its running counts' two in-place adds, the average's division and
    the counts' all-reduce call (moe_layer_global_aux_loss_host_fwd; its time, _global_aux_loss_time); aux_loss and
    seq_aux_loss (a reshape more, no op) run the same calls (docs/known-gaps.md 343 (a))."""
    k = compute.KERNELS
    if x.fw.moe_aux_loss == "none":
        return -k["moe_layer_aux_loss_host_fwd"], -k["moe_layer_aux_loss_host_bwd"]
    if x.fw.moe_aux_loss == "global_aux_loss":
        return k["moe_layer_global_aux_loss_host_fwd"], 0.0
    return 0.0, 0.0


def _global_aux_loss_time(x: _Step) -> Any:
    """Seconds per average layer and micro-batch of global_aux_loss's token-count all-reduce (strategy.moe_aux_loss
    global_aux_loss on Megatron-Core's layer, PerfStyle.moe_host_sync): get_tokens_per_expert_and_token_count's
    reduce_from_tensor_model_parallel_region over the TP x DP x CP ranks, one int64 count an expert, a latency-bound
    all-reduce on the compute stream (Megatron-LM 61f31145 router.py _apply_global_aux_loss, moe_utils.py), once a MoE
    layer's forward and again where the MoE block is recomputed, over the MoE layers' share; 0 elsewhere and at one
    rank (docs/known-gaps.md 343 (a))."""
    m = x.model
    if not m.is_moe or x.fw.moe_aux_loss != "global_aux_loss" or not np.any(x.fw.moe_host_sync):
        return 0.0
    group = x.t * x.d * x.c
    k_g, m_g = comm.ranks_per_domain(group, 1.0, x.domain), comm.zone_members(group, 1.0, x.system)
    t = comm.all_reduce_time(8.0 * m.experts, group, k_g, x.link(group, 1.0), x.system, x.k.nvls_allreduce_gain, m_g)
    on = np.asarray(x.fw.moe_host_sync, bool) & (group > 1.0)
    return np.where(on, (m.moe_layer_count / m.layers) * (1.0 + x.moe_rerun) * t, 0.0)


def _deepep_host_calls(x: _Step) -> tuple[Any, Any]:
    """(forward, backward) host calls a MoE layer and micro-batch of Megatron-Core's flex dispatcher with DeepEP's
    backend stated (moe_dispatcher deepep; it asserts TP x EP > 1): the top-k to indices, FusedDispatch / FusedCombine
    over DeepEP's Buffer, _indices_to_multihot's eager ops and the fused permute / unpermute (perf_constants.yaml
    kernels moe_layer_deepep_*, counted at Megatron-LM 61f31145 and DeepEP 567632d; docs/known-gaps.md 334 (a)), the
    probabilities' fp32 cast where the router's output is 16-bit. 0 elsewhere."""
    if x.strategy_dispatcher != "deepep":
        return 0.0, 0.0
    k = compute.KERNELS
    on = (x.e * x.et) > 1.0
    cast = 0.0 if x.model.router_fp32 else k["moe_layer_deepep_probs_cast_host"]
    return (np.where(on, k["moe_layer_deepep_host_fwd"] + cast, 0.0),
            np.where(on, k["moe_layer_deepep_host_bwd"], 0.0))


def _deepep_sync_s(x: _Step) -> Any:
    """Seconds per average layer and micro-batch of the host syncs among _deepep_host_calls' forward (kernels
    moe_layer_deepep_syncs: _indices_to_multihot's two boolean-mask indexes and its repeat_interleave), each a drained
    queue's round trip and next issue (host_sync.drain_excess_s over one kernel; a vendor with no round-trip figure
    pays the issue alone), as _moe_unfused_host charges the unfused permutation's; the forward again where the MoE
    block is recomputed. 0 where _deepep_host_calls is, on other styles and where _moe_layer_host_s is 0."""
    fwd, _ = _deepep_host_calls(x)
    on = (np.asarray(fwd) > 0) & (np.asarray(_moe_layer_host_s(x)) > 0)
    if not np.any(on):
        return 0.0
    vendor = x.system.vendor
    trip_s = host_figure("round_trip_s", vendor) or 0.0
    passes = (x.model.moe_layer_count / x.model.layers) * (1.0 + x.moe_rerun)
    syncs = compute.KERNELS["moe_layer_deepep_syncs"]
    return np.where(on, passes * syncs * drain_excess_s(1.0, _launch_op_s(vendor), 0.0, trip_s), 0.0)


def _fused_dglu_dbias_time(x: _Step, slots: Any) -> Any:
    """Seconds per average layer and micro-batch that fc1's bias gradient adds to TE's fused grouped MLP backward
    (strategy.moe_fused_grouped_mlp on experts with biases): the CuTe DSL grouped GEMM + dGLU kernel reduces it in its
    epilogue, measured at perf_constants.yaml gemm.fused_dglu_us with / without over the same kernel (cudnn-frontend
    PR 322, SM100), charged as that ratio less one on the kernel's GEMM, fc2's data gradient (slots x expert_ffn /
    expert TP, inner hidden) at the expert GEMM rate; the backward runs once, recompute or not. From Megatron-Core 0.19
    (mcore_has fused_mlp_scaled_fc2_bias) fc2's bias is scaled by the probabilities, and TE's Triton grouped dbias /
    dscales kernel reads fc2's output gradient once more (gemm.fused_fc2_scaled_dbias_bytes a hidden element of a
    slot, one kernel; docs/known-gaps.md 344 (a))."""
    us = x.k.fused_dglu_us
    extra = us["with_dbias"] / us["without_dbias"] - 1.0
    dglu = extra * compute.gemm_time(slots, x.model.expert_ffn / x.et, x.model.expert_width, x.r, fixed=False)
    if not mcore_has("fused_mlp_scaled_fc2_bias", x.mcore_version):
        return dglu
    nbytes = slots * x.model.expert_width * x.k.fused_fc2_scaled_dbias_bytes
    return dglu + compute.stream_time(nbytes, x.r, kernels=1.0)


def _mcore_expert_bias_time(x: _Step, slots: Any) -> Any:
    """Megatron-Core's fc2 expert bias (TEGroupedMLP._apply_bias: per local expert t + b x p, torch.cat, .to(dtype)):
    in the routing probabilities' dtype, fp32 under the flex dispatcher (HybridEP / DeepEP take fp32 probs,
    token_dispatcher.py casts them), else the router's output dtype, 16-bit with the default moe_router_dtype (TE
    fused_topk_with_score_function returns the logits' dtype); HBM bytes per element of a slot's hidden-wide output
    (perf_constants.yaml gemm.expert_bias_mcore_bytes), the forward again where the MoE block is recomputed."""
    b = x.k.expert_bias_mcore_bytes
    flex = ~moe_alltoall(x.strategy_dispatcher, x.system, x.e, x.t)
    fwd = np.where(flex, b["down_forward_fp32"], b["down_forward_bf16"])
    bwd = np.where(flex, b["down_backward_fp32"], b["down_backward_bf16"])
    return compute.stream_time(slots * x.model.expert_width * (fwd * (1.0 + x.moe_rerun) + bwd), x.r, kernels=0.0)


def _fp8_expert_padding_time(x: _Step) -> Any:
    """Seconds per average layer and micro-batch of Megatron-Core's FP8 padding of the routed experts' rows: under FP8
    or FP4, TEGroupedMLP.forward pads each local expert's rows to the recipe's GEMM alignment (Transformer Engine
    Fp8Padding, one tex.fused_multi_row_padding copy of the dispatched hidden states into a new buffer) and unpads
    fc2's output (Fp8Unpadding, a second copy); the backward copies both gradients back the same way
    (_Fp8Padding.backward: fused_multi_row_unpadding). TE skips the copy only where every split is already aligned
    (fp8_padding.py: m_splits == padded_m_splits), which balanced or forced-balance routing does not give. Read at
    NVIDIA/Megatron-LM 0d8e0714 / b0cc2706 / b20c1b25 (experts.py TEGroupedMLP.forward) and TransformerEngine
    module/fp8_padding.py. Where the dispatcher pads instead, the splits arrive aligned and nothing is copied:
    HybridEP (flex) receives into a pad_multiple-aligned buffer under FP8 (token_dispatcher.py _HybridEPManager
    .dispatch; moe_utils.skip_routed_expert_padding at d0b3b775) and DeepEP's permutation pads from b20c1b25 on
    (align_size), so the alltoall dispatcher (as moe_alltoall resolves it) pays, on TE's fused grouped MLP too
    (experts.py _fused_forward pads the same way at d0b3b775); not a layer _moe_sync_free runs (a full-iteration
    graph's static HybridEP budget, device-side splits, capacity-sized splits). Each copy reads and writes a 16-bit
    hidden-wide row a routed slot the GPU's experts run: tok x etp / tp slots where each TP rank dispatches its share
    (PerfStyle.moe_tp_token_split), as their GEMMs run; the forward's two again where the MoE block is recomputed.
    Counted, not fitted (docs/known-gaps.md 218 (b), (e))."""
    m = x.model
    if not m.is_moe or x.training.precision != "fp8" or _moe_sync_free(x):
        return 0.0
    on = np.asarray(x.fw.moe_host_sync, bool) & moe_alltoall(x.strategy_dispatcher, x.system, x.e, x.t)
    split = np.where(np.asarray(x.fw.moe_tp_token_split, bool), x.et / x.t, 1.0)
    copies = 2.0 * (1.0 + x.moe_rerun) + 2.0
    nbytes = 2.0 * copies * x.routed_slots * split * m.hidden * x.r.act_bytes
    share = m.moe_layer_count / m.layers
    return np.where(on, compute.stream_time(nbytes, x.r, kernels=copies * share), 0.0)


def _sequential_mlp_time(x: _Step) -> Any:
    """Seconds per average layer and micro-batch of Megatron-Core's SequentialMLP glue (strategy.moe_grouped_gemm
    false: --moe-grouped-gemm off, PerfStyle.moe_grouped_gemm) beyond the grouped path's, as copies of the routed
    buffer R (this GPU's routed slots x hidden, 16-bit; the TP ranks' tokens as _fp8_expert_padding_time counts them)
    over n local experts. Before core_r0.9.0 (framework.mcore_has "sequential_mlp_split"; experts.py
    SequentialMLP.forward at d0f13074, 2024-04-05): output_local = zeros_like (write R) and each expert's output
    written into its rows (output_local[start:end] = output: 2R over the n), 3R forward; in the backward, per expert,
    autograd's SliceBackward zero-fills a whole-R gradient and copies the rows in (torch slice_backward: R + 2R / n),
    the n whole gradients summed (n - 1 adds, 3R each), and CopySlices copies the whole incoming gradient, clones its
    slice and writes the slice's zero gradient back (torch/csrc/autograd/functions/tensor.cpp: 2R + 5R / n): (6n + 4)R,
    7 kernels an expert. The start / end offsets come from a host copy of the counts (the dispatchers'
    tokens_per_expert .cpu()), so no device sync. From core_r0.9.0 (8f331e8c89): torch.split by the host counts and
    torch.cat of the outputs, 2R forward and 2R for split's backward (a cat), none at one local expert (the expert
    runs on the whole buffer). Streaming rate with each kernel's launch gap; the forward again where the MoE block
    is recomputed. Counted from the code, not fitted (docs/known-gaps.md 301 (a))."""
    m = x.model
    on = ~np.asarray(x.fw.moe_grouped_gemm, bool)
    if not m.is_moe or not np.any(on):
        return 0.0
    n = np.maximum(m.experts / x.e, 1.0)
    split = np.where(np.asarray(x.fw.moe_tp_token_split, bool), x.et / x.t, 1.0)
    buffer = x.routed_slots * split * m.hidden * x.r.act_bytes
    again, share = 1.0 + x.moe_rerun, m.moe_layer_count / m.layers
    if mcore_has("sequential_mlp_split", x.mcore_version):
        fwd_b, bwd_b = np.where(n > 1.0, 2.0, 0.0), np.where(n > 1.0, 2.0, 0.0)
        fwd_k, bwd_k = np.where(n > 1.0, 1.0, 0.0), np.where(n > 1.0, 1.0, 0.0)
    else:
        fwd_b, bwd_b, fwd_k, bwd_k = 3.0, 6.0 * n + 4.0, 1.0 + n, 7.0 * n
    t = compute.stream_time(buffer * (fwd_b * again + bwd_b), x.r, kernels=share * (fwd_k * again + bwd_k))
    return np.where(on, t, 0.0)


def _activation_clamp_time(x: _Step) -> Any:
    """Seconds per average layer and micro-batch of a clamped gated activation in Megatron-Core's routed experts
    (ModelArch.activation_clamp; fused_bias_geglu.py weighted_bias_quick_geglu_impl with clamp_value, the
    TEGroupedMLP path): both halves clamped and concatenated eager before the fused activation (perf_constants.yaml
    gemm.activation_clamp_mcore_bytes, per intermediate element of a routed slot), the forward again where the
    activation (recompute_modules moe_act) or the MoE block is recomputed. Other styles, and TE's fused grouped MLP
    (strategy.moe_fused_grouped_mlp: ScaledClampedQGeGLU in the CuTe DSL GEMM epilogue): nothing."""
    m = x.model
    if not (m.is_moe and m.activation_clamp) or not np.any(x.fw.moe_host_sync):
        return 0.0
    b = x.k.activation_clamp_mcore_bytes
    act = x.recompute_modules is not None and "moe_act" in x.recompute_modules
    again = np.where((x.rc == 1) & act, 1.0, x.moe_rerun)
    slots = x.routed_slots
    per = m.expert_ffn / x.t * (b["forward"] * (1.0 + again) + b["backward"])
    eager = np.asarray(x.fw.moe_host_sync, bool) & ~np.asarray(x.fw.moe_fused_grouped_mlp, bool)
    return np.where(eager, compute.stream_time(slots * per, x.r, kernels=0.0), 0.0)


def _eager_swiglu_backward_time(x: _Step) -> Any:
    """Seconds per average layer and micro-batch by which an eager SwiGLU's backward differs from the twice-its-forward
    bytes the layer charges for element-wise work (compute.layer_times): autograd runs the product's two gradients,
    silu_backward and, where gate and up come from one GEMM split in eager PyTorch (a style without
    split_projections whose activation runs eager: nanotron's Qwen2MLP), the split's backward cat of both halves
    (perf_constants.yaml gemm.eager_swiglu_backward_bytes: 18 B per inner element, 26 B with the cat, against 20).
    Dense MLP layers only, over this GPU's share of the inner width; the routed and shared experts keep the layer's
    count. Fused or compiled activations, and non-SwiGLU models: nothing."""
    m = x.model
    if m.mlp != "swiglu" or m.dense_mlp_layers == 0:
        return 0.0
    eager = _eager_kernel(x, x.fw.activation_kernel)
    if not np.any(eager):
        return 0.0
    b = x.k.eager_swiglu_backward_bytes
    split = ~np.asarray(x.fw.split_projections, bool) & (b["split_cat"] > 0)  # one gate-up GEMM, split eager
    per = b["products"] + b["silu"] + np.where(split, b["split_cat"], 0.0) - 2.0 * x.k.eager_bytes_per_element["swiglu"]
    inner = x.tok * m.ffn / x.t * m.dense_mlp_layers / m.layers
    t = compute.stream_time(inner * per, x.r, kernels=0.0) + np.where(split, x.r.kernel_fixed_s, 0.0)
    return np.where(eager, t, 0.0)


def _eager_kernel(x: _Step, kernel: Any) -> Any:
    """Whether an element-wise op whose strategy kernel is `kernel` (norm_kernel / rope_kernel / activation_kernel)
    runs as eager ops: named "eager", or unnamed where torch.compile and the style's fused kernels are off."""
    named = np.asarray(kernel if kernel is not None else "", dtype=object)
    return (named == "eager") | ((named != "fused") & ~np.asarray(_fused_elementwise(x), bool))


def _eager_chain_backward_time(x: _Step) -> Any:
    """Seconds per average layer and micro-batch by which eager chains' backward differs from the twice-their-forward
    bytes the layer charges for element-wise work (compute.layer_times), as autograd runs them (benchmarks/
    eager_chain_bytes.py; perf_constants.yaml gemm.eager_backward_bytes_per_element, PerfStyle.
    rope_eager_backward_bytes; docs/known-gaps.md 304 (a)): the eager RMSNorms over this GPU's share of the hidden
    rows (and qk-norm over its q and k heads), RoPE over its q and k heads of the attention layers (MLA left at the
    rule), a clamped SwiGLU over the routed slots' inner elements where the routed activation runs eager (gpt-oss on
    torchtitan / HF), a dense model's squared ReLU over this GPU's share of the MLP's inner width where it runs eager
    (NeMo 2's Nemotron: strategy.activation_kernel eager). Fused or compiled chains: nothing."""
    m, fw = x.model, x.fw
    b, f = x.k.eager_backward_bytes_per_element, x.k.eager_bytes_per_element
    qk = (m.q_dim + m.kv_dim) / x.t
    per_tok: Any = 0.0
    if m.norm == "rmsnorm":
        rows = _shapes(m).norms * m.hidden * np.where(x.sp & (x.t > 1), 1.0 / x.t, 1.0) + (qk if m.qk_norm else 0.0)
        per_tok = np.where(_eager_kernel(x, fw.norm_kernel), rows * (b["rmsnorm"] - 2.0 * f["rmsnorm"]), 0.0)
    if m.position == "rope" and m.attention != "mla":
        diff = (np.asarray(fw.rope_eager_backward_bytes, float) - 2.0 * np.asarray(fw.rope_eager_bytes, float))
        rope = qk * m.attention_layers / m.layers * m.rotary_fraction * diff
        per_tok = per_tok + np.where(_eager_kernel(x, fw.rope_kernel), rope, 0.0)
    if m.mlp == "relu2" and not m.is_moe and m.dense_mlp_layers > 0:  # the dense MLPs' eager squared ReLU
        relu2 = m.ffn / x.t * m.dense_mlp_layers / m.layers * (b["relu2"] - 2.0 * f["relu2"])
        per_tok = per_tok + np.where(_eager_kernel(x, fw.activation_kernel), relu2, 0.0)
    nbytes = x.tok * per_tok
    passes = _moe_passes(x) if m.activation_clamp else None
    if passes is not None:
        clamped = x.routed_slots * m.expert_ffn / x.t * (b["swiglu_clamped"] - 2.0 * f["swiglu_clamped"])
        nbytes = nbytes + np.where(np.asarray(passes[1], float) > 1.0, clamped, 0.0)
    return compute.stream_time(nbytes, x.r, kernels=0.0)


def _rope_unfused_time(x: _Step) -> Any:
    """Seconds per average layer and micro-batch of RoPE run unfused: a model with a YaRN attention factor
    (ModelArch.rope_attention_factor != 1, gpt-oss) on a style whose fused RoPE takes none (PerfStyle.
    rope_mscale_unfused: Megatron-Core's apply_rotary_pos_emb falls back to _apply_rotary_pos_emb_bshd when mscale
    != 1), over the q and k of this GPU's heads, beyond the fused kernel the layer already counts (perf_constants.yaml
    gemm.rope_unfused_mcore_bytes); the forward again under full recompute. Attention layers only (a hybrid model's
    share of them). Other styles and models, and Megatron-Core's fused_single_qkv_rope (strategy.fused_qkv_rope:
    TE's apply_fused_qkv_rotary_pos_emb on the unsplit qkv, which takes no mscale, attention.py at 26.04-alpha.rc2):
    nothing."""
    m = x.model
    if m.rope_attention_factor == 1.0 or m.position != "rope" or m.attention != "gqa" or not np.any(x.fw.rope_mscale_unfused):
        return 0.0
    b = x.k.rope_unfused_mcore_bytes
    width = (m.q_dim + m.kv_dim) / x.t * m.attention_layers / m.layers
    t = compute.stream_time(x.tok * width * (b["forward"] * (1.0 + x.full_share) + b["backward"]), x.r, kernels=0.0)
    return np.where(np.asarray(x.fw.rope_mscale_unfused, bool), t, 0.0)


def _thd_rope_sequences(x: _Step) -> Any:
    """Packed sub-sequences a row where Megatron-Core's unfused RoPE loops over them (PerfStyle.rope_thd_loop with
    strategy.rope_kernel eager on packed rows of a RoPE model): the row's positions over the mean sample length
    (Training.attention_span), at least 1; 0 where the loop does not run."""
    m, tr = x.model, x.training
    if m.position != "rope" or tr.per_sample_rows or tr.attention_span <= 0 or not np.any(x.fw.rope_thd_loop):
        return 0.0
    if x.fw.rope_kernel != "eager":
        return 0.0
    sequences = np.maximum(float(tr.seq_len) * tr.pack_fill / float(tr.attention_span), 1.0)
    return np.where(np.asarray(x.fw.rope_thd_loop, bool), sequences, 0.0)


def _mla_interleave(x: _Step) -> float:
    """1 where the loop's calls gather the rotary channels first (multi-latent attention: multi_latent_attention.py
    at 61f31145 passes mla_rotary_interleaved=True), else 0 (docs/known-gaps.md 325 (a))."""
    return 1.0 if x.model.attention == "mla" else 0.0


def _thd_rope_host(x: _Step) -> Any:
    """Host seconds per average layer and micro-batch that Megatron-Core's unfused RoPE on THD-packed rows exposes
    (PerfStyle.rope_thd_loop with strategy.rope_kernel eager: apply_rope_fusion False; rope_utils.
    _apply_rotary_pos_emb_thd at NVIDIA/Megatron-LM 61f31145). Each call (q and k, every attention layer's forward and
    its recompute) reads the device cu_seqlens on the host (.tolist(), then .item()), which drains the queue, and then
    issues its ops and 13 per packed sub-sequence one by one (perf_constants.yaml kernels rope_thd_*; MLA's interleave
    one more, _mla_interleave): tiny kernels, so launch-bound at the loop's element-wise op (_rope_thd_op_s;
    host_sync.drain_excess_s with no GPU time; a vendor with no round-trip figure pays the issue alone), exposed in
    full. Sub-sequences a row: _thd_rope_sequences, each CP rank looping over all of them. Unpacked or fused:
    nothing. The loop's backward: _thd_rope_backward_host_s."""
    sequences = _thd_rope_sequences(x)
    if not np.any(sequences):
        return 0.0
    kern = compute.KERNELS
    per_sequence = kern["rope_thd_host_per_sequence"] + _mla_interleave(x) * kern["rope_thd_mla_interleave_per_sequence"]
    ops = kern["rope_thd_host_per_call"] + sequences * per_sequence
    op_s = _rope_thd_op_s(x)
    trip_s = host_figure("round_trip_s", x.system.vendor) or 0.0
    per_call = drain_excess_s(ops, op_s, 0.0, trip_s) + (kern["rope_thd_syncs_per_call"] - 1.0) * trip_s
    t = 2.0 * per_call * (x.model.attention_layers / x.model.layers) * (1.0 + x.full_share)
    return np.where(sequences > 0, t, 0.0)


def _thd_rope_backward_host_s(x: _Step) -> Any:
    """Host seconds per average layer and micro-batch to issue the backward of Megatron-Core's unfused THD RoPE loop
    (_thd_rope_host's forward): autograd's engine runs each packed sub-sequence's nodes one by one, the CopySlices
    of the output slice (the whole gradient copied, the slice cloned and zeroed), the products', rotate_half's neg
    and cat, the sums and the slice's zero-filled backward: 12 kernels a sub-sequence (perf_constants.yaml kernels
    rope_thd_backward_per_sequence, counted by benchmarks/thd_rope_backward.py), q and k once a layer, recompute or
    not; MLA's interleave 5 more (_mla_interleave). Each at the loop's element-wise op (_rope_thd_op_s): the engine's
    C++ nodes cost the host about what the forward's Python ops do (the same benchmark, timed on CPU). No sync in the
    backward: joined to the layer's host floor in _host_excess's soft maximum. docs/known-gaps.md 315 (a), 325 (a)."""
    sequences = _thd_rope_sequences(x)
    if not np.any(sequences):
        return 0.0
    kern = compute.KERNELS
    per_sequence = (kern["rope_thd_backward_per_sequence"]
                    + _mla_interleave(x) * kern["rope_thd_mla_interleave_backward_per_sequence"])
    kernels = 2.0 * sequences * per_sequence
    return kernels * _rope_thd_op_s(x) * (x.model.attention_layers / x.model.layers)


def _flash_qkv_pack_time(x: _Step) -> Any:
    """Seconds per average layer and micro-batch of GPT-NeoX's flash wrapper copies (strategy.flash_qkv_pack: v1.0
    ParallelSelfAttention.flash_attention re-lays q, k and v out of Megatron's [s, b, np, hn] and packs them for
    flash_attn_unpadded_qkvpacked_func, then copies the output back; perf_constants.yaml
    gemm.eager_bytes_per_element flash_pack_*): the forward again under full recompute, over this GPU's heads;
    attention layers only. Not stated, or without flash attention: nothing (docs/known-gaps.md 133)."""
    if not np.any(x.fw.flash_qkv_pack) or not x.training.flash_attention:
        return 0.0
    m, b = x.model, x.k.eager_bytes_per_element
    share = m.attention_layers / m.layers / x.t
    fwd = b["flash_pack_qkv"] * (m.q_dim + 2 * m.kv_dim) + b["flash_pack_out"] * m.q_dim
    nbytes = x.tok * share * (fwd * (1.0 + x.full_share) + b["flash_pack_out_grad"] * m.q_dim)
    return compute.stream_time(nbytes, x.r, kernels=5.0 * (1.0 + x.full_share) + 1.0)


def _native_length(x: _Step) -> tuple[Any, Any]:
    """(forward, backward) rate of the attention kernels at the length one kernel call runs, relative to the length
    their efficiency is taken at (PerfConstants.native_length_factors, flash_length_factor):
    the attention span (the row where none is given), over CP the rank's share -- Transformer Engine's ring
    (AttnFuncWithCP) runs each step on the local chunks, span / cp queries against span / cp or span / 2 cp keys;
    under cp_comm_type a2a the whole span on a head shard; at the job's cuDNN release."""
    span = np.where(np.asarray(x.span, float) > 0, x.span, x.row) / (1.0 if x.cp_comm_type == "a2a" else x.c)
    fwd, bwd = x.k.native_length_factors(x.system.accelerator, x.fw.attention_kernel, span, x.cudnn_release)
    flash = x.k.flash_length_factor(x.system.accelerator, x.fw.attention_kernel, span)
    return fwd * flash, bwd * flash


def _cp_ring_calls(x: _Step) -> tuple[Any, Any]:
    """(forward, backward) time of the native attention kernels under Transformer Engine's context-parallel ring over
    what their rate at the call length gives: each ring step is its own kernel call (AttnFuncWithCPAndKVP2P), and a
    call pays every query block's fixed work again (calibration.native_block_tiles: c key tiles a block, read from the
    part's measured rate at its two shortest lengths). With 2 cp load-balanced chunks a rank, its late chunk attends
    in all cp steps and its early chunk in 1 + r of them (rank r: step 0 and the steps bringing K / V of an earlier
    rank), (3 cp + 1) / 4 calls a query block on average. A query block of the row's n causal tiles (calibration.
    causal_tiles) so takes n + k c tile times; the rate applied is taken at the call length (rate_length, at least the
    reference: _native_blocks), whose blocks hold n' tiles and one c: factor (n + k c) / n x n' / (n' + c). 1 without
    CP, for the all-to-all and all-gather CP (one call a query block) and PyTorch's ring, and for other kernels."""
    ring = (x.c > 1) & (x.cp_comm_type not in ("a2a", "all_gather")) & ~np.asarray(x.fw.cp_torch_ring, bool)
    native = np.asarray(x.fw.attention_kernel) == "native"
    if not np.any(ring & native):
        return 1.0, 1.0
    (c_fwd, c_bwd), rate_length = _native_blocks(x)
    span = np.where(np.asarray(x.span, float) > 0, x.span, x.row)
    n, n_at = causal_tiles(span), causal_tiles(rate_length)
    calls = (3.0 * x.c + 1.0) / 4.0
    return tuple(np.where(ring & native, (n + calls * c) / n * n_at / (n_at + c), 1.0)  # type: ignore[return-value]
                 for c in (c_fwd, c_bwd))


def _attention_grid(x: _Step) -> tuple[Any, Any]:
    """(forward, backward) time of the native attention kernels over their full-grid rate where a call launches fewer
    CTAs than the part has SMs, or not many more (compute.attention_grid_factors; perf_constants attention.grid): a
    call covers the attention span (packed samples: each its own rows of the grid, row / span of them a sequence) over
    the query heads on this GPU, heads / tp (/ cp under the all-to-all CP); Transformer Engine's p2p ring runs span / cp
    positions a call. 1 for other kernels, PyTorch's ring, the all-gather CP and families without grid data
    (docs/known-gaps.md 38)."""
    grid = x.k.attention_grid(x.system.accelerator)
    native = np.asarray(x.fw.attention_kernel) == "native"
    torch_ring = np.asarray(x.fw.cp_torch_ring, bool) & (x.c > 1)
    if grid is None or not np.any(native) or x.cp_comm_type == "all_gather" or np.all(torch_ring):
        return 1.0, 1.0
    span = np.where(np.asarray(x.span, float) > 0, x.span, x.row)
    a2a = x.cp_comm_type == "a2a"
    heads = _shapes(x.model).heads / (x.t * (x.c if a2a else 1.0)) * x.b * float(x.training.sequences_per_sample)
    heads = heads * np.asarray(x.row, float) / span
    fwd, bwd = compute.attention_grid_factors(span / (1.0 if a2a else x.c), heads, x.c, not a2a, *grid)
    use = native & ~torch_ring
    return np.where(use, fwd, 1.0), np.where(use, bwd, 1.0)


def _window_backward_skips(x: _Step) -> Any:
    """Whether a windowed layer's attention backward skips the key tiles outside its window, as its forward does.
    cuDNN's FP8 SDPA backward (fp8_attention: Transformer Engine's FusedAttention, the only FP8 backend, which takes a
    window in FP8 on sm100 from cuDNN 9.21: dot_product_attention/utils.py get_attention_backend at v2.15) does not:
    cudnn-frontend's GPT-OSS benchmark (d 64, window 128, cuDNN 9.22; benchmarks/data/cudnn_sdpa_window.csv) times its
    FP8 and MXFP8 backward growing with the square of the length (GB200 FP8 0.54, 1.73, 6.18, 23.2, 90.3 ms from 2K to
    32K: the causal row's FLOPs at 0.8-1.0 PFLOPS), where the BF16 backward and the FP8 forward grow with the length."""
    native = np.asarray(x.fw.attention_kernel) == "native"
    return ~(native & bool(x.fp8_attention))


def _narrow_head(x: _Step) -> tuple[Any, Any]:
    """(forward, backward) time per FLOP of the native kernels and FlexAttention's at the model's head dims relative
    to 128, the head dim their rates were measured at (calibration.narrow_head: a narrow head keeps each score's
    softmax work beside half the MMA work); 1 for other kernels."""
    fwd, bwd = x.k.narrow_head(*x.model.head_dims)
    at_128 = np.isin(np.asarray(x.fw.attention_kernel), ("native", "flex"))
    return np.where(at_128, fwd, 1.0), np.where(at_128, bwd, 1.0)


def _ck_mla_bwd_pad(x: _Step) -> Any:
    """Backward time of an AMD part's native attention over its counted work where MLA's head dims (d_qk != d_v) run
    CK's tile kernel padded to its compiled head dim (calibration.ck_mla_bwd_pad: CDNA 3, or CDNA 4 with an AITER
    before its assembly MLA backward, strategy.aiter_mla_bwd_asm false); 1 for other vendors and kernels."""
    if x.system.vendor != "amd":
        return 1.0
    pad = x.k.ck_mla_bwd_pad(x.system.accelerator, *x.model.head_dims, asm=x.aiter_mla_bwd_asm)
    return np.where(np.asarray(x.fw.attention_kernel) == "native", pad, 1.0)


def _native_blocks(x: _Step) -> tuple[tuple[Any, Any], Any]:
    """((forward, backward) fixed work of a native kernel's query block in key tiles, at the job's cuDNN release:
    calibration.native_block_tiles; 0 for other kernels), and the causal length the attention rate is taken at (the
    span over CP, at least the reference length: _native_length), for a windowed layer's rate
    (compute.window_block_rate)."""
    native = np.asarray(x.fw.attention_kernel) == "native"
    tiles = x.k.native_block_tiles(x.system.accelerator, x.cudnn_release)
    span = np.where(np.asarray(x.span, float) > 0, x.span, x.row) / x.c
    return (np.where(native, tiles[0], 0.0), np.where(native, tiles[1], 0.0)), np.maximum(span, x.k.native_length_ref)


def _cudnn_release(x: _Step) -> tuple[Any, Any]:
    """(forward, backward) throughput of the job's cuDNN release over the base one (perf_constants.yaml
    attention.cudnn_release_speedup), for the native (cuDNN) attention kernel only; validate.py refuses a release
    the part has no measurement at."""
    fwd, bwd = x.k.cudnn_release(x.system.accelerator, x.cudnn_release) or (1.0, 1.0)
    native = np.asarray(x.fw.attention_kernel) == "native"
    return np.where(native, fwd, 1.0), np.where(native, bwd, 1.0)


def _lora_adapters(x: _Step, eval_forward: bool = False) -> Any:
    """Seconds of one average layer's LoRA adapters per micro-batch (perf_constants.yaml `lora:`): the
    activations their memory-bound A / B GEMMs, scaling and add stream, as the job's implementation runs them
    (lora.impl: `impls`, else the peft counts; `compiled` inside a torch.compile'd layer), and the adapter dropout
    where lora.dropout > 0, on the adapter's
    input or output by implementation; forward (twice under full recompute) and backward. Under TP a rank's adapter
    streams the width its base linear is not split in: a column-parallel linear's whole input (A reads the full, under
    sequence parallelism gathered, x: Megatron ColumnParallelLinear linear_in of NeMo's ParallelLinearAdapter; NeMo
    AutoModel's ColwiseParallelLora shards lora_A's rank) and 1 / t of its output; a row-parallel one's
    (model_states.ROW_PARALLEL_LINEARS) 1 / t of its input and the whole output, a partial sum added before the base
    layer's reduce (NeMo linear_out gather_output True; AutoModel keeps lora_res Partial), 1 / t of it under sequence
    parallelism with lora.a2a (NeMo a2a_experimental: lin_out_gather_output False, then an all-to-all, not charged);
    routed-expert adapters over EP too. `eval_forward`: one forward in eval mode (an evaluation pass: the model in
    eval(), so nn.Dropout returns its input and no dropout kernel runs; PEFT's cast as in training; docs/known-gaps.md
    298 (b))."""
    w_in, w_out, e_in, e_out, n_lin = lora_adapted_widths(x.model, x.training)
    if n_lin == 0:
        return 0.0
    rw_in, rw_out, re_in, re_out, _ = lora_adapted_widths(x.model, x.training, only=ROW_PARALLEL_LINEARS)
    lc, t, r = x.k.raw["lora"], x.t, x.r
    row_out = np.where(x.sp & x.training.lora_a2a, 1.0 / t, 1.0)  # the row-parallel adapters' output share
    impl = _lora_counted_impl(x, lc)
    eager = _adapter_counts(x, lc, dropout=not eval_forward)
    compiled = lc["compiled"].get(impl)  # compiled: the casts not added (Inductor's fusion of them not read)

    def elems(fi: float, fo: float) -> Any:
        dense = fi * (w_in - rw_in + rw_in / t) + fo * ((w_out - rw_out) / t + row_out * rw_out)
        experts = fi * (e_in - re_in + re_in / t) + fo * ((e_out - re_out) / t + row_out * re_out)
        return x.tok * (dense + experts / x.e)

    dropout = x.training.lora_dropout > 0 and not eval_forward
    on_out = float(dropout and lora_dropout_on_output(x.training))
    on_in = float(dropout) - on_out
    drop_kernels = n_lin * float(dropout)

    def seconds(c: dict, saved: Any = 0.0) -> Any:
        fwd = compute.stream_time((elems(c["fwd_in_elems"] + on_in * lc["dropout_fwd_elems"],
                                         c["fwd_out_elems"] + on_out * lc["dropout_fwd_elems"]) + saved) * r.act_bytes,
                                  r, kernels=n_lin * c["fwd_kernels"] + drop_kernels)
        if eval_forward:
            return fwd
        bwd = compute.stream_time(elems(c["bwd_in_elems"] + on_in * lc["dropout_bwd_elems"],
                                        c["bwd_out_elems"] + on_out * lc["dropout_bwd_elems"]) * r.act_bytes, r,
                                  kernels=n_lin * c["bwd_kernels"] + drop_kernels)
        return fwd * (1.0 + x.full_share) + bwd

    # the layer compiled by torch.compile (lora.compiled); a style's own fused kernels leave the adapter eager
    in_compiled = _inductor_fused(x)
    upcast = _peft_upcast_excess(x, elems(1.0, 0.0), elems(0.0, 1.0), eval_forward)  # eager only
    if compiled is None or not np.any(in_compiled):
        return seconds(eager) + upcast
    _, m_out, _, me_out, _ = lora_adapted_widths(x.model, x.training, only=MLP_INPUT_LINEARS)
    saved = lc["compiled_mlp_input_saved_elems"] * x.tok * (m_out / t + me_out / (t * x.e))
    return np.where(in_compiled, seconds(compiled, saved), seconds(eager) + upcast)


def _with_l2_rereads(x: _Step, lt: compute.LayerTimes) -> compute.LayerTimes:
    """`lt` less the eager chains' L2 re-reads (`_l2_reread_credit`): the forward's once, again under full recompute
    (in the backward's time), the backward's; unchanged where the part's L2 re-read rate is not measured."""
    if x.r.l2_read_bytes_s <= 0.0:
        return lt
    fwd, bwd = _l2_reread_credit(x)
    return dataclasses.replace(lt, fwd=lt.fwd - fwd, bwd=lt.bwd - fwd * x.full_share - bwd)


def _l2_reread_credit(x: _Step) -> tuple[Any, Any]:
    """(forward, backward) seconds per average layer and micro-batch that the eager op chains' reads of their own
    intermediates save where those fit the part's L2 (compute.l2_reread_credit; counts perf_constants.yaml
    `l2_rereads`): the eager RMSNorm's (each norm over the hidden size, on the sequence shard under SP), and the peft
    adapter's and its fp32 input cast's on each dense adapted linear of an eager (uncompiled, not TE-fused) layer at
    TP 1, each linear's tensors tested on their own. The forward's again under full recompute is the caller's."""
    c, m = x.k.raw["l2_rereads"], x.model
    eager_norm = (m.norm == "rmsnorm") & _eager_kernel(x, x.fw.norm_kernel)
    norm_tok = x.tok * np.where(x.sp, 1.0 / x.t, 1.0) * float(m.hidden)
    fwd = np.where(eager_norm, float(_shapes(m).norms) * compute.l2_reread_credit(
        norm_tok * c["rmsnorm"]["read"], norm_tok * c["rmsnorm"]["reuse"], x.r), 0.0)
    bwd = 0.0
    lc = x.k.raw["lora"]
    if _lora_counted_impl(x, lc) != "peft":
        return fwd, bwd
    in_compiled = _inductor_fused(x)
    on = (np.asarray(x.t) == 1) & ~in_compiled & ~np.asarray(_te_fused_lora(x), bool)
    cast = _peft_cast_on(x)
    a, f, credit = c["lora_peft"], c["lora_peft_fp32_cast"], compute.l2_reread_credit
    for d_in, d_out, n in lora_dense_linears(m, x.training):
        tok_in, tok_out = x.tok * d_in, x.tok * d_out
        fwd = fwd + on * n * (credit(tok_out * a["fwd_read"], tok_out * a["fwd_reuse"], x.r)
                              + cast * credit(tok_in * f["fwd_read"], tok_in * f["fwd_reuse"], x.r))
        bwd = bwd + on * n * (credit(tok_out * a["bwd_read"], tok_out * a["bwd_reuse"], x.r)
                              + cast * credit(tok_in * f["bwd_read"], tok_in * f["bwd_reuse"], x.r))
    return fwd, bwd


def _te_fused_lora(x: _Step) -> Any:
    """True where NeMo runs the adapters as TEFusedLoRALinear: strategy.te_op_fuser (the model config's
    use_transformer_engine_op_fuser) at TP 1 on a LoRA job whose adapters are NeMo's own (lora.impl unset, timed
    with the `peft` counts); nemo/collections/llm/peft/lora.py LoRA.transform `enable_op_fuser` (NVIDIA/NeMo 8cfedd72:
    \"TP not yet supported\"). An array over strategies."""
    if not x.te_op_fuser or x.training.method != "lora" or x.training.lora_impl != "peft":
        return np.zeros(np.shape(x.t), bool)
    return np.asarray(x.t) == 1


def _lora_counted_impl(x: _Step, lc: dict) -> Any:
    """The adapter implementation whose counts the job's is timed with (perf_constants.yaml lora.counts_as: LitGPT's
    and old PEFT's adapters run PEFT's kernels), else the job's own."""
    return lc["counts_as"].get(x.training.lora_impl, x.training.lora_impl)


def _adapter_counts(x: _Step, lc: dict, dropout: bool = True) -> dict:
    """An eager adapter's HBM and kernel counts per strategy (perf_constants.yaml `lora:`): the job's implementation's
    with PEFT's fp32 input cast where it runs (`_peft_cast_counts`; `dropout` False: no dropout runs, as in eval),
    TE's fused ones (lora.te_fused) where NeMo fuses them (`_te_fused_lora`)."""
    c = _peft_cast_counts(x, lc["impls"].get(_lora_counted_impl(x, lc), lc), lc, dropout)
    on = _te_fused_lora(x)
    if not np.any(on):
        return c
    return c | {k: np.where(on, float(v), c[k]) for k, v in lc["te_fused"].items()}


def _peft_cast_on(x: _Step) -> Any:
    """1 where PEFT's fp32 input cast runs (perf_constants.yaml lora.peft_fp32_input_cast): the style runs HF PEFT's
    lora.Linear (PerfStyle.peft_fp32_input_cast), the adapters kept fp32 (the peft implementation:
    memory_constants.yaml lora.model_dtype_impls leaves it fp32) beside 16-bit activations; plain LoRA only
    (bitsandbytes' Linear4bit skips the cast under autocast: QLoRA). The cast reads `lora_A.weight.dtype` before
    lora_A runs, so it runs where that attribute is fp32 then (`_peft_fp32_weight_seen`). 0 otherwise; an array
    where "auto" picks a style per strategy."""
    if x.training.method != "lora" or x.training.lora_impl != "peft" or x.act >= 4.0:
        return 0.0
    return np.asarray(x.fw.peft_fp32_input_cast, float) * _peft_fp32_weight_seen(x)


def _peft_fp32_weight_seen(x: _Step) -> Any:
    """Where PEFT's `x.to(lora_A.weight.dtype)` sees an fp32 weight (docs/known-gaps.md 298 (a)): unsharded (ZeRO 0:
    the fp32 adapters themselves), without autocast (no mixed precision handed to the engine: the adapters stay
    fp32 wherever they are gathered), and on torch FSDP1 under its MixedPrecision: with use_orig_params (accelerate
    launch's default, --fsdp_use_orig_params "true", commands/launch.py at v0.33.0 / v1.0.1) the adapter's own unit
    (PEFT's fsdp_auto_wrap_policy) is resharded outside its forward, and _use_sharded_views points the original
    parameter at a slice of the fp32 local shard (torch/distributed/fsdp/_flat_param.py _use_sharded_flat_param,
    torch 2.13.0 cf30153c), which is what the attribute returns before the unit's pre-forward gathers the bf16 copy.
    Not on DeepSpeed's engine, which casts the module to 16 bit (memory._frozen_base_fp32), nor on FSDP2 under
    autocast, whose unit (accelerate's fsdp2_prepare_auto_wrap_policy: the decoder layer) has set the gathered
    param_dtype parameters before the adapter runs."""
    zero, ds = np.asarray(x.zero), np.asarray(x.fw.zero3_deepspeed_fetch, bool)
    fsdp1 = np.asarray(x.fw.fsdp1_grad_predivide, bool) & ~ds
    return ((zero == 0) | bool(x.no_autocast) | fsdp1).astype(float)


def _peft_cast_counts(x: _Step, c: dict, lc: dict, dropout: bool = True) -> dict:
    """An adapter's eager counts `c` plus PEFT's fp32 input cast where it runs (`_peft_cast_on`): under autocast the
    cast and autocast's cast back (lora.peft_fp32_input_cast), without it (Strategy.autocast false) the adapter's ops
    in fp32 (lora.peft_fp32_no_autocast); and the adapter dropout on the cast's fp32 output where lora.dropout > 0
    drops the input (lora.dropout_fp32_input_extra_elems, each way): the dropout runs on the cast's fp32 output
    wherever the cast runs (docs/known-gaps.md 298 (a))."""
    on = _peft_cast_on(x)
    if not np.any(on):
        return c
    cast = lc["peft_fp32_no_autocast" if x.no_autocast else "peft_fp32_input_cast"]
    out = c | {k: c[k] + on * float(v) for k, v in cast.items()}
    if dropout and x.training.lora_dropout > 0 and not lora_dropout_on_output(x.training):
        extra = on * lc["dropout_fp32_input_extra_elems"]
        out["fwd_in_elems"] = out["fwd_in_elems"] + extra
        out["bwd_in_elems"] = out["bwd_in_elems"] + extra
    return out


def _peft_upcast_excess(x: _Step, in_elems: Any, out_elems: Any = 0.0, eval_forward: bool = False) -> Any:
    """Seconds per average layer and micro-batch beyond the HBM stream of PEFT's 16-bit -> fp32 copies: the input cast
    of each adapter in every forward (again under recompute) and, under autocast, its ToCopyBackward's upcast of
    lora_A's input gradient in the backward, `in_elems` elements each (the adapters' inputs on this GPU); without
    autocast (Strategy.autocast false) lora_A's input gradient is fp32 already and the upcast in the backward is the
    cast back's ToCopyBackward of the output gradient, `out_elems` (the adapters' outputs). PyTorch runs them as its
    unvectorised dynamic-cast copy on NVIDIA, at a per-SM rate below the stream on the parts perf_constants.yaml
    dynamic_cast lists (the downcasts back are vectorised and stay in the stream); `eval_forward`: one forward's
    input cast alone. 0 where the cast does not run or the part is not listed."""
    on = _peft_cast_on(x)
    rate = x.k.dynamic_cast_elems_s(x.system.accelerator)
    if not np.any(on) or rate is None:
        return 0.0
    n = in_elems * (1.0 + x.full_share) + out_elems if x.no_autocast else in_elems * (2.0 + x.full_share)
    n = in_elems if eval_forward else n
    return on * np.maximum(n / rate - n * 3.0 * x.r.act_bytes / x.r.hbm_bytes_s, 0.0)


def _tp_comm(x: _Step) -> tuple[np.ndarray, np.ndarray]:
    """(one TP all-reduce-equivalent of a layer's activations -- with sequence parallelism a ring reduce-scatter plus
    a ring all-gather, no NVLS gain (_sp_pair_time) --, TP time per layer): 4 all-reduce-equivalents per layer, 3 with
    a parallel residual (`_tp_collectives_per_pass`) (+ the forward's again with full recompute; +1 under
    torchtitan's per-op SAC with sequence parallelism: the all-gathers in front of the attention and MLP input
    projections are not in its save list (`_save_list` keeps mm, SDPA, reduce_scatter_tensor and max), so
    recomputing the wk and w3 matmuls re-runs both all-gathers).
    FP8 with sequence parallelism: each all-reduce-equivalent is a 16-bit reduce-scatter and an all-gather, and
    `fp8_tp_allgather` of those all-gathers carry FP8 (1 B) -- Transformer Engine casts GEMM inputs and output
    gradients before it gathers (module/layernorm_linear.py gather_along_first_dim(quantizer=...)); torchtitan's
    Float8ColwiseParallel the forward inputs, tensorwise only (parallelize.py enable_float8_tensorwise_tp). The
    LM head's collectives stay 16-bit."""
    k, t = x.k, x.t
    k_tp = comm.ranks_per_domain(t, 1.0, x.domain)
    m_tp = comm.zone_members(t, 1.0, x.system)
    act_bytes = x.tok * x.model.hidden * x.act
    t_ar = np.where(x.sp, _sp_pair_time(x, act_bytes, 0.0, k_tp, m_tp),
                    comm.all_reduce_time(act_bytes, t, k_tp, x.link(t, 1.0), x.system, k.nvls_allreduce_gain, m_tp))
    share = _fp8_tp_gather_share(x)
    t_layer = t_ar
    if np.any(share > 0):  # the all-gather's `share` quantized: FP8 1 B, NVFP4 0.5625 B (TE gathers the NVFP4 copy)
        t_layer = np.where(x.sp, _sp_pair_time(x, act_bytes, share, k_tp, m_tp), t_ar)
    sac_gathers = (x.rc == 1) & np.asarray(x.fw.selective_op_policy) & x.sp
    fwd, bwd = _tp_collectives_per_pass(x)
    moe_skip, moe_routed = _moe_tp_collectives(x)
    tp_per_layer = (fwd * (1.0 + x.full_share) + bwd + 1.0 * sac_gathers - moe_skip) * t_layer
    # the overlap splits sequence parallelism's all-gather / reduce-scatter over the GEMMs: without it there is none
    # (Megatron-LM training/arguments.py asserts sequence_parallel under tp_comm_overlap, 61f31145; Megatron-Bridge's
    # CommOverlapConfig turns it off at sequence_parallel False, training/comm_overlap.py at f3ae2767b;
    # docs/known-gaps.md 288 (b))
    overlap = np.asarray(x.fw.tp_comm_overlap, bool) & np.asarray(x.sp, bool)
    if np.any(overlap):  # hidden part still slows the GEMMs it overlaps (SM/HBM interference)
        style = np.asarray(x.fw.tp_overlap_fraction, float)
        hidden = np.where(np.isnan(style), k.tp_overlap_fraction, style)
        tp_per_layer = tp_per_layer * _when(overlap, 1.0 - hidden * (1.0 - k.overlap_interference), 1.0)
    # the dispatcher's expert-TP collectives run outside the linear layers the overlap covers: exposed either way
    return t_ar, tp_per_layer + moe_routed + _amax_reductions(x, k_tp, m_tp) + _delayed_amax_reductions(x) + \
        _kv_subshard_time(x, k_tp, m_tp) + _global_aux_loss_time(x)


def _kv_subshard_time(x: _Step, k_tp: Any, m_tp: Any) -> Any:
    """Seconds per layer and micro-batch of the QKV all-gather a stack that sub-shards the K / V heads runs where TP
    exceeds them (PerfStyle.kv_head_subshard, Megatron-Core core_v0.16.0+): each attention layer all-gathers its QKV
    projection's output -- tokens x (q + k + v widths), 16-bit -- over the TP ranks in the forward (again under full
    recompute) and reduce-scatters its gradient in the backward (Megatron-LM attention.py
    get_query_key_value_tensors: all_gather_last_dim_from_tensor_parallel_region, tensor_parallel/mappings.py
    _AllGatherFromTensorParallelRegion, f7dfb99795). A blocking collective on the compute stream, outside Transformer
    Engine's userbuffers overlap: exposed. Hybrid models: their attention layers' share."""
    m = x.model
    if m.attention == "mla" or not np.any(x.fw.kv_head_subshard):
        return 0.0
    on = np.asarray(x.fw.kv_head_subshard, bool) & (x.t > max(m.kv_heads, 1))
    if not np.any(on):
        return 0.0
    qkv_bytes = x.tok * float(m.q_dim + m.kv_dim + m.v_dim) * x.act
    r = x.link(x.t, 1.0)
    ag = comm.all_gather_time(qkv_bytes, x.t, k_tp, r, x.system, m_tp)
    rs = comm.reduce_scatter_time(qkv_bytes, x.t, k_tp, r, x.system, m_tp)
    return np.where(on, m.attention_layers / m.layers * (ag * (1.0 + x.full_share) + rs), 0.0)


def _kv_split(x: _Step) -> Any:
    """The ranks a layer's K (or V) is split over, per strategy: tp, or the K / V heads where a sub-sharding stack
    runs TP above them (PerfStyle.kv_head_subshard: each rank holds one head whole, `_kv_subshard_time`)."""
    kv = max(x.model.kv_heads, 1)
    if x.model.attention == "mla" or not np.any(x.fw.kv_head_subshard):
        return x.t
    return np.where(np.asarray(x.fw.kv_head_subshard, bool) & (x.t > kv), float(kv), x.t)


def _sp_pair_time(x: _Step, act_bytes: Any, fp8_share: Any, k_tp: Any, m_tp: Any) -> Any:
    """Seconds of one sequence-parallel all-reduce-equivalent: a reduce-scatter of the 16-bit activations and an
    all-gather with `fp8_share` of its bytes quantized, both NCCL rings with no NVLS gain. NVLink SHARP does not
    speed these up: NVLS sends S and receives S/N per rank (all-gather: S/N and S) where the ring moves (N-1)/N S
    each way, so the busier direction is slower (nvidia/nccl issue 1083, sjeaugey 2023-11; issue 1506, 2024-11:
    8 x H100 all-gather NVLS 300 GB/s vs ring 350, all-reduce NVLS 470), and NCCL's tuner keeps rings for them
    (issue 1670, 2025-04); measured ring all-gather 361-363 GB/s on 8 x H100 (networks.yaml allgather-8x-h100)."""
    ag_bytes = act_bytes * (1.0 - fp8_share * (x.act - saved_gemm_input_bytes(x.training, x.model)) / x.act)
    r = x.link(x.t, 1.0)
    rs = comm.reduce_scatter_time(act_bytes, x.t, k_tp, r, x.system, m_tp)
    return rs + comm.all_gather_time(ag_bytes, x.t, k_tp, r, x.system, m_tp)


def _amax_reductions(x: _Step, k_tp: Any, m_tp: Any) -> Any:
    """Seconds per layer and micro-batch of Transformer Engine's amax all-reduces over the TP group. Under current
    scaling (Float8CurrentScaling) and NVFP4 with sequence parallelism, a column-parallel linear's input quantizer
    and a row-parallel linear's output-gradient quantizer reduce their amax over the TP group before the cast, since
    the gathered tensor needs one scale on every rank (module/linear.py, layernorm_linear.py, layernorm_mlp.py
    _customize_quantizers_float8_current_scaling / _customize_quantizers_nvfp4: with_amax_reduction,
    amax_reduction_group = tp_group; TE 2.x): one 4-byte all-reduce between the amax kernel and the cast, on the
    critical path, per sequence-parallel all-gather of a linear's operand -- the qkv and MLP input in the forward
    (again under full recompute), the output projection's and MLP output's gradient in the backward
    (`_tp_collectives_per_pass`). The routed experts' grouped linears gather nothing over TP (their tokens arrive
    through the dispatcher), so an MoE layer reduces for its attention block only. Timed as any all-reduce
    (comm.all_reduce_time: latency-bound at 4 bytes); the low-precision share of the layers only
    (Training.bf16_layers). Delayed scaling reduces its amax history once per pass, not per tensor: none here
    (its per-chunk reductions: _delayed_amax_reductions)."""
    recipe = x.k.fp8_recipe(x.system.accelerator, x.training.fp8_recipe)["name"] \
        if x.training.precision == "fp8" else ""
    on = np.asarray(x.fw.fp8_te_quantizer, bool) & x.sp & (x.t > 1)
    if recipe not in ("tensorwise", "nvfp4") or not np.any(on):
        return 0.0
    fwd, bwd = _tp_collectives_per_pass(x)
    m = x.model
    moe = m.moe_layer_count / m.layers
    if m.is_hybrid:  # one block a layer, an MoE block none
        fwd = bwd = 1.0 - moe
    elif m.is_moe:  # the MoE layers' MLP block gathers no linear operand over TP
        fwd, bwd = fwd - 0.5 * fwd * moe, bwd - 0.5 * bwd * moe
    t_amax = comm.all_reduce_time(4.0, x.t, k_tp, x.link(x.t, 1.0), x.system, x.k.nvls_allreduce_gain, m_tp)
    share = low_precision_share(x.training, m)
    return np.where(on, (fwd * (1.0 + x.full_share) + bwd) * t_amax * share, 0.0)


def _delayed_amax_reductions(x: _Step) -> Any:
    """Seconds per layer and micro-batch of delayed scaling's amax reductions (PerfStyle.fp8_amax_group_reduction).
    Megatron-Core runs each model chunk's layers in one fp8_autocast whose fp8_group is the amax reduction group, the
    TP x DP x CP ranks of a pipeline stage (transformer_block.py TransformerBlock.forward, parallel_state.py
    get_amax_reduction_group, core_v0.9.0; tp_only_amax_red off, its default); Transformer Engine reduces the chunk's
    forward amaxes at the autocast's exit and its backward ones in the backward of its first module
    (fp8.py fp8_autocast_exit / reduce_and_update_fp8_tensors, module/linear.py), each a torch.distributed.all_reduce
    MAX with async_op=False, so the compute stream waits for it (reduce_tensor_across_group_op_max; the same in TE
    v1.9 to v2.5; its NVTE_DP_AMAX_REDUCE_INTERVAL / NVTE_ASYNC_AMAX_REDUCTION, which the dgxc scripts export, were
    gone by v1.9). Two latency-bound all-reduces (4 B an amax: 3 a linear forward, 2 backward) a chunk and
    micro-batch over a group that grows with DP (comm.all_reduce_time; docs/known-gaps.md 245 (c)). Read, nothing
    fitted; the low-precision share of the layers only (Training.bf16_layers)."""
    on = np.asarray(x.fw.fp8_amax_group_reduction, bool)
    if x.training.precision != "fp8" or not np.any(on) or \
            x.k.fp8_recipe(x.system.accelerator, x.training.fp8_recipe)["name"] != "delayed":
        return 0.0
    group = x.t * x.c * np.where(np.asarray(x.fw.fp8_amax_tp_only, bool), 1.0, x.d)
    k_g, m_g = comm.ranks_per_domain(group, 1.0, x.domain), comm.zone_members(group, 1.0, x.system)
    chunk_layers = np.maximum(x.model.layers / (x.p * x.v), 1.0)
    linears = 4.0 * chunk_layers  # qkv, proj, fc1, fc2 (the routed experts' own meta is as small: latency-bound)
    t_fwd, t_bwd = (comm.all_reduce_time(4.0 * n * linears, group, k_g, x.link(group, 1.0), x.system,
                                         x.k.nvls_allreduce_gain, m_g) for n in (3.0, 2.0))
    return np.where(on, (t_fwd + t_bwd) / chunk_layers * low_precision_share(x.training, x.model), 0.0)


def _fp8_tp_gather_share(x: _Step) -> Any:
    """Share of the sequence-parallel all-gathers that carry FP8 (PerfStyle.fp8_tp_allgather): FP8 training with a
    recipe other than rowwise (torchtitan gathers rowwise in bf16), else 0."""
    fp8 = x.training.precision == "fp8" and \
        x.k.fp8_recipe(x.system.accelerator, x.training.fp8_recipe)["name"] != "rowwise"
    return np.asarray(x.fw.fp8_tp_allgather, float) if fp8 else 0.0


def _sp_layout_copies(x: _Step) -> np.ndarray:
    """Seconds per layer and micro-batch of the copies around sequence-parallel collectives on dim 1
    (PerfStyle.sp_dim1_copies): funcol all_gather_tensor gathers along dim 0 and, for gather_dim != 0, runs
    torch.cat(torch.chunk(res, group_size, dim=0), dim=gather_dim) (recent releases take a view instead when the dims
    before gather_dim are 1: one row), and reduce_scatter_tensor cats the scatter_dim chunks into rank order first
    (PyTorch torch/distributed/_functional_collectives.py; torchtitan apply_tp: SequenceParallel / Shard(1), "we can
    accelerate Sequence Parallel by folding the batch dimension and the sequence dimension", PR 437). Each copy reads
    and writes the gathered tensor (tokens x hidden 16-bit). Counted: every forward and recompute collective and the
    backward all-gathers; the backward reduce-scatters' cat takes the summed input gradients, an element-wise kernel
    torch.compile writes in rank order, so it costs a copy only in eager runs. Async TP keeps them (the fused
    all-gather matmul moves the gather dim to the front and back: torch/distributed/_symmetric_memory)."""
    on = np.asarray(x.fw.sp_dim1_copies, bool) & x.sp & (x.b * x.training.sequences_per_sample > 1)
    if not np.any(on):
        return np.zeros_like(np.asarray(x.t, float))
    fwd, bwd = _tp_collectives_per_pass(x)
    sac = (x.rc == 1) & np.asarray(x.fw.selective_op_policy, bool)
    eager = np.asarray(x.a["torch_compile"]) <= 0
    gathers = fwd * (1.0 + x.full_share) + 2.0 * sac + bwd  # forward, recompute and backward all-gathers
    scatters = fwd * (1.0 + x.full_share) + bwd * eager
    copies = gathers + scatters
    # the FP8 share of the gathers (_fp8_tp_gather_share) copies FP8 data
    ag_bytes = x.act - _fp8_tp_gather_share(x) * (x.act - saved_gemm_input_bytes(x.training, x.model))
    nbytes = 2.0 * x.tok * x.model.hidden * (gathers * ag_bytes + scatters * x.act)
    return np.where(on, compute.stream_time(nbytes, x.r, kernels=copies), 0.0)


def _moe_tp_collectives(x: _Step) -> tuple[Any, Any]:
    """(TP all-reduce-equivalents per average layer that the MoE layers do not run on their tokens x hidden, seconds
    per average layer of the routed tokens' expert-TP collectives) under sequence parallelism, where the dense count
    (`_tp_collectives_per_pass`) gives each MoE layer's MLP branch an all-gather / reduce-scatter pair of tokens x
    hidden, forward (again under full recompute) and backward. Shared experts are a dense TP MLP and keep theirs.
    - Expert TP 1: the tokens stay split over the TP ranks through router, dispatch, experts and combine (the EP
      group spans the TP ranks), so no pair for the routed experts.
    - Megatron-Core at expert TP > 1 (PerfStyle.moe_host_sync), alltoall dispatcher: after the EP all-to-all each
      rank all-gathers the received routed copies over the expert-TP group, and reduce-scatters the experts' output
      before the combine (moe/token_dispatcher.py MoEAlltoAllTokenDispatcher.dispatch_postprocess:
      gather_from_sequence_parallel_region(global_input_tokens, group=self.tp_group), combine_preprocess:
      reduce_scatter_to_sequence_parallel_region; tp_group = the expert-TP group; Megatron-LM d98e8a6): the pair
      moves tokens x etp / tp x top-k (x the capacity factor on the busiest rank) x hidden over etp ranks (the
      expert grid's fastest dimension), instead of tokens x hidden: the gather 16-bit, the reduce-scatter (and its
      backward all-gather) in the routing probabilities' dtype, `hidden_states.to(self.probs.dtype)` before it and
      `.to(hidden_states.dtype)` after (fp32 under moe_router_dtype fp32, ModelArch.router_fp32: twice the bytes and
      two casts each way; token_dispatcher.py at Megatron-LM 5a676b36 token_unpermutation and d98e8a6
      combine_preprocess). These collectives are torch.distributed calls on the compute stream, not the TE linear
      layers' userbuffers: `_tp_comm` leaves them out of the TP overlap (docs/known-gaps.md 284 (a)).
    - Megatron-Core at expert TP > 1, flex dispatcher (DeepEP / HybridEP): no expert-TP collective; the dispatch
      goes over the TP x EP group to every expert-TP rank of a token's experts (MoEFlexTokenDispatcher:
      group=tp_ep_group, router_topk=tp_size x topk), timed in `_ep_comm`.
    Other frameworks at expert TP > 1 keep the dense count."""
    m = x.model
    if not m.is_moe or m.parallel_residual:
        return 0.0, 0.0
    on = (x.t > 1.0) & x.sp
    passes = (2.0 + x.full_share) * m.moe_layer_count / m.layers
    mcore = np.asarray(x.fw.moe_host_sync, bool)
    split = x.et > 1.0
    alltoall = moe_alltoall(x.strategy_dispatcher, x.system, x.e, x.t)
    # the routed experts' own pair goes at etp 1, and with Megatron-Core at etp > 1 (replaced below or by the flex
    # dispatch); without shared experts the MoE layer's MLP branch then has no tokens x hidden pair at all
    drop = on & (~split | mcore) & (not m.shared_expert_ffn)
    k_et = comm.ranks_per_domain(x.et, 1.0, x.domain)
    m_et = comm.zone_members(x.et, 1.0, x.system)
    copies = m.experts_per_token * x.moe_load
    elems = x.tok * (x.et / x.t) * copies * m.hidden
    probs_bytes = np.maximum(x.act, 4.0) if m.router_fp32 else x.act
    r_et = x.link(x.et, 1.0)
    pair = comm.all_gather_time(elems * x.act, x.et, k_et, r_et, x.system, m_et) + \
        comm.reduce_scatter_time(elems * probs_bytes, x.et, k_et, r_et, x.system, m_et)
    if m.router_fp32:  # the casts into and out of the probabilities' dtype: the whole buffer and its 1 / etp shard
        pair = pair + compute.stream_time(elems * (1.0 + 1.0 / x.et) * (x.act + probs_bytes), x.r, kernels=2.0)
    routed = np.where(on & split & mcore & alltoall, passes * pair, 0.0)
    return np.where(drop, passes, 0.0), routed


def _tp_collectives_per_pass(x: _Step) -> tuple[Any, Any]:
    """(forward, backward) TP all-reduce-equivalents of one layer (an all-gather or a reduce-scatter is half of
    one). Sequential residual (Megatron): 2 and 2, each branch's output reduced in forward and its input gradient
    in backward. Parallel residual (ModelArch.parallel_residual; GPT-NeoX ParallelTransformerLayer with
    gpt_j_residual: `residual + reduce_from_model_parallel_region(mlp + attention)`): forward 1, the summed outputs
    reduced once, backward still 2, as each branch's ColumnParallelLinear all-reduces its input gradient
    (copy_to_model_parallel_region); with sequence parallelism 1.5 and 1.5 (two input all-gathers and one output
    reduce-scatter forward, the converse backward). Split projections without sequence parallelism add their own
    input-gradient all-reduces to the backward (`_split_input_grad_reduces`)."""
    if x.model.is_hybrid:  # one block per layer (Megatron-Core hybrid: M, *, - or E), one collective each way
        return 1.0, 1.0
    if not x.model.parallel_residual:
        return 2.0, 2.0 + _split_input_grad_reduces(x)
    return np.where(x.sp, 1.5, 1.0), np.where(x.sp, 1.5, 2.0)


def _split_input_grad_reduces(x: _Step) -> Any:
    """Backward TP all-reduces per average layer beyond the fused count's 2 where q, k, v and the SwiGLU gate, up run
    as separate column-parallel linears (PerfStyle.split_projections, strategy.split_projections) without sequence
    parallelism: each linear copies its input to the TP region on its own, so each all-reduces its own input gradient
    before autograd sums them (ATorch's manual TP: atorch/modules/distributed_modules/layers.py
    ColumnParallelLinear.forward copy_to_group, mappings.py _CopyToGroup.backward all_reduce, at 3a442b728; Megatron's
    fused linear_qkv / linear_fc1 reduce once each): the attention's input gradient 3 times (+2; not MLA's low-rank
    projections) and a dense SwiGLU MLP's 2 (+1). docs/known-gaps.md 272 (c)."""
    split = np.asarray(x.fw.split_projections, bool) & ~np.asarray(x.sp, bool) & (np.asarray(x.t) > 1)
    if not np.any(split):
        return 0.0
    m = x.model
    shapes = _shapes(m)
    attn = 2.0 if m.attention != "mla" and shapes.qkv_out > shapes.hidden else 0.0
    mlp = 1.0 * shapes.n_dense / max(m.layers, 1) if shapes.ffn_up == 2 * shapes.ffn else 0.0
    return np.where(split, attn + mlp, 0.0)


def _host_excess(x: _Step, lt: compute.LayerTimes, tp_per_layer: np.ndarray) -> np.ndarray:
    """Host-bound regime: the CPU issues a layer's kernels no faster than host_s_per_layer_pass per pass
    (forward 1, recompute forward 1, backward 2 passes), and the kernels its adapters and 4-bit dequantisations add
    (_adapter_host_s), a Megatron-Core MoE layer's router / dispatcher calls (_moe_layer_host_s) and Megatron-FSDP's
    hooks on the layer (_megatron_fsdp_host_s). GPU and host
    time of a layer combine as a soft maximum (gpu^q + host^q)^(1/q) (imperfect CPU run-ahead near the cross-over),
    the GPU's being the layer's GEMMs, attention and element-wise passes and its adapters' and dequantisations' work
    (whose issue the host time holds); returns the excess. The layer's other eager extras (expert biases, clamps,
    unfused RoPE, layout copies) stay outside it (docs/known-gaps.md 79, what is left)."""
    gpu_layer = lt.fwd + lt.bwd + tp_per_layer + _lora_adapters(x) + _nf4_dequant_time(x)
    q = x.k.host_gpu_blend_norm
    host_layer = _eager_layer_host_s(x)
    unfused_host, unfused_syncs = _moe_unfused_host(x)
    host_layer = (host_layer + _adapter_host_s(x) + unfused_host + _padded_expert_host_s(x) + _recompute_host_s(x)
                  + _moe_layer_host_s(x) + _megatron_fsdp_host_s(x) + _dtensor_tp_host_s(x)
                  + _thd_rope_backward_host_s(x))
    blend = (gpu_layer**q + host_layer**q) ** (1.0 / q) - gpu_layer + unfused_syncs + _thd_rope_host(x) + _deepep_sync_s(x)
    if not x.model.is_moe or not np.any(x.fw.moe_host_sync) or _moe_sync_free(x):
        return blend
    # Megatron-Core's dropless MoE layer syncs with the host every forward: the alltoall dispatcher copies the
    # expert token counts to the host before its all-to-all (MoEAlltoAllTokenDispatcher), the flex one waits for
    # HybridEP's / DeepEP's received-token count, and TE GroupedLinear takes the per-expert splits as a host list.
    # The CPU cannot run ahead past an MoE layer, so the kernels it issues per local expert after the sync (one
    # GEMM each for fc1 / fc2 forward, dgrad, wgrad, and the FP8 casts) are exposed; NVIDIA's GB200 guide names
    # this the CPU overhead left after CUDA graphs (perf_constants.yaml gemm.moe_host_s_per_expert_kernel).
    alltoall = moe_alltoall(x.strategy_dispatcher, x.system, x.e, x.t)
    per_kernel = np.where(alltoall, x.k.moe_host_s_per_expert_kernel["alltoall"],
                          x.k.moe_host_s_per_expert_kernel["flex"])
    return _when(x.fw.moe_host_sync, blend + _expert_kernels_per_layer(x) * per_kernel, blend)


def _dtensor_tp_host_s(x: _Step) -> Any:
    """Host seconds per average decoder layer and micro-batch of DTensor's own dispatch on a TP-sharded layer's dense
    linears (a style with dtensor_tp at TP > 1, eager: torch.compile traces DTensor away, and no full-iteration CUDA
    graph): each aten op with a DTensor argument (perf_constants.yaml dtensor_tp.ops_per_linear: an adapted linear's,
    else a frozen or trained base's, forward again at full_share and backward; counted by
    benchmarks/dtensor_tp_lora_host.py --count) at the cached dispatch figure (host_sync dtensor_dispatch_s, NVIDIA's
    where the vendor has none) less the launch-bound op the layer's own and its adapters' charges already hold
    (launch_bound_op_s). The norms' and RoPE's DTensor ops under sequence parallelism are not counted (313 (a))."""
    on = np.asarray(x.fw.dtensor_tp, bool) & (np.asarray(x.t) > 1) & ~(np.asarray(x.a["torch_compile"]) > 0)
    if not np.any(on) or x.cuda_graphs == "full_iteration":
        return 0.0
    ops = x.k.raw["dtensor_tp"]["ops_per_linear"]
    n_lin = lora_adapted_widths(x.model, x.training)[4]
    base = max(dense_linear_widths(x.model)[2] - n_lin, 0.0)
    own = ops["trained"] if x.training.trains_base_weights else ops["frozen"]
    calls = sum(n * (c["forward"] * (1.0 + x.full_share) + c["backward"]) for n, c in ((n_lin, ops["lora"]), (base, own)))
    vendor = x.system.vendor
    dispatch_s = host_figure("dtensor_dispatch_s", vendor) or host_figure("dtensor_dispatch_s", "nvidia")
    return np.where(on, calls * max(dispatch_s - _launch_op_s(vendor), 0.0), 0.0)


def _megatron_fsdp_host_s(x: _Step) -> Any:
    """Host seconds per average decoder layer and micro-batch of Megatron-FSDP's hooks on the layer, its FSDP unit
    (zero 3 on a style with megatron_fsdp_hooks: the megatron-core style's fsdp full, optim_grads_params; 0
    elsewhere, on a hybrid model's layers, not counted, and under a full-iteration CUDA graph): the calls a unit
    makes a micro-batch (megatron_fsdp.unit_calls over the layer's tensors as Megatron-Core's Transformer Engine
    spec builds them, megatron_fsdp.layer_tensors, every tensor's gradient copied where the job turns
    gradient_accumulation_fusion off; the recompute's forward at full_share) at the launch-bound eager
    op (host_sync launch_bound_op_s, NVIDIA's where the vendor has none), averaged over dense and MoE layers.
    docs/known-gaps.md 306 (a)."""
    modules = np.asarray(x.fw.megatron_fsdp_modules, bool)
    on = np.asarray(x.fw.megatron_fsdp_hooks, bool) & (np.asarray(x.zero) >= 3) & ~modules
    m = x.model
    if m.layer_pattern or x.cuda_graphs == "full_iteration":
        return 0.0
    if np.any(modules):
        return np.where(modules, _megatron_fsdp_module_host_s(x), 0.0)
    if not np.any(on):
        return 0.0
    c, norm = x.k.raw["megatron_fsdp_hooks"], 2.0 if m.norm == "layernorm" else 1.0
    local = max(float(m.experts), 1.0) / np.maximum(x.e, 1.0)
    # without gradient_accumulation_fusion every weight's gradient comes back as .grad and is copied too
    fused = np.asarray(x.fw.wgrad_accum_default if x.grad_accum_fusion is None else x.grad_accum_fusion, bool)
    calls = 0.0
    for is_moe, n in collections.Counter(m.layer_params(i).is_moe for i in range(m.layers)).items():
        tensors, copied = _megatron_fsdp_layer_tensors(m, is_moe, local, norm, fused)
        unit = megatron_fsdp.unit_calls(c, tensors, copied, 2.0 if is_moe else 1.0, x.full_share)
        calls = calls + n * unit / max(m.layers, 1)
    return np.where(on, calls * _launch_op_s(x.system.vendor), 0.0)


def _megatron_fsdp_layer_tensors(m: ModelArch, is_moe: bool, local: Any, norm: float, fused: Any) -> tuple[Any, Any]:
    """(parameter tensors of one decoder layer as Megatron-FSDP's buffers hold them, the gradients its hooks copy:
    every one where gradient_accumulation_fusion is off (`fused` False), else megatron_fsdp.layer_tensors' count);
    TEGroupedLinear's fc1 / fc2 weight a local expert."""
    dense = sum(1 for _, r in deepspeed_layer_modules(m, is_moe, False) if not r)
    bias = _layer_bias_tensors(m, is_moe, False, dense, 2.0 * local if is_moe else 0.0)
    tensors, copied = megatron_fsdp.layer_tensors(m.qk_norm, norm, bias, is_moe, local, bool(m.shared_expert_ffn))
    return tensors, np.where(fused, copied, tensors)


def _megatron_fsdp_module_host_s(x: _Step) -> Any:
    """Host seconds per average decoder layer and micro-batch of Megatron-FSDP's hooks under optim / optim_grads
    (PerfStyle.megatron_fsdp_modules): no FSDP unit, so every module the layer calls takes its pre-hooks and
    Function (megatron_fsdp.module_calls over megatron_fsdp.layer_modules, the layer's parameter tensors and copied
    gradients as megatron_fsdp.layer_tensors counts them for optim_grads_params, every gradient copied where the job
    turns gradient_accumulation_fusion off; the recompute's forward at full_share) at the launch-bound eager op
    (host_sync launch_bound_op_s, NVIDIA's where the vendor has none), averaged over dense and MoE layers. The
    gradient buckets' own reduce (a bucket a gradient-bucket size, not a layer) not counted. docs/known-gaps.md
    316 (a)."""
    m, c = x.model, x.k.raw["megatron_fsdp_module_hooks"]
    norm = 2.0 if m.norm == "layernorm" else 1.0
    local = max(float(m.experts), 1.0) / np.maximum(x.e, 1.0)
    fused = np.asarray(x.fw.wgrad_accum_default if x.grad_accum_fusion is None else x.grad_accum_fusion, bool)
    calls = 0.0
    for is_moe, n in collections.Counter(m.layer_params(i).is_moe for i in range(m.layers)).items():
        modules, with_grad = megatron_fsdp.layer_modules(c, is_moe, bool(m.shared_expert_ffn))
        tensors, copied = _megatron_fsdp_layer_tensors(m, is_moe, local, norm, fused)
        layer = megatron_fsdp.module_calls(c, modules, with_grad, tensors, copied, x.full_share)
        calls = calls + n * layer / max(m.layers, 1)
    return calls * _launch_op_s(x.system.vendor)


def _eager_layer_host_s(x: _Step) -> Any:
    """Host seconds an average decoder layer's own kernels take to issue a micro-batch in eager PyTorch:
    host_s_per_layer_pass per pass (forward 1, recompute forward full_share, backward 2), half of it for a hybrid
    model's one-block layer (M, *, - or E: about half a transformer layer's kernels); 0 under a full-iteration CUDA
    graph (strategy.cuda_graphs), which replays the step's forward-backward as one graph (per-layer graphs still replay
    layer by layer from Python, so they keep it)."""
    if x.cuda_graphs == "full_iteration":
        return 0.0
    host_layer = x.k.host_s_per_layer_pass * (3.0 + x.full_share)
    return 0.5 * host_layer if x.model.is_hybrid else host_layer


def _expert_kernels_per_layer(x: _Step) -> Any:
    """Kernels TE GroupedLinear launches from the host for the local routed experts, per average layer and
    micro-batch: per expert fc1 / fc2 forward, dgrad and wgrad GEMMs and, under FP8, their casts (`kernels:`
    moe_expert_*), the recompute's forward a third of them again, over the MoE layers' share."""
    kernels = compute.KERNELS["moe_expert_gemms"] + compute.KERNELS["moe_expert_casts"] * _te_cast_kernels(x)
    moe_share = x.model.moe_layer_count / x.model.layers
    local_experts = np.maximum(x.model.experts / x.e, 1.0)
    return moe_share * local_experts * kernels * (1.0 + x.moe_rerun / 3.0)


def _recompute_kernels(x: _Step) -> Any:
    """Forward kernels of one average layer that Megatron-Core's selective recompute re-issues from the host for
    the listed strategy.recompute_modules (`kernels:` recompute_*, counted at core_v0.14.0), the layer kinds weighted
    by their share of the layers as compute._module_recompute weights their GPU work; FP8 input casts at the
    recipe's kernels a cast. 0 where no module is listed (Megatron-Core's default core_attn: one launch, left out)."""
    modules = x.recompute_modules
    if not modules:
        return 0.0
    k, cast = compute.KERNELS, _te_cast_kernels(x)
    shapes = _shapes(x.model)
    dense_w, moe_w = shapes.n_dense / shapes.layers, shapes.n_moe / shapes.layers
    mla = 1.0 if shapes.qkv_up_share else 0.0
    shared = moe_w if shapes.shared_ffn else 0.0
    n = 0.0
    if "core_attn" in modules:
        n += k["recompute_core_attn"]
    if "mla_up_proj" in modules:
        n += mla * (k["recompute_mla_up_proj"] + k["recompute_mla_up_proj_casts"] * cast)
    if "layernorm" in modules:
        n += (mla + moe_w) * k["recompute_norm"]
    if "mlp" in modules:
        n += dense_w * (k["recompute_mlp"] + k["recompute_mlp_casts"] * cast)
    if "moe" in modules:  # the whole block but its routed experts (those ride on moe_rerun)
        n += moe_w * k["recompute_moe_block"]
        n += shared * (k["recompute_shared_experts"] + k["recompute_shared_experts_casts"] * cast)
    else:
        n += moe_w * k["recompute_moe_act"] * ("moe_act" in modules)
        if "shared_experts" in modules:
            n += shared * (k["recompute_shared_experts"] + k["recompute_shared_experts_casts"] * cast)
    return n


def _recompute_host_s(x: _Step) -> Any:
    """Host seconds per average layer and micro-batch of the forward kernels selective recompute issues again in
    the backward (_recompute_kernels): Megatron-Core re-runs a listed module by calling its forward from Python
    (tensor_parallel.CheckpointWithoutOutput._recompute for layernorm, moe_act, mla_up_proj; CheckpointFunction for
    core_attn, mlp, moe: megatron/core/tensor_parallel/random.py at core_v0.14.0), so its launches go through the host
    again; each at the launch-bound eager op (host_sync launch_bound_op_s, NVIDIA's where the vendor has none), joined
    to the layer's host floor. Full recompute's extra pass is in the floor already (full_share). 0 off selective
    recompute and under CUDA graphs (Megatron-Core refuses enable_cuda_graph with recompute)."""
    if x.cuda_graphs != "none" or not x.recompute_modules:
        return 0.0
    return np.where(x.rc == 1, _recompute_kernels(x) * _launch_op_s(x.system.vendor), 0.0)


def _padded_expert_host_s(x: _Step) -> Any:
    """Host seconds per average layer and micro-batch of the local experts' launches under Megatron-Core's padded
    token drop (strategy.moe_pad_to_capacity): the splits are host constants, so no D2H wait drains the queue, but
    TEGroupedMLP still runs GroupedLinear, one GEMM (and under FP8 its casts) per local expert issued from the host
    (_expert_kernels_per_layer), and these join the layer's host floor in the soft maximum with its GPU time.
    Each launch at the launch-bound eager op (perf_constants.yaml host_sync launch_bound_op_s; NVIDIA's where the
    vendor has none), measured, not fitted: the launch part of the dropless charge (gemm.moe_host_s_per_expert_kernel,
    fitted on the 25.11 B200 dropless rows), whose rest is what the drained queue behind the sync adds. 0 under CUDA
    graphs: padding makes the MoE layer's shapes static, so per-layer graphs (Megatron-Core enable_cuda_graph, scope
    "full": TransformerLayer's CudaGraphManager captures the whole layer, core_v0.14.0 transformer_layer.py) hold
    the experts' launches, as a full-iteration graph does; 0 for device-side splits (moe_sync_free: one kernel for
    all experts), on a dense model or a style without Megatron-Core's host-synced MoE layer."""
    on = (np.asarray(x.fw.moe_pad_to_capacity, bool) & np.asarray(x.fw.moe_host_sync, bool)
          & ~np.asarray(x.fw.moe_sync_free, bool))
    if not x.model.is_moe or not np.any(on) or x.cuda_graphs != "none":
        return 0.0
    return np.where(on, _expert_kernels_per_layer(x) * _launch_op_s(x.system.vendor), 0.0)


def _expert_loop_excess(x: _Step, loop: _ExpertLoop | None = None) -> Any:
    """Seconds per average layer and micro-batch that transformers' eager MoE loop (PerfStyle.moe_expert_loop) adds:
    each routed expert's forward begins behind host syncs (the ModuleList index by a one-element tensor, .item(), and
    torch.where on the routing mask: transformers' MixtralSparseMoeBlock / Qwen2MoeSparseMoeBlock forward, 4.x), so
    the GPU's queue is empty and the CPU issues that expert's kernels one by one while the GPU runs each as it comes:
    host_sync.drain_excess_s over `kernels:` moe_expert_loop_forward kernels and the expert's own GPU forward
    (compute.expert_forward_time), at the vendor's launch-bound eager op and round trip (perf_constants.yaml
    host_sync; a vendor with no launch figure at NVIDIA's, none with no round trip), one round trip per further
    sync (moe_expert_loop_syncs); in the forward and again in a recompute. The queue refills from empty: the first
    `kernels:` moe_expert_loop_lead_ops of those ops (the mask index, torch.where, the rows' gather) carry no GPU work
    of note, so the GPU waits through their issue before the expert's first GEMM, and the drained run is the rest's
    (docs/known-gaps.md 283 (a)); under DeepSpeed ZeRO-3 with each expert linear its own module, its hooks' calls on
    the expert's modules join the run (`_zero3_expert_hook_calls`: between two syncs they overlap nothing else). The
    backward runs in autograd's engine with no sync (the index backward is an index_put with accumulate), so it
    keeps the run-ahead. A family of
    PerfStyle.split_expert_loop_families (GraniteMoeParallelExperts, 4.45-4.5x) syncs once a layer (the gating's
    expert_size.tolist()) and then issues `kernels:` moe_split_loop_forward_ops for EVERY expert with no sync between:
    one drained run of them all against all the experts' GPU forward (docs/known-gaps.md 261 (a)). 0 for a dense model
    or a grouped call. `loop`: the step's pass (`_expert_loop_pass`), timed here where not given."""
    loop = _expert_loop_pass(x) if loop is None else loop
    if loop is None:
        return 0.0
    share = x.model.moe_layer_count / x.model.layers
    return np.where(np.asarray(x.fw.moe_expert_loop, bool), share * loop.excess * (1.0 + x.moe_rerun), 0.0)


@dataclass(frozen=True)
class _ExpertLoop:
    """One forward pass of an MoE layer under transformers' eager expert loop, timed once a step
    (`_expert_loop_pass`) and read by `_expert_loop_excess` and `_zero3_expert_segments`."""

    local: Any  # routed experts on this rank
    gpu: Any  # their summed GPU forward seconds
    excess: Any  # the loop's host excess over them
    hooks: Any  # DeepSpeed ZeRO-3's hook calls on one expert's modules between its syncs (_zero3_expert_hook_calls)


def _expert_loop_pass(x: _Step) -> _ExpertLoop | None:
    """The eager expert loop's forward pass of an MoE layer, as `_expert_loop_excess` times it; None for a dense model
    or where no style of the batch loops (PerfStyle.moe_expert_loop)."""
    if not x.model.is_moe or not np.any(np.asarray(x.fw.moe_expert_loop, bool)):
        return None
    local = _routed_expert_forward(x)[0]
    vendor = x.system.vendor
    op_s = _launch_op_s(vendor)
    trip_s = host_figure("round_trip_s", vendor) or 0.0
    syncs, lead = compute.KERNELS["moe_expert_loop_syncs"], compute.KERNELS["moe_expert_loop_lead_ops"]
    hooks = _zero3_expert_hook_calls(x)
    run = compute.KERNELS["moe_expert_loop_forward"] - lead + hooks
    hit, gpu_all = 0.0, 0.0
    for experts, gpu in _expert_forward_groups(x):
        hit = hit + experts * (drain_excess_s(run, op_s, gpu, trip_s) + lead * op_s + (syncs - 1.0) * trip_s)
        gpu_all = gpu_all + experts * gpu
    split = drain_excess_s(local * compute.KERNELS["moe_split_loop_forward_ops"], op_s, gpu_all, trip_s)
    per_pass = np.where(_family_listed(x.model, x.fw.split_expert_loop_families), split, hit)
    return _ExpertLoop(local, gpu_all, per_pass, hooks)


def _zero3_expert_hook_calls(x: _Step) -> Any:
    """Host calls DeepSpeed ZeRO-3's hooks make on one routed expert's own modules a forward pass, where each expert
    linear is its own module (zero3_expert_fetch per_expert: a 0.16-0.17 engine under transformers 4.x's eager
    loop) on DeepSpeed's engine (PerfStyle.zero3_deepspeed_fetch, zero 3): its linears' module calls by what they own
    (perf_constants.yaml zero3_hooks module_calls forward: gathered above stage3_param_persistence_threshold, else
    persistent) and the expert's parameterless modules (routed_expert_parameterless: the expert MLP and its act_fn),
    as `_deepspeed_layer_hook_calls` counts them. In MixtralSparseMoeBlock's loop they run between the expert's host
    syncs, so they overlap only that expert's GPU work (`_expert_loop_excess`), not the layer's (docs/known-gaps.md
    283 (b)). 0 elsewhere, for GraniteMoe's split loop (its experts are one module) and for a dense model."""
    m = x.model
    on = (np.asarray(x.fw.zero3_deepspeed_fetch, bool) & (np.asarray(x.zero) >= 3)
          & np.asarray(x.fw.moe_expert_loop, bool) & ~_family_listed(m, x.fw.split_expert_loop_families))
    if not m.is_moe or not np.any(on):
        return 0.0
    mode = x.expert_fetch
    c = x.k.raw["zero3_hooks"]
    calls = c["module_calls"]
    persist = deepspeed_zero3_buckets(x.fw.zero3_bucket_sizes, m.hidden)[1]
    routed = [size for size, is_routed in deepspeed_layer_modules(m, True, True) if is_routed]
    own = routed[: len(routed) // max(int(m.experts), 1)]  # one expert's linears
    gathered = sum(np.asarray(size / x.t > persist, float) for size in own)
    n = (gathered * calls["gathered"]["forward"] + (len(own) - gathered) * calls["persistent"]["forward"]
         + c["routed_expert_parameterless"] * calls["parameterless"]["forward"])
    return np.where(on & (np.asarray(mode) == "per_expert"), n, 0.0)


def _zero3_expert_segments(x: _Step, loop: _ExpertLoop | None = None) -> tuple[Any, Any]:
    """(host calls, wall seconds) per average layer and micro-batch of the eager loop's expert segments that
    `_expert_loop_excess` times as drained runs under DeepSpeed ZeRO-3 (`_zero3_expert_hook_calls` > 0): the hooks'
    calls on the experts' modules over the forward passes, and the segments' wall time (the experts' GPU forward and
    the loop's excess). `_deepspeed_hook_excess` takes both out of the soft maximum it blends (docs/known-gaps.md
    283 (b)); (0, 0) where no hook runs between the syncs. `loop`: the step's pass, timed here where not given."""
    loop = _expert_loop_pass(x) if loop is None else loop
    if loop is None or not np.any(loop.hooks):
        return 0.0, 0.0
    passes = (x.model.moe_layer_count / x.model.layers) * (1.0 + x.moe_rerun)
    on = np.asarray(loop.hooks) > 0
    return (np.where(on, passes * loop.local * loop.hooks, 0.0),
            np.where(on, passes * (loop.gpu + loop.excess), 0.0))


def _family_listed(model: ModelArch, listed: Any) -> np.ndarray:
    """Whether `model`'s family is in a style's comma-separated family list (elementwise over the batch's styles)."""
    return _name_listed(model.family, listed)


def _name_listed(family: str, listed: Any) -> np.ndarray:
    """framework.family_listed elementwise over the batch's styles' lists."""
    return np.vectorize(lambda names: family_listed(family, names), otypes=[bool])(np.asarray(listed))


def _fused_expert_grad_time(x: _Step) -> Any:
    """Seconds per average layer and micro-batch of the whole-parameter gradients an eager loop over fused 3-D expert
    parameters returns (PerfStyle.moe_expert_loop on a family of PerfStyle.fused_expert_families: gpt-oss's
    GptOssExperts, GraniteMoeParallelExperts): each expert's weights taken by indexing the fused parameter, its
    backward (SelectBackward0 / IndexBackward0: derivatives.yaml select, index) returns zeros of the WHOLE parameter
    with that expert's slice copied in, and autograd adds each into the parameter's accumulating gradient
    (torch/csrc/autograd/input_buffer.cpp accumulate: read both, write one), so a layer's backward streams the fused
    expert weights' size in zeros per expert and three times it per further expert (the mechanism
    memory._expert_weight_copies counts; tests/estimate/test_expert_weight_copies_torch.py), in the weights' dtype
    (fp32 under the style's autocast over fp32 weights: _fp32_weights), `kernels:` moe_fused_grad_kernels each.
    Experts: every one in a split loop (GraniteMoe loops over all), else the expected hit ones, E (1 - (1 - k / E)^T).
    Only where the experts' weights train (a frozen parameter records no select). docs/known-gaps.md 261 (a)."""
    m = x.model
    loop = np.asarray(x.fw.moe_expert_loop, bool) & _family_listed(m, x.fw.fused_expert_families)
    if not m.is_moe or not x.training.trains_base_weights or not np.any(loop):
        return 0.0
    e, k = float(m.experts), float(m.experts_per_token)
    hit = np.where(_family_listed(m, x.fw.split_expert_loop_families), e, e * (1.0 - (1.0 - k / e) ** x.tok))
    grad_b = np.where(_fp32_weights(x), 4.0, x.r.act_bytes)
    fused = e * float(m.mlp_params(m.expert_ffn, m.expert_width)) * grad_b  # bytes of the fused parameters
    nbytes = hit * fused + np.maximum(hit - 1.0, 0.0) * 3.0 * fused + hit * 2.0 * fused / e
    share = m.moe_layer_count / m.layers
    kernels = share * hit * 2.0 * compute.KERNELS["moe_fused_grad_kernels"]
    return np.where(loop, compute.stream_time(share * nbytes, x.r, kernels=kernels), 0.0)


def _expert_loop_input_grad_time(x: _Step) -> Any:
    """Seconds per average layer and micro-batch of the input gradients transformers' per-expert loop returns
    (PerfStyle.moe_expert_loop, a family outside split_expert_loop_families): MixtralSparseMoeBlock.forward takes each
    hit expert's rows by advanced indexing, `hidden_states[None, top_x]` (huggingface/transformers modeling_mixtral.py,
    4.36-4.5x; Qwen2 / Qwen3 MoE and OLMoE alike, gpt-oss's GptOssExperts `hidden_states[token_idx]`), whose
    IndexBackward0 returns zeros of the WHOLE [tokens, hidden] input with that expert's rows accumulated in
    (derivatives.yaml index.Tensor: index_backward(grad.new_zeros(self.sizes()), ...)), and autograd adds each into the
    input's gradient beside the router's (torch/csrc/autograd/input_buffer.cpp accumulate: read two, write one): per hit
    expert, E (1 - (1 - k / E)^T), a fill (1 x T x h) and an add (3 x T x h) in the activation dtype, `kernels:`
    moe_loop_input_grad_kernels each; the backward only (the recompute re-runs the index, not its backward). Checked on
    CPU: tests/estimate/test_expert_loop_input_grad_torch.py. GraniteMoe's one `layer_input[batch_index]` a layer makes
    one such tensor for every expert (not counted). docs/known-gaps.md 273 (a)."""
    m = x.model
    loop = np.asarray(x.fw.moe_expert_loop, bool) & ~_family_listed(m, x.fw.split_expert_loop_families)
    if not m.is_moe or not np.any(loop):
        return 0.0
    e, k = float(m.experts), float(m.experts_per_token)
    hit = e * (1.0 - (1.0 - k / e) ** x.tok)
    share = m.moe_layer_count / m.layers
    nbytes = share * hit * 4.0 * x.tok * float(m.hidden) * x.act
    kernels = share * hit * compute.KERNELS["moe_loop_input_grad_kernels"]
    return np.where(loop, compute.stream_time(nbytes, x.r, kernels=kernels), 0.0)


def _expert_loop_glue_time(x: _Step) -> Any:
    """Seconds per average layer and micro-batch of transformers' eager expert loop's glue beyond the permutation
    compute._moe_layer charges (PerfStyle.moe_expert_loop): the routing-weight product and index_add's read of its
    destination on each routed copy, the combine's zeros a token (GraniteMoe's split loop: its out-of-place index_add's
    copy too), and their gradients (perf_constants.yaml gemm.expert_loop_glue_bytes, counted from modeling_mixtral.py
    and modeling_granitemoe.py at 4.45-4.52), at the streaming rate, the forward again where the MoE block is
    recomputed. Kernels are the loop's own host count. docs/known-gaps.md 317 (d)."""
    m = x.model
    loop = np.asarray(x.fw.moe_expert_loop, bool)
    if not m.is_moe or not np.any(loop):
        return 0.0
    b, split = x.k.expert_loop_glue_bytes, _family_listed(m, x.fw.split_expert_loop_families)
    tokens = x.tok * m.moe_layer_count / m.layers
    fwd = x.routed_slots * b["forward_copy"] + tokens * np.where(split, b["split_forward_token"], b["forward_token"])
    bwd = x.routed_slots * b["backward_copy"] + tokens * np.where(split, b["split_backward_token"], b["backward_token"])
    nbytes = (fwd * (1.0 + x.moe_rerun) + bwd) * float(m.hidden) * x.act / 2.0
    return np.where(loop, compute.stream_time(nbytes, x.r, kernels=0.0), 0.0)


def _moe_dispatch_sync_excess(x: _Step) -> Any:
    """Seconds per average layer and micro-batch that a PyTorch-native style's blocking host syncs in the MoE token
    dispatch add (PerfStyle.moe_dispatch_syncs on the all-to-all path at EP > 1, moe_deepep_syncs behind DeepEP):
    each drains the GPU's queue, so the next op waits for the round trip and its own issue (host_sync.drain_excess_s
    over one kernel, at the vendor's launch-bound op and round trip; a vendor with no round-trip figure pays the issue
    alone), in the forward and again in a recompute; the backward syncs none (the all-to-all's backward reuses the
    host split lists). The kernels after the sync (the tokens' all-to-all first) are GPU-bound, so the CPU regains
    its lead at once: a latency, not a rate. 0 for a dense model or a style without the syncs."""
    flex = x.strategy_dispatcher in FLEX_DISPATCHERS
    syncs = np.where(flex, x.fw.moe_deepep_syncs, np.where(x.e > 1.0, x.fw.moe_dispatch_syncs, 0.0))
    if not x.model.is_moe or not np.any(syncs):
        return 0.0
    vendor = x.system.vendor
    op_s = _launch_op_s(vendor)
    trip_s = host_figure("round_trip_s", vendor) or 0.0
    passes = (x.model.moe_layer_count / x.model.layers) * (1.0 + x.moe_rerun)
    return passes * syncs * drain_excess_s(1.0, op_s, 0.0, trip_s)


def _moe_eager_glue_time(x: _Step) -> Any:
    """Seconds per average layer and micro-batch of an MoE layer's glue that runs eager on the style
    (PerfStyle.moe_eager_glue: torchtitan's MoE.forward and EP hooks outside its per-submodule compile), beyond the
    permutation compute._moe_layer charges (read + write h a routed copy twice, forward; twice that backward): the
    counted bytes a routed copy and hidden element, a token's spread over its top-k copies, on the combine path the
    style's port of the model's family takes (PerfStyle.moe_score_after_families; perf_constants.yaml
    gemm.moe_eager_glue_bytes), over this GPU's routed copies (as compute._moe_layer: the TP ranks split the tokens
    where the style's dispatch does), at the streaming rate with their kernels' launch gaps, the forward again where
    the MoE block is recomputed. Not behind DeepEP (moe_dispatcher flex: its own path, about the charged bytes,
    docs/known-gaps.md 54 (b))."""
    m = x.model
    on = np.asarray(x.fw.moe_eager_glue, bool) & (x.strategy_dispatcher not in FLEX_DISPATCHERS)
    if not m.is_moe or not np.any(on):
        return 0.0
    b = x.k.moe_eager_glue_bytes
    after = _family_listed(m, x.fw.moe_score_after_families)

    def per_copy(kind: str) -> Any:  # bytes a routed copy element: the copy's own plus its token's over top-k
        def path(prefix: str) -> float:
            return b[f"{prefix}{kind}"] + b[f"{prefix}{kind}_per_token"] / m.experts_per_token
        return path("") + np.where(after, path("after_"), path("before_"))

    fwd = np.maximum(per_copy("forward") - 4.0 * x.r.act_bytes, 0.0)
    bwd = np.maximum(per_copy("backward") - 8.0 * x.r.act_bytes, 0.0)
    split = np.where(np.asarray(x.fw.moe_tp_token_split, bool), x.et / x.t, 1.0)
    again = 1.0 + x.moe_rerun
    elements = x.routed_slots * split * m.hidden
    share = m.moe_layer_count / m.layers
    path_kernels = np.where(after, b["after_kernels"], b["before_kernels"])
    kernels = share * ((b["forward_kernels"] + path_kernels) * again + b["backward_kernels"] + path_kernels)
    glue = compute.stream_time(elements * (fwd * again + bwd), x.r, kernels=kernels)
    return np.where(on, glue, 0.0)


def _routed_expert_forward(x: _Step) -> tuple[Any, Any]:
    """(local routed experts of a GPU, forward seconds of one of them over its share of the micro-batch's tokens:
    tokens x top-k / local experts x capacity factor; compute.expert_forward_time)."""
    shapes = _shapes(x.model)
    local = np.maximum(shapes.experts / x.e, 1.0)
    per_expert_tokens = x.tok * shapes.topk / local * x.moe_load
    moe = _moe_passes(x)
    return local, compute.expert_forward_time(shapes, per_expert_tokens, x.et, x.r, moe[1] if moe else 1.0)


def _expert_forward_groups(x: _Step) -> list[tuple[Any, Any]]:
    """[(local experts, forward seconds of one of them)] over `_expert_token_split`'s groups: one group of
    `_routed_expert_forward`'s balanced experts, or, where the rows' pads route to one set of top-k experts
    (Training.pad_share), the heavy experts and the light ones apart, each at its own tokens: the eager loop runs them
    one at a time, each behind its sync, so a light expert's host-bound pass cannot borrow a heavy one's GPU time
    (`_expert_loop_excess`, docs/known-gaps.md 283 (d))."""
    shapes, moe = _shapes(x.model), _moe_passes(x)
    return [(experts, compute.expert_forward_time(shapes, tokens, x.et, x.r, moe[1] if moe else 1.0))
            for experts, tokens in _expert_token_split(x)]


def _moe_sync_free(x: _Step) -> bool:
    """A full-iteration CUDA graph holds no host sync, so an MoE layer captured in it runs sync-free: the graph is
    replayed without the CPU, and each routed expert's launches are in it. Megatron-Core captures dropless MoE only
    with a static budget of tokens per EP rank (moe_expert_rank_capacity_factor: HybridEP gets num_permuted_tokens
    and skips its D2H count, token_dispatcher.py _HybridEPManager.setup_metadata) and experts that take the split
    sizes on the device (TE op-fuser grouped MLP, experts.py _fused_forward); Megatron-Bridge v0.5.0 sets both with
    full_iteration graphs (scripts/performance/configs/{qwen,deepseek}/*_llm_pretrain.py set_full_iter_cg_configs:
    rank capacity 1.5 plus paged stashing, "Dropless MoE produces variable-shaped per-expert tensors that CG cannot
    capture"). Without graphs, experts that take their splits on the device (strategy.moe_sync_free: Primus-Turbo's
    ragged grouped GEMM, AMD-AGI/Primus PR 923) launch one kernel for all local experts after no host sync; the
    layer keeps its per-pass host floor. The same holds for Megatron-Core's alltoall dispatcher with token drop and
    padding (moe_pad_expert_input_to_capacity, NeMo's MegatronTokenDropCallback): its per-expert splits are host
    constants (capacity x ranks), its all-to-alls equal-sized, so no D2H copy is waited for (Megatron-LM core_r0.12
    7094270c, moe/token_dispatcher.py MoEAlltoAllTokenDispatcher.preprocess: cuda_sync_point stays "no_sync"); a
    job with that dispatcher states strategy.moe_pad_to_capacity, whose per-expert launches stay in the host floor
    (_padded_expert_host_s)."""
    return (x.cuda_graphs == "full_iteration" or bool(np.any(x.fw.moe_sync_free))
            or bool(np.any(x.fw.moe_pad_to_capacity)))


def _te_cast_kernels(x: _Step) -> float:
    """Kernels Transformer Engine launches per FP8 cast of one expert's tensor (0 outside FP8): the recipe's
    te_cast_kernels_per_tensor (current scaling: amax, scale, cast) where it has one, else its
    cast_kernels_per_tensor (perf_constants.yaml fp8.recipes)."""
    if x.training.precision != "fp8":
        return 0.0
    recipe = x.k.fp8_recipe(x.system.accelerator, x.training.fp8_recipe)
    return float(recipe.get("te_cast_kernels_per_tensor", recipe["cast_kernels_per_tensor"]))


def moe_alltoall(dispatcher: str, system: System, ep: Any, tp: Any) -> Any:
    """True where the MoE token dispatcher is Megatron-Core's alltoall one (elementwise over EP / TP).

    "auto" is what Megatron-Bridge 25.11's performance recipes run (scripts/performance/configs/{deepseek,qwen3}/
    workload_base_configs.py): HybridEP when the NVLink domain spans several hosts (GB200 / GB300 NVL72),
    DeepEP when the EP x TP group leaves the NVLink domain (H100 DeepSeek-V3, EP 64), the alltoall dispatcher
    otherwise (B200 and H100 Qwen3 runs with EP inside one 8-GPU node)."""
    if dispatcher not in MOE_DISPATCHERS:
        raise SpecError("strategy.moe_dispatcher", msg("error_unknown_name", kind=msg("kind_moe_dispatcher")),
                        value=dispatcher,
                        allowed=MOE_DISPATCHERS, suggestion=did_you_mean(dispatcher, MOE_DISPATCHERS))
    if dispatcher != "auto":
        return np.full(np.broadcast(np.asarray(ep), np.asarray(tp)).shape, dispatcher == "alltoall")
    multi_host_domain = system.scaleup_domain > system.gpus_per_node
    leaves_domain = np.asarray(ep, float) * np.asarray(tp, float) > system.domain_gpus
    return ~(multi_host_domain | leaves_domain)


def ep_ranks_per_token(experts: int, topk: int, ep: Any) -> np.ndarray:
    """Expected EP ranks a token's top-k experts fall on, for k distinct experts drawn uniformly (balanced routing)
    from `experts` split evenly over `ep` ranks: ep x (1 - P(a rank holds none of them)), with P the
    hypergeometric C(E - E/ep, k) / C(E, k)."""
    e = np.maximum(np.asarray(ep, float), 1.0)
    per_rank = experts / e
    miss = np.ones_like(e)
    for i in range(int(topk)):
        miss = miss * np.clip((experts - per_rank - i) / (experts - i), 0.0, 1.0)
    return e * (1.0 - miss)


def group_limited_units_per_token(experts: int, topk: int, groups: int, groups_per_token: int, units: Any) -> Any:
    """Expected distinct units (EP ranks, or NVLink domains) a token's top-k experts fall on under group-limited routing
    (ModelArch.expert_groups): the experts split evenly in order over `groups` groups and over `units` (EP rank r holds
    experts r E / ep ..., a domain consecutive ranks), a token's top-k taken from its `groups_per_token` best groups
    (Megatron-Core moe_utils.group_limited_topk: groups scored by their top k / groups_per_token scores; HF
    DeepseekV3TopkRouter), as k / groups_per_token experts drawn uniformly in each chosen group, the groups uniform
    (balanced routing). A unit of whole groups is hit when one of its groups is chosen; a group of whole units spreads
    its share over them (ep_ranks_per_token within the group). One group: ep_ranks_per_token over every expert.
    DeepSeek-V3 (8 groups, 4 per token) over 8 nodes: 4 nodes a token (unlimited: 5.3); a Monte Carlo of the router
    on random scores gives 3.97 (tests/estimate/test_moe_dispatcher.py)."""
    u = np.maximum(np.asarray(units, float), 1.0)
    if groups <= 1 or groups_per_token >= groups:
        return ep_ranks_per_token(experts, topk, u)
    groups_per_token = min(groups_per_token, topk)  # k experts reach at most k groups
    per_group = topk / groups_per_token
    lo, hi = math.floor(per_group), math.ceil(per_group)

    def within(n: int) -> np.ndarray:  # units hit in one chosen group by n of its experts
        return ep_ranks_per_token(experts / groups, n, np.maximum(u / groups, 1.0))

    fine = groups_per_token * (within(lo) + (per_group - lo) * (within(hi) - within(lo)))
    return np.where(u <= groups, ep_ranks_per_token(groups, groups_per_token, np.minimum(u, groups)), fine)


def round_robin_groups_per_token(experts: int, topk: int, groups: Any) -> np.ndarray:
    """Distinct groups (EP ranks, or NVLink domains) a token's top-k experts span under round-robin routing (token i
    takes experts k i ... k i + k - 1 mod E: NeMo AutoModel's FakeBalancedGate, torchtitan's debug force-balance;
    Training.moe_routing round-robin / fake-balanced),
    the experts split evenly in order over `groups`: the mean over one period of the assignment."""
    period = experts // math.gcd(topk, experts)
    ids = ((np.arange(period)[:, None] * topk) + np.arange(topk)[None, :]) % experts

    def one(n: float) -> float:
        owner = np.floor(ids * max(float(n), 1.0) / experts)
        return float(np.mean([len(np.unique(row)) for row in owner]))

    return np.vectorize(one, otypes=[float])(np.asarray(groups, float))


def _ranks_per_token(x: _Step, groups: Any) -> np.ndarray:
    """Distinct groups a token is sent to under the job's routing pattern (Training.moe_routing): round-robin (or
    fake-balanced, the same experts), or the
    model's router on balanced scores, group-limited where the model limits it (group_limited_units_per_token)."""
    m = x.model
    if x.training.moe_routing in ("round-robin", "fake-balanced"):
        return round_robin_groups_per_token(m.experts, m.experts_per_token, groups)
    return group_limited_units_per_token(m.experts, m.experts_per_token, m.expert_groups, m.expert_groups_per_token,
                                         groups)


def _cp_comm(x: _Step, lt: compute.LayerTimes) -> np.ndarray:
    """Context parallel per layer. cp_comm_type all_gather: K and V to every CP rank (fwd), again with dK, dV back
    (bwd) -- 1 + 2 all-gather-equivalents, + the fully recomputed share, all exposed (TE
    AttnFuncWithCPAndKVAllGather gathers K / V before the forward's attention and again in backward, then
    reduce-scatters dK / dV; Llama 3 paper s3.3.2); p2p: Transformer Engine's ring, step by step (_cp_te_ring)."""
    c = x.c
    k_cp = comm.ranks_per_domain(c, x.t, x.domain)
    if x.cp_comm_type == "all_gather":
        kv_bytes = x.tok * 2.0 * x.model.kv_dim / _kv_split(x) * x.act * c
        te = comm.all_gather_time(kv_bytes, c, k_cp, x.link(c, x.t), x.system, comm.zone_members(c, x.t, x.system)) * (
            (1.0 + 2.0 + x.full_share) * x.model.attention_layers / x.model.layers)
    elif x.cp_comm_type == "a2a":
        te = _cp_te_a2a(x, k_cp)
    else:
        te = _cp_te_ring(x, lt, k_cp)
    if np.any(x.fw.cp_torch_ring):
        te = np.where(np.asarray(x.fw.cp_torch_ring, bool), _cp_torch_ring(x, lt, k_cp), te)
    return te + _mamba_cp_comm(x, k_cp)


def _cp_te_ring(x: _Step, lt: compute.LayerTimes, k_cp: Any) -> Any:
    """Transformer Engine's context-parallel ring per layer (AttnFuncWithCPAndKVP2P, context_parallel.py, read at
    v2.7; sbhd / bshd, causal, load-balanced chunks, 16-bit attention): cp steps a pass, each its own attention
    call on the step's K / V, which the rank sent one rank on at the start of the step before; a step waits for its
    K / V, so each exchange after the first is exposed by what it takes beyond one step's share of the attention
    (forward: K and V; backward: K / V and the dK / dV passed along, the last dK / dV waited on after the loop),
    on the link to the neighbour (one link of a switchless mesh; across nodes where the group leaves the domain).
    Around the calls, element-wise passes counted from the code (perf_constants.yaml cp_te_ring): the forward's
    K / V concatenation, softmax-lse and output corrections of every later step; the backward's K / V copy,
    half-chunk copies, dQ / dK / dV concatenations and accumulations. Forward again under full recompute."""
    c, m, k = x.c, x.model, x.k.raw["cp_te_ring"]
    if not m.attention_layers:  # a stack of Mamba-2 / MLP layers: no attention, no ring
        return 0.0
    share = m.attention_layers / m.layers  # lt.attn_* are already that share of an average layer's
    q_el, kv_el = x.tok * m.q_dim / x.t, x.tok * m.kv_dim / _kv_split(x)  # one rank's query / output and K elements
    same, hop = k_cp >= c, x.link(c, x.t, p2p=True)
    send = comm.p2p_time(2.0 * kv_el * x.act, same, hop, x.system)
    a_fwd, a_bwd = lt.attn_fwd / (share * c), lt.attn_bwd / (share * c)  # one step's attention
    later = c - 1.0
    fwd = later * np.maximum(send - a_fwd, 0.0) + compute.stream_time(
        kv_el * k["fwd_kv_bytes"] + q_el * (k["fwd_q_bytes"] + later * k["fwd_q_step_bytes"]), x.r,
        kernels=k["fwd_kernels"] + later * k["fwd_kernels_step"])
    both = comm.p2p_time(4.0 * kv_el * x.act, same, hop, x.system)
    bwd = later * np.maximum(both - a_bwd, 0.0) + send + compute.stream_time(
        kv_el * (k["bwd_kv_bytes"] + later * k["bwd_kv_step_bytes"])
        + q_el * (k["bwd_q_bytes"] + later * k["bwd_q_step_bytes"]), x.r,
        kernels=k["bwd_kernels"] + later * k["bwd_kernels_step"])
    return np.where(c > 1, fwd * (1.0 + x.full_share) + bwd, 0.0) * share


def _cp_te_a2a(x: _Step, k_cp: Any) -> Any:
    """Transformer Engine's all-to-all context parallelism per layer (AttnFuncWithCPAndQKVOA2A, context_parallel.py
    flash_attn_a2a_communicate, read at v2.7): q, k and v each go through an all-to-all from a sequence shard to a
    head shard of the whole sequence before the attention, the output back after it (forward); the output and its
    gradient again before the attention backward, dq, dk and dv back after it; nothing to hide them behind. Each
    tensor is made contiguous before its all-to-all and reordered after it (movedim + contiguous, index_select:
    perf_constants.yaml cp_te_a2a), in FP8 under FP8 attention (q, k, v quantized before the all-to-all, the output
    and the gradients FP8: NVTE_FP8_DPA_BWD). Forward again under full recompute. Each all-to-all is
    torch.distributed.all_to_all_single on the CP group (flash_attn_a2a_communicate, v2.7 to v2.17): NCCL's
    all-to-all, at its rates (nccl_alltoall_rates; docs/known-gaps.md 95, 109). Ulysses as an autograd wrapper
    (PerfStyle.cp_a2a_autograd: DeepSpeed's DistributedAttention, xtuner's sequence_parallel_wrapper) sends the
    same four tensors forward and their gradients back, 4, its splits and concatenations as many HBM passes; K and
    V at the query heads' width where the model repeats them before the all-to-all (PerfStyle.repeat_kv /
    strategy.repeat_kv: xtuner's dispatch/llama.py at 43ef6ab99; docs/known-gaps.md 253 (a))."""
    c, m, k = x.c, x.model, x.k.raw["cp_te_a2a"]
    q_el = x.tok * m.q_dim / x.t
    kv_el = x.tok * np.where(np.asarray(x.fw.repeat_kv, bool), m.q_dim, m.kv_dim) / x.t
    size = 1.0 if x.fp8_attention else x.act
    zone = comm.zone_members(c, x.t, x.system)
    r = nccl_alltoall_rates(x.link(c, x.t), x.system, x.k)

    def a2a(elems: Any) -> Any:
        return comm.all_to_all_time(elems * size, c, k_cp, r, x.system, zone)

    def passes(n_q: float, n_kv: float) -> Any:  # n_q query-wide and n_kv K-wide tensors through all-to-alls
        return n_q * a2a(q_el) + n_kv * a2a(kv_el) + compute.stream_time(
            (n_q * q_el + n_kv * kv_el) * size * k["touches_per_elem"], x.r,
            kernels=(n_q + n_kv) * k["kernels_per_tensor"])

    fwd = passes(2.0, 2.0)  # q, out + k, v
    bwd = np.where(np.asarray(x.fw.cp_a2a_autograd, bool), fwd, passes(3.0, 2.0))  # dout, dq + dk, dv; TE: + out
    return np.where(c > 1, fwd * (1.0 + x.full_share) + bwd, 0.0) * m.attention_layers / m.layers


def _cp_torch_ring(x: _Step, lt: compute.LayerTimes, k_cp: Any) -> Any:
    """PyTorch's context parallel per layer (torch/distributed/tensor/experimental/_attention.py, 2.6-2.7, as
    torchtitan runs it; _ContextParallelOptions defaults convert_to_f32, enable_load_balance, rotate_method
    ALL_GATHER). K and V travel at the query heads' width where the model repeats them before SDPA (repeat_kv:
    torchtitan's Attention, repeat_kv), else at the K / V heads' (enable_gqa: Hugging Face models). Forward (again under full recompute): one all-gather of K / V
    (_AllGatherRotater), waited on after the local causal block, 1 / cp of the work; each later step's output and
    lse merged into an fp32 copy (_SDPAMerger). Backward: the all-gather again, and dK / dV accumulated in fp32
    and sent one rank on after every step (_AllToAllRotater, permute_tensor), each hidden behind the next step's
    backward, the last waited on; its accumulations and copies stream (perf_constants.yaml cp_torch_ring)."""
    c, m, k = x.c, x.model, x.k.raw["cp_torch_ring"]
    out = x.tok * m.q_dim / x.t  # one rank's output (and query) elements
    kv = x.tok * np.where(np.asarray(x.fw.repeat_kv, bool), m.q_dim, m.kv_dim) / x.t  # its K (or V) elements
    zone = comm.zone_members(c, x.t, x.system)
    gather = comm.all_gather_time(kv * 2.0 * x.act * c, c, k_cp, x.link(c, x.t), x.system, zone)
    a_fwd, a_bwd = lt.attn_fwd / c, lt.attn_bwd / c  # one ring step's share of the attention
    dkv = comm.p2p_time(kv * 2.0 * k["dkv_bytes"], k_cp >= c, x.link(c, x.t, p2p=True), x.system)
    fwd = np.maximum(gather - a_fwd, 0.0) + compute.stream_time(
        (kv * k["kv_cat_bytes"] + out * k["merge_fwd_bytes"]) * (c - 1.0) + out * k["merge_out_bytes"], x.r,
        kernels=k["merge_fwd_kernels"] * (c - 1.0))
    bwd = (np.maximum(gather - a_bwd, 0.0) + (c - 1.0) * np.maximum(dkv - a_bwd, 0.0) + dkv
           + compute.stream_time((kv * k["bwd_kv_bytes"] + out * k["bwd_q_bytes"]) * c, x.r, kernels=k["bwd_kernels"] * c))
    return np.where(c > 1, fwd * (1.0 + x.full_share) + bwd, 0.0) * m.attention_layers / m.layers


def _mamba_cp_comm(x: _Step, k_cp: Any) -> Any:
    """Context parallel of a hybrid model's Mamba-2 layers, per average layer (Megatron-Core MambaContextParallel,
    ssm/mamba_context_parallel.py): before the conv1d and the scan, z, x, B, C and dt each go through an all-to-all
    from a sequence shard to a head shard of the whole sequence (B and C repeated when a TP rank holds fewer groups
    than CP ranks), after it the scan output goes back; none of them overlapped. Forward, backward (the converse
    exchanges of the gradients) and again under full recompute. 0 without Mamba-2 layers. Each all-to-all is
    torch.distributed.all_to_all_single (tensor_parallel/mappings.py _AllToAll, via all_to_all_sp2hp / hp2sp):
    NCCL's all-to-all, at its rates (nccl_alltoall_rates; docs/known-gaps.md 109)."""
    m, c, t = x.model, x.c, x.t
    if not m.mamba_layers:
        return 0.0
    groups_local = m.ssm_groups / t
    repeat = np.maximum(c / np.maximum(groups_local, 1.0), 1.0)
    widths = (m.ssm_inner / t, m.ssm_inner / t, groups_local * m.ssm_state * repeat,
              groups_local * m.ssm_state * repeat, m.ssm_heads / t, m.ssm_inner / t)
    zone = comm.zone_members(c, t, x.system)
    r = nccl_alltoall_rates(x.link(c, t), x.system, x.k)
    per_pass = sum(comm.all_to_all_time(x.tok * w * x.act, c, k_cp, r, x.system, zone) for w in widths)
    return per_pass * (2.0 + x.full_share) * m.mamba_layers / m.layers


def _ep_comm(x: _Step, like: np.ndarray) -> np.ndarray:
    """Expert parallel per average layer: dispatch + combine all-to-all, forward and backward (+ forward again
    under full recompute)."""
    model = x.model
    if not model.is_moe:
        return np.zeros_like(like)
    # each TP rank dispatches its sequence shard, or the TP group's whole token set (PerfStyle.moe_tp_token_split at
    # expert TP 1, etp_dispatch_replicated above it)
    whole = np.where(x.et > 1.0, np.asarray(x.fw.etp_dispatch_replicated, bool),
                     ~np.asarray(x.fw.moe_tp_token_split, bool))
    seq_share = np.where(x.sp & ~whole, 1.0 / x.t, 1.0)
    # the busiest rank receives capacity_factor x the balanced share of routed tokens
    routed = model.experts_per_token * x.moe_load
    # DeepEP / HybridEP (Megatron-Core flex) send a token once to each EP rank holding one of its experts and
    # permute it to those experts there (DeepEP get_dispatch_layout: is_token_in_rank; NVIDIA's GB200 guide s2.5:
    # "no redundant communication"); the alltoall dispatcher permutes one copy per expert before sending
    ranks = _ranks_per_token(x, x.e) * x.moe_load
    # Megatron-Core resolves "auto" per layout (moe_alltoall); the PyTorch-native stacks' own EP is torchtitan's
    # all_to_all of tokens permuted per expert, so there only an explicit "flex" (DeepEP: NeMo AutoModel's
    # enable_deepep / dispatcher deepep, torchtitan's deepep backend) sends one copy per rank
    host_sync = np.asarray(x.fw.moe_host_sync)
    flex, wide, n_ep, stride = _ep_group(x)
    ranks = ranks * np.where(wide, x.et, 1.0)
    k_ep = comm.ranks_per_domain(n_ep, stride, x.domain)
    m_ep = comm.zone_members(n_ep, stride, x.system)
    routed = np.where(flex, np.minimum(ranks, routed * np.where(wide, x.et, 1.0)), routed)
    # a routed copy is expert_width wide: the hidden size, or LatentMoE's latent (fc1_latent_proj runs before the
    # dispatch, moe_layer.py preprocess at d98e8a64d: every dispatcher carries the projected tokens)
    per_copy = x.tok * seq_share * model.expert_width * x.act

    def a2a_at(r: Any) -> np.ndarray:
        a2a = comm.all_to_all_time(per_copy * routed, n_ep, k_ep, r, x.system, m_ep)
        if not np.any(flex & (n_ep > k_ep)):
            return a2a
        # across domains they forward (DeepEP internode normal kernels, HybridEP): a token crosses the network once
        # to each remote domain holding one of its experts (expected count for balanced routing, the experts split
        # evenly over the group's domains; DeepEP get_dispatch_layout num_tokens_per_rdma_rank), then NVLink carries
        # it to the ranks there: every rank copy but the receiver's own crosses NVLink once
        domains = np.maximum(n_ep / k_ep, 1.0)
        remote = _ranks_per_token(x, domains) * (domains - 1.0) / domains
        fwd = comm.forwarded_all_to_all_time(per_copy * remote * x.moe_load,
                                             per_copy * ranks * (k_ep - 1.0) / k_ep, n_ep, k_ep, r, x.system, m_ep)
        return np.where(flex & (n_ep > k_ep), fwd, a2a)  # inside one domain: the plain all-to-all, as the scalar path

    r_ep = x.link(n_ep, stride)
    a2a = a2a_at(r_ep)
    # the PyTorch-native stacks' flex is DeepEP itself: its normal kernels at their measured rates (deepep_rates)
    deepep = flex & ~host_sync
    if np.any(deepep):
        a2a = np.where(deepep, a2a_at(deepep_rates(x.r, x.system, x.k)), a2a)
    # the alltoall dispatchers (Megatron-Core alltoall, torchtitan's all_to_all_single, HF) are NCCL's all-to-all
    nccl = ~flex & ~np.asarray(x.fw.ep_own_kernels, bool)
    if np.any(nccl):
        a2a = np.where(nccl, a2a_at(nccl_alltoall_rates(r_ep, x.system, x.k)), a2a)
    return (a2a * (4.0 + 2.0 * x.moe_rerun) - _permute_in_transport(x, a2a)) * model.moe_layer_count / model.layers


def _ep_group(x: _Step) -> tuple[Any, Any, Any, Any]:
    """(flex, wide, ranks, rank stride) of the group the MoE all-to-all runs over. flex: a dispatcher that sends a
    token once to each rank holding one of its experts (DeepEP / HybridEP: Megatron-Core's flex, "auto" resolved per
    layout by moe_alltoall; on the PyTorch-native stacks an explicit "flex"). wide: Megatron-Core's flex dispatcher at
    expert TP > 1, which sends over the TP x EP group, a token to every expert-TP rank of its experts
    (MoEFlexTokenDispatcher: group=tp_ep_group, router_topk=tp_size x topk; `_moe_tp_collectives`). The EP group's
    ranks lie expert-TP apart, the TP x EP group's next to each other: the expert grid has no CP dimension, so EP
    spans the CP ranks (Megatron-Core parallel_state.initialize_model_parallel: the expert RankGenerator takes tp =
    expert TP and cp = 1 in the order tp-cp-ep-dp-pp; torchtitan's ep = dp_shard_in_ep x cp), and the attention's TP
    does not spread it: at TP 4, expert TP 1, EP 8 the group is 8 neighbouring ranks, one 8-GPU host."""
    host_sync = np.asarray(x.fw.moe_host_sync)
    flex = np.where(host_sync, ~moe_alltoall(x.strategy_dispatcher, x.system, x.e, x.t),
                    x.strategy_dispatcher in FLEX_DISPATCHERS)
    wide = flex & host_sync & (x.et > 1.0)
    return flex, wide, np.where(wide, x.e * x.et, x.e), np.where(wide, 1.0, x.et)


def ep_domains(x: _Step) -> Any:
    """Scale-up (NVLink) domains the MoE all-to-all's group spans (_ep_group): 1 inside one domain; 0 for a dense
    model. A diagnostic output of step_time_arrays (benchmarks/accuracy_bands.py --rows groups rows by it)."""
    if not x.model.is_moe:
        return 0.0 * x.e
    _, _, n_ep, stride = _ep_group(x)
    return np.ceil(n_ep / comm.ranks_per_domain(n_ep, stride, x.domain))


def _permute_in_transport(x: _Step, a2a: Any) -> Any:
    """Seconds per MoE layer and micro-batch that HybridEP's transport hides of the framework's permute passes
    (moe_dispatcher hybridep): its dispatch_with_permute / combine_with_unpermute group the tokens by expert in the
    transport's own kernel grid, permute blocks streaming per chunk behind the copies (the AutoModel report's 5.2;
    deepseek-ai/DeepEP hybrid-ep deep_ep/hybrid_ep_buffer.py), and AutoModel's _HybridEPManager hands the experts those
    tokens unchanged (token_dispatcher.py at 4074cd40d), so each pass takes the longer of the two, not their sum. The
    permute's time is compute._moe_layer's (read + write h a routed copy for the permute and again for the unpermute:
    forward and recompute once, backward twice); a pass's transport `a2a` is one all-to-all, two a pass (dispatch +
    combine). 0 on every other dispatcher."""
    if x.strategy_dispatcher != "hybridep":
        return 0.0
    m = x.model
    slots = x.tok * m.experts_per_token * x.moe_load
    split = np.where(np.asarray(x.fw.moe_tp_token_split, bool), x.et / x.t, 1.0)
    perm = compute.stream_time(4.0 * m.expert_width * slots * split * x.act, x.r, kernels=0.0)
    return np.minimum(2.0 * a2a, perm) * (1.0 + x.moe_rerun) + np.minimum(2.0 * a2a, 2.0 * perm)


def nccl_alltoall_rates(r: Any, system: System, k: PerfConstants) -> Any:
    """Rates `r` as NCCL's all-to-all reaches them: send / recv to every peer on its p2p channels, not a ring. On an
    NVSwitch fabric (System.nvls) its NVLink busbw at perf_constants.yaml comm.nccl_alltoall_busbw_fraction of the link
    instead of the ring's intra_busbw_fraction; on AMD's switchless xGMI mesh (System.scaleup_mesh_links, vendor amd) RCCL's at
    comm.rccl_alltoall_busbw_fraction_mesh instead of the mesh ring's intra_busbw_fraction_mesh (a calibrated ring
    busbw scaled alike, either way); off-node the network's measured all-to-all share of its ring payload
    (networks.yaml alltoall_payload_share, System.inter_node_alltoall_share; 1 where not measured). Measured on
    nccl-tests / rccl-tests / torch rows (docs/known-gaps.md 95, 113)."""
    return dataclasses.replace(r, intra_busbw=r.intra_busbw * _alltoall_over_ring(system, k),
                               inter_nic=r.inter_nic * float(system.inter_node_alltoall_share))


def _alltoall_over_ring(system: System, k: PerfConstants) -> float:
    """NCCL's / RCCL's all-to-all busbw inside a scale-up domain over the ring busbw the rates carry: measured on
    NVSwitch (Hopper / Blackwell) and on AMD's xGMI mesh (MI355X); 1 elsewhere (A100-era switches and GH200's quad
    NVLink mesh: not measured)."""
    c = k.raw["comm"]
    if system.scaleup_mesh_links:
        amd = system.vendor == "amd"
        return float(c["rccl_alltoall_busbw_fraction_mesh"]) / k.intra_busbw_fraction_mesh if amd else 1.0
    if system.nvls:
        return float(c["nccl_alltoall_busbw_fraction"]) / k.intra_busbw_fraction
    return 1.0


def deepep_rates(r: Any, system: System, k: PerfConstants) -> Any:
    """Rates `r` with the scale-up and network ones DeepEP's normal dispatch / combine kernels reach
    (perf_constants.yaml comm.deepep_normal_kernels, measured by DeepSeek on H800 + CX7): their NVLink payload as a
    share of the link's rate per direction, their RDMA payload as a share of what NCCL moves on the same NIC."""
    d = k.raw["comm"]["deepep_normal_kernels"]
    return dataclasses.replace(r, intra_busbw=system.intra_node_gb_s * 1e9 * float(d["nvlink_fraction_of_link"]),
                               inter_nic=r.inter_nic * float(d["rdma_fraction_of_nccl"]))


@dataclass(frozen=True)
class _MicroBatch:
    """One micro-batch (forward + backward) on the slowest pipeline stage, by term."""

    n_stage: np.ndarray  # decoder layers on that stage (with the multi-token-prediction modules' on the last)
    head_w: np.ndarray  # LM-head + loss passes of that stage: 1 + MTP modules on the last, 0 elsewhere
    compute: np.ndarray
    tp: np.ndarray
    cp: np.ndarray
    ep: np.ndarray
    # seconds a micro-batch on the most loaded stage that holds no LM head (its total), whichever stage paces
    headless_total: Any = 0.0
    # the EP all-to-all seconds of a micro-batch that runs without a partner (= ep where no overlap pairs it)
    ep_alone: Any = 0.0
    # the host's excess over the GPU in a micro-batch (the layers' _StageLayer.host), held inside `compute`
    host: Any = 0.0

    @property
    def total(self) -> np.ndarray:
        return self.compute + self.tp + self.cp + self.ep


def _micro_batch(x: _Step, lt: compute.LayerTimes, layer_mb: np.ndarray, loop: _ExpertLoop | None) -> _MicroBatch:
    """The slowest pipeline stage sets the pace: the last stage (its decoder layers + the LM head and loss) or the
    most loaded other one, whichever takes longer a micro-batch (uneven splits: the first L mod p stages hold one
    more layer; under embedding / loss slots a middle stage holds one layer more than either end stage:
    pipeline.most_loaded_stage_layers; the embedding lookup is a gather, not counted). The last stage also runs
    the model's multi-token-prediction modules (`_stage_micro_batch` `mtp`), where memory.py holds them. `loop`: the
    step's eager expert loop pass (`_expert_loop_pass`)."""
    t_ar, tp_per_layer = _tp_comm(x)
    per_layer = _StageLayer(layer_mb, tp_per_layer, _host_excess(x, lt, tp_per_layer) + _expert_loop_excess(x, loop)
                            + _moe_dispatch_sync_excess(x) + _fsdp1_adapter_unit_excess(x),
                            _cp_comm(x, lt),
                            _ep_comm(x, tp_per_layer))
    imbalance = 1.0
    if x.model.is_hybrid:  # the rank whose chunks hold the costlier layers sets the pace (mamba.stage_imbalance)
        from trainsizer.estimate.mamba import stage_imbalance

        imbalance = stage_imbalance(x.model, float(x.training.seq_len), x.p, x.v)
        per_layer = per_layer.scaled(imbalance)
    slots = (x.model.layers, x.p, x.a["pipeline_embedding_layer"], x.a["pipeline_loss_layer"], *x.stage_edges)
    n_first, n_last = pipeline.first_last_stage_layers(*slots)
    passes = float(mtp_passes(x.model, x.training))
    # a pass's layers in average decoder layers (a hybrid module by its FLOPs: mamba.mtp_block_layers), in the paced
    # rank's units
    mtp_layers = passes * mtp_block_layers(x.model, float(x.training.seq_len)) / imbalance
    last = _stage_micro_batch(x, lt, per_layer, t_ar, n_last, 1.0, mtp=passes, mtp_layers=mtp_layers)
    if np.any(np.asarray(x.fw.pipeline_schedule) == "dualpipe"):
        last = _dualpipe_end_rank(x, last, _stage_micro_batch(x, lt, per_layer, t_ar, n_first, 0.0))
    other = _stage_micro_batch(x, lt, per_layer, t_ar, pipeline.most_loaded_stage_layers(*slots), 0.0)
    take_last = (x.p <= 1) | (last.total >= other.total)
    paced = _MicroBatch(*(np.where(take_last, getattr(last, f.name), getattr(other, f.name))
                          for f in dataclasses.fields(_MicroBatch)))
    return dataclasses.replace(paced, headless_total=other.total)


def _dualpipe_end_rank(x: _Step, last: _MicroBatch, first: _MicroBatch) -> _MicroBatch:
    """Under DualPipe the rank holding the last stage holds the first too (DeepSeek-V3 report s3.2.1, Table 2:
    stages r and p - 1 - r on one rank), and half the micro-batches enter from each end, so each of its stages
    runs half of them: per micro-batch it takes the mean of the two (the middle ranks' pairs are taken at the most
    loaded stage, an upper bound)."""
    dual = (np.asarray(x.fw.pipeline_schedule) == "dualpipe") & (x.p > 1)
    return _MicroBatch(*(np.where(dual, 0.5 * (getattr(last, f.name) + getattr(first, f.name)), getattr(last, f.name))
                         for f in dataclasses.fields(_MicroBatch)))


@dataclass(frozen=True)
class _StageLayer:
    """Seconds per decoder layer and micro-batch on a stage, by term."""

    compute: Any
    tp: Any
    host: Any
    cp: Any
    ep: Any

    def scaled(self, factor: Any) -> _StageLayer:
        return _StageLayer(*(getattr(self, f.name) * factor for f in dataclasses.fields(self)))


def _stage_micro_batch(x: _Step, lt: compute.LayerTimes, per: _StageLayer, t_ar: Any, n_stage: Any,
                       head_w: float, mtp: float = 0.0, mtp_layers: Any = 0.0) -> _MicroBatch:
    """One micro-batch on a stage of `n_stage` decoder layers, with the LM head and loss where head_w is 1, and
    `mtp` multi-token-prediction passes (model_states.mtp_passes, on the last stage, as memory.py holds them), their
    layers `mtp_layers` average decoder layers. Each
    module (Megatron-Core multi_token_prediction.py, DeepSeek-V3 report s2.2) runs its input side
    (compute.mtp_projection: two norms and eh_proj 2h -> h, again under full recompute, whose _checkpointed_forward
    re-runs it), one transformer layer, timed as the model's average decoder layer (its terms: compute, TP, host,
    CP, EP), and the shared LM head with its loss once more."""
    training = x.training
    n_stage = np.asarray(n_stage, float) + mtp_layers + np.zeros_like(np.asarray(per.compute, float))
    head_w = np.full(n_stage.shape, head_w * (1.0 + mtp))
    compute_mb = n_stage * per.compute + head_w * (lt.head_fwd + lt.head_bwd)
    if mtp:
        seq_share = np.where(np.asarray(x.sp, float) > 0, 1.0 / x.t, 1.0)
        p_fwd, p_bwd = compute.mtp_projection(x.model.hidden, x.tok, x.t, seq_share, training.trains_base_weights,
                                              x.r)
        compute_mb = compute_mb + mtp * (p_fwd * (1.0 + x.full_share) + p_bwd)
    tp_mb = n_stage * per.tp + head_w * 2.0 * t_ar
    if training.has_reference_model:
        # DPO reference policy: one more forward of the same layers on the same tokens, with its forward
        # TP all-reduces (2 per layer, 1 with a parallel residual) and EP all-to-alls (dispatch + combine), under
        # no_grad
        compute_mb = compute_mb + n_stage * lt.fwd + head_w * lt.head_fwd
        tp_mb = tp_mb + (n_stage * _tp_collectives_per_pass(x)[0] + head_w) * t_ar
    # with its part of the fp32 gradient accumulation pass
    compute_mb = compute_mb + n_stage * per.host + _hp_grad_accum(x, n_stage)
    cp_mb = n_stage * per.cp
    ep_mb = n_stage * per.ep
    if training.has_reference_model:
        ep_mb = ep_mb * (1.0 + 2.0 / (4.0 + 2.0 * x.full_share))
    ep_alone = ep_mb
    # overlapped with the compute of a paired micro-batch: DualPipe (DeepSeek-V3 s3.2.1), Megatron-Core's combined
    # 1F1B under moe_a2a_overlap (one forward and one backward micro-batch per step, their a2a on a comm stream)
    if np.any(x.fw.ep_overlap):
        # DualPipe pairs whole micro-batches (_overlapped_ep); Megatron-Core's combined 1F1B pairs a layer's
        # all-to-alls with single modules of the other micro-batch (_combined_1f1b_exposed), never less exposed
        paired = _overlapped_ep(ep_mb, compute_mb, x.fw.ep_overlap_sm_share)
        if np.any(np.asarray(x.fw.pipeline_schedule) != "dualpipe"):
            paired = np.where(np.asarray(x.fw.pipeline_schedule) == "dualpipe", paired,
                              np.maximum(paired, n_stage * _combined_1f1b_exposed(x, lt, per)))
        ep_mb = _when(x.fw.ep_overlap, paired, ep_mb)
    return _MicroBatch(n_stage=n_stage, head_w=head_w, compute=compute_mb, tp=tp_mb, cp=cp_mb, ep=ep_mb,
                       ep_alone=ep_alone, host=n_stage * per.host)


def _combined_1f1b_alone(x: _Step, mb: _MicroBatch) -> tuple[Any, Any]:
    """(micro-batches' worth of passes a step runs unpaired on the first rank, seconds each adds to _micro_batch's
    paired EP exposure) under Megatron-Core's combined 1F1B (moe_a2a_overlap): per schedule
    (pipeline.schedule_micro_batches) the first rank's warm-up forwards and cool-down backwards
    (pipeline.combined_1f1b_unpaired, chunk passes; v of them make a micro-batch) expose their all-to-alls whole,
    `ep_alone` instead of the paired `ep`. The paced stage's all-to-alls stand for the first rank's (stages of equal
    layers). (0, 0) without the overlap, and under DualPipe (its own schedule, _overlapped_ep)."""
    on = np.asarray(x.fw.ep_overlap, bool) & (np.asarray(x.fw.pipeline_schedule) != "dualpipe")
    if not np.any(on) or not x.model.is_moe:
        return 0.0, 0.0
    m_s = pipeline.schedule_micro_batches(x.m, x.b, x.local_batch)
    v = np.where(x.p > 1, np.maximum(x.v, 1.0), 1.0)
    passes = pipeline.combined_1f1b_unpaired(x.p, m_s, v) / v * (x.m / m_s)
    return np.where(on, passes, 0.0), np.where(on, np.maximum(mb.ep_alone - mb.ep, 0.0), 0.0)


def _overlapped_ep(ep: np.ndarray, compute: np.ndarray, sm_share: Any) -> np.ndarray:
    """Exposed part of an all-to-all of `ep` seconds overlapped with `compute` seconds of full-GPU compute whose
    kernels lose `sm_share` of the SMs to the communication kernels while these run: compute progresses at
    (1 - share) during the all-to-all, so the pair takes max(ep, compute + share x ep) (DeepSeek-V3 report
    s3.2.2: 20 of 132 SMs for IB / NVLink traffic); returns that minus the compute."""
    return np.maximum(ep - compute, np.asarray(sm_share, float) * ep)


def _combined_1f1b_exposed(x: _Step, lt: compute.LayerTimes, per: _StageLayer) -> Any:
    """Exposed all-to-all seconds of one average decoder layer and micro-batch under Megatron-Core's combined 1F1B
    (moe_a2a_overlap): combined_1f1b_layer_s on a MoE layer, attention's compute being the layer's less its routed
    experts' (_routed_experts_forward_s: forward m, backward 2m, data + weight gradients; a shared expert stays
    on the attention side, where it hides all-to-alls: the lenient reading). The re-run all-to-alls of
    a recomputed MoE block go with the middle window (they run inside mlp_bwd)."""
    moe = x.model.moe_layer_count / x.model.layers
    if moe <= 0.0:
        return np.zeros_like(np.asarray(per.ep, float))
    m = _routed_experts_forward_s(x)
    total = np.asarray(lt.fwd, float) + np.asarray(lt.bwd, float)
    fwd_share = np.where(total > 0.0, np.asarray(lt.fwd, float) / np.where(total > 0.0, total, 1.0), 1.0 / 3.0)
    a_f = np.maximum(per.compute * fwd_share - m, 0.0)
    a_b = np.maximum(per.compute * (1.0 - fwd_share) - 2.0 * m, 0.0)
    rerun = np.asarray(x.moe_rerun, float)
    c = per.ep / moe / (4.0 + 2.0 * rerun)  # one all-to-all of a MoE layer
    layer = combined_1f1b_layer_s(a_f, m, a_b, c, x.fw.ep_overlap_sm_share, mid_a2a=2.0 + 2.0 * rerun,
                                  delayed=x.fw.ep_overlap_delay_wgrad, one_queue=x.fw.ep_overlap_one_queue)
    return moe * np.maximum(layer - (a_f + 3.0 * m + a_b), 0.0)


def _routed_experts_forward_s(x: _Step) -> Any:
    """Forward seconds of all the GPU's routed experts over one MoE layer's micro-batch, as _moe_layer counts their
    tokens (a TP rank's 1 / t share at expert TP 1 where the style splits them, Megatron-Core's alltoall / flex
    dispatchers) with compute.expert_forward_time's GEMMs, activation and token moves."""
    shapes = _shapes(x.model)
    local = np.maximum(shapes.experts / x.e, 1.0)
    tok = np.where(np.asarray(x.fw.moe_tp_token_split, bool), x.tok * x.et / x.t, x.tok)
    moe = _moe_passes(x)
    per_expert = tok * shapes.topk / local * x.moe_load
    return local * compute.expert_forward_time(shapes, per_expert, x.et, x.r, moe[1] if moe else 1.0)


def combined_1f1b_layer_s(attn_fwd: Any, mlp_fwd: Any, attn_bwd: Any, a2a: Any, sm_share: Any,
                          mid_a2a: Any = 2.0, delayed: Any = True, one_queue: Any = False) -> Any:
    """Seconds of one forward layer paired with one backward layer under Megatron-Core's combined 1F1B, as
    TransformerLayerSchedulePlan.run issues them (megatron/core/models/common/model_chunk_schedule_plan.py,
    Megatron-LM d428de40, its docstring's table; overlap_moe_expert_parallel_comm with delay_wgrad_compute, as the
    Megatron-Bridge recipes set them):
        comm: combine_bwd        | dispatch_fwd -> dispatch_bwd     | combine_fwd
        comp: attn_fwd+post_attn | mlp_bwd -> mlp_bwd_dw -> mlp_fwd | post_attn_bwd+attn_bwd
    Each node waits for its own micro-batch's previous node (a CUDA event), so an all-to-all (`a2a` s each) hides
    only behind its own window's compute: max(a2a, attention forward), then dispatch_bwd after mlp_bwd's data
    gradient (`mlp_fwd` s) and mlp_fwd after dispatch_fwd: max(3 mlp_fwd, 2 a2a, a2a + mlp_fwd), then max(a2a,
    attention backward). While an all-to-all runs its kernels hold `sm_share` of the SMs from the paired compute
    (as _overlapped_ep). `mid_a2a`: all-to-alls in the middle window (2; more where a recomputed MoE block re-runs
    its dispatch and combine inside mlp_bwd). The middle window's other orders: _combined_1f1b_middle_s."""
    s = np.asarray(sm_share, float)
    c = np.asarray(a2a, float)
    first = np.maximum(c, attn_fwd + s * c)
    middle = np.maximum.reduce([mid_a2a * c, 3.0 * mlp_fwd + mid_a2a * s * c, c + mlp_fwd + s * c])
    if not np.all(delayed) or np.any(one_queue):
        middle = _combined_1f1b_middle_s(middle, mlp_fwd, c, s, (mid_a2a - 2.0) * c, delayed, one_queue)
    last = np.maximum(c, attn_bwd + s * c)
    return first + middle + last


def _combined_1f1b_middle_s(middle: Any, m: Any, c: Any, s: Any, rerun_s: Any, delayed: Any, one_queue: Any) -> Any:
    """The combined 1F1B's middle window (mlp_bwd, dispatch_fwd, [mlp_bwd_dw], dispatch_bwd, mlp_fwd in issue order;
    `m` the expert MLP forward, all-to-alls of `c` s, SM share `s`, `rerun_s` re-run all-to-alls inside mlp_bwd)
    where the weight gradient runs inside mlp_bwd (not `delayed`: the 2025 `--combined-1f1b-recipe ep_a2a`), or
    where one hardware queue (CUDA_DEVICE_MAX_CONNECTIONS=1) starts a kernel only after every kernel issued before
    it has started: an all-to-all issued behind a compute node starts as that node ends, so dispatch_fwd overlaps
    mlp_bwd_dw (delayed) or nothing (not: the pair's dispatch exposed whole), and dispatch_bwd the mlp_fwd issued
    after it; `middle` (combined_1f1b_layer_s's, delayed, several queues) elsewhere. Several queues, not delayed:
    dispatch_fwd beside the whole mlp_bwd, dispatch_bwd after it beside mlp_fwd. Origin: the issue order of
    model_chunk_schedule_plan.py (Megatron-LM ae1c88296f, the first public combined 1F1B) under one in-order queue
    (CUDA_DEVICE_MAX_CONNECTIONS, CUDA programming guide's environment variables; arguments.py at ae1c88296f warns the
    EP overlap wants more than the 1 TP / CP want on Hopper)."""
    dw = np.asarray(delayed, bool)
    pair = np.maximum(c, m + s * c)
    several = np.where(dw, middle, np.maximum(c, 2.0 * m + rerun_s + s * c) + pair)
    one = np.where(dw, m + rerun_s + 2.0 * pair, 2.0 * m + rerun_s + c + pair)
    return np.where(np.asarray(one_queue, bool), one, several)


def _hp_grad_accum(x: _Step, n_stage: np.ndarray) -> np.ndarray:
    """Seconds per micro-batch of a separate fp32 gradient accumulation pass (_grad_accum_bytes) over the stage's
    decoder layers plus the vocabulary matrix it holds (first stage: embedding, last: LM head or the tied
    embedding; one stage: both), trainable parameters only; and FSDP2's unsharded gradient hold
    (_fsdp2_grad_hold_bytes) over the same unsharded parameters; under fsdp_reshard step without pipelining, routed
    experts whose shard group is one rank are no FSDP unit (NeMo AutoModel apply_fsdp ignored_params,
    components/moe/parallelizer.py at 4074cd40d), so autograd adds their later micro-batches' gradients into .grad in
    the parameters' dtype (read 2 + 2, write 2 B) instead."""
    hold = _fsdp2_grad_hold_bytes(x)
    nbytes = _grad_accum_bytes(x) + hold
    if not np.any(nbytes > 0):
        return np.zeros_like(n_stage)
    model = x.model
    p_total, p_expert = _param_split(model)
    trainable = x.trainable_params
    dense_layer = (model.params_non_embedding - p_expert) / model.layers
    expert_layer = p_expert / model.layers / (x.et * x.e)
    vocab_local = np.where(x.p > 1, float(model.vocab * model.hidden),
                           float(model.embedding_params + model.lm_head_params)) / x.t
    dense = (n_stage * dense_layer / x.t + vocab_local) * trainable / p_total
    experts = n_stage * expert_layer * trainable / p_total
    outside = (x.fsdp_reshard == "step") & (x.p <= 1) & (shard_groups(x.a)[1] <= 1)
    m = np.maximum(np.asarray(x.m, float), 1.0)
    expert_bytes = np.where(outside, nbytes - hold + 3.0 * x.act * (m - 1.0) / m, nbytes)
    return np.where(nbytes > 0, compute.stream_time(dense * nbytes + experts * expert_bytes, x.r, kernels=0.0), 0.0)


def _fsdp2_grad_hold_bytes(x: _Step) -> np.ndarray:
    """HBM bytes per local parameter per micro-batch, averaged over a step's m micro-batches, of FSDP2 accumulating
    a stage's unsharded gradients while gradient sync is off (perf_constants.yaml optimizer.fsdp2_grad_hold_bytes:
    the first micro-batch's cast to an fp32 reduce dtype, each later one's add): under pipelining where the stage
    syncs once a step (PerfStyle.pp_fsdp_once_per_step: torch's pipelining stage turns sync off for every
    micro-batch's backward and reduces after the last), or, with more than one micro-batch, strategy.fsdp_no_sync or
    fsdp_reshard step (`_fsdp_gathers`). The unsharded gradients are the parameters after TP / EP, which
    _hp_grad_accum counts; 0 without FSDP or on a one-rank shard group."""
    m = np.maximum(np.asarray(x.m, float), 1.0)
    once = _fsdp_gathers(x)[1] & ((x.p > 1) | (m > 1.0))
    # FSDP2 wraps a shard group of more than one rank only (torchtitan ParallelDims.fsdp_enabled: dp_shard x cp > 1)
    hold = (x.zero >= 3) & (shard_groups(x.a)[0] > 1) & (once | (x.fsdp_no_sync & (m > 1.0)))
    if not np.any(hold) or x.training.precision == "fp32":
        return np.zeros_like(m)
    b = x.k.raw["optimizer"]["fsdp2_grad_hold_bytes"]
    fp32 = np.asarray(x.fw.grad_reduce_bytes, float) >= 4.0
    first = np.where(fp32, b["first_fp32"], b["first_16bit"])
    later = np.where(fp32, b["later_fp32"], b["later_16bit"])
    return np.where(hold, (first + later * (m - 1.0)) / m, 0.0)


def _grad_accum_bytes(x: _Step) -> np.ndarray:
    """HBM bytes per local parameter per micro-batch of the fp32 gradient accumulation pass. The job's
    gradient_accumulation_fusion (Megatron) decides where it says: false, each micro-batch's 16-bit weight gradient
    is added into the fp32 main gradient by its own kernel (Megatron-Core DistributedDataParallel's backward hook
    `param.main_grad.add_(param.grad.data)`; nanotron's FP32GradientAccumulator hook `fp32_grad_buffer.add_(grad)`:
    read 2 + 4, write 4 B, perf_constants.yaml optimizer.grad_accum_unfused_add_bytes); true, the weight-gradient
    GEMM accumulates into it (none). Else the style's: DeepSpeed's BF16_Optimizer.update_hp_grads after every
    micro-batch's backward (PipelineEngine._exec_backward_pass, BF16_Optimizer.backward) adds each bf16 gradient,
    cast to fp32, into the fp32 gradient (`hp_grad.add_(lp.grad.to(fp32))`: read 2 B, write and read a 4 B
    temporary, read and write 4 B = 18 B); fp16 with ZeRO <= 1 and no such pass (`fp16_grad_accum_bytes`, DeepSpeed
    v0.3's fp16 engine): autograd's AccumulateGrad adds each micro-batch's 16-bit weight gradient into `.grad` in
    place (read 2 + 2, write 2 = 6 B) on every micro-batch but the first of a step, so (m - 1) / m of it; the same
    add in bf16 where a PyTorch-native style accumulates in `.grad` at ZeRO 0 (autograd_grad_accum: torch's
    torch/csrc/autograd/functions/accumulate_grad.h; the HF Trainer's accumulation steps run under DDP's no_sync,
    torchtune's recipes call backward per micro-batch and step once)."""
    zero = np.zeros_like(np.asarray(x.m, dtype=float))
    if x.training.precision == "fp32":
        return zero
    if x.grad_accum_fusion is not None:
        unfused = float(x.k.raw["optimizer"]["grad_accum_unfused_add_bytes"])
        return zero + (0.0 if x.grad_accum_fusion else unfused)
    nbytes = np.asarray(x.fw.hp_grad_accum_bytes, dtype=float)
    if x.training.precision == "fp16":
        nbytes = np.asarray(x.fw.fp16_grad_accum_bytes, dtype=float) * (x.m - 1.0) / x.m
    elif x.training.precision != "bf16":
        return zero
    # the same AccumulateGrad add (read 2 + 2, write 2 B) where a PyTorch-native stack accumulates at ZeRO 0
    # (PerfStyle.autograd_grad_accum: the HF Trainer under DDP or on one GPU, torchtune on one device)
    autograd = np.where(np.asarray(x.fw.autograd_grad_accum) & (x.zero == 0), 3.0 * x.act * (x.m - 1.0) / x.m, 0.0)
    return np.where(x.zero <= 1, nbytes, 0.0) + autograd + zero


def _deferred_head_wgrad(x: _Step, lt: compute.LayerTimes, mb: _MicroBatch, t_mb: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray]:
    """(pace saved, drain exposed) a step under Megatron-Core's defer_embedding_wgrad_compute. The output layer's
    backward keeps its input and output gradient instead of running the weight-gradient GEMM while the buffer holds
    fewer than wgrad_deferral_limit micro-batches (0: all; core/tensor_parallel/layers.py
    LinearWithGradAccumulationAndAsyncCommunication), and the last pipeline rank runs the kept GEMMs after its last
    backward (pipeline_parallel/schedules.py finish_embedding_wgrad_compute -> utils.py
    drain_embedding_wgrad_compute, its TP all-gathers double-buffered under the GEMMs; NeMo 1's
    MegatronGPTModel.training_step calls the drain itself after the schedule, Apex distributed optimizer): k =
    min(limit, m) micro-batches. Where the last stage paces the pipeline its k deferred micro-batches run without the
    head's wgrad (`compute.lm_head_wgrad_time`, once per LM-head pass: 1 + MTP modules), down to the next slowest
    stage; the drain, k of those GEMMs, hides in the last rank's wait while the p - 1 earlier ranks run their last
    chunk's backward ((p - 1) x layers / (p v) decoder-layer backwards), and the rest is exposed (charged to the
    bubble). Zero without the option, at p = 1 (refused: validate._defer_wgrad_rules) and where the head is frozen."""
    zero = np.zeros_like(np.asarray(t_mb, float))
    if not x.defer_wgrad or not x.training.trains_base_weights:
        return zero, zero
    limit = x.wgrad_deferral_limit
    k = x.m if not limit else np.minimum(float(limit), x.m)
    w = compute.lm_head_wgrad_time(_shapes(x.model), x.tok, x.t, x.r) * (1.0 + float(mtp_passes(x.model, x.training)))
    paced_by_last = (x.p > 1) & (np.asarray(mb.head_w) > 0)
    pace = np.maximum(mb.headless_total + (t_mb - mb.total), t_mb - w)
    saved = np.where(paced_by_last, k * np.maximum(t_mb - pace, 0.0), 0.0)
    idle = (x.p - 1.0) * x.model.layers / (x.p * x.v) * lt.bwd
    drain = np.where(x.p > 1, np.maximum(k * w - idle, 0.0), 0.0)
    return saved + zero, drain + zero


def _pipeline(x: _Step, t_mb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(bubble, exposed p2p): 1F1B / interleaved bubble (p-1)/(v m) or DualPipe's (pipeline.py), and the
    stage-to-stage activation transfers on the critical path; with m_s micro-batches per schedule
    (pipeline.schedule_micro_batches) each of the m / m_s schedules of a step fills and drains the pipeline on its own."""
    m_s = pipeline.schedule_micro_batches(x.m, x.b, x.local_batch)
    runs = x.m / m_s
    if x.fw.pipeline_schedule == "dualpipe":
        frac = pipeline.dualpipe_bubble_fraction(x.p, m_s)
    else:
        frac = pipeline.bubble_fraction(x.p, m_s, x.v)
    bubble = frac * x.m * t_mb
    stride_pp = x.t * x.c * x.d
    same = stride_pp < x.domain
    zone = comm.p2p_zone_factor(stride_pp, x.p, x.system)
    full = x.tok * x.model.hidden * x.act
    hop = x.link(x.p, stride_pp, p2p=True)
    sent = full * np.where(x.sp, 1.0 / x.t, 1.0)
    slots = runs * pipeline.p2p_transfers_on_critical_path(x.p, m_s, x.v) / 2.0
    # With TP > 1 (and no SP) each TP rank may send its 1/t share and the receiver all-gather the full tensor over
    # TP: Megatron-LM's scatter/gather optimisation (Narayanan 2021 s4.1; --scatter-gather-tensors-in-pipeline,
    # default since Feb 2021), DeepSpeed's PartitionedTensor (pipe/engine.py is_pipe_partitioned / _grad_partitioned)
    part_a = np.asarray(x.fw.p2p_partitioned_activations) & (x.t > 1) & ~x.sp
    part_g = np.asarray(x.fw.p2p_partitioned_grads) & (x.t > 1) & ~x.sp
    t_act = comm.p2p_time(np.where(part_a, full / x.t, sent), same, hop, x.system, zone)
    t_grad = comm.p2p_time(np.where(part_g, full / x.t, sent), same, hop, x.system, zone)
    t_ag = comm.all_gather_time(full, x.t, comm.ranks_per_domain(x.t, 1.0, x.domain), x.link(x.t, 1.0), x.system,
                                comm.zone_members(x.t, 1.0, x.system))
    f = x.k.p2p_exposed_fraction
    # one activation and one gradient transfer per slot of the schedule, each all-gathered at its receiver
    exposed = slots
    if np.any(x.fw.p2p_overlap):
        # overlapped (Megatron-Core overlap_p2p_comm, interleaved only): the warm-up / cool-down transfers stay
        # exposed (every chunk's hops: pipeline.p2p_transfers_unhidden); the hidden ones still cost
        # overlap_interference of their time, as other overlapped collectives
        unhidden = np.where(np.asarray(x.fw.p2p_overlap) & (x.v > 1),
                            runs * pipeline.p2p_transfers_unhidden(x.p, m_s, x.v) / 2.0, slots)
        exposed = unhidden + x.k.overlap_interference * (slots - unhidden)
    else:
        unhidden = slots
    # a slot holds one exchange with each neighbour; where the stages sit closer than a domain but the pipeline spans
    # several (pipeline.crosses_domain_edge) the slowest stage has one neighbour across the network: each exposed slot
    # pays that hop at the network's rate (the hidden ones keep overlap_interference of their time inside the domain)
    t_edge = comm.p2p_time(np.where(part_a, full / x.t, sent), False, hop, x.system, zone) - t_act
    edge = unhidden * np.where(pipeline.crosses_domain_edge(x.p, stride_pp, x.domain) & same, t_edge * f, 0.0)
    batched = exposed * ((t_act + t_grad) * f + (part_a + 1.0 * part_g) * t_ag) + edge
    if not np.any(x.fw.serial_pipeline):
        return bubble, batched
    # DeepSpeed PipelineEngine: every schedule step exchanges with one neighbour in separate blocking calls
    # (TrainSchedule: RecvActivation + SendGrad in a forward step, SendActivation + RecvGrad in a backward step;
    # p2p.send / recv async_op=False), so per slot a stage's timeline holds 2 activation and 2 gradient transfers;
    # a partitioned output is all-gathered again by its sender before its backward
    serial = slots * (2.0 * (t_act + t_grad) * f + (2.0 * part_a + 1.0 * part_g) * t_ag) + 2.0 * edge
    return bubble, _when(x.fw.serial_pipeline, serial, batched)


@dataclass(frozen=True)
class _Grads:
    """Parameters on one GPU and the groups their gradients are reduced over."""

    local_dense: np.ndarray  # dense parameters per GPU (after TP and PP)
    local_expert: np.ndarray  # routed-expert parameters per GPU (after expert TP, PP and EP)
    train_frac: float  # trainable share of all parameters (LoRA: adapters only)
    n_dp: np.ndarray  # gradients are reduced over DP x CP (CP ranks hold the same weights)
    k_dp: np.ndarray
    n_edp: np.ndarray  # expert-data-parallel ranks
    k_edp: np.ndarray
    m_dp: np.ndarray  # DP / expert-DP members per fabric zone (comm.zone_members)
    m_edp: np.ndarray
    shard_opt: np.ndarray  # optimizer sharded (ZeRO >= 1 or distributed optimizer)
    window: np.ndarray  # backward of the last micro-batch on the slowest stage (what reduction can hide in)
    # the ranks the optimizer is sharded over: all of DP x CP (and the expert-DP group), or the shard group where
    # strategy.shard_group is set, ZeRO-1 / 2 and ZeRO-3's hybrid shard alike (`_zero_groups`)
    n_zd: Any = None
    n_ze: Any = None


def _grads(x: _Step, lt: compute.LayerTimes, mb: _MicroBatch) -> _Grads:
    model, t = x.model, x.t
    p_total, p_expert = _param_split(model)
    p_dense = p_total - p_expert
    trainable = x.trainable_params
    n_dp = x.d * x.c
    # the expert-data-parallel group: world / (pp x ep x etp) ranks (Megatron-Core core/parallel_state.py
    # initialize_model_parallel expert_data_parallel_size), its ranks ep x etp apart (expert grid order tp-ep-dp-pp)
    n_edp = np.maximum(n_dp * t / (x.e * x.et), 1.0)
    return _Grads(local_dense=p_dense / (t * x.p), local_expert=p_expert / (x.et * x.p * x.e),
                  train_frac=trainable / p_total, n_dp=n_dp, k_dp=comm.ranks_per_domain(n_dp, t, x.domain),
                  n_edp=n_edp, k_edp=comm.ranks_per_domain(n_edp, x.et * x.e, x.domain),
                  m_dp=comm.zone_members(n_dp, t, x.system), m_edp=comm.zone_members(n_edp, x.et * x.e, x.system),
                  shard_opt=(x.zero >= 1) | (x.a["distributed_optimizer"] > 0),
                  window=mb.n_stage * lt.bwd + mb.head_w * lt.head_bwd,
                  **_zero_groups(x, n_dp, n_edp))


def _zero_groups(x: _Step, n_dp: Any, n_edp: Any) -> dict[str, Any]:
    """The groups the optimizer is sharded over (n_zd dense, n_ze experts): where strategy.shard_group states fewer
    ranks than DP x CP, that group, replicated across the groups (InternLM's hybrid ZeRO with zero1 below DP:
    hybrid_zero_optim.py at c18bec9, ParamStore over ParallelMode.ZERO1; Megatron-Core's partial distributed
    optimizer, num_distributed_optimizer_instances = DP / group; under ZeRO-3, FSDP's HYBRID_SHARD, whose flat
    parameter and gradient shards, and so the states the optimizer steps, are 1 / group: torch
    distributed/fsdp/_init_utils.py _init_process_group_state_for_hybrid_shard, the intra-node group; its
    collectives `_dp_comm_zero3` times), the experts over the group's ranks that hold the same experts
    (validate.shard_groups, as memory shards them); DP x CP and the expert-DP group otherwise. The ZeRO-1 / 2 group
    collectives (`_zero_group_collectives`) are taken below ZeRO-3 only."""
    sg = x.a["shard_group"]
    grouped = (sg > 0) & (sg < n_dp)
    n_zd = np.where(grouped, np.minimum(sg, n_dp), n_dp)
    return {"n_zd": n_zd, "n_ze": np.where(grouped, np.maximum(n_zd * x.t / (x.e * x.et), 1.0), n_edp)}


def _dp_comm_replicated(x: _Step, g: _Grads) -> tuple[np.ndarray, np.ndarray]:
    """(exposed DP time without ZeRO-3, share of the gradients in the last bucket). DDP / Megatron:
    all-reduce; distributed optimizer / ZeRO-1/2: reduce-scatter grads + all-gather params. Bucketed and
    overlapped with the last micro-batch's backward; the last bucket stays exposed."""
    k, system, fw = x.k, x.system, x.fw
    r, r_e = x.link(g.n_dp, x.t), x.link(g.n_edp, x.et * x.e)  # the DP x CP group, the expert-DP group
    gb = fw.grad_reduce_bytes
    g_dense = g.local_dense * g.train_frac * gb
    g_exp = g.local_expert * g.train_frac * gb
    # expert gradients are reduced over the expert-DP group in their own collectives (Megatron-Core DDP: a
    # separate bucket group for expert parameters); a model without routed experts issues none, so pays no latency
    moe = g.local_expert * g.train_frac > 0.0
    rs_or_ar = np.where(
        g.shard_opt & ~np.asarray(fw.zero1_grad_allreduce & (x.zero < 2)),
        comm.reduce_scatter_time(g_dense, g.n_dp, g.k_dp, r, system, g.m_dp) + _when(moe, comm.reduce_scatter_time(
            g_exp, g.n_edp, g.k_edp, r_e, system, g.m_edp), 0.0),
        comm.all_reduce_time(g_dense, g.n_dp, g.k_dp, r, system, k.nvls_allreduce_gain, g.m_dp)
        + _when(moe, comm.all_reduce_time(g_exp, g.n_edp, g.k_edp, r_e, system, k.nvls_allreduce_gain, g.m_edp), 0.0),
    )
    # FP8 primary weights (Megatron-Core fp8_param_gather, NeMo fp8_params): the updated shards travel as FP8, or
    # as BF16 under MXFP8 (_primary_weight_gather_bytes)
    p_bytes = np.where(np.asarray(fw.fp8_param_allgather) & (x.training.precision == "fp8"),
                       _primary_weight_gather_bytes(x), x.act)
    ag_params = np.where(
        g.shard_opt & (x.zero < 3),
        comm.all_gather_time(g.local_dense * g.train_frac * p_bytes, g.n_dp, g.k_dp, r, system, g.m_dp)
        + _when(moe, comm.all_gather_time(g.local_expert * g.train_frac * p_bytes, g.n_edp, g.k_edp, r_e, system,
                                          g.m_edp), 0.0),
        0.0,
    )
    bucket = np.maximum(fw.grad_bucket_params, np.asarray(fw.grad_bucket_params_per_dp_rank) * g.n_dp)
    # buckets hold the gradients of trainable parameters only (Megatron-Core DistributedDataParallel and torch
    # DDP skip requires_grad False; LoRA: the adapters), so a frozen base adds no buckets and no latencies
    bucket_frac = np.minimum(1.0, bucket / np.maximum((g.local_dense + g.local_expert) * g.train_frac, 1.0))
    # every bucket is its own collective and pays its own latency (alpha-beta: ring RS / AG n - 1 steps)
    extra = np.maximum(np.ceil(1.0 / bucket_frac) - 1.0, 0.0)
    lat_rs = lat_ag = comm.reduce_scatter_time(0.0, g.n_dp, g.k_dp, r, system)
    lat_ar = comm.all_reduce_time(0.0, g.n_dp, g.k_dp, r, system)
    sharded = g.shard_opt & ~np.asarray(fw.zero1_grad_allreduce & (x.zero < 2))
    grouped = g.shard_opt & (x.zero < 3) & (g.n_zd < g.n_dp)  # a ZeRO group below DP (strategy.shard_group)
    if np.any(grouped):
        rs_g, ag_g, lat_rs_g, lat_ag_g = _zero_group_collectives(x, g, gb, p_bytes, moe)
        rs_or_ar = np.where(grouped & sharded, rs_g, rs_or_ar)
        ag_params = np.where(grouped, ag_g, ag_params)
        lat_rs, lat_ag = np.where(grouped, lat_rs_g, lat_rs), np.where(grouped, lat_ag_g, lat_ag)
    rs_or_ar = rs_or_ar + extra * np.where(sharded, lat_rs, lat_ar)
    ag_params = ag_params + np.where(g.shard_opt & (x.zero < 3), extra * lat_ag, 0.0)
    # DeepSpeed PipelineEngine reduces after the last micro-batch (TrainSchedule: ReduceGrads in the last step)
    overlap = np.asarray(fw.dp_overlap) & ~(np.asarray(fw.serial_pipeline) & (x.p > 1)) & (
        x.zero >= np.asarray(fw.dp_overlap_min_zero))
    if np.any(overlap):
        grad_exposed = np.where(overlap, np.maximum(rs_or_ar - g.window, bucket_frac * rs_or_ar), rs_or_ar)
    else:
        grad_exposed = rs_or_ar
    ag_exposed = ag_params * _when(fw.param_gather_overlap, bucket_frac, 1.0)
    # DeepSpeed's ZeRO-2 reduces every micro-batch's gradients, not the accumulated ones once (_zero2_reductions)
    n_red = _zero2_reductions(x)
    # overlapped collectives still cost `overlap_interference` of their time (NCCL kernels occupy SMs/HBM)
    exposed = n_red * (grad_exposed + k.overlap_interference * (rs_or_ar - grad_exposed)) + ag_exposed + (
        k.overlap_interference * (ag_params - ag_exposed))
    return exposed, bucket_frac


def _zero2_reductions(x: _Step) -> Any:
    """Gradient reductions a step: one (at the accumulation boundary), or on DeepSpeed's engine at ZeRO-2 one every
    micro-batch (PerfStyle.zero2_micro_batch_reduce): its gradient hooks reduce whenever gradients are partitioned,
    not only at the boundary (deepspeedai/DeepSpeed stage_1_and_2.py reduce_ready_partitions_and_remove_grads:
    `if self.partition_gradients or self.is_gradient_accumulation_boundary`, v0.11.1 and edaa7221; engine.py
    allreduce_gradients: 'ZeRO stage >= 2 communicates during non gradient accumulation boundaries as well'), each
    micro-batch's last bucket after its backward (docs/known-gaps.md 296 (c))."""
    every = np.asarray(x.fw.zero2_micro_batch_reduce, bool) & (np.asarray(x.zero) == 2)
    return np.where(every, x.m, 1.0)


def _zero_group_collectives(x: _Step, g: _Grads, gb: Any, p_bytes: Any, moe: Any) -> tuple:
    """(gradient reduce-scatter, parameter all-gather, and their per-bucket latencies) where ZeRO-1 / 2 shards over a
    group below DP (`_zero_groups`), `gb` / `p_bytes` bytes a gradient / gathered parameter. The updated shards are
    gathered inside the group only (InternLM's hybrid ZeRO: broadcast_params over ParallelMode.ZERO1,
    hybrid_zero_optim.py at c18bec9; Megatron-Core: the all-gather over the intra-instance group). The gradients,
    where reduce-scattered (not zero1_grad_allreduce, under which InternLM's reduce_tensor all-reduces over all of DP
    as before): reduce-scattered in the group, then each shard all-reduced across the DP / group replicas
    (Megatron-Core param_and_grad_buffer.py start_grad_sync: 'With multiple DistOpt instances, we need to all-reduce
    across instances', over inter_distributed_optimizer_instance_group)."""
    system, out = x.system, []
    for params, n_grp, n_all, stride in ((g.local_dense, g.n_zd, g.n_dp, x.t),
                                         (g.local_expert, g.n_ze, g.n_edp, x.et * x.e)):
        n_rep, across = np.maximum(n_all / n_grp, 1.0), stride * n_grp
        grp = (n_grp, comm.ranks_per_domain(n_grp, stride, x.domain), x.link(n_grp, stride), system,
               comm.zone_members(n_grp, stride, system))
        rep = (n_rep, comm.ranks_per_domain(n_rep, across, x.domain), x.link(n_rep, across), system)
        m_rep = comm.zone_members(n_rep, across, system)

        def sync(b, grp=grp, rep=rep, m_rep=m_rep):
            return (comm.reduce_scatter_time(b, *grp)
                    + comm.all_reduce_time(b / grp[0], *rep, x.k.nvls_allreduce_gain, m_rep))

        out.append((sync(params * g.train_frac * gb), comm.all_gather_time(params * g.train_frac * p_bytes, *grp),
                    sync(0.0), comm.reduce_scatter_time(0.0, *grp[:4])))
    (rs_d, ag_d, lrs_d, lag_d), (rs_e, ag_e, _, _) = out
    return rs_d + _when(moe, rs_e, 0.0), ag_d + _when(moe, ag_e, 0.0), lrs_d, lag_d


def _primary_weight_gather_bytes(x: _Step) -> float:
    """Bytes a parameter takes in the distributed optimizer's parameter all-gather under FP8 primary weights
    (fp8_param_allgather, FP8 training): 1, the FP8 data, under per-tensor scaling; 2 under MXFP8, whose weights
    Megatron-Core gathers in BF16: an MXFP8 parameter's bucket maps param_data onto the shared gradient buffer
    (bf16, or half an fp32 one viewed as bf16), the optimizer copies its fp32 master shard there
    (_copy_main_params_to_param_buffer), the all-gather runs on it and _post_param_sync casts each gathered weight
    to MXFP8 (copy_tensors_to_quantized_params; param_and_grad_buffer.py _ParamAndGradBuffer shared_buffer,
    distrib_optimizer.py, at Megatron-LM 26.04-alpha.rc2: the shared buffer is made for any MXFP8 parameter under
    the distributed optimizer, with or without reuse_grad_buf_for_mxfp8_param_ag). That cast of every local weight
    once a step is the FP8 weight cast _fp8_weight_casts already charges."""
    if x.training.precision != "fp8":
        return 1.0
    recipe = x.k.fp8_recipe(x.system.accelerator, x.training.fp8_recipe)["name"]
    return 2.0 if recipe == "mxfp8" else 1.0


def _dp_comm_zero3(x: _Step, g: _Grads, mb: _MicroBatch, bucket_frac: np.ndarray,
                   fwd_s: Any) -> tuple[np.ndarray, np.ndarray]:
    """(exposed, serial) ZeRO-3 / FSDP seconds a step. Exposed: per micro-batch 2 all-gathers + 1 reduce-scatter of
    the shard group's parameters (`_zero3_collectives`), prefetched one unit ahead (under pipelining,
    `_fsdp_once_per_step`; a reentrant checkpoint around each FSDP unit, `_reentrant_outer_exposed`, over the decoder
    layers' forward `fwd_s`); hybrid shard adds one all-reduce of the shards across replicas. Serial: the same
    collectives with none hidden behind compute (the prefetched chain in full: collectives, ring latencies and
    DeepSpeed's reduce-stream copies, no launch waits since nothing runs beside them; the on-demand path's own
    exposure, serial but for its overlapped reduce-scatter): a diagnostic the DeepSpeed held-out benchmarks print
    against the rows (docs/known-gaps.md 226), not a term of the step."""
    system, fw = x.system, x.fw
    n_sh, n_esh = shard_groups(x.a)
    k_sh = comm.ranks_per_domain(n_sh, x.t, x.domain)
    if not np.all(fw.zero3_nic_aggregation):  # inter-node part limited by one NIC per GPU
        k_sh = _when(fw.zero3_nic_aggregation, k_sh, np.where(n_sh > k_sh, 1.0, k_sh))
    p_local = g.local_dense + g.local_expert
    gb = fw.grad_reduce_bytes
    # FP8 all-gather (torchtitan enable_fsdp_float8_all_gather): the linear weights travel as 1-byte FP8
    ag_b = np.where(np.asarray(fw.fp8_param_allgather) & (x.training.precision == "fp8"), 1.0, x.act)
    ag_b = _quantised_gather_bytes(x, ag_b)
    z3_ag, z3_rs = _zero3_collectives(x, g, (n_sh, k_sh), _expert_shard(x, n_esh), ag_b)
    z3_rs = z3_rs + _fsdp1_predivide_s(x, g, n_sh)  # in the reduce-scatter's chain on the post-backward stream
    if np.any(np.asarray(fw.zero3_bucket_params) > 0):
        bucket = np.asarray(fw.zero3_bucket_params, dtype=float)
        n_coll = np.where(bucket > 0, np.maximum(np.ceil(p_local / np.where(bucket > 0, bucket, 1.0)), 1.0),
                          mb.n_stage)
    else:  # one collective per decoder layer, or per module where the style fetches module by module (DeepSpeed)
        units = np.asarray(fw.zero3_fetch_units_per_layer, dtype=float)
        if np.any(fw.zero3_deepspeed_fetch):
            units = np.where(fw.zero3_deepspeed_fetch, _deepspeed_gathers_per_layer(x), units)
        n_coll = np.where(units > 0, units, 1.0) * mb.n_stage
    lat = (n_sh - 1.0) * np.where(n_sh > k_sh, system.inter_node_latency_s, system.intra_node_latency_s)
    # under pipelining FSDP2 keeps the parameters unsharded after forward (torchtitan and AutoModel:
    # reshard_after_forward = not pp_enabled), so a micro-batch that syncs gathers once, in its forward; DeepSpeed
    # gathers a share of each layer a third time under full recompute (the prefetched path; not the 2021 one)
    gathers, held = _fsdp_gathers(x)
    ag_passes = gathers + _zero3_regathered_share(x) * x.full_share
    z3_mb = ag_passes * z3_ag + z3_rs + (ag_passes + 1.0) * np.maximum(n_coll - 1.0, 0.0) * lat
    z3_mb = z3_mb + _deepspeed_grad_copies(x, g)  # DeepSpeed's passes on its reduce stream, in the same chain
    # the on-demand path (DeepSpeed v0.3-v0.5) keeps two passes: its one-NIC bound was checked on Narayanan 2021's
    # rows without the re-gather (docs/known-gaps.md 51, item f)
    z3_demand = _zero3_on_demand(x, g, mb, z3_ag, z3_rs, lat, p_local)
    if np.any(fw.zero3_prefetch):
        first = _fsdp_call_edges(x, z3_ag, z3_rs, n_coll) + _deepspeed_micro_batch_edges(x, g, z3_ag, z3_rs, n_coll, lat)
        wait = _collective_launch_wait(x, (ag_passes + 1.0) * n_coll, fwd_s / np.maximum(mb.n_stage, 1.0))
        z3_pre = _prefetched(x, z3_mb, mb.compute, first, wait)
        experts = _deepspeed_expert_gathers(x, g, mb, _expert_shard(x, n_esh), ag_b, ag_passes)
        if experts is not None:  # DeepSpeed's own schedule for transformers' routed experts
            on, e_comm, e_hides, e_exposed = experts
            z3_pre = np.where(on, _prefetched(x, z3_mb - e_comm, mb.compute - e_hides, first, wait) + e_exposed, z3_pre)
        z3_exposed_mb = _when(fw.zero3_prefetch, z3_pre, z3_demand)
    else:
        z3_exposed_mb = z3_demand
    outer = (np.asarray(fw.checkpoint_impl) == "reentrant_outer") & (x.p <= 1)
    if np.any(outer):
        z3_outer = _reentrant_outer_exposed(x, z3_ag, z3_rs, n_coll, lat, fwd_s, fwd_s / np.maximum(mb.n_stage, 1.0))
        share = x.full_share  # the layers whose forward re-runs in the backward
        z3_exposed_mb = np.where(outer, share * z3_outer + (1.0 - share) * z3_exposed_mb, z3_exposed_mb)
    # held across the step (fsdp_reshard step): without pipelining the first micro-batch gathers and the last
    # reduce-scatters inside its own backward (FSDP2's hooks), one micro-batch's collectives a step; under
    # pipelining the stage's post-backward runs after the last backward (`_fsdp_once_per_step`)
    z3_step = np.where(held, 1.0, x.m) * z3_exposed_mb
    z3_serial = np.where(held, 1.0, x.m) * np.where(np.asarray(fw.zero3_prefetch, bool), z3_mb, z3_demand)
    if np.any(held & (x.p > 1)):
        once = _fsdp_once_per_step(x, g, mb, z3_ag, z3_rs, n_coll, lat)
        z3_step = np.where(held & (x.p > 1), once, z3_step)
        z3_serial = np.where(held & (x.p > 1), once, z3_serial)
    # hybrid shard: replicas all-reduce the sharded gradients once per step
    n_rep = np.maximum(g.n_dp / n_sh, 1.0)
    hsdp = comm.all_reduce_time(p_local * g.train_frac * gb / n_sh, n_rep, 1.0, x.link(n_rep, x.t * n_sh), system,
                                m=comm.zone_members(n_rep, x.t * n_sh, system))
    # a one-rank shard group is not wrapped at all (torchtitan ParallelDims.fsdp_enabled: dp_shard x cp > 1; NeMo
    # AutoModel FSDP2Manager.parallelize returns the model unwrapped at world size 1), so it copies nothing
    copies = np.where(n_sh > 1, _fsdp2_copies(x, p_local, ag_b, g.train_frac * x.act, g.train_frac * gb), 0.0)
    copies = copies + _fsdp1_view_grad_cat_s(x, g, n_sh)
    rest = np.maximum(hsdp - g.window, bucket_frac * hsdp) + copies
    return z3_step + rest, z3_serial + rest


def _deepspeed_expert_gathers(x: _Step, g: _Grads, mb: _MicroBatch, expert: tuple, ag_bytes, ag_passes) -> tuple | None:
    """DeepSpeed ZeRO-3's all-gathers of transformers' routed experts per micro-batch (PerfStyle.zero3_expert_fetch,
    zero 3 on one pipeline stage): (where it applies, their seconds inside the style's per-unit schedule, the compute
    that hides them, their exposed seconds); None where no strategy applies it. deepspeedai/DeepSpeed
    partitioned_param_coordinator.py (00a31c9) fetch_sub_module gathers the parameters of the module whose hook runs,
    one coalesced all-gather a call, then prefetches the next parameters of the recorded trace up to
    stage3_prefetch_bucket_size (5e7 elements, zero/config.py), at least one whole parameter: one module ahead where
    a module is larger (an expert linear of Mixtral-8x7B holds 4096 x 14336 = 5.9e7).
    - per_expert (4.x: the experts an nn.ModuleList of gated MLPs, each linear a module; every expert runs every step
      at these token counts, so the trace holds): 3 calls an expert (2 without a gate) and MoE layer per gathered
      pass, each paying the shard ring's latency, the gather of one expert linear issued behind the compute of the one
      before: the chain hides behind the experts' own forward, recompute and backward (2 x forward) only.
    - block (set_z3_leaf_modules on the MoE block, or v5's packed experts module): one call a MoE layer per pass,
      issued by the block's own hook (the bucket takes at most one parameter of it a module earlier, behind the
      router's GEMM): exposed whole.
    The experts' bytes are the style's (`_zero3_collectives`: every routed expert over the expert shard group); only
    the gathers move (gradients reduce in reduce_bucket_size buckets, 5e8 elements, not per module)."""
    mode = x.expert_fetch
    if not x.model.is_moe or not np.any(mode != ""):
        return None
    n_esh, k_esh, m_esh = expert
    on = (mode != "") & (x.zero >= 3) & (x.p <= 1) & (g.local_expert > 0)
    ag_e = comm.all_gather_time(g.local_expert * ag_bytes, n_esh, k_esh, x.link(n_esh, x.et * x.e), x.system, m_esh)
    lat = (n_esh - 1.0) * np.where(n_esh > k_esh, x.system.inter_node_latency_s, x.system.intra_node_latency_s)
    moe_layers = mb.n_stage * x.model.moe_layer_count / x.model.layers
    local, fwd_s = _routed_expert_forward(x)
    linears = 3.0 if x.model.mlp == "swiglu" else 2.0
    calls = moe_layers * np.where(mode == "per_expert", local * linears, 1.0)
    e_comm = ag_passes * ag_e
    gathers = e_comm + ag_passes * calls * lat
    hides = moe_layers * local * fwd_s * (3.0 + x.moe_rerun)
    if x.training.pad_share > 0.0:  # pads routed alike: each expert hides only the gathers behind its own GEMMs
        hides = _unbalanced_expert_hides(x, gathers / local, moe_layers * (3.0 + x.moe_rerun))
    hides = np.where(mode == "per_expert", hides, 0.0)
    exposed = np.where(mode == "per_expert", _prefetched(x, gathers, hides, 0.0), gathers)
    return on, np.where(on, e_comm, 0.0), np.where(on, hides, 0.0), exposed


def _unbalanced_expert_hides(x: _Step, expert_gathers_s, passes) -> Any:
    """Seconds of the routed experts' GEMMs that hide DeepSpeed's per-expert gather chain (zero3_expert_fetch
    per_expert) when the experts' token counts differ (`_expert_token_split`): `passes` forward-equivalents of each
    expert a micro-batch (forward, recompute, backward), each expert capped at the gathers its GEMMs are followed by.
    fetch_sub_module (partitioned_param_coordinator.py, deepspeedai/DeepSpeed 00a31c9) prefetches, at each module's
    hook, the next parameters of the trace until stage3_prefetch_bucket_size elements, one whole parameter at least:
    ceil(bucket / linear) expert linears ahead (one for Mixtral-8x7B's 5.9e7 against 5e7), so a linear's GEMM hides
    that many gathers at most and an expert's GEMMs at most that many times its own share of the chain
    (`expert_gathers_s`: the chain's seconds / local experts); a light expert's short GEMMs leave the gathers behind
    them exposed, a heavy one's long GEMMs hide no more. With equal experts this is the pooled min(chain, compute)."""
    shapes = _shapes(x.model)
    moe = _moe_passes(x)
    bucket = deepspeed_zero3_buckets(x.fw.zero3_bucket_sizes, x.model.hidden)[0]
    linear = x.model.expert_width * shapes.expert_ffn / x.et
    ahead = np.maximum(np.ceil(np.asarray(bucket, float) / linear), 1.0)
    hides = 0.0
    for experts, tokens in _expert_token_split(x):
        fwd_s = compute.expert_forward_time(shapes, tokens, x.et, x.r, moe[1] if moe else 1.0)
        hides = hides + experts * np.minimum(passes * fwd_s, ahead * expert_gathers_s)
    return hides


def _expert_token_split(x: _Step) -> tuple[tuple[Any, Any], ...]:
    """((local experts, tokens each a micro-batch), ...) on the busiest GPU: compute.expert_token_split of the
    balanced count `_routed_expert_forward` times (Training.pad_share: the pads' top-k take every pad position)."""
    shapes = _shapes(x.model)
    local = np.maximum(shapes.experts / x.e, 1.0)
    per_expert = x.tok * shapes.topk / local * x.moe_load
    return compute.expert_token_split(shapes, per_expert, local, float(x.training.pad_share))


def zero3_expert_fetch_default(mode: Any, expert_loop: Any, leaf_families: Any, family: str) -> tuple[Any, Any]:
    """(fetch, why) for a style's zero3_expert_fetch `mode` ("auto" resolved; "" or a stated fetch kept), elementwise:
    block where DeepSpeed's engine makes the model family's MoE block a ZeRO-3 leaf by default (why "leaf_default":
    DeepSpeed >= 0.18.0, 2025-10-07, runtime/zero/leaf_module_config.py DEFAULT_LEAF_MODULE_CLASSES, applied to every
    model at engine.py _configure_distributed_model -> utils/z3_leaf_module.py apply_zero_leaf_module_config, before
    the ZeRO-3 hooks; PR 7604, deepspeedai/DeepSpeed 7d9a2f2), else per_expert under transformers 4.x's eager loop
    (why "eager_experts": each expert linear its own module) and block under v5's packed experts ("packed_experts").
    The step time and the estimate's JSON read it."""
    mode = np.asarray(mode)
    leaf = _name_listed(family, leaf_families)
    loop = np.asarray(expert_loop, bool)
    why = np.where(leaf, "leaf_default", np.where(loop, "eager_experts", "packed_experts"))
    auto = mode == "auto"
    return (np.where(auto, np.where(leaf | ~loop, "block", "per_expert"), mode), np.where(auto, why, ""))


def _reentrant_outer_exposed(x: _Step, z3_ag, z3_rs, n_coll, lat, fwd_s, layer_fwd_s) -> np.ndarray:
    """Exposed seconds per micro-batch of FSDP's collectives when a reentrant checkpoint wraps each FSDP unit
    (checkpoint_impl reentrant_outer) and every layer is recomputed. FSDP1, torch/distributed/fsdp/_runtime_utils.py
    (ROCm/pytorch 3539e1d, torch 2.6-era): the first forward runs under no_grad inside CheckpointFunction, so
    _register_pre_backward_hooks returns before it sets _needs_pre_backward_unshard (the post-backward callback left it
    False); in the backward CheckpointFunction.backward re-runs the unit's forward: _pre_forward finds the handle IDLE,
    not BACKWARD_PRE, and unshards it, _post_forward_reshard frees it (FULL_SHARD, not the root) and registers the
    pre-backward hook, which unshards it a third time; _get_handle_to_prefetch skips the next unit, whose
    _needs_pre_backward_unshard is False until its own recompute, so the backward prefetches nothing. The process
    group's collectives run on one NCCL stream in issue order: a unit's recompute all-gather queues behind the
    previous unit's reduce-scatter, which waits for that unit's backward; the backward's all-gather, issued right
    behind it, runs beside the recompute. So per unit rs + ag + max(ag - f, 0) exposed in the backward (f = the unit's
    recompute = its forward), overlap_interference on the hidden part; the forward's gathers run one unit ahead (the
    rate limiter, limit_all_gathers, lets the next issue once the unit before the current one is freed), as
    `_prefetched` behind `fwd_s`, each gather's kernel waiting for SMs behind the running GEMM
    (`_collective_launch_wait`, a layer's forward `layer_fwd_s`). Each of the 3 all-gather passes and the
    reduce-scatter pays its ring latency. Both overlaps rest on the CPU running ahead of the GPU; where a host sync
    in every layer's forward stops it (`_fsdp_run_ahead_lost`), that share of the units runs all 4 passes exposed."""
    lat_pass = np.maximum(n_coll - 1.0, 0.0) * lat
    wait = _collective_launch_wait(x, n_coll, layer_fwd_s)
    forward = _prefetched(x, z3_ag + lat_pass, fwd_s, z3_ag / np.maximum(n_coll, 1.0), wait)
    beside = np.minimum(z3_ag, fwd_s)  # the backward's gathers that run beside the recompute
    backward = z3_rs + 2.0 * z3_ag - beside + 3.0 * lat_pass + x.k.overlap_interference * beside
    lost = _fsdp_run_ahead_lost(x)
    serial = z3_rs + 3.0 * z3_ag + 4.0 * lat_pass + _fsdp1_unit_hooks_s(x, n_coll)
    return (1.0 - lost) * (forward + backward) + lost * serial


def _fsdp1_unit_hooks_s(x: _Step, n_coll) -> Any:
    """Host seconds a micro-batch of FSDP1's forward hooks on the `n_coll` units of a pass, where they run with the GPU
    idle: behind an MoE layer of transformers' eager loop (`_fsdp_run_ahead_lost`, which weighs this) the CPU waits at
    the unit's last expert's sync for the GPU to finish, then runs the unit's _post_forward and the next unit's
    _pre_forward (perf_constants.yaml lora.fsdp1_unit_calls forward: 26 calls, counted from
    torch/distributed/fsdp/_runtime_utils.py) before that unit's all-gather and first kernel are issued, in the forward
    and again in the recompute (the reentrant checkpoint around each unit re-runs its hooks), each at the launch-bound
    eager op; after the recompute's last sync the unit's _pre_backward_hook too (fsdp1_unit_calls pre_backward: its
    unshard, wait_stream and prepare_gradient_for_backward) before the backward's all-gather and first kernel
    (docs/known-gaps.md 283 (e)). The post-backward hooks run in autograd's engine with no sync before them, beside
    the GPU's backward: left out. 0 off FSDP1 (DeepSpeed's engine times its own hooks, `_deepspeed_hook_excess`).
    docs/known-gaps.md 273 (e)."""
    on = _on_fsdp1(x, shard_groups(x.a)[0])
    if not np.any(on):
        return 0.0
    calls = x.k.raw["lora"]["fsdp1_unit_calls"]
    per_unit = float(calls["forward"]) * (1.0 + x.full_share) + float(calls["pre_backward"]) * x.full_share
    return np.where(on, n_coll * per_unit * _launch_op_s(x.system.vendor), 0.0)


def _fsdp_run_ahead_lost(x: _Step) -> Any:
    """Share of FSDP1 units (reentrant checkpoint around each) whose all-gathers cannot start ahead of their use: those
    behind an MoE layer of transformers' eager expert loop (PerfStyle.moe_expert_loop, a 4.x release). FSDP1 without
    forward_prefetch issues a unit's forward all-gather from that unit's own pre-forward hook
    (torch/distributed/fsdp/_runtime_utils.py _pre_forward_unshard: _unshard when not prefetched, then
    _prefetch_handle(FORWARD), a no-op unless forward_prefetch), and the backward's from the pre-backward hook that the
    recompute's post-forward registers; each overlaps the GPU's compute only as far as the CPU has run ahead of it.
    MixtralSparseMoeBlock.forward (transformers 4.51) copies a count to the host for every expert (the ModuleList index's
    .item(), torch.where's nonzero), so when the last expert of a layer returns the GPU holds at most that expert's
    kernels: the next unit's gather, and the backward's gather after the recompute, run after the compute they were to
    hide behind. The MoE layers' share of the layers; 0 for a dense model or a grouped experts call."""
    loop = np.asarray(x.fw.moe_expert_loop, bool)
    if not x.model.is_moe or not np.any(loop):
        return 0.0
    return np.where(loop, x.model.moe_layer_count / x.model.layers, 0.0)


def _zero3_regathered_share(x: _Step) -> Any:
    """Share of a decoder layer's parameters DeepSpeed ZeRO-3 gathers again for the backward after gathering them
    for the recompute (full recompute; PerfStyle.zero3_max_reuse_distance_params > 0). Each module's parameters
    are released after its forward unless they recur within stage3_max_reuse_distance elements of the trace
    (partitioned_param_coordinator.py __params_to_release, v0.6+; stage3.py _keep_for_later, v0.3): between a
    module's recompute and its backward the trace runs the rest of the layer twice (its recompute, then its
    backward), so a module is kept when the modules after it in the layer hold under half the distance, counted
    module by module (model_states.deepspeed_zero3_kept_params, which the memory estimate holds live; the stack's
    projections fused or apart); norms and biases persist (ds_persist) and are never gathered again. Per TP rank;
    averaged over the layers. 0 on other styles."""
    reuse = np.asarray(x.fw.zero3_max_reuse_distance_params, dtype=float)
    if not np.any(reuse > 0.0):
        return 0.0
    m = x.model
    layer = sum(float(m.layer_params(i).total) for i in range(m.layers)) / max(m.layers, 1) / x.t
    split = bool(np.any(np.asarray(x.fw.split_projections, bool) & (reuse > 0.0)))
    kept = deepspeed_zero3_kept_params(m, x.t, layer, reuse, split)
    weights = deepspeed_zero3_kept_params(m, x.t, layer, np.inf, split)  # norms and biases persist: never released
    return np.where(reuse > 0.0, np.maximum(weights - kept, 0.0) / np.maximum(layer, 1.0), 0.0)


def _deepspeed_gathers_per_layer(x: _Step) -> Any:
    """All-gathers per decoder layer and pass as DeepSpeed's ZeRO-3 coordinator issues them (v0.16.6,
    partitioned_param_coordinator.py fetch_sub_module): each module fetch prefetches the next parameters of the trace,
    whole ones, until stage3_prefetch_bucket_size elements, as one coalesced all-gather (__all_gather_params ->
    all_gather_coalesced); parameters of at most stage3_param_persistence_threshold elements stay gathered
    (partition_parameters.py ds_persist: norms, biases, small routers). So a layer's weights, in module order
    (model_states.deepspeed_layer_modules), fall into greedy groups closed once they reach the bucket. The routed
    experts are left out: how DeepSpeed fetches them depends on how the MoE block is built (zero3moe's
    strategy.zero3_expert_fetch; docs/known-gaps.md 74 (a)). Averaged over the layers; per TP rank (x.t)."""
    fw, m = x.fw, x.model
    on = np.asarray(fw.zero3_deepspeed_fetch, bool)
    bucket, persist, _ = deepspeed_zero3_buckets(fw.zero3_bucket_sizes, m.hidden)
    split = bool(np.any(np.asarray(fw.split_projections, bool) & on))  # the styles that run it (hf) split them
    t = np.asarray(x.t, dtype=float)
    kinds = collections.Counter(m.layer_params(i).is_moe for i in range(m.layers))
    total = 0.0
    for is_moe, n in kinds.items():
        calls = 0.0
        acc = np.zeros_like(t)
        for size in (s for s, routed in deepspeed_layer_modules(m, is_moe, split) if not routed):
            per_rank = size / t
            acc = acc + np.where(per_rank > persist, per_rank, 0.0)
            closed = acc >= bucket
            calls = calls + closed
            acc = np.where(closed, 0.0, acc)
        total = total + n * (calls + (acc > 0))
    return total / max(m.layers, 1)


def _quantised_gather_bytes(x: _Step, ag_bytes: Any) -> Any:
    """Bytes per parameter a ZeRO-3 / FSDP all-gather moves and copies out. QLoRA's frozen base is sharded and
    gathered in its stored form: the decoder's GEMM weights as NF4 data plus their block constants (model_states.
    frozen_base_bytes: 0.5 + 0.016 B), the rest (embeddings, norms, LM head) at `ag_bytes` -- torchao's NF4Tensor
    (torchtune QLoRA under FSDP2) gathers quantized_data, quantized_scalers and quantization_factor and rebuilds the
    NF4 tensor after the gather (nf4tensor.py fsdp_pre_all_gather / fsdp_post_all_gather), bitsandbytes' Params4bit
    under FSDP / ZeRO-3 travels as its packed storage (bnb_4bit_quant_storage). One figure per parameter, averaged
    over the model's parameters. Other methods: `ag_bytes`."""
    if x.training.method != "qlora":
        return ag_bytes
    nf4, _, constants = frozen_base_bytes(x.training, x.nf4_double_quant)
    total, expert = _param_split(x.model)
    lf = layer_flops(x.model)
    quantised = min((lf.gemm() - lf.experts) / 2.0 + expert, total)
    return (quantised * (nf4 + constants) + (total - quantised) * np.asarray(ag_bytes, float)) / total


def _zero3_collectives(x: _Step, g: _Grads, dense: tuple, expert: tuple, ag_bytes) -> tuple[np.ndarray, np.ndarray]:
    """(all-gather, reduce-scatter) seconds of one pass over a GPU's parameters: the dense ones over the shard group
    (`dense`: ranks, ranks per domain), the routed experts over the expert shard group (`expert`: `_expert_shard`),
    as the memory estimate shards them (validate.shard_groups); `ag_bytes` per gathered parameter, the style's
    reduce dtype per gradient."""
    system, gb = x.system, x.fw.grad_reduce_bytes
    (n_sh, k_sh), (n_esh, k_esh, m_esh) = dense, expert
    r, r_e = x.link(n_sh, x.t), x.link(n_esh, x.et * x.e)  # the shard group, the expert shard group
    m_sh = comm.zone_members(n_sh, x.t, system)
    moe = g.local_expert > 0
    ag = comm.all_gather_time(g.local_dense * ag_bytes, n_sh, k_sh, r, system, m_sh) + np.where(
        moe, comm.all_gather_time(g.local_expert * ag_bytes, n_esh, k_esh, r_e, system, m_esh), 0.0)
    rs = comm.reduce_scatter_time(g.local_dense * g.train_frac * gb, n_sh, k_sh, r, system, m_sh) + np.where(
        moe, comm.reduce_scatter_time(g.local_expert * g.train_frac * gb, n_esh, k_esh, r_e, system, m_esh), 0.0)
    return ag, rs


def _expert_shard(x: _Step, n_esh) -> tuple[Any, Any, Any]:
    """(ranks, ranks per domain, ranks per zone) of the expert shard group of `n_esh` ranks (validate.shard_groups),
    at rank stride expert TP x ep; one rank, so no traffic, where EP already covers the shard group (AutoModel then leaves
    the experts out of FSDP: components/moe/parallelizer.py apply_fsdp ignored_params)."""
    return (n_esh, comm.ranks_per_domain(n_esh, x.et * x.e, x.domain),
            comm.zone_members(n_esh, x.et * x.e, x.system))


def _fsdp_call_edges(x: _Step, z3_ag, z3_rs, n_coll) -> np.ndarray:
    """Seconds of a micro-batch's FSDP collectives no compute hides: the first unit's all-gather, and under pipelining
    with a sync every micro-batch (PerfStyle.pp_fsdp_once_per_step false) each chunk's forward and backward are calls of
    their own: a forward gathers its first unit before any compute (FSDP2 prefetches within a call only), and a
    backward waits for its reduce-scatters before it returns (FSDPState._root_post_backward_final_callback: with
    is_last_backward at its default every state's _finalize_backward waits on its post-reduce event), so its last
    unit's reduce-scatter is exposed (PerfStyle.fsdp_call_waits: the FSDP2 styles); v chunks (virtual stages) each."""
    unit_ag, unit_rs = z3_ag / np.maximum(n_coll, 1.0), z3_rs / np.maximum(n_coll, 1.0)
    waits = np.asarray(x.fw.fsdp_call_waits, bool)
    per_call = (x.p > 1) & ~np.asarray(x.fw.pp_fsdp_once_per_step, bool)
    return np.where(per_call, x.v * (unit_ag + np.where(waits, unit_rs, 0.0)), unit_ag + np.where(waits, unit_rs, 0.0))


def _deepspeed_layer_hook_calls(x: _Step, is_moe: bool, per_expert: Any, split: bool) -> tuple[Any, Any]:
    """(host calls, trained parameters) of one decoder layer a micro-batch under DeepSpeed ZeRO-3
    (perf_constants.yaml zero3_hooks): its modules' hooks by what each owns (a gathered weight, only persistent ones,
    none) at every forward pass (the recompute's too, full_share) and the backward, and each trained parameter's
    gradient hook and reduce-scatter share (grad_calls_per_param). The weight-owning modules as
    model_states.deepspeed_layer_modules lists them (projections apart as transformers builds them, `split`; fused
    QKV and MLP-in as Megatron's layers and nn.MultiheadAttention's in_proj hold them otherwise), a weight gathered
    when its share of a TP rank passes stage3_param_persistence_threshold; the routed experts module by module under
    the eager loop (`per_expert`), else one gathered MoE block whose experts' parameters still take their gradient
    hooks (utils/z3_leaf_module: a leaf's children get no hooks)."""
    m, c = x.model, x.k.raw["zero3_hooks"]
    calls, fwd = c["module_calls"], 1.0 + x.full_share
    persist = deepspeed_zero3_buckets(x.fw.zero3_bucket_sizes, m.hidden)[1]
    modules = deepspeed_layer_modules(m, is_moe, split)
    dense = [size for size, routed in modules if not routed]
    big = sum(np.asarray(size / x.t > persist, float) for size in dense)
    routed = float(sum(routed for _, routed in modules))
    local = max(float(m.experts), 1.0) / np.maximum(x.e, 1.0) if is_moe else 0.0
    experts = routed * local / max(float(m.experts), 1.0) if is_moe else 0.0  # routed linears on this rank
    gathered = big + np.where(per_expert, experts, 1.0 if is_moe else 0.0)
    persistent = float(c["norms_per_layer"]) + len(dense) - big
    parameterless = float(c["layer_parameterless"]) + (
        np.where(per_expert, c["routed_expert_parameterless"] * local, 0.0)
        + (c["shared_expert_parameterless"] if m.shared_expert_ffn else 0.0) if is_moe else c["dense_act_fn"])
    norm_tensors = 2.0 if m.norm == "layernorm" else 1.0  # LayerNorm's weight and bias, RMSNorm's weight
    params = float(c["norms_per_layer"]) * norm_tensors + len(dense) + experts + _layer_bias_tensors(
        m, is_moe, split, len(dense), experts)
    return (gathered * (calls["gathered"]["forward"] * fwd + calls["gathered"]["backward"])
            + persistent * (calls["persistent"]["forward"] * fwd + calls["persistent"]["backward"])
            + parameterless * (calls["parameterless"]["forward"] * fwd + calls["parameterless"]["backward"])
            + params * c["grad_calls_per_param"]), params


def _layer_bias_tensors(m: ModelArch, is_moe: bool, split: bool, n_dense: int, experts: Any) -> Any:
    """Bias tensors of one decoder layer's linears as model_states.deepspeed_layer_modules lists them (`n_dense`
    non-routed modules, `experts` routed linears on this rank): q / k / v's (three where `split`, one fused) with
    qkv_bias, the attention output's with out_bias, each MLP and expert linear's with mlp_bias (the router has none).
    Each is a parameter of its own, so DeepSpeed hooks its gradient (docs/known-gaps.md 296 (a)). 0 for MLA and a
    hybrid model's layers, which that list holds as one module."""
    if m.layer_pattern or m.attention == "mla":
        return 0.0
    attn = (3.0 if split else 1.0) * m.qkv_bias + m.out_bias
    mlp = n_dense - (4 if split else 2) - (1 if is_moe else 0)  # the MLP's (the shared expert's) linears
    return attn + m.mlp_bias * (mlp + experts)


def _deepspeed_hook_calls(x: _Step, n_layers: Any) -> tuple[Any, Any]:
    """(host calls, trained parameters) a micro-batch of DeepSpeed ZeRO-3's hooks over `n_layers` decoder layers (the
    paced stage's) and the modules outside them (zero3_hooks end_modules), where a job runs ZeRO-3 on DeepSpeed's
    engine (PerfStyle.zero3_module_hooks: the deepspeed style at zero 3, the hf style at zero 3 without fsdp), its
    layers' modules as the style builds them (split_projections); 0 elsewhere (FSDP's hooks are per unit, not per
    module). docs/known-gaps.md 296 (a)."""
    on = np.asarray(x.fw.zero3_module_hooks, bool) & (np.asarray(x.zero) >= 3)
    if not np.any(on):
        return 0.0, 0.0
    m, c = x.model, x.k.raw["zero3_hooks"]
    per_expert = x.expert_fetch == "per_expert"
    kinds = collections.Counter(m.layer_params(i).is_moe for i in range(m.layers))
    split = np.asarray(x.fw.split_projections, bool)
    layer_calls, layer_params = 0.0, 0.0
    for is_moe, n in kinds.items():
        (c_split, p_split), (c_fused, p_fused) = (_deepspeed_layer_hook_calls(x, is_moe, per_expert, s)
                                                  for s in (True, False))
        calls, params = np.where(split, c_split, c_fused), np.where(split, p_split, p_fused)
        layer_calls, layer_params = layer_calls + n * calls, layer_params + n * params
    module, ends = c["module_calls"], c["end_modules"]
    end_params = ends["gathered"] + ends["persistent"]
    end = sum(ends[kind] * (module[kind]["forward"] + module[kind]["backward"]) for kind in ends)
    end = end + end_params * c["grad_calls_per_param"]
    share = n_layers / max(m.layers, 1)
    return (np.where(on, layer_calls * share + end, 0.0), np.where(on, layer_params * share + end_params, 0.0))


def _deepspeed_hook_excess(x: _Step, n_layers: Any, gpu_mb: Any, loop: _ExpertLoop | None) -> tuple[Any, Any]:
    """(excess, host) seconds a micro-batch: by which DeepSpeed ZeRO-3's hooks hold the step past its GPU time
    `gpu_mb` (compute, the per-layer host floor's excess and the exposed ZeRO-3 chain a micro-batch). The hooks'
    calls (`_deepspeed_hook_calls`) at the launch-bound eager op (host_sync launch_bound_op_s), and for each trained
    parameter reduce_scatter_coalesced's work a rank of the shard group (a slice of the flattened gradient and a pass
    of its interleave loop, zero3_hooks rank_slice_s, measured), join the layers' own issue time
    (`_eager_layer_host_s`) as the micro-batch's host time; host and GPU time combine as the layer blend's soft
    maximum (host_gpu_blend_norm) over the whole micro-batch: each module's prefetch is issued from its hook, so the
    gathers run no further ahead than the host walks the modules, and every micro-batch starts and ends on an idle
    device (zero3_microbatch_syncs), so no run-ahead carries over; within it the host may run ahead of the compute,
    held only by the fetch events (two gathers back). Under transformers' eager expert loop the hooks on the experts'
    own modules run between the loop's host syncs, timed there with the experts' GPU forward (`_expert_loop_excess`):
    those calls and those segments' wall time stay out of the blend (`_zero3_expert_segments` of the step's pass
    `loop`, docs/known-gaps.md 283 (b)). The excess over `gpu_mb`, and the hooks' whole counted host time; both 0 where `_deepspeed_hook_calls`
    is (docs/known-gaps.md 262 (a), (c))."""
    calls, params = _deepspeed_hook_calls(x, n_layers)
    if not np.any(calls):
        return 0.0, 0.0
    rank_s = params * shard_groups(x.a)[0] * x.k.raw["zero3_hooks"]["rank_slice_s"]
    op_s = _launch_op_s(x.system.vendor)
    host = calls * op_s + rank_s + n_layers * _eager_layer_host_s(x)
    host = np.where(calls > 0, host, 0.0)
    # the eager loop's expert segments sit between host syncs: their hooks and wall time stay out of the blend
    seg_calls, seg_wall = _zero3_expert_segments(x, loop)
    host_rest = np.maximum(host - n_layers * seg_calls * op_s, 0.0)
    gpu_rest = np.maximum(gpu_mb - n_layers * seg_wall, 0.0)
    q = x.k.host_gpu_blend_norm
    blended = (gpu_rest**q + host_rest**q) ** (1.0 / q)
    return np.where(calls > 0, blended - gpu_rest, 0.0), host


def _deepspeed_grad_copies(x: _Step, g: _Grads) -> np.ndarray:
    """Seconds a micro-batch of the HBM passes DeepSpeed's ZeRO-3 engine (PerfStyle.zero3_grad_copies, the prefetched
    v0.6+ path, one pipeline stage) makes over the full gradients on its reduce stream before reduce-scattering them,
    a read and a write of the gradient dtype each (deepspeedai/DeepSpeed v0.16.6 stage3.py
    reduce_independent_p_g_buckets_and_remove_grads, __add_grad_to_ipg_bucket, __avg_scatter_grads;
    runtime/comm/coalesced_collectives.py reduce_scatter_coalesced): the copy into the flat reduce bucket (a gradient
    larger than reduce_bucket_size is reduced alone, in place, uncopied), the rank-by-rank interleave of a bucket of
    several tensors (torch.cat) and the in-place pre-divide (div_). Buckets close greedily in backward order
    (`_grad_bucket_passes`): a decoder layer's weights (model_states.deepspeed_layer_modules) in reverse, the middle
    of three layers counted; its norms and biases ride along at that average; the input embedding and an untied LM
    head at one pass pair where larger than the bucket; LoRA's small adapters share buckets (three pairs). The
    reduce-scatter waits for them on that stream, so `_dp_comm_zero3` adds them to the chain the prefetch hides,
    at the HBM streaming rate."""
    on = (np.asarray(x.fw.zero3_grad_copies, bool) & (x.zero >= 3) & np.asarray(x.fw.zero3_prefetch, bool)
          & (x.p <= 1))
    total = g.local_dense + g.local_expert
    if not np.any(on):
        return np.zeros_like(np.asarray(total, float))
    m, t = x.model, np.asarray(x.t, dtype=float)
    _, _, bucket = deepspeed_zero3_buckets(x.fw.zero3_bucket_sizes, m.hidden)
    split = bool(np.any(np.asarray(x.fw.split_projections, bool) & on))
    elems, passes = 0.0, 0.0
    for is_moe, n in collections.Counter(m.layer_params(i).is_moe for i in range(m.layers)).items():
        sizes = [size / t for size, _ in reversed(deepspeed_layer_modules(m, is_moe, split))]
        e, p = _grad_bucket_passes(sizes * 3, bucket, len(sizes), 2 * len(sizes))
        elems, passes = elems + n * e, passes + n * p
    layer_avg = passes / np.maximum(elems, 1.0)
    emb = m.vocab * m.hidden / t
    emb_elems = np.minimum(emb * (1.0 if m.tied_embeddings else 2.0), total)
    emb_avg = np.where(emb > bucket, 2.0, layer_avg)
    per_elem = (layer_avg * (total - emb_elems) + emb_avg * emb_elems) / np.maximum(total, 1.0)
    per_elem = np.where(g.train_frac < 1.0, 6.0, per_elem)
    nbytes = per_elem * total * g.train_frac * np.asarray(x.fw.grad_reduce_bytes, float)
    return np.where(on, nbytes / x.r.hbm_bytes_s, 0.0)


def _on_fsdp1(x: _Step, n_sh: Any, flag: Any = None) -> Any:
    """Where a strategy runs torch FSDP1 over a shard group of 2 or more ranks: the style's FSDP1 flag (`flag`, by
    default PerfStyle.fsdp1_grad_predivide; a job's fsdp_version sets both FSDP1 flags, _fsdp_version_option) on FSDP,
    not on DeepSpeed's engine (zero3_deepspeed_fetch)."""
    flag = x.fw.fsdp1_grad_predivide if flag is None else flag
    return np.asarray(flag, bool) & ~np.asarray(x.fw.zero3_deepspeed_fetch, bool) & (np.asarray(n_sh) > 1)


def _fsdp1_adapter_unit_excess(x: _Step) -> Any:
    """Host-bound seconds per average layer and micro-batch of FSDP1's hooks on LoRA's adapter units: under FSDP1
    FULL_SHARD / HYBRID_SHARD (zero 3) each adapter's A and B is its own unit (perf_constants.yaml
    lora.fsdp1_units_per_adapter), and each unit's forward (again in the recompute) and backward hooks run host calls
    (lora.fsdp1_unit_calls, counted from torch/distributed/fsdp/_runtime_utils.py) at the launch-bound eager op
    (host_sync launch_bound_op_s). FSDP1's rate limiter (limit_all_gathers, on by default in torch and accelerate:
    _unshard waits on the host, event.synchronize, for the free event of the unit freed two reshards back;
    _limiter_utils._FreeEventQueue, 2 in flight) holds the CPU within two freed units of the GPU, so between an adapted
    linear's two units the host cannot draw on run-ahead banked over the layer: per adapted linear and pass, its units'
    host time and the base linear's GEMM (the window the GPU has queued) combine as a soft maximum at the layer blend's
    sharpness (host_gpu_blend_norm), and the excess over the GEMM is exposed. Frozen base: its backward runs the dgrad
    GEMM only, the forward's size. 0 off FSDP1, below zero 3 (no free after forward, nothing enqueued), without
    adapters and under CUDA graphs (docs/known-gaps.md 244 (a))."""
    n_lin = lora_adapted_widths(x.model, x.training)[4]
    on = _on_fsdp1(x, shard_groups(x.a)[0]) & (np.asarray(x.zero) >= 3)
    if n_lin <= 0 or x.cuda_graphs != "none" or not np.any(on):
        return 0.0
    lc, q, op_s = x.k.raw["lora"], x.k.host_gpu_blend_norm, _launch_op_s(x.system.vendor)
    units, calls = float(lc["fsdp1_units_per_adapter"]), lc["fsdp1_unit_calls"]
    host_fwd, host_bwd = units * calls["forward"] * op_s, units * calls["backward"] * op_s
    out = 0.0
    for d_in, d_out, n in lora_dense_linears(x.model, x.training):
        gemm = compute.gemm_time(x.tok, d_out / x.t, d_in, x.r)
        fwd = (gemm**q + host_fwd**q) ** (1.0 / q) - gemm
        bwd = (gemm**q + host_bwd**q) ** (1.0 / q) - gemm
        out = out + n * (fwd * (1.0 + x.full_share) + bwd)
    return np.where(on, out, 0.0)


def _fsdp1_predivide_s(x: _Step, g: _Grads, n_sh) -> np.ndarray:
    """Seconds a micro-batch of torch FSDP1's in-place gradient pre-divide (PerfStyle.fsdp1_grad_predivide; a job on
    FSDP, not on DeepSpeed's engine): torch/distributed/fsdp/_runtime_utils.py _reduce_grad calls
    _div_if_needed(padded_unsharded_grad, state._gradient_predivide_factor) on the post-backward stream before
    reduce_scatter_tensor (at pytorch/pytorch 3ade90a, an older layout, the default reduce_scatter_hook's grad.div_ does
    it), a read and a write of each unit's unsharded gradient in the reduce dtype; the factor
    (DefaultState._get_gradient_predivide_factor: doubled from 1 while it divides the group size n and stays below
    n / factor; 8 at 32 ranks) is above 1 for every shard group of 2 or more ranks. The reduce-scatter waits for it,
    so it joins the reduce chain, at the HBM streaming rate; the post-divide is on the 1/n shard (not counted)."""
    on = _on_fsdp1(x, n_sh)
    if not np.any(on):
        return np.zeros_like(np.asarray(g.local_dense, float))
    nbytes = 2.0 * np.asarray(x.fw.grad_reduce_bytes, float) * (g.local_dense + g.local_expert) * g.train_frac
    return np.where(on, nbytes / x.r.hbm_bytes_s, 0.0)


def _fsdp1_view_grad_cat_s(x: _Step, g: _Grads, n_sh) -> np.ndarray:
    """Seconds a step of torch FSDP1's gradient concatenation (PerfStyle.fsdp1_view_grad_cat; a job on FSDP, not on
    DeepSpeed's engine), on the compute stream, every micro-batch. FlatParamHandle._use_unsharded_flat_param
    (torch/distributed/fsdp/_flat_param.py, read at pytorch/pytorch 01caf79e) sets the original parameters to
    Tensor views of the unsharded flat parameter in the forward and pre-backward "so that they are tracked by
    autograd" (torch.split, then view: _get_unflat_views_aligned / _unaligned), with use_orig_params or without. The
    backward's weight gradients therefore reach the flat parameter through SplitWithSizesBackward, whose formula is
    a cat of all of them (torch/csrc/autograd/FunctionsManual.cpp split_with_sizes_backward; checked on CPU,
    tests/estimate/test_fsdp1_view_grad_cat_torch.py): a read and a write of each unit's unsharded gradient in the
    compute dtype before AccumulateGrad and the post-backward hook, which issues the reduce-scatter. At the HBM
    streaming rate, on the trainable share (a frozen view whose flat parameter needs no gradient is not counted)."""
    on = _on_fsdp1(x, n_sh, x.fw.fsdp1_view_grad_cat)
    if not np.any(on):
        return np.zeros_like(np.asarray(g.local_dense, float))
    nbytes = x.m * 2.0 * x.act * (g.local_dense + g.local_expert) * g.train_frac
    return np.where(on, nbytes / x.r.hbm_bytes_s, 0.0)


def _grad_bucket_passes(sizes: list, bucket: Any, first: int, last: int) -> tuple[Any, Any]:
    """(elements, elements x HBM passes) of the gradients sizes[first:last] as DeepSpeed's ZeRO-3 buckets them in
    arrival order (stage3.py reduce_independent_p_g_buckets_and_remove_grads): a gradient that would overflow a
    non-empty bucket closes it first; one that fits is copied in; a bucket of several tensors is interleaved and
    pre-divided (6 passes an element), of one copied tensor pre-divided only (4), of one tensor larger than the
    bucket, never copied, pre-divided in place (2). Elementwise over `bucket` and the sizes (per TP rank)."""
    zero = np.zeros_like(np.asarray(bucket, float) + np.asarray(sizes[0], float))
    acc, cnt, mine, big, elems, passes = zero, zero, zero, zero > 0, 0.0, 0.0

    def pairs(cnt, big):
        return np.where(cnt >= 2, 6.0, np.where(big, 2.0, 4.0))

    for i, size in enumerate(sizes):
        full = (acc + size > bucket) & (acc > 0)
        passes = passes + np.where(full, mine * pairs(cnt, big), 0.0)
        acc, cnt, mine, big = (np.where(full, 0.0, acc), np.where(full, 0.0, cnt), np.where(full, 0.0, mine),
                               np.where(full, False, big))
        big = big | ((acc == 0) & (size > bucket))
        ours = first <= i < last
        acc, cnt, mine = acc + size, cnt + 1.0, mine + (size if ours else 0.0)
        elems = elems + (size if ours else 0.0)
    return elems, passes + mine * pairs(cnt, big)


def _deepspeed_micro_batch_edges(x: _Step, g: _Grads, z3_ag, z3_rs, n_coll, lat) -> np.ndarray:
    """Seconds DeepSpeed's ZeRO-3 engine (PerfStyle.zero3_microbatch_syncs, the prefetched v0.6+ path, one pipeline
    stage) adds at a micro-batch's edges beyond the style's first unit (deepspeedai/DeepSpeed v0.16.6). Both ends
    synchronize the device: engine.py forward calls tput_timer.start() and engine.step tput_timer.stop() when the
    engine got no training data (accelerate, the HF Trainer, Megatron-DeepSpeed), and utils/timer.py ThroughputTimer
    calls get_accelerator().synchronize() in both (DeepSpeedThroughputTimerConfig synchronized, default true since
    PR #5363; unconditional before); after every backward stage3.py independent_gradient_partition_epilogue reduces
    the bucket left and waits for it (reduce_and_partition_stream.synchronize()). So a micro-batch starts with its
    first fetch, the input embedding's (the model's first module), on an idle device, in place of the average unit
    `_fsdp_call_edges` charges, and ends with its last gradient's reduce-scatter exposed: the embedding's, the last
    gradient of the backward, reduced alone where it exceeds reduce_bucket_size. The embedding's share of the
    gathered and reduced parameters (vocab x hidden over TP), of `z3_ag` / `z3_rs`; one ring latency `lat`."""
    on = np.asarray(x.fw.zero3_microbatch_syncs, bool) & (x.zero >= 3) & (x.p <= 1)
    if not np.any(on):
        return np.zeros_like(np.asarray(z3_ag, float))
    share = np.minimum(x.model.vocab * x.model.hidden / x.t / np.maximum(g.local_dense + g.local_expert, 1.0), 1.0)
    first_extra = np.maximum(share * z3_ag - z3_ag / np.maximum(n_coll, 1.0), 0.0)
    return np.where(on, first_extra + share * z3_rs + lat, 0.0)


def _fsdp_gathers(x: _Step) -> tuple[Any, Any]:
    """(FSDP all-gathers a micro-batch of each unit, whether the parameters and gradients stay unsharded across the
    step's micro-batches: one all-gather and one reduce-scatter a step) from strategy.fsdp_reshard (names.
    FSDP_RESHARDS): forward 2 (reshard_after_forward True: gathered again for the backward), backward 1, step 1 and
    held; None = the style's: 2 without pipelining, 1 under it (torchtitan and AutoModel reshard_after_forward = not
    pp_enabled), held where the style's pipelined FSDP2 syncs once a step (PerfStyle.pp_fsdp_once_per_step)."""
    piped = np.asarray(x.p, float) > 1
    if x.fsdp_reshard is None:
        return np.where(piped, 1.0, 2.0), piped & np.asarray(x.fw.pp_fsdp_once_per_step, bool)
    passes = 2.0 if x.fsdp_reshard == "forward" else 1.0
    return np.full(piped.shape, passes), np.full(piped.shape, x.fsdp_reshard == "step")


def _prefetched(x: _Step, comm_s, compute_s, first_s, wait_s: Any = 0.0) -> np.ndarray:
    """Exposed seconds of `comm_s` of FSDP collectives prefetched one unit ahead behind `compute_s`: what the
    compute cannot hide of the chain (the collectives and `wait_s`, their kernels' waits for SMs:
    `_collective_launch_wait`), the first unit's all-gather (`first_s`), and overlap_interference of the hidden
    rest of the collectives (a kernel that waits occupies no SM)."""
    exposed = np.maximum(comm_s + wait_s - compute_s, 0.0) + first_s
    return exposed + x.k.overlap_interference * np.maximum(comm_s - exposed, 0.0)


def _layer_gemm_residual(x: _Step) -> float:
    """E[g^2] / 2E[g] of a decoder layer's GEMM kernels as a share of the layer's forward: the time a moment drawn at
    random from the GEMM stream has left of its GEMM. The layer's weight modules in run order
    (model_states.deepspeed_layer_modules; a routed expert's linear at its share of the tokens), each kernel's time
    taken proportional to its weights (the same tokens pass every module; the layer's other kernels spread over
    them): sum w_i^2 / 2 for shares w_i. A GPT layer (qkv 3, proj 1, fc1 4, fc2 4 h^2) gives 42 / 288 = 0.146; the
    backward's data- and weight-gradient GEMMs have the forward's sizes."""
    m = x.model
    split = bool(np.any(np.asarray(x.fw.split_projections, bool)))
    share = m.experts_per_token / max(m.experts, 1)
    residual = 0.0
    for is_moe, n in collections.Counter(m.layer_params(i).is_moe for i in range(m.layers)).items():
        w = np.array([p * (share if routed else 1.0) for p, routed in deepspeed_layer_modules(m, is_moe, split)])
        residual += n * float(((w / w.sum()) ** 2).sum()) / 2.0
    return residual / m.layers


def _collective_launch_wait(x: _Step, n_coll, layer_fwd_s) -> np.ndarray:
    """Seconds a micro-batch the prefetched ZeRO-3 / FSDP collectives' NCCL kernels add to their chain waiting for
    SMs behind the running GEMM (docs/known-gaps.md 144), where the style launches them at the compute stream's
    (default) priority (PerfStyle.collective_high_priority false). The block scheduler serves a grid's pending blocks
    before a later grid's of the same priority (CUDA's stream priorities are the documented way past them:
    cudaStreamCreateWithPriority; NCCL sets no launch priority, enqueue.cc v2.18-v2.30, so its kernel takes its
    stream's), so a collective that becomes ready behind the one before it, while a GEMM runs, starts as that GEMM
    drains: on a chain the compute cannot hide, at a random point of the GEMM stream, E[g^2] / 2E[g] of a layer's
    forward (`_layer_gemm_residual`) a collective. Where the chain is short the waits hide with it (`_prefetched`)."""
    on = ~np.asarray(x.fw.collective_high_priority, bool)
    if not np.any(on):
        return np.zeros_like(np.asarray(n_coll, float))
    return np.where(on, n_coll * _layer_gemm_residual(x) * layer_fwd_s, 0.0)


def _fsdp_once_per_step(x: _Step, g: _Grads, mb: _MicroBatch, z3_ag, z3_rs, n_coll, lat) -> np.ndarray:
    """Exposed FSDP2 seconds per step under pipelining (torch.distributed.pipelining): the stage's parameters stay
    unsharded from the first forward to the last backward (torchtitan reshard_after_forward = not pp_enabled;
    stage.py backward_maybe_with_nosync sets reshard_after_backward and requires_gradient_sync False on every
    backward but the last; AutoModel's patched_backward_maybe_with_nosync, components/moe/fsdp_mixin.py, on
    every one before the optimizer step), so one all-gather a step, prefetched behind the first micro-batch's
    forward, and one reduce-scatter, issued after the last backward by post_backward() and waited on
    (_root_post_backward_final_callback: the compute stream waits for the reduce-scatter event): exposed."""
    fwd = np.maximum(mb.compute - g.window, 0.0)
    ag = _prefetched(x, z3_ag + np.maximum(n_coll - 1.0, 0.0) * lat, fwd, z3_ag / np.maximum(n_coll, 1.0))
    return ag + z3_rs + np.maximum(n_coll - 1.0, 0.0) * lat


def _fsdp2_copies(x: _Step, p_local, ag_bytes, grad_bytes, reduce_bytes) -> np.ndarray:
    """Seconds per step of FSDP2's copies on the compute stream (PerfStyle.fsdp2_copies), at the HBM streaming rate:
    an all-gather's copy-out reads and writes the unsharded parameters (2 x `ag_bytes` per parameter); a
    reduce-scatter's copy-in reads the gradient and writes it in the reduce dtype (`grad_bytes` + `reduce_bytes`).
    Without pipelining, per micro-batch: an all-gather in forward and again in backward (reshard_after_forward)
    and one reduce-scatter. Under pipelining (torchtitan reshard_after_forward = not pp_enabled; the schedule turns
    gradient sync off until the last backward, torch.distributed.pipelining stage.py backward_maybe_with_nosync):
    one all-gather a step, each micro-batch's gradient upcast to the reduce dtype (the first) or added into the
    unsharded accumulator (the others: read it and the gradient, write it; FSDPParam.to_accumulated_grad_if_needed
    / accumulate_unsharded_grad_if_needed), and one copy-in of the accumulator. Under pipelining without the
    once-a-step sync (PerfStyle.pp_fsdp_once_per_step false): per micro-batch one all-gather (still no reshard after
    forward) and one reduce-scatter. strategy.fsdp_reshard states the gathers either way (`_fsdp_gathers`); its step
    takes the once-a-step copies without pipelining too, over more than one micro-batch (NeMo AutoModel)."""
    on = np.asarray(x.fw.fsdp2_copies, bool)
    if not np.any(on):
        return np.zeros_like(np.asarray(x.m, float))
    ag_passes, held = _fsdp_gathers(x)
    once = held & ((x.p > 1) | (x.m > 1))  # one micro-batch a step without pipelining: the per-micro-batch copies
    flat = x.m * (2.0 * ag_passes * ag_bytes + grad_bytes + reduce_bytes)
    upcast = np.where(reduce_bytes > grad_bytes, grad_bytes + reduce_bytes, 0.0)
    held_step = 2.0 * ag_bytes + upcast + (x.m - 1.0) * (2.0 * reduce_bytes + grad_bytes) + 2.0 * reduce_bytes
    return np.where(on, p_local * np.where(once, held_step, flat) / x.r.hbm_bytes_s, 0.0)


def _zero3_on_demand(x: _Step, g: _Grads, mb: _MicroBatch, z3_ag, z3_rs, lat, p_local) -> np.ndarray:
    """Exposed ZeRO-3 seconds per micro-batch without prefetch (PerfStyle.zero3_prefetch false): DeepSpeed stage 3
    v0.3-v0.5 (2021), whose fetch_sub_module waits on every gather in flight, the prefetched one included, and
    synchronizes the device (stage3.py _synchronize_communication: torch.cuda.synchronize()), gathering parameter
    by parameter (partition_parameters.py _allgather_param); since v0.6.0 (PR #1453, January 2022) stage 3
    prefetches (`_prefetched`). Each module's parameters are all-gathered on demand in one call
    (`zero3_fetch_units_per_layer` per decoder layer, in forward and again in backward), exposed, each paying its
    ring latency; gradients are reduce-scattered in `grad_bucket_params` buckets, overlapped with the backward when
    `zero3_rs_overlap` (stage 3 overlap_comm, default on) at `overlap_interference` of their time.
    deepspeed/runtime/zero/stage3.py `fetch_sub_module`, zero/constants.py (v0.3.13, April 2021). Checked on
    Narayanan 2021 Table 2's ZeRO-3 rows (perf_validation), which state it."""
    fw = x.fw
    units = np.asarray(fw.zero3_fetch_units_per_layer, dtype=float)
    n_ag = np.where(units > 0, units, 1.0) * mb.n_stage  # all-gathers per pass
    n_rs = np.maximum(np.ceil(p_local * g.train_frac / np.asarray(fw.grad_bucket_params, dtype=float)), 1.0)
    ag = 2.0 * (z3_ag + np.maximum(n_ag - 1.0, 0.0) * lat)
    rs = z3_rs + np.maximum(n_rs - 1.0, 0.0) * lat
    hidden = np.where(np.asarray(fw.zero3_rs_overlap), np.minimum(rs, g.window), 0.0)
    return ag + rs - (1.0 - x.k.overlap_interference) * hidden


def _optimizer(x: _Step, g: _Grads, mb: _MicroBatch) -> np.ndarray:
    """Optimizer step on the GPU (streams optimizer bytes per parameter), or offloaded (ZeRO-Offload): grads
    down (fp32) and the updated params up over PCIe (16-bit, or PerfStyle.offload_upload_bytes) + CPU Adam and any
    host pass of the stack's beside it (PerfStyle.offload_host_pass_bytes); parameter offload streams the 16-bit weights in
    for forward and backward of every micro-batch (prefetched). torchao's low-bit AdamW (names.TORCHAO_OPTIMIZERS)
    streams its codes' bytes; its per-parameter torch.compile'd call (dynamo's guards, Inductor's wrapper) is host
    time that runs ahead of the GPU, with no synchronise, and is not counted (docs/known-gaps.md 174)."""
    k, training, system, r = x.k, x.training, x.system, x.r
    if training.optimizer not in k.optimizer_bytes_per_param:
        raise SpecError("training.optimizer", msg("no_optimizer_traffic"),
                        value=training.optimizer, allowed=sorted(k.optimizer_bytes_per_param),
                        suggestion=did_you_mean(training.optimizer, k.optimizer_bytes_per_param))
    fw = x.fw
    model_dtype = np.asarray(fw.model_dtype_states)
    mixed = k.optimizer_bytes_per_param[training.optimizer]
    bpp = np.where(model_dtype, k.optimizer_model_dtype_bytes_per_param.get(training.optimizer, mixed), mixed)
    if x.optimizer_impl == "foreach" and training.optimizer == "adamw":  # torch's multi-tensor AdamW
        bpp = float(k.raw["optimizer"]["foreach_adamw_element_passes"]) * np.where(model_dtype, x.act, 4.0)
    upd = (g.local_dense * g.train_frac) / np.where(g.shard_opt, g.n_zd, 1.0) + (
        g.local_expert * g.train_frac) / np.where(g.shard_opt, g.n_ze, 1.0)
    opt = compute.optimizer_time(upd, bpp, r) + _step_passes(x, g, upd)
    off = x.a["offload"]
    pcie = max(system.pcie_gb_s, 1e-3) * 1e9
    # the CPU step streams host memory: CPU-Adam's rate scaled by the bytes this update moves per parameter, and
    # DeepSpeed's host passes beside it (PerfStyle.offload_*: the gradient's unscale; at ZeRO-3 the 16-bit cast)
    z3 = x.zero >= 3
    # (the update's own bytes less the 16-bit write it does not do there: PerfStyle.offload_update_unwritten_bytes)
    unwritten = np.where(model_dtype, 0.0, np.asarray(fw.offload_update_unwritten_bytes, float))
    host_b = bpp - unwritten + np.asarray(fw.offload_host_pass_bytes, float) + np.where(
        z3, np.asarray(fw.offload_zero3_host_cast_bytes, float), 0.0)
    cpu_step = upd * host_b / (k.cpu_adam_params_per_s_per_gpu * k.cpu_adam_bytes_per_param)
    # ZeRO-Offload: fp32 gradients down and 16-bit parameters up around the step; FSDP2 CPUOffloadPolicy with
    # parameter offload: the gradient shard (in the parameters' dtype) down during the backward, hidden there
    fsdp2 = np.asarray(fw.fsdp2_cpu_offload) & (off >= 2)
    grad_down = upd * np.where(model_dtype, x.act, 4.0) / pcie
    up_b = np.asarray(fw.offload_upload_bytes, float)
    up = upd * (4.0 + np.where((up_b > 0) & ~z3, up_b, x.act)) / pcie
    pcie_step = np.where(fsdp2, np.maximum(grad_down - g.window, 0.0), up)
    # each rank copies its own shard in for the all-gathers of every forward and backward (FSDP2 FSDPParam
    # all-gather inputs; ZeRO-Infinity fetches its partition): prefetched behind the compute
    shards = np.where(x.zero >= 3, g.n_dp, 1.0)
    stream_in = 2.0 * (g.local_dense / shards + g.local_expert / np.where(x.zero >= 3, g.n_edp, 1.0)) * x.act / pcie
    param_off = x.m * np.maximum(stream_in - mb.compute, 0.0)
    return np.where(off >= 1, pcie_step + cpu_step, opt) + np.where(off >= 2, param_off, 0.0)


def _step_passes(x: _Step, g: _Grads, upd: np.ndarray) -> np.ndarray:
    """Seconds of the style's gradient / weight passes around the fused update, at the HBM streaming rate. Per
    parameter this rank updates: PerfStyle.step_update_extra_bytes (Megatron-LM / Megatron-Core: clip_grad_norm_fp32
    reads every fp32 main gradient for the norm, _copy_main_params_to_model_params writes the 16-bit weights from
    the fp32 masters as its own pass; the HF Trainer: clip_grad_norm_'s norm read), Megatron-Core's cast of a
    16-bit gradient buffer's shard to fp32 (main_grad_cast: 2 + 4 B) and torch-style clipping's in-place multiply
    of every gradient (clip_scales_always: read + write, 4 B each, or the model dtype where the states are kept in
    it). Per local trainable parameter: the gradient buffer cleared for the next step (grad_buffer_zero_bytes, or
    the DDP buffer in its reduce dtype: grad_buffer_reduce_dtype) and, under torch DDP with replicated data
    parallelism (ZeRO 0, more than one rank), each 16-bit gradient copied into its bucket and back (2 x (2 + 2) B:
    torch/csrc/distributed/c10d/reducer.cpp mark_variable_ready_dense `bucket_view.copy_(grad)` and
    finalize_bucket_dense, gradient_as_bucket_view False). On DeepSpeed's ZeRO-3 engine (v0.6+) its step's own
    passes (zero3_step_update_bytes: stage3.py get_grad_norm_direct, _prepare_fp32_grad_for_sub_group,
    unscale_and_clip_grads, the fp32 -> 16-bit copy) replace the per-update ones above."""
    fw = x.fw
    local = (g.local_dense + g.local_expert) * g.train_frac
    grad_b = np.where(np.asarray(fw.model_dtype_states), x.act, 4.0)  # the gradient the update reads
    reduce_b = np.asarray(fw.grad_reduce_bytes, float)
    per_upd = (np.asarray(fw.step_update_extra_bytes, float)
               + np.where(np.asarray(fw.main_grad_cast) & (reduce_b < 4.0), reduce_b + 4.0, 0.0)
               + np.where(np.asarray(fw.clip_scales_always), 2.0 * grad_b, 0.0))
    # DeepSpeed's ZeRO-3 step (v0.6+) runs its own norm, fp32 cast, unscale and weight copy; the stack's clipping
    # does not run on its engine (accelerate's clip_grad_norm_ returns at once under DeepSpeed)
    ds_step = np.asarray(fw.zero3_step_update_bytes, float)
    per_upd = np.where((x.zero >= 3) & np.asarray(fw.zero3_prefetch, bool) & (ds_step > 0.0), ds_step, per_upd)
    zero_b = np.where(np.asarray(fw.grad_buffer_reduce_dtype), reduce_b, np.asarray(fw.grad_buffer_zero_bytes, float))
    ddp = np.where(np.asarray(fw.torch_ddp) & (x.zero == 0) & (g.n_dp > 1), 4.0 * x.act, 0.0)
    # a ZeRO-3 / FSDP rank keeps only its shard's gradient buffer
    nbytes = upd * per_upd + local * (zero_b / np.where(x.zero >= 3, g.n_dp, 1.0) + ddp)
    return np.where(nbytes > 0, compute.stream_time(nbytes, x.r, kernels=0.0), 0.0)


def param_tensors(model: ModelArch, layers: Any) -> Any:
    """Parameter tensors of `layers` decoder layers as Megatron-style modules hold them (fused q / k / v and
    gate / up weights): two norms (four with sandwich norms; weight, + bias for LayerNorm), the attention input and output weights, the MLP
    input and output weights (each routed expert's in an MoE layer), their biases; plus the embedding, the LM
    head unless tied, a learned position table and the final norm. Counted from the model, not fitted."""
    norm = 2.0 if model.norm == "layernorm" else 1.0
    dense = model.norms_per_layer * norm + 4.0 + model.qkv_bias + model.out_bias + 2.0 * model.mlp_bias + 2.0 * model.qk_norm
    moe_share = model.moe_layer_count / model.layers
    per_layer = dense + moe_share * (2.0 * max(model.experts, 1) - 2.0 + 1.0 + 2.0 * (model.shared_expert_ffn > 0))
    rest = 1.0 + (not model.tied_embeddings) + (model.position == "learned") + norm
    return np.asarray(layers, float) * per_layer + rest


def module_param_tensors(model: ModelArch, layers: Any) -> Any:
    """Parameter tensors of `layers` decoder layers (plus the embedding, head and final norm) as transformers' and
    torchtune's modules hold them: param_tensors with q, k and v as three linears (and three biases) and a gated
    MLP's gate and up as two (Llama 2 7B: 9 a layer, 291 in all; an MLA layer taken as q / k / v alike). Counted from
    the model, not fitted."""
    moe_share = model.moe_layer_count / model.layers
    gated = float(model.mlp == "swiglu")
    split = 2.0 * (1.0 + model.qkv_bias) + gated * (1.0 - moe_share + moe_share * (
        max(model.experts, 1) + (model.shared_expert_ffn > 0)))
    return param_tensors(model, layers) + np.asarray(layers, float) * split


def _bnb_tensor_sync_s(x: _Step, mb: _MicroBatch) -> Any:
    """Host seconds a bitsandbytes optimizer's step exposes (names.BITSANDBYTES_OPTIMIZERS): Optimizer8bit.step
    runs torch.cuda.synchronize() after every parameter's update (bitsandbytes optim/optimizer.py, from 44d68ff2,
    0.39, 2023-05; sync_gpu(p) from 0.47.0 to 0.49), so the host's Python for the next parameter (update_step, the
    functional call's device checks and pointers, the launch) runs while the GPU idles: each trainable parameter
    tensor (module_param_tensors; LoRA: A and B of each adapted linear) pays optimizer.bnb_host_s_per_tensor and the
    vendor's host round trip (none where no figure is read), on top of its kernel (_optimizer). Under
    optimizer_in_backward each parameter's step is its own optimizer's (torchtune), the same sync. Replicated data
    parallelism only (ZeRO 0): DeepSpeed and FSDP1 hand the optimizer flat partitions, FSDP2's per-parameter shards
    are not counted (known-gaps 162)."""
    training = x.training
    if training.optimizer not in BITSANDBYTES_OPTIMIZERS:
        return 0.0
    if training.trains_base_weights:
        tensors = module_param_tensors(x.model, mb.n_stage)
    else:
        head = 2.0 * float("lm_head_adapter" in lora_targets(training))
        tensors = 2.0 * lora_adapted_widths(x.model, training)[4] * np.asarray(mb.n_stage, float) + head
    per = float(x.k.raw["optimizer"]["bnb_host_s_per_tensor"]) + (host_figure("round_trip_s", x.system.vendor) or 0.0)
    return np.where((x.zero == 0) & (x.a["offload"] == 0), tensors * per, 0.0)


def _bnb_8bit_kernel(x: _Step, mb: _MicroBatch) -> Any:
    """Seconds bitsandbytes' blockwise 8-bit AdamW kernel takes beyond streaming its bytes (adamw8bit /
    paged_adamw8bit; optimizer_kernels.bnb_8bit_kernel_s: five dependent DRAM loads a thread block, the blocks an SM
    holds), over the tensors _bnb_tensor_sync_s counts, at the update's bytes per parameter (_optimizer). Replicated
    data parallelism only (ZeRO 0, no offload), as the synchronise."""
    k, opt = x.k, x.training.optimizer
    if opt not in ADAMW8BIT_OPTIMIZERS:
        return 0.0
    mixed = k.optimizer_bytes_per_param[opt]
    bpp = np.where(np.asarray(x.fw.model_dtype_states), k.optimizer_model_dtype_bytes_per_param.get(opt, mixed), mixed)
    kernels = {int(b): v for b, v in k.raw["optimizer"]["bnb_8bit_kernels"].items()}
    t = bnb_8bit_kernel_s(x.model, x.training, x.system, kernels, x.bnb_block, bpp, x.r.hbm_bytes_s, mb.n_stage, x.t)
    return np.where((x.zero == 0) & (x.a["offload"] == 0), t, 0.0)


def _fp16_serial_checks(x: _Step, g: _Grads, mb: _MicroBatch) -> np.ndarray:
    """Seconds of DeepSpeed v0.3's fp16 ZeRO-1 step before the update (zero/stage1.py step; EleutherAI DeeperSpeed
    eb7f5cf, which GPT-NeoX ran to v1.0: Pythia, GPT-NeoX-20B): CheckOverflow.has_overflow_serial reads every
    local fp16 gradient as float(x.float().sum()) and get_grad_norm every one again as
    p.grad.data.float().norm().item() -- over all the parameters this GPU holds, not its partition --, so 2 x
    (2 + 4 + 4) = 20 B per local parameter and, per parameter tensor, 2 x (cast, reduction, device-to-host copy)
    kernels, each check waiting for its host read. stage_1_and_2.py (v0.4+) checks the flat partition instead;
    bf16 (BF16_Optimizer) has no overflow check. Counted, not fitted."""
    on = np.asarray(x.fw.fp16_zero1_serial_checks) & (x.zero == 1)
    if x.training.precision != "fp16" or not x.training.trains_base_weights or not np.any(on):
        return np.zeros_like(mb.compute)
    local = g.local_dense + g.local_expert
    tensors = param_tensors(x.model, mb.n_stage)
    t = compute.stream_time(local * 20.0, x.r, kernels=6.0 * tensors)
    return np.where(on, t, 0.0)


def _natural_routing_load(model: ModelArch, training: Training, ep: Any, tok: Any, k: PerfConstants) -> Any:
    """The busiest EP rank's load the step charges (_Step.moe_load): Training.moe_capacity_factor, or under a trained
    router's own routing (Training.moe_routing natural) with none stated (1.0) its expected value from the experts'
    popularity on real text (estimate.moe_load; perf_constants.yaml moe_natural_load), per strategy. `tok`: a
    micro-batch's tokens on one GPU, each sent to top-k experts."""
    if training.moe_routing != "natural" or training.moe_capacity_factor != 1.0 or model.experts <= 1:
        return training.moe_capacity_factor
    gini = moe_load.expert_gini(model.attention, model.heads, model.kv_heads, k.raw["moe_natural_load"]["expert_gini"])
    return moe_load.natural_rank_load(model.experts, ep, tok * model.experts_per_token, gini)


def step_time_arrays(model: ModelArch, training: Training, system: System, strategy, *,
                     calibration: Calibration | None = None, framework_style: str | PerfStyle | None = None,
                     constants: PerfConstants | None = None) -> dict[str, np.ndarray]:
    """Vectorised core: every Strategy field may be an array. Returns arrays (seconds, FLOPs, fractions).

    The perf style comes from `strategy.framework` (see `estimate.framework`); `framework_style` overrides
    it (a name from perf_constants.yaml `frameworks:` or a PerfStyle).
    Step = m x micro-batch on the slowest stage + pipeline bubble and p2p + exposed DP/ZeRO communication +
    optimizer + data loading (module docstring); transformers' device_map chain: `_device_map_step`. A batch under
    framework auto whose strategies' stacks run an MoE family's experts differently (framework.dense_all_split:
    Llama 4 dense under hf, routed under megatron-core / torchtitan) is timed in two parts, each as its stack runs."""
    kw = {"calibration": calibration, "framework_style": framework_style, "constants": constants}
    split = dense_all_split(strategy, model, training.method in ("pretrain", "cpt"))
    if split is None:
        return _step_time_arrays(model, training, system, strategy, **kw)
    dense = _step_time_arrays(model, training, system, stating_dense_all(strategy), **kw)
    routed = _step_time_arrays(model, training, system, strategy, **kw)
    return {key: np.where(split, dense[key], routed[key]) for key in routed}


def _step_time_arrays(model: ModelArch, training: Training, system: System, strategy, *,
                      calibration: Calibration | None, framework_style: str | PerfStyle | None,
                      constants: PerfConstants | None) -> dict[str, np.ndarray]:
    """`step_time_arrays` of a batch whose routed experts all run one way."""
    if getattr(strategy, "device_map", None) is not None and np.any(np.asarray(strategy.pp) > 1):
        return _device_map_step(model, training, system, strategy, calibration=calibration,
                                framework_style=framework_style, constants=constants)
    x = _step(model, training, system, strategy, calibration, framework_style, constants)
    lt, layer_mb = _layer_time(x)
    loop = _expert_loop_pass(x)  # the eager expert loop's pass, timed once: the layers' excess and ZeRO-3's segments
    mb = _micro_batch(x, lt, layer_mb, loop)
    offload = _activation_offload(x, strategy, mb)
    t_mb = mb.total + offload
    alone_n, alone_s = _combined_1f1b_alone(x, mb)
    # the pipeline fills and drains with warm-up forwards and cool-down backwards: unpaired passes
    bubble, pp_comm = _pipeline(x, t_mb + alone_s)
    g = _grads(x, lt, mb)
    dp_nonz3, bucket_frac = _dp_comm_replicated(x, g)
    z3_exposed, z3_serial = _dp_comm_zero3(x, g, mb, bucket_frac, mb.n_stage * lt.fwd)
    dp_comm = np.where(x.zero >= 3, z3_exposed, dp_nonz3)
    hooks, hooks_host = _deepspeed_hook_excess(x, mb.n_stage, t_mb + dp_comm / x.m, loop)  # DeepSpeed ZeRO-3's hooks
    opt = (_optimizer(x, g, mb) + _fp16_serial_checks(x, g, mb) + _paged_migration(x, strategy)
           + _bnb_tensor_sync_s(x, mb) + _bnb_8bit_kernel(x, mb))
    data = np.full_like(opt, x.k.data_loading_exposed_s)
    m = x.m
    saved, drain = _deferred_head_wgrad(x, lt, mb, t_mb)
    unpaired = alone_n * alone_s
    step = m * t_mb - saved + bubble + drain + pp_comm + dp_comm + opt + data + unpaired + m * hooks
    return _flops(x, step) | {
        "micro_batches": m,
        "gpus": x.t * x.p * x.d * x.c,
        "compute": m * mb.compute - saved,
        # the forward passes alone (decoder layers and the LM head + loss on the slowest stage, no comm): what a
        # forward-only step (evaluation) runs; benchmarks/perf_mlperf.py checks it against logged evaluation steps
        # with the decoder layers' LoRA adapters run once in eval mode (docs/known-gaps.md 298 (b))
        "forward_compute": m * (mb.n_stage * (lt.fwd + _lora_adapters(x, eval_forward=True))
                                + mb.head_w * lt.head_fwd),
        # one micro-batch's forward + backward on the most loaded stage without the LM head (compute, TP / CP / EP
        # comm): what a profile of a middle pipeline rank shows (benchmarks/perf_external.py, DeepSeek's DualPipe pair)
        "headless_stage_mb_s": mb.headless_total + 0.0 * m,
        # the part of `compute` that is the host's excess over the GPU (the per-layer host floor, Megatron-Core's
        # dropless MoE sync and what it exposes, eager expert loops: _StageLayer.host) on the paced stage: a
        # diagnostic, not a breakdown term (benchmarks/accuracy_bands.py --rows prints its share of the step)
        "host_excess": m * (mb.host + hooks),
        # DeepSpeed ZeRO-3's hooks: what they hold the step past its GPU time (a term of the step, inside host_excess),
        # and the host seconds a step they and the layers' own issue take (a diagnostic: _deepspeed_hook_excess)
        "zero3_hooks": m * hooks + 0.0 * step,
        "zero3_host": m * hooks_host + 0.0 * step,
        # the NVLink domains the MoE all-to-all's group spans (ep_domains; 0 for a dense model): a diagnostic
        "ep_domains": ep_domains(x) + 0.0 * m,
        "tp_comm": m * mb.tp,
        "cp_comm": m * mb.cp,
        "ep_comm": m * mb.ep + unpaired,
        "dp_comm": dp_comm,
        # ZeRO-3 / FSDP's collectives a step with none hidden behind compute (dp_comm where zero < 3): step_s -
        # zero3_hooks - dp_comm + this is the GPU's serial sum the DeepSpeed held-out benchmarks print against their rows
        # (a diagnostic)
        "dp_comm_serial": np.where(x.zero >= 3, z3_serial, dp_nonz3),
        "pp_bubble": bubble + drain,
        "pp_comm": pp_comm,
        "optimizer": opt,
        "data_loading": data,
        "act_offload": m * offload,
    }


def _device_map_step(model: ModelArch, training: Training, system: System, strategy: Any,
                     **style: Any) -> dict[str, np.ndarray]:
    """A step under transformers' device_map auto (estimate.device_map): the chained cards run one at a time, each
    layer at one card's rates wherever it sits, so the forward and backward are the one-card step's, layer after layer,
    and every micro-batch adds its hidden state copied over each of the p - 1 boundaries forward and its gradient
    back (accelerate's AlignDevicesHook moves a module's inputs to its card before it runs: a peer copy on the host's
    GPU link, comm.p2p_time; the rotary tables and the attention mask a layer on a later card also takes are about
    1 / hidden of it and not counted). The optimizer step's foreach kernels are grouped by device and launched
    without waiting (torch.optim _group_tensors_by_device_and_dtype), so the cards step at once: its time is the
    most loaded card's share of the parameters (device_map.card_shares)."""
    one = dataclasses.replace(strategy, pp=1, local_batch=None, pp_first_stage_layers=None, pp_last_stage_layers=None,
                              pp_stage_layers=None, device_map=None)
    out = step_time_arrays(model, training, system, one, **style)
    x = _step(model, training, system, one, style.get("calibration"), style.get("framework_style"),
              style.get("constants"))
    p = np.asarray(strategy.pp, float)
    edges = pipeline.stated_edges(strategy)
    counts = []
    for rank in range(int(np.max(p))):
        lo, hi = pipeline.stage_layer_range(model.layers, p, float(rank), 0.0, 0.0, *edges)
        counts.append(int(round(float(np.max(hi - lo)))))
    opt = out["optimizer"] * max(card_shares(model, tuple(counts)))
    hops = out["micro_batches"] * 2.0 * (p - 1.0) * comm.p2p_time(x.tok * model.hidden * x.act, True,
                                                                    x.link(p, 1.0, p2p=True), system)
    step = out["step_s"] - out["optimizer"] + opt + hops
    cards = float(system.gpus)
    per_gpu = {k: v / cards for k, v in _flops(x, step).items()
               if k in ("model_tflops_per_gpu", "mfu", "hardware_tflops_per_gpu", "hfu")}
    return out | _flops(x, step) | per_gpu | {"gpus": cards + 0.0 * step, "pp_comm": hops, "optimizer": opt}


def _activation_offload(x: _Step, strategy: Any, mb: _MicroBatch) -> np.ndarray:
    """Exposed PCIe time of activation offloading per micro-batch on the slowest stage (torchtune
    enable_activation_offloading, Megatron-Core cpu_offloading): the offloaded activations
    (memory.activation_offload_bytes) go to host memory during the forward and come back during the backward,
    each way over the GPU's host link (System.pcie_gb_s, one direction) on a side stream that overlaps the
    compute; what exceeds the forward (1/3 of the compute) or the backward (2/3: backward ~ 2x forward FLOPs,
    Kaplan et al. 2020's 6N = 2N + 4N) is exposed."""
    from trainsizer.estimate.memory import activation_offload_bytes

    moved = activation_offload_bytes(x.model, x.training, strategy, mb.n_stage)
    link = max(x.system.pcie_gb_s, 1e-3) * 1e9
    each_way = moved / link
    exposed = np.maximum(each_way - mb.compute / 3.0, 0.0) + np.maximum(each_way - 2.0 * mb.compute / 3.0, 0.0)
    return exposed + 0.0 * mb.compute


def _paged_migration(x: _Step, strategy: Any) -> Any:
    """Host-link seconds of a paged optimizer's states each step (paged_adamw, paged_adamw8bit): bitsandbytes keeps
    them in CUDA unified memory, prefetches each parameter's states to the GPU before its update on the default
    stream and synchronises after it (bitsandbytes optim/optimizer.py Optimizer8bit.prefetch_state / step,
    cudaMemPrefetchAsync), so the transfer is not hidden; once the states do not fit beside the GPU's own peak,
    every state byte comes in and goes back (dirty) each step (memory.paged_bytes_moved), the two directions on
    their own copy engines at once (assumed; one after the other would double it): moved bytes / the link's rate in
    one direction (System.pcie_gb_s, the PCIe x16 figure: a lower bound on the time)."""
    if not x.training.optimizer.startswith("paged_"):
        return 0.0
    from trainsizer.estimate.memory import paged_bytes_moved

    return paged_bytes_moved(x.model, x.training, x.system, strategy) / (max(x.system.pcie_gb_s, 1e-3) * 1e9)


def _flops(x: _Step, step: np.ndarray) -> dict[str, np.ndarray]:
    """Throughput, model and hardware FLOPs, MFU and HFU of a step (flops.py: model FLOPs = 3 x forward;
    hardware FLOPs add the recompute; DPO's reference forward is work the algorithm needs, so it counts in
    both)."""
    model, training = x.model, x.training
    # context per token: seq_len, or for unpacked samples E[L^2] / E[L], the keys a real token attends over on
    # average (padding is neither model nor useful work: tokens_per_step counts real tokens)
    s = float(training.seq_len)
    if training.per_sample_rows:
        s = (sample_lengths.squared_tokens(training.sample_mean_tokens, training.sample_sigma, training.row_cap)
             / training.sample_tokens)
    tokens = float(training.tokens_per_step)
    gpus = x.t * x.p * x.d * x.c
    ref_flops = forward_flops_per_token(model, s) if training.has_reference_model else 0.0
    defined = x.defined_model or model  # model FLOPs at the model's top-k; the hardware FLOPs as run
    model_flops = (model_flops_per_token(defined, s, training.trains_base_weights) + ref_flops) * tokens
    hw_flops = (hardware_flops_per_token(model, s, x.rc, training.trains_base_weights, x.recompute_modules,
                                         x.full_share, router_gemm=training.moe_routing != "fake-balanced")
                + ref_flops) * tokens
    peak = x.r.gemm_peak_flops
    return {
        "step_s": step,
        "tokens_per_s": tokens / step,
        "model_flops_per_step": model_flops + 0.0 * step,
        "hardware_flops_per_step": hw_flops + 0.0 * step,
        "model_tflops_per_gpu": model_flops / (step * gpus) / 1e12,
        "mfu": model_flops / (step * gpus * peak),
        "hardware_tflops_per_gpu": hw_flops / (step * gpus) / 1e12,
        "hfu": hw_flops / (step * gpus * peak),
    }


def estimate_time(model: ModelArch, training: Training, system: System, strategy, calibration=None, *,
                  framework_style: str | PerfStyle | None = None, reliability_kwargs: dict | None = None,
                  memory_note: bool = True) -> TimeEstimate:
    """Step time, throughput, MFU/HFU and (when training.tokens_total > 0) time-to-train of one strategy.

    Raises StrategyError(rule, detail) for a strategy that breaks a rule of `validate.RULES`; soft-rule
    warnings go to `notes`, and (`memory_note`) the memory estimator's verdict when the strategy does not
    fit; a caller that estimates memory itself (`trainsizer.evaluate`) turns it off. The perf style comes
    from `strategy.framework` unless `framework_style` overrides it."""
    from trainsizer.estimate.checkpoint_saves import checkpoint_saves_s
    from trainsizer.estimate.evaluation import evaluation_s
    from trainsizer.estimate.train_time import time_to_train, tokens_run

    require_one_strategy(strategy, "estimate_time", "evaluate_batch")
    warnings = check_strategy(model, training, system, strategy)
    out = step_time_arrays(model, training, system, strategy, calibration=calibration,
                           framework_style=framework_style)
    f = {key: float(np.asarray(val).reshape(-1)[0]) for key, val in out.items()}
    gpus = int(round(f["gpus"]))
    pretraining = training.method in ("pretrain", "cpt")
    style = _style(strategy, framework_style, pretraining)
    kernel = str(_stack_kernel(attention_kernel_of(strategy, model, framework_style, pretraining), style, system))
    notes = tuple(warnings) + _sdpa_note(system, kernel) + _sdpa_cudnn_note(system, kernel, strategy, style)
    notes += _te_attention_note(system, model, kernel, style)
    if memory_note:
        notes += _memory_note(model, training, system, strategy)
    eval_s = evaluation_s(model, training, system, strategy, calibration=calibration, framework_style=framework_style)
    save_s = checkpoint_saves_s(model, training, system, strategy)
    # whole steps: a run is never shorter than the steps it takes (a partial last batch is one more step)
    ttt = time_to_train(tokens_run(training.tokens_total, training.tokens_per_step), f["tokens_per_s"],
                        model.params_total, gpus, system.gpus_per_node, calibration=calibration, extra_s=eval_s + save_s,
                        **(reliability_kwargs or {}))
    return TimeEstimate(
        step_s=f["step_s"],
        tokens_per_s=f["tokens_per_s"],
        model_flops_per_step=f["model_flops_per_step"],
        hardware_flops_per_step=f["hardware_flops_per_step"],
        model_tflops_per_gpu=f["model_tflops_per_gpu"],
        mfu=f["mfu"],
        hardware_tflops_per_gpu=f["hardware_tflops_per_gpu"],
        hfu=f["hfu"],
        breakdown_s={key: f[key] for key in BREAKDOWN_KEYS},
        micro_batches=f["micro_batches"],
        gpus=gpus,
        train_days=ttt.train_days,
        gpu_hours=ttt.gpu_hours,
        goodput=ttt.goodput,
        notes=notes,
        eval_s=eval_s,
        save_s=save_s,
    )


def attention_kernel_of(strategy: Any, model: ModelArch, framework_style: str | PerfStyle | None = None,
                        pretraining: bool = False) -> str:
    """The attention kernel one strategy's step is timed with: the job's strategy.attention_kernel, else its style's."""
    fw = _style(strategy, framework_style, pretraining)
    return str(np.asarray(fw.attention_kernel).reshape(-1)[0])


def _sdpa_note(system: System, kernel: str) -> tuple[str, ...]:
    """What a reader needs beside the time where the attention kernel's own rate is not the one timed: FlexAttention
    off the parts it was measured on runs at FlashAttention-2's figures (perf_constants.yaml attention.
    flash_efficiency_flex); on an AMD part, attention was timed as PyTorch SDPA's ROCm kernels (AOTriton,
    attention.flash_efficiency_sdpa), not the vendor-tuned ones a Primus-Turbo / TE run would state as native."""
    k = load_constants()
    if kernel == "flex" and not k.flex_own_rate(system.accelerator):
        measured = sorted(k.flash_efficiency_flex)
        ratio = k.flash_fraction(measured[0], "flex") / k.flash_fraction(measured[0], "fa2")
        return (msg("note_flex_at_fa2", accelerator=system.accelerator, measured=" / ".join(measured),
                    ratio=f"{ratio:.2f}"),)
    if kernel != "sdpa" or not k.sdpa_own_rate(system.accelerator):
        return ()
    return (msg("note_sdpa_rocm", accelerator=system.accelerator, **k.sdpa_rate_words(system.accelerator)),)


def _sdpa_cudnn_note(system: System, kernel: str, strategy: Any, fw: PerfStyle) -> tuple[str, ...]:
    """On a datacenter Hopper / Blackwell part PyTorch's SDPA runs cuDNN's fused attention first under torch 2.9 and
    >= 2.11, FlashAttention-2's kernels under 2.5.1-2.8 and 2.10 (sdp_utils.cpp check_prefer_cudnn_attention;
    perf_constants.yaml attention.sdpa_cudnn_first); the estimate has no torch-release input, so it says which it
    timed and how to state the other: for kernel sdpa (timed at FA2's figures), and for a style that times FA2 where
    its library's default is sdpa (hf: transformers' attn_implementation) and the job named no kernel."""
    if not load_constants().sdpa_cudnn_first(system.accelerator):
        return ()
    if kernel == "sdpa":
        return (msg("note_sdpa_cudnn_first", accelerator=system.accelerator),)
    library = str(np.asarray(fw.library_attention_kernel).reshape(-1)[0])
    if kernel == "fa2" and library == "sdpa" and getattr(strategy, "attention_kernel", None) is None:
        return (msg("note_library_sdpa_cudnn_first", accelerator=system.accelerator),)
    return ()


def _te_attention_note(system: System, model: ModelArch, kernel: str, fw: PerfStyle) -> tuple[str, ...]:
    """Where a Transformer Engine stack's native attention was timed as FlashAttention-2 (_te_attention_kernel), which
    head dims its cuDNN backend does not train on the part."""
    if kernel != "native":
        return ()
    if np.all(np.asarray(_te_attention_kernel(kernel, fw, system, model, load_constants())) == kernel):
        return ()
    d_qk, d_v = model.head_dims
    return (msg("note_te_attention_fa2", accelerator=system.accelerator, d_qk=d_qk, d_v=d_v),)


def _memory_note(model: ModelArch, training: Training, system: System, strategy) -> tuple[str, ...]:
    """Feasibility note from the memory estimator (time is estimated regardless)."""
    from trainsizer.estimate.memory import GIB, estimate_memory

    try:
        mem = estimate_memory(model, training, system, strategy)
    except TrainsizerError as exc:
        return (msg("note_memory_not_checked", reason=quoted(exc)),)
    if not mem.fits:
        return (msg("note_does_not_fit", needed=f"{mem.per_gpu_bytes / GIB:.1f}",
                    capacity=f"{mem.capacity_bytes / GIB:.1f}"),)
    return ()


def estimate_time_batch(model: ModelArch, training: Training, system: System, strategy, calibration=None, *,
                        framework_style: str | PerfStyle | None = None) -> dict[str, np.ndarray]:
    """Vectorised path: Strategy fields are arrays; returns a dict of arrays (no validity checks)."""
    return step_time_arrays(model, training, system, strategy, calibration=calibration,
                            framework_style=framework_style)
