"""Resolve a job file against the catalog and the model presets into the estimators' inputs.

`spec` only checks a job's shape; here names are looked up (model preset, accelerator, network), the data
quantity becomes tokens, the global batch becomes sequences, and the optional hardware/strategy become a
`System` and a `Strategy`. Every lookup error names the job field it came from.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainsizer.catalog.market_notes import market_note
from trainsizer.errors import SpecError, StrategyError, TrainsizerError
from trainsizer.estimate.device_map import balanced_split, weight_bytes_for
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.model_states import lora_impl_default
from trainsizer.estimate.sample_lengths import next_fit_fill, real_tokens
from trainsizer.estimate.train_time import tokens_run, whole_steps
from trainsizer.messages import Listing, msg
from trainsizer.models import ModelArch, load_model
from trainsizer.spec import Job, NetworkSpec, load_job
from trainsizer.spec.load import parse_model

if TYPE_CHECKING:
    from trainsizer.catalog.catalog import Catalog
    from trainsizer.catalog.records import Accelerator


def _network_fallback(key: str) -> float:
    """Per-NIC efficiency and latency of a network that gives none (perf_constants.yaml `comm:`)."""
    from trainsizer.estimate.calibration import load_constants

    return float(load_constants().raw["comm"][key])


def network_view(net: Any, nics_per_node: int) -> NetworkView:
    """A catalog network with `nics_per_node` NICs; its planning efficiency and latency, else the fallbacks."""
    return NetworkView(net.id, net.kind, nics_per_node, net.gbps_per_nic,
                       net.efficiency_planning or _network_fallback("nic_efficiency_fallback"),
                       net.latency_us or _network_fallback("inter_node_latency_us_fallback"),
                       net.alltoall_payload_share or 1.0)


def kind_efficiency(kind: str, catalog: Catalog) -> float | None:
    """The planning efficiency every catalog network of `kind` shares (RoCE and Ethernet: 0.835, networks.yaml), or
    None where they differ by generation (InfiniBand HDR 0.96 / NDR 0.94, EFA v1-v4 0.71-0.85), which a network described
    by hand does not state (docs/known-gaps.md 280 (c))."""
    shared = {float(n.efficiency_planning) for n in catalog.networks.values() if n.kind == kind}
    return shared.pop() if len(shared) == 1 else None


def custom_network_view(spec: NetworkSpec, catalog: Catalog) -> NetworkView:
    """A network described by hand in the job file: the planning efficiency the catalog's networks of its kind share
    (kind_efficiency), else the shipped NIC efficiency fallback; the shipped latency fallback."""
    return NetworkView("custom", spec.kind, spec.nics_per_node, spec.gbps_per_nic,
                       kind_efficiency(spec.kind, catalog) or _network_fallback("nic_efficiency_fallback"),
                       _network_fallback("inter_node_latency_us_fallback"))


@dataclass(frozen=True)
class NetworkView:
    """The scale-out network of one node, whatever way it was given."""

    id: str
    kind: str
    nics_per_node: int
    gbps_per_nic: float
    efficiency: float
    latency_us: float
    # NCCL's all-to-all payload per NIC over the ring payload (networks.yaml alltoall_payload_share); 1 = not measured
    alltoall_share: float = 1.0

    @property
    def node_gb_s(self) -> float:
        """Payload GB/s per node, one direction."""
        return self.nics_per_node * self.gbps_per_nic / 8 * self.efficiency


@dataclass(frozen=True)
class Scenario:
    """A job with every name resolved: what the estimators, search and plan work on."""

    job: Job
    model: ModelArch
    training: Training
    accelerator: Any = None  # catalog Accelerator
    network: NetworkView | None = None
    system: System | None = None
    strategy: Strategy | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def name(self) -> str:
        return self.job.name or f"{self.model.name} {self.job.method}"

    def _sample_rows_summary(self) -> dict[str, Any] | None:
        """Unpacked samples: what the rows were assumed to hold (Training.sample_*); None for rows of seq_len."""
        tr = self.training
        if not tr.per_sample_rows:
            return None
        return {"mean_tokens": tr.sample_mean_tokens, "length_sigma": tr.sample_sigma,
                "cap_tokens": tr.row_cap, "real_tokens_per_sample": round(tr.sample_tokens, 1),
                "group_by_length": tr.length_grouped_samples > 0}

    def _pack_rows_summary(self) -> dict[str, Any] | None:
        """Next-fit packs (torchtune): the samples assumed and the tokens a pack holds (Training.pack_fill); None
        for full rows."""
        tr, data = self.training, self.job.data
        if tr.pack_fill >= 1.0:
            return None
        return {"mean_tokens": float(data.avg_tokens or 0.0), "length_sigma": float(data.length_sigma or 0.0),
                "pack_tokens": tr.seq_len, "real_tokens_per_pack": round(tr.seq_len * tr.pack_fill, 1)}

    def summary(self) -> dict[str, Any]:
        job = self.job
        out: dict[str, Any] = {
            "name": self.name,
            "model": {
                "name": self.model.name,
                "family": self.model.family,
                "params_total": self.model.params_total,
                "params_active": self.model.params_active,
                "layers": self.model.layers,
                "hidden": self.model.hidden,
            },
            "method": job.method,
            "lora": job.lora.model_dump(mode="json") if job.lora else None,
            "precision": job.precision,
            "optimizer": job.optimizer,
            "seq_len": job.seq_len,
            "global_batch_sequences": self.training.global_batch_seqs,
            "tokens_per_step": self.training.tokens_per_step,
            "sample_rows": self._sample_rows_summary(),
            "pack_rows": self._pack_rows_summary(),
            "tokens_total": self.training.tokens_total,
            "steps": self.steps,
            **self._evaluation_summary(),
            "goal": job.goal.model_dump(mode="json"),
            "constraints": job.constraints.model_dump(mode="json"),
        }
        if self.system is not None:
            out["hardware"] = {
                "accelerator": self.system.accelerator,
                "gpus": self.system.gpus,
                "gpus_per_node": self.system.gpus_per_node,
                "nodes": self.system.nodes,
                **scaleup_domains(self.accelerator, self.system),
                "memory_gib_per_gpu": self.system.memory_gib,
                "network": None if self.network is None else {
                    "id": self.network.id,
                    "kind": self.network.kind,
                    "nics_per_node": self.network.nics_per_node,
                    "gbps_per_nic": self.network.gbps_per_nic,
                    "node_gb_s": round(self.network.node_gb_s, 2),
                },
                "fabric": None if not self.system.zone_gpus else {
                    "oversubscription": self.system.oversubscription,
                    "zone_gpus": self.system.zone_gpus,
                },
            }
        if self.strategy is not None:
            s = self.strategy
            out["strategy"] = {k: getattr(s, k) for k in (
                "tp", "pp", "vpp", "dp", "cp", "ep", "zero", "shard_group", "micro_batch", "local_batch", "recompute",
                "recompute_modules",
                "recompute_method", "recompute_num_layers",
                "offload", "sequence_parallel", "distributed_optimizer", "pipeline_embedding_layer",
                "pipeline_loss_layer", "pp_first_stage_layers", "pp_last_stage_layers", "pp_stage_layers", "torch_compile", "compile_loss", "sac_saves_attention", "tf32", "loss_impl", "tp_comm_overlap", "fp8_param_allgather",
                "fp8_transpose_cache",
                "grad_reduce_in_fp32", "grad_reduce_overlap", "zero1_grad_allreduce", "megatron_fsdp_sharding", "grad_bucket_params", "gradient_accumulation_fusion", "attention_kernel", "norm_kernel", "cp_comm_type", "repeat_kv", "moe_tp_token_split", "pp_fsdp_once_per_step", "loss_parallel", "fsdp_no_sync", "fsdp_reshard", "embedding_parallel",
                "activation_kernel", "rope_kernel", "eager_attention", "split_projections", "fp8_attention", "fp8_activation_store", "fp8_lm_head", "defer_embedding_wgrad",
                "wgrad_deferral_limit", "cuda_graphs", "cudnn_release", "megatron_core_version", "torch_version", "aiter_mla_bwd_asm",
                "nf4_dequant_dtype", "nf4_decode", "nf4_double_quant", "nf4_saves_input", "bnb_compute_from_input", "nf4_lm_head", "lm_head_chunk",
                "moe_dispatcher", "moe_a2a_overlap", "delay_wgrad_compute", "cuda_device_max_connections", "moe_fused_grouped_mlp", "moe_torch_grouped_mm", "moe_turbo_grouped_gemm", "moe_eager_glue", "moe_sync_free", "moe_pad_to_capacity", "moe_permute_fusion", "moe_router_fusion", "moe_aux_loss", "moe_grouped_gemm", "tp_only_amax_red", "experts_implementation", "expert_weight_copies", "fused_qkv_rope", "flash_qkv_pack", "te_op_fuser", "activation_offload", "optimizer_in_backward", "optimizer_impl", "bnb_optimizer_block", "allocator_expandable_segments", "ddp_impl", "checkpoint_impl", "zero3_expert_fetch", "zero3_bucket_sizes", "zero_init", "fsdp", "fsdp_version", "optimizer_precision", "kbit_upcast", "nf4_quantize_unchunked",
                "frozen_base_dtype", "autocast", "live_at_rerun", "returns_kv_cache", "moe_router_output_held",
                "shard_embedding_head_separately", "device_map",
                "framework")}
        if self.notes:
            out["notes"] = list(self.notes)
        return out

    def _evaluation_summary(self) -> dict[str, Any]:
        """The job's evaluation passes and checkpoint saves as the estimate takes them (scenario._with_evaluation /
        _with_saves), where it states any: {"evaluation": {samples, micro_batch, passes}, "checkpoint_saves": {saves,
        sharded}}; none: nothing (the summary as before)."""
        t = self.training
        out: dict[str, Any] = {}
        if t.save_count:  # the job's checkpoint saves (scenario._with_saves)
            out["checkpoint_saves"] = {"saves": t.save_count, "sharded": t.save_sharded}
        if not t.eval_passes:
            return out
        micro_batch = t.eval_micro_batch or (self.strategy.micro_batch if self.strategy is not None else None)
        return {"evaluation": {"samples": t.eval_samples, "micro_batch": micro_batch, "passes": t.eval_passes}, **out}

    @property
    def steps(self) -> int:
        """Optimizer steps over the run: a partial last batch still takes a step (train_time.whole_steps)."""
        return whole_steps(self.training.tokens_total, self.training.tokens_per_step)

    @property
    def tokens_run(self) -> float:
        """Tokens the run processes, whole steps (train_time.tokens_run): what time and cost are priced on."""
        return tokens_run(self.training.tokens_total, self.training.tokens_per_step)


def _prefixed(err: SpecError, prefix: str) -> SpecError:
    same = not err.where or prefix.endswith(err.where)
    return err.at(prefix if same else f"{prefix} ({err.where})")


def resolve_model(spec: str | Mapping[str, Any], origin: str) -> ModelArch:
    try:
        return load_model(spec)
    except SpecError as err:
        raise _prefixed(err, f"{origin}: model") from None


def resolve_job(source: Path | str | Mapping[str, Any] | Job, catalog: Catalog,
                data: Mapping[str, Any] | None = None, *, network_searched: bool = False) -> Scenario:
    """A `Scenario` from a job file, mapping or `Job`, using `catalog` for hardware names.

    `data`, when given, is the already-read (and possibly overridden) content of the file `source`; errors
    still name that file and relative model paths resolve beside it. `network_searched` (the plan): a job whose
    hardware spans several nodes without `hardware.network` is left for the search to choose the network, as
    `hardware: {count: N}` is, instead of being refused.
    """
    origin = "job" if isinstance(source, Mapping | Job) else str(source)
    job = _read_job(source, data, origin)
    model = _job_model(job, source, origin)
    notes = [msg("note_model_config", note=n) for n in model.notes]
    if job.strategy is not None:
        notes += [msg("note_field_renamed", old=k, new=v) for k, v in job.strategy.renamed_from.items()]
    training = _training(job)
    _check_batch_within_data(training, origin)
    if job.mtp_passes and not model.mtp_layers:
        raise SpecError(f"{origin}: mtp_passes", msg("job_mtp_passes_no_mtp", model=model.name), value=job.mtp_passes)
    notes += _past_positions_note(job, model)
    if job.global_batch.tokens is not None and job.global_batch.tokens % job.seq_len:
        notes.append(msg("note_batch_tokens_rounded", tokens=job.global_batch.tokens, seq_len=job.seq_len,
                         sequences=training.global_batch_seqs, step_tokens=training.tokens_per_step))
    cut = _truncation_warning(job, training)
    if cut is not None:
        notes.insert(0, cut)  # first: it changes what the run trains on, not only how fast
    if training.per_sample_rows:
        notes.append(msg("note_unpacked_samples", mean=f"{training.sample_mean_tokens:g}",
                         sigma=f"{training.sample_sigma:g}", cap=f"{training.row_cap:g}",
                         real=f"{training.sample_tokens:.0f}"))
    if not training.trains_base_weights:  # what MFU counts for adapters (flops.model_flops_per_token)
        notes.append(msg("note_mfu_adapters", method=training.method))
    if training.pack_fill < 1.0:
        notes.append(msg("note_next_fit_packing", framework=job.strategy.framework, seq_len=job.seq_len,
                         mean=f"{job.data.avg_tokens:g}", sigma=f"{job.data.length_sigma or 0.0:g}",
                         real=f"{job.seq_len * training.pack_fill:.0f}", share=f"{100 * training.pack_fill:.1f}"))
    elif job.packing and (job.data.length_sigma is not None or job.data.max_tokens is not None):
        notes.append(msg("note_packed_sample_lengths", seq_len=job.seq_len))
    if job.currency_from_market:
        notes.append(msg("note_currency_market", currency=job.currency, market=job.constraints.market))
    if job.strategy is not None and job.strategy.framework in ("megatron", "megatron-core") and not (
            {"hidden_dropout", "attention_dropout"} & job.model_fields_set):
        # Megatron-LM's TransformerConfig defaults (hidden / attention dropout 0.1) where a command line sets neither
        notes.append(msg("note_megatron_dropout", framework=job.strategy.framework))
    listed = _listed_accelerators(job, catalog, origin)
    bare = Scenario(job=job, model=model, training=training, notes=tuple(notes))
    if job.hardware is None:
        return bare
    if job.hardware.accelerator is None:  # only a GPU count (per node, network): the plan's search pins them
        return replace(bare, notes=(*bare.notes, msg("note_count_only", gpus=job.hardware.count)))
    return _with_hardware(job, catalog, origin, listed, bare, network_searched)


def _past_positions_note(job: Job, model: ModelArch) -> list[str]:
    """A note where seq_len exceeds the model's positions (max_position_embeddings; 0 = an inline model that states
    none): context extension is a legitimate run, so it is said, not refused."""
    if not model.max_position or job.seq_len <= model.max_position:
        return []
    return [msg("note_seq_len_past_positions", seq_len=f"{job.seq_len:,}", positions=f"{model.max_position:,}",
                ratio=f"{job.seq_len / model.max_position:.3g}", how=msg(f"part_positions_{model.position}"))]


# Below a hundredth of the data's tokens cut at seq_len, the cut moves the run's tokens, time and cost by less than
# 1%: the unpacked-samples note says it; at or above it, a warning does (display threshold, not a model constant).
TRUNCATION_WARN_SHARE = 0.01


def _truncation_warning(job: Job, training: Training) -> str | None:
    """A warning when unpacked samples longer than seq_len lose a material share of their tokens: the collators
    truncate them (a real configuration, not an error), so the run trains on less data than the job states."""
    if not training.per_sample_rows:
        return None
    mean, sigma = training.sample_mean_tokens, training.sample_sigma
    uncut = real_tokens(mean, sigma, training.sample_max_tokens or float("inf"))
    kept = training.sample_tokens
    share = 1.0 - kept / uncut if uncut > 0 else 0.0
    if share < TRUNCATION_WARN_SHARE:
        return None
    return msg("warn_samples_truncated", mean=f"{mean:g}", sigma=f"{sigma:g}", seq_len=job.seq_len,
               share=f"{share:.0%}", kept=f"{kept:.0f}", uncut=f"{uncut:.0f}")


def _read_job(source: Path | str | Mapping[str, Any] | Job, data: Mapping[str, Any] | None, origin: str) -> Job:
    if isinstance(source, Job):
        return source
    if data is not None:
        return parse_model(Job, data, origin)
    return load_job(source)


def _job_model(job: Job, source: Path | str | Mapping[str, Any] | Job, origin: str) -> ModelArch:
    model_spec: str | Mapping[str, Any] = job.model
    if isinstance(model_spec, str) and not isinstance(source, Mapping | Job):
        # A relative config path in a job file is relative to that file, not to the current folder.
        beside = Path(source).parent / model_spec
        if ("/" in model_spec or model_spec.endswith(".json")) and beside.exists():
            model_spec = str(beside)
    return resolve_model(model_spec, origin)


def lora_impl(job: Job) -> str:
    """The job's lora.impl, else the framework's (model_states.lora_impl_default: TRL >= 0.26's bf16 QLoRA adapters
    under hf / auto, docs/known-gaps.md 268 (a))."""
    if job.lora is not None and job.lora.impl is not None:
        return job.lora.impl
    s = job.strategy
    return lora_impl_default(job.method, s.framework if s is not None else "auto",
                             s.kbit_upcast if s is not None else None)[0]


def _training(job: Job) -> Training:
    return _with_saves(job, _with_evaluation(job, Training(
        method=job.method,
        precision=job.precision,
        optimizer=job.optimizer,
        seq_len=job.seq_len,
        global_batch_seqs=job.global_batch_sequences,
        lora_rank=job.lora.rank if job.lora else 0,
        lora_targets=tuple(job.lora.targets) if job.lora else (),
        lora_dropout=job.lora.dropout if job.lora else 0.0,
        lora_impl=lora_impl(job),
        lora_a2a=job.lora.a2a if job.lora else False,
        flash_attention=job.flash_attention,
        explicit_attention_mask=_explicit_attention_mask(job),
        tokens_total=_tokens_total(job),
        moe_capacity_factor=job.moe_capacity_factor,
        mtp_passes=job.mtp_passes or 0,
        moe_routing=job.moe_routing,
        pad_share=job.pad_share,
        hidden_dropout=job.hidden_dropout,
        attention_dropout=job.attention_dropout,
        fp8_recipe=job.fp8_recipe,
        bf16_layers=job.bf16_layers,
        attention_span=int(min(job.data.avg_tokens, job.seq_len)) if job.packing and job.data.avg_tokens else 0,
        pack_fill=_pack_fill(job),
        **_sample_rows(job),
    )))


def _with_evaluation(job: Job, training: Training) -> Training:
    """The job's evaluation passes (spec.job.EvaluationSpec): every_steps, a pass at each multiple of it over the
    run's whole steps (transformers IntervalStrategy.STEPS: global_step % eval_steps == 0); else one at each epoch's
    end, a last partial epoch included (IntervalStrategy.EPOCH: DefaultFlowCallback.on_epoch_end, which also runs
    when max_steps stops the epoch loop)."""
    ev = job.evaluation
    if ev is None:
        return training
    passes = _interval_count(job, training, ev.every_steps)
    return replace(training, eval_samples=ev.samples, eval_micro_batch=ev.micro_batch or 0,
                               eval_passes=int(passes))


def _with_saves(job: Job, training: Training) -> Training:
    """The job's checkpoint saves (spec.job.CheckpointSavesSpec), counted as evaluation passes are: save_strategy
    steps saves at each multiple of save_steps, epoch at each epoch's end (transformers 4.40 DefaultFlowCallback sets
    should_save beside should_evaluate)."""
    cs = job.checkpoint_saves
    if cs is None:
        return training
    return replace(training, save_count=_interval_count(job, training, cs.every_steps), save_sharded=cs.sharded)


def _interval_count(job: Job, training: Training, every_steps: int | None) -> int:
    """Events over the run at each multiple of `every_steps` of its whole steps (IntervalStrategy.STEPS: global_step
    % n == 0); None: one at each epoch's end, a last partial epoch included (ceil of data.epochs)."""
    if every_steps:
        return whole_steps(training.tokens_total, training.tokens_per_step) // every_steps
    return math.ceil(job.data.epochs - 1e-9)


def _explicit_attention_mask(job: Job) -> bool:
    """Job.explicit_attention_mask, or where null the framework's: transformers' SDPA attention (framework hf,
    strategy.attention_kernel sdpa) is handed the batch's padding mask whenever a position is padded (every release
    with SDPA, 4.36 on: modeling_attn_mask_utils / masking_utils return no mask only for an unpadded batch), so a
    micro-batch the job states as padded -- more than one unpacked sample of spread lengths (dynamic padding to the
    longest), or rows padded to seq_len (pad_share) -- runs SDPA's memory-efficient backend over the whole square."""
    if job.explicit_attention_mask is not None:
        return job.explicit_attention_mask
    s = job.strategy
    if s is None or s.framework != "hf" or s.attention_kernel != "sdpa" or not job.flash_attention:
        return False
    spread = (not job.packing and job.data.samples is not None and (job.data.length_sigma or 0.0) > 0
              and s.micro_batch > 1)
    return spread or job.pad_share > 0


def _pack_fill(job: Job) -> float:
    """Share of a packed row that holds sample tokens: below 1 where the job's framework packs next fit
    (torchtune: perf style packs_next_fit) samples of a known mean length (data.samples x avg_tokens, the
    spread from data.length_sigma, the longest sample data.max_tokens or seq_len) into packs of seq_len; else full
    rows."""
    from trainsizer.estimate.step_time import perf_style

    framework = job.strategy.framework if job.strategy is not None else "auto"
    if (not job.packing or job.data.samples is None or job.data.avg_tokens is None or framework == "auto"
            or not perf_style(framework).packs_next_fit):
        return 1.0
    return next_fit_fill(float(job.data.avg_tokens), float(job.data.length_sigma or 0.0), float(job.seq_len),
                         float(job.data.max_tokens or 0.0))


def _sample_rows(job: Job) -> dict[str, float]:
    """Unpacked samples (data as samples x avg_tokens, packing false): micro-batches padded to their longest
    sample (Training.sample_mean_tokens / sample_sigma); anything else runs rows of seq_len."""
    if job.packing or job.data.samples is None or job.data.avg_tokens is None:
        return {}
    return {"sample_mean_tokens": float(job.data.avg_tokens), "sample_sigma": float(job.data.length_sigma or 0.0),
            "sample_max_tokens": float(job.data.max_tokens or 0.0),
            "length_grouped_samples": float(job.data.samples) if job.data.group_by_length else 0.0}


def _listed_accelerators(job: Job, catalog: Catalog, origin: str) -> dict[str, set[str] | None]:
    """constraints.exclude / include as catalogue ids (aliases resolve to one id); include None = not given."""
    listed: dict[str, set[str] | None] = {"exclude": set(), "include": None}
    for key in ("exclude", "include"):
        names = getattr(job.constraints, key)
        if names is None:
            continue
        listed[key] = set()
        for i, name in enumerate(names):
            try:
                listed[key].add(catalog.accelerator(name).id)
            except SpecError as err:
                raise _prefixed(err, f"{origin}: constraints.{key}[{i}]") from None
    both = sorted((listed["include"] or set()) & listed["exclude"])
    if both:  # nothing of it could be searched; the job says two things (the plan listed every card as refused)
        raise SpecError(f"{origin}: constraints", msg("job_include_exclude_both", ids=Listing(both)))
    return listed


def _with_hardware(job: Job, catalog: Catalog, origin: str, listed: dict[str, set[str] | None],
                   bare: Scenario, network_searched: bool = False) -> Scenario:
    """`bare` (model and training only) placed on the job's `hardware:` and, when given, its strategy."""
    hw = job.hardware
    try:
        acc = catalog.accelerator(hw.accelerator)
    except SpecError as err:
        raise _prefixed(err, f"{origin}: hardware.accelerator") from None
    notes = list(bare.notes)
    per_node = _hosts(hw, acc, origin)
    notes.extend(_check_constraints(job, acc, listed, origin, per_node))
    spans = spans_scaleout(acc, hw.count, per_node)
    if spans and hw.network is None and network_searched:  # the plan pins accelerator and count, searches networks
        return replace(bare, notes=(*notes, msg("note_network_searched", gpus=hw.count, accelerator=acc.id,
                                                 nodes=-(-hw.count // per_node))))
    network = _resolve_network(hw.network, spans, catalog, origin, per_node, hw.count)
    if network is None and hw.count > per_node:
        notes.append(msg("note_one_scaleup_domain", accelerator=acc.id, gpus=hw.count, per_node=per_node,
                         domain=acc.scaleup_domain))
    system = _with_fabric(build_system(acc, hw.count, min(per_node, hw.count), network), hw.fabric, per_node,
                          origin)
    notes += _placement_notes(acc, system, per_node)
    strategy = _resolve_strategy(job, hw.count, origin) if job.strategy is not None else None
    if strategy is not None and strategy.device_map is not None:
        strategy = _device_map_layout(strategy, bare, hw.count, per_node, origin)
    return Scenario(job=job, model=bare.model, training=bare.training, accelerator=acc, network=network,
                    system=system, strategy=strategy, notes=tuple(notes))


def _check_batch_within_data(training: Training, origin: str) -> None:
    """One optimizer step must not need more tokens than the whole run has: such a batch is a typo (or a
    job that cannot take a single full step), and its time-to-train would be meaningless."""
    if training.tokens_total and training.tokens_per_step > training.tokens_total:
        raise SpecError(f"{origin}: global_batch",
                        msg("job_batch_beyond_data", step_tokens=f"{training.tokens_per_step:,}",
                            total_tokens=f"{training.tokens_total:,.0f}" if training.tokens_total >= 1
                            else f"{training.tokens_total:.3g}"))


def _tokens_total(job: Job) -> float:
    """Tokens processed over the run. For DPO, `samples` are preference pairs and `avg_tokens` the length of
    one sequence (prompt + one response), so each sample is two sequences; `tokens` and `dataset_gb` already
    count everything processed."""
    total = job.data.tokens_total
    if _sample_rows(job):  # unpacked samples are truncated at seq_len: each contributes E[min(L, seq_len)]
        rows = _sample_rows(job)
        cap = min(job.seq_len, rows["sample_max_tokens"] or job.seq_len)
        total = job.data.samples * job.data.epochs * real_tokens(rows["sample_mean_tokens"], rows["sample_sigma"], cap)
    if job.method == "dpo" and job.data.samples is not None:
        total *= 2
    return total


def check_per_node(acc: Any, per_node: int, where: str) -> None:
    """A job's GPUs per node may not exceed what one host of the accelerator holds where the catalog fixes it
    (`host_gpus_max`: a GB200 / GB300 NVL72 compute tray holds 4 GPUs, an HGX H100 board 8, so 8 per node on
    NVL72 and 16 on H100 SXM do not exist). Fewer is a job using part of each host. The one check of hardware.per_node and of the plan's `--per-node` pin."""
    host = getattr(acc, "host_gpus_max", None)
    if host and per_node > host:
        raise SpecError(where, msg("job_per_node_above_host", per_node=per_node, accelerator=acc.id, host=host),
                        value=per_node, allowed=[msg("allowed_at_most", n=host)])


def _with_fabric(system: System, fabric: Any, per_node: int, origin: str) -> System:
    """`system` on the job's oversubscribed fabric (hardware.fabric), whose zones hold whole hosts."""
    if fabric is None:
        return system
    if fabric.zone_gpus % per_node:
        raise SpecError(f"{origin}: hardware.fabric.zone_gpus", msg("job_fabric_zone_whole_hosts",
                                                                    zone=fabric.zone_gpus, per_node=per_node),
                        value=fabric.zone_gpus, allowed=[msg("allowed_multiple_of", n=per_node)])
    return replace(system, zone_gpus=fabric.zone_gpus, oversubscription=fabric.oversubscription)


def _hosts(hw: Any, acc: Any, origin: str) -> int:
    """GPUs per host: hardware.per_node, else the accelerator's catalog host size (GB200 NVL72 tray: 4).
    A job spanning hosts uses whole hosts (any number of them, not whole NVLink domains)."""
    if hw.per_node:
        check_per_node(acc, int(hw.per_node), f"{origin}: hardware.per_node")
    per_node = int(hw.per_node or getattr(acc, "gpus_per_host", 8))
    if hw.count > per_node and hw.count % per_node:
        raise SpecError(f"{origin}: hardware.count",
                        msg("job_whole_hosts" if hw.per_node else "job_whole_hosts_catalog", count=hw.count,
                            per_node=per_node, accelerator=acc.id), value=hw.count,
                        allowed=[msg("allowed_multiple_of", n=per_node)])
    return per_node


def scaleup_domains(acc: Any, system: Any) -> dict[str, int]:
    """{scaleup_domains, scaleup_domain_gpus} where one scale-up domain spans several hosts (an NVL72 rack of 18
    trays: a buyer counts racks there, not trays); {} where a domain is one host. The domains are those the job is
    placed in (`domain_shares`), the racks its plan buys."""
    domain, per_node, gpus = int(getattr(acc, "scaleup_domain", 0) or 0), system.gpus_per_node, system.gpus
    if domain <= per_node or gpus <= per_node or not multi_host_domain(acc):
        return {}
    return {"scaleup_domains": len(domain_shares(domain_job_gpus(acc, per_node), per_node, gpus)),
            "scaleup_domain_gpus": domain}


def domain_job_gpus(acc: Any, per_node: int) -> int:
    """The job's GPUs one scale-up domain holds: the domain, but where the domain spans hosts and the job uses fewer
    GPUs of each than the host has, the domain's hosts x per_node. A tray is the host, placed and bought whole: a
    GB200 NVL72 rack is 18 compute trays of 4 GPUs (NVIDIA GB200 NVL72 product page), so a job of 2 GPUs a tray holds
    36 GPUs a rack, not 72 (known-gaps 43 (r))."""
    domain, host = int(getattr(acc, "scaleup_domain", 0) or 0), int(getattr(acc, "gpus_per_host", 0) or 0)
    if per_node >= host or host <= 0:
        return domain
    if domain <= host:  # a domain inside one board (HGX / UBB): the job's GPUs of that host, at most the domain
        return min(domain, per_node)
    return domain // host * per_node


def multi_host_domain(acc: Any) -> bool:
    """Whether one scale-up domain spans several hosts (an NVL72 rack's 18 trays), not one board's GPUs (HGX / UBB
    of 8, an NVLink bridge of 2): only then do racks, trays and domain placement apply."""
    return int(getattr(acc, "scaleup_domain", 0) or 0) > int(getattr(acc, "gpus_per_host", 0) or 0)


def _placement_notes(acc: Any, system: Any, per_node: int) -> list[str]:
    """How a job larger than one multi-host scale-up domain is placed in domains (domain_shares), in the words a buyer
    needs: how many racks, what each holds, and why where it is not the fewest full racks."""
    domain, gpus, held = int(acc.scaleup_domain or 0), system.gpus, domain_job_gpus(acc, per_node)
    if domain <= per_node or system.nodes <= 1 or not multi_host_domain(acc):
        return []
    partial = [msg("note_nvl_partial_hosts", accelerator=acc.id, per_node=per_node, host=acc.gpus_per_host,
                   hosts=domain // acc.gpus_per_host, held=held, domain=domain)] if held < domain else []
    if gpus <= held:
        return partial
    shares = domain_shares(held, per_node, gpus)
    fewest, placed = -(-gpus // held), min(shares)
    said = dict(accelerator=acc.id, gpus=gpus, placed=placed, domain=domain, domains=len(shares), per_node=per_node)
    if len(set(shares)) > 1:
        even = max(d for d in range(per_node, held + 1, per_node) if gpus % d == 0)
        tile = math.gcd(*shares)
        return [*partial, msg("note_nvl_domains_packed", **said, shares=" + ".join(str(s) for s in shares),
                              tile=tile, even=even, even_domains=gpus // even)]
    if len(shares) > fewest:
        return [*partial, msg("note_nvl_domains_spare", **said, spare=(held - placed) // per_node, fewest=fewest)]
    if placed == held:
        return [*partial, msg("note_nvl_domains_full", **said)]
    return [*partial, msg("note_nvl_domains", **said, spare=(held - placed) // per_node)]


def module_part(acc: Any) -> bool:
    """A module on a baseboard (SXM, OAM, a superchip board), sold inside its server, not a PCIe card a buyer puts
    in any box: the catalog's form factor says which (accelerators.yaml form_factor: 'PCIe ...' for the cards)."""
    return not str(getattr(acc, "form_factor", "") or "").strip().lower().startswith("pcie")


def server_ram_per_node(acc: Any, server: Any, per_node: int) -> float | None:
    """The RAM a node of `server` has: a rack-scale NVLink record (NVL72: trays of 4, Accelerator.rack_nvlink) shared
    out per tray (buildout.node.server_share); a PCIe card in part of a bigger box none of it, as the plan prices the card without
    that server (a workstation sized from the job: buildout.bom_lines.server_lines); None where the server states
    none."""
    if server is None or not server.ram_gib:
        return None
    if server.gpus > per_node:
        if acc.rack_nvlink:
            return float(server.ram_gib) * per_node / server.gpus
        if not module_part(acc):
            return None
    return float(server.ram_gib)


def spans_scaleout(acc: Any, gpus: int, per_node: int) -> bool:
    """True when a job of `gpus` needs a scale-out (compute) network: it spans hosts and does not fit one
    scale-up domain. The hosts of a rack-scale system (GB200 / GB300 NVL72: 18 trays of 4 in one 72-GPU NVLink
    domain, NVIDIA GB200 NVL72 product page) reach each other over NVLink, so a job of up to one domain crosses
    no NIC but for storage and management."""
    return gpus > max(per_node, domain_job_gpus(acc, per_node))


# Hosts of a rack-scale domain a large job may leave idle in each domain it takes: NVIDIA places jobs of 128 GPUs
# or more on GB200 NVL72 in Slurm segments of 16 of a rack's 18 trays (NVIDIA Technical Blog, "Unlock Exascale
# Performance on NVIDIA GB200 NVL72 with Slurm Topology-Aware Job Scheduling", 2025, read 2026-12-04), as its MLPerf
# runs do (64 GPUs a rack: 512 GB200 in 8 racks)
SPARE_HOSTS_PER_DOMAIN = 2


def domain_shares(domain: int, per_host: int, gpus: int) -> tuple[int, ...]:
    """The job's GPUs in each scale-up domain it takes (one entry a domain: an NVL72 rack), the placement the estimate
    times and the plan buys: a partial rack is powered and cabled whole, and a TP / EP group never straddles racks
    (DP / PP cross them).

    Each domain holds the same whole number of hosts, the largest share that divides the job (128 GB200 -> 64 + 64,
    256 -> 4 x 64, 144 -> 72 + 72, 576 -> 8 x 72, 2,496 -> 39 x 64), so every power-of-two group the share holds
    tiles it. Where that even share needs more domains than the fewest that hold the job and leaves more than
    SPARE_HOSTS_PER_DOMAIN hosts of each idle (200 GB200: 5 racks of 40 against 3), the job fills the fewest domains
    instead, in whole tiles of the largest power-of-two number of hosts that divides it and still fits them (200:
    25 tiles of 8 GPUs over 3 racks, 72 + 64 + 64). Domains no larger than a host, and jobs inside one domain, are one
    share of `domain` (the host's) or of `gpus`."""
    if domain <= per_host:
        return (domain,) * max(1, -(-gpus // max(domain, 1)))
    if gpus <= domain:
        return (max(gpus, 1),)
    even = max(d for d in range(per_host, domain + 1, per_host) if gpus % d == 0 or d == per_host)
    fewest = -(-gpus // domain)
    if gpus // even == fewest or even >= domain - SPARE_HOSTS_PER_DOMAIN * per_host:
        return (even,) * (gpus // even)
    tile = per_host
    while gpus % (tile * 2) == 0 and fewest * (domain // (tile * 2)) * tile * 2 >= gpus:
        tile *= 2
    tiles = gpus // tile
    return tuple(tile * (tiles // fewest + (i < tiles % fewest)) for i in range(fewest))


def placed_domain_gpus(acc: Any, per_host: int, gpus: int) -> int:
    """GPUs of the whole scale-up domains the job is placed in (`domain_shares` of `domain_job_gpus`; an NVL72 rack is
    bought, powered and, where rented by the rack, rented whole, every tray of it): 128 GB200 -> 2 racks = 144, 2,496
    -> 39 racks = 2,808, 64 -> 72, 72 at 2 a tray -> 2 racks = 144; the job's own GPUs where a domain is one host."""
    domain = int(getattr(acc, "scaleup_domain", 0) or 0)
    if domain <= per_host:
        return gpus
    return len(domain_shares(domain_job_gpus(acc, per_host), per_host, gpus)) * domain


def job_domain_gpus(domain: int, per_host: int, gpus: int) -> int:
    """GPUs of the job in each scale-up domain as the estimate times it (System.scaleup_domain): the smallest share
    of `domain_shares` (its groups' fewest members in one domain)."""
    if domain <= per_host:
        return domain
    return min(domain_shares(domain, per_host, gpus))


def _check_constraints(job: Job, acc: Any, listed: dict[str, set[str] | None], origin: str,
                       per_node: int) -> list[str]:
    """Hard constraints the chosen hardware breaks are errors; market rules are notes (they change often).

    `listed` holds the catalog ids of constraints.exclude / constraints.include (None: no include list)."""
    hw, c = job.hardware, job.constraints
    assert hw is not None
    where = f"{origin}: hardware.accelerator"
    if acc.id in (listed["exclude"] or set()):
        raise SpecError(where, msg("job_accelerator_excluded"), value=hw.accelerator)
    include = listed["include"]
    if include is not None and acc.id not in include:
        raise SpecError(where, msg("job_accelerator_not_included"), value=hw.accelerator,
                        allowed=sorted(include))
    nodes = -(-hw.count // per_node)
    if c.max_nodes is not None and nodes > c.max_nodes:
        raise SpecError(f"{origin}: hardware.count",
                        msg("job_too_many_nodes", count=hw.count, per_node=per_node, nodes=nodes,
                            max_nodes=c.max_nodes), value=hw.count)
    if c.max_gpus is not None and hw.count > c.max_gpus:
        raise SpecError(f"{origin}: hardware.count", msg("job_too_many_gpus", max_gpus=c.max_gpus),
                        value=hw.count)
    notes = []
    if c.market in ("china", "china-domestic") and acc.china_export_restricted:
        notes.append(msg("note_export_restricted", accelerator=acc.id))
    if c.market == "china-domestic" and not acc.domestic_china:
        notes.append(msg("note_not_domestic", accelerator=acc.id))
    if acc.market_note and c.market != "global":
        notes.append(msg("note_market", accelerator=acc.id, note=market_note(acc.market_note)))
    return notes


def _resolve_network(spec: str | NetworkSpec | None, multi_node: bool, catalog: Catalog, origin: str,
                     per_node: int = 8, gpus: int = 0) -> NetworkView | None:
    if spec is None:
        if multi_node:
            raise SpecError(f"{origin}: hardware.network",
                            msg("job_needs_network", gpus=gpus, per_node=per_node, nodes=-(-gpus // max(per_node, 1))),
                            allowed=sorted(catalog.networks))
        return None
    if isinstance(spec, NetworkSpec):
        return custom_network_view(spec, catalog)
    try:
        net = catalog.network(spec)
    except SpecError as err:
        raise _prefixed(err, f"{origin}: hardware.network") from None
    return catalog_network_view(net, per_node)


def catalog_network_view(net: Any, per_node: int) -> NetworkView:
    """A catalog network on nodes of `per_node` GPUs: the catalog default is per 8-GPU HGX/DGX node (one NIC per
    GPU); other host sizes keep the NICs per GPU (GB200 NVL72 compute tray: 4 ConnectX-7 for its 4 GPUs, DGX
    GB200 user guide)."""
    return network_view(net, max(1, round(net.nics_per_node_default * per_node / 8)))


def bridge_smaller_than_host(acc: Accelerator, gpus_per_node: int) -> bool:
    """An NVLink bridge joins 2-4 cards; a ring over more GPUs of the host crosses PCIe, its slowest hop."""
    return acc.scaleup_tech == "nvlink-bridge" and gpus_per_node > (acc.scaleup_domain or 0)


def _bridge_fields(acc: Accelerator, bridge_gb_s: float) -> dict[str, Any]:
    """System's bridge fields where the cards' NVLink bridges join fewer GPUs than the host (`bridge_gb_s` > 0): the
    catalog's scaleup_domain, its scale-up rate and its mesh links; none elsewhere (the default: no bridge)."""
    if bridge_gb_s <= 0:
        return {}
    return {"bridge_gpus": int(acc.scaleup_domain or 0), "bridge_gb_s": float(bridge_gb_s),
            "bridge_mesh_links": int(getattr(acc, "scaleup_mesh_links", None) or 0)}


def build_system(acc: Accelerator, gpus: int, gpus_per_node: int, network: NetworkView | None) -> System:
    """The estimators' view of `gpus` accelerators of one catalog type."""
    scaleup = acc.scaleup_gb_s_per_dir or 0.0
    fabric = bool(scaleup) and acc.scaleup_tech not in (None, "pcie", "none")
    bridged_only = bridge_smaller_than_host(acc, gpus_per_node)
    # Without a fabric, GPU-to-GPU traffic is PCIe peer-to-peer, or host-staged copies where the driver
    # disables peer-to-peer (catalog host_staged_gb_s_per_dir: GeForce).
    host_link = acc.host_staged_gb_s_per_dir or acc.pcie_gb_s
    intra = scaleup if fabric and not bridged_only else host_link
    inter = network.node_gb_s / gpus_per_node if network else 0.0
    l2 = acc.l2_cache
    return System(
        accelerator=acc.id,
        gpus=gpus,
        gpus_per_node=gpus_per_node,
        memory_gib=acc.memory_gib,
        peak_tflops={k: v for k, v in acc.tflops_dense.items() if v},
        hbm_gb_s=acc.memory_bw_tb_s * 1000.0,
        intra_node_gb_s=intra,
        scaleup_domain=job_domain_gpus(domain_job_gpus(acc, gpus_per_node) or gpus_per_node, gpus_per_node, gpus),
        nvls=bool(acc.nvls),
        scaleup_mesh_links=int(getattr(acc, "scaleup_mesh_links", None) or 0) if fabric and not bridged_only else 0,
        **_bridge_fields(acc, scaleup if fabric and bridged_only else 0.0),
        inter_node_gb_s=inter,
        inter_node_alltoall_share=network.alltoall_share if network else 1.0,
        inter_node_latency_s=(network.latency_us if network else _network_fallback(
            "inter_node_latency_us_fallback")) * 1e-6,
        tdp_w=acc.tdp_w,
        pcie_gb_s=acc.host_link_gb_s_per_dir,  # the host link: NVLink-C2C where there is one
        power_limit_w=float(getattr(acc, "power_limit_w", None) or 0.0),
        vendor=str(getattr(acc, "vendor", "") or ""),
        l2_read_gb_s=(l2.read_tb_s or 0.0) * 1000.0 if l2 else 0.0,
        l2_resident_mib=(l2.resident_mib or 0.0) if l2 else 0.0,
        **_occupancy_fields(getattr(acc, "sm_occupancy", None)),
    )


def _occupancy_fields(occ: Any) -> dict[str, Any]:
    """System's SM fields from the catalog's sm_occupancy (none where the part has no entry)."""
    if occ is None:
        return {}
    return {"sms": occ.sms, "threads_per_sm": occ.threads_per_sm, "registers_per_sm": occ.registers_per_sm,
            "dram_latency_s": occ.dram_latency_ns * 1e-9, "l2_latency_s": (occ.l2_latency_ns or 0.0) * 1e-9}


def _device_map_layout(strategy: Strategy, bare: Scenario, gpus: int, per_node: int, origin: str) -> Strategy:
    """device_map auto (estimate.device_map): the GPUs of one host in a chain, accelerate's balanced split of the
    layers over them, one micro-batch through the chain at a time; the stack is transformers' (framework auto
    read as hf)."""
    if gpus > per_node:
        raise SpecError(f"{origin}: strategy.device_map", msg("job_device_map_one_host", gpus=gpus, per_node=per_node,
                                                              nodes=-(-gpus // per_node)),
                        value=gpus, allowed=[msg("allowed_at_most", n=per_node)])
    tr = bare.training
    counts = balanced_split(bare.model, gpus, *weight_bytes_for(tr.method, tr.precision))
    chained = len(counts) > 1
    return replace(strategy, tp=1, pp=len(counts), dp=1, cp=1, framework="hf",
                   local_batch=strategy.micro_batch if chained else None,
                   pp_stage_layers=counts if chained else None)


def _resolve_strategy(job: Job, gpus: int, origin: str) -> Strategy:
    s = job.strategy
    assert s is not None
    fixed = s.tp * s.pp * s.cp
    if s.dp is None:
        if gpus % fixed:
            raise StrategyError("degrees-multiply-to-gpus",
                                msg("rule_fixed_degrees_divide_gpus", origin=origin, fixed=fixed, gpus=gpus))
        dp = gpus // fixed
    else:
        dp = s.dp
        if fixed * dp != gpus:
            raise StrategyError("degrees-multiply-to-gpus",
                                msg("rule_degrees_multiply_to_gpus", origin=origin, tp=s.tp, pp=s.pp, dp=dp,
                                    cp=s.cp, product=fixed * dp, gpus=gpus))
    zero = 3 if s.fsdp != "none" else s.zero
    shard_group = s.shard_group or 0
    return Strategy(
        tp=s.tp, pp=s.pp, vpp=s.vpp, dp=dp, cp=s.cp, ep=s.ep, etp=s.etp, zero=zero, shard_group=shard_group,
        micro_batch=s.micro_batch, local_batch=s.local_batch, recompute=s.recompute, recompute_modules=s.recompute_modules, offload=s.offload,
        recompute_method=s.recompute_method, recompute_num_layers=s.recompute_num_layers,
        sequence_parallel=s.sequence_parallel and s.tp > 1, distributed_optimizer=s.distributed_optimizer,
        pipeline_embedding_layer=s.pipeline_embedding_layer, pipeline_loss_layer=s.pipeline_loss_layer,
        pp_first_stage_layers=s.pp_first_stage_layers, pp_last_stage_layers=s.pp_last_stage_layers,
        pp_stage_layers=s.pp_stage_layers,
        torch_compile=s.torch_compile, compile_loss=s.compile_loss, sac_saves_attention=s.sac_saves_attention, tf32=s.tf32,
        loss_impl=s.loss_impl, tp_comm_overlap=s.tp_comm_overlap,
        fp8_param_allgather=s.fp8_param_allgather, fp8_transpose_cache=s.fp8_transpose_cache,
        grad_reduce_in_fp32=s.grad_reduce_in_fp32,
        grad_reduce_overlap=s.grad_reduce_overlap, zero1_grad_allreduce=s.zero1_grad_allreduce,
        megatron_fsdp_sharding=s.megatron_fsdp_sharding,
        grad_bucket_params=s.grad_bucket_params,
        gradient_accumulation_fusion=s.gradient_accumulation_fusion,
        attention_kernel=s.attention_kernel, norm_kernel=s.norm_kernel, cp_comm_type=s.cp_comm_type,
        repeat_kv=s.repeat_kv, moe_tp_token_split=s.moe_tp_token_split, pp_fsdp_once_per_step=s.pp_fsdp_once_per_step,
        loss_parallel=s.loss_parallel, fsdp_no_sync=s.fsdp_no_sync, fsdp_reshard=s.fsdp_reshard, embedding_parallel=s.embedding_parallel, activation_kernel=s.activation_kernel, rope_kernel=s.rope_kernel, eager_attention=s.eager_attention, split_projections=s.split_projections,
        fp8_attention=s.fp8_attention,
        fp8_activation_store=s.fp8_activation_store, fp8_lm_head=s.fp8_lm_head,
        defer_embedding_wgrad=s.defer_embedding_wgrad, wgrad_deferral_limit=s.wgrad_deferral_limit, cuda_graphs=s.cuda_graphs, cudnn_release=s.cudnn_release,
        megatron_core_version=s.megatron_core_version, torch_version=s.torch_version,
        aiter_mla_bwd_asm=s.aiter_mla_bwd_asm,
        nf4_dequant_dtype=s.nf4_dequant_dtype, nf4_decode=s.nf4_decode, nf4_double_quant=s.nf4_double_quant,
        nf4_saves_input=s.nf4_saves_input, nf4_lm_head=s.nf4_lm_head,
        bnb_compute_from_input=s.bnb_compute_from_input,
        lm_head_chunk=s.lm_head_chunk,
        moe_dispatcher=s.moe_dispatcher, moe_a2a_overlap=s.moe_a2a_overlap,
        delay_wgrad_compute=s.delay_wgrad_compute, cuda_device_max_connections=s.cuda_device_max_connections,
        moe_fused_grouped_mlp=s.moe_fused_grouped_mlp, moe_torch_grouped_mm=s.moe_torch_grouped_mm,
        moe_turbo_grouped_gemm=s.moe_turbo_grouped_gemm,
        moe_eager_glue=s.moe_eager_glue,
        moe_sync_free=s.moe_sync_free, moe_pad_to_capacity=s.moe_pad_to_capacity, moe_permute_fusion=s.moe_permute_fusion, moe_router_fusion=s.moe_router_fusion,
        moe_aux_loss=s.moe_aux_loss,
        moe_grouped_gemm=s.moe_grouped_gemm,
        tp_only_amax_red=s.tp_only_amax_red,
        experts_implementation=s.experts_implementation,
        expert_weight_copies=s.expert_weight_copies,
        fused_qkv_rope=s.fused_qkv_rope, flash_qkv_pack=s.flash_qkv_pack, te_op_fuser=s.te_op_fuser,
        activation_offload=s.activation_offload,
        optimizer_in_backward=s.optimizer_in_backward, optimizer_impl=s.optimizer_impl, bnb_optimizer_block=s.bnb_optimizer_block,
        allocator_expandable_segments=s.allocator_expandable_segments,
        ddp_impl=s.ddp_impl,
        checkpoint_impl=s.checkpoint_impl,
        zero3_expert_fetch=s.zero3_expert_fetch, zero3_bucket_sizes=s.zero3_bucket_sizes, zero_init=s.zero_init, fsdp=s.fsdp, fsdp_version=s.fsdp_version,
        optimizer_precision=s.optimizer_precision, kbit_upcast=s.kbit_upcast,
        nf4_quantize_unchunked=s.nf4_quantize_unchunked,
        frozen_base_dtype=s.frozen_base_dtype, autocast=s.autocast, live_at_rerun=s.live_at_rerun,
        returns_kv_cache=s.returns_kv_cache, moe_router_output_held=s.moe_router_output_held,
        shard_embedding_head_separately=s.shard_embedding_head_separately, device_map=s.device_map,
        framework=s.framework,
    )


__all__ = ["NetworkView", "Scenario", "TrainsizerError", "build_system", "check_per_node", "resolve_job"]
