"""Held-out check on MLPerf Training closed-division submissions on NVIDIA's NeMo implementation, v5.0 (published
2025-06-04) and v5.1 (2025-11-12). NVIDIA's own: Llama 3.1 405B pre-training on 512 to 8,192 H100 and 256 / 512 GB200,
Llama 3.1 8B pre-training on 72 and 512 GB200 / GB300, Llama 2 70B LoRA on 8 B200 and 8 to 512 GB200 / GB300; other
submitters on the same code (v5.1): Nebius H200 405B on 512 / 1,024, University of Florida DGX B200 405B, 8B and LoRA
on 8 to 448 (the 8B at every scale it ran, 8 to 256 GPUs), Lenovo B300 LoRA on 8. FP8, and NVFP4 where named below; all NeMo / Megatron-Core with Transformer
Engine (the `megatron-core` style). No constant was fitted on them.

Data: benchmarks/data/nvidia_mlperf.csv (one row per system, benchmark and scale: the median of the result logs'
per-step train_step_time -- custom_callbacks.py DeltaTimingCallback, host time from one train batch end to the next --,
per-block where a log has no per-step figure (the LoRA runs); the layout from the submission's config_*.sh and its
training script, and an `assumed` column saying what the submission does not state or what a job cannot say). A
block's figure (mlperf_common logging.py: block time / steps) also counts the pause before each evaluation: at 5,120
GB200 GPUs, whose blocks after the first are 15 steps, 5.3 s a block, 2.58 against 2.23 s a step; 0-1.5% elsewhere.
eval_step_s: the median of the logs' validation_step_time from each evaluation's fourth step on (the first ones run
the graph capture), for the pre-training rows without a pipeline: a forward and the loss of the global batch, no
backward and no gradient collective; printed beside the estimate's forward compute (step_time 'forward_compute'). The v5.1 NVFP4 submissions (fp8_recipe nvfp4, Transformer Engine NVFP4BlockScaling; 9 rows, added
after the recipe, held out like the rest): NVIDIA's Llama 3.1 405B on 512 GB300 and 512 / 2,560 / 5,120 GB200 and 8B on
8 GB300 / GB200, Lenovo's 8B on 8 B300 and on two 8-B200 systems. Left out: the 8-GPU LoRA NVFP4 runs, which heal from
FP4 to FP8 at step 350 (HEALING_ITER, HEALING_PRECISION FP8_DS in config_common_fp4.sh) and start from a pre-quantized
frozen base (PRE_QUANTIZED_MODEL, custom_callbacks.py), which no job option states.

What the rows state from the configs beyond the layout: FP8 dot-product attention (FP8_DPA with NVTE_FP8_DPA_BWD:
strategy.fp8_attention, the LoRA runs), the SwiGLU input saved in FP8 (FP8_ACT: strategy.fp8_activation_store, the
8-GPU LoRA runs), CUDA graphs (strategy.cuda_graphs: per-layer MCORE_CUDA_GRAPH under NeMo 25.04, full-iteration
FULL_CUDA_GRAPH and the v5.1 LoRA code's MCORE_CUDA_GRAPH, whose CUDA_GRAPH_SCOPE defaults to full_iteration), the
LoRA runs' context parallelism as Transformer Engine's all-to-all (CP_COMM_TYPE a2a: the csv's cp_comm_type column,
strategy.cp_comm_type; blank = NeMo's default p2p ring), and the LoRA runs' frozen base built in FP8 (custom_llama.py CustomLlamaModel.configure_model wraps the model in
te.fp8_model_init whenever FP8 is on, in v5.0 and v5.1 alike; v5.1's FP8_PARAM_GATHER 0 is the optimizer's
all-gather flag, not the weights' storage), and Transformer Engine's op fuser (USE_TE_OPS in the v5.1 LoRA and 8B
config_common*.sh, none in v5.0's: the csv's te_op_fuser column, strategy.te_op_fuser: the MLP activation writes only
its FP8 operands, and at TP 1 NeMo's LoRA adapters run fused into the base GEMMs, TEFusedLoRALinear). The v5.0 GB200 405B rows source a config_common_blackwell.sh the
submission does not include: their FP8 recipe is custom.yaml's default, delayed scaling; the MXFP8 estimate is
printed beside them.

Where per-GPU throughput goes at scale (step_lines): the rows of one benchmark, system and layout at several scales
differ only in m, the micro-batches a pipeline runs per step, so step = a m + b through them splits the step into the
per-micro-batch time a and a per-step cost b, measured and predicted; strong scaling at a fixed global batch shrinks m,
so b is what the per-GPU rate loses. The 405B series have the estimate's a within 2% on H100 / H200 (GB200 NVFP4: 23% too
slow a micro-batch) and its b 0.09-0.14 s a step short on every part (H100 0.14, H200 0.09, GB200 NVFP4 0.10;
IBM+CoreWeave's GB200, perf_heldout26: 0.13 s), after the interleaved schedule's 2(p v - 1) fill and drain transfers
(pipeline.p2p_transfers_unhidden; 2(p - 1) before 2026-12-02, when the gap was 0.16-0.20 s). Under each series the
predicted b is split by term (step_terms: bubble, p2p, DP, optimizer, layers): on H100 0.168 + 0.037 + 0.246 s.

Run: python benchmarks/perf_mlperf.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from harness import Case, Fit, job_fits, mape, print_fits
from trainsizer.catalog import load_catalog
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.scenario import resolve_job

DATA = Path(__file__).resolve().parent / "data" / "nvidia_mlperf.csv"
# the csv's cuda_graph column as strategy.cuda_graphs: MCORE_CUDA_GRAPH under NeMo 25.04 = Megatron-Core's per-layer
# graphs (CudaGraphManager); FULL_CUDA_GRAPH, and MCORE_CUDA_GRAPH under the v5.1 LoRA code (CUDA_GRAPH_SCOPE
# default full_iteration, FullCudaGraphWrapper in custom_callbacks.py) = one graph for the step's forward-backward
CUDA_GRAPHS = {"none": "none", "mcore": "layer", "full-iteration": "full_iteration"}


def job(r: dict[str, str], fp8_recipe: str | None = None) -> dict:
    """The row as a job (fp8_recipe: the row's, or the one given for the alternative printed beside it)."""
    lora = r["task"] == "lora"
    slots = r["pipeline_slots"] == "1"
    out = {
        "model": r["model"], "method": "lora" if lora else "pretrain", "seq_len": int(r["seq_len"]),
        "data": {"samples": 1e5, "avg_tokens": int(r["seq_len"])} if lora else {"tokens": 1e9},
        "global_batch": {"sequences": int(r["global_batch_seqs"])}, "precision": r["precision"],
        "fp8_recipe": fp8_recipe or r["fp8_recipe"],
        "hardware": {"accelerator": r["accelerator"], "count": int(r["gpu_count"]), "network": r["network"]},
        "strategy": {"tp": int(r["tp"]), "pp": int(r["pp"]), "cp": int(r["cp"]), "vpp": int(r["vpp"]),
                     "micro_batch": int(r["micro_batch"]), "recompute": "none", "framework": "megatron-core",
                     # every submission: use_distributed_optimizer True, MegatronMixedPrecision
                     # grad_reduce_in_fp32=False (pretrain.py / train.py)
                     "distributed_optimizer": True, "grad_reduce_in_fp32": False,
                     "fp8_param_allgather": r["fp8_params"] == "1",
                     "pipeline_embedding_layer": slots, "pipeline_loss_layer": slots,
                     "tp_comm_overlap": r["tp_comm_overlap"] == "1", "loss_impl": r["loss_impl"],
                     # FP8_DPA with NVTE_FP8_DPA_BWD; FP8_ACT (activation_func_fp8_input_store)
                     "fp8_attention": r["fp8_attention"] == "1",
                     "fp8_activation_store": r["fp8_activation_store"] == "1",
                     "cuda_graphs": CUDA_GRAPHS[r["cuda_graph"]],
                     # CP_COMM_TYPE a2a (the LoRA configs); blank: NeMo's default p2p ring
                     "cp_comm_type": r.get("cp_comm_type") or None,
                     # USE_TE_OPS (use_transformer_engine_op_fuser) in the config's config_common*.sh: the csv's
                     # te_op_fuser column, 1 where the v5.1 / v6.0 LoRA and 8B configs set it; blank = off
                     "te_op_fuser": r.get("te_op_fuser") == "1"},
    }
    if r.get("wgrad_deferral_limit"):
        # DEFER_EMBEDDING_WGRAD_COMPUTE True with WGRAD_DEFERRAL_LIMIT (0: every micro-batch) in the config the row
        # names (config_common*.sh; custom.yaml's default where the config sets neither); blank: off
        out["strategy"] |= {"defer_embedding_wgrad": True, "wgrad_deferral_limit": int(r["wgrad_deferral_limit"])}
    if lora:
        # target_modules ["linear_proj", "linear_qkv"]: the fused QKV and the output projection
        # LORA_A2A=1 in every submission's config_common.sh (NVIDIA v5.0 / v5.1, Oracle, Dell, Cisco): NeMo's LoRA
        # a2a_experimental, the row-parallel adapter's output all-to-alled under sequence parallelism
        out["lora"] = {"rank": int(r["lora_rank"]), "targets": r["lora_targets"].split(";"), "a2a": True}
    return out


def _predict(r: dict[str, str], cat, fp8_recipe: str | None = None) -> float:
    sc = resolve_job(job(r, fp8_recipe), cat)
    o = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
    step = float(np.asarray(o["step_s"]).reshape(-1)[0])
    return sc.training.tokens_per_step / step / sc.system.gpus


def forward_check() -> list[tuple[str, float, float, float | None, float | None]]:
    """(row, logged evaluation step s, the estimate's forward compute s, logged / estimated step s left outside the
    layers) for the rows whose logs time evaluation steps without a pipeline (eval_step_s): one forward and the loss
    of the global batch under the run's graphs, no backward and no gradient collective, so it checks the layer apart
    from the DP terms. Outside the layers: the step less its layer time (compute and TP / CP / EP comm), the logged
    one taken as the logged forward times the estimate's layer time / forward compute (its backward / forward
    ratio, an assumption), against the estimate's DP, optimizer, pipeline and data terms; None where the run replays
    per-layer graphs, whose estimated layer time holds a host floor that its forward compute does not."""
    cat = load_catalog()
    out = []
    for r in _rows():
        if not r["eval_step_s"]:
            continue
        sc = resolve_job(job(r), cat)
        o = {k: float(np.asarray(v).reshape(-1)[0]) for k, v in
             step_time_arrays(sc.model, sc.training, sc.system, sc.strategy).items()}
        layers = o["compute"] + o["tp_comm"] + o["cp_comm"] + o["ep_comm"]
        ev = float(r["eval_step_s"])
        whole = r["cuda_graph"] == "full-iteration"
        out.append((r["id"], ev, o["forward_compute"],
                    float(r["step_s"]) - ev * layers / o["forward_compute"] if whole else None,
                    o["step_s"] - layers if whole else None))
    return out


def _rows() -> list[dict[str, str]]:
    return list(csv.DictReader(DATA.open(encoding="utf-8")))


def cases() -> list[Case]:
    cat = load_catalog()
    out = []
    for r in _rows():
        c = Case(r["id"], r["source_key"], "tokens_per_sec_per_gpu", float(r["tokens_per_sec_per_gpu"]))
        c.predicted = _predict(r, cat)
        out.append(c)
    return out


def mxfp8_alternative() -> list[tuple[str, float, float]]:
    """(row, measured, predicted under MXFP8) for the rows whose FP8 recipe is assumed (v5.0 GB200 405B)."""
    cat = load_catalog()
    return [(r["id"], float(r["tokens_per_sec_per_gpu"]), _predict(r, cat, "mxfp8"))
            for r in _rows() if r["accelerator"] in ("gb200", "gb300") and r["fp8_recipe"] == "delayed"
            and r["task"] == "pretrain"]


def fits() -> list[Fit]:
    """Each row's predicted peak memory against the card's usable memory (every row ran on real hardware)."""
    return job_fits((r["id"], job(r)) for r in _rows())


def scaling(cs: list[Case]) -> list[tuple[str, float, float]]:
    """(pair, measured, predicted per-GPU throughput ratio) of one benchmark and system at two scales."""
    by = {c.row_id: c for c in cs}
    out = []
    for c in cs:
        stem, n = c.row_id.rsplit("_", 1)
        smaller = [x for x in cs if x.row_id.rsplit("_", 1)[0] == stem and int(x.row_id.rsplit("_", 1)[1][:-3])
                   < int(n[:-3])]
        if smaller:
            base = min(smaller, key=lambda x: int(x.row_id.rsplit("_", 1)[1][:-3]))
            out.append((f"{stem} {n} / {base.row_id.rsplit('_', 1)[1]}", c.measured / base.measured,
                        c.predicted / by[base.row_id].predicted))
    return out


def micro_batches(r: dict[str, str]) -> float:
    """Micro-batches a pipeline runs per step: global batch / (data parallel x micro-batch), data parallel = GPUs /
    (TP x PP x CP)."""
    dp = int(r["gpu_count"]) // (int(r["tp"]) * int(r["pp"]) * int(r["cp"]))
    return int(r["global_batch_seqs"]) / (dp * int(r["micro_batch"]))


def step_lines(rows: list[dict[str, str]], tokens_per_gpu: dict[str, tuple[float, float]]
               ) -> list[tuple[str, int, tuple[float, float], tuple[float, float]]]:
    """Where per-GPU throughput goes as a run scales out: for each benchmark and system run at two or more scales
    with one layout (TP, PP, CP, VPP, micro-batch) and different micro-batch counts m, the least-squares line
    step = a m + b through its rows (the step from tokens/s/GPU: global batch x sequence / rate / GPUs), measured
    and predicted: a is the per-micro-batch time, b what a step costs whatever its m (pipeline fill and drain,
    exposed gradient and parameter collectives, optimizer, host). Strong scaling at a fixed global batch shrinks m,
    so b's share grows. Returns (group, rows, (a, b) measured, (a, b) predicted), seconds; tokens_per_gpu:
    row id -> (measured, predicted)."""
    out = []
    for name, rs in _series(rows).items():
        m = np.array([micro_batches(r) for r in rs])
        tokens = np.array([int(r["global_batch_seqs"]) * int(r["seq_len"]) / int(r["gpu_count"]) for r in rs])
        lines = [tuple(np.polyfit(m, tokens / np.array([tokens_per_gpu[r["id"]][i] for r in rs]), 1))
                 for i in (0, 1)]
        out.append((name, len(rs), lines[0], lines[1]))
    return out


# the estimate's step terms (step_time_arrays) that step_terms splits the predicted b into; "other" = the rest
STEP_TERMS = {"bubble": ("pp_bubble",), "p2p": ("pp_comm",), "DP": ("dp_comm",), "optimizer": ("optimizer",),
              "layers": ("compute", "tp_comm", "cp_comm", "ep_comm", "act_offload")}


def step_terms(rows: list[dict[str, str]], job_of=job) -> dict[str, dict[str, float]]:
    """The predicted per-step cost b of each step_lines series split by term: for each term group of STEP_TERMS
    (and "other", what the step holds beyond them), the intercept of its least-squares line against m over the
    series' rows, so the groups add up to the predicted b. `job_of` builds a row's job (this file's `job`)."""
    cat = load_catalog()
    out: dict[str, dict[str, float]] = {}
    for name, rs in _series(rows).items():
        m = np.array([micro_batches(r) for r in rs])
        arrays = []
        for r in rs:
            sc = resolve_job(job_of(r), cat)
            arrays.append({k: float(np.asarray(v).reshape(-1)[0]) for k, v in
                           step_time_arrays(sc.model, sc.training, sc.system, sc.strategy).items()})
        parts = {g: np.array([sum(a[k] for k in keys) for a in arrays]) for g, keys in STEP_TERMS.items()}
        parts["other"] = np.array([a["step_s"] for a in arrays]) - sum(parts.values())
        out[name] = {g: float(np.polyfit(m, v, 1)[1]) for g, v in parts.items()}
    return out


def _series(rows: list[dict[str, str]]) -> dict[str, list[dict[str, str]]]:
    """Rows of one benchmark, system and layout (TP, PP, CP, VPP, micro-batch) at two or more micro-batch counts."""
    groups: dict[tuple, list[dict[str, str]]] = {}
    for r in rows:
        key = (r["id"].rsplit("_", 1)[0], *(r[c] for c in ("tp", "pp", "cp", "vpp", "micro_batch")))
        groups.setdefault(key, []).append(r)
    return {key[0]: rs for key, rs in groups.items() if len({micro_batches(r) for r in rs}) >= 2}


def print_step_lines(rows: list[dict[str, str]], tokens_per_gpu: dict[str, tuple[float, float]], job_of=job) -> None:
    print("step = a x micro-batches + b over one benchmark, system and layout at several scales (s):")
    terms = step_terms(rows, job_of)
    for name, n, (am, bm), (ap, bp) in step_lines(rows, tokens_per_gpu):
        print(f"  {name:40s} n={n} per micro-batch measured {am:.4f} predicted {ap:.4f}; "
              f"per step measured {bm:.3f} predicted {bp:.3f}")
        print("    predicted b by term: " + ", ".join(f"{g} {v:.3f}" for g, v in terms[name].items()))


PAIRS = (  # (numerator, denominator): the same benchmark, layout and code on two parts or recipes
    ("mlperf5.1_gb300_llama31_8b_fp8_72gpu", "mlperf5.1_gb200_llama31_8b_fp8_72gpu"),
    ("mlperf5.1_gb300_llama2_70b_lora_fp8_72gpu", "mlperf5.1_gb200_llama2_70b_lora_fp8_72gpu"),
    ("mlperf5.1_gb300_llama31_8b_nvfp4_8gpu", "mlperf5.1_gb200_llama31_8b_nvfp4_8gpu"),
    ("mlperf5.1_b300_llama31_8b_nvfp4_8gpu", "mlperf5.1_b200_llama31_8b_nvfp4_lenovo-sr680a_8gpu"),
    # NVFP4 over FP8 current scaling, 8B on 8 B200 at MBS 2 (Lenovo's and University of Florida's DGX B200)
    ("mlperf5.1_b200_llama31_8b_nvfp4_lenovo-sr680a_8gpu", "mlperf5.1_b200_llama31_8b_fp8_8gpu"),
)


def part_pairs(cs: list[Case]) -> list[tuple[str, float, float]]:
    """(pair, measured, predicted per-GPU throughput ratio) of PAIRS present in the file."""
    by = {c.row_id: c for c in cs}
    return [(f"{a.replace('mlperf5.1_', '')} / {b.split('_')[1]}", by[a].measured / by[b].measured,
             by[a].predicted / by[b].predicted) for a, b in PAIRS if a in by and b in by]


def main() -> None:
    cs = cases()
    print(f"{'row':46s} {'measured':>9s} {'predicted':>9s} {'err%':>7s}")
    for c in cs:
        print(f"{c.row_id:46s} {c.measured:9.0f} {c.predicted:9.0f} {100 * c.err:+7.1f}")
    for rid, m, p in mxfp8_alternative():
        print(f"  assumed recipe: {rid} under MXFP8 instead of delayed scaling: {p:.0f} ({100 * (p - m) / m:+.1f}%)")
    print(f"\nMLPerf Training v5.0 / v5.1 on NVIDIA's code (held out): n={len(cs)} MAPE {mape(cs):.1f}%, 0 refused")
    fp8 = [c for c in cs if "_nvfp4_" not in c.row_id]
    fp4 = [c for c in cs if "_nvfp4_" in c.row_id]
    print(f"  FP8 rows n={len(fp8)} MAPE {mape(fp8):.1f}%; NVFP4 rows n={len(fp4)} MAPE {mape(fp4):.1f}%")
    for src in dict.fromkeys(c.source for c in cs):
        sub = [c for c in cs if c.source == src]
        print(f"  {src:88s} n={len(sub):2d} MAPE {mape(sub):5.1f}%")
    for part in dict.fromkeys(c.row_id.split("_")[1] for c in cs):
        sub = [c for c in cs if c.row_id.split("_")[1] == part]
        print(f"  {part:8s} n={len(sub):2d} MAPE {mape(sub):5.1f}%")
    print("one benchmark and system at two scales (per-GPU throughput ratio, measured vs predicted):")
    for name, meas, pred in scaling(cs):
        print(f"  {name:52s} measured {meas:.3f} predicted {pred:.3f}")
    print_step_lines(_rows(), {c.row_id: (c.measured, c.predicted) for c in cs})
    print("same benchmark and layout on two parts (per-GPU throughput ratio, measured vs predicted):")
    for name, meas, pred in part_pairs(cs):
        print(f"  {name:60s} measured {meas:.3f} predicted {pred:.3f}")
    print("forward only: the logs' evaluation steps (forward + loss, no backward, no gradient collective) against the "
          "estimate's forward compute, and the step outside the layers (DP, optimizer; the logged one through the "
          "estimate's backward / forward ratio), ms:")
    for rid, ev, fwd, rest_m, rest_p in forward_check():
        rest = "" if rest_m is None else f"  outside the layers: logged {1e3 * rest_m:5.1f} estimate {1e3 * rest_p:5.1f}"
        print(f"  {rid:50s} logged {1e3 * ev:6.1f} estimate {1e3 * fwd:6.1f} ({100 * (fwd - ev) / ev:+5.1f}%){rest}")
    print("worst rows:")
    for c in sorted(cs, key=lambda c: -abs(c.err))[:5]:
        print(f"  {c.row_id:46s} {100 * c.err:+7.1f}%")
    print_fits(fits(), "MLPerf Training v5.0 / v5.1 on NVIDIA's code")


if __name__ == "__main__":
    main()
