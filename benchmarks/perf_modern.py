"""Time estimator on the stacks people run in 2025-2026: NVIDIA DGX Cloud benchmarks (NeMo / Megatron-Core,
H100, BF16 and FP8) and torchtitan (FSDP2 with TP / PP / CP, Float8, torch.compile; H100 96 GB at 500 W,
H200, A100).

Rows: benchmarks/data/throughput.csv whose `source` is NVIDIA/dgxc-benchmarking or pytorch/torchtitan (copied
verbatim from the project's validation set; conventions in its README "Modern stacks"). Every row is
predicted with its own model, GPUs, layout, batch, sequence length and precision, through the public job
path's framework styles (no per-row or per-source factors):
- NeMo rows: framework `megatron-core` (distributed optimizer, overlapped grad/param collectives, TP overlap,
  Transformer Engine); `act_recompute` empty = not stated = none (NeMo 25.04 Llama 3.1 / GPT-3 recipes do not
  recompute). The Llama 3.1 405B recipe counts embedding and loss as pipeline layers (Megatron
  `account_for_embedding/loss_in_pipeline_split`, NeMo recipes/llama31_405b.py `trainer`): 126 layers + 2 over
  PP 8 x VPP 8, and its 30- and 62-layer proxies likewise. Every NeMo row keeps bf16 gradient buffers: the
  scripts build the recipes with performance_mode=True, whose pretrain_performance_optimizations sets
  grad_reduce_in_fp32 = False for BF16 and FP8 alike (NeMo r2.2 recipes llama3_8b.py, llama3_70b.py,
  llama31_405b.py; GPT-3 through its hydra config). The same optimizations defer the LM head's weight gradients of
  the pipelined Llama 3.1 70B / 405B rows (limit 22 / 50: DEFERRAL_LIMITS, strategy.defer_embedding_wgrad).
- torchtitan rows: framework `torchtitan` (FSDP2 + TP / PP / CP) with the row's options: torch.compile or
  eager, async TP, FP8 recipe (torchao tensorwise, or rowwise where stated), FP8 FSDP all-gather where
  stated and on the 405B Float8 rows (the llama3_405b.toml preset they ran sets it); Interleaved 1F1B with 2 stages per rank (torchtitan default; assumed). torchtitan "selective" is
  its own selective AC (per-op policy; the every-2nd-layer variant recomputes a similar share of a layer and
  is evaluated the same way); "float8 linears" = FP8 training on the linear layers.
- Hardware: DGX H100 (NDR400 per GPU) for NeMo; torchtitan's Grand Teton H100 96 GB held at 500 W (RoCE
  400 Gb/s per GPU), H200 with 400 Gb/s per GPU (WhiteFiber), A100-80GB DGX (200 Gb/s per GPU, assumed).
Metrics: step_time and tokens/s directly; NeMo MFU with NeMo's own FLOPs formulas (`llama3`: Llama 3 with
GQA and SwiGLU, non-causal attention; GPT-3: Korthikanti Eq. 7) against the peak of the precision;
torchtitan MFU with its `get_num_flop_per_token` (6 x non-embedding params + 12 L H Q T) against the peak of
the precision: the README says BF16, but its 405B Float8 rows (MFU 23.5 at 177 tokens/s against 29.0 at 109
BF16) are against the FP8 peak (177/109 x 29.0 x 989/1979 = 23.5).

Run: python benchmarks/perf_modern.py
"""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

import numpy as np

from fabrics import hdr200, ndr400
from harness import Case, Fit, degrees, dgx_h100, fit_of, mape, num, print_fits, usable_gib, whole
from trainsizer.estimate import flops as F
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.step_time import PerfStyle, perf_style, step_time_arrays
from trainsizer.models import load_model
from trainsizer.models.arch import ModelArch

DATA = Path(__file__).resolve().parent / "data"
SOURCES = ("NVIDIA/dgxc-benchmarking", "pytorch/torchtitan")


# --------------------------------------------------------------------------- hardware of the sources
def grand_teton_h100(gpus: int) -> System:
    """Meta Grand Teton H100: SXM5 with 96 GB HBM2e at 2.4 TB/s peak, held at a 500 W power limit; RDMA 400 Gb/s
    per GPU (torchtitan benchmarks/llama3_h100_202412_torchtitan.md and asyncTP_llama3_h100_2025-06, "Hardware").
    Same tensor cores and peaks as the 700 W part; the limit lowers sustained clocks."""
    return System(accelerator="h100-sxm", gpus=gpus, gpus_per_node=8, memory_gib=96,
                  peak_tflops={"bf16": 989.0, "fp16": 989.0, "fp8": 1979.0, "tf32": 494.0},
                  hbm_gb_s=2400.0, intra_node_gb_s=450.0, scaleup_domain=8, nvls=True, inter_node_gb_s=ndr400(),
                  tdp_w=700.0, power_limit_w=500.0)


def h200(gpus: int) -> System:
    """H200 SXM 141 GB (4.8 TB/s), NVLink4, 400 Gb/s RDMA per GPU (WhiteFiber cluster in the torchtitan notes)."""
    return System(accelerator="h200", gpus=gpus, gpus_per_node=8, memory_gib=141 * 1e9 / 2**30,
                  peak_tflops={"bf16": 989.0, "fp16": 989.0, "fp8": 1979.0, "tf32": 494.0},
                  hbm_gb_s=4800.0, intra_node_gb_s=450.0, scaleup_domain=8, nvls=True, inter_node_gb_s=ndr400(),
                  tdp_w=700.0)


def a100(gpus: int) -> System:
    """DGX A100 80 GB, NVLink3 300 GB/s per direction, 8 x HDR200 (25 GB/s per GPU; assumed for torchtitan's
    2024 A100 runs, which do not state the network)."""
    return System(accelerator="a100-sxm-80gb", gpus=gpus, gpus_per_node=8, memory_gib=usable_gib("a100-sxm-80gb"),
                  peak_tflops={"bf16": 312.0, "fp16": 312.0, "tf32": 156.0}, hbm_gb_s=2039.0,
                  intra_node_gb_s=300.0, scaleup_domain=8, nvls=False, inter_node_gb_s=hdr200(), tdp_w=400.0)


def system_of(row: dict, gpus: int) -> System:
    g = row["gpu_type"].lower()
    if "a100" in g:
        return a100(gpus)
    if "h200" in g:
        return h200(gpus)
    if "96gb" in g or "95gb" in g or "500w" in g or "lower-tdp" in g:
        return grand_teton_h100(gpus)
    return dgx_h100(gpus)


# --------------------------------------------------------------------------- models
_PRESETS = {"8": "llama-3.1-8b", "13": "llama-2-13b", "70": "llama-3.1-70b", "405": "llama-3.1-405b"}


def model_of(row: dict) -> ModelArch:
    if "gpt" in row["model"].lower():
        h, heads = whole(row["hidden"]), whole(row["heads"])
        return ModelArch(name="gpt3-175b", family="gpt", layers=whole(row["layers"]), hidden=h, heads=heads,
                         kv_heads=heads, ffn=whole(row["ffn"], 4 * h), vocab=whole(row["vocab"], 51200), mlp="gelu",
                         norm="layernorm", position="learned", max_position=whole(row["seq_len"]),
                         tied_embeddings=True, qkv_bias=True, out_bias=True, mlp_bias=True)
    size = row["model"].split()[-1].rstrip("B").split(".")[0] if "B" in row["model"] else ""
    key = {"8": "8", "13": "13", "70": "70", "405": "405"}.get(size) or str(int(round(num(row["params_B"]))))
    model = load_model(_PRESETS[key])
    layers = whole(row["layers"])
    if layers and layers != model.layers:  # reduced-layer proxies (NeMo 405B on 32-128 GPUs)
        model = replace(model, layers=layers, name=f"{model.name}-{layers}L")
    return model


# --------------------------------------------------------------------------- one row
def source_key(row: dict) -> str:
    if row["source"].startswith("NVIDIA/dgxc"):
        return "NeMo (dgxc) FP8" if "fp8" in row["precision"].lower() else "NeMo (dgxc) BF16"
    return "torchtitan"


def _recompute(row: dict) -> str:
    r = (row["act_recompute"] or "").strip().lower()
    return "full" if r.startswith("full") else "selective" if r.startswith("selective") else "none"


def _precision(row: dict) -> str:
    p = row["precision"].lower()
    return "fp8" if ("fp8" in p or "float8" in p) else "bf16"


def torchtitan_style(row: dict) -> PerfStyle:
    """torchtitan's perf style with the row's job options: async TP (TP communication overlapped with the
    GEMMs by micro-pipelining, like Megatron's --tp-comm-overlap) and FP8 FSDP all-gather (with the float8 weight
    scales precomputed once per step: precompute_float8_dynamic_scale_for_fsdp)."""
    text = row["framework"].lower()
    async_tp = "async" in text.replace("asynctp", "async") and "vanilla" not in text
    # the 405B preset the Float8 rows ran (train_configs/llama3_405b.toml at 3faaa1a0d and 9dec370: [float8]
    # enable_fsdp_float8_all_gather = true); the 8B / 70B presets leave it off
    preset_fp8_ag = "405" in row["model"] and "float8" in row["precision"].lower()
    # the A100 presets' fused_rmsnorm (FUSED_NORM_PRESETS): strategy.norm_kernel, which an explicit style must carry
    return replace(perf_style("torchtitan"), tp_comm_overlap=async_tp,
                   fp8_param_allgather="all-gather" in row["precision"].lower() or preset_fp8_ag,
                   norm_kernel="fused" if _fused_norm_preset(row) else None)


# torchtitan's A100 table (docs/performance.md, added 2024-04-24 in commit 1ea476e9f) ran the 64-A100 presets of
# that commit, whose train_configs/llama2_13b.toml and llama3_8b.toml set norm_type = "fused_rmsnorm" (the Triton
# fused RMSNorm of torchtitan/models/norms.py, which saves its bf16 input and the fp32 rstd); llama2_70b.toml and
# llama3_70b.toml set "rmsnorm" (eager)
FUSED_NORM_PRESETS = ("Llama 2 13B", "Llama 3 8B")


def _fused_norm_preset(row: dict) -> bool:
    return "A100" in row["gpu_type"] and row["model"] in FUSED_NORM_PRESETS


# The LM head's deferred weight gradients (Megatron-Core defer_embedding_wgrad_compute, known-gaps 106 (a)) of the
# dgxc v25.04 Llama 3.1 scripts: pretrain_llama31.py builds NeMo's recipes with performance_mode=True, whose
# pretrain_performance_optimizations add MegatronCommOverlapCallback(defer_embedding_wgrad_compute=True,
# wgrad_deferral_limit=22) for 70B and 50 for 405B (the reduced-layer proxy runs the 405B recipe) at the NeMo commit
# its setup.sh pins (d2b21556, recipes/llama3_70b.py, llama31_405b.py); the 8B recipe sets none; GPT-3 runs NeMo 1's
# gpt3_175b_hydra.yaml, which sets none (NeMo 1's default: off)
DEFERRAL_LIMITS = {"Llama 3.1 70B": 22, "Llama 3.1 405B": 50}


def _deferred_head_wgrad(row: dict, model: ModelArch, pp: int) -> dict:
    """The strategy fields of the recipe's deferred LM-head weight gradients (DEFERRAL_LIMITS), pipelined rows only:
    Megatron-Core refuses the option without pipeline parallelism."""
    limit = next((n for name, n in DEFERRAL_LIMITS.items() if row["model"].startswith(name)), None)
    if limit is None or pp <= 1 or model.family == "gpt":
        return {}
    return {"defer_embedding_wgrad": True, "wgrad_deferral_limit": limit}


def configure(row: dict) -> tuple[ModelArch, Training, System, Strategy, str]:
    """The row's (model, training, system, strategy, framework)."""
    model = model_of(row)
    gpus, tp, pp, cp, dp = degrees(row)
    vpp = whole(row["vpp"], 1) or 1
    mb = whole(row["micro_batch"]) or 1
    seq = whole(row["seq_len"])
    precision = _precision(row)
    recipe = "auto" if precision != "fp8" else "rowwise" if "rowwise" in row["precision"] else "tensorwise"
    nemo = row["source"].startswith("NVIDIA/dgxc")
    if nemo:
        gbs = whole(row["global_batch_seqs"])
        framework = "megatron-core"
        recipe = "delayed"  # NeMo 25.04 recipes: Transformer Engine delayed scaling
        # Megatron account_for_embedding/loss_in_pipeline_split (the 405B recipe sets both): the embedding and
        # the loss each take a layer's slot, so the PP x VPP chunks divide layers + slots (Megatron-Core asserts
        # an even split); the slots a row needs are the layers missing to a multiple of the chunk count
        extra = (-model.layers) % (pp * vpp) if pp > 1 else 0
        assert extra <= 2, f"{row['id']}: {model.layers} layers do not split over PP {pp} x VPP {vpp}"
        # What the dgxc v25.04 scripts set: Llama 3.1 (llama3.1/pretrain_llama31.py) builds NeMo's recipes with
        # performance_mode=True, whose pretrain_performance_optimizations sets the precision plugin's
        # grad_reduce_in_fp32 = False (NeMo r2.2 recipes/llama3_8b.py, llama3_70b.py, llama31_405b.py; the plugin
        # overrides the DDP config's True, MegatronStrategy update_config_with_dtype_overrides), and FP8 takes
        # bf16_with_fp8_mixed (fp8_param_gather = True) with grad_reduce_in_fp32 = False again; GPT-3
        # (nemo_megatron/cfg/gpt3_175b_hydra.yaml) runs distributed_fused_adam with grad_sync_dtype bf16 and
        # fp8_params true
        fp8 = precision == "fp8"
        strategy = Strategy(tp=tp, pp=pp, vpp=vpp, dp=dp, cp=cp, micro_batch=mb, recompute=_recompute(row),
                            sequence_parallel=tp > 1, distributed_optimizer=True, framework=framework,
                            pipeline_embedding_layer=extra >= 1, pipeline_loss_layer=extra >= 2,
                            grad_reduce_in_fp32=False, fp8_param_allgather=fp8 or None,
                            **_deferred_head_wgrad(row, model, pp))
    else:
        # torchtitan "local batch size" is per DP rank: global = local x dp (CP ranks share a sequence)
        gbs = whole(row["global_batch_seqs"]) or mb * dp
        framework = "torchtitan"
        if "interleaved" in row["framework"].lower() and vpp == 1:
            vpp = 2  # torchtitan Interleaved1F1B: 2 stages per rank by default (assumed; not in the table)
        strategy = Strategy(tp=tp, pp=pp, vpp=vpp, dp=dp, cp=cp, micro_batch=1 if pp > 1 else mb, zero=3,
                            recompute=_recompute(row), sequence_parallel=tp > 1, framework=framework,
                            torch_compile="compile" in row["framework"].lower(),
                            norm_kernel="fused" if _fused_norm_preset(row) else None)
        if pp > 1:  # local batch split into micro-batches of 1 (torchtitan pipeline default: n_microbatches = pp)
            strategy = strategy.with_(micro_batch=max(1, mb // pp))
    training = Training(precision=precision, seq_len=seq, global_batch_seqs=gbs, flash_attention=True,
                        fp8_recipe=recipe)
    return model, training, system_of(row, gpus), strategy, framework


def nemo_flops_per_step(model: ModelArch, gbs: int, seq: int) -> float:
    """NeMo's MFU numerator (nemo/utils/flops_formulas.py): `llama3` for Llama, Korthikanti Eq. 7 for GPT-3."""
    if model.family == "gpt":
        return F.korthikanti_eq7_flops(gbs, seq, model.layers, model.hidden, model.vocab)
    L, h = model.layers, model.hidden
    return gbs * seq * L * h * h * (12 + 12 * model.kv_heads / model.heads + 18 * model.ffn / h + 12 * seq / h
                                    + 6 * model.vocab / (L * h))


def torchtitan_flops_per_token(model: ModelArch, seq: int) -> float:
    """torchtitan `get_num_flop_per_token`: 6 x (params - embedding) + 12 L H Q T."""
    return F.palm_flops_per_token(model.params_total - model.vocab * model.hidden, model.layers, model.heads,
                                  model.head_dim or model.hidden // model.heads, seq)


def predict(row: dict) -> float:
    model, training, system, strategy, framework = configure(row)
    style = torchtitan_style(row) if framework == "torchtitan" else None
    out = step_time_arrays(model, training, system, strategy, framework_style=style)
    step = float(np.asarray(out["step_s"]).reshape(-1)[0])
    gpus = whole(row["gpu_count"])
    tokens = training.global_batch_seqs * training.seq_len
    metric = row["metric"]
    if metric == "step_time":
        return step
    if metric == "tokens_per_sec_total":
        return tokens / step
    if metric == "tokens_per_sec_per_gpu":
        return tokens / step / gpus
    if metric == "mfu":
        if framework == "megatron-core":
            fl = nemo_flops_per_step(model, training.global_batch_seqs, training.seq_len)
            return 100.0 * fl / (step * gpus * system.peak(training.precision) * 1e12)
        fl = torchtitan_flops_per_token(model, training.seq_len) * tokens
        return 100.0 * fl / (step * gpus * system.peak(training.precision) * 1e12)
    raise ValueError(f"unknown metric {metric}")


def modern_rows(path: Path = DATA / "throughput.csv") -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [r for r in csv.DictReader(f) if r["source"].startswith(SOURCES)]


def cases(path: Path = DATA / "throughput.csv") -> list[Case]:
    out = []
    for row in modern_rows(path):
        c = Case(row["id"], source_key(row), row["metric"], num(row["value"]))
        c.predicted = predict(row)  # no row is skipped: a refusal is a failure of the estimator
        out.append(c)
    return out


def fits(path: Path = DATA / "throughput.csv") -> list[Fit]:
    """Each run's predicted peak memory against its card's usable memory (every run trained on real hardware)."""
    out = []
    for row in modern_rows(path):
        model, training, system, strategy, _ = configure(row)
        out.append(fit_of(row["id"], model, training, system, strategy))
    return out


def summary(cs: list[Case]) -> dict:
    by_src: dict[str, list[Case]] = {}
    for c in cs:
        by_src.setdefault(c.source, []).append(c)
        by_src.setdefault("dgxc (all)" if c.source.startswith("NeMo") else "torchtitan (all)", []).append(c)
    worst = sorted(cs, key=lambda c: -abs(c.err))[:5]
    return {"rows": len(cs), "mape": mape(cs),
            "by_source": {k: (len(v), mape(v)) for k, v in sorted(by_src.items())},
            "worst": [(c.row_id, c.metric, c.measured, c.predicted, 100.0 * c.err) for c in worst]}


def main() -> None:
    cs = cases()
    print(f"{'row':62s} {'metric':24s} {'measured':>10s} {'predicted':>10s} {'err%':>7s}")
    for c in cs:
        print(f"{c.row_id:62s} {c.metric:24s} {c.measured:10.4g} {c.predicted:10.4g} {100 * c.err:7.1f}")
    s = summary(cs)
    print(f"\nmodern stacks: {s['rows']} rows predicted, none skipped; MAPE {s['mape']:.1f}%")
    for k, (n, e) in s["by_source"].items():
        print(f"  {k:28s} n={n:3d}  MAPE {e:5.1f}%")
    print("  worst rows:")
    for w in s["worst"]:
        print(f"    {w[0]} {w[1]} measured {w[2]:.4g} predicted {w[3]:.4g} ({w[4]:+.1f}%)")


if __name__ == "__main__":
    main()
    print_fits(fits(), "NeMo dgxc and torchtitan runs")
