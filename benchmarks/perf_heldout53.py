"""Held-out check on published runs added 2026-12-06 (twenty-seventh batch: an RL framework's SFT trainer, FSDP2 with
per-layer torch.compile and full activation checkpointing, on H100, H200, B200 and an RTX A6000; nothing is fitted on
them), one source no benchmark held:

(1) PrimeIntellect-ai/prime-rl's nightly trainer benchmark: benchmarks/results/BENCHMARKS.md at b798a90d6 (2026-01-31,
'Last Updated: 2026-02-01') and the JSON of each run beside it (benchmarks/baselines/, measured 2026-01-15 in the image
primeintellect/prime-rl-jackmin@sha256:5a146f7d...), made by benchmarks/scripts/run_single_benchmark.py from
.github/workflows/benchmarks.yaml: the SFT trainer (src/prime_rl/trainer/sft/train.py, code read at d8f290ef0) on fake
data, 2 micro-batches of 1 x S tokens a GPU a step, --model.compile (each decoder layer compiled), --model.ac (every
layer checkpointed), FSDP2 with fp32 master weights and bf16 compute; Qwen3-0.6B on one H100 / one RTX A6000 and
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
throughput on another GPU over the H100's, and whether the out-of-memory run is said not to fit.

Sign: (predicted - published) / published; + = predicted too fast (tokens/s) or too large (memory).

Run: python benchmarks/perf_heldout53.py
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import perf_heldout as ph
import perf_heldout28 as p28
from harness import Case, mape, model_data
from trainsizer.catalog import load_catalog
from trainsizer.evaluate import evaluate
from trainsizer.scenario import resolve_job

DATA = Path(__file__).resolve().parent / "data"
ROWS = DATA / "heldout_2027a_prime_rl.csv"
REFERENCE_GPU = "h100-sxm-80gb"
# the failed run of the same table: Qwen3-0.6B SFT at 65,536 on one H100 80GB HBM3 ran out of memory (its JSON's
# error_reason: 'Tried to allocate 37.09 GiB. GPU 0 has a total capacity of 79.18 GiB of which 34.48 GiB is free')
OOM_FROM, OOM_SEQ_LEN, OOM_CAPACITY_GIB = "primerl_2026-01_1xh100_qwen3_0.6b_sft_8192_fa3", 65536, 79.18


def rows() -> list[dict[str, str]]:
    return list(csv.DictReader(ROWS.open(encoding="utf-8")))


def run_all() -> list[tuple[Case, dict[str, Any], dict[str, str]]]:
    """(case, the estimate's result or {} when refused, row) for every row, in file order."""
    return ph.estimate_rows(rows())


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
    gib, fits = oom_check()
    print(f"\nthe run that ran out of memory (Qwen3-0.6B, 65,536 on one H100, {OOM_CAPACITY_GIB} GiB): estimated "
          f"{gib:.1f} GiB, {'said to fit (wrong)' if fits else 'said not to fit'}")
    p28.print_pairs_and_refusals(run)


if __name__ == "__main__":
    main()
