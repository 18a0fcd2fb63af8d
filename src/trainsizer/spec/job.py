"""The job spec: the training job a user wants to run, as written in a YAML/JSON file.

These pydantic models are the input boundary. Unknown keys are errors; names of catalog entries and model
presets are checked later, when the job is resolved against the catalog (`trainsizer.scenario`).
"""

from __future__ import annotations

import re
import types
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from trainsizer.messages import Listing, msg
from trainsizer.names import (
    ACTIVATION_KERNELS,
    ATTENTION_KERNELS,
    BNB_OPTIMIZER_BLOCKS,
    CHECKPOINT_IMPLS,
    CP_COMM_TYPES,
    CUDA_GRAPHS,
    CUDNN_RELEASES,
    DDP_IMPLS,
    DEVICE_MAPS,
    EAGER_ATTENTION_IMPLS,
    EXPERTS_IMPLEMENTATIONS,
    FP4_RECIPES,
    FP8_RECIPES,
    FRAMEWORKS,
    FROZEN_BASE_DTYPES,
    FSDP_MODES,
    FSDP_RESHARDS,
    FSDP_VERSIONS,
    LIVE_AT_RERUN,
    LORA_DEFAULT_TARGETS,
    LORA_IMPLS,
    LORA_LINEAR_TARGETS,
    LORA_TARGETS,
    LOSS_IMPLS,
    MEGATRON_FSDP_SHARDINGS,
    METHODS,
    MOE_AUX_LOSSES,
    MOE_DISPATCHERS,
    MOE_ROUTINGS,
    NF4_DECODES,
    NF4_DEQUANT_DTYPES,
    NORM_KERNELS,
    OFFLOAD,
    OPTIMIZER_IMPLS,
    OPTIMIZER_PRECISIONS,
    OPTIMIZERS,
    PRECISIONS,
    RECOMPUTE,
    RECOMPUTE_METHODS,
    RECOMPUTE_MODULES,
    ROPE_KERNELS,
    ZERO3_BUCKET_SIZES,
    ZERO3_EXPERT_FETCHES,
    bf16_master_conflict,
    optimizer_precisions_for,
    remainder_weights_conflict,
)

Method = Literal[METHODS]
Precision = Literal[PRECISIONS]
Optimizer = Literal[OPTIMIZERS]
Recompute = Literal[RECOMPUTE]
RecomputeModule = Literal[RECOMPUTE_MODULES]
RecomputeMethod = Literal[RECOMPUTE_METHODS]
Offload = Literal[OFFLOAD]
Currency = Literal["USD", "CNY"]
Procurement = Literal["rent", "buy", "either"]
Cooling = Literal["air", "liquid", "rear-door"]
NetworkKind = Literal["ib", "roce", "efa", "ethernet"]
Fsdp = Literal[FSDP_MODES]
FsdpVersion = Literal[FSDP_VERSIONS]
MegatronFsdpSharding = Literal[MEGATRON_FSDP_SHARDINGS]
Fp8Recipe = Literal[FP8_RECIPES]
Framework = Literal[FRAMEWORKS]
LossImpl = Literal[LOSS_IMPLS]
MoeDispatcher = Literal[MOE_DISPATCHERS]
MoeRouting = Literal[MOE_ROUTINGS]
MoeAuxLoss = Literal[MOE_AUX_LOSSES]
ExpertsImplementation = Literal[EXPERTS_IMPLEMENTATIONS]
DeviceMap = Literal[DEVICE_MAPS]
AttentionKernel = Literal[ATTENTION_KERNELS]
NormKernel = Literal[NORM_KERNELS]
CpCommType = Literal[CP_COMM_TYPES]
ActivationKernel = Literal[ACTIVATION_KERNELS]
RopeKernel = Literal[ROPE_KERNELS]
EagerAttention = Literal[EAGER_ATTENTION_IMPLS]
FsdpReshard = Literal[FSDP_RESHARDS]
CudaGraphs = Literal[CUDA_GRAPHS]
CudnnRelease = Literal[CUDNN_RELEASES]
# a Megatron-Core version as its tags and branches spell it: 0.15 | 0.15.1 | core_r0.15.0 | core_v0.16.0rc1 | v0.16.0
MCORE_VERSION = re.compile(r"(?:core_[rv]|v)?(?P<major>\d+)\.(?P<minor>\d+)(?:\.\d+)?(?:rc\d+)?")
# a PyTorch version as pip / torch.__version__ print it: "2.9", "2.9.1", "v2.9.0", "2.9.0.dev20250815+cu128",
# "2.14.0+cu130", "2.10.0a0+b558c98" (NGC containers), "2.8.0rc4"
TORCH_VERSION = re.compile(r"v?(?P<major>\d+)\.(?P<minor>\d+)(?:\.\d+)?(?:(?:\.dev|a|rc)\d*)?(?:\+[0-9A-Za-z.]+)?")
Nf4DequantDtype = Literal[NF4_DEQUANT_DTYPES]
Nf4Decode = Literal[NF4_DECODES]
OptimizerImpl = Literal[OPTIMIZER_IMPLS]
BnbOptimizerBlock = Literal[BNB_OPTIMIZER_BLOCKS]
DdpImpl = Literal[DDP_IMPLS]
CheckpointImpl = Literal[CHECKPOINT_IMPLS]
Zero3ExpertFetch = Literal[ZERO3_EXPERT_FETCHES]
Zero3BucketSizes = Literal[ZERO3_BUCKET_SIZES]
LoraImpl = Literal[LORA_IMPLS]
OptimizerPrecision = Literal[OPTIMIZER_PRECISIONS]
FrozenBaseDtype = Literal[FROZEN_BASE_DTYPES]
LiveAtRerun = Literal[LIVE_AT_RERUN]

# the names above come from trainsizer.names (shared with the estimators)
# Bytes of raw UTF-8 text per token for BPE tokenizers with ~100k+ vocabularies on mixed English/code
# text (Llama 3 / Qwen tokenizer reports: ~4 characters per English token; override per dataset).
DEFAULT_BYTES_PER_TOKEN = 4.0

# Physical bounds: far beyond any real job, so they only stop typos and absurd values (1e30, .inf) from
# overflowing the arithmetic or printing nonsense. Largest public runs for scale: ~36e12 tokens (Qwen3,
# 2025), ~16k-100k GPUs per job, global batches of ~60M tokens (DeepSeek-V3: 15,360 x 4,096).
MAX_TOKENS = 1e15  # tokens (or samples) of data per epoch
MAX_DATASET_GB = 1e8  # 100 PB of text
MAX_GPUS = 1_000_000
MAX_BATCH_SEQUENCES = 100_000_000
MAX_BATCH_TOKENS = 10_000_000_000
MAX_RACK_KW = 2000.0  # kW per rack; the densest announced racks draw ~600 kW


class _Strict(BaseModel):
    # inf and NaN are never a meaningful quantity in a job (YAML `.inf` would otherwise pass `gt=0`)
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _bool_is_no_number(cls, value: Any, info: ValidationInfo) -> Any:
        """YAML true / false where a number belongs is an error: pydantic would read it as 1 / 0 (`seq_len: true`
        ran a one-token job, `data.avg_tokens: true` one-token samples)."""
        if isinstance(value, bool) and info.field_name in cls.model_fields:
            kinds = _leaf_types(cls.model_fields[info.field_name].annotation)
            if bool not in kinds and int in kinds and float not in kinds:
                raise PydanticCustomError("int_type", "Input should be a valid integer")
            if bool not in kinds and float in kinds:
                raise PydanticCustomError("float_type", "Input should be a valid number")
        return value


def _leaf_types(annotation: Any) -> set[Any]:
    """The types a (possibly Optional / union) field annotation admits at its top level."""
    if get_origin(annotation) in (Union, types.UnionType):
        return {t for arg in get_args(annotation) for t in _leaf_types(arg)}
    return {annotation}


class LoraSpec(_Strict):
    rank: int = Field(16, gt=0, le=4096)
    alpha: float | None = Field(None, gt=0, le=1e6)
    targets: tuple[str, ...] = LORA_DEFAULT_TARGETS
    # dropout probability on each adapter (PEFT lora_dropout, torchtune lora_dropout, NeMo AutoModel PeftConfig
    # dropout); 0 = none (PEFT's nn.Identity, F.dropout returns its input at p 0)
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    # adapter implementation (names.LORA_IMPLS): peft | automodel | automodel-triton | litgpt | litgpt-2023 |
    # peft-base-dtype; null = the framework's (model_states.lora_impl_default: peft-base-dtype for QLoRA under hf / auto,
    # TRL >= 0.26's bf16 adapters, unless kbit_upcast is stated true; peft otherwise)
    impl: LoraImpl | None = None
    # NeMo's a2a_experimental (MLPerf LORA_A2A): under sequence parallelism a row-parallel linear's adapter keeps its
    # output split over TP and all-to-alls it to the sequence-parallel layout instead of gathering it whole
    a2a: bool = False

    @field_validator("targets")
    @classmethod
    def _known_targets(cls, targets: tuple[str, ...]) -> tuple[str, ...]:
        if targets == ("all-linear",) or targets == ("all",):
            return LORA_LINEAR_TARGETS
        bad = [t for t in targets if t not in LORA_TARGETS]
        if bad:
            raise ValueError(msg("job_lora_target", target=repr(bad[0]), allowed=Listing(LORA_TARGETS)))
        if not targets:
            raise ValueError(msg("job_lora_no_target"))
        return targets


class DataSpec(_Strict):
    """How much data: tokens directly, or a dataset size in GB of text, or samples x average length.

    For DPO a sample is a preference pair and `avg_tokens` the length of one sequence (prompt + one
    response); `global_batch.sequences` then counts pairs, as TRL's batch size does."""

    tokens: float | None = Field(None, ge=1, le=MAX_TOKENS)
    dataset_gb: float | None = Field(None, ge=1e-6, le=MAX_DATASET_GB)
    bytes_per_token: float = Field(DEFAULT_BYTES_PER_TOKEN, ge=0.5, le=64)
    samples: float | None = Field(None, ge=1, le=MAX_TOKENS)
    avg_tokens: float | None = Field(None, ge=1, le=10_000_000)
    # spread of the sample lengths without packing: the standard deviation of ln(length), lengths lognormal
    # with mean avg_tokens (estimate.sample_lengths); None = every sample avg_tokens long
    length_sigma: float | None = Field(None, ge=0, le=3)
    # the longest sample (tokens); None = unknown, as long as seq_len. Unpacked rows are never longer, and peak
    # memory is planned for a micro-batch padded to min(max_tokens, seq_len)
    max_tokens: float | None = Field(None, ge=1, le=10_000_000)
    epochs: float = Field(1.0, gt=0, le=10_000)
    # unpacked samples drawn grouped by length: HF TrainingArguments group_by_length (transformers' LengthGroupedSampler
    # sorts megabatches of up to 50 per-device batches by length and cuts them into micro-batches, so each is padded to
    # little beyond its own samples); false = random micro-batches (the Trainer's default); needs samples
    group_by_length: bool = False

    @field_validator("max_tokens")
    @classmethod
    def _max_not_below_avg(cls, max_tokens: float | None, info: ValidationInfo) -> float | None:
        """On the field itself, so the error (and the web form's message) names data.max_tokens."""
        avg = info.data.get("avg_tokens")
        if max_tokens is not None and avg is not None and max_tokens < avg:
            raise ValueError(msg("job_max_below_avg", max_tokens=f"{max_tokens:g}", avg_tokens=f"{avg:g}"))
        return max_tokens

    @model_validator(mode="after")
    def _one_quantity(self) -> DataSpec:
        given = [k for k in ("tokens", "dataset_gb", "samples") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(msg("job_one_data_quantity",
                                 given=msg("job_given", names=Listing(given)) if given else ""))
        if self.samples is not None and self.avg_tokens is None:
            raise ValueError(msg("job_samples_need_avg"))
        if (self.length_sigma is not None or self.max_tokens is not None) and self.samples is None:
            raise ValueError(msg("job_length_sigma_needs_samples"))
        if self.group_by_length and self.samples is None:
            raise ValueError(msg("job_group_by_length_needs_samples"))
        return self

    @property
    def tokens_per_epoch(self) -> float:
        if self.tokens is not None:
            return self.tokens
        if self.dataset_gb is not None:
            return self.dataset_gb * 1e9 / self.bytes_per_token
        assert self.samples is not None and self.avg_tokens is not None
        return self.samples * self.avg_tokens

    @property
    def tokens_total(self) -> float:
        return self.tokens_per_epoch * self.epochs


class EvaluationSpec(_Strict):
    """Evaluation passes inside the run's wall-clock (Hugging Face Trainer eval_strategy with eval_dataset: the
    evaluation runs in Trainer._inner_training_loop's epoch loop, inside the train_runtime that
    train_samples_per_second divides; transformers 4.40 DefaultFlowCallback): forward only, no backward or optimizer,
    over `samples` sequences shaped as the training rows (seq_len, packing and lengths as `data` says), split over
    the data-parallel ranks in micro-batches of `micro_batch` (per_device_eval_batch_size; null = the strategy's).
    `every_steps`: eval_strategy steps with eval_steps (a pass at each multiple of it); null = eval_strategy epoch, a
    pass at the end of each epoch, also of a last one the run ends part-way (ceil of data.epochs). Absent: no
    evaluation (the old behaviour)."""

    samples: float = Field(ge=1, le=MAX_TOKENS)
    micro_batch: int | None = Field(None, gt=0, le=MAX_BATCH_SEQUENCES)
    every_steps: int | None = Field(None, gt=0, le=MAX_BATCH_SEQUENCES)


class CheckpointSavesSpec(_Strict):
    """Checkpoint saves inside the run's wall-clock (Hugging Face Trainer save_strategy: Trainer._save_checkpoint runs
    in _maybe_log_save_evaluate, inside the train_runtime that train_samples_per_second divides; transformers 4.40):
    each save writes the training state, every trainable weight with its master copy and optimizer states
    (save_model + optimizer.pt; a LoRA job's adapters only). `every_steps`: save_strategy steps with save_steps (a
    save at each multiple of it); null = save_strategy epoch, a save at the end of each epoch, also of a last one the
    run ends part-way (ceil of data.epochs). `sharded`: every node writes its shard (FSDP SHARDED_STATE_DICT,
    DeepSpeed ZeRO, torch.distributed.checkpoint); false = one process writes the whole state (one GPU, FSDP
    FULL_STATE_DICT). Absent: no saves (the old behaviour)."""

    every_steps: int | None = Field(None, gt=0, le=MAX_BATCH_SEQUENCES)
    sharded: bool = False


class GlobalBatch(_Strict):
    sequences: int | None = Field(None, gt=0, le=MAX_BATCH_SEQUENCES)
    tokens: int | None = Field(None, gt=0, le=MAX_BATCH_TOKENS)

    @model_validator(mode="after")
    def _one(self) -> GlobalBatch:
        if (self.sequences is None) == (self.tokens is None):
            raise ValueError(msg("job_one_batch"))
        return self

    def sequences_for(self, seq_len: int) -> int:
        if self.sequences is not None:
            return self.sequences
        assert self.tokens is not None
        return max(1, round(self.tokens / seq_len))


class Budget(_Strict):
    # one whole unit of the currency ($1, ¥1) at least: a smaller budget is a typo (1e-300 passed `gt=0`)
    amount: float = Field(ge=1, le=1e13)
    currency: Currency = "USD"


class Goal(_Strict):
    # At least ~1.5 minutes: shorter is no training deadline, and a subnormal one overflows the planner's
    # GPU-count extrapolation (found by the web API's contract tests).
    deadline_days: float | None = Field(None, ge=0.001, le=3650)
    budget: Budget | None = None
    procurement: Procurement = "either"
    objective: Literal["time", "cost", "cost_under_deadline", "time_within_budget"] | None = None


# The currency a job is priced in when it names none (constraints.currency, goal.budget.currency): the market's. A
# China-market buyer is quoted in CNY and the catalog prices China SKUs (H800, H20, RTX 4090 D) in CNY only, so a USD
# default there left them unpriced; the job's notes say when the market chose it (scenario.note_currency_market).
MARKET_CURRENCY: dict[str, Currency] = {"global": "USD", "china": "CNY", "china-domestic": "CNY"}


class Constraints(_Strict):
    exclude: tuple[str, ...] = ()
    include: tuple[str, ...] | None = None
    max_nodes: int | None = Field(None, gt=0, le=MAX_GPUS)
    max_gpus: int | None = Field(None, gt=0, le=MAX_GPUS)
    rack_kw: float | None = Field(None, ge=0.1, le=MAX_RACK_KW)
    cooling: Cooling | None = None
    existing_network: str | None = None
    currency: Currency = "USD"  # unset: the budget's, else the market's (Job._one_currency)
    market: Literal["global", "china", "china-domestic"] = "global"


class NetworkSpec(_Strict):
    nics_per_node: int = Field(gt=0, le=64)
    gbps_per_nic: float = Field(ge=1, le=3200)
    kind: NetworkKind = "ib"


class FabricSpec(_Strict):
    """The scale-out fabric's oversubscription: GPUs in one zone of `zone_gpus` (a pod under full bisection)
    reach each other at the NIC rate; traffic leaving a zone shares its uplinks, `oversubscription` times fewer
    than its GPUs' NIC ports (down:up; Llama 3 405B's RoCE cluster: 3,072-GPU pods, 1:7 above them, Llama 3
    paper arXiv:2407.21783 s3.3.1). Absent: non-blocking, as the plan builds the compute fabric."""

    oversubscription: float = Field(ge=1.0, le=64.0)
    zone_gpus: int = Field(gt=0, le=MAX_GPUS)


class HardwareSpec(_Strict):
    """`per_node`: GPUs per host (server, or compute tray of a rack-scale system: 4 on GB200 NVL72); None =
    the accelerator's catalog host size (8 unless the catalog says otherwise). The NVLink scale-up domain
    (72 on NVL72) comes from the catalog; a job may use part of one and any whole number of hosts.
    `accelerator` None ("1,024 GPUs, any accelerator"): `trainsizer plan` searches the catalog with the count (and
    per_node, network, fabric when given) pinned; estimate, fit and build need an accelerator."""

    accelerator: str | None = None
    count: int = Field(gt=0, le=MAX_GPUS)
    per_node: int | None = Field(None, gt=0, le=72)
    network: str | NetworkSpec | None = None
    fabric: FabricSpec | None = None

    @model_validator(mode="after")
    def _whole_nodes(self) -> HardwareSpec:
        if self.per_node is not None and self.count > self.per_node and self.count % self.per_node:
            raise ValueError(msg("job_whole_nodes", count=self.count, per_node=self.per_node))
        return self


# strategy fields renamed, old name -> new: the old name is still read for one release (a note says so), never both
# (cp_repeat_kv, 2026-12-06: it governs memory too, with or without context parallelism; known-gaps 212)
RENAMED_STRATEGY_FIELDS: dict[str, str] = {"cp_repeat_kv": "repeat_kv"}


class StrategySpec(_Strict):
    tp: int = Field(1, gt=0, le=MAX_GPUS)
    pp: int = Field(1, gt=0, le=MAX_GPUS)
    vpp: int = Field(1, gt=0, le=1024)
    dp: int | None = Field(None, gt=0, le=MAX_GPUS)  # None: whatever the GPU count leaves
    cp: int = Field(1, gt=0, le=MAX_GPUS)
    ep: int = Field(1, gt=0, le=MAX_GPUS)
    # expert tensor parallel: the TP degree of the routed experts (Megatron-Core expert_tensor_parallel_size,
    # torchtitan expert_tensor_parallel_degree); null = the framework's default (estimate.validate.expert_tp:
    # Megatron-Core = tp, torchtitan and DeepSpeed 1)
    etp: int | None = Field(None, gt=0, le=MAX_GPUS)
    zero: int = Field(0, ge=0, le=3)
    fsdp: Fsdp = "none"
    # which torch FSDP the fsdp runs (names.FSDP_VERSIONS; accelerate's fsdp_version): 1 = FullyShardedDataParallel
    # (flat parameters), 2 = fully_shard (per-parameter DTensors); null = the framework's (hf: 1, accelerate's default;
    # torchtitan / torchtune / AutoModel: 2; llm-foundry / FMS-FSDP: 1); acts on FSDP time only
    fsdp_version: FsdpVersion | None = None
    # GPUs per sharding group: the ZeRO group under zero 1 / 2 / 3 (InternLM zero1, Megatron-Core's partial distributed
    # optimizer), FSDP's hybrid-shard group; 0 or null: shard over all of DP (0 is what plans and `check` write)
    shard_group: int | None = Field(None, ge=0, le=MAX_GPUS)
    micro_batch: int = Field(1, gt=0, le=MAX_BATCH_SEQUENCES)
    # sequences per data-parallel rank that one pipeline schedule runs (torchtitan / NeMo AutoModel
    # local_batch_size): a step runs global_batch / (dp x local_batch) schedules, each filling and draining the
    # pipeline, gradients accumulated across them; null = all of the step's micro-batches in one schedule
    local_batch: int | None = Field(None, gt=0, le=MAX_BATCH_SEQUENCES)
    recompute: Recompute = "selective"
    # what "selective" recomputes, Megatron-Core recompute_modules (core_attn, moe_act, layernorm, mla_up_proj, mlp,
    # moe, shared_experts); null = the attention core (Megatron-Core's default ["core_attn"])
    recompute_modules: tuple[RecomputeModule, ...] | None = None
    # partial full recompute, with recompute: full (Megatron-Core recompute_method / recompute_num_layers; NeMo
    # activations_checkpoint_method / _num_layers): per model chunk, "uniform" checkpoints groups of N layers,
    # "block" the first N layers (the rest keep their activations); null = every layer checkpointed on its own
    recompute_method: RecomputeMethod | None = None
    recompute_num_layers: int | None = Field(None, ge=0, le=100_000)
    offload: Offload = "none"
    sequence_parallel: bool = True
    distributed_optimizer: bool = False
    # Megatron-Core account_for_embedding/loss_in_pipeline_split (the embedding / the loss take a layer slot)
    pipeline_embedding_layer: bool = False
    pipeline_loss_layer: bool = False
    # decoder layers on the first / last pipeline rank, all its model chunks together (Megatron-Core
    # num_layers_in_first/last_pipeline_stage, or the per-rank counts of a pipeline_model_parallel_layout such as
    # Megatron-Bridge's DeepSeek-V3 `Et*4|(t*4|)*14tmL`); the other ranks split the rest evenly; null = not stated
    pp_first_stage_layers: int | None = Field(None, gt=0, le=100_000)
    pp_last_stage_layers: int | None = Field(None, gt=0, le=100_000)
    # decoder layers on every pipeline rank in order, all its model chunks together, where the split is neither even
    # nor fixed by the end ranks alone: nanotron's build_model balances stages by get_block_compute_costs (the 80B of
    # its scaling benchmarks at PP 16: 6 / 5 x 13 / 6 / 3), Megatron-Core's pipeline_model_parallel_layout writes
    # any per-rank counts; length pp, summing to the model's layers; null = not stated (the even split, or the end
    # ranks' fields above)
    pp_stage_layers: tuple[int, ...] | None = None
    # fused element-wise kernels (torch.compile or the framework's own); false = eager PyTorch; null = not stated:
    # the stack's default (PerfStyle.compiles_by_default: the HF Trainer, torchtune and torchtitan run eager unless
    # asked; Megatron / DeepSpeed their own fused kernels), per candidate where framework auto picks the stack
    torch_compile: bool | None = None
    # torchtitan's CompileConfig components: whether the loss is compiled (components holds "loss"), independent of
    # the model; null = with torch_compile (components' default ["model", "loss"]); llama3_8b_mxfp8 compiles the
    # model only (components ["model"]): false
    compile_loss: bool | None = None
    # torchtitan's per-op selective AC keeps the attention output and its log-sum-exp: true from b39377f9f (2025-12-01,
    # every SDPA backend in _op_sac_save_list); false = a release before it whose SDPA ran a backend the list left out
    # (cuDNN, which its wrapper put first on sm100 from PR 1196, 2025-05-14), so the backward re-runs the attention
    # forward; null = true. Acts under recompute selective only
    sac_saves_attention: bool | None = None
    # precision fp32: whether fp32 matmuls run on the TF32 (AMD XF32) tensor cores: PyTorch's
    # torch.backends.cuda.matmul.allow_tf32 / set_float32_matmul_precision("high"), HF TrainingArguments tf32 true;
    # false = full fp32 (PyTorch's default since 1.12); null = the stack's default: true for megatron /
    # megatron-core (NGC containers set TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1), false elsewhere (HF tf32 None, torchtune,
    # torchtitan and DeepSpeed leave PyTorch's default); no effect in bf16 / fp16 / fp8
    tf32: bool | None = None
    # loss over the vocabulary: auto (the framework's) | upcast (HF, transformers <= 4.45: the model upcasts, the
    # loss copies the shifted fp32 slice) | upcast-shift (HF transformers 4.46-4.47: the 16-bit logits held too) |
    # upcast-labels (HF transformers >= 4.48 / 5.x: the labels shifted, no slice of the logits) | vocab-parallel (Megatron) | vocab-parallel-unfused (Megatron-LM's default kernels:
    # separate ops over an fp32 copy, cross_entropy_loss_fusion false; nanotron) | chunked
    # (torchtune, NeMo) | fused (Liger, Unsloth: no logits kept) | native (16-bit logits, no fp32 upcast) | compiled
    # (upcast + loss under torch.compile: 16-bit logits saved) | compiled-fp32 (a compiled loss over the fp32
    # logits the model returns: torchtune without chunking) | te (Transformer Engine cross-entropy: the gradient
    # written into the 16-bit logits in the forward, nothing else kept) | chunked-nll (TRL SFTTrainer's chunked_nll,
    # its default since TRL 1.7: no logits kept, per-chunk fp32 copies of the LM-head weight)
    loss_impl: LossImpl = "auto"
    # framework options (null = the framework's default): TP communication overlap / async TP, FP8 FSDP
    # all-gather, activation offloading to host memory, optimizer step fused into backward (no accumulation)
    tp_comm_overlap: bool | None = None
    fp8_param_allgather: bool | None = None
    # FP8 primary weights' transposes kept between micro-batches (TE's cache); false = Megatron-Core / NeMo
    # disable_parameter_transpose_cache (re-made at each use); null = kept
    fp8_transpose_cache: bool | None = None
    # gradients accumulated and reduced in fp32 (Megatron-Core grad_reduce_in_fp32, torchtitan
    # mixed_precision_reduce); false = bf16 gradient buffers (NeMo / Megatron-Bridge performance recipes)
    grad_reduce_in_fp32: bool | None = None
    # gradient reduction overlapped with the backward; false = reduced after the last micro-batch's backward
    # (Megatron-LM's local DDP before --overlap-grad-reduce, 2020 - mid-2023; DeepSpeed ZeRO-0 / 1)
    grad_reduce_overlap: bool | None = None
    # ZeRO-1 / the distributed optimizer all-reduces the whole gradient buffer instead of reduce-scattering it, then
    # all-gathers the updated shards (nanotron 0e0a27ea trainer.training_step: sync_gradients_across_dp
    # reduce_scatter=False, 'too memory hungry, instead we run all_reduce'; DeepSpeed's PipelineEngine, the
    # `deepspeed` style's default); false = reduce-scatter; null = the style's
    zero1_grad_allreduce: bool | None = None
    # parameters per gradient bucket, each its own collective (Megatron-Core --ddp-bucket-size / DDP bucket_size,
    # DeepSpeed reduce_bucket_size); null = the framework's default (Megatron-Core since 2024-04: max(4e7, 1e6 x
    # DP), 4e7 before)
    grad_bucket_params: float | None = Field(None, ge=1e5, le=1e12)
    # Megatron's gradient_accumulation_fusion: true = the weight-gradient GEMM accumulates into the fp32 main
    # gradient; false = each micro-batch's 16-bit weight gradient is added into it by a separate kernel
    # (--no-gradient-accumulation-fusion; nanotron's accumulate_grad_in_fp32); null = the framework's default
    gradient_accumulation_fusion: bool | None = None
    # attention kernel generation: fa1 (FlashAttention v1, 2022 - mid-2023 stacks) | fa2 | triton (FlashAttention in
    # Triton: llm-foundry's attn_impl triton, 2023) | native (cuDNN / FA3) | flex (FlexAttention's Triton template)
    attention_kernel: AttentionKernel | None = None
    # norm kernel: fused (Apex / TE / torchtitan fused_rmsnorm) | eager (PyTorch ops); null = the style's
    norm_kernel: NormKernel | None = None
    # context-parallel K / V exchange: p2p (TE's ring, step by step) | all_gather (exposed, Llama 3's) | a2a
    # (Ulysses-style all-to-all of q, k, v and the output); null = p2p
    cp_comm_type: CpCommType | None = None
    # the model repeats K / V to the query heads before SDPA (torchtitan's repeat_kv, to ff0829c10 / #2259,
    # 2026-01-27): PyTorch context parallel's ring moves them at the query width (step time) and a torchtitan block
    # saves the expanded copies (memory); false = SDPA's enable_gqa, nothing expanded (torchtitan after #2259,
    # Hugging Face models on torch >= 2.5); null = the style's (torchtitan: true)
    repeat_kv: bool | None = None
    # MoE at expert TP 1 under TP: each TP rank dispatches its 1 / tp of the layer's tokens (torchtitan's
    # ReordererSequenceParallel / sp_size, Megatron-Core); false = every TP rank dispatches, computes and combines the
    # TP group's whole token set (torchtitan's DeepEP backend before 963c20cba, 2026-05-20); null = the style's
    moe_tp_token_split: bool | None = None
    # FSDP2 under pipelining: the stage's parameters gathered once a step and its gradients reduce-scattered once,
    # after the last backward (torchtitan; NeMo AutoModel with BackendConfig enable_fsdp_optimizations); false =
    # every micro-batch's backward reduce-scatters and reshards and the next forward gathers again (AutoModel's
    # default: its stage module is not an FSDP module, so torch's pipeline stage runs a plain backward); null = the
    # style's
    pp_fsdp_once_per_step: bool | None = None
    # the loss over the vocabulary-sharded logits under TP (Megatron's vocab-parallel cross-entropy, torchtitan's
    # loss_parallel); false = the LM head's output gathered to every TP rank for a plain cross-entropy, so each rank
    # holds the whole micro-batch's logits (torchtitan disable_loss_parallel; KempnerForge's ColwiseParallel head
    # with output_layouts Replicate); null = the style's (every style: sharded)
    loss_parallel: bool | None = None
    # FSDP gradient sync skipped on all but a step's last micro-batch (FSDP2 module.set_requires_gradient_sync(False):
    # KempnerForge's maybe_no_sync; FSDP1 no_sync: the HF Trainer's accumulation): each parameter's unsharded gradient
    # is held across micro-batches, in the reduce dtype under FSDP2 (torch FSDPParam.to_accumulated_grad_if_needed),
    # the compute dtype under FSDP1; needs FSDP; null = the style's (hf on FSDP1: held, accelerate without
    # sync_each_batch; every other style: synced); false = synced every micro-batch (accelerate's sync_each_batch)
    fsdp_no_sync: bool | None = None
    # when FSDP2 frees its gathered parameters (names.FSDP_RESHARDS): forward (reshard_after_forward True, torch's
    # default: gathered again in backward) | backward (reshard_after_forward False: NeMo AutoModel's MoE
    # parallelizer, components/moe/config.py) | step (also kept, and gradients unsynced, across a step's micro-batches:
    # AutoModel's enable_fsdp_optimizations); needs FSDP; null = the style's (forward; under pipelining step, or
    # backward where pp_fsdp_once_per_step is false)
    fsdp_reshard: FsdpReshard | None = None
    # Megatron-FSDP's data_parallel_sharding_strategy (framework megatron-core, use_megatron_fsdp; names.
    # MEGATRON_FSDP_SHARDINGS): optim (with zero: 1), optim_grads (zero: 2), optim_grads_params (fsdp: full or zero: 3);
    # null = fsdp full on megatron-core is Megatron-FSDP's optim_grads_params and zero 1 / 2 Megatron-Core's DDP with
    # the distributed optimizer (no Megatron-FSDP hooks)
    megatron_fsdp_sharding: MegatronFsdpSharding | None = None
    # the token embedding split over the TP ranks (Megatron's VocabParallelEmbedding, torchtitan's RowwiseParallel
    # plan); false = a whole copy on every TP rank (KempnerForge's tensor_parallel.py leaves it replicated), sharded by
    # FSDP alone; null = the style's (every style: split)
    embedding_parallel: bool | None = None
    # MLP activation kernel (SwiGLU, squared ReLU): fused (TE / Apex / compile) | eager (F.silu then the product:
    # nanotron; NeMo 2's Nemotron torch.pow(F.relu(x), 2));
    # null = the style's
    activation_kernel: ActivationKernel | None = None
    # RoPE kernel: fused (TE's fused apply_rotary_pos_emb: NeMo AutoModel rope_fusion true, Megatron-Core
    # apply_rope_fusion) | eager (the style's PyTorch ops); null = the style's (fused with its fused kernels or compile)
    rope_kernel: RopeKernel | None = None
    # eager attention's element-wise chain over the scores where the attention is not a flash kernel
    # (training.flash_attention false): fused (Megatron's scale-mask-softmax) | fp32_softmax (transformers' and
    # LitGPT's eager ops: scale, mask add, fp32 softmax, cast back); null = the style's; step time
    eager_attention: EagerAttention | None = None
    # q, k, v and the SwiGLU gate, up as separate linears (transformers' LlamaAttention / LlamaMLP modules, as ATorch's
    # manual TP and the hf / torchtitan / torchtune styles run them); false = fused (Megatron's linear_qkv /
    # linear_fc1); null = the style's; step time (the GEMMs, and under TP without sequence parallelism each
    # column-parallel linear's own input-gradient all-reduce)
    split_projections: bool | None = None
    # FP8 dot-product attention (Transformer Engine / cuDNN, Megatron-Core fp8_dot_product_attention, NeMo FP8_DPA):
    # forward and backward in FP8, q / k / v / output saved in FP8; needs precision fp8; null = off
    fp8_attention: bool | None = None
    # the SwiGLU input saved in FP8 (Megatron-Core activation_func_fp8_input_store, NeMo FP8_ACT); null = off
    fp8_activation_store: bool | None = None
    # the LM head's GEMMs in MXFP8 (Megatron-Core fp8_output_proj: TELMHeadColumnParallelLinear); needs precision fp8
    # with fp8_recipe mxfp8; null = off (the head stays 16-bit)
    fp8_lm_head: bool | None = None
    # Megatron-Core defer_embedding_wgrad_compute: the last pipeline stage keeps the LM head's input and output
    # gradient and runs its weight-gradient GEMMs after the pipeline flush (schedules.py
    # finish_embedding_wgrad_compute; NeMo 1 training_step drain_embedding_wgrad_compute); needs pp > 1 and
    # gradient_accumulation_fusion, as Megatron-Core's ModelParallelConfig; null = off
    defer_embedding_wgrad: bool | None = None
    # Megatron-Core wgrad_deferral_limit under defer_embedding_wgrad: the first N micro-batches' LM-head weight
    # gradients are deferred, the later ones computed in their backward; 0 = every micro-batch (its default)
    wgrad_deferral_limit: int | None = Field(None, ge=0, le=1_000_000)
    # CUDA graphs (Megatron-Core enable_cuda_graph + cuda_graph_scope): none | layer (one graph per layer) |
    # full_iteration (the step's forward-backward as one graph: no per-layer host launches); null = none
    cuda_graphs: CudaGraphs | None = None
    # cuDNN release of the fused attention (Blackwell parts, native kernel): 9.13 | 9.17; null = 9.13, the release the
    # Blackwell attention rates are derived at
    cudnn_release: CudnnRelease | None = None
    # the Megatron-Core release the job runs (framework megatron-core: NeMo / Megatron-Bridge containers pin one), its
    # release line "MAJOR.MINOR" ("0.15", "0.15.1", "core_r0.15.0", "core_v0.16.0rc1" all read so; quoted in YAML:
    # 0.10 would read as 0.1); the facts that depend on it: framework.MCORE_RELEASE_FACTS; null = the present
    # reading (every fact as read at the newest release, core_v0.16.0 and later)
    megatron_core_version: str | None = None
    # the PyTorch release the job runs, read as its release line "MAJOR.MINOR" ("2.9", "2.9.0.dev20250815+cu128",
    # "2.14.0+cu130" all read so; quoted in YAML: 2.10 would read as 2.1); the facts that depend on it:
    # framework.TORCH_RELEASE_FACTS (from 2.9 F.rms_norm is one fused kernel: a torchtitan eager run's norms);
    # null = as before (each fact's older reading)
    torch_version: str | None = None
    # AMD parts, native attention (Transformer Engine for ROCm's CK / AITER path, Primus-Turbo's AITER kernels): the
    # MLA backward (d_qk != d_v, DeepSeek's 192 / 128) on CDNA 4 in AITER's assembly kernel (true: AITER >= 7a41cca,
    # 2025-11-03, aiter PR 1308, pinned by Transformer Engine for ROCm PR 364) or in CK's tile kernel, whose backward
    # has no 192 tile and pads both head dims to 256 (false: an earlier AITER); null = true. CDNA 3 and earlier have
    # no such assembly kernel: CK's either way; time only (step_time._ck_mla_bwd_pad)
    aiter_mla_bwd_asm: bool | None = None
    # QLoRA: the dtype bitsandbytes' dequantize_4bit writes (the quant_state's): fp16 under bitsandbytes < 0.43
    # (Params4bit.cuda quantised a .half() copy) and Lightning's BitsandbytesPrecision (LitGPT), so a bf16 job casts
    # every dequantised weight again (MatMul4Bit `.to(A.dtype)`); null / compute = the weight's dtype (0.43+), no cast
    nf4_dequant_dtype: Nf4DequantDtype | None = None
    # QLoRA: how bitsandbytes' dequantisation kernel decodes each 4-bit code: tree = dDequantizeNF4's branching tree
    # (0.39.0-0.47.x: issue-bound below the HBM stream on the A100 / Hopper parts, perf_constants.yaml
    # nf4_tree_decode); null / lut = the table lookup of 0.48.0+ (#1746, 2025-09-30), timed at the HBM stream
    nf4_decode: Nf4Decode | None = None
    # QLoRA: bitsandbytes' double quantisation of the block constants (bnb_4bit_use_double_quant; Lightning's nf4-dq):
    # false = one fp32 absmax a 64-value block (0.5 bit a weight, one dequantisation kernel); null / true = 8-bit
    # absmax with an fp32 constant a 256 blocks (0.127 bit, the absmax dequantised first: the estimate's count)
    nf4_double_quant: bool | None = None
    # QLoRA: every 4-bit linear keeps its input for the backward: true under bitsandbytes < 0.43.2 (MatMul4Bit
    # `ctx.tensors = (A, B)`, dropped by #1270); null / false = 0.43.2+ or torchao's NF4 (torchtune), which keep none
    nf4_saves_input: bool | None = None
    # QLoRA: each 4-bit linear takes its first input's dtype as the compute dtype where that is fp32 or bf16, over
    # bnb_4bit_compute_dtype: bitsandbytes 0.41.0 to 0.46.x (nn/modules.py Linear4bit.set_compute_type, 412fd0e7, with
    # compute_type_is_set False at init), so an fp32 job's 4-bit linears compute in fp32; null / false = 0.47.0+ (#1662,
    # 812ef06a: a given compute dtype is kept; transformers always gives one), the configured compute dtype
    bnb_compute_from_input: bool | None = None
    # QLoRA: the LM head is a 4-bit linear too: true under Lightning's BitsandbytesPrecision (LitGPT), which converts
    # every nn.Linear; null / false = transformers / PEFT and torchtune, which keep it in 16 bit
    nf4_lm_head: bool | None = None
    # QLoRA with nf4_lm_head: positions of a row the LM head takes a call, each call dequantising the whole head
    # (LitGPT's lm_head_chunk_size 128 in its fine-tune scripts); null = the whole row in one call
    lm_head_chunk: int | None = Field(None, ge=1)
    # MoE token dispatcher: auto | alltoall | flex (DeepEP / HybridEP: Megatron-Core's flex, NeMo AutoModel's and
    # torchtitan's DeepEP backend; on those PyTorch-native stacks auto = their all_to_all) | hybridep | deepep (flex
    # with that backend stated)
    moe_dispatcher: MoeDispatcher = "auto"
    # Megatron-Core EP all-to-all overlap (overlap_moe_expert_parallel_comm + delay_wgrad_compute: combined 1F1B,
    # one micro-batch's dispatch / combine beside another's compute); null = the framework's (off)
    moe_a2a_overlap: bool | None = None
    # under moe_a2a_overlap: the expert MLP's weight gradient split from its data gradient and run after the next
    # dispatch is issued (Megatron-Core --delay-wgrad-compute, the pair the MoE README and Megatron-Bridge recipes set);
    # false = inside the MLP's backward (the 2025 `--combined-1f1b-recipe ep_a2a` commands); null = true
    delay_wgrad_compute: bool | None = None
    # the CUDA_DEVICE_MAX_CONNECTIONS the run sets: 1 = one hardware work queue, so a kernel starts only after every
    # kernel issued before it has started (Megatron-LM sets 1 for TP / CP ordering; its MoE README wants > 1 for the
    # EP all-to-all overlap); null = more than one (the old behaviour); only the combined 1F1B's order reads it
    cuda_device_max_connections: int | None = Field(None, ge=1)
    # Transformer Engine's fused grouped MLP for the routed experts (Megatron-Core use_transformer_engine_op_fuser with
    # NVTE_CUTEDSL_FUSED_GROUPED_MLP=1; MXFP8 on B200 / B300 / GB200 / GB300): the biases and the gated activation in
    # the cuDNN grouped GEMM epilogues; null = off (TEGroupedMLP)
    moe_fused_grouped_mlp: bool | None = None
    # the routed experts' grouped GEMM: true = PyTorch's torch._grouped_mm (torchtitan's MoE, NeMo AutoModel's experts
    # torch_mm), at its measured share of the dense rate on Blackwell; false = a kernel at the dense GEMM rate
    # (Transformer Engine's GroupedLinear, grouped_gemm's gmm: AutoModel's default); null = the framework's
    moe_torch_grouped_mm: bool | None = None
    # the routed experts run Primus-Turbo's grouped GEMM (AMD-AGI/Primus use_turbo_grouped_gemm, its Triton backend:
    # Primus-Turbo's default since 2026-04), at its measured share of the dense rate on MI355X (a published kernel
    # table; other parts keep the dense rate); null / false = the framework's kernel
    moe_turbo_grouped_gemm: bool | None = None
    # torchtitan's MoE glue (the gather, permutation, scatter and weighted combine around the experts) runs eager: true
    # before 2026-05, whose compile left MoE.forward and the EP hooks out, and for any run without torch.compile;
    # false where the compile covers it (torchtitan from 58b034444, 2026-05: whole blocks with fullgraph); null = the
    # framework's (torchtitan: true); time only
    moe_eager_glue: bool | None = None
    # the routed experts take their token split sizes on the device (Primus-Turbo's ragged grouped GEMM,
    # use_turbo_ragged_grouped_gemm: one kernel for all local experts, no .tolist() host sync, no FP8 padding): the
    # MoE layer issues no per-expert launches; null / false = Transformer Engine's GroupedLinear (a host list of
    # splits, kernels launched expert by expert)
    moe_sync_free: bool | None = None
    # Megatron-Core's alltoall dispatcher drops and pads every expert to capacity (moe_token_drop_policy with
    # moe_pad_expert_input_to_capacity; NeMo's MegatronTokenDropCallback, Megatron-Bridge's apply_moe_token_drop): the
    # splits are host constants, so no D2H copy is waited for, but GroupedLinear still launches expert by expert
    # (those launches join the layer's host floor); null / false = dropless (the host waits for the token counts)
    moe_pad_to_capacity: bool | None = None
    # Megatron-Core's token permutation (--moe-permute-fusion) and router top-k / aux loss (--moe-router-fusion) in
    # Transformer Engine's fused kernels; false = the unfused torch ops (Megatron-LM's argument default: more kernels
    # and host calls, two masked_select host syncs a forward); null = the framework's (megatron-core: fused, as the
    # NeMo / Megatron-Bridge recipes set them); time only
    moe_permute_fusion: bool | None = None
    moe_router_fusion: bool | None = None
    # Megatron-Core's router load-balancing loss (moe_router_load_balancing_type with a nonzero moe_aux_loss_coeff):
    # none | aux_loss | seq_aux_loss | global_aux_loss (names.MOE_AUX_LOSSES); none = no aux-loss op runs (Megatron-
    # Bridge's GPT-OSS, or any type at coefficient 0); global_aux_loss adds its all-reduce over TP x DP x CP; null =
    # aux_loss (the recipes' usual, as counted before); time only
    moe_aux_loss: MoeAuxLoss | None = None
    # Megatron-Core's --moe-grouped-gemm: false = SequentialMLP, the local experts run one after another, each its own
    # MLP (Megatron-Core's argument default); before core_r0.9.0 (megatron_core_version) each expert's rows are sliced
    # by device offsets (two host syncs an expert) and written back into a zeroed buffer, whose autograd copies the
    # whole routed buffer per expert; null / true = the grouped GEMM (TEGroupedMLP / GroupedMLP); time only
    moe_grouped_gemm: bool | None = None
    # Megatron-Core tp_only_amax_red: delayed-scaling FP8 reduces each model chunk's amaxes over the TP x CP ranks only,
    # not TP x DP x CP (NeMo 2's GPT-3 175B performance script sets it); null / false = over TP x DP x CP, the
    # TransformerConfig default; time only (docs/known-gaps.md 245 (c))
    tp_only_amax_red: bool | None = None
    # transformers' routed experts (framework hf): eager = one expert at a time, each behind a host sync (every 4.x
    # release's MoE blocks; v5 experts_implementation "eager"; GraniteMoe's 4.x loop syncs once a layer and runs every
    # expert, its fused weights returning a whole-weight gradient each: docs/known-gaps.md 261 (a)); grouped_mm = one torch._grouped_mm (v5's default);
    # dense_all = every routed expert on every token (transformers' Llama4TextMoe); null = the framework's (hf:
    # dense_all for Llama 4, perf_constants dense_expert_families; grouped_mm otherwise, today's transformers)
    experts_implementation: ExpertsImplementation | None = None
    # transformers 4.55 / 4.56's GptOssExperts training loop indexes a hit expert's fused weights with a one-element
    # tensor (modeling_gpt_oss.py `self.gate_up_proj[expert_idx]`, expert_idx of shape [1]: advanced indexing, a copy the
    # matmul saves for its backward; in full training IndexBackward's whole-parameter zero gradient); later releases
    # index with a scalar (a view; transformers PR #40545). true = counted, with experts_implementation eager; null / false = none
    expert_weight_copies: bool | None = None
    # Megatron-Core fused_single_qkv_rope (NeMo FUSED_QKV_ROPE): RoPE in one TE kernel on the unsplit qkv; null = off
    fused_qkv_rope: bool | None = None
    # GPT-NeoX's flash wrapper (v1.0 ParallelSelfAttention.flash_attention): q, k and v copied out of [s, b, np, hn]
    # and packed for the kernel, the output copied back; null / false = none counted; with flash attention; time only
    flash_qkv_pack: bool | None = None
    # Megatron-Core use_transformer_engine_op_fuser (NeMo USE_TE_OPS): the dense MLP as Transformer Engine's fused ops
    # (TEFusedMLP: the activation writes fc2's FP8 input and fc1's FP8 output gradient itself) and, at TP 1, NeMo's
    # LoRA adapters fused into the base linear (TEFusedLoRALinear); null = off (Megatron-Core's default in every
    # release); time only
    te_op_fuser: bool | None = None
    # saved activations to host memory: true = every layer's (torchtune enable_activation_offloading), N = the
    # first N decoder layers of the model chunk (Megatron-Core cpu_offloading_num_layers), false = none
    activation_offload: bool | int = False
    optimizer_in_backward: bool = False
    # AdamW step: fused | foreach (torch.optim.AdamW without fused=True: multi-tensor passes); null = fused
    optimizer_impl: OptimizerImpl | None = None
    # bitsandbytes' 8-bit AdamW kernel (adamw8bit / paged_adamw8bit): 256 = 256-element blocks, one element a thread
    # (bitsandbytes >= 0.44.0) | 2048 = 2,048-element blocks, eight a thread (0.39-0.43); null = 256; time only
    bnb_optimizer_block: BnbOptimizerBlock | None = None
    # PYTORCH_CUDA_ALLOC_CONF expandable_segments (torch >= 2.1): true = the caching allocator maps 2 MiB pages into
    # one growing segment a stream, so an unpacked run's longer micro-batches reuse what shorter ones freed; false =
    # PyTorch's default segments, which keep the loss path's bytes for every new longest micro-batch (estimate.allocator:
    # the reserved growth reported beside the peak, never in a fit); null = the framework's (true for torchtune from
    # 9d91fe39f, 2025-06-20, and torchtitan's run_train.sh from a5e57e4a9, 2024-10-22; false elsewhere)
    allocator_expandable_segments: bool | None = None
    # replicated data parallelism: torch (torch DDP: each gradient copied into its bucket and back, clipped by
    # torch.nn.utils.clip_grad_norm_; the HF Trainer, nanotron) | megatron (Megatron's contiguous gradient buffer);
    # null = the framework's (hf torch, megatron / megatron-core megatron)
    ddp_impl: DdpImpl | None = None
    # how activation checkpointing re-runs a layer (names.CHECKPOINT_IMPLS): non_reentrant | reentrant (inside the
    # sharded unit: transformers 4.52-4.x, Axolotl, LLaMA-Factory) | reentrant_outer (around an FSDP unit: transformers
    # <= 4.51's layer loop, FSDP2 hooks); null = the framework's (hf non_reentrant: transformers >= 5's
    # gradient_checkpointing_enable; torchtitan / torchtune non_reentrant); acts on ZeRO-3 / FSDP time under full
    # recompute
    checkpoint_impl: CheckpointImpl | None = None
    # how DeepSpeed ZeRO-3 gathers transformers' routed experts (names.ZERO3_EXPERT_FETCHES; framework hf, zero 3
    # without fsdp): per_expert (each expert linear its own module: 4.x ModuleList experts, no set_z3_leaf_modules) |
    # block (the MoE block a ZeRO-3 leaf, or v5's packed experts: one gather, at the block's own hook); null = by the
    # experts implementation (eager: per_expert; grouped_mm: block); time only
    zero3_expert_fetch: Zero3ExpertFetch | None = None
    # DeepSpeed ZeRO-3's prefetch bucket, persistence threshold and reduce bucket (names.ZERO3_BUCKET_SIZES; framework
    # hf, zero 3 without fsdp): deepspeed (the config leaves them out: 5e7, 1e5, 5e8 elements) | auto (the config
    # writes "auto": the HF Trainer / accelerate fill 0.9 h^2, 10 h, h^2); null = the framework's (hf auto, as the
    # ds_config files of the transformers docs, LLaMA-Factory and ms-swift write them)
    zero3_bucket_sizes: Zero3BucketSizes | None = None
    # the model built under deepspeed.zero.Init (framework hf / deepspeed, zero 3 without fsdp): true = inside it
    # (transformers' from_pretrained enters it when a TrainingArguments(deepspeed=...) / HfDeepSpeedConfig exists:
    # modeling_utils is_deepspeed_zero3_enabled), which swaps torch.nn.functional.linear for DeepSpeed's
    # LinearFunctionForZeroStage3 (partition_parameters.py patch_init_and_builtins, v0.14.2); false = built before
    # the config and partitioned by the engine (parameter_offload.py _convert_to_zero_parameters: Init(module=...),
    # never entered), so torch's linear saves each gathered weight's transpose and holds it to that layer's
    # backward; null = true (transformers' examples run_clm.py parse TrainingArguments before from_pretrained)
    zero_init: bool | None = None
    # AdamW's states: fp32 (fp32 master + moments) | bf16-moments (fp32 master, bf16 moments: DeepSeek-V3, Megatron-Core's
    # precision-aware optimizer) | bf16 (no master, bf16 moments: Apex DistributedFusedAdam dtype bf16) |
    # fp32-remainders (fp32 moments, the master as the bf16 weight + its low 16 bits: Apex store_param_remainders,
    # NeMo 1's default for a bf16 model without fp8_params; bf16 weights only) | bf16-moments-remainders (bf16 moments
    # and that 2 B master: Megatron-Core's precision-aware optimizer over bf16 weights, Transformer Engine >= 2.1's
    # FusedAdam store_param_remainders; bf16 weights only) | bf16-master (a bf16 master copy, bf16 master gradients and
    # bf16 moments: DeepSpeed's bf16_master_weights_and_grads + bf16_optimizer_states; precision bf16 only); null = fp32
    optimizer_precision: OptimizerPrecision | None = None
    # QLoRA: non-quantised weights and the residual stream in fp32 (PEFT prepare_model_for_kbit_training, which TRL's
    # SFTTrainer called up to v0.25); null = the framework's (model_states.kbit_upcast_default: hf / auto no, as TRL
    # >= 0.26.0 runs it, torchtune no, others yes; docs/known-gaps.md 258 (a)); true for TRL <= 0.25 or PEFT's recipe
    kbit_upcast: bool | None = None
    # QLoRA under torchtune: true = the NF4 base quantised on the GPU by torchao 0.1's unchunked to_nf4 (torchtune
    # 0.1.x pins torchao==0.1: every base linear quantised at build, at each layer's deep copy and at the checkpoint
    # load, with a (numel, 16) bf16 pair a weight), whose cached segments hold the reserved bytes from model init
    # (estimate.nf4_init); null / false = torchao >= 0.2 (torchtune >= 0.2: 1M-element chunks, torchao #196):
    # none. Reserved memory only
    nf4_quantize_unchunked: bool | None = None
    # LoRA: the dtype the frozen base is loaded in (names.FROZEN_BASE_DTYPES): fp32 (from_pretrained torch_dtype
    # float32, as PEFT's examples/sft does without 4-bit) | compute; kept so under FSDP and autocast, cast to 16 bit by
    # DeepSpeed's engine; null = compute (no stack has one default: the script's torch_dtype decides); memory only
    frozen_base_dtype: FrozenBaseDtype | None = None
    # whether the loop runs its 16-bit forward under torch.autocast: false = a loop over a 16-bit-loaded model that
    # does not (universal-llm-trainer's amp_training False; a plain PyTorch loop), so HF PEFT's fp32 adapters run every
    # op in fp32 (peft 0.14 lora/layer.py Linear.forward: x.to(lora_A.weight.dtype), the sum promoted to fp32 and cast
    # back; perf_constants.yaml lora.peft_fp32_no_autocast); null = the framework's (hf: the Trainer's bf16 / fp16
    # autocast); LoRA through PEFT under a 16-bit precision, time only
    autocast: bool | None = None
    # what of the loss phase the loop still holds when the backward re-runs the last checkpointed layer (full recompute;
    # names.LIVE_AT_RERUN): none (the loop drops the forward's outputs before backward: transformers' Trainer, torchtune)
    # | logits (it keeps them until backward returns: `output = model(...); output.loss.backward()`, Answer.AI's
    # fsdp_qlora train.py, PEFT / accelerate example loops) | loss (every loss-phase item beside the re-run layer: the
    # sum); null = the framework's (hf and torchtune none, logits under loss_impl upcast-held; loss elsewhere); memory only
    live_at_rerun: LiveAtRerun | None = None
    # whether the model returns its key / value cache in training: transformers' use_cache left on (the config's
    # default, Llama's true) where recompute is applied outside transformers' own gradient_checkpointing flag, which
    # alone turns it off (modeling_llama.py LlamaModel.forward at v4.35.0): ATorch's checkpoint optimization, torch's
    # apply_activation_checkpointing. Each checkpointed layer's K (after RoPE) and V then live to the end of the
    # forward, and while the loop holds the outputs (live_at_rerun logits) through the backward and the next forward;
    # null / false = none (as before); full recompute, memory only (docs/known-gaps.md 271 (a))
    returns_kv_cache: bool | None = None
    # whether each MoE layer's token dispatcher keeps the router's output (a tensor that needs a gradient) on an
    # object that outlives the step: the Nous Research torchtitan fork's DeepEP manager (PrimusTurboDeepepManager.
    # setup_metadata at 366776ace keeps token_probs; combine clears the rest). Under torchtitan's full AC (a
    # non-reentrant checkpoint) each layer's re-run graph up to its router, with the attention's and the router's
    # saves, then lives from the layer's backward to its next forward; null / false = none (as before); torchtitan,
    # full recompute, memory only (docs/known-gaps.md 282 (a))
    moe_router_output_held: bool | None = None
    # FSDP (torchtune, torchtitan-style stacks, HF Trainer fsdp): the embedding and the LM head sharded as their own
    # units (torchtune's custom_sharded_layers ['tok_embeddings', 'output']; OLMo-core and AutoModel's MoE path do so);
    # null / false = the root unit holds them (torchtune's and torchtitan's default, AutoModel's dense path, FSDP1's
    # auto-wrap), gathered from the first forward to the end of the backward; other styles keep their own wrapping
    shard_embedding_head_separately: bool | None = None
    # transformers' device_map for training (from_pretrained(device_map="auto"): ms-swift, LLaMA-Factory and most
    # QLoRA scripts on 2-8 cards): the job's GPUs, all in one host and one process, each hold a run of consecutive
    # layers by accelerate's balanced split, and every micro-batch passes through them one card at a time (no
    # pipelining); no data, tensor, pipeline or context parallelism and no ZeRO / FSDP beside it; framework hf
    # (auto is read as hf). null = no device map (one process per GPU). estimate.device_map
    device_map: DeviceMap | None = None
    framework: Framework = "auto"
    # the deprecated names this strategy was written with (RENAMED_STRATEGY_FIELDS), for the scenario's notes
    _renamed_from: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _renamed_fields(cls, data: Any, handler: Any) -> StrategySpec:
        """A field's old name (RENAMED_STRATEGY_FIELDS) read as its new one and remembered; both given is an error."""
        old = [k for k in RENAMED_STRATEGY_FIELDS if isinstance(data, dict) and k in data]
        for key in old:
            if RENAMED_STRATEGY_FIELDS[key] in data:
                raise ValueError(msg("job_field_renamed_both", old=key, new=RENAMED_STRATEGY_FIELDS[key]))
        if old:
            data = {RENAMED_STRATEGY_FIELDS.get(k, k): v for k, v in data.items()}
        spec = handler(data)
        if old:
            spec._renamed_from = tuple(old)
        return spec

    @property
    def renamed_from(self) -> dict[str, str]:
        """The deprecated field names this strategy was written with, each to its new name."""
        return {k: RENAMED_STRATEGY_FIELDS[k] for k in self._renamed_from}

    @field_validator("megatron_core_version", mode="before")
    @classmethod
    def _megatron_core_release_line(cls, value: Any) -> Any:
        """A Megatron-Core version read as its release line "MAJOR.MINOR" (MCORE_VERSION); anything else, a YAML
        number included (0.10 reads as 0.1), is refused with the forms allowed."""
        found = MCORE_VERSION.fullmatch(value.strip()) if isinstance(value, str) else None
        if value is not None and found is None:
            raise ValueError(msg("job_megatron_core_version", value=repr(value)))
        return None if found is None else f"{int(found['major'])}.{int(found['minor'])}"

    @field_validator("torch_version", mode="before")
    @classmethod
    def _torch_release_line(cls, value: Any) -> Any:
        """A PyTorch version read as its release line "MAJOR.MINOR" (TORCH_VERSION); anything else, a YAML number
        included (2.10 reads as 2.1), is refused with the forms allowed."""
        found = TORCH_VERSION.fullmatch(value.strip()) if isinstance(value, str) else None
        if value is not None and found is None:
            raise ValueError(msg("job_torch_version", value=repr(value)))
        return None if found is None else f"{int(found['major'])}.{int(found['minor'])}"

    @field_validator("cudnn_release", mode="before")
    @classmethod
    def _release_as_written(cls, value: Any) -> Any:
        """YAML reads `cudnn_release: 9.17` as a number: taken as the release it spells."""
        return f"{value:g}" if isinstance(value, float) and not isinstance(value, bool) else value

    @model_validator(mode="after")
    def _fsdp_is_zero3(self) -> StrategySpec:
        if self.recompute_modules is not None and self.recompute != "selective":
            raise ValueError(msg("job_recompute_modules_selective", recompute=self.recompute))
        self._partial_recompute()
        offload = self.activation_offload
        if not isinstance(offload, bool) and offload < 1:
            raise ValueError(msg("job_activation_offload_layers", value=offload))
        # zero 0 is the default beside fsdp; written out (a file's `zero: 0`, `--zero 0` over a file with fsdp) it
        # asks for no sharding, which fsdp contradicts: refused, not ignored
        explicit_zero0 = self.zero == 0 and "zero" in self.model_fields_set
        if self.fsdp != "none" and (self.zero not in (0, 3) or explicit_zero0):
            raise ValueError(msg("job_fsdp_zero", fsdp=self.fsdp, zero=self.zero))
        if self.fsdp == "hybrid" and not self.shard_group:
            raise ValueError(msg("job_hybrid_shard_group"))
        # a ZeRO layout written without fsdp is DeepSpeed's, whose traced prefetch the checkpoint's kind does not hit;
        # stated alone, as a stack option, the search carries it to its FSDP layouts
        if self.checkpoint_impl == "reentrant_outer" and self.fsdp == "none" and "zero" in self.model_fields_set:
            raise ValueError(msg("job_checkpoint_outer_fsdp", fsdp=self.fsdp))
        # FSDP gathers a whole decoder layer, experts and all, in one unit: the fetch of DeepSpeed's modules is not its
        if self.zero3_expert_fetch is not None and self.fsdp != "none":
            raise ValueError(msg("job_zero3_expert_fetch_fsdp", fsdp=self.fsdp))
        if self.zero3_bucket_sizes is not None and self.fsdp != "none":
            raise ValueError(msg("job_zero3_bucket_sizes_fsdp", fsdp=self.fsdp))
        # zero.Init partitions for ZeRO-3 only; stated alone (zero unwritten), the search carries it to its ZeRO-3 layouts
        stated_zero = "zero" in self.model_fields_set and self.zero != 3
        if self.zero_init is not None and (self.fsdp != "none" or stated_zero):
            raise ValueError(msg("job_zero_init_zero3", fsdp=self.fsdp, zero=self.zero))
        if self.local_batch is not None and self.local_batch % self.micro_batch:
            raise ValueError(msg("job_local_batch_micro_batch", local_batch=self.local_batch,
                                 micro_batch=self.micro_batch))
        self._stage_layer_list()
        self._device_map_alone()
        return self

    def _stage_layer_list(self) -> None:
        """pp_stage_layers: one count a pipeline rank (length pp), none negative, and not beside the end ranks'
        fields (the list states them already); the sum is checked against the model's layers by the estimate's rule
        pp_stage_layers_split."""
        counts = self.pp_stage_layers
        if counts is None:
            return
        if len(counts) != self.pp:
            raise ValueError(msg("job_pp_stage_layers_length", n=len(counts), pp=self.pp))
        if any(n < 0 or n > 100_000 for n in counts):
            raise ValueError(msg("job_pp_stage_layers_count", counts=list(counts)))
        if self.pp_first_stage_layers is not None or self.pp_last_stage_layers is not None:
            first, last = ("null" if n is None else n for n in (self.pp_first_stage_layers, self.pp_last_stage_layers))
            raise ValueError(msg("job_pp_stage_layers_edges", first=first, last=last))

    def _device_map_alone(self) -> None:
        """device_map auto is one process driving every GPU of its host (accelerate's hooks move the hidden state
        from card to card): the layout is the split itself, so no other degree, sharding or DeepSpeed offload, and
        the stack is transformers' (framework hf, or auto read as hf)."""
        if self.device_map is None:
            return
        if self.framework not in ("hf", "auto"):
            raise ValueError(msg("job_device_map_framework", framework=self.framework))
        stated = self.model_fields_set
        clash = [f"{f}: {getattr(self, f)}" for f in ("tp", "pp", "dp", "cp", "ep", "etp", "vpp", "zero",
                                                      "shard_group", "local_batch", "pp_first_stage_layers",
                                                      "pp_last_stage_layers", "pp_stage_layers")
                 if f in stated and getattr(self, f) not in (None, 0, 1)]
        clash += [f"{f}: {getattr(self, f)}" for f, off in (("fsdp", "none"), ("offload", "none"),
                                                            ("distributed_optimizer", False),
                                                            ("pipeline_embedding_layer", False),
                                                            ("pipeline_loss_layer", False))
                  if getattr(self, f) != off]
        if clash:
            raise ValueError(msg("job_device_map_layout", fields=", ".join(clash)))


    def _partial_recompute(self) -> None:
        """recompute_method and recompute_num_layers come together, with recompute: full, as Megatron-Core's
        TransformerConfig asks (recompute_granularity full needs both; selective needs neither); uniform groups
        need N >= 1 (block N = 0 checkpoints no layer)."""
        method, n = self.recompute_method, self.recompute_num_layers
        if method is None and n is None:
            return
        if self.recompute != "full":
            raise ValueError(msg("job_partial_recompute_full", recompute=self.recompute))
        if method is None or n is None:
            # null as the job file writes it (YAML), not Python's None
            raise ValueError(msg("job_partial_recompute_pair", method="null" if method is None else method,
                                 n="null" if n is None else n))
        if method == "uniform" and n < 1:
            raise ValueError(msg("job_partial_recompute_uniform", n=n))


# StrategySpec's fields by what the search does with them (framework aside), each field in one group
# (tests/spec/test_strategy_fields.py). The layout the search chooses: degrees, sharding, offload of the states,
# micro-batch, recompute (default_strategy, plan: a strategy stating one of them is a layout of its own).
LAYOUT_FIELDS = frozenset(("tp", "pp", "vpp", "dp", "cp", "ep", "etp", "zero", "fsdp", "shard_group",
                           "distributed_optimizer", "offload", "micro_batch", "local_batch", "recompute",
                           "device_map"))
# Details of a stated layout that the search sets itself or leaves at their defaults (the pipeline split and its
# slots, sequence parallelism with TP, what recompute re-runs): not carried into the search.
LAYOUT_DETAIL_FIELDS = frozenset(("sequence_parallel", "recompute_modules", "recompute_method", "recompute_num_layers",
                                  "pipeline_embedding_layer", "pipeline_loss_layer", "pp_first_stage_layers",
                                  "pp_last_stage_layers", "pp_stage_layers"))
# The stack's options (kernels, compile, overlap, FP8 and MoE options, the loss, the optimizer, activation offload):
# the search carries the stated ones into every layout it tries (search.engine), and the rules judge them there.
STACK_OPTION_FIELDS = frozenset(StrategySpec.model_fields) - LAYOUT_FIELDS - LAYOUT_DETAIL_FIELDS - {"framework"}


def stated_stack_options(spec: StrategySpec | None) -> tuple[tuple[str, Any], ...]:
    """The stack options `spec` states as (field, value) pairs by field name: hashable, as the search caches on
    them; () without a strategy."""
    if spec is None:
        return ()
    return tuple((f, getattr(spec, f)) for f in sorted(spec.model_fields_set & STACK_OPTION_FIELDS))


class Job(_Strict):
    """One training job. See examples/ for complete files."""

    name: str | None = None
    model: str | dict[str, Any]
    method: Method = "pretrain"
    lora: LoraSpec | None = None
    data: DataSpec
    seq_len: int = Field(gt=0, le=10_000_000)
    global_batch: GlobalBatch
    precision: Precision = "bf16"
    # FP8 scaling recipe (precision fp8): auto = MXFP8 on Blackwell, delayed scaling (Transformer Engine) elsewhere
    fp8_recipe: Fp8Recipe = "auto"
    # decoder layers kept in BF16 under precision fp8 (FP8 or NVFP4 recipes), the first and last ones: Megatron-Core
    # first_last_layers_bf16 with num_layers_at_start_in_bf16 + num_layers_at_end_in_bf16 (the NVFP4 paper keeps a
    # few final layers in BF16); 0 = every decoder layer in the low precision
    bf16_layers: int = Field(0, ge=0, le=100_000)
    optimizer: Optimizer = "adamw"
    flash_attention: bool = True
    # the model hands PyTorch's SDPA an explicit additive mask instead of is_causal: transformers' attn_implementation
    # sdpa given an attention_mask that holds a 0 (a padded row; 4.49 modeling_llama _update_causal_mask keeps the 4-D
    # mask unless AttentionMaskConverter._ignore_causal_mask_sdpa finds every position attended). SDPA's flash backend
    # refuses a mask (sdp_utils.cpp check_for_attn_mask), so its memory-efficient backend runs every score of the
    # s x s square at its own rate (perf_constants.yaml attention.mem_efficient_over_fa2); false = is_causal (the
    # causal tiles skipped), what a packed, unpadded or flash_attention_2 run does; null = the framework's: true for
    # framework hf with strategy.attention_kernel sdpa (attn_implementation sdpa) whose micro-batch the job states as
    # padded (micro_batch > 1 over unpacked samples with data.length_sigma > 0, or pad_share > 0): transformers passes
    # SDPA the mask of any padded batch in every release with SDPA (4.36 _prepare_4d_causal_attention_mask_for_sdpa,
    # 4.40 AttentionMaskConverter._ignore_causal_mask_sdpa, 4.53 masking_utils.sdpa_mask: None only when nothing is
    # padded; 4.38-4.39's Llama passes it unpadded too: state true), else false
    explicit_attention_mask: bool | None = None
    # sequence packing: samples shorter than seq_len share a row and attend within themselves (needs
    # data.avg_tokens for their length). Without packing, data given as samples x avg_tokens runs each
    # micro-batch padded to its longest sample (the collators' dynamic padding; estimate.sample_lengths)
    packing: bool = False
    # MoE routing imbalance: the busiest EP rank's routed tokens over its balanced share (1.0 = a balanced router; at
    # one local expert a GPU, the busiest expert's). The estimate charges every expert of a GPU this many times its
    # balanced tokens (grouped GEMMs, permutation copies, the all-to-all's receive, routed activations), the rank a
    # synchronous step waits on each layer. Left at 1.0 under moe_routing natural, the estimate derives it from the
    # experts' popularity on real text (docs/known-gaps.md 318), the least the source gives; better, count it on a
    # short run (the token dispatcher's tokens_per_expert, summed over a rank's experts). A padded
    # token drop (Megatron-Core moe_expert_capacity_factor with moe_pad_expert_input_to_capacity) is stated the same
    # way: every rank at the capacity factor.
    moe_capacity_factor: float = Field(1.0, gt=0, le=16)
    # multi-token prediction passes a step: Megatron-Core mtp_num_layers under mtp_use_repeated_layer, the model's MTP
    # module (its one set of weights) run this many times, each with the LM head and loss once more (Megatron-Bridge's
    # Nemotron 3 Super recipes: 2 on a config of one module); null = one pass a module (the model's MTP modules)
    mtp_passes: int | None = Field(None, ge=1, le=16)
    # which experts a balanced router picks for a token (names.MOE_ROUTINGS): random (a trained router, Megatron-Core's
    # forced balance) | round-robin (consecutive experts: torchtitan's debug force-balance, the gate GEMM still run) |
    # fake-balanced (the same experts from NeMo AutoModel's fake_balanced_gate, which runs no gate GEMM) | natural (the
    # trained router's own choice: Megatron-Core moe_router_force_load_balancing false, any fine-tuning; experts spread
    # as random's, and at moe_capacity_factor 1.0 the busiest EP rank's load derived from the experts' popularity on
    # real text: estimate.moe_load, docs/known-gaps.md 318); sets how many EP ranks and nodes each token is sent to
    moe_routing: MoeRouting = "random"
    # share of each row's positions that hold the pad token of rows padded to seq_len (a tokenizer called with
    # padding="max_length"; every position computed and counted): 1 - the samples' mean length / seq_len. The pad
    # positions carry one token, so an MoE layer's router sends them all to the same top-k experts
    # (estimate.step_time._expert_token_split); 0 = no padding (packed or dynamically padded rows)
    pad_share: float = Field(0.0, ge=0, lt=1)
    # dropout probabilities of the decoder (Megatron's --hidden-dropout / --attention-dropout; HF GPT-2's resid_pdrop
    # and embd_pdrop / attn_pdrop). A residual dropout keeps a 1-byte mask an element for its backward (torch
    # native_dropout): the embedding's, and the two after attention and after the MLP in each layer (Korthikanti et
    # al. 2022 Table 2: sbh each); the attention dropout keeps an s^2 mask only outside fused attention kernels.
    # 0 = none: today's LLM recipes (NeMo / Megatron-Bridge Llama-family configs, torchtitan, HF Llama). A plain
    # Megatron-LM run that does not pass the flags trains with 0.1 and 0.1 (TransformerConfig hidden_dropout /
    # attention_dropout, megatron/core/transformer/transformer_config.py at d98e8a64dd): write them here
    hidden_dropout: float = Field(0.0, ge=0, lt=1)
    attention_dropout: float = Field(0.0, ge=0, lt=1)
    # evaluation passes inside the run's wall-clock (EvaluationSpec); absent: none
    evaluation: EvaluationSpec | None = None
    # checkpoint saves inside the run's wall-clock (CheckpointSavesSpec); absent: none
    checkpoint_saves: CheckpointSavesSpec | None = None
    goal: Goal = Goal()
    constraints: Constraints = Constraints()
    hardware: HardwareSpec | None = None
    strategy: StrategySpec | None = None
    # where the job's one currency came from: "job" (constraints.currency or goal.budget.currency) or "market"
    _currency_from: str = PrivateAttr("job")

    @field_validator("constraints")
    @classmethod
    def _currency_agrees_with_budget(cls, c: Constraints, info: ValidationInfo) -> Constraints:
        """On the field, so the error names constraints.currency beside the budget's (not the top level)."""
        goal = info.data.get("goal")
        budget = goal.budget if goal is not None else None
        if budget is not None and "currency" in budget.model_fields_set and "currency" in c.model_fields_set \
                and budget.currency != c.currency:
            raise ValueError(msg("job_currencies_differ", budget=budget.currency, currency=c.currency))
        return c

    @model_validator(mode="after")
    def _one_currency(self) -> Job:
        """One currency prices the job and holds its budget: the one it gives in goal.budget.currency or
        constraints.currency (both: they must agree, `_currency_agrees_with_budget`), else its market's
        (MARKET_CURRENCY). Both fields are set to it, so a budget written without a currency is read in the
        constraints' (it was read in USD beside constraints.currency CNY)."""
        budget, c = self.goal.budget, self.constraints
        in_budget = budget.currency if budget is not None and "currency" in budget.model_fields_set else None
        in_constraints = c.currency if "currency" in c.model_fields_set else None  # agrees (the field's check)
        currency = in_budget or in_constraints or MARKET_CURRENCY[c.market]
        if not (in_budget or in_constraints) and currency != MARKET_CURRENCY["global"]:
            self._currency_from = "market"
        if budget is not None and budget.currency != currency:
            goal = self.goal.model_copy(update={"budget": budget.model_copy(update={"currency": currency})})
            object.__setattr__(self, "goal", goal)
        if c.currency != currency:
            object.__setattr__(self, "constraints", c.model_copy(update={"currency": currency}))
        return self

    @property
    def currency(self) -> str:
        """The currency every price of the job is read in (see _one_currency)."""
        return self.constraints.currency

    @property
    def currency_from_market(self) -> bool:
        """The job gave no currency and its market (china) chose one other than USD: the notes say so."""
        return self._currency_from == "market"

    @model_validator(mode="after")
    def _method_rules(self) -> Job:
        if self.method in ("lora", "qlora") and self.lora is None:
            object.__setattr__(self, "lora", LoraSpec())
        if self.method not in ("lora", "qlora") and self.lora is not None:
            raise ValueError(msg("job_lora_without_lora", method=repr(self.method)))
        if self.method == "qlora" and self.precision == "fp8":
            raise ValueError(msg("job_qlora_precision", precision=self.precision))
        if self.bf16_layers and self.precision != "fp8":
            raise ValueError(msg("job_bf16_layers_precision", precision=self.precision))
        if self.fp8_recipe in FP4_RECIPES and self.precision != "fp8":
            raise ValueError(msg("job_nvfp4_precision", precision=self.precision, recipe=self.fp8_recipe))
        if self.fp8_recipe in FP4_RECIPES and self.strategy is not None and self.strategy.fp8_param_allgather:
            raise ValueError(msg("job_nvfp4_param_allgather", recipe=self.fp8_recipe))
        if self.packing and self.data.avg_tokens is None:
            raise ValueError(msg("job_packing_needs_samples"))
        layout = self.strategy.model_fields_set - STACK_OPTION_FIELDS - {"framework"} if self.strategy else set()
        if self.hardware is None and layout:
            # a strategy naming only its stack (the framework, stack options) is for the plan's search, no layout:
            # no hardware needed
            raise ValueError(msg("job_strategy_without_hardware"))
        if self.hardware is not None and self.hardware.accelerator is None and layout:
            raise ValueError(msg("job_strategy_without_accelerator"))
        precision = self.strategy.optimizer_precision if self.strategy is not None else None
        if precision is not None and precision not in optimizer_precisions_for(self.optimizer):
            raise ValueError(msg("job_optimizer_precision_adamw", precision=precision, optimizer=self.optimizer,
                                 allowed=Listing(optimizer_precisions_for(self.optimizer))))
        weights = remainder_weights_conflict(precision, self.precision, bool(self.strategy and
                                                                             self.strategy.fp8_param_allgather))
        if weights is not None:
            raise ValueError(msg("job_optimizer_remainders_weights", weights=weights, precision=precision))
        weights = bf16_master_conflict(precision, self.precision)
        if weights is not None:
            raise ValueError(msg("job_optimizer_bf16_master_weights", weights=weights))
        base = self.strategy.frozen_base_dtype if self.strategy is not None else None
        if base not in (None, "compute") and self.method != "lora":
            raise ValueError(msg("job_frozen_base_dtype_method", dtype=base, method=self.method))
        return self

    @property
    def global_batch_sequences(self) -> int:
        return self.global_batch.sequences_for(self.seq_len)
