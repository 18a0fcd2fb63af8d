"""Held-out check on published runs added 2026-12-06 (forty-third batch: pre-training on parts and stacks the held-out
set is thin on; nothing is fitted on them):

(1) swiss-ai/Megatron-LM (the Swiss AI Initiative's Megatron-LM fork, Megatron-Core 0.11.0rc0 in the NGC PyTorch 25.01
container), its February 2025 baselines on CSCS Alps 'Clariden': quad-GH200 nodes on Slingshot 11, the first
pre-training rows on GH200 (the held-out set's GH200 rows were Krai's MLPerf LoRA runs). Llama 3 300M on 32 GPUs (the
step the PR states), Llama 3.2 3B on 4 and 32 GPUs (Megatron's logged TFLOP/s/GPU, metric megatron_tflops_per_gpu), Llama
3.1 8B on 256 GPUs at two layouts (tokens/s a GPU from the team's wandb panel, as the PR quotes it). Each row's layout
is the launcher script at the commit it names (submit-*.sh at the repository root).

(2) ATorch (Ant Group's training library, intelligent-machine-learning/dlrover atorch/examples/llama2/README.md at
3a442b728, 2023-11-22): Llama 2 7B pre-training on A100-80GB nodes of 8 (800 Gb/s RDMA a node), FlashAttention 2, 4,096
tokens: PyTorch FSDP1 on 8-64 GPUs (micro-batch 4, bf16, every layer checkpointed) and DeepSpeed's pipeline engine with
ATorch's tensor parallelism ('DS 3D': TP / PP / DP on 8-64 GPUs, micro-batch 8 x 64 accumulation steps, fp16, ZeRO-1,
every layer checkpointed). The figure is the script's hardware TFLOP/s a GPU (metric atorch_tflops_per_gpu,
atorch_hardware_flops below) and the run's torch.cuda.max_memory_allocated (peak_allocated_gib).

Data: benchmarks/data/heldout_2027q_swissai_gh200.csv (1) and heldout_2027q_atorch_a100.csv (2) in heldout_pretrain.csv's
columns (perf_heldout.job_of builds each
job; every setting the source does not state is in the row's `assumed` column with the file and commit it was read from);
models that are not presets in benchmarks/data/heldout_2027q_models.yaml.

Printed: each row (published, predicted, error, the estimate's step terms), memory fits, each source's time and memory
figures, the batch's.

Sign: (predicted - published) / published of the row's metric (a rate: + = predicted too fast; a step time: + = predicted
too slow; a peak: + = predicted too large).

Run: python benchmarks/perf_heldout69.py
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import perf_heldout as ph
from harness import Case, mape, print_fits

DATA = Path(__file__).resolve().parent / "data"
SWISSAI_ROWS = DATA / "heldout_2027q_swissai_gh200.csv"
ATORCH_ROWS = DATA / "heldout_2027q_atorch_a100.csv"
MODELS = DATA / "heldout_2027q_models.yaml"
# (title, the row-id prefix of a source), printed in this order
SOURCES = (("(1) swiss-ai/Megatron-LM on CSCS Alps GH200 (Megatron-Core 0.11, 2025-02)", "swissai_"),
           ("(2) ATorch Llama 2 7B on A100-80GB (FSDP1 and DeepSpeed 3D, 2023-11)", "atorch_"))


def atorch_hardware_flops(batch: float, seq: float, hidden: float, vocab: float, ffn: float, layers: float,
                          recompute: bool) -> float:
    """Hardware FLOPs a step as ATorch's Llama 2 examples log them (intelligent-machine-learning/dlrover
    atorch/examples/llama2/example_utils.py compute_llama2_training_flops at 3a442b728, after Narayanan et al. 2021's
    appendix): a layer's forward 8 b s h^2 + 4 b s^2 h (q / k / v / o at h x h, non-causal scores) + 6 b s h f (three
    SwiGLU GEMMs), the logits 2 b s h V; backward twice the forward; under checkpointing the layers' forward once more."""
    layer = 8 * batch * seq * hidden**2 + 4 * batch * seq**2 * hidden + 6 * batch * seq * hidden * ffn
    logits = 2 * batch * seq * hidden * vocab
    return layers * layer * (4 if recompute else 3) + logits * 3


def predict(row: dict[str, str], result: dict[str, Any], model: Any) -> float:
    """The row's figure from the estimate: ATorch's logged TFLOP/s a GPU (atorch_hardware_flops over the estimated
    step), else perf_heldout.predicted_metric."""
    if row["metric"] != "atorch_tflops_per_gpu":
        return ph.predicted_metric(row, result, model)
    flops = atorch_hardware_flops(int(row["global_batch_seqs"]), int(row["seq_len"]), model.hidden, model.vocab,
                                  model.ffn, model.layers, row["recompute"] == "full")
    return flops / float(result["time"]["step_s"]) / int(row["gpu_count"]) / 1e12


BATCH = ph.Batch((SWISSAI_ROWS, ATORCH_ROWS), (ph.MODELS, MODELS), predict)
rows, models, run_all, job, fits = BATCH.rows, BATCH.models, BATCH.run_all, BATCH.job, BATCH.fits


def part(run: ph.Run, prefix: str) -> ph.Run:
    """The rows of one source (its row-id prefix)."""
    return [t for t in run if t[2]["id"].startswith(prefix)]


def timed(run: ph.Run) -> ph.Run:
    """The rows of a time metric (a rate or a step)."""
    return [t for t in run if t[2]["metric"] not in ph.MEMORY_METRICS]


def peaks(run: ph.Run) -> ph.Run:
    """The rows of a memory metric (peak_allocated_gib: ATorch's max_memory_allocated)."""
    return [t for t in run if t[2]["metric"] in ph.MEMORY_METRICS]


def row_line(c: Case, result: dict[str, Any], r: dict[str, str]) -> str:
    """A scored row as perf_heldout.step_line prints it, its figures to four digits (a step of 0.9 s, a rate of 8,290
    tokens/s) and its metric; a refused one with the estimator's error."""
    if c.skipped:
        return f"  {c.row_id:52s} {c.skipped}"
    terms = ", ".join(f"{k} {v:.2f}" for k, v in result["time"]["breakdown_s"].items() if v > 0.005)
    return (f"  {c.row_id:52s} {c.measured:8.4g} {c.predicted:8.4g} ({100 * c.err:+6.1f}%) {r['metric']}; step "
            f"{result['time']['step_s']:.2f} s: {terms}")


def summary_lines(run: ph.Run, sources: tuple[tuple[str, str], ...], name: str) -> list[str]:
    """Each source's time and memory n, MAPE, median and refused count (`sources`: (title, row-id prefix)), then the
    batch's (perf_heldout69, 70)."""
    out = []
    for title, prefix in sources:
        for kind, rs in (("time", timed(part(run, prefix))), ("memory", peaks(part(run, prefix)))):
            scored, refused = ph.scored_refused(rs)
            if scored or refused:
                figure = f"MAPE {mape(scored):.1f}% (median {ph.median_pct(scored):+.1f}%)" if scored else "none scored"
                out.append(f"{title.split(' on ')[0]} {kind}: n={len(scored)} {figure}; refused {len(refused)}")
    out.append(ph.time_summary(name, timed(run)))
    scored = ph.scored_refused(peaks(run))[0]
    if scored:  # a batch of throughput tables only (perf_heldout76) has no memory figure to print
        out.append(f"{name} memory: n={len(scored)} MAPE {mape(scored):.1f}% (median {ph.median_pct(scored):+.1f}%)")
    else:
        out.append(f"{name} memory: no published peak memory in this batch")
    return out


def print_parts(run: ph.Run, sources: tuple[tuple[str, str], ...]) -> None:
    """Each source's rows under its title (`sources`: (title, row-id prefix)), as row_line prints them (perf_heldout69,
    73)."""
    for title, prefix in sources:
        print(f"{title}: published, predicted, error (held out, nothing fitted):")
        for c, res, r in part(run, prefix):
            print(row_line(c, res, r))


def main() -> None:
    run = run_all()
    print_parts(run, SOURCES)
    print_fits(fits(), "perf_heldout69")
    print("\n".join(summary_lines(run, SOURCES, "perf_heldout69")))


if __name__ == "__main__":
    main()
