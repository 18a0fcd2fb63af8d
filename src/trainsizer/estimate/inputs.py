"""The three descriptions every estimator takes (Calculon-style: model / system / strategy kept apart).

- `Training`: what is trained and how (method, precision, optimizer, sequence length, batch, LoRA).
- `System`: the hardware as the formulas need it (per-GPU peaks, memory, links), built from the catalog.
- `Strategy`: how the job is split (TP/PP/VPP/DP/CP/EP, ZeRO/FSDP, micro-batch, recompute, offload).

`Strategy` fields may be plain scalars or numpy arrays of equal length: the estimators are written with
numpy operations so one call evaluates many strategies (the search relies on this).
The model itself is `trainsizer.models.arch.ModelArch`.

Units: bytes are counted as bytes; `_gib` = 2**30 bytes, `_gb_s` = 10**9 bytes/s, `_gbps` = 10**9 bits/s,
`_tflops` = 10**12 FLOP/s, `_s` seconds, `_w` watts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from trainsizer.estimate.sample_lengths import real_tokens
from trainsizer.messages import msg

# The names a job file shares with the estimators: one definition in trainsizer.names, re-exported here.
from trainsizer.names import FRAMEWORKS as FRAMEWORKS
from trainsizer.names import LOSS_IMPLS as LOSS_IMPLS
from trainsizer.names import METHODS as METHODS
from trainsizer.names import OFFLOAD as OFFLOAD
from trainsizer.names import OPTIMIZERS as OPTIMIZERS
from trainsizer.names import PRECISIONS as PRECISIONS
from trainsizer.names import RECOMPUTE as RECOMPUTE

# Strategy fields by kind: integer degrees and sizes, mode names (codes in arrays), on/off flags.
DEGREE_FIELDS = ("tp", "pp", "vpp", "dp", "cp", "ep", "zero", "shard_group", "micro_batch")
MODE_FIELDS = ("recompute", "offload")
FLAG_FIELDS = ("sequence_parallel", "distributed_optimizer", "pipeline_embedding_layer", "pipeline_loss_layer")
# Encodings used inside Strategy arrays (so vectors stay numeric).
RECOMPUTE_CODE = {name: i for i, name in enumerate(RECOMPUTE)}
OFFLOAD_CODE = {name: i for i, name in enumerate(OFFLOAD)}


def act_bytes(precision: str) -> int:
    """Bytes of one element in the compute dtype (activations, 16-bit weight copies, TP/PP/EP messages):
    2 under bf16/fp16/fp8 mixed precision (FP8 GEMM inputs aside, see activations.py), 4 for fp32 training."""
    return 4 if precision == "fp32" else 2


@dataclass(frozen=True)
class Training:
    """What is trained and how; independent of hardware and of how it is split."""

    method: str = "pretrain"
    precision: str = "bf16"
    optimizer: str = "adamw"
    seq_len: int = 4096
    global_batch_seqs: int = 256
    lora_rank: int = 0
    lora_targets: tuple[str, ...] = ()  # q_proj k_proj v_proj o_proj gate_proj up_proj down_proj
    lora_dropout: float = 0.0  # dropout probability on each adapter (0 = none)
    lora_impl: str = "peft"  # adapter implementation (names.LORA_IMPLS; perf_constants.yaml lora.impls)
    lora_a2a: bool = False  # NeMo a2a_experimental: row-parallel adapters' outputs stay TP-split under SP
    flash_attention: bool = True
    # SDPA given an explicit mask (Job.explicit_attention_mask): its memory-efficient backend over the whole s x s
    # square (compute._attention_core full_square) at attention.mem_efficient_over_fa2 of the FA2 rate
    explicit_attention_mask: bool = False
    tokens_total: float = 0.0  # tokens to train on (all epochs); 0 = unknown
    # MoE routing imbalance: tokens reaching the busiest expert / rank relative to balanced routing (1.0).
    # Dropless routing: the observed max/mean load; token-dropping routers (Switch Transformer, Fedus et al.
    # 2021 s2.1; Megatron-Core --moe-expert-capacity-factor): the capacity factor, each expert buffer padded
    # to capacity_factor x tokens*top_k/experts. Scales the dispatched (routed) activations, the expert GEMMs,
    # the token permutation and the EP all-to-all on the busiest GPU. A named input, not fitted.
    moe_capacity_factor: float = 1.0
    # MTP passes a step (Job.mtp_passes: one module's weights run this many times); 0 = one a module
    # (ModelArch.mtp_layers; model_states.mtp_passes)
    mtp_passes: int = 0
    # Which experts a balanced router gives a token (names.MOE_ROUTINGS): "random" (k distinct experts uniformly) or
    # "round-robin" (token i: experts k i ... k i + k - 1 mod E, torchtitan's debug force-balance, which still runs the
    # gate GEMM) or "fake-balanced" (the same experts from NeMo AutoModel's FakeBalancedGate, no gate GEMM). Sets how
    # many EP ranks / NVLink domains a DeepEP-style dispatch sends each token to, and whether the router GEMM runs;
    # "natural" (the trained router's own choice) spreads as "random" and, at moe_capacity_factor 1.0, has the step
    # charge the busiest EP rank's derived load (step_time._natural_routing_load, estimate.moe_load).
    moe_routing: str = "random"
    # Rows padded to seq_len with one pad token (padding="max_length"): the share of the positions that are padding.
    # Every position is computed; in an MoE layer the pad positions route alike, to one set of top-k experts
    # (step_time._expert_token_split). 0 = no such padding: balanced routing.
    pad_share: float = 0.0
    # Dropout probabilities (Job.hidden_dropout / attention_dropout): > 0 keeps the masks the backward reads
    # (estimate.activations: the residual dropouts' 1 byte an element, the attention dropout's outside fused kernels)
    hidden_dropout: float = 0.0
    attention_dropout: float = 0.0
    # FP8 scaling recipe (precision fp8 only): "auto" (the accelerator's default: MXFP8 on Blackwell, delayed
    # scaling elsewhere), "delayed", "tensorwise", "rowwise", "mxfp8" (perf_constants.yaml `fp8`).
    fp8_recipe: str = "auto"
    # decoder layers kept in BF16 under precision fp8 (Megatron-Core first_last_layers_bf16: the first and last ones);
    # 0 = all in the low precision. Their GEMMs run at the 16-bit rate with no casts, their saved inputs are 16-bit
    # and they keep no low-precision weight copy (estimate.activations.low_precision_share)
    bf16_layers: int = 0
    # Sequence packing (NeMo SFT packed_sequence, TRL packing with position ids, torchtune PackedDataset): short
    # samples share a seq_len row and attend only within themselves (varlen attention), so the attention core
    # spans the average sample length. 0 = unpacked (or no shorter samples): the whole seq_len.
    attention_span: int = 0
    # Unpacked samples (no packing; data given as samples x avg_tokens): each micro-batch is padded to its longest
    # sample, truncated at seq_len (estimate.sample_lengths). `sample_mean_tokens` is the samples' mean length
    # before truncation, `sample_sigma` the spread of ln(length) (lognormal; 0 = all samples that long).
    # 0 = every row seq_len long (pre-training text, packed rows, or no per-sample description): today's rows.
    sample_mean_tokens: float = 0.0
    sample_sigma: float = 0.0
    sample_max_tokens: float = 0.0  # the longest sample (data.max_tokens); 0 = unknown: as long as seq_len
    # unpacked samples drawn in length-sorted megabatches (data.group_by_length: transformers' LengthGroupedSampler):
    # the dataset's samples, which set the megabatch (sample_lengths.grouped_megabatch); 0 = random micro-batches
    length_grouped_samples: float = 0.0
    # Packed samples: the share of a row's seq_len positions that hold sample tokens, the rest padding. 1.0 = full
    # rows (first-fit-decreasing packers: NeMo, LLaMA-Factory; concatenated text); below 1 where the framework
    # packs in order and pads each pack once the next sample does not fit (torchtune PackedDataset: next fit,
    # sample_lengths.next_fit_fill). tokens_per_step counts the sample tokens, not the padding.
    pack_fill: float = 1.0
    # Evaluation inside the run's wall-clock (job `evaluation`; estimate.evaluation): sequences in one pass over the
    # evaluation set, shaped as the training rows; the micro-batch it runs at (0 = the strategy's); passes over the
    # run. 0 samples or passes = no evaluation (the old behaviour).
    eval_samples: float = 0.0
    eval_micro_batch: int = 0
    eval_passes: int = 0
    # Checkpoint saves inside the run's wall-clock (job `checkpoint_saves`; estimate.checkpoint_saves): saves over the
    # run, and whether every node writes its shard (false: one process writes the whole state). 0 = none.
    save_count: int = 0
    save_sharded: bool = False

    @property
    def trains_base_weights(self) -> bool:
        return self.method not in ("lora", "qlora")

    @property
    def sequences_per_sample(self) -> int:
        """DPO: a sample is a preference pair, chosen + rejected, both run through policy and reference
        (Rafailov et al. 2023, DPO; TRL DPOTrainer concatenates the pair into one forward)."""
        return 2 if self.method == "dpo" else 1

    @property
    def has_reference_model(self) -> bool:
        """DPO keeps a frozen copy of the initial policy and runs its forward on every pair."""
        return self.method == "dpo"

    @property
    def per_sample_rows(self) -> bool:
        """Rows padded per micro-batch to the longest sample (unpacked samples), not seq_len long."""
        return self.sample_mean_tokens > 0

    @property
    def row_cap(self) -> float:
        """The longest row of unpacked samples: seq_len, or the longest sample when shorter (data.max_tokens)."""
        if self.sample_max_tokens > 0:
            return float(min(self.seq_len, self.sample_max_tokens))
        return float(self.seq_len)

    @property
    def peak_row_tokens(self) -> float:
        """Positions per row of the longest micro-batch, what peak memory is planned for: seq_len, or for
        unpacked samples the longest sample's length when data.max_tokens says it is shorter (one such sample pads
        its whole micro-batch to it)."""
        return self.row_cap if self.per_sample_rows else float(self.seq_len)

    @property
    def sample_tokens(self) -> float:
        """Real (not padding) tokens of one sequence: E[min(L, seq_len)] for unpacked samples, else seq_len."""
        if not self.per_sample_rows:
            return float(self.seq_len)
        return real_tokens(self.sample_mean_tokens, self.sample_sigma, self.row_cap)

    @property
    def tokens_per_step(self) -> int:
        """Tokens processed per optimizer step (both sequences of a DPO pair): real tokens, not padding (neither
        an unpacked micro-batch's nor a next-fit pack's)."""
        if not self.per_sample_rows:
            if self.pack_fill < 1.0:  # packed rows with padding at the end of each pack
                return max(1, round(self.seq_len * self.pack_fill * self.global_batch_seqs * self.sequences_per_sample))
            return self.seq_len * self.global_batch_seqs * self.sequences_per_sample
        return max(1, round(self.sample_tokens * self.global_batch_seqs * self.sequences_per_sample))


def fp32_matmul_key(peaks: dict[str, float], tf32: bool = True) -> str:
    """The catalog peak an fp32 GEMM runs at: "tf32" where TF32 / XF32 is allowed (torch.backends.cuda.matmul
    .allow_tf32, torch.set_float32_matmul_precision("high")) and the part has it; else "fp32_matrix" (AMD's matrix
    cores at full fp32) or "fp32" (NVIDIA's CUDA cores: cuBLAS runs SGEMM without tensor cores at PyTorch's default
    precision "highest"), the first the part lists."""
    order = ("tf32", "fp32_matrix", "fp32") if tf32 else ("fp32_matrix", "fp32")
    return next((key for key in order if peaks.get(key)), "fp32")


@dataclass(frozen=True)
class System:
    """Hardware seen by the formulas: one GPU type, `gpus` of them, `gpus_per_node` per node."""

    accelerator: str  # catalog id
    gpus: int
    gpus_per_node: int
    memory_gib: float  # usable device memory per GPU
    peak_tflops: dict[str, float]  # dense peak per precision: {"bf16": 989, "fp8": 1979, ...}
    hbm_gb_s: float  # device memory bandwidth
    intra_node_gb_s: float  # scale-up bandwidth per GPU, one direction (NVLink 450 on H100; PCIe ~25)
    intra_node_latency_s: float = 3e-6
    scaleup_domain: int = 8  # GPUs sharing the scale-up fabric (NVL72: 72)
    nvls: bool = False  # NVLink SHARP (in-switch reduction) available
    # links per GPU of a switchless full-mesh scale-up fabric (AMD xGMI: 7); 0 = switched (estimate.comm)
    scaleup_mesh_links: int = 0
    # NVLink bridges smaller than the host (8 PCIe H200 NVL in bridged groups of 4; intra_node_gb_s is then the
    # host's PCIe): the GPUs one bridge joins, its rate per GPU one direction, and its peer links where it is a
    # full mesh (a 4-way bridge: 3; 0 = a pair). A group held in one bridge runs at its rate (comm.bridge_rates);
    # 0 = no such bridge
    bridge_gpus: int = 0
    bridge_gb_s: float = 0.0
    bridge_mesh_links: int = 0
    # achieved network payload per GPU, one direction: NIC line rate x the network's NCCL efficiency
    # (e.g. one NDR400 NIC per GPU: 50 GB/s x 0.94 measured = 47; networks.yaml, scenario.NetworkView)
    inter_node_gb_s: float = 0.0
    # NCCL's all-to-all payload per NIC as a share of inter_node_gb_s (networks.yaml alltoall_payload_share: measured
    # on NDR400 0.92); 1.0 where the network has no such measurement (step_time.nccl_alltoall_rates)
    inter_node_alltoall_share: float = 1.0
    inter_node_latency_s: float = 5e-6
    # scale-out fabric oversubscribed above zones of `zone_gpus` (down:up = `oversubscription`); 0 / 1.0 =
    # non-blocking (estimate.comm zone rules; spec.FabricSpec)
    zone_gpus: int = 0
    oversubscription: float = 1.0
    tdp_w: float = 700.0
    host_ram_gib: float = 0.0  # per node, for CPU offload
    pcie_gb_s: float = 25.0  # host<->device per GPU, one direction
    power_limit_w: float = 0.0  # board power cap below the TDP (nvidia-smi -pl); 0 = runs at its TDP
    # the part's vendor code (catalog accelerators.yaml `vendor`: nvidia, amd, ...); "" = not known (a System built
    # by hand), where no vendor rule applies (validate FLEX_DISPATCHER_VENDORS)
    vendor: str = ""
    # the L2's measured re-read rate and the largest data set read back at it (catalog l2_cache read_tb_s /
    # resident_mib); 0 = not measured, no L2 term (compute.l2_reread_credit)
    l2_read_gb_s: float = 0.0
    l2_resident_mib: float = 0.0
    # SMs, the threads and 32-bit registers one SM holds, and a dependent DRAM load's latency (catalog sm_occupancy);
    # 0 = not given, no latency-bound kernel timed (step_time._bnb_8bit_kernel_s)
    sms: int = 0
    threads_per_sm: int = 0
    registers_per_sm: int = 0
    dram_latency_s: float = 0.0
    l2_latency_s: float = 0.0

    @property
    def nodes(self) -> int:
        return max(1, -(-self.gpus // self.gpus_per_node))

    @property
    def domain_gpus(self) -> int:
        """GPUs that share the fast scale-up fabric (NVL72: 72; DGX: 8; PCIe box: GPUs per node)."""
        return int(max(self.scaleup_domain, self.gpus_per_node, 1))

    def peak(self, precision: str, tf32: bool = True) -> float:
        """Dense peak TFLOP/s for a training precision. fp32: the TF32 (AMD XF32) tensor rate where `tf32` and the
        part has one, else its matrix FP32 (AMD fp32_matrix), else its vector FP32 (`fp32_matmul_key`)."""
        value = self.peak_tflops.get(fp32_matmul_key(self.peak_tflops, tf32) if precision == "fp32" else precision)
        if not value:
            from trainsizer.errors import SpecError

            supported = sorted(k for k, v in self.peak_tflops.items() if v)
            raise SpecError(
                "precision",
                msg("no_dense_throughput", accelerator=self.accelerator, precision=precision),
                value=precision,
                allowed=supported,
            )
        return float(value)


@dataclass(frozen=True)
class Strategy:
    """Parallel layout and memory options. Any numeric field may be a numpy array (one entry per strategy).

    `zero`: 0 none, 1 optimizer states, 2 + gradients, 3 + parameters (FSDP full shard = 3,
    FSDP hybrid shard = 3 with `shard_group` GPUs per shard group). `distributed_optimizer` is Megatron's
    (equivalent to ZeRO-1 over DP). `recompute` and `offload` use RECOMPUTE_CODE / OFFLOAD_CODE when arrays.
    """

    tp: Any = 1
    pp: Any = 1
    vpp: Any = 1
    dp: Any = 1
    cp: Any = 1
    ep: Any = 1
    # expert tensor-parallel degree (Megatron-Core expert_tensor_parallel_size): None = the framework's default
    # (validate.expert_tp); one value for the whole batch
    etp: Any = None
    zero: Any = 0
    shard_group: Any = 0  # 0 = all of DP; else the ZeRO group (zero 1 / 2 / 3) or the FSDP hybrid-shard group
    micro_batch: Any = 1
    # sequences per DP rank one pipeline schedule runs (torchtitan / NeMo AutoModel local_batch_size): the step runs
    # global / (dp x local_batch) schedules, each with its own fill and drain; None = one schedule a step (Megatron);
    # one value for the whole batch of strategies
    local_batch: Any = None
    recompute: Any = "selective"
    # Megatron-Core recompute_modules (names.RECOMPUTE_MODULES): what "selective" re-runs; None = the attention
    # core (its default ["core_attn"]); one value for the whole batch
    recompute_modules: tuple[str, ...] | None = None
    # partial full recompute (names.RECOMPUTE_METHODS; Megatron-Core recompute_method / recompute_num_layers), where
    # recompute is full: per model chunk "uniform" checkpoints groups of N layers, "block" the first N; None = every
    # layer on its own; one method for the whole batch, N one value or an array of one per strategy
    # (estimate/partial_recompute.py; the search's partial-recompute pass)
    recompute_method: str | None = None
    recompute_num_layers: Any = None
    offload: Any = "none"
    sequence_parallel: Any = True  # Megatron SP; only matters when tp > 1
    distributed_optimizer: Any = False
    # Megatron-Core account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split: the input
    # embedding (first stage) and the LM head + loss (last stage) each take one layer slot of the split, so
    # pp * vpp may exceed the decoder layers by up to 2 and the outer stages hold fewer decoder layers.
    pipeline_embedding_layer: Any = False
    pipeline_loss_layer: Any = False
    # decoder layers the first / last pipeline rank holds, all its chunks together (Megatron-Core
    # num_layers_in_first/last_pipeline_stage or a pipeline_model_parallel_layout; pipeline.stage_layer_range): the
    # other ranks split the rest evenly; None = not stated (the split above); one value for the whole batch
    pp_first_stage_layers: int | None = None
    pp_last_stage_layers: int | None = None
    # decoder layers of every pipeline rank in order (nanotron's compute-balanced build_model, a Megatron-Core
    # pipeline_model_parallel_layout); None = not stated (the fields above); one tuple for the whole batch
    pp_stage_layers: tuple[int, ...] | None = None
    # element-wise work in fused kernels: torch.compile (torchtitan, HF torch_compile) or a framework's own
    # fused kernels (Transformer Engine, Apex); False = eager PyTorch, one kernel per op (PyTorch frameworks); None =
    # not stated: the stack's default (framework.torch_compile_of), one value for the whole batch of strategies
    torch_compile: bool | None = None
    compile_loss: bool | None = None  # torchtitan CompileConfig components holds "loss"; None = with torch_compile
    # torchtitan's per-op SAC keeps the attention output (PerfStyle.sac_saves_attention); None = true
    sac_saves_attention: bool | None = None
    # fp32 GEMMs on the TF32 / XF32 tensor cores (PyTorch allow_tf32, HF TrainingArguments tf32); None = the stack's
    # default (PerfStyle.fp32_matmul_tf32); acts under precision fp32 only (calibration.rates); one value for the batch
    tf32: bool | None = None
    loss_impl: str = "auto"  # one of LOSS_IMPLS, one value for the whole batch of strategies
    # Framework options (one value for the whole batch; None = the framework style's default):
    tp_comm_overlap: Any = None  # TP communication overlapped with GEMMs (Megatron --tp-comm-overlap, async TP)
    # FP8 weight all-gather: torchtitan enable_fsdp_float8_all_gather (FSDP2); Megatron-Core --fp8-param-gather,
    # whose GEMM weights are stored in FP8 (no bf16 copy)
    fp8_param_allgather: Any = None
    # the FP8 primary weights' transposes cached between uses (TE); False = Megatron-Core
    # disable_parameter_transpose_cache (TELinear passes is_first_microbatch None: re-made at each use); None = kept
    fp8_transpose_cache: Any = None
    # Megatron-Core grad_reduce_in_fp32 (None = the style's default: fp32 main_grad); false = bf16 gradient
    # buffer, reduced in bf16 (NeMo / Megatron-Bridge performance recipes); torchtitan mixed_precision_reduce
    grad_reduce_in_fp32: Any = None
    # gradient reduction overlapped with the backward (None = the style's); False = after the last backward
    # (Megatron-LM local DDP before Megatron-Core's --overlap-grad-reduce; DeepSpeed ZeRO-0 / 1)
    grad_reduce_overlap: Any = None
    # ZeRO-1 all-reduces the gradients instead of reduce-scattering them (None = the style's; True = nanotron's
    # ZeRO-1, DeepSpeed's PipelineEngine): step_time._dp_comm_replicated
    zero1_grad_allreduce: Any = None
    # Megatron-FSDP's data_parallel_sharding_strategy (names.MEGATRON_FSDP_SHARDINGS; None = fsdp full is
    # optim_grads_params): step_time._job_options, _megatron_fsdp_host_s
    megatron_fsdp_sharding: Any = None
    # parameters per gradient bucket (Megatron-Core --ddp-bucket-size; None = the style's: step_time._dp_comm_replicated)
    grad_bucket_params: Any = None
    # Megatron gradient_accumulation_fusion (None = the style's): False = each micro-batch's 16-bit weight gradient
    # added into the fp32 main gradient by its own kernel (step_time._hp_grad_accum); True = fused into the wgrad GEMM
    gradient_accumulation_fusion: Any = None
    attention_kernel: Any = None  # "fa1" | "fa2" | "triton" | "native" | "sdpa" | "flex" (names.ATTENTION_KERNELS); None = the style's
    norm_kernel: Any = None  # "fused" | "eager" (names.NORM_KERNELS); None = the style's; memory and step time
    # "fused" | "fp32_softmax" (names.EAGER_ATTENTION_IMPLS): non-flash attention's element-wise chain; None = the
    # style's; step time
    eager_attention: Any = None
    # q, k, v and gate, up as separate linears (transformers' modules); None = the style's
    # (PerfStyle.split_projections); step time
    split_projections: Any = None
    cp_comm_type: Any = None  # "p2p" | "all_gather" | "a2a" (names.CP_COMM_TYPES); None = p2p; step time
    pp_fsdp_once_per_step: Any = None  # FSDP2 under pipelining syncs once a step; None = the style's; step time
    # the loss over vocabulary-sharded logits under TP; False = the head's output gathered to every TP rank (each holds
    # the micro-batch's whole logits: torchtitan disable_loss_parallel, KempnerForge); None = the style's (sharded); memory
    loss_parallel: Any = None
    # FSDP2 set_requires_gradient_sync(False) on all but the last micro-batch: unsharded gradients held in the reduce
    # dtype across micro-batches (torch FSDPParam.to_accumulated_grad_if_needed); None = synced every one; memory
    fsdp_no_sync: Any = None
    # when FSDP2 frees its gathered parameters: "forward" | "backward" | "step" (names.FSDP_RESHARDS); None = the
    # style's; memory and step time
    fsdp_reshard: Any = None
    # the token embedding split over the TP ranks; False = replicated on each (KempnerForge); None = the style's
    # (split); memory
    embedding_parallel: Any = None
    repeat_kv: Any = None  # PyTorch ring's K / V at the query heads' width (repeat_kv); None = the style's; step time
    moe_tp_token_split: Any = None  # expert TP 1: TP ranks dispatch 1 / tp of the tokens each; None = the style's; step time
    # "fused" | "eager" (names.ACTIVATION_KERNELS): the SwiGLU activation; None = the style's; memory and step time
    activation_kernel: Any = None
    rope_kernel: Any = None  # "fused" | "eager" (names.ROPE_KERNELS): q and k's rotation; None = the style's; step time
    # Transformer Engine FP8 dot-product attention (Megatron-Core fp8_dot_product_attention, NeMo FP8_DPA with
    # NVTE_FP8_DPA_BWD): cuDNN's FP8 fused attention forward and backward, q / k / v / output saved in FP8; None = off
    fp8_attention: Any = None
    # Megatron-Core activation_func_fp8_input_store (NeMo FP8_ACT): the SwiGLU input saved in FP8; None = off; memory
    fp8_activation_store: Any = None
    # Megatron-Core fp8_output_proj: the LM head's GEMMs in MXFP8 (TELMHeadColumnParallelLinear); None = off; step time
    fp8_lm_head: Any = None
    # Megatron-Core defer_embedding_wgrad_compute: the LM head's weight-gradient GEMMs after the pipeline flush, the
    # first wgrad_deferral_limit micro-batches' (0 / None = all); None = off; step time (step_time._deferred_head_wgrad)
    defer_embedding_wgrad: Any = None
    wgrad_deferral_limit: Any = None
    # "none" | "layer" | "full_iteration" (names.CUDA_GRAPHS); None = none; one value for the whole batch
    cuda_graphs: Any = None
    # cuDNN release of the fused attention, "9.13" | "9.17" (names.CUDNN_RELEASES); None = 9.13, the release the
    # Blackwell attention rates are derived at; step time
    cudnn_release: Any = None
    # the Megatron-Core release line a megatron-core job runs, "MAJOR.MINOR" (framework.MCORE_RELEASE_FACTS: what
    # depends on it); None = the present reading; one value for the whole batch; legality
    megatron_core_version: Any = None
    # the PyTorch release line the job runs, "MAJOR.MINOR" (framework.TORCH_RELEASE_FACTS: what depends on it); None =
    # as before (each fact's older reading); one value for the whole batch; memory and step time
    torch_version: Any = None
    # AMD native attention: the MLA backward on CDNA 4 in AITER's assembly kernel (True) or CK's padded tile (False);
    # None = True (AITER >= 7a41cca); step time
    aiter_mla_bwd_asm: Any = None
    # QLoRA: "fp16" | "compute" (names.NF4_DEQUANT_DTYPES), the dtype bitsandbytes' dequantize_4bit writes; None =
    # compute (bitsandbytes 0.43+); step time
    nf4_dequant_dtype: Any = None
    # QLoRA: "lut" | "tree" (names.NF4_DECODES), how bitsandbytes' dequantisation kernel decodes a 4-bit code; None =
    # lut (0.48.0+); step time
    nf4_decode: Any = None
    # QLoRA: bitsandbytes' double quantisation of the block constants; None = true (memory_constants.yaml
    # qlora.double_quant); false = one fp32 absmax a block; memory and step time
    nf4_double_quant: Any = None
    # QLoRA (bitsandbytes): every 4-bit linear keeps its input for the backward (bitsandbytes < 0.43.2); the LM head
    # is a 4-bit linear too (Lightning's BitsandbytesPrecision); None = neither (memory.nf4_options); memory
    nf4_saves_input: Any = None
    # QLoRA: bitsandbytes 0.41-0.46's 4-bit linears compute in their first input's fp32 / bf16 dtype, over
    # bnb_4bit_compute_dtype (Linear4bit.set_compute_type); None = false (0.47+); step time and memory
    bnb_compute_from_input: Any = None
    nf4_lm_head: Any = None
    # QLoRA with nf4_lm_head: positions a row hands the LM head a call (LitGPT 128); None = one call; step time
    lm_head_chunk: Any = None
    moe_dispatcher: str = "auto"  # one of MOE_DISPATCHERS (Megatron-Core MoE token dispatcher); one per batch
    # Megatron-Core overlap_moe_expert_parallel_comm (combined 1F1B: the EP all-to-all of one micro-batch beside the
    # compute of another); None = the style's (off); one value for the whole batch
    moe_a2a_overlap: Any = None
    # under moe_a2a_overlap: the expert MLP's weight gradient delayed (--delay-wgrad-compute; None = true), and the
    # CUDA_DEVICE_MAX_CONNECTIONS the run sets (1 = one hardware queue; None = more); step_time.combined_1f1b_layer_s
    delay_wgrad_compute: Any = None
    cuda_device_max_connections: Any = None
    # Megatron-Core use_transformer_engine_op_fuser with NVTE_CUTEDSL_FUSED_GROUPED_MLP: the routed experts' fc1, gated
    # activation and fc2 with their biases in Transformer Engine's fused grouped MLP (MXFP8 on SM100); None = off
    moe_fused_grouped_mlp: Any = None
    # the routed experts run torch._grouped_mm (PerfStyle.moe_torch_grouped_mm, its share of the dense rate) or not;
    # None = the style's (torchtitan: true); one value for the whole batch
    moe_torch_grouped_mm: Any = None
    # the routed experts run Primus-Turbo's grouped GEMM (PerfStyle.moe_turbo_grouped_gemm, its share of the dense rate)
    # or not; None = the style's (off); one value for the whole batch
    moe_turbo_grouped_gemm: Any = None
    # torchtitan's MoE glue runs eager (PerfStyle.moe_eager_glue); None = the style's (torchtitan: true); one value for
    # the whole batch
    moe_eager_glue: Any = None
    # the routed experts take their splits on the device (PerfStyle.moe_sync_free: no per-expert host launches);
    # None = the style's (off); one value for the whole batch
    moe_sync_free: Any = None
    # the alltoall dispatcher pads every expert to capacity (PerfStyle.moe_pad_to_capacity: no host wait, the
    # per-expert launches in the host floor); None = the style's (off, dropless); one value for the whole batch
    moe_pad_to_capacity: Any = None
    # Megatron-Core's MoE token permutation / router in Transformer Engine's fused kernels (moe_permute_fusion /
    # moe_router_fusion; PerfStyle.moe_permute_fused / moe_router_fused); None = the style's (megatron-core: fused, the
    # NeMo / Megatron-Bridge recipes); one value for the whole batch
    moe_permute_fusion: Any = None
    moe_router_fusion: Any = None
    # Megatron-Core's router load-balancing loss (names.MOE_AUX_LOSSES; PerfStyle.moe_aux_loss, step_time
    # _moe_layer_host_s / _moe_unfused_counts / _global_aux_loss_time); None = aux_loss; one value for the whole batch
    moe_aux_loss: Any = None
    # Megatron-Core's --moe-grouped-gemm (PerfStyle.moe_grouped_gemm: false = SequentialMLP, step_time
    # _sequential_mlp_time); None = the style's (grouped); one value for the whole batch
    moe_grouped_gemm: Any = None
    # Megatron-Core tp_only_amax_red: delayed scaling's per-chunk amax all-reduces over TP x CP, not TP x DP x CP
    # (PerfStyle.fp8_amax_tp_only; step_time._delayed_amax_reductions); None = false; one value for the batch
    tp_only_amax_red: Any = None
    # transformers' routed experts: "eager" (a loop, a host sync per expert) or "grouped_mm" (names.EXPERTS_IMPLEMENTATIONS;
    # PerfStyle.moe_expert_loop / moe_torch_grouped_mm); None = the style's (hf: grouped_mm); one value for the batch
    experts_implementation: Any = None
    # transformers 4.55 / 4.56's GptOssExperts loop: each hit expert's weights copied and saved (memory._expert_weight_copies)
    expert_weight_copies: Any = None
    # Megatron-Core fused_single_qkv_rope: RoPE on the unsplit qkv in one TE kernel, which takes no YaRN mscale, so a
    # model with an attention factor (gpt-oss) runs no unfused RoPE; None = off
    fused_qkv_rope: Any = None
    # GPT-NeoX's flash wrapper copies q, k, v into the packed layout and the output back (step_time._flash_qkv_pack_time)
    flash_qkv_pack: Any = None
    # Megatron-Core use_transformer_engine_op_fuser (NeMo USE_TE_OPS): TEFusedMLP's activation writes the FP8 operands
    # its neighbours read, and at TP 1 NeMo's TEFusedLoRALinear fuses the adapters into the base GEMMs; None = off
    te_op_fuser: Any = None
    # saved activations moved to host memory: True = every layer's (torchtune), N = the first N decoder layers of
    # a model chunk (Megatron-Core cpu_offloading_num_layers); one value for the whole batch
    activation_offload: bool | int = False
    optimizer_in_backward: bool = False  # each parameter stepped and its gradient freed in backward (torchtune)
    optimizer_impl: Any = None  # "fused" | "foreach" (names.OPTIMIZER_IMPLS); None = fused; time and step peak
    bnb_optimizer_block: Any = None  # 256 | 2048 (names.BNB_OPTIMIZER_BLOCKS); None = 256; time of 8-bit AdamW only
    # PYTORCH_CUDA_ALLOC_CONF expandable_segments; None = the framework's (estimate.allocator.EXPANDABLE_BY_DEFAULT);
    # MemoryEstimate.allocator_growth_bytes only
    allocator_expandable_segments: Any = None
    ddp_impl: Any = None  # "torch" | "megatron" (names.DDP_IMPLS); None = the style's; time only
    # how activation checkpointing re-runs a layer: "non_reentrant" | "reentrant" | "reentrant_outer"
    # (names.CHECKPOINT_IMPLS); None = the style's (PerfStyle.checkpoint_impl); time only
    checkpoint_impl: Any = None
    # how DeepSpeed ZeRO-3 gathers transformers' routed experts: "per_expert" | "block" (names.ZERO3_EXPERT_FETCHES;
    # step_time._deepspeed_expert_gathers); None = by the experts implementation; time only
    zero3_expert_fetch: Any = None
    # DeepSpeed ZeRO-3's bucket sizes: "deepspeed" | "auto" (names.ZERO3_BUCKET_SIZES; framework.deepspeed_zero3_buckets);
    # None = the style's (hf auto); time and memory
    zero3_bucket_sizes: Any = None
    # the model built under deepspeed.zero.Init (None = yes: DeepSpeed's memory-efficient linear); False = torch's
    # linear holds each gathered weight to its backward (memory._deepspeed_zero3_live); memory only
    zero_init: Any = None
    # the job's fsdp ("none" | "full" | "hybrid"): with zero 3, "none" is DeepSpeed's engine (module by module), the
    # others FSDP's (a decoder layer a unit); one value for the whole batch
    fsdp: Any = "none"
    # which torch FSDP the fsdp runs: 1 | 2 (names.FSDP_VERSIONS); None = the style's (step_time._fsdp_version_option);
    # time only
    fsdp_version: Any = None
    # AdamW states: "fp32" | "bf16-moments" | "bf16" | "fp32-remainders" | "bf16-moments-remainders" | "bf16-master"
    # (names.OPTIMIZER_PRECISIONS; 8-bit AdamW: fp32 | bf16, no master); None = fp32
    optimizer_precision: Any = None
    # QLoRA: PEFT prepare_model_for_kbit_training casts the non-quantised weights (embeddings, norms, LM head) to
    # fp32, so the residual stream is fp32 too (None = the framework's: hf yes, torchtune no)
    kbit_upcast: Any = None
    # torchtune 0.1 QLoRA: torchao 0.1's unchunked to_nf4 at model init (estimate.nf4_init); None = false
    nf4_quantize_unchunked: Any = None
    # LoRA: the dtype the frozen base is loaded in, "fp32" | "compute" (names.FROZEN_BASE_DTYPES; None = compute):
    # held so except on DeepSpeed's 16-bit engine (memory._frozen_base_fp32); memory only
    frozen_base_dtype: Any = None
    # the loop's torch.autocast under a 16-bit precision: False = none, so PEFT's fp32 adapters run in fp32
    # (step_time._peft_no_autocast); None = the framework's (hf: autocast); time only
    autocast: Any = None
    # what the loop holds of the loss phase when a checkpointed layer is re-run, "none" | "logits" | "loss"
    # (names.LIVE_AT_RERUN; None = the framework's: memory._live_at_rerun); memory only
    live_at_rerun: Any = None
    # the model returns its K / V cache in training (transformers' use_cache on beside an outer checkpoint wrapper):
    # each checkpointed layer's K and V held to the end of the forward (memory._returned_kv_bytes); None = no
    returns_kv_cache: Any = None
    # the MoE dispatcher keeps the router's output past the step (the Nous torchtitan fork's DeepEP manager): under
    # torchtitan's full AC each layer's re-run graph up to the router held (memory._held_rerun_graphs); None = no
    moe_router_output_held: Any = None
    # torchtune FSDP2 custom_sharded_layers ['tok_embeddings', 'output']: the embedding and LM head as their own units
    # (None / False: in the root unit, held gathered through forward and backward); one value for the whole batch
    shard_embedding_head_separately: Any = None
    # transformers' device_map "auto" (names.DEVICE_MAPS; estimate.device_map): pp is the cards holding layers, each
    # micro-batch runs through them one at a time (local_batch = micro_batch: one micro-batch a schedule), the end
    # cards' layers accelerate's balanced split (pp_stage_layers, every card's); None = none; one value for the batch
    device_map: Any = None
    framework: str = "auto"  # one of FRAMEWORKS; one value for the whole batch of strategies

    @property
    def gpus(self) -> Any:
        # EP is carved out of DP (Megatron-Core convention), so it does not multiply the GPU count.
        return self.tp * self.pp * self.dp * self.cp

    def recompute_code(self) -> Any:
        r = self.recompute
        if isinstance(r, str):
            return RECOMPUTE_CODE[r]
        return np.asarray(r)

    def offload_code(self) -> Any:
        o = self.offload
        if isinstance(o, str):
            return OFFLOAD_CODE[o]
        return np.asarray(o)

    def with_(self, **changes: Any) -> Strategy:
        return replace(self, **changes)
