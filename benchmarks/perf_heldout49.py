"""Held-out check on published runs added 2026-12-05 (twenty-third batch: PEAK MEMORY of pretraining stacks; nothing is
fitted on them).

Source: Megatron-LM's functional-test golden values (NVIDIA/Megatron-LM tests/functional_tests/test_cases, read at
d98e8a64dd, 2026-08-22): every CI test logs `mem-allocated-bytes` and `mem-max-allocated-bytes` to tensorboard each
step (megatron/training/training.py training_log: torch.cuda.memory_stats()' allocated_bytes.all.current after the
step and allocated_bytes.all.peak), on the last rank (the writer lives on rank world_size - 1,
megatron/training/global_vars.py), and the golden file keeps the reference run's values with the test's full argument
list beside them (model_config.yaml) and its GPU count in the CI recipe (tests/test_utils/recipes/<platform>/gpt.yaml).
Rows: the two `gpt3_7b_*_memory_speed` tests, a 7B GPT (32 layers, hidden 4,096, GQA 8, GeLU MLP, vocabulary 131,073)
at 8,192 tokens on 8 GPUs, BF16 with the distributed optimizer, no recompute: TP 1 x PP 4 with 8 one-layer virtual
stages a rank (micro-batch 1) and TP 4 without sequence parallelism (micro-batch 2), each on DGX H100 (1 node of 8)
and DGX GB200 (2 trays of 4): the peak (scored against the estimate less the CUDA context, NCCL buffers and the
allocator's fragmentation: perf_heldout's `peak_allocated_gib`) and the allocated bytes after the step (the model
states: `allocated_after_step_gib`, printed, left out of accuracy_bands as every such row). Beside them the
nightly `nemotron3_5_lightning_nightly_tp1_pp1_cp1_ep8_dgx_gb200` test: Nemotron 3 Nano 30B-A3B's hybrid pattern (Mamba-2,
attention, 128-expert top-6 MoE layers, two MTP depths on one shared layer, the Pile's GPT-2 vocabulary) at EP 8 on 8
GB200 (2 trays of 4), micro-batch 2 x 8,192, BF16 with a bf16 gradient reduce, the HybridEP dispatcher, dropless
routing on real data: its peak and after-step figures at step 20. Data:
benchmarks/data/heldout_2026w_mcore_ci_memory.csv in heldout_pretrain.csv's columns (perf_heldout.job_of builds each
job); the model: heldout_models.yaml mcore-ci-gpt3-7b.

Not rows (read, said in docs/known-gaps.md 167): the release tests' golden values (mixtral_8x7b / 8x22b, the
DeepSeek-V3 proxy, gpt3_15b_8t: their GPU count is in no public recipe, and the distributed optimizer's share of the
model states depends on it), the tests run with `--attention-backend unfused` (no attention-kernel value holds
Megatron's unfused core attention), the GRPO tests (generation and training in one process), the 345M-class tests
(12 layers of hidden 512: 1-3 GiB peaks, mostly fixed buffers) and the iteration times beside the memory
(--deterministic-mode and NCCL_ALGO Ring, which no job field states).

Modelled since 2026-12-05 (docs/known-gaps.md 172): the 7B rows state the dropout their configs leave at Megatron-Core's
defaults (job hidden_dropout / attention_dropout 0.1: TransformerConfig, transformer_config.py at d98e8a64dd), whose
residual masks the memory model counts; the after-step figure is the estimate's `after_step_gib`, which holds the
distributed optimizer's fp32 copy of a bf16 gradient shard until the next zero_grad (the Nemotron test reduces in bf16).

Printed: each row (published, predicted, error), per-source MAPE, and what the two mechanisms add: the 7B peaks with the
dropout set to 0 (the estimate before the jobs stated it) and the after-step figures less the model states.

Sign: (predicted - published) / published, + = predicted too large.

Run: python benchmarks/perf_heldout49.py
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import perf_heldout as ph
import perf_heldout28 as p28
from harness import Case, mape, model_data, print_case_rows
from trainsizer.catalog import load_catalog
from trainsizer.estimate.memory import STEP_STATE_ITEMS, estimate_memory
from trainsizer.scenario import resolve_job

DATA = Path(__file__).resolve().parent / "data"
CI_MEMORY = DATA / "heldout_2026w_mcore_ci_memory.csv"
BATCH = ph.Batch((CI_MEMORY,))
rows, run_all = BATCH.rows, BATCH.run_all
SCORED = ("peak_allocated_gib",)  # the after-step rows are printed, not in accuracy_bands (its LEFT_OUT)
# the models whose test configs leave --hidden-dropout at Megatron-Core's 0.1 (transformer_config.py hidden_dropout);
# the Nemotron test states 0
DEFAULT_DROPOUT_MODELS = ("mcore-ci-gpt3-7b",)
# rows whose distributed optimizer reads a bf16 gradient buffer: its fp32 copy of the shard is the main parameters'
# .grad until the next step's zero_grad (megatron/core/optimizer/distrib_optimizer.py _copy_model_grads_to_main_grads,
# shard_model_grad.float())
BF16_GRAD_REDUCE = "grad_reduce_in_fp32=false"


def without_dropout() -> list[tuple[str, float, float]]:
    """(row id, measured, predicted with the dropout set to 0) of each peak row whose job states a dropout."""
    models, cat = model_data(ph.MODELS), load_catalog()
    out = []
    for r in rows():
        job = ph.job_of(r, models)
        if r["metric"] not in SCORED or not job.get("hidden_dropout"):
            continue
        sc = resolve_job({**job, "hidden_dropout": 0.0, "attention_dropout": 0.0}, cat)
        mem = estimate_memory(sc.model, sc.training, sc.system, sc.strategy)
        out.append((r["id"], float(r["value"]), ph.predicted_metric(r, {"time": {}, "memory": mem.to_dict()}, sc.model)))
    return out


# the same tests' peak after iteration 1 (golden values, step "1" of mem-max-allocated-bytes, GiB): the Adam moments are
# allocated in that step, so its forward / backward holds none (TP 1 x PP 4 7.25 GiB and TP 4 6.38 below the later
# steps': the moments' 4 bytes a parameter at DP 2)
FIRST_STEP_PEAKS_GIB = {"mcore_ci_gpt3_7b_tp1_pp4_h100_peak_allocated": 49.296,
                        "mcore_ci_gpt3_7b_tp1_pp4_gb200_peak_allocated": 49.109,
                        "mcore_ci_gpt3_7b_tp4_pp1_h100_peak_allocated": 46.836,
                        "mcore_ci_gpt3_7b_tp4_pp1_gb200_peak_allocated": 47.836}


def first_step_peaks(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> list[tuple[str, float, float]]:
    """(row id, the step-1 peak, the estimate's first-step figure: perf_heldout._first_step_peak) of each 7B peak row."""
    return [(c.row_id, FIRST_STEP_PEAKS_GIB[c.row_id], ph.predicted_metric(
        {**r, "metric": "peak_allocated_first_step_gib"}, res, None)) for c, res, r in run if c.row_id in FIRST_STEP_PEAKS_GIB]


def held_after_step(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> list[tuple[str, float, float]]:
    """(row id, measured, GiB the after-step figure holds beyond the model states) of each after-step row."""
    return [(c.row_id, c.measured, c.predicted - sum(float(res["memory"]["items"][k]["gib"]) for k in STEP_STATE_ITEMS
                                                     if k in res["memory"]["items"]))
            for c, res, r in run if c.metric == "allocated_after_step_gib"]


def main() -> None:
    run = run_all()
    cs = [c for c, _, _ in run]
    print("Megatron-LM CI golden values: a 7B GPT at 8,192 tokens on 8 GPUs, TP 1 x PP 4 (VPP 8) and TP 4, DGX H100 and "
          "GB200; a Nemotron 3 Nano-shaped hybrid MoE at EP 8 on 8 GB200 (GiB; held out, nothing fitted):")
    print_case_rows(cs, 52, "7.2f")
    print("\nper source and metric:")
    for src, group in p28.by_source(cs).items():
        for metric in dict.fromkeys(c.metric for c in group):
            sub = [c for c in group if c.metric == metric]
            print(f"  {src:56s} {metric:25s} n={len(sub)} MAPE {mape(sub):5.1f}%")
    print("\nwithout the dropout masks (the 7B configs leave Megatron-Core's hidden / attention dropout 0.1):")
    for rid, m, p in without_dropout():
        print(f"  {rid:52s} measured {m:7.2f} predicted {p:7.2f} ({100 * (p / m - 1):+.1f}%)")
    print("after the step, held beyond the model states (the distributed optimizer's fp32 copy of a bf16 gradient "
          "shard, until the next zero_grad):")
    for rid, m, held in held_after_step(run):
        print(f"  {rid:52s} measured {m:7.2f} held {held:6.2f} GiB")
    print("the peak of the first step (golden values' step 1; printed, not scored: the first optimizer step allocates "
          "the Adam moments):")
    for rid, m, p in first_step_peaks(run):
        print(f"  {rid:52s} measured {m:7.2f} predicted {p:7.2f} ({100 * (p / m - 1):+.1f}%)")
    peaks = [c for c in cs if c.metric in SCORED]
    worst = max(peaks, key=lambda c: abs(c.err))
    print(f"\nperf_heldout49: peak memory n={len(peaks)} MAPE {mape(peaks):.1f}%, worst {worst.row_id} "
          f"{100 * worst.err:+.1f}%; after-step model states n={len(cs) - len(peaks)} "
          f"MAPE {mape([c for c in cs if c.metric not in SCORED]):.1f}%; refused {sum(bool(c.skipped) for c in cs)}")


if __name__ == "__main__":
    main()
