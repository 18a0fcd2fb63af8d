"""Held-out check on published PRETRAINING runs that no constant was fitted on (issue #13: "the same accuracy is
expected on published runs that are not in the development set").

Rows: benchmarks/data/heldout_pretrain.csv, one published figure each, with its source, locator, date,
confidence and every assumed setting named in `assumed`. Architectures without a shipped preset are in
benchmarks/data/heldout_models.yaml (with their sources). Sources, by what they add to the dev set:
- NVIDIA dgxc-benchmarking v25.04 Nemotron-4 15B / 340B on DGX H100, BF16 and FP8, 16-2,048 GPUs (a model family
  and a 256k vocabulary the dev set lacks; same NeMo stack as its dgxc Llama 3.1 rows).
- NVIDIA NeMo user guide performance tables: 24.09 on DGX H100 (GPT-3 5B / 20B, Llama 2, Nemotron-4 340B, Llama 3
  with CP), 25.02 on DGX B200 (and the one row read of its DGX H100 table: the same release on both GPUs) and 25.04
  on DGX GB200 (Blackwell, FP8, other releases than Megatron-Bridge 25.11).
- torchtitan June 2025 async-TP benchmarks (Llama 3 8B / 70B, FSDP 8-32 x TP 8, BF16 and Float8, vanilla vs async
  TP) on Grand Teton H100 (96 GB, 500 W) stated through a catalog overlay, as a user would.
- Pythia (EleutherAI, GPT-NeoX: Megatron TP + DeepSpeed ZeRO-1, A100-40GB, 70M-12B): GPU-hours from logged
  iteration time.
- StarCoderBase 15.5B (BigCode Megatron-LM fork, A100-80GB, 512 GPUs, MQA, 8K): wall-clock GPU-hours.
- SmolLM3 3B (Hugging Face nanotron, TP 2 x DP 192 on 384 H100, 11.2T tokens in 24 days): the tokens/s per GPU
  its team monitored (Smol Training Playbook), which the 24 days' wall-clock matches.
- GPT-NeoX-20B (EleutherAI, 96 A100-40GB, TP 2 x PP 4, ZeRO-1, no flash attention): its 117 TFLOP/s per GPU.
- NeMo AutoModel (PyTorch FSDP2 + EP with DeepEP, TE kernels, H100 BF16): DeepSeek-V3 on 256 / 1,024 GPUs, Kimi K2,
  Qwen3-30B-A3B, gpt-oss 20B / 120B (sliding-window attention on half the layers), Llama 3.1 70B with CP 2 -- MoE on a PyTorch-native stack, none of it in the dev set; its
  forced-balance gate (FakeBalancedGate: round-robin experts, no gate GEMM) is a job field (`moe_routing=fake-balanced`
  in strategy_extra).
- OLMo-core (AI2; HSDP + torch.compile, BF16 and torchao float8; OLMo 2 1B / 7B / 13B, Llama 3 8B) on H100.
- NeMo long-sequence tables: Llama 2 7B FP8 on H100 (NeMo 24.03) and Llama 3 8B FP8 on B200 (NeMo 25.04), 4K-1M
  tokens with CP up to 32, in NeMo's model-FLOPs formula (`nemo_tflops_per_gpu`: non-causal attention, as NeMo
  counted until August 2025, flops.nemo_llama_flops).
Left out: the torchtitan float8 rowwise rows (the file itself flags their vanilla-TP baseline as a known bug,
torchtitan issue 1207) and MoE rows (Mixtral in the NeMo tables; the `moe` work owns MoE time).

Each row goes through the public job path (`resolve_job` + `evaluate`, the catalog and its overlays). Metrics:
`tokens_per_s_per_gpu`, `step_time_s` (the estimate's step), `gpu_hours_logged` (tokens / throughput x GPUs: no
failure goodput, as iteration-time-based figures) and `gpu_hours` (wall-clock with the estimate's goodput); `narayanan_tflops_per_gpu` (Narayanan et al. 2021 Eq. 3
hardware FLOPs over the estimated step); `nemo_tflops_per_gpu` (NeMo's Llama FLOP formula over the estimated step); `gptneox_tflops_per_gpu` (the FLOP/s GPT-NeoX logged until September 2023:
6 x parameters + 60 s h L per token, flops.gptneox_logged_flops); `peak_memory_gib` (one logged peak: PyTorch's max_memory_reserved)
against the memory estimate less the CUDA context and NCCL buffers, which live outside PyTorch's allocator;
`peak_allocated_gib` (max_memory_allocated) against it less those and the allocator's fragmentation too;
`peak_allocated_first_step_gib` (max_memory_allocated read after iteration 1) against that less what the first optimizer
step creates (`_first_step_peak`);
`allocated_after_backward_gib` (the same log line's memory_allocated: NeMo 2's MegatronStrategy.training_step logs it
after the forward-backward, before the optimizer step, nemo/lightning/pytorch/strategies/megatron_strategy.py) against
the model states; `allocated_after_step_gib` (memory_allocated after the optimizer step, Megatron-LM's training_log)
against the estimate's after-step figure (the model states and what the step holds until the next zero_grad). A row
the estimator refuses is printed as REFUSED with the error: real runs must not be refused, so each is a bug to
report. Memory fit is reported for every row, not scored (several sources do not state recompute or their memory
tricks); the one logged peak (dgxc's example line) is scored as its own source.

Nothing here is tuned: do not fit constants on these rows.

Run: python benchmarks/perf_heldout.py
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness import Case, Fit, job_fits, mape, model_data, num, whole
from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError
from trainsizer.estimate import flops as F
from trainsizer.estimate.memory import CACHED_ONLY_ITEMS, STEP_STATE_ITEMS
from trainsizer.evaluate import evaluate
from trainsizer.scenario import resolve_job

DATA = Path(__file__).resolve().parent / "data"
ROWS = DATA / "heldout_pretrain.csv"
MODELS = DATA / "heldout_models.yaml"
_BOOL = {"true": True, "false": False}
# A logged peak is torch.cuda.max_memory_reserved() (NeMo MegatronStrategy, NEMO_LOG_MEMORY_USAGE): the caching
# allocator's segments, fragmentation included; the CUDA context and NCCL's buffers are allocated outside it
OUTSIDE_ALLOCATOR = ("cuda_context", "nccl_buffers")
# torch.cuda.max_memory_allocated() holds neither those nor the allocator's cached, unused blocks (fragmentation)
NOT_ALLOCATED = (*OUTSIDE_ALLOCATOR, *CACHED_ONLY_ITEMS)
MEMORY_METRICS = ("peak_memory_gib", "peak_allocated_gib", "peak_allocated_first_step_gib", "allocated_after_step_gib",
                  "allocated_after_backward_gib", "device_memory_used_gib")


_LIST_KEYS = ("recompute_modules", "pp_stage_layers")  # strategy fields that take a list
_INT_LIST_KEYS = ("pp_stage_layers",)  # of them, those whose items are counts


def _extra(text: str) -> dict[str, Any]:
    """`key=value;...` strategy settings of a row (booleans and integers parsed; a list-valued field's items joined
    by `+`: recompute_modules=core_attn+mlp, pp_stage_layers=9+9+8+6)."""
    out: dict[str, Any] = {}
    for item in filter(None, (t.strip() for t in text.split(";"))):
        key, value = item.split("=", 1)
        if key in _LIST_KEYS:
            out[key] = [int(v) for v in value.split("+")] if key in _INT_LIST_KEYS else value.split("+")
        else:
            out[key] = _BOOL.get(value, int(value) if value.isdigit() else value)
    return out


def job_of(row: dict[str, str], models: dict[str, Any]) -> dict[str, Any]:
    """The row as a user's job file. `strategy_extra` may also carry the job-level `flash_attention` and
    `bf16_layers` (decoder layers kept in BF16 under an FP8 / FP4 recipe), `pad_share` (rows padded to seq_len),
    `explicit_attention_mask` (SDPA handed the padded batch's mask: its memory-efficient backend, the whole square),
    `hidden_dropout` / `attention_dropout` (the run's dropout probabilities), `packed_avg_tokens` (samples of that mean
    length packed into the rows: the job's packing, its data as samples x avg_tokens) and the hardware's `per_node` (GPUs a host, where the catalog's host size is not the run's: DGX-2's 16 V100); a network
    written as `key=value;...` is an inline network (NICs per node, Gb/s per NIC, kind). A batch's own `method` column
    (perf_heldout68's fine-tuning rows: full, lora, dpo) sets the job's method, `lora_rank` / `lora_targets` (targets
    joined by +) its adapters, `lora_impl` / `lora_dropout` their implementation and dropout (perf_heldout75's AutoModel
    rows); without them a row is pre-training."""
    model: Any = models[row["model"]]["model"] if row["model"] in models else row["model"]
    extra = _extra(row["strategy_extra"])
    flash = extra.pop("flash_attention", True)
    routing = extra.pop("moe_routing", None)  # job level, like flash_attention
    bf16_layers = extra.pop("bf16_layers", None)  # job level
    pad_share = extra.pop("pad_share", None)  # job level: rows padded to seq_len
    capacity = extra.pop("moe_capacity_factor", None)  # job level: a padded token drop's capacity (Job field)
    mtp_passes = extra.pop("mtp_passes", None)  # job level: Megatron-Core mtp_num_layers under mtp_use_repeated_layer
    mask = extra.pop("explicit_attention_mask", None)  # job level: SDPA handed the padded batch's mask
    dropouts = {k: float(extra.pop(k)) for k in ("hidden_dropout", "attention_dropout") if k in extra}  # job level
    per_node = extra.pop("per_node", None)  # hardware level
    lora_rank = extra.pop("lora_rank", None)  # job level: a batch's LoRA rows (perf_heldout68), targets joined by +
    lora_targets = str(extra.pop("lora_targets", "all-linear")).split("+")
    lora_more = {k: extra.pop(f"lora_{k}") for k in ("impl", "dropout") if f"lora_{k}" in extra}  # perf_heldout75
    packed_avg = extra.pop("packed_avg_tokens", None)  # job level: samples of this mean length packed into the rows
    strategy = {"tp": whole(row["tp"], 1), "pp": whole(row["pp"], 1), "vpp": whole(row["vpp"], 1),
                "cp": whole(row["cp"], 1), "ep": whole(row["ep"], 1), "micro_batch": whole(row["micro_batch"], 1),
                "recompute": row["recompute"], "framework": row["framework"], **extra}
    network: Any = _extra(row["network"]) if "=" in row["network"] else row["network"]
    job: dict[str, Any] = {
        "model": model, "method": row.get("method") or "pretrain", "data": {"tokens": num(row["tokens"], 1e9)},
        "seq_len": whole(row["seq_len"]), "global_batch": {"sequences": whole(row["global_batch_seqs"])},
        "precision": row["precision"], "flash_attention": flash,
        "hardware": {"accelerator": row["accelerator"], "count": whole(row["gpu_count"]), "network": network},
        "strategy": strategy,
    }
    if per_node:
        job["hardware"]["per_node"] = per_node
    if row["fp8_recipe"]:
        job["fp8_recipe"] = row["fp8_recipe"]
    if routing:
        job["moe_routing"] = routing
    if bf16_layers:
        job["bf16_layers"] = bf16_layers
    if pad_share:
        job["pad_share"] = float(pad_share)
    if capacity:
        job["moe_capacity_factor"] = float(capacity)
    if mtp_passes:
        job["mtp_passes"] = int(mtp_passes)
    if mask is not None:
        job["explicit_attention_mask"] = mask
    if lora_rank:
        job["lora"] = {"rank": int(lora_rank), "targets": lora_targets,
                       **{k: float(v) if k == "dropout" else v for k, v in lora_more.items()}}
    if packed_avg:  # offline-packed samples (perf_heldout72's Megatron-Bridge SFT rows): data as samples x their length
        job |= {"packing": True, "data": {"samples": job["data"]["tokens"] / float(packed_avg),
                                          "avg_tokens": float(packed_avg)}}
    return {**job, **dropouts}


def predicted_metric(row: dict[str, str], result: dict[str, Any], model: Any) -> float:
    t, gpus = result["time"], whole(row["gpu_count"])
    metric = row["metric"]
    if metric == "tokens_per_s_per_gpu":
        return float(t["tokens_per_s"]) / gpus
    if metric == "step_time_s":
        return float(t["step_s"])
    if metric == "gpu_hours_logged":  # iteration time x iterations x GPUs: no failures
        return num(row["tokens"]) / float(t["tokens_per_s"]) * gpus / 3600.0
    if metric == "gpu_hours":
        return float(t["gpu_hours"])
    if metric == "narayanan_tflops_per_gpu":  # hardware FLOP/s with recompute, Narayanan et al. 2021 Eq. 3
        flops = F.narayanan_eq3_flops(whole(row["global_batch_seqs"]), whole(row["seq_len"]), model.layers,
                                      model.hidden, model.vocab)
        return flops / float(t["step_s"]) / gpus / 1e12
    if metric in ("nemo_tflops_per_gpu", "megatron_tflops_per_gpu"):  # NeMo's model-FLOPs formula (Llama families),
        # non-causal attention; Megatron-LM's logged TFLOP/s/GPU (training.py num_floating_point_operations, e.g. at
        # swiss-ai/Megatron-LM 59ac8f14, core 0.11) is the same expression for a dense model with kv_channels x heads
        # = hidden and its padded vocabulary (docs/known-gaps.md 267 (a))
        flops = F.nemo_llama_flops(whole(row["global_batch_seqs"]), whole(row["seq_len"]), model.layers, model.hidden,
                                   model.kv_heads, model.heads, model.ffn, model.vocab)
        return flops / float(t["step_s"]) / gpus / 1e12
    if metric == "gptneox_tflops_per_gpu":  # GPT-NeoX's own logged FLOP/s (2021 - Sept 2023 formula)
        flops = F.gptneox_logged_flops(whole(row["global_batch_seqs"]), whole(row["seq_len"]), model.params_total,
                                       model.layers, model.hidden)
        return flops / float(t["step_s"]) / gpus / 1e12
    items = result["memory"]["items"]
    if metric in ("peak_memory_gib", "peak_allocated_gib"):  # PyTorch's reserved / allocated peak: the estimate less
        # what lives outside its allocator (and, allocated, less the cached blocks)
        outside = sum(float(items[k]["gib"]) for k in (OUTSIDE_ALLOCATOR if metric == "peak_memory_gib"
                                                       else NOT_ALLOCATED) if k in items)
        return float(result["memory"]["per_gpu_gib"]) - outside
    if metric == "peak_allocated_first_step_gib":
        return _first_step_peak(result["memory"])
    if metric == "allocated_after_step_gib":  # memory_allocated() after the optimizer step, before the next zero_grad
        return float(result["memory"]["after_step_gib"])
    if metric == "allocated_after_backward_gib":  # memory_allocated() after the backward: the model states alone
        return sum(float(items[k]["gib"]) for k in STEP_STATE_ITEMS if k in items)
    if metric == "device_memory_used_gib":  # torch.cuda.mem_get_info()'s total less free: the whole estimate
        return float(result["memory"]["per_gpu_gib"])
    raise ValueError(f"{row['id']}: unknown metric {metric!r}")


def _first_step_peak(mem: dict[str, Any]) -> float:
    """max_memory_allocated read after iteration 1 (Megatron's report_memory "(after 1 iterations)"): the steady
    allocated peak less what the first optimizer step creates, where the peak is in the forward / backward: the Adam
    moments (Transformer Engine's FusedAdam and torch's Adam initialise their state in their first step; Megatron-LM's
    CI series show it, known-gaps 172) and a gradient copy the step keeps (grad_fp32_copy). Not below the states
    after the step, which that step holds."""
    items = mem["items"]
    gib = {k: float(v["gib"]) for k, v in items.items()}
    peak = float(mem["per_gpu_gib"]) - sum(gib.get(k, 0.0) for k in NOT_ALLOCATED)
    if mem["peak_phase"] != "forward/backward":
        return peak
    return max(peak - gib.get("optimizer_states", 0.0) - gib.get("grad_fp32_copy", 0.0), float(mem["after_step_gib"]))


def estimate_row(row: dict[str, str], models: dict[str, Any], catalogs: dict[str, Any],
                 predict: Callable[[dict[str, str], dict[str, Any], Any], float]) -> tuple[Case, dict[str, Any]]:
    """(case scored by `predict(row, result, model)`, the estimate's result or {} when refused: the case then
    comes back skipped with the estimator's error). `catalogs` caches one catalog per overlay file."""
    case = Case(row["id"], row["source_key"], row["metric"], float(row["value"]))
    overlay = row["overlay"]
    if overlay not in catalogs:
        catalogs[overlay] = load_catalog([DATA / overlay] if overlay else [])
    try:
        scenario = resolve_job(job_of(row, models), catalogs[overlay])
        result = evaluate(scenario, catalogs[overlay])
    except TrainsizerError as err:
        case.skipped = f"REFUSED: {err}"
        return case, {}
    case.predicted = predict(row, result, scenario.model)
    return case, result


def run_row(row: dict[str, str], models: dict[str, Any], catalogs: dict[str, Any]) -> tuple[Case, str]:
    """(scored case, memory note); a refused row comes back skipped with the estimator's error."""
    case, result = estimate_row(row, models, catalogs, predicted_metric)
    if not result:
        return case, ""
    mem = result["memory"]
    return case, f"{'fits' if mem['fits'] else 'DOES NOT FIT'} ({mem['per_gpu_gib']:.0f} GiB)"


Run = list[tuple[Case, dict[str, Any], dict[str, str]]]  # (case, the estimate's result or {} when refused, row)


@dataclass(frozen=True)
class Batch:
    """One held-out batch in this file's columns (docs/known-gaps.md 249 (a)): its csv files, read in order; the
    models yaml files its jobs name models from, merged in order (a later file's entry replacing an earlier one's);
    how a row's figure is read from the estimate. A batch module binds its module-level rows / models / run_all /
    job / fits to one (`rows, models, run_all, job, fits = BATCH.rows, ...`)."""

    csv_paths: tuple[Path, ...]
    models_yaml: tuple[Path, ...] = (MODELS,)
    predict: Callable[[dict[str, str], dict[str, Any], Any], float] = predicted_metric

    def rows(self) -> list[dict[str, str]]:
        """Every row of the batch's files, in file order."""
        return [r for path in self.csv_paths for r in csv.DictReader(path.open(encoding="utf-8"))]

    def models(self) -> dict[str, Any]:
        """The models the rows name that are not presets (harness.model_data of each file, merged)."""
        out: dict[str, Any] = {}
        for path in self.models_yaml:
            out |= model_data(path)
        return out

    def estimate(self, rs: list[dict[str, str]]) -> Run:
        """(case, the estimate's result or {} when refused, row) for every row of `rs`, in order."""
        archs, catalogs = self.models(), {}
        return [(*estimate_row(r, archs, catalogs, self.predict), r) for r in rs]

    def run_all(self) -> Run:
        """(case, the estimate's result or {} when refused, row) for every row, in file order."""
        return self.estimate(self.rows())

    def run_listed(self) -> Run:
        """run_all for a batch whose files carry a `refused` column (why the data refuses a row: perf_heldout68, 70): a
        row with one comes back as a skipped case with that reason, the others through the job path, in file order."""
        rs = self.rows()
        estimated = iter(self.estimate([r for r in rs if not r["refused"]]))
        return [next(estimated) if not r["refused"] else
                (Case(r["id"], r["source_key"], r["metric"], float(r["value"]), skipped=f"REFUSED: {r['refused']}"), {}, r)
                for r in rs]

    def fits_listed(self) -> list[Fit]:
        """fits for the rows the data does not refuse (run_listed's estimated rows; every row ran)."""
        archs = self.models()
        return job_fits((r["id"], job_of(r, archs)) for r in self.rows() if not r["refused"])

    def job(self, r: dict[str, str]) -> dict[str, Any]:
        """The row's job file (job_of)."""
        return job_of(r, self.models())

    def fits(self) -> list[Fit]:
        """Each row's predicted peak memory against the card's usable memory (every row ran)."""
        archs = self.models()
        return job_fits((r["id"], job_of(r, archs)) for r in self.rows())


def estimate_rows(rs: list[dict[str, str]]) -> Run:
    """(case, the estimate's result or {} when refused, row) for every row of `rs` (this file's columns, this file's
    models), in order: the held-out files that print each row's breakdown (perf_heldout28, perf_heldout29)."""
    return Batch(()).estimate(rs)


rows = Batch((ROWS,)).rows


def scored_refused(run: Run) -> tuple[list[Case], list[Case]]:
    """The run's scored cases and its refused ones."""
    return [c for c, _, _ in run if not c.skipped], [c for c, _, _ in run if c.skipped]


def median_pct(cs: list[Case]) -> float:
    """The median signed error of `cs`, in percent (nan for none)."""
    return 100.0 * float(np.median([c.err for c in cs])) if cs else float("nan")


def time_summary(name: str, run: Run) -> str:
    """A batch's closing line: the scored rows' n, MAPE and median error, and the refused rows' count."""
    scored, refused = scored_refused(run)
    return (f"\n{name} time: n={len(scored)} MAPE {mape(scored):.1f}% (median {median_pct(scored):+.1f}%); "
            f"refused {len(refused)}")


def card_flops_ratio(card_flops: dict[str, tuple[float, float]], r: dict[str, str], result: dict[str, Any]) -> float:
    """The estimate's model FLOPs a step over a Megatron-Bridge model card's: its model TFLOP/s a GPU x step time x
    GPUs; `card_flops`: row id -> (last_10_steps_model_tflops_per_gpu_avg, last_10_steps_step_time_ms_avg)."""
    tflops, step_ms = card_flops[r["id"]]
    return float(result["time"]["model_flops_per_step"]) / (tflops * 1e12 * step_ms / 1e3 * int(r["gpu_count"]))


def step_line(c: Case, result: dict[str, Any], width: int) -> str:
    """A scored row (published, predicted, error) with the estimate's step and its terms over 5 ms; a refused one with
    the estimator's error."""
    if c.skipped:
        return f"  {c.row_id:{width}s} {c.skipped}"
    terms = ", ".join(f"{k} {v:.2f}" for k, v in result["time"]["breakdown_s"].items() if v > 0.005)
    return (f"  {c.row_id:{width}s} {c.measured:8.0f} {c.predicted:8.0f} ({100 * c.err:+6.1f}%)  step "
            f"{result['time']['step_s']:.2f} s: {terms}")


def run_all() -> list[tuple[Case, str, dict[str, str]]]:
    """(case, memory note, row) for every row of the file, in file order."""
    models = model_data(MODELS)
    catalogs: dict[str, Any] = {}
    return [(*run_row(row, models, catalogs), row) for row in rows()]


# what must agree for two rows to count as the same run on two GPUs (release and container may differ, and with them
# the FP8 scaling recipe: NeMo 2.2.0 = 25.02 has delayed scaling only, 25.04 ran current scaling)
LAYOUT = ("model", "gpu_count", "precision", "seq_len", "global_batch_seqs", "micro_batch", "tp", "pp",
          "vpp", "cp", "ep", "framework", "recompute", "strategy_extra", "metric")


def system_pairs(cases: list[tuple[Case, str, dict[str, str]]], new: str = "gb200",
                 old: str = "b200") -> list[tuple[str, str, float, float]]:
    """(model, releases, measured, predicted `new` / `old` ratio) for rows that differ only in the GPU (and the
    release that measured them, FP8 recipe included: NeMo 25.04 on GB200 with current scaling, 25.02 on B200 with
    delayed scaling), printed to separate what the catalog gives
    the newer part (rated 2.5 vs 2.25 PF BF16) from what the rows show."""
    done = {c.row_id: (c, r) for c, _, r in cases if not c.skipped}
    out = []
    for c, r in done.values():
        for t, tr in done.values():
            if r["accelerator"] == new and tr["accelerator"] == old and all(r[k] == tr[k] for k in LAYOUT):
                rel = f"{c.source.split(' docs')[0]} / {t.source.split(' docs')[0]}".replace("NVIDIA ", "")
                out.append((r["model"], rel, c.measured / t.measured, c.predicted / t.predicted))
    return out


# Sources measured on one software release, each side as (GPU, its sources): the NeMo 25.02 container ran on DGX
# H100 for dgxc-benchmarking v25.04 (25.02.01) and for the 25.02 performance page's H100 table, and on DGX B200 for
# that page's B200 table; compared on the FP8 rows (delayed scaling, the one recipe NeMo 2.2 has)
ONE_RELEASE = {
    "NeMo 25.02": (("H100", ("NVIDIA dgxc Nemotron-4 (H100)", "NVIDIA NeMo 25.02 docs (H100 FP8)")),
                   ("B200", ("NVIDIA NeMo 25.02 docs (B200 FP8)",))),
}


# strategy settings that exist only under FP8 (a BF16 twin states none): dropped when pairing rows by precision
# (fp8_lm_head: the head in MXFP8 needs precision fp8, validate.py)
FP8_ONLY_EXTRA = ("fp8_param_allgather", "fp8_lm_head")


def _without_fp8_extra(text: str) -> str:
    return ";".join(sorted(t for t in text.split(";") if t and t.split("=", 1)[0] not in FP8_ONLY_EXTRA))


def precision_pairs(cases: list[tuple[Case, str, dict[str, str]]]) -> list[tuple[str, str, float, float]]:
    """(FP8 row, micro-batch, measured FP8 / BF16 throughput, predicted) for rows of one source that differ only in
    the precision (and the FP8 recipe and FP8-only settings): what FP8 gains at one layout, measured and modelled,
    apart from how fast either row is. Printed to show where the modelled FP8 gain departs from the measured one
    (docs/known-gaps.md 25)."""
    keys = [k for k in LAYOUT if k not in ("precision", "strategy_extra")] + ["accelerator", "source_key"]
    done = [(c, r) for c, _, r in cases if not c.skipped and c.metric not in MEMORY_METRICS]
    out = []
    for c, r in done:
        if r["precision"] != "fp8":
            continue
        for t, tr in done:
            if tr["precision"] == "bf16" and all(r[k] == tr[k] for k in keys) and \
                    _without_fp8_extra(r["strategy_extra"]) == _without_fp8_extra(tr["strategy_extra"]):
                out.append((r["id"], r["micro_batch"], _rate(t.measured, c.measured, c.metric),
                            _rate(t.predicted, c.predicted, c.metric)))
    return out


def _rate(bf16: float, fp8: float, metric: str) -> float:
    """FP8 / BF16 throughput from two figures of `metric` (a step time is the inverse of a rate)."""
    return bf16 / fp8 if metric == "step_time_s" else fp8 / bf16


def throughput_err(case: Case) -> float:
    """Signed throughput error of a time row (+ = predicted too fast), whether it publishes tokens/s or a step."""
    if case.metric == "step_time_s":
        return case.measured / case.predicted - 1.0
    return case.predicted / case.measured - 1.0


def one_release_two_gpus(cases: list[tuple[Case, str, dict[str, str]]]) -> list[tuple[str, str, list]]:
    """(release, model, [(GPU, mean throughput error, rows)] per side) for the FP8 models both sides of one release
    list, and "all FP8 rows": whether the model's error follows the release (the software) or the GPU (the kernels
    that release ran on it)."""
    out = []
    for release, sides in ONE_RELEASE.items():
        errs: dict[tuple[str, str], list[float]] = defaultdict(list)
        for c, _, r in cases:
            for gpu, sources in sides:
                if not c.skipped and r["precision"] == "fp8" and c.source in sources:
                    for model in (r["model"], "all FP8 rows"):
                        errs[(gpu, model)].append(throughput_err(c))
        common = set.intersection(*({m for g, m in errs if g == gpu} for gpu, _ in sides))
        for m in sorted(common):
            out.append((release, m, [(gpu, float(np.mean(errs[(gpu, m)])), len(errs[(gpu, m)]))
                                     for gpu, _ in sides]))
    return out


def main() -> None:
    cases = run_all()
    print(f"{'row':48s} {'metric':20s} {'published':>11s} {'predicted':>11s} {'error':>8s}  memory")
    for case, mem, _ in cases:
        if case.skipped:
            print(f"{case.row_id:48s} {case.metric:20s} {case.measured:11.4g} {'-':>11s} {'-':>8s}  {case.skipped}")
        else:
            print(f"{case.row_id:48s} {case.metric:20s} {case.measured:11.4g} {case.predicted:11.4g} "
                  f"{case.err:+8.1%}  {mem}")
    scored = [c for c, _, _ in cases]
    by_source: dict[str, list[Case]] = defaultdict(list)
    for c in scored:
        by_source[c.source].append(c)
    timed = [c for c in scored if c.metric not in MEMORY_METRICS]
    print(f"\nHeld-out pretraining runs: time n={len(timed)}, MAPE {mape(timed):.1f}% over the scored rows; "
          f"memory n={len(scored) - len(timed)} (per source below)")
    for source, cs in by_source.items():
        n_ok = sum(not c.skipped for c in cs)
        worst = max((abs(c.err) for c in cs if not c.skipped), default=math.nan)
        print(f"  {source:42s} n={n_ok:2d}/{len(cs):2d} MAPE {mape(cs):5.1f}%  worst {100 * worst:5.1f}%")
    print("worst rows:")
    for c in sorted((c for c in scored if not c.skipped), key=lambda c: -abs(c.err))[:8]:
        print(f"  {c.row_id:48s} {c.err:+7.1%}")
    print("GB200 / B200 at the same layout (different releases and FP8 recipes; measured vs predicted):")
    for model, rel, meas, pred in system_pairs(cases):
        print(f"  {model:20s} {rel:30s} measured {meas:.3f} predicted {pred:.3f}")
    print("One release on two GPUs (FP8 rows, delayed scaling; mean throughput error, + = predicted too fast):")
    for release, model, sides in one_release_two_gpus(cases):
        cells = "  ".join(f"{gpu} {err:+6.1%} (n={n})" for gpu, err, n in sides)
        print(f"  {release:10s} {model:16s} {cells}")
    print("FP8 / BF16 throughput at one layout (one source; measured vs predicted, and how far the modelled gain is "
          "off):")
    for row_id, mb, meas, pred in precision_pairs(cases):
        print(f"  {row_id:46s} micro-batch {mb:>2s}  measured {meas:.3f} predicted {pred:.3f}  {pred / meas - 1.0:+6.1%}")
    refused = [c for c in scored if c.skipped]
    print(f"refused rows (runs that were made: each is a bug): {len(refused)}")
    for c in refused:
        print(f"  {c.row_id}: {c.skipped}")
    unfit = [(c, m) for c, m, _ in cases if "NOT FIT" in m]
    print(f"rows whose measured run the memory estimate says does not fit: {len(unfit)}")
    for c, m in unfit:
        print(f"  {c.row_id}: {m}")


if __name__ == "__main__":
    main()
