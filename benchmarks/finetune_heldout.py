"""Held-out check on fine-tuning time and memory on the stacks people fine-tune with: torchtune (README tables,
RTX 4090 / RTX A6000 / A100), Hugging Face + PEFT + FlashAttention-2 (Unsloth's longest-context table, the
LLaMA-Factory wiki), and Megatron-Bridge 26.06 SFT / LoRA (GB300, GB200, H100). No constant is fitted on them.
The 26.06 tables are every SFT / LoRA row Megatron-Bridge's docs/performance-summary.md has published (checked
2026-12-02): its 25.09 to 26.02.01 pages, 26.04 (74695a06d), 26.04.01 (21d102f5e), 26.06.01 (381d0b825) and
26.08 (4ab94dfad) list pre-training only, the later 26.06 edits (c270efc50, B300 8f341b04f) left both tables as
they were, and #5024 (9f74f2876, 2026-07-23) took fine-tuning off the page.

Rows: benchmarks/data/finetune_heldout.csv (source URL and locator, date, confidence, and in `assumed` every
cell the source does not state). Each row goes through the public job path (resolve_job) with the row's
framework style, method, LoRA rank and targets, optimizer, recompute, loss implementation, compile, activation
offloading, optimizer-in-backward, CPU offload, (QLoRA) whether PEFT's fp32 upcast applies and (`wgrad_deferral_limit`)
Megatron-Core's deferred LM-head weight gradients where the run's config sets them. Three kinds of figure:
- tokens/s: the row's total (`tokens_scope` total) or per GPU; the estimate is tokens per step / step time,
  real tokens (padding not counted) where the row runs unpacked samples (packing false with avg_tokens: each
  micro-batch padded to its longest sample, lengths lognormal with the row's length_sigma; rows without
  avg_tokens run every sample at seq_len) or torchtune's next-fit packs (padding after the last sample that
  fits); counted as the source counts them (`tokens_counted`: every position, or labelled tokens only);
- peak memory: `GiB-active` rows (torch.cuda peak active bytes) are compared with the estimate's allocated bytes
  (total less CUDA context, NCCL buffers and allocator fragmentation); `GiB-allocator` rows (a caching-allocator
  statistic of unstated kind: torchtune's training.get_memory_stats reports active, allocated and reserved, all
  from torch.cuda.memory_stats, none holding the CUDA context or the buffers NCCL allocates itself) with the total
  less the CUDA context and NCCL buffers, fragmentation kept (reserved, the largest of the three, holds it);
  `GB-allocator` rows the same in 1e9 bytes (torchtune's utils.get_memory_stats before 2024-09 divides by 1e9); rows
  whose kind is unstated with the total; `GB` rows are converted to GiB; `GiB-reserved` rows
  (torch.cuda.max_memory_reserved, the source says so) as GiB-allocator with the caching allocator's growth under
  varying micro-batch lengths added (MemoryEstimate.reserved_peak_bytes; estimate.allocator), the run's samples an
  epoch from `epoch_samples` and its allocator setting from `expandable_segments` where the row states them;
  `GB-reserved` rows the same in 1e9 bytes (torchtune's utils.memory_stats_log before 2024-09); `GiB-nvidia-smi` rows
  (nvidia-smi's memory.used: the device's whole use, perf_heldout66) with that reserved peak, nothing left out;
- longest sequence that fits (Unsloth's table: a card of N GiB): `fit.max_seq_len` at granularity 1.
A row is refused when the job path rejects it or the memory estimate says a configuration that ran does not fit.

Run: python benchmarks/finetune_heldout.py
"""

from __future__ import annotations

import csv
import functools
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from harness import (
    Case,
    kept_rows,
    mape,
    model_data,
    num,
    print_case_rows,
    refusals_said,
    source_label,
    whole,
)
from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError
from trainsizer.estimate import sample_lengths
from trainsizer.estimate.checkpoint_saves import checkpoint_saves_s
from trainsizer.estimate.evaluation import evaluation_s
from trainsizer.estimate.fit import max_seq_len
from trainsizer.estimate.memory import CACHED_ONLY_ITEMS, GIB, estimate_memory
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.scenario import resolve_job

DATA = Path(__file__).resolve().parent / "data" / "finetune_heldout.csv"
# settings a row's source fixes that finetune_heldout.csv has no column for: its columns are the prefix every fine-tune
# CSV's test checks (tests/estimate/test_perf_heldout35.py and the others), so a column there would be one in each of
# them at once. One row per id, each setting a column, `source` saying where it comes from (rows() merges them)
STATED = DATA.parent / "finetune_heldout_stated.csv"
# Llama 3.2 3B and 1B (no presets): meta-llama/Llama-3.2-3B and -1B config.json (tied embeddings; 1B: head_dim 64)
MODELS = {"llama-3.2-3b": {"layers": 28, "hidden": 3072, "ffn": 8192, "heads": 24, "kv_heads": 8,
                           "vocab": 128256, "tied_embeddings": True, "mlp": "swiglu", "norm": "rmsnorm",
                           "position": "rope"},
          "llama-3.2-1b": {"layers": 16, "hidden": 2048, "ffn": 8192, "heads": 32, "kv_heads": 8,
                           "vocab": 128256, "tied_embeddings": True, "mlp": "swiglu", "norm": "rmsnorm",
                           "position": "rope"}}
NETWORK = {"gb300": "ib-xdr800"}
NOT_ALLOCATED = ("cuda_context", "nccl_buffers", *CACHED_ONLY_ITEMS)
OUTSIDE_ALLOCATOR = ("cuda_context", "nccl_buffers")  # torch.cuda.memory_stats counts neither


def _bool(x: str) -> bool:
    return x.strip().lower() == "true"


def job(r: dict[str, str], models: dict | None = None) -> dict:
    """The row as a job file would say it (`models`: inline architectures by name beside MODELS, e.g. a benchmark's
    model file)."""
    seq = whole(r["seq_len"]) or 2048
    out: dict = {
        "model": (MODELS | (models or {})).get(r["model"], r["model"]), "method": r["method"], "seq_len": seq,
        "data": {"samples": 1e6, "avg_tokens": num(r["avg_tokens"], seq)}, "packing": _bool(r["packing"]),
        "global_batch": {"sequences": whole(r["global_batch_seqs"])}, "precision": r["precision"],
        "optimizer": r["optimizer"],
        "hardware": {"accelerator": r["gpu"] or "a100-sxm-80gb", "count": whole(r["gpu_count"])},
        "strategy": {"tp": whole(r["tp"], 1), "pp": whole(r["pp"], 1), "vpp": whole(r["vpp"], 1),
                     "zero": whole(r["zero"]), "micro_batch": whole(r["micro_batch"], 1),
                     "recompute": r["recompute"], "torch_compile": _bool(r["torch_compile"]),
                     "loss_impl": r["loss_impl"], "activation_offload": _bool(r["activation_offload"]),
                     "optimizer_in_backward": _bool(r["optimizer_in_backward"]), "offload": r["offload"],
                     "framework": r["stack"]},
    }
    if r.get("eval_samples") or r.get("save_every_steps"):  # evaluation / saves inside the measured runtime
        out |= _evaluation(r)  # (perf_heldout47's HF Trainer rows)
    elif r.get("epoch_samples"):  # the samples of the run's epoch, where its source says (the caching allocator's
        out["data"]["samples"] = num(r["epoch_samples"])  # record rows count them)
    if r.get("zero3_bucket_sizes"):  # deepspeed: a ds_config with no bucket keys, DeepSpeed's defaults (perf_heldout56)
        out["strategy"]["zero3_bucket_sizes"] = r["zero3_bucket_sizes"]
    if r.get("zero_init"):  # false: the model built before the DeepSpeed config, outside zero.Init (perf_heldout56 / 58)
        out["strategy"]["zero_init"] = _bool(r["zero_init"])
    if r.get("nf4_quantize_unchunked"):  # torchtune 0.1 QLoRA: torchao 0.1's to_nf4 at model init (estimate.nf4_init)
        out["strategy"]["nf4_quantize_unchunked"] = _bool(r["nf4_quantize_unchunked"])
    if r.get("expandable_segments"):  # PYTORCH_CUDA_ALLOC_CONF as the row's release sets it (estimate.allocator)
        out["strategy"]["allocator_expandable_segments"] = _bool(r["expandable_segments"])
    if r["length_sigma"]:  # unpacked samples' spread (lognormal; estimate.sample_lengths)
        out["data"]["length_sigma"] = num(r["length_sigma"])
    if r["max_tokens"]:
        out["data"]["max_tokens"] = num(r["max_tokens"])
    if _bool(r.get("group_by_length") or "false"):  # HF group_by_length: LengthGroupedSampler (sample_lengths)
        out["data"]["group_by_length"] = True
    if r["optimizer_impl"]:
        out["strategy"]["optimizer_impl"] = r["optimizer_impl"]
    if r.get("bnb_optimizer_block"):  # bitsandbytes' 8-bit kernel before 0.44: 2,048-element blocks
        out["strategy"]["bnb_optimizer_block"] = int(r["bnb_optimizer_block"])
    if r.get("optimizer_precision"):  # e.g. the HF Trainer's AdamW on a bf16 model: bf16 moments, no master
        out["strategy"]["optimizer_precision"] = r["optimizer_precision"]
    if r.get("frozen_base_dtype"):  # LoRA on a base loaded in fp32 (perf_heldout43's PEFT examples/sft rows)
        out["strategy"]["frozen_base_dtype"] = r["frozen_base_dtype"]
    if r["kbit_upcast"]:
        out["strategy"]["kbit_upcast"] = _bool(r["kbit_upcast"])
    if r["shard_embedding_head_separately"]:  # torchtune custom_sharded_layers ['tok_embeddings', 'output']
        out["strategy"]["shard_embedding_head_separately"] = _bool(r["shard_embedding_head_separately"])
    if r["fp8_recipe"]:
        out["fp8_recipe"] = r["fp8_recipe"]
    if r.get("attention_kernel"):  # the kernel that ran, where a row's source says (perf_device_hf: SDPA's cuDNN)
        out["strategy"]["attention_kernel"] = r["attention_kernel"]
    for key in ("norm_kernel", "activation_kernel", "rope_kernel"):  # e.g. Liger's RMSNorm / SwiGLU / RoPE (perf_heldout52)
        if r.get(key):
            out["strategy"][key] = r[key]
    if r.get("nf4_dequant_dtype"):  # fp16: bitsandbytes < 0.43 or Lightning's BitsandbytesPrecision (QLoRA rows)
        out["strategy"]["nf4_dequant_dtype"] = r["nf4_dequant_dtype"]
    if r.get("nf4_decode"):  # tree: bitsandbytes before 0.48.0 decodes NF4 through a branching tree (QLoRA rows)
        out["strategy"]["nf4_decode"] = r["nf4_decode"]
    # bitsandbytes < 0.43.2; Lightning's 4-bit LM head; bitsandbytes 0.41-0.46's compute dtype from the input (QLoRA rows)
    for key in ("nf4_saves_input", "nf4_lm_head", "bnb_compute_from_input", "nf4_double_quant"):
        if r.get(key):
            out["strategy"][key] = _bool(r[key])
    if r.get("lm_head_chunk"):  # positions per call of a 4-bit LM head (LitGPT's lm_head_chunk_size)
        out["strategy"]["lm_head_chunk"] = int(r["lm_head_chunk"])
    if r.get("fsdp"):  # FSDP over the row's GPUs (perf_heldout40's FSDP-QLoRA rows: full, or none for NO_SHARD)
        out["strategy"]["fsdp"] = r["fsdp"]
        if r["fsdp"] != "none" and not whole(r["zero"]):  # FSDP is the sharding: no ZeRO stage beside it
            del out["strategy"]["zero"]
    if r.get("fsdp_version"):  # which torch FSDP (accelerate's fsdp_version: perf_heldout43 / 44's FSDP2 rows)
        out["strategy"]["fsdp_version"] = int(r["fsdp_version"])
    if r.get("fsdp_no_sync"):  # false: accelerate's sync_each_batch (perf_heldout66's Mixtral row, known-gaps 250 (a))
        out["strategy"]["fsdp_no_sync"] = _bool(r["fsdp_no_sync"])
    if r.get("checkpoint_impl"):  # how the row's code checkpoints a layer (perf_heldout40: checkpoint_wrapper REENTRANT)
        out["strategy"]["checkpoint_impl"] = r["checkpoint_impl"]
    if r.get("experts_implementation"):  # the release's expert loop (perf_heldout43's gpt-oss rows: transformers 4.55)
        out["strategy"]["experts_implementation"] = r["experts_implementation"]
    if r.get("expert_weight_copies"):  # ... and its per-expert weight copies (GptOssExperts at 4.55 / 4.56)
        out["strategy"]["expert_weight_copies"] = _bool(r["expert_weight_copies"])
    if r.get("device_map"):  # transformers' device_map over the row's GPUs (perf_heldout35's two-A100 rows)
        out["strategy"]["device_map"] = r["device_map"]
    if r.get("flash_attention"):  # false: the attention core materialised (perf_heldout35's use_flash_attn false row)
        out["flash_attention"] = _bool(r["flash_attention"])
    if r.get("explicit_attention_mask"):  # SDPA handed the padded batch's mask (perf_heldout50's gpu-test rows)
        out["explicit_attention_mask"] = _bool(r["explicit_attention_mask"])
    if r.get("live_at_rerun"):  # what the loop holds at a layer's re-run, where its code says (perf_heldout40's fsdp_qlora)
        out["strategy"]["live_at_rerun"] = r["live_at_rerun"]
    if r.get("autocast"):  # false: a loop with no torch.autocast over its 16-bit model (perf_heldout50's gpu-test rows)
        out["strategy"]["autocast"] = _bool(r["autocast"])
    if r.get("eager_attention"):  # that core's element-wise chain, where the row's code says (LitGPT's Gemma 2 rows)
        out["strategy"]["eager_attention"] = r["eager_attention"]
    if r.get("fp8_param_allgather"):  # FSDP2 float8 all-gathers (perf_heldout43's torchao row: enable_fsdp_float8_all_gather)
        out["strategy"]["fp8_param_allgather"] = _bool(r["fp8_param_allgather"])
    if r.get("tp_comm_overlap"):  # where a row's source states it (perf_heldout33's dgxc NeMo 24.12 rows)
        out["strategy"]["tp_comm_overlap"] = _bool(r["tp_comm_overlap"])
    if r.get("wgrad_deferral_limit"):
        # Megatron-Core defer_embedding_wgrad_compute, where the run's config sets it (known-gaps 106 (c)): the 70B
        # full-SFT configs of Megatron-Bridge's scripts/performance/configs/llama/llama3_llm_finetune.py
        # (llama3_70b_sft_config_gb300 / _gb200 / _h100, CommOverlapConfig(defer_embedding_wgrad_compute=True,
        # wgrad_deferral_limit=22) at 63b08b397, the 26.06 rows; their LoRA configs set none) and NeMo 2's
        # llama3_70b.finetune_performance_optimizations (full SFT only, MegatronCommOverlapCallback at 25ec4e98,
        # perf_heldout33's dgxc v25.04 rows)
        out["strategy"] |= {"defer_embedding_wgrad": True, "wgrad_deferral_limit": int(r["wgrad_deferral_limit"])}
    if whole(r["gpu_count"]) > 1:  # the row's fabric where it names one (perf_heldout43's EFA row), else by part
        out["hardware"]["network"] = r.get("network") or NETWORK.get(r["gpu"], "ib-ndr400")
    if r["stack"] == "megatron-core":
        # Megatron-Bridge scripts/performance (commit of the rows): llama3_llm_finetune.py
        # set_llama3_common_peft_configs sets grad_reduce_in_fp32 False and the distributed optimizer;
        # utils/precision.py's FP8-CS and MXFP8 configs set fp8_param_gather
        out["strategy"].update(distributed_optimizer=True, grad_reduce_in_fp32=False,
                               fp8_param_allgather=r["precision"] == "fp8")
    if r["method"] in ("lora", "qlora"):
        targets = r["lora_targets"].split()
        out["lora"] = {"rank": whole(r["lora_rank"]), "targets": targets}
        if r.get("lora_impl"):  # the adapter code, where a row's source names it (perf_heldout37's LitGPT releases)
            out["lora"]["impl"] = r["lora_impl"]
        if r.get("lora_dropout"):  # where the row's code sets one (perf_heldout35's ms-swift, perf_heldout37's LitGPT)
            out["lora"]["dropout"] = num(r["lora_dropout"])
    return out


def _evaluation(r: dict[str, str]) -> dict:
    """The job's data, evaluation and checkpoint saves where the row's figure is a runtime holding them: `epoch_samples`
    training samples an epoch, `max_steps` steps run (data.epochs = their share of an epoch), `eval_samples` sequences
    a pass at `eval_micro_batch` (empty: the training micro-batch), `eval_every_steps` (empty: at each epoch's end);
    `save_every_steps` (a number, or `epoch`: at each epoch's end) with `save_sharded` (every node writes its shard)."""
    epoch = num(r["epoch_samples"])
    out: dict = {"data": {"samples": epoch, "avg_tokens": num(r["avg_tokens"], whole(r["seq_len"]) or 2048),
                          "epochs": whole(r["max_steps"]) * whole(r["global_batch_seqs"]) / epoch}}
    if r.get("eval_samples"):
        ev: dict = {"samples": num(r["eval_samples"])}
        if r.get("eval_micro_batch"):
            ev["micro_batch"] = whole(r["eval_micro_batch"])
        if r.get("eval_every_steps"):
            ev["every_steps"] = whole(r["eval_every_steps"])
        out["evaluation"] = ev
    if r.get("save_every_steps"):
        every = r["save_every_steps"]
        out["checkpoint_saves"] = {"every_steps": None if every == "epoch" else whole(every),
                                   "sharded": _bool(r.get("save_sharded") or "false")}
    return out


def _scenario(r: dict[str, str], cat, models: dict | None = None, strategy_extra: dict | None = None):
    spec = job(r, models)
    if strategy_extra:  # a probe's strategy fields over the row's (None: the row as written)
        spec = dict(spec, strategy={**spec["strategy"], **strategy_extra})
    sc = resolve_job(spec, cat)
    if r["peak_mem_unit"] == "GiB-card":  # Unsloth's table: a card of that size
        sc = replace(sc, system=replace(sc.system, memory_gib=num(r["peak_mem"])))
    return sc


def _memory_gib(r: dict[str, str], est) -> tuple[float, float]:
    """(measured, predicted) GiB on the row's basis."""
    unit = r["peak_mem_unit"]
    measured = num(r["peak_mem"]) * (1e9 / GIB if unit in ("GB", "GB-allocator", "GB-reserved") else 1.0)
    # GiB-reserved: torch.cuda.max_memory_reserved, the peak with the allocator's growth (estimate.allocator); GB-reserved
    # the same in 1e9 bytes (torchtune's utils.memory_stats_log before 2024-09); GiB-nvidia-smi: the device's memory.used
    # (nvidia-smi, perf_heldout66), that reserve with the CUDA context and NCCL's buffers, nothing left out
    predicted = est.reserved_peak_bytes if unit in ("GiB-reserved", "GB-reserved", "GiB-nvidia-smi") else est.per_gpu_bytes
    if unit in ("GiB-active", "GiB-allocator", "GB-allocator", "GiB-reserved", "GB-reserved"):
        left_out = NOT_ALLOCATED if r["peak_mem_unit"] == "GiB-active" else OUTSIDE_ALLOCATOR
        predicted -= sum(est.items_bytes.get(k, 0.0) for k in left_out)
    return measured, predicted / GIB


def row_cases(r: dict[str, str], cat, models: dict | None = None, strategy_extra: dict | None = None) -> list[Case]:
    """The row's scored figures (tokens/s, peak GiB, longest sequence), or one refused case; `strategy_extra`: strategy
    fields a probe writes over the row's."""
    src = r["source"].split(" (")[0]
    out: list[Case] = []
    try:
        sc = _scenario(r, cat, models, strategy_extra)
    except TrainsizerError as e:
        return [Case(r["id"], src, "refused", 0.0, skipped=str(e).splitlines()[0][:120])]
    m, t, s, st = sc.model, sc.training, sc.system, sc.strategy
    if r["max_seq_len"]:
        fit = max_seq_len(m, t, s, st, granularity=1)
        out.append(Case(r["id"], src, "max_seq", num(r["max_seq_len"]), float(fit.value)))
        return out
    est = estimate_memory(m, t, s, st, check=False)
    if est.per_gpu_bytes > s.memory_gib * GIB:
        out.append(Case(r["id"], src, "fits", 1.0, skipped=f"predicted {est.per_gpu_bytes / GIB:.1f} GiB > "
                                                             f"{s.memory_gib:.0f} GiB: refused"))
    if r["peak_mem"] and r["peak_mem_unit"] != "GiB-card":
        measured, predicted = _memory_gib(r, est)
        out.append(Case(r["id"], src, "peak_gib", measured, predicted))
    if r["tokens_per_s"]:
        step = float(np.asarray(step_time_arrays(m, t, s, st)["step_s"]).reshape(-1)[0])
        if t.eval_passes:  # the figure's runtime holds the evaluation passes beside the steps (estimate.evaluation)
            step += evaluation_s(m, t, s, st) / sc.steps
        if t.save_count:  # and its checkpoint saves (estimate.checkpoint_saves)
            step += checkpoint_saves_s(m, t, s, st) / sc.steps
        tps = counted_tokens(r, t) / step / (s.gpus if r["tokens_scope"] == "per_gpu" else 1)
        out.append(Case(r["id"], src, "tokens_s", num(r["tokens_per_s"]), tps))
    return out


# BOS and EOS: torchtune's Llama3Tokenizer.tokenize_messages masks both always ("bos and eos are always masked";
# torchtune/models/llama3/_tokenizer.py at 30b8519 and 1814feb), so their labels are ignore_index
LABEL_MASKED_PER_SAMPLE = 2


def counted_tokens(r: dict[str, str], t) -> float:
    """Tokens per step as the row's source counts them (`tokens_counted`): empty = the estimate's real sample
    tokens (Training.tokens_per_step); `positions` = every position of the rows, padding included (torchtune's
    recipes at 30b8519 and 52d1b838: batch["tokens"].numel(); unpacked rows padded to the micro-batch's longest
    sample, sample_lengths.padded_tokens); `labelled` = positions whose label is not ignore_index (torchtune
    at 1814feb: the real tokens less each sample's masked BOS / EOS)."""
    how = r.get("tokens_counted", "")
    if how == "positions" and t.per_sample_rows:  # each micro-batch padded to its longest sample: E[max L] a row
        row = sample_lengths.padded_tokens(t.sample_mean_tokens, t.sample_sigma, t.row_cap, whole(r["micro_batch"], 1))
        return float(row) * t.global_batch_seqs * t.sequences_per_sample
    if how == "positions":
        return float(t.seq_len * t.global_batch_seqs * t.sequences_per_sample)
    if how == "labelled":
        return t.tokens_per_step * (1.0 - LABEL_MASKED_PER_SAMPLE / num(r["avg_tokens"]))
    if how:
        raise ValueError(f"{r['id']}: tokens_counted {how!r} is not one of positions, labelled or empty")
    return float(t.tokens_per_step)


@functools.cache
def overlay_catalog(overlay: str):
    """The catalog a row runs on: the shipped one with its overlay file (benchmarks/data) over it."""
    return load_catalog([DATA.parent / overlay] if overlay else [])


@dataclass(frozen=True)
class Batch:
    """A fine-tune held-out batch in this file's columns and a `refused` one (docs/known-gaps.md 249 (c)): its csv
    files, read in order; the architectures its rows name beside MODELS (`inline` by name, then each `models_yaml`
    entry's model); `overlays`: each row runs on the catalog its `overlay` column names, else on the shipped one. A
    batch module binds its module-level rows / models / job / cases to one."""

    csv_paths: tuple[Path, ...]
    models_yaml: tuple[Path, ...] = ()
    inline: Mapping[str, dict] = field(default_factory=dict)
    overlays: bool = False

    def rows(self) -> list[dict[str, str]]:
        """Every source's rows, in file order."""
        return [r for path in self.csv_paths for r in csv.DictReader(path.open(encoding="utf-8"))]

    def models(self) -> dict:
        """The rows' inline architectures by name (presets need none)."""
        out = dict(self.inline)
        for path in self.models_yaml:
            out |= {key: entry["model"] for key, entry in model_data(path).items()}
        return out

    def job(self, r: dict[str, str]) -> dict:
        """A row as a job file (job, with the batch's architectures)."""
        return job(r, self.models())

    def cases(self, rs: list[dict[str, str]] | None = None) -> list[Case]:
        """Every row's scored figures (of `rs`, the batch's rows by default); a row the data does not score (its
        `refused` column) or the job path refuses: one 'refused' case with the reason."""
        rs = self.rows() if rs is None else rs
        archs, shipped = self.models(), None if self.overlays else load_catalog()
        out = [Case(r["id"], source_label(r), "refused", 0.0, skipped=r["refused"]) for r in rs if r["refused"]]
        return refusals_said(kept_rows(rs), lambda r: row_cases(r, overlay_catalog(r["overlay"]) if self.overlays
                                                                else shipped, archs), source_label) + out


def said_lines(cs: list[Case]) -> str:
    """A batch's refused rows and the rows that ran but are said not to fit, each with its reason (docs/known-gaps.md
    249 (e))."""
    refused = [c for c in cs if c.metric == "refused"]
    unfit = [c for c in cs if c.metric == "fits"]
    return (f"\nrefused rows: {len(refused)}" + "".join(f"\n  {c.row_id}: {c.skipped}" for c in refused)
            + f"\nrows that ran, said not to fit by the memory estimate: {len(unfit)}"
            + "".join(f"\n  {c.row_id}: {c.skipped}" for c in unfit))


def said_together(cs: list[Case]) -> str:
    """The refused and the said-not-to-fit rows in one list, each reason cut at 110 characters."""
    said = [c for c in cs if c.metric in ("refused", "fits")]
    return f"\nrefused or said not to fit: {len(said)}" + "".join(f"\n  {c.row_id}: {c.skipped[:110]}" for c in said)


def rows() -> list[dict[str, str]]:
    """finetune_heldout.csv's rows, each with the settings STATED gives it (its `source` column left out). Raises
    ValueError for a STATED id that is not a row or a STATED column that finetune_heldout.csv has (one place a fact)."""
    stated = {r["id"]: r for r in csv.DictReader(STATED.open(encoding="utf-8"))}
    out = list(csv.DictReader(DATA.open(encoding="utf-8")))
    unknown = set(stated) - {r["id"] for r in out}
    if unknown:
        raise ValueError(f"{STATED.name}: ids {sorted(unknown)} are not rows of {DATA.name}")
    clash = (set(next(iter(stated.values()), {})) - {"id", "source"}) & set(out[0])
    if clash:
        raise ValueError(f"{STATED.name}: columns {sorted(clash)} are {DATA.name}'s own; state them there")
    return [r | {k: v for k, v in stated.get(r["id"], {}).items() if k not in ("id", "source")} for r in out]


def cases() -> list[Case]:
    cat = load_catalog()
    out: list[Case] = []
    for r in rows():
        out.extend(row_cases(r, cat))
    return out


def report(cs: list[Case]) -> None:
    print_case_rows(cs, 32, "9.1f")
    groups: dict[tuple[str, str], list[Case]] = defaultdict(list)
    for c in cs:
        if c.metric not in ("refused", "fits"):
            groups[(c.source, c.metric)].append(c)
    print("\nper source and figure (MAPE, worst):")
    for (src, metric), g in sorted(groups.items()):
        worst = max(g, key=lambda c: abs(c.err))
        print(f"  {src:52s} {metric:9s} n={len(g):2d} MAPE {mape(g):5.1f}%  worst {worst.row_id} "
              f"({100 * worst.err:+.1f}%)")
    for metric in ("tokens_s", "peak_gib", "max_seq"):
        g = [c for c in cs if c.metric == metric]
        print(f"  all {metric:9s} n={len(g):2d} MAPE {mape(g):5.1f}%")
    refused = [c for c in cs if c.skipped]
    print(f"refused: {len(refused)} row(s)" + "".join(f"\n  {c.row_id}: {c.skipped}" for c in refused))


# what must agree for two rows to count as the same run on two GPUs
LAYOUT = ("stack", "model", "gpu_count", "method", "lora_rank", "lora_targets", "precision", "fp8_recipe", "recompute",
          "activation_offload", "tp", "pp", "vpp", "micro_batch", "global_batch_seqs", "seq_len", "packing",
          "avg_tokens", "length_sigma", "max_tokens")


def generation_pairs(cs: list[Case], new: str = "gb300", old: str = "gb200") -> list[tuple[str, float, float]]:
    """(row, measured, predicted `new` / `old` tokens/s) for rows that differ only in the GPU. The Megatron-Bridge
    26.06 LoRA FP8 pair (Llama 3 70B, PP 2 x VPP 20, packed samples of about 250 tokens: attention well under 1% of
    the FLOPs) checks the GB300 / GB200 ratio where the SFU softmax throughput cannot matter."""
    rows_by_id = {r["id"]: r for r in rows()}
    tps = {c.row_id: c for c in cs if c.metric == "tokens_s" and not c.skipped}
    out = []
    for rid, c in tps.items():
        r = rows_by_id[rid]
        for twin_id, twin in tps.items():
            t = rows_by_id[twin_id]
            if r["gpu"] == new and t["gpu"] == old and all(r[k] == t[k] for k in LAYOUT):
                out.append((rid, c.measured / twin.measured, c.predicted / twin.predicted))
    return out


def spread_sensitivity(sigmas: tuple[float, ...] = (0.0, 0.3, 1.0)) -> list[tuple[str, float, float, float]]:
    """(row, length_sigma, measured, predicted tokens/s) of the unpacked-sample rows at other length spreads
    than the row states (an assumption where the source publishes none): what that assumption moves."""
    cat = load_catalog()
    out = []
    for r in rows():
        if _bool(r["packing"]) or not r["avg_tokens"] or not r["tokens_per_s"]:
            continue
        for sigma in sigmas:
            for c in row_cases({**r, "length_sigma": str(sigma)}, cat):
                if c.metric == "tokens_s":
                    out.append((r["id"], sigma, c.measured, c.predicted))
    return out


def needed_rates() -> list[tuple[str, float, float]]:
    """(row, hardware TFLOP/s per GPU, share of the rated dense BF16 peak) that the measured tokens/s need with the
    estimate's hardware FLOPs per step (recompute included), for the single-GPU BF16 rows: a share the card's
    measured matmul rate cannot reach says the row's time is not the card's (catalog alt figures, perf_constants)."""
    cat = load_catalog()
    out = []
    for r in rows():
        if r["precision"] != "bf16" or whole(r["gpu_count"]) != 1 or not r["tokens_per_s"]:
            continue
        sc = _scenario(r, cat)
        arrays = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
        flops = float(np.asarray(arrays["hardware_flops_per_step"]).reshape(-1)[0])
        rate = flops * num(r["tokens_per_s"]) / counted_tokens(r, sc.training) / 1e12
        out.append((r["id"], rate, rate / sc.system.peak_tflops["bf16"]))
    return out


# what-if lengths for the LLaMA-Factory long-context rows, whose dataset is not stated (not scored, not fitted)
LF_WHATIF = ((2000, 1.0), (4000, 1.0), (8000, 0.5), (8000, 1.0), (16000, 1.0), (6000, 1.5))


def lf_length_whatif() -> list[tuple[float, float, list[float]]]:
    """(mean, sigma, tokens/s errors of the lf_ rows in cutoff order) with the rows' samples unpacked at those
    lengths: whether any length distribution gives the wiki's tokens/s rising from 4K to 16K at batch 1."""
    cat = load_catalog()
    lf_rows = [r for r in rows() if r["id"].startswith("lf_")]
    out = []
    for mean, sigma in LF_WHATIF:
        errs = [c.err for r in lf_rows for c in row_cases({**r, "avg_tokens": str(mean), "length_sigma": str(sigma)}, cat)
                if c.metric == "tokens_s"]
        out.append((mean, sigma, errs))
    return out


def main() -> None:
    cs = cases()
    report(cs)
    print("unpacked samples at other length spreads (length_sigma; tokens/s measured vs predicted):")
    for rid, sigma, meas, pred in spread_sensitivity():
        print(f"  {rid:32s} sigma {sigma:3.1f} measured {meas:9.1f} predicted {pred:9.1f} ({100 * (pred / meas - 1):+.1f}%)")
    print("LLaMA-Factory rows with unpacked samples of a given length distribution (what-if, dataset not stated; "
          "tokens/s error at cutoff 1K 2K 4K 8K 16K 32K):")
    for mean, sigma, errs in lf_length_whatif():
        print(f"  mean {mean:6.0f} sigma {sigma:3.1f}  " + " ".join(f"{100 * e:+5.1f}%" for e in errs))
    print("hardware FLOP rate the measured tokens/s need (single-GPU BF16 rows; the estimate's FLOPs per step):")
    for rid, rate, share in needed_rates():
        print(f"  {rid:32s} {rate:6.1f} TFLOP/s = {share:.2f} of the rated BF16 peak")
    print("GB300 / GB200 tokens/s at the same layout (equal rated peaks; measured vs predicted):")
    for rid, meas, pred in generation_pairs(cs):
        print(f"  {rid:36s} measured {meas:.3f} predicted {pred:.3f}")


if __name__ == "__main__":
    main()
