"""One framework switch: `Strategy.framework` -> the memory profile and the performance style.

Every estimator reads the training framework from `Strategy.framework` (one of `inputs.FRAMEWORKS`, one
value for a whole batch of strategies) through this module; explicit arguments (`MemoryOptions.framework`,
`step_time(..., framework_style=...)`) still override it, so the validation benchmarks can pin a source's
exact stack.

Mapping (memory profile = how model states and activations are stored, `memory.PROFILES`; perf style = how
communication overlaps, `perf_constants.yaml` `frameworks:`):

    framework           memory profile   perf style
    megatron            megatron         megatron
    megatron-core       megatron         megatron-core
    deepseek-dualpipe   megatron         deepseek-dualpipe
    deepspeed           hf               deepspeed
    fsdp                hf               fsdp
    hf                  hf               hf
    torchtitan          hf               torchtitan
    torchtune           hf               torchtune

The "auto" rule picks the stack a user of that layout runs in 2025-2026 (elementwise, one decision per
strategy, so a strategy's answer never depends on which other strategies share its batch; docs/frameworks.md):
- `megatron-core` (NeMo / Megatron-Core: distributed optimizer, overlapped grad reduce-scatter and param
  all-gather, TP comm overlap, Transformer Engine kernels) when the strategy uses TP, PP, CP or EP > 1 or the
  distributed optimizer, without ZeRO-3 / FSDP: those layouts are what Megatron-Core runs.
- `torchtitan` (FSDP2 + TP / PP / CP, PyTorch-native) when parameters are fully sharded (ZeRO-3 / FSDP) and
  the strategy also uses TP, PP, CP or EP, or pre-trains (method pretrain / cpt) on FSDP alone.
- `hf` (HF Trainer / TRL / PEFT on DDP, DeepSpeed ZeRO or FSDP) otherwise: data-parallel fine-tuning.
The estimate says which one it assumed and why (`resolve`); `strategy.framework` overrides it.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from trainsizer.estimate.inputs import FRAMEWORKS

MEMORY_PROFILE = {
    "megatron": "megatron",
    "megatron-core": "megatron",
    "deepseek-dualpipe": "megatron",
    "deepspeed": "hf",
    "fsdp": "hf",
    "hf": "hf",
    "torchtitan": "hf",  # FSDP2 shards model states like ZeRO-3; fp32 loss on full logits (cross_entropy .float())
    "torchtune": "hf",  # FSDP2 / single device; chunked loss and 16-bit non-quantised QLoRA params (memory.py)
}
# the loss a framework computes when the job says loss_impl: auto (None: by memory profile)
# deepspeed: the Megatron-based codebases DeepSpeed ran under (Megatron-DeepSpeed, GPT-NeoX) call
# mpu.vocab_parallel_cross_entropy(output.float(), labels): fp32 softmax saved in place, no fp32 gradient copies
DEFAULT_LOSS = {"torchtune": "chunked", "deepspeed": "vocab-parallel"}
PERF_STYLE = {name: name for name in MEMORY_PROFILE}
AUTO_CHOICES = ("megatron-core", "torchtitan", "hf")  # what "auto" resolves to, by `auto_index`
# why "auto" chose each (i18n keys in render/data/i18n.yaml)
AUTO_REASONS = ("auto_reason_model_parallel", "auto_reason_fsdp_parallel", "auto_reason_data_parallel")


def check_framework(name: str, where: str = "strategy.framework") -> str:
    """`name` if it is one of FRAMEWORKS, else SpecError with a suggestion."""
    if name not in FRAMEWORKS:
        from trainsizer.errors import unknown_name

        raise unknown_name(where, "training framework", name, FRAMEWORKS)
    return name


def _model_parallel(tp: Any, pp: Any, cp: Any, ep: Any) -> Any:
    return np.greater(tp, 1) | np.greater(pp, 1) | np.greater(cp, 1) | np.greater(ep, 1)


def auto_index(tp: Any, pp: Any, cp: Any, ep: Any, dist_opt: Any, zero: Any = 0, pretraining: bool = False) -> Any:
    """The "auto" rule as an index into AUTO_CHOICES (0 megatron-core, 1 torchtitan, 2 hf), elementwise."""
    mp = _model_parallel(tp, pp, cp, ep)
    full_shard = np.greater_equal(zero, 3)
    mega = (mp | np.asarray(dist_opt, dtype=bool)) & ~full_shard
    titan = full_shard & (mp | bool(pretraining))
    return np.where(mega, 0, np.where(titan, 1, 2))


def megatron_style(tp: Any, pp: Any, cp: Any, ep: Any, dist_opt: Any, zero: Any = 0) -> Any:
    """True where "auto" resolves to the Megatron family (memory profile `megatron`)."""
    return auto_index(tp, pp, cp, ep, dist_opt, zero) == 0


def auto_index_of(strategy: Any, pretraining: bool = False) -> Any:
    return auto_index(strategy.tp, strategy.pp, strategy.cp, strategy.ep, strategy.distributed_optimizer,
                      strategy.zero, pretraining)


def megatron_style_of(strategy: Any) -> Any:
    return auto_index_of(strategy) == 0


def memory_profile(name: str) -> str | None:
    """Memory profile of a framework; None for "auto" (resolved per strategy by `megatron_style`)."""
    check_framework(name)
    return None if name == "auto" else MEMORY_PROFILE[name]


def perf_styles(name: str) -> tuple[str, ...] | str:
    """Perf style of a framework, or for "auto" the styles of AUTO_CHOICES (picked by `auto_index`)."""
    check_framework(name)
    return tuple(PERF_STYLE[c] for c in AUTO_CHOICES) if name == "auto" else PERF_STYLE[name]


def _style_entry(name: str) -> dict[str, Any]:
    """What a framework's perf style sets in perf_constants.yaml `frameworks:` ({} where it sets nothing)."""
    from trainsizer.estimate.calibration import load_constants

    check_framework(name)
    return load_constants().raw.get("frameworks", {}).get(PERF_STYLE.get(name, name)) or {}


def style_option(name: str, key: str) -> bool:
    """A boolean option of a framework's perf style (perf_constants.yaml `frameworks:`; False where the style
    does not set it), e.g. `fp8_param_allgather` for the memory estimate, which must resolve a job's unset
    option to the same default as the step time."""
    return bool(_style_entry(name).get(key, False))


def style_number(name: str, key: str) -> float:
    """A number a framework's perf style sets (perf_constants.yaml `frameworks:`), e.g. DeepSpeed's
    stage3_max_reuse_distance and reduce_bucket_size for the memory estimate, so both estimates read one copy
    of the framework's default. KeyError where the style does not set it: the caller names a key that exists."""
    return float(_style_entry(name)[key])


# The Megatron-Core facts the estimate holds that a release brought, each with the release line it came in (read in
# NVIDIA/Megatron-LM); a job's strategy.megatron_core_version below it takes the older behaviour, null the present one:
# - kv_head_subshard: TP above the K / V heads (f7dfb99795, PR 2565, 2025-12-06; first tagged core_v0.16.0,
#   2026-02-26); before it TransformerConfig asked TP to divide num_query_groups (known-gaps 227, 227 (e))
# - sequential_mlp_split: SequentialMLP splits the routed buffer by the host's token counts and concatenates the
#   experts' outputs (torch.split / torch.cat, 8f331e8c89, 2024-09-06; first tagged core_r0.9.0, 2024-10-24); before
#   it each expert's rows were sliced out and written back into a zeroed buffer (docs/known-gaps.md 301 (a))
# - fused_mlp_scaled_fc2_bias: TE's fused grouped MLP scales fc2's expert bias by the routing probabilities
#   (experts.py _make_fused_ops passes GroupedLinear scale_bias; e4ea85970b, PR 5850, 2026-07-22; first tagged
#   core_v0.19.0, 2026-08-19): its backward then runs TE's Triton grouped dbias / dscales kernel over fc2's output
#   gradient; before it fc2's bias went in unscaled, its gradient reduced inside the quantize (docs/known-gaps.md 344 (a))
MCORE_RELEASE_FACTS = {"kv_head_subshard": "0.16", "sequential_mlp_split": "0.9", "fused_mlp_scaled_fc2_bias": "0.19"}


def _release(line: str) -> tuple[int, ...]:
    return tuple(int(n) for n in line.split("."))


def mcore_has(fact: str, version: str | None) -> bool:
    """Whether Megatron-Core release line `version` ("MAJOR.MINOR", spec.job MCORE_VERSION; None = the present
    reading) has `fact` (MCORE_RELEASE_FACTS)."""
    return version is None or _release(version) >= _release(MCORE_RELEASE_FACTS[fact])


# The PyTorch facts the estimate holds that a release brought, each with the release line it came in (read in
# pytorch/pytorch); a job's strategy.torch_version at or above it takes the newer behaviour, below it or null the
# behaviour the styles had before the field (docs/known-gaps.md 311 (a)):
# - fused_rms_norm: F.rms_norm on the GPU (the CUDA dispatch key, ROCm's build's too) runs aten._fused_rms_norm forward and aten._fused_rms_norm_backward, one
#   kernel each, where the weight's dtype is the input's (aten/src/ATen/native/layer_norm.cpp rms_norm_symint; FSDP2's
#   bf16 param_dtype makes it so); pytorch PR 153666, not landed on 2025-07-09 (pytorch issue 157345) and in the
#   nightlies from 2025-08: first released in 2.9.0 (2025-10-15). Before it F.rms_norm ran the composite op by op
TORCH_RELEASE_FACTS = {"fused_rms_norm": "2.9"}


def torch_has(fact: str, version: str | None) -> bool:
    """Whether PyTorch release line `version` ("MAJOR.MINOR", spec.job TORCH_VERSION; None = unstated, the older
    reading) has `fact` (TORCH_RELEASE_FACTS)."""
    return version is not None and _release(version) >= _release(TORCH_RELEASE_FACTS[fact])


def rms_norm_fused_by_release(name: str, auto_idx: Any, torch_version: str | None) -> Any:
    """Where an eager RMSNorm runs as PyTorch's one fused kernel by the job's release: the style's RMSNorm is
    F.rms_norm (perf_constants.yaml frameworks.<style> rms_norm_functional) and strategy.torch_version has
    fused_rms_norm; per strategy under "auto" (`auto_idx`, AUTO_CHOICES). The step time and the memory estimate
    read this one rule (step_time._job_options, memory._norm_kernel_delta)."""
    if not torch_has("fused_rms_norm", torch_version):
        return False
    if name != "auto":
        return style_option(name, "rms_norm_functional")
    flags = np.array([style_option(c, "rms_norm_functional") for c in AUTO_CHOICES])
    return flags[np.asarray(auto_idx, dtype=int)]


def kv_subshard_frameworks(megatron_core_version: str | None = None) -> tuple[str, ...]:
    """The frameworks whose perf style runs TP above the K / V heads (perf_constants.yaml frameworks.<style>
    kv_head_subshard: Megatron-Core's QKV activation sub-sharding), Megatron-Core from the release that brought it
    (`mcore_has`; None = the present reading); the rule tp_divides_kv_heads and both estimates read this one copy."""
    return tuple(n for n in MEMORY_PROFILE if style_option(n, "kv_head_subshard")
                 and (n != "megatron-core" or mcore_has("kv_head_subshard", megatron_core_version)))


def kv_head_copies(name: str, auto_idx: Any, tp: Any, kv_heads: int, attention: str) -> Any:
    """TP ranks that hold each K / V head, per strategy: tp / kv_heads where the stack sub-shards
    (`kv_subshard_frameworks`; "auto": the stack `auto_index` picks) and tp exceeds the K / V heads, else 1 (each
    rank holds kv_heads / tp heads of its own). MLA's K / V split with the query heads: 1."""
    tp = np.asarray(tp, dtype=float)
    if attention == "mla" or kv_heads < 1:
        return np.ones(tp.shape)
    stacks = AUTO_CHOICES if name == "auto" else (name,)
    idx = np.asarray(auto_idx) if name == "auto" else np.zeros((), dtype=int)
    sub = np.array([n in kv_subshard_frameworks() for n in stacks])[idx]
    return np.where(sub & (tp > kv_heads), tp / kv_heads, 1.0)


def deepspeed_zero3_buckets(mode: Any, hidden: float) -> tuple[Any, Any, Any]:
    """(stage3_prefetch_bucket_size, stage3_param_persistence_threshold, reduce_bucket_size) in elements for a job's
    DeepSpeed ZeRO-3 bucket sizes (names.ZERO3_BUCKET_SIZES, elementwise): "deepspeed" = DeepSpeed's zero/config.py
    defaults (the deepspeed style's numbers), "auto" = what the HF Trainer and accelerate write into a config's "auto"
    entries from the model's hidden size (the hf style's coefficients: transformers integrations/deepspeed.py
    HfTrainerDeepSpeedConfig.trainer_config_finalize, accelerate accelerator.py _prepare_deepspeed). The step time
    (gathers a layer) and the memory estimate (the gathered and reduce buckets) both read it."""
    auto = np.asarray(mode) == "auto"
    h = float(hidden)
    return (np.where(auto, np.floor(style_number("hf", "zero3_auto_prefetch_hidden_squares") * h * h),  # int(0.9 h^2)
                     style_number("deepspeed", "zero3_prefetch_bucket_params")),
            np.where(auto, style_number("hf", "zero3_auto_persistence_hiddens") * h,
                     style_number("deepspeed", "zero3_persistence_threshold_params")),
            np.where(auto, style_number("hf", "zero3_auto_reduce_hidden_squares") * h * h,
                     style_number("deepspeed", "grad_bucket_params")))


def deepspeed_zero3_engine(name: str, auto_idx: Any, zero: Any, fsdp: Any) -> tuple[Any, Any]:
    """(where a job runs ZeRO-3 on DeepSpeed's engine, its bucket-size mode) per strategy: framework deepspeed at zero 3,
    or a stack that runs either engine (perf style zero3_runs_deepspeed: hf) at zero 3 without fsdp; "auto" judged as
    the stack it resolves to (`auto_index`). The mode is the style's zero3_bucket_sizes ("deepspeed" where unset)."""
    # one lookup per stack, then indexed per strategy (a search's batch holds millions of strategies)
    stacks = AUTO_CHOICES if name == "auto" else (name,)
    idx = np.asarray(auto_idx) if name == "auto" else np.zeros((), dtype=int)
    mode = np.array([str(_style_entry(n).get("zero3_bucket_sizes", "deepspeed")) for n in stacks], dtype=object)
    return (np.asarray(zero) >= 3) & deepspeed_engine(name, auto_idx, fsdp), mode[idx]


def deepspeed_engine(name: str, auto_idx: Any, fsdp: Any) -> Any:
    """Whether a ZeRO stage of the job runs on DeepSpeed's engine, per strategy: framework deepspeed, or a stack that
    runs either engine (perf style zero3_runs_deepspeed: the HF Trainer / accelerate, whose ZeRO without fsdp is
    DeepSpeed's plugin) without fsdp; "auto" judged as the stack it resolves to (`auto_index`)."""
    stacks = AUTO_CHOICES if name == "auto" else (name,)
    idx = np.asarray(auto_idx) if name == "auto" else np.zeros((), dtype=int)
    engine = np.array([n == "deepspeed" or (bool(_style_entry(n).get("zero3_runs_deepspeed", False))
                                           and fsdp in (None, "none")) for n in stacks])
    return engine[idx]


def fp8_primary_weights_default(style_on: Any, zero: Any) -> Any:
    """A style's default FP8 primary weights (fp8_param_allgather unset in the job) per strategy: they hold with the
    distributed optimizer only; NeMo turns fp8_param_gather off under Megatron FSDP / ZeRO-3
    (scripts/performance/utils.py, v2.3.0). The step time and the memory estimate both read it here."""
    return np.asarray(style_on) & (np.asarray(zero) < 3)


def compiles_by_default(name: str, strategy: Any = None, pretraining: bool = False) -> Any:
    """Whether the stack fuses element-wise work when the job leaves strategy.torch_compile unstated
    (PerfStyle.compiles_by_default, perf_constants.yaml `frameworks:`: false where it runs eager unless asked, the HF
    Trainer, torchtune, torchtitan); "auto": per strategy, the default of the stack `auto_index` picks for it."""
    from trainsizer.estimate.step_time import perf_style  # step_time reads this module: imported at call time

    if name != "auto":
        return perf_style(PERF_STYLE.get(name, name)).compiles_by_default
    defaults = np.array([perf_style(PERF_STYLE[c]).compiles_by_default for c in AUTO_CHOICES])
    return defaults[auto_index_of(strategy, pretraining)]


def torch_compile_of(strategy: Any, default: Any) -> Any:
    """Whether element-wise work runs fused, per strategy: strategy.torch_compile where the job states it, else
    `default`, its stack's (`compiles_by_default`, or the timed PerfStyle's): the one rule the memory estimate, the
    step time and the output (evaluate._torch_compile) share."""
    stated = getattr(strategy, "torch_compile", None)
    return default if stated is None else stated


def dense_all_default(strategy: Any, model: Any, pretraining: bool = False) -> Any:
    """Per strategy, whether an MoE job that states no strategy.experts_implementation runs every routed expert on
    every token: where the stack it names, or the one "auto" resolves to for that strategy (`auto_index`), runs the
    model family's MoE block so (perf_constants.yaml frameworks.<style> dense_expert_families: transformers'
    Llama4TextMoe under hf). False where the job states one or the model is dense."""
    name = getattr(strategy, "framework", "auto")
    if getattr(strategy, "experts_implementation", None) is not None or not getattr(model, "is_moe", False) \
            or not isinstance(name, str):
        return False
    stacks = AUTO_CHOICES if name == "auto" else (name,)
    dense = np.array([family_listed(model.family, _style_entry(n).get("dense_expert_families", "")) for n in stacks])
    return dense[np.asarray(auto_index_of(strategy, pretraining))] if name == "auto" else bool(dense[0])


def fused_expert_loop(strategy: Any, model: Any) -> bool:
    """Whether the job states experts_implementation eager (an hf-only option) on a family whose transformers experts
    are fused 3-D parameters in every release (perf_constants.yaml frameworks.hf fused_expert_families: gpt-oss), so
    each hit expert's backward returns a gradient of the whole fused parameter (memory._expert_weight_copies)."""
    fused = _style_entry("hf").get("fused_expert_families", "")
    return getattr(strategy, "experts_implementation", None) == "eager" and family_listed(getattr(model, "family", ""),
                                                                                          fused)


def family_listed(family: str, listed: Any) -> bool:
    """Whether a model family is in a style's comma-separated family list (perf_constants.yaml frameworks:
    dense_expert_families, fused_expert_families, zero3_leaf_families, split_expert_loop_families ...)."""
    return family in str(listed).split(",")


def experts_implementation_of(strategy: Any, model: Any, pretraining: bool = False) -> str | None:
    """How the job's routed experts run (names.EXPERTS_IMPLEMENTATIONS): strategy.experts_implementation where stated;
    unset, "dense_all" where every strategy's stack runs the family's MoE block on every expert (`dense_all_default`:
    the named framework's, or under auto each strategy's resolved one), else None (the style's own default). One value
    for the batch: a batch under auto whose strategies resolve to stacks that differ here is estimated in two parts
    (step_time.step_time_arrays, memory.memory_arrays: `dense_all_split`)."""
    stated = getattr(strategy, "experts_implementation", None)
    if stated is not None:
        return stated
    return "dense_all" if np.all(dense_all_default(strategy, model, pretraining)) else None


def dense_all_split(strategy: Any, model: Any, pretraining: bool = False) -> Any:
    """The strategies of a batch that run dense_all by their resolved stack's default where only some do (framework
    auto, e.g. hf for the data-parallel layouts and megatron-core for the model-parallel ones of Llama 4); None where
    the batch runs one way (`experts_implementation_of` says which)."""
    mask = np.asarray(dense_all_default(strategy, model, pretraining), bool)
    return mask if np.any(mask) and not np.all(mask) else None


def stating_dense_all(strategy: Any) -> Any:
    """`strategy` with experts_implementation dense_all stated: the dense half of a `dense_all_split` batch."""
    return dataclasses.replace(strategy, experts_implementation="dense_all")


def routed_model(model: Any, strategy: Any, pretraining: bool = False) -> Any:
    """The model as its routed experts run: under dense_all every expert takes every token (the expert GEMMs, their
    inputs, intermediates and outputs, routed_in / routed_out, at tokens x experts), i.e. top-k = the expert count
    (transformers' Llama4TextMoe.forward, modeling_llama4.py at 63210d0e3 / 000c33fdf); else the model itself."""
    if experts_implementation_of(strategy, model, pretraining) != "dense_all" or not model.is_moe:
        return model
    return dataclasses.replace(model, experts_per_token=model.experts)


def assumptions(name: str) -> dict[str, str]:
    """What a framework style assumes (kernels, overlap, recompute, loss, optimizer, FP8, sources), from
    estimate/data/framework_assumptions.yaml (the table in docs/frameworks.md)."""
    check_framework(name)
    return dict(_assumption_table()[name])


@lru_cache(maxsize=1)
def _assumption_table() -> dict[str, dict[str, str]]:
    import yaml

    text = resources.files("trainsizer.estimate").joinpath("data/framework_assumptions.yaml").read_text()
    return {str(k): {str(a): str(b) for a, b in v.items()} for k, v in yaml.safe_load(text)["frameworks"].items()}


def resolve(name: str, strategy: Any, pretraining: bool = False) -> dict[str, Any]:
    """Resolved framework of one strategy (scalar fields): {"requested", "assumed", "reason" (an i18n key,
    None when named), "memory_profile", "perf_style"}."""
    check_framework(name)
    reason = None
    assumed = name
    if name == "auto":
        i = int(np.asarray(auto_index_of(strategy, pretraining)).reshape(-1)[0])
        assumed, reason = AUTO_CHOICES[i], AUTO_REASONS[i]
    return {"requested": name, "assumed": assumed, "reason": reason,
            "memory_profile": MEMORY_PROFILE[assumed], "perf_style": PERF_STYLE[assumed]}
