"""Held-out check on published runs added 2026-12-06 (twenty-seventh batch: an RL framework's SFT trainer, FSDP2 with
per-layer torch.compile and full activation checkpointing, on H100, H200, B200 and an RTX A6000; nothing is fitted on
them), one source no benchmark held:

(1) PrimeIntellect-ai/prime-rl's nightly trainer benchmark: benchmarks/results/BENCHMARKS.md at b798a90d6 (2026-01-31,
'Last Updated: 2026-02-01') and the JSON of each run beside it (benchmarks/baselines/, measured 2026-01-15 in the image
primeintellect/prime-rl-jackmin@sha256:5a146f7d...), made by benchmarks/scripts/run_single_benchmark.py from
.github/workflows/benchmarks.yaml: the SFT trainer (src/prime_rl/trainer/sft/train.py, code read at d8f290ef0) on fake
data, 2 micro-batches of 1 x S tokens a GPU a step, --model.compile (each decoder layer compiled; the transformers
layers ran eager: their flash-attention branch breaks the graph inside the checkpointed layer, docs/known-gaps.md
345 (d)), --model.ac (every layer checkpointed), FSDP2 with fp32 master weights and bf16 compute, torch's default AdamW (foreach on CUDA,
optimizer_impl foreach: prime-rl's optim.py gives neither fused nor foreach); Qwen3-0.6B on one H100 / one RTX A6000 and
Qwen3-4B-Instruct-2507 on 8 H100 / H200 / B200 through transformers' Qwen3 (flash-attention 2 or 3), and
Qwen3-30B-A3B-Instruct-2507 on 8 H200 through prime-rl's own MoE model (torchtitan's MoE layer, grouped GEMMs):
tokens/s a GPU (the JSON's throughput mean over steps 2-4 / GPUs) and torch.cuda.max_memory_reserved (rank 0).
The loss: the LM head's bf16 logits cast to fp32 outside the model and held by the caller through the backward,
CrossEntropyLoss on the fp32 copy (loss_impl upcast-held).

Data: benchmarks/data/heldout_2027a_prime_rl.csv in heldout_pretrain.csv's columns (perf_heldout.job_of builds each job:
a full fine-tune's step is a pre-training step; every setting the source does not state is named in the row's
`assumed`); models beside the presets: heldout_models.yaml qwen3-0.6b, qwen3-4b-instruct-2507.

Not rows (read, said in docs/known-gaps.md 197): the same table's RL rows (the RL trainer: its fused, chunked LM-head
log-probabilities and the RL loss, fake rollouts) and RL LoRA rows (multi-adapter LoRA, max_concurrent_runs 4), the
activation-offloading rows, the runs whose JSON says success false (the FA3 runs on B200; Qwen3-0.6B at 65,536 on one
H100, out of memory: printed as a fit check), the INTELLECT-3 / Qwen3-235B-A22B rows (RL LoRA only).

Printed: each row (published, predicted, error), the summary with the worst rows' estimated steps, each run's step
measured against predicted (the gap in seconds: what the estimate leaves out, a constant or a rate), the same job's
throughput on another GPU over the H100's, the trainer's own timed window (the JSON's step_time) inside each
throughput step, the MoE run against the dense run of the same trainer, GPUs and tokens (measured and predicted steps,
model TFLOP/s a GPU) with the most each mechanism read in prime-rl's MoE code can add (known-gaps 204: bounds from the
estimate's own figures and two microbenchmark floors, not a model), and whether the out-of-memory run is said not to
fit.

Sign: (predicted - published) / published; + = predicted too fast (tokens/s) or too large (memory).

Run: python benchmarks/perf_heldout53.py
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import perf_heldout as ph
import perf_heldout28 as p28
from harness import Case, mape, model_data
from trainsizer.catalog import load_catalog
from trainsizer.estimate import comm, compute
from trainsizer.estimate.calibration import load_constants, rates
from trainsizer.evaluate import evaluate
from trainsizer.scenario import resolve_job

DATA = Path(__file__).resolve().parent / "data"
ROWS = DATA / "heldout_2027a_prime_rl.csv"
BATCH = ph.Batch((ROWS,))
rows, run_all = BATCH.rows, BATCH.run_all
REFERENCE_GPU = "h100-sxm-80gb"
# the failed run of the same table: Qwen3-0.6B SFT at 65,536 on one H100 80GB HBM3 ran out of memory (its JSON's
# error_reason: 'Tried to allocate 37.09 GiB. GPU 0 has a total capacity of 79.18 GiB of which 34.48 GiB is free')
OOM_FROM, OOM_SEQ_LEN, OOM_CAPACITY_GIB = "primerl_2026-01_1xh100_qwen3_0.6b_sft_8192_fa3", 65536, 79.18
# the MoE run and the dense run of the same trainer, GPUs, sequence length and tokens a step (known-gaps 204)
MOE_ROW = "primerl_2026-01_8xh200_qwen3_30b_a3b_sft_16384_fa3"
DENSE_ROW = "primerl_2026-01_8xh200_qwen3_4b_sft_16384_fa2"
# torch._grouped_mm's MoE forward at Qwen3-30B-A3B's expert shape (128 experts, hidden 2,048, expert FFN 768, top-8)
# on one H100, bf16, 32,768 tokens: 10.218 ms, 242.12 TFLOPS counting the three grouped GEMMs' FLOPs over the whole
# forward, its token gather / scatter glue included (ByteDance-Seed/VeOmni PR 460, 2026-02-06): a floor on the rate
GROUPED_MM_H100_TFLOPS = 242.12
# aten index_add_ / scatter_add bf16 atomics under high contention, B200 (perf_constants.yaml
# gemm.expert_bias_index_add, pytorch PR 182818): a floor on the rate of the MoE's bf16 scatter_add, which Inductor
# hands to aten in torch 2.9 (torch/_inductor/utils.py needs_fallback_due_to_atomic_add_limitations: bf16 outside
# fbcode; pytorch PR 167380, 2025-11, lifted it on sm90+ after 2.9)
SCATTER_ADD_ELEMENTS_PER_S = 47.6e9


def step_gaps(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> list[tuple[str, float, float]]:
    """(row, measured, predicted) step seconds of each timed row: the step's tokens a GPU over the rate."""
    out = []
    for c, _, r in run:
        if c.skipped or c.metric != "tokens_per_s_per_gpu":
            continue
        tokens = int(r["global_batch_seqs"]) * int(r["seq_len"]) / int(r["gpu_count"])
        out.append((c.row_id, tokens / c.measured, tokens / c.predicted))
    return out


def card_ratios(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> list[tuple[str, str, float, float]]:
    """(job, GPU, measured, predicted tokens/s on that GPU over the same job's on the H100): rows that differ only in
    the accelerator and the attention kernel the run could use there."""
    same = ("model", "gpu_count", "seq_len", "global_batch_seqs", "metric")
    done = [(c, r) for c, _, r in run if not c.skipped and c.metric == "tokens_per_s_per_gpu"]
    out = []
    for c, r in done:
        for b, br in done:
            if br["accelerator"] == REFERENCE_GPU and r["accelerator"] != REFERENCE_GPU and \
                    all(r[k] == br[k] for k in same):
                out.append((f"{r['model']} {r['seq_len']}", r["accelerator"], c.measured / b.measured,
                            c.predicted / b.predicted))
    return out


def timed_window(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> list[tuple[str, float, float, float]]:
    """(row, throughput step, the trainer's timed window, predicted step) seconds of each timed row. The throughput is
    PerfCounter's tokens over the time between count_tokens calls (perf.py), so it holds all the step; the JSON's
    step_time (its mean over the same steps 2-4, quoted in the row's source_locator) is sft/train.py's window from
    step_start_time to after the metrics' all-reduces, without the logging and .item() reads after it."""
    out = []
    for rid, measured, predicted in step_gaps(run):
        row = next(r for _, _, r in run if r["id"] == rid)
        window = float(re.search(r"step_time mean ([0-9.]+) s", row["source_locator"]).group(1))
        out.append((rid, measured, window, predicted))
    return out


def moe_against_dense(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> dict[str, tuple[float, float]]:
    """The MoE run against the dense run of the same trainer, GPUs, length and tokens a step: (MoE, dense) measured
    and predicted steps (s), the estimate's model FLOPs a token and the measured model TFLOP/s a GPU."""
    by_id = {c.row_id: (c, res, r) for c, res, r in run}
    out: dict[str, list[float]] = {"measured_s": [], "predicted_s": [], "flops_per_token": [], "measured_tflops": []}
    for rid in (MOE_ROW, DENSE_ROW):
        c, res, r = by_id[rid]
        gpus, tokens = int(r["gpu_count"]), int(r["global_batch_seqs"]) * int(r["seq_len"])
        measured = tokens / gpus / c.measured
        out["measured_s"].append(measured)
        out["predicted_s"].append(res["time"]["step_s"])
        out["flops_per_token"].append(res["time"]["model_flops_per_step"] / tokens)
        out["measured_tflops"].append(res["time"]["model_flops_per_step"] / gpus / measured / 1e12)
    return {k: (v[0], v[1]) for k, v in out.items()}


def moe_bounds(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> list[tuple[str, float]]:
    """(mechanism, at most the seconds a step it adds) for the MoE run, each read in its code (known-gaps 204), each a
    bound from the estimate's own figures: FSDP2's collectives of each micro-batch (2 all-gathers of every parameter in
    bf16, one fp32 reduce-scatter, EP 1: the 128 experts sharded with their block) exposed whole, less the exposed
    collectives the estimate charges; the routed experts' grouped GEMMs (forward, recompute, backward at twice the
    forward) at the H100 microbenchmark floor instead of the estimate's rate; the MoE's three bf16 scatter_adds a
    layer and micro-batch (out.scatter_add, again in the re-run, and torch.gather's backward) at aten's
    high-contention atomic rate."""
    c, res, r = next((c, res, r) for c, res, r in run if c.row_id == MOE_ROW)
    job = resolve_job(ph.job_of(r, model_data(ph.MODELS)), load_catalog([]))
    system, m = job.system, job.model
    rt = rates(system, "bf16")
    n, mb = int(r["gpu_count"]), 2.0
    ag = comm.all_gather_time(m.params_total * 2.0, n, n, rt, system)
    rs = comm.reduce_scatter_time(m.params_total * 4.0, n, n, rt, system)
    fsdp = float(mb * (2.0 * ag + rs)) - res["time"]["breakdown_s"]["dp_comm"]
    routed = int(r["seq_len"]) * m.experts_per_token  # routed rows a micro-batch on each GPU (micro-batch 1 x S)
    share = load_constants().grouped_mm_over_dense(system.accelerator)  # the estimate's grouped share (Hopper: 1)
    rt_e = dataclasses.replace(rt, gemm_flops=rt.gemm_flops * share)
    gemms = [(m.expert_ffn, m.hidden), (m.expert_ffn, m.hidden), (m.hidden, m.expert_ffn)]  # w1, w3, w2: (N, K)
    fwd_bwd = [compute.linear_gemms(routed / m.experts, nn, kk, rt_e, batch=m.experts) for nn, kk in gemms]
    est = sum(float(2.0 * f + b) for f, b in fwd_bwd)  # forward, its re-run under full recompute, backward
    flops = sum(2.0 * routed * nn * kk for nn, kk in gemms)
    passes = m.layers * mb
    grouped = passes * (4.0 * flops / (GROUPED_MM_H100_TFLOPS * 1e12) - est)
    scatter = passes * 3.0 * routed * m.hidden / SCATTER_ADD_ELEMENTS_PER_S
    return [("FSDP2 collectives exposed whole", fsdp), ("grouped GEMMs at the H100 microbenchmark floor", grouped),
            ("bf16 scatter_add at aten's high-contention atomic rate", scatter)]


def print_moe(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> None:
    """The MoE run against the dense one and the bounds on what the read mechanisms add."""
    d = moe_against_dense(run)
    (mm, dm), (mp, dp) = d["measured_s"], d["predicted_s"]
    print("\nthe MoE run against the dense run (same trainer, 8 H200, 16,384, tokens a step):")
    print(f"  step MoE / dense measured {mm / dm:.3f}, predicted {mp / dp:.3f}; model FLOPs a token "
          f"{d['flops_per_token'][0]:.3g} / {d['flops_per_token'][1]:.3g}; measured model TFLOP/s a GPU "
          f"{d['measured_tflops'][0]:.0f} / {d['measured_tflops'][1]:.0f}")
    print(f"  the MoE step's gap {mm - mp:+.3f} s; at most, a step, each mechanism read in its code adds:")
    bounds = moe_bounds(run)
    for what, s in bounds:
        print(f"    {what:58s} {s:+.3f} s")
    print(f"    {'sum of the bounds':58s} {sum(s for _, s in bounds):+.3f} s")


def oom_check() -> tuple[float, bool]:
    """(the estimate's per-GPU GiB, fits) of the out-of-memory run: its 8,192 twin at 65,536 tokens."""
    r = next(x for x in rows() if x["id"] == OOM_FROM)
    job = ph.job_of(dict(r, seq_len=str(OOM_SEQ_LEN)), model_data(ph.MODELS))
    catalog = load_catalog([])
    result = evaluate(resolve_job(job, catalog), catalog)
    return float(result["memory"]["per_gpu_gib"]), bool(result["memory"]["fits"])


def main() -> None:
    run = run_all()
    p28.print_rows(run)
    p28.print_summary(run, "Held-out runs, twenty-seventh batch (prime-rl's SFT trainer; nothing fitted)", 62)
    memory = [c for c, _, _ in run if c.metric in ph.MEMORY_METRICS]
    print(f"peak memory (max_memory_reserved): n={sum(not c.skipped for c in memory)} MAPE {mape(memory):.1f}%")
    print("\neach run's step, measured vs predicted (s; the gap is what the estimate leaves out):")
    for rid, m, p in step_gaps(run):
        print(f"  {rid:52s} measured {m:7.3f} predicted {p:7.3f}  gap {m - p:+7.3f}")
    print("\nthe same job on another GPU over the H100 (tokens/s; measured vs predicted):")
    for job, gpu, m, p in card_ratios(run):
        print(f"  {job:34s} {gpu:16s} measured {m:.3f} predicted {p:.3f}")
    print("\nthe trainer's timed window (step_time, to after the metrics' all-reduces) inside the throughput's "
          "step (s):")
    for rid, measured, window, predicted in timed_window(run):
        print(f"  {rid:52s} step {measured:7.3f} window {window:7.3f} (outside {measured - window:+.3f})  "
              f"predicted {predicted:7.3f}  gap inside the window {window - predicted:+7.3f}")
    print_moe(run)
    gib, fits = oom_check()
    print(f"\nthe run that ran out of memory (Qwen3-0.6B, 65,536 on one H100, {OOM_CAPACITY_GIB} GiB): estimated "
          f"{gib:.1f} GiB, {'said to fit (wrong)' if fits else 'said not to fit'}")
    p28.print_pairs_and_refusals(run)


if __name__ == "__main__":
    main()
