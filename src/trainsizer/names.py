"""Names the job file and the estimators share: one definition that `spec` and `estimate` both derive from.

Plain tuples and no imports, so every layer may use them (like `errors`).
"""

from __future__ import annotations

METHODS = ("pretrain", "cpt", "full", "dpo", "lora", "qlora")
PRECISIONS = ("bf16", "fp16", "fp8", "fp32")
OPTIMIZERS = ("adamw", "adamw8bit", "paged_adamw", "paged_adamw8bit", "sgd", "adafactor", "ao_adamw8bit", "ao_adamw4bit",
              "ao_adamw_fp8")
# torchao's low-bit AdamW (torchao.optim, prototype/low_bit_optim before 0.10: AdamW8bit, AdamW4bit, AdamWFp8): blockwise
# 8-bit / 4-bit dynamic-map or FP8 E4M3 moments with an fp32 scale a block (256 / 128 / 256 elements at main 36027d82,
# 2026-08; 8-bit and FP8 2,048 before #927, 2024-09-24), each parameter's update one torch.compile'd single_param_adam
# call, no synchronise (known-gaps 174)
TORCHAO_OPTIMIZERS = ("ao_adamw8bit", "ao_adamw4bit", "ao_adamw_fp8")
RECOMPUTE = ("none", "selective", "full")
# Megatron-Core selective recompute by module (TransformerConfig.recompute_modules, core_r0.15.0; default
# ["core_attn"]): what "selective" re-runs in backward. core_attn, mlp, moe, shared_experts are checkpointed whole;
# moe_act, layernorm and mla_up_proj keep their inputs and discard their outputs once used (CheckpointWithoutOutput).
RECOMPUTE_MODULES = ("core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts")
# Partial full recompute (Megatron-Core recompute_method with recompute_granularity full and recompute_num_layers N;
# NeMo activations_checkpoint_method / _num_layers): per model chunk, "uniform" checkpoints the layers in groups of N
# (each group's input kept, every layer re-run), "block" the first N layers one by one (the others keep everything).
RECOMPUTE_METHODS = ("uniform", "block")
OFFLOAD = ("none", "optimizer", "optimizer+params")
# Training frameworks whose memory and overlap behaviour the estimators model; "auto" picks one per strategy
# (`estimate.framework` maps each name to a memory profile and a perf style; docs/frameworks.md).
FRAMEWORKS = ("auto", "megatron", "megatron-core", "deepspeed", "fsdp", "hf", "deepseek-dualpipe", "torchtitan",
              "torchtune")
# The frameworks that shard with PyTorch FSDP / FSDP2 (torch.distributed.fsdp ShardingStrategy FULL_SHARD /
# SHARD_GRAD_OP / NO_SHARD / HYBRID_SHARD; FSDP2 fully_shard reshard_after_forward True / False): their ZeRO-3 / ZeRO-2
# are FSDP's sharding (named so in a layout's words) and they have no optimizer-only stage, ZeRO-1 (not searched)
FSDP_FRAMEWORKS = ("torchtitan", "torchtune", "fsdp")
# How the loss is computed over the vocabulary (memory of the logits; memory_constants.yaml `logits`): auto = the
# framework's own; upcast = fp32 logits of the whole micro-batch (HF Trainer); vocab-parallel = Megatron's fused
# cross-entropy; chunked = bf16 logits, fp32 per chunk (torchtune CEWithChunkedOutputLoss, NeMo); fused = LM head
# and loss fused chunk by chunk, no logits kept (Liger FusedLinearCrossEntropy, Unsloth, Cut Cross-Entropy);
# native = cross-entropy on the 16-bit logits the model returns, no fp32 upcast (model code without .float() run
# without autocast, e.g. Qwen-1 remote code under DeepSpeed's 16-bit engine); compiled = one fused cross-entropy
# kernel on the 16-bit logits (torch.compile of the upcast loss, torchtitan 2025 with compile on; flash-attn's fused
# cross-entropy, TinyLlama / lit-gpt): 16-bit logits saved, 16-bit gradient, no fp32 copies; upcast-shift = upcast
# as transformers 4.46-4.47's ForCausalLMLoss runs it: the caller's 16-bit logits, their fp32 copy and its shifted
# contiguous copy live together with the log-softmax output at the end of the forward; compiled-fp32 = a compiled
# cross-entropy over the fp32 logits an eager model returns (torchtune without chunking: the output layer's
# .float(), then training.compile_loss): the fp32 logits saved, an fp32 gradient.
# vocab-parallel-unfused = the same loss as separate PyTorch kernels over an fp32 copy of the logits (the memory of
# vocab-parallel, the step time of the unfused kernels): Megatron-Core with cross_entropy_loss_fusion false, Megatron-LM's
# default (megatron/core/tensor_parallel/cross_entropy.py VocabParallelCrossEntropy on .float()), Megatron-LM before
# Megatron-Core (output.float()), nanotron's sharded_cross_entropy (dtype float).
# chunked-nll = TRL SFTTrainer's loss_type chunked_nll (the SFTConfig default since TRL 1.7, trl#5846): the LM head and
# loss per chunk of 256 labelled tokens under gradient checkpointing, in fp32 (h.float() @ w.float().t()), so no
# logits are kept but each chunk makes an fp32 copy of the head weight (and, under autocast, its 16-bit cast).
# liger = Liger-Kernel's fused linear cross-entropy (LigerFusedLinearCrossEntropyFunction; liger_kernel/ops/
# fused_linear_cross_entropy.py at 7dd8ecc5, 2025-11-06): the LM head, the loss and their input / weight gradients chunk
# by chunk inside the forward, next_power_of_2(ceil(BT / ceil(V / H))) rows of 16-bit logits a chunk (the gradient
# written in place), grad_input (BT x H) and, where the head trains, grad_weight kept for the backward
# (memory._liger_loss); fused = the loss_impl of the other fused kernels (Unsloth, Cut Cross-Entropy), at a constant.
# upcast-held = the model's 16-bit logits cast to fp32 outside the model and held by the caller through the backward,
# F.cross_entropy on the fp32 copy: Lightning Fabric's true-half precision (convert_output to the default dtype) under
# LitGPT's fit loop, which keeps `logits` until fabric.backward returns.
# upcast-labels = upcast as transformers >= 4.48 and 5.x run it (loss/loss_utils.py ForCausalLMLoss at v4.48.0: the
# labels padded and shifted, the fp32 logits not sliced): the same tensors live at once as upcast, no slice gradient,
# so fewer caching-allocator segments (memory._loss_path_segments; benchmarks/loss_segments.py).
LOSS_IMPLS = ("auto", "upcast", "upcast-shift", "vocab-parallel", "vocab-parallel-unfused", "chunked", "fused", "native",
              "compiled", "compiled-fp32", "te", "chunked-nll", "upcast-held", "liger", "upcast-labels")
# What of the loss phase is still allocated when the backward re-runs the last checkpointed layer (full recompute;
# strategy.live_at_rerun; memory._backward_phases). PyTorch's engine runs the loss's and the LM head's backward first
# and frees each node's saved tensors and input gradients as it goes, so what remains is what the loop itself holds:
# none = the loop keeps no reference to the forward's outputs past the loss (transformers Trainer.compute_loss returns
# the loss alone and training_step `del inputs` before accelerator.backward, v4.x; torchtune's `del logits`;
# universal-llm-trainer's `del output`): the loss phase and the re-run layer are never live together;
# logits = the loop keeps the model's outputs, whose logits, until backward returns (`output = model(...); loss =
# output.loss; loss.backward()`: Answer.AI's fsdp_qlora train.py, PEFT / accelerate example loops; LitGPT under
# Fabric's true-half precision, loss_impl upcast-held); loss = every loss-phase item counted beside the re-run layer
# (the estimate's sum, kept for the stacks whose loop was not read).
LIVE_AT_RERUN = ("none", "logits", "loss")
# FP8 scaling recipes (precision fp8): "auto" = the accelerator's default; the others are the recipes whose
# figures estimate/data/perf_constants.yaml `fp8.recipes` holds (Transformer Engine / torchao names). "nvfp4" is
# Transformer Engine's NVFP4BlockScaling, which TE passes where the FP8 recipes go (te.autocast / fp8_autocast
# fp8_recipe=): the linear layers' GEMMs in 4-bit E2M1 at the FP4 tensor-core peak (Blackwell only). "mxfp4" is the
# OCP MX FP4 recipe (E2M1, one E8M0 scale per 32 elements) AMD's Transformer Engine fork passes the same way
# (MXFP4BlockScaling; Primus fp4_recipe mxfp4), on CDNA 4 (MI350X / MI355X) FP4 matrix cores. "blockwise" is
# Transformer Engine's Float8BlockScaling (DeepSeek-V3's 1x128 / 128x128 FP32-scaled blocks; Megatron-Core
# --fp8-recipe blockwise), on Hopper and Blackwell (perf_constants.yaml fp8.recipe_families). "nvfp4-torchao" is
# torchao's prototype NVFP4 training (torchao.prototype.moe_training.nvfp4_training NVFP4Linear, torchtitan's
# NVFP4LinearConverter): the same format as nvfp4, run by torchao's own Triton casts and autograd function, on SM100
# Blackwell (perf_constants.yaml fp8.recipes.nvfp4-torchao).
FP8_RECIPES = ("auto", "delayed", "tensorwise", "rowwise", "mxfp8", "nvfp4", "mxfp4", "blockwise", "nvfp4-torchao")
# the FP8_RECIPES whose GEMMs run on FP4 tensor cores (estimate/data/perf_constants.yaml fp8.fp4_recipes says on which
# parts)
FP4_RECIPES = ("nvfp4", "mxfp4", "nvfp4-torchao")
# Megatron-Core MoE token dispatcher: alltoall = MoEAlltoAllTokenDispatcher (token counts copied to the host each
# MoE layer, per-expert splits issued by the CPU); flex = MoEFlexTokenDispatcher with DeepEP / HybridEP (fused
# permute + dispatch kernels); auto = what Megatron-Bridge's 25.11 recipes use for that layout (step_time). On the
# PyTorch-native styles (torchtitan, FSDP) auto / alltoall = torchtitan's all_to_all of tokens permuted per expert and
# flex = DeepEP (NeMo AutoModel's enable_deepep, torchtitan's deepep backend): one copy per EP rank, no host sync.
# hybridep = NVIDIA's HybridEP (deepseek-ai/DeepEP hybrid-ep branch; NeMo AutoModel's dispatcher hybridep, Megatron-Core
# flex with the hybridep backend) stated as such: flex's transport, and its dispatch_with_permute / combine_with_unpermute
# hand the experts their tokens already grouped (AutoModel _HybridEPManager.get_permuted_hidden_states_by_experts
# returns them unchanged), so the framework's permute / unpermute passes are not run (step_time: compute._moe_layer).
# deepep = flex with DeepEP's backend stated (Megatron-Core moe_flex_dispatcher_backend deepep): flex everywhere, and on
# Megatron-Core its _DeepepManager's own host calls are counted (step_time._moe_layer_host_s; docs/known-gaps.md 334 (a))
MOE_DISPATCHERS = ("auto", "alltoall", "flex", "hybridep", "deepep")
# the dispatchers that send a token once to each EP rank holding one of its experts (DeepEP / HybridEP kernels)
FLEX_DISPATCHERS = ("flex", "hybridep", "deepep")
# Which experts a balanced router gives a token (MoE dispatch: how many EP ranks and NVLink domains its top-k experts
# span). random = k distinct experts uniformly at random: a trained router at balance, and Megatron-Core's
# moe_router_force_load_balancing (random logits, moe_utils.apply_random_logits); round-robin = token i takes experts
# k i ... k i + k - 1 (mod E), consecutive experts on as few ranks as possible: the forced-balance gates of NeMo
# AutoModel (FakeBalancedGate, backend fake_balanced_gate) and torchtitan (debug moe_force_load_balance), which their
# published benchmarks run, and AMD Primus's Megatron-LM router under moe_router_force_load_balancing (it rebuilds the
# map after Megatron-Core's routing: those ops charged on the megatron-core style, docs/known-gaps.md 338 (b)). torchtitan's still runs the gate GEMM and gathers the scores of the experts it assigns
# (TokenChoiceTopKRouter._debug_force_load_balance_routing); AutoModel's FakeBalancedGate computes no logits at all
# (components/moe/layers.py: torch.arange(tokens x k) % E and uniform weights, at 89e3a9fdd, 8d9bfb90e, bb0c0bfb0):
# fake-balanced = the round-robin experts with no router GEMM.
# natural = the trained router's own top-k choice (Megatron-Core moe_router_force_load_balancing false, the default;
# fine-tuning a pretrained router): experts spread as random's, and with no stated moe_capacity_factor the busiest EP
# rank's load derived from the experts' popularity on real text (estimate.moe_load, docs/known-gaps.md 318).
MOE_ROUTINGS = ("random", "round-robin", "fake-balanced", "natural")
# Megatron-Core's router load-balancing loss (TransformerConfig moe_router_load_balancing_type with a nonzero
# moe_aux_loss_coeff; router.py TopKRouter.routing at NVIDIA/Megatron-LM 61f31145): aux_loss = the micro-batch's
# switch loss (GShard / Switch Transformer), seq_aux_loss = per sample (DeepSeek-V2 / V3), both reducing the token
# counts over TP x CP; global_aux_loss = the counts all-reduced over TP x DP x CP and averaged over the accumulation
# steps; none = no aux-loss op runs (also what any type with coefficient 0 does: is_aux_loss_enabled). Megatron-Bridge's
# gpt_oss_bridge.py sets "none" (docs/known-gaps.md 343 (a)).
MOE_AUX_LOSSES = ("none", "aux_loss", "seq_aux_loss", "global_aux_loss")
# How transformers runs an MoE model's routed experts (its `experts_implementation`): eager = one expert at a time in a
# Python loop over the experts the router hit, each behind a data-dependent torch.where on the routing mask (a
# device-to-host sync: the MixtralSparseMoeBlock / Qwen2MoeSparseMoeBlock / Qwen3MoeSparseMoeBlock forward of every
# transformers 4.x release, and v5's "eager" backend; GraniteMoe's 4.x GraniteMoeParallelExperts syncs once a layer and
# loops over every expert: docs/known-gaps.md 261 (a)); grouped_mm = the tokens sorted by expert and the experts
# run as one torch._grouped_mm (transformers >= 5.0, PR #42697: PreTrainedModel.get_correct_experts_implementation picks
# it when none is stated and PyTorch can dispatch it); dense_all = every routed expert runs on every token, the input
# scaled by a router score that is zero off the chosen experts (transformers' Llama4TextMoe.forward: routed_in =
# hidden_states.repeat(num_experts, 1) * router_scores, one torch.bmm over all experts, the copies summed; read at
# 63210d0e3 (4.5x) and 000c33fdf (5.x)): the expert GEMMs and their activations at top-k = the expert count.
# v5's batched_mm (weights duplicated per token) is not modelled.
EXPERTS_IMPLEMENTATIONS = ("eager", "grouped_mm", "dense_all")
# transformers / accelerate placing one model over the GPUs of one host in one process (from_pretrained(device_map=...);
# estimate.device_map): auto = accelerate's balanced split (get_balanced_memory + infer_auto_device_map, what
# transformers runs for "auto" / "balanced"), each card holding a run of consecutive layers and one card busy at a time.
DEVICE_MAPS = ("auto",)
# Fused attention kernel generation (perf_constants.yaml `attention`): fa1 = FlashAttention v1 (2022 - mid-2023
# stacks), fa2 = FlashAttention-2, triton = the 2022 FlashAttention in Triton (flash_attn_triton.py on triton-pre-mlir:
# llm-foundry's attn_impl triton, 2023), native = cuDNN fused attention / FlashAttention-3 on Hopper and later
# (on ROCm: Transformer Engine's CK / AITER kernels), sdpa = PyTorch's SDPA flash backend (FA2 on NVIDIA, AOTriton on
# ROCm), flex = PyTorch FlexAttention's Triton template (torch.compile'd flex_attention over a block mask: torchtitan's
# gpt_oss).
ATTENTION_KERNELS = ("fa1", "fa2", "triton", "native", "sdpa", "flex")
# Norm kernel (memory: what a layer's two norms save for backward): fused = one kernel saving its 16-bit input and
# fp32 per-row statistics (Apex / Transformer Engine, torchtitan's Triton fused_rmsnorm, Liger); eager = PyTorch ops
# (transformers LlamaRMSNorm, torchtitan's uncompiled rmsnorm): the fp32 upcast and the 16-bit output saved.
NORM_KERNELS = ("fused", "eager")
# How context-parallel ranks exchange K and V (Megatron-Core TransformerConfig.cp_comm_type names): p2p = a ring
# exchange of K / V chunks, each step hidden behind the attention of the chunk before (TE AttnFuncWithCP, PyTorch
# ring attention); all_gather = K / V all-gathered before the attention and again in backward, dK / dV
# reduce-scattered after it, all on the critical path (Llama 3 paper s3.3.2; TE AttnFuncWithCPAndKVAllGather:
# "KV all-gather between CP ranks is exposed"); a2a = Ulysses-style all-to-all of q, k, v to a head shard of the whole
# sequence before the attention and of the output back after it (TE AttnFuncWithCPAndQKVOA2A).
CP_COMM_TYPES = ("p2p", "all_gather", "a2a")
# MLP activation kernel (SwiGLU: SiLU and the gate product): fused = one kernel reading gate and up, writing the
# product (Transformer Engine / Apex / Megatron bias_swiglu, torch.compile); eager = F.silu then the product as two
# PyTorch ops, as nanotron's Qwen2MLP / LlamaMLP run it (self.act(gate_states) * up_states), which also keeps the
# SiLU output for the product's backward.
ACTIVATION_KERNELS = ("fused", "eager")
# RoPE kernel (step time: the element-wise traffic of the rotation of q and k): fused = one kernel reading and writing
# each element (Transformer Engine's fused apply_rotary_pos_emb: NeMo AutoModel's BackendConfig rope_fusion true,
# components/models/gpt_oss/rope_utils.py apply_rotary_emb_qk at 4074cd40d; Megatron-Core apply_rope_fusion;
# torch.compile); eager = the style's PyTorch ops (PerfStyle.rope_eager_bytes: torchtitan's complex multiply, HF's
# rotate_half).
ROPE_KERNELS = ("fused", "eager")
# Eager attention's element-wise chain over the score matrix (step time, where the attention is not a flash kernel):
# fused = Megatron's fused scale-mask-softmax and dropout (megatron/core/fusions/fused_softmax.py, 2 kernels);
# fp32_softmax = separate PyTorch ops: the scale, the additive mask, softmax in fp32 (F.softmax(dtype=torch.float32))
# and the cast back (transformers' eager_attention_forward, LitGPT's CausalSelfAttention without SDPA).
EAGER_ATTENTION_IMPLS = ("fused", "fp32_softmax")
# CUDA graphs (Megatron-Core enable_cuda_graph / cuda_graph_scope, NeMo / MLPerf MCORE_CUDA_GRAPH, FULL_CUDA_GRAPH):
# none = eager launches; layer = one graph per transformer layer (cuda_graph_scope "full", CudaGraphManager: each
# layer's replay is still called from Python, layer by layer); full_iteration = the whole forward-backward of a step
# captured once and replayed as one graph (cuda_graph_scope "full_iteration", megatron/core/full_cuda_graph.py
# FullCudaGraphWrapper): the host issues no per-layer kernels.
CUDA_GRAPHS = ("none", "layer", "full_iteration")
# cuDNN release whose fused attention (SDPA) a job runs, where NVIDIA published one part's rate at two releases at one
# shape (perf_constants.yaml attention.cudnn_release_speedup): 9.13 = the release the Blackwell native-attention
# rates are derived at (pytorch:25.09-py3, Megatron-Bridge 25.11); 9.17 = pytorch:25.11-py3's.
CUDNN_RELEASES = ("9.13", "9.17")
# dtype bitsandbytes' dequantize_4bit writes for a QLoRA base weight (its quant_state dtype): fp16 | compute
NF4_DEQUANT_DTYPES = ("fp16", "compute")
# How bitsandbytes' kDequantizeBlockwise decodes an NF4 code: lut = a table lookup (0.48.0+, #1746, 2025-09-30);
# tree = the branching four-level tree of dDequantizeNF4 (every release with NF4, 0.39.0 to 0.47.x)
NF4_DECODES = ("lut", "tree")
# How the optimizer step runs (time of torch.optim.AdamW): fused = one kernel per parameter group reading and writing
# each state once (fused=True, Apex / TE FusedAdam, DeepSpeed FusedAdam, bitsandbytes); foreach = torch's
# multi-tensor implementation, torch.optim.AdamW's default on CUDA when neither fused nor foreach is set: eight
# element-wise passes (perf_constants.yaml optimizer.foreach_adamw_element_passes).
OPTIMIZER_IMPLS = ("fused", "foreach")
# bitsandbytes' blockwise 8-bit optimizer kernel (kOptimizerStatic8bit2StateBlockwise, csrc/ops.cu BLOCKSIZE_2STATE /
# NUM_2STATE): 256 = 256 elements a block, one a thread (0.44.0, aa57bd89 #1365, 2024-09-20, to main 95f9af30,
# 2026-08); 2048 = 2,048 elements a block, eight a thread (0.39-0.43.3). Time of adamw8bit / paged_adamw8bit only
# (step_time._bnb_8bit_kernel_s); the default is bitsandbytes' own, 256.
BNB_OPTIMIZER_BLOCKS = (256, 2048)
# How replicated data parallelism holds the gradients (step time): torch = torch.nn.parallel.DistributedDataParallel
# (gradient_as_bucket_view False, its default: every gradient copied into its bucket before the all-reduce and back
# after it, reducer.cpp mark_variable_ready_dense / finalize_bucket_dense) with torch-style clipping
# (torch.nn.utils.clip_grad_norm_: every gradient multiplied by the clamped coefficient, no host check): the HF
# Trainer / accelerate, nanotron (its port, optim/clip_grads.py); megatron = Megatron's contiguous gradient buffer
# (the buckets are the gradients; the scale runs only when the norm exceeds the threshold, clip_grads.py).
DDP_IMPLS = ("torch", "megatron")
# How activation checkpointing re-runs a layer (step time of ZeRO-3 / FSDP under full recompute): non_reentrant =
# torch.utils.checkpoint(use_reentrant=False) or checkpoint_wrapper(CheckpointImpl.NO_REENTRANT) (torchtitan,
# torchtune, FMS-FSDP): the recompute runs inside the layer's backward, after the FSDP unit's pre-backward hook; reentrant
# = use_reentrant=True (CheckpointFunction) inside the sharded unit: Hugging Face transformers >= 4.52 under FSDP1
# (GradientCheckpointingLayer.__call__ runs within the FSDP1 wrapper's forward), Composer's checkpoint_wrapper on the
# wrapped block, deepspeed.checkpointing under DeepSpeed's traced prefetch; reentrant_outer = use_reentrant=True
# around the FSDP unit: transformers <= 4.51 (its layer loop calls checkpoint(decoder_layer.__call__) on the
# FSDP-wrapped layer), or any release with FSDP2's module hooks (fully_shard), which then run inside the checkpoint.
# The unit's forward then runs again before its pre-backward hook: gathered once more, no backward prefetch
# (step_time._reentrant_outer_exposed; docs/known-gaps.md 70).
CHECKPOINT_IMPLS = ("non_reentrant", "reentrant", "reentrant_outer")
# A job's fsdp (strategy.fsdp): none = no FSDP (with zero 3, DeepSpeed's engine: step_time._deepspeed_engine_options),
# full = FSDP FULL_SHARD over data parallelism, hybrid = HYBRID_SHARD over shard_group GPUs
FSDP_MODES = ("none", "full", "hybrid")
# Which torch FSDP a job's fsdp runs (strategy.fsdp_version, accelerate's fsdp_version): 1 = FullyShardedDataParallel
# (flat parameters: each unit's gradient pre-divided in place and its views' gradients concatenated, step_time.
# _fsdp1_predivide_s / _fsdp1_view_grad_cat_s), 2 = fully_shard (per-parameter DTensors: its copy-out after each
# all-gather and copy-in before each reduce-scatter, step_time._fsdp2_copies). accelerate's default is 1
# (FullyShardedDataParallelPlugin fsdp_version, accelerate 1.6+); Axolotl's FSDP2 configs write fsdp_version: 2.
FSDP_VERSIONS = (1, 2)
# When FSDP2 frees the parameters it gathered (strategy.fsdp_reshard): forward = after each unit's forward and again
# after its backward, so the backward gathers a second time (fully_shard reshard_after_forward True, torch's default);
# backward = after each backward only (reshard_after_forward False: one gather a micro-batch, the whole stage's
# parameters held unsharded from its forward to its backward); step = after the step's last backward (reshard_after_forward
# False, and set_reshard_after_backward(False) with set_requires_gradient_sync(False) on every micro-batch but the
# last: NeMo AutoModel's BackendConfig enable_fsdp_optimizations, components/moe/fsdp_mixin.py
# prepare_for_grad_accumulation at 4074cd40d; torch's pipelining schedule): one gather and one reduce-scatter a step,
# the unsharded gradients held in the reduce dtype across micro-batches.
FSDP_RESHARDS = ("forward", "backward", "step")
# What Megatron-FSDP shards (strategy.megatron_fsdp_sharding, Megatron-Core DistributedDataParallelConfig
# data_parallel_sharding_strategy; megatron/core/distributed/fsdp/src/megatron_fsdp/param_and_grad_buffer.py
# _init_each_parameter_group_buffers at NVIDIA/Megatron-LM 0d8e0714): optim = the main weights and optimizer states
# (ZeRO-1: the 16-bit weights and the gradient buffer whole, the gradients all-reduced once a step), optim_grads = and
# the gradients (ZeRO-2: reduce-scattered every micro-batch), optim_grads_params = and the 16-bit weights (ZeRO-3, each
# TransformerLayer an FSDP unit). The ZeRO stage each is (MEGATRON_FSDP_ZERO) is the job's zero / fsdp full.
MEGATRON_FSDP_SHARDINGS = ("optim", "optim_grads", "optim_grads_params")
MEGATRON_FSDP_ZERO = {"optim": 1, "optim_grads": 2, "optim_grads_params": 3}
# How DeepSpeed ZeRO-3 gathers transformers' routed experts (framework hf, zero 3 without fsdp): per_expert = each
# expert's linears are modules of their own (the nn.ModuleList of every 4.x release's MoE blocks, MixtralSparseMoeBlock
# / Qwen2MoeSparseMoeBlock), so fetch_sub_module gathers them one module at a time, each its own all-gather over the
# shard group, prefetched one module ahead (stage3_prefetch_bucket_size 5e7 elements is under one expert linear);
# block = the routed experts in one fetch: deepspeed.utils.set_z3_leaf_modules on the MoE block (DeepSpeed PR 4966,
# which LLaMA-Factory and TRL set for Mixtral), or v5's packed experts module (gate_up_proj and down_proj parameters of
# one module), gathered when the block's own hook runs, behind no compute (step_time._deepspeed_expert_gathers;
# docs/known-gaps.md 75).
ZERO3_EXPERT_FETCHES = ("per_expert", "block")
# DeepSpeed ZeRO-3's bucket sizes on a stack that fills a DeepSpeed config (framework hf: HF Trainer / accelerate;
# zero 3 without fsdp): deepspeed = the config leaves stage3_prefetch_bucket_size, stage3_param_persistence_threshold
# and reduce_bucket_size out, DeepSpeed's zero/config.py defaults (5e7, 1e5, 5e8 elements); auto = it writes "auto",
# which transformers (integrations/deepspeed.py HfTrainerDeepSpeedConfig.trainer_config_finalize) and accelerate
# (Accelerator._prepare_deepspeed) fill from the model's hidden size h: 0.9 h^2, 10 h, h^2
# (framework.deepspeed_zero3_buckets; docs/known-gaps.md 83)
ZERO3_BUCKET_SIZES = ("deepspeed", "auto")
# What AdamW keeps per parameter besides the 16-bit weights (memory): fp32 = an fp32 master copy and fp32 moments
# (mixed precision, the default); bf16-moments = fp32 master, exp_avg / exp_avg_sq in bf16 (DeepSeek-V3 report s3.3.3
# "Low-Precision Optimizer States"; Megatron-Core --use-precision-aware-optimizer --exp-avg-dtype bf16
# --exp-avg-sq-dtype bf16); bf16 = no master copy, the bf16 weights updated in place with bf16 moments (Apex
# DistributedFusedAdam dtype bf16 on a bf16 model, which NeMo 1's setup_optimization runs with store_params False);
# fp32-remainders = fp32 moments, the fp32 master kept as the bf16 weight plus its low 16 bits (2 B), on a bf16 model
# only (Apex DistributedFusedAdam store_param_remainders, which NeMo 1 sets for an fp32 optimizer over a bf16 model
# without fp8_params: megatron_base_model.py setup_optimization at NeMo v2.0.0; Megatron-Core's precision-aware
# optimizer, OptimizerConfig.store_param_remainders, since ed46806838; docs/known-gaps.md 245 (a));
# bf16-moments-remainders = bf16 moments and that 2 B master: Megatron-Core's precision-aware optimizer with
# --exp-avg-dtype / --exp-avg-sq-dtype bf16 over bf16 weights, Transformer Engine >= 2.1's FusedAdam(master_weights,
# master_weight_dtype fp32, store_param_remainders: its master_param state torch.int16) as
# megatron/core/optimizer/__init__.py builds it at core_v0.12.0 and core_v0.14.0 (OptimizerConfig.store_param_remainders
# True, no command-line flag; docs/known-gaps.md 270 (c)); bf16-master = a bf16 master copy beside the bf16 weights,
# bf16 master gradients and bf16 moments: DeepSpeed's ZeRO optimizers (stage 1-3) with bf16_master_weights_and_grads
# and bf16_optimizer_states (PR 7700, deepspeedai/DeepSpeed 39a682d7, 2025-12-04: base_optimizer.py
# _configure_master_weights -> torch.bfloat16, stage3.py's fp32_partitioned_groups_flat a bf16 clone), 12 B a parameter
# with the weights and gradients (DeepSpeedExamples training/bf16_master_weight/README.md; docs/known-gaps.md 296 (b)).
OPTIMIZER_PRECISIONS = ("fp32", "bf16-moments", "bf16", "fp32-remainders", "bf16-moments-remainders", "bf16-master")
# The precisions that keep the master as remainders under a bf16 weight: a bf16 model's (precision bf16, or fp8 over
# bf16 weights), Apex's DistributedFusedAdam and Transformer Engine's FusedAdam being AdamW
REMAINDER_PRECISIONS = ("fp32-remainders", "bf16-moments-remainders")
# The optimizers whose states optimizer_precision may change (AdamW's master copy and two moments); the others
# keep fp32 only. One rule for the job file (spec) and the estimators' own callers (estimate.memory).
ADAMW_PRECISION_OPTIMIZERS = ("adamw", "paged_adamw")
# 8-bit AdamW steps the parameter in its own dtype beside its 1-byte moments (bitsandbytes Optimizer8bit
# update_step: p and g in the parameter's dtype, fp32 / bf16 / fp16; torchao optim adam.py single_param_adam: p.float()
# and the dequantised states for the arithmetic, written back into p): no fp32 master copy of a bf16-loaded
# model (optimizer_precision bf16); the moments stay 1 byte, so bf16-moments does not apply.
ADAMW8BIT_OPTIMIZERS = ("adamw8bit", "paged_adamw8bit")
# The low-bit AdamWs that step the parameter in its own dtype (bitsandbytes' 8-bit, torchao's 8-bit / 4-bit / FP8:
# single_param_adam's p.add_ in p's dtype): optimizer_precision fp32 or bf16
LOW_BIT_ADAMW_OPTIMIZERS = ADAMW8BIT_OPTIMIZERS + TORCHAO_OPTIMIZERS
# The job's optimizers that are bitsandbytes' (adamw8bit: bnb.optim.AdamW8bit, HF optim adamw_bnb_8bit; paged_adamw /
# paged_adamw8bit: PagedAdamW / PagedAdamW8bit): Optimizer8bit.step synchronises the device after every parameter's
# update (step_time._bnb_tensor_sync_s) and its 32-bit optimizers keep fp32 states (memory_constants.yaml
# optimizer_in_param_dtype.bnb32_states_per_param). torchao's are TORCHAO_OPTIMIZERS.
BITSANDBYTES_OPTIMIZERS = ("adamw8bit", "paged_adamw", "paged_adamw8bit")


def remainder_weights_conflict(optimizer_precision: str | None, precision: str, fp8_params: bool = False) -> str | None:
    """What keeps `optimizer_precision`'s remainders from applying, as the job names it (None = nothing): the low 16
    bits complete an fp32 master only under a bf16 weight (Apex distributed_fused_adam.py requires BF16 params and
    FP32 state; NeMo 1 stores full params under fp8_params), so not under fp16 / fp32 weights nor FP8 primary ones.
    One rule for the job file (spec) and the estimators' own callers (estimate.memory)."""
    if optimizer_precision not in REMAINDER_PRECISIONS:
        return None
    if precision not in ("bf16", "fp8"):
        return f"precision {precision}"
    return "fp8_param_allgather true" if precision == "fp8" and fp8_params else None


def bf16_master_conflict(optimizer_precision: str | None, precision: str) -> str | None:
    """What keeps bf16-master from applying, as the job names it (None = nothing): DeepSpeed keeps a bf16 master copy
    under its bf16 engine only (runtime/precision_config.py bf16_master_weights_and_grads, in the bf16 section), so
    on bf16 weights, not fp16 / fp32 / fp8 ones. One rule for the job file (spec) and the estimators' callers."""
    if optimizer_precision != "bf16-master" or precision == "bf16":
        return None
    return f"precision {precision}"


def optimizer_precisions_for(optimizer: str) -> tuple[str, ...]:
    """The optimizer_precision values `optimizer` allows."""
    if optimizer == "adamw":
        return OPTIMIZER_PRECISIONS
    if optimizer in ADAMW_PRECISION_OPTIMIZERS:  # bitsandbytes' paged AdamW keeps no remainders
        return tuple(p for p in OPTIMIZER_PRECISIONS if p not in REMAINDER_PRECISIONS)
    return ("fp32", "bf16") if optimizer in LOW_BIT_ADAMW_OPTIMIZERS else ("fp32",)

# The dtype a LoRA job's frozen base model is loaded in (transformers from_pretrained torch_dtype): compute = the
# training precision's (16 bit under bf16 / fp16), fp32 = float32, as PEFT's examples/sft/utils.py loads an
# unquantised model (torch_dtype float32 where quant_storage_dtype is None) and transformers 4.x loads a model whose
# script names no torch_dtype. It is held so where no stack casts it: FSDP's MixedPrecision casts a unit's shard
# to param_dtype only when it gathers it, autocast each weight at each use; DeepSpeed's 16-bit engine casts the module
# at start (memory._frozen_base_fp32).
FROZEN_BASE_DTYPES = ("compute", "fp32")

# LoRA: the modules an adapter may target (PEFT target_modules names of Llama-style models).
LORA_LINEAR_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")  # all-linear
LORA_TARGETS = (
    "q_proj",
    "k_proj",
    "v_proj",
    "qkv_proj",  # fused QKV (GPT-2 c_attn, Qwen-1 c_attn, Phi-3 qkv_proj)
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
    "embed_tokens",  # trained in full (PEFT modules_to_save)
    "lm_head",  # trained in full (PEFT modules_to_save)
    "lm_head_adapter",  # a LoRA adapter on the frozen LM head (LitGPT lora_head; PEFT target_modules "lm_head")
    "all-linear",  # every linear of LORA_LINEAR_TARGETS
)
# When a job names no targets: PEFT's default for Llama-style models (peft/utils/constants.py
# TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING, "llama": ["q_proj", "v_proj"]).
LORA_DEFAULT_TARGETS = ("q_proj", "v_proj")
# LoRA adapter implementations (job lora.impl; perf_constants.yaml lora.impls): how an adapted linear runs its
# adapter. peft: B(A(x)) scaled by alpha / r on its output, dropout on the input (PEFT LoraLayer, torchtune
# LoRALinear, Megatron-Bridge LoRALinear); automodel: NeMo AutoModel's LinearLoRA, the scale on A's rank-wide output
# and dropout on the adapter's output (PeftConfig dropout_position 'post'); automodel-triton: its TritonLinearLoRA
# (use_triton, which AutoModel turns off wherever Transformer Engine imports: _peft/lora.py patch_linear_module);
# litgpt: LitGPT's LoRALinear / LoRAQKVLinear (one adapter over the fused qkv linear, dropout on the input), v0.3.1 on;
# litgpt-2023: the same before v0.3.1 (Lit-GPT 2023), which builds the qkv padding index from a Python list every
# forward (perf_constants.yaml lora.index_list_per_forward); peft-base-dtype: PEFT's Linear with its adapters in the
# base weights' dtype (PEFT before 0.12.0, or autocast_adapter_dtype=False), so no fp32 input cast runs (QLoRA: where
# the 4-bit weights are stored as a float, bnb_4bit_quant_storage bf16 / fp16; memory_constants.yaml lora).
LORA_IMPLS = ("peft", "automodel", "automodel-triton", "litgpt", "litgpt-2023", "peft-base-dtype")
