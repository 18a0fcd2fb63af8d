"""Held-out check on published runs added 2026-12-06 (forty-third batch: pre-training on parts and stacks the held-out
set is thin on; nothing is fitted on them):

(1) swiss-ai/Megatron-LM (the Swiss AI Initiative's Megatron-LM fork, Megatron-Core 0.11.0rc0 in the NGC PyTorch 25.01
container), its February 2025 baselines on CSCS Alps 'Clariden': quad-GH200 nodes on Slingshot 11, the first
pre-training rows on GH200 (the held-out set's GH200 rows were Krai's MLPerf LoRA runs). Llama 3 300M on 32 GPUs (the
step the PR states), Llama 3.2 3B on 4 and 32 GPUs (Megatron's logged TFLOP/s/GPU, metric megatron_tflops_per_gpu), Llama
3.1 8B on 256 GPUs at two layouts (tokens/s a GPU from the team's wandb panel, as the PR quotes it). Each row's layout
is the launcher script at the commit it names (submit-*.sh at the repository root).

Data: benchmarks/data/heldout_2027q_swissai_gh200.csv in heldout_pretrain.csv's columns (perf_heldout.job_of builds each
job; every setting the source does not state is in the row's `assumed` column with the file and commit it was read from);
models that are not presets in benchmarks/data/heldout_2027q_models.yaml.

Printed: each row (published, predicted, error, the estimate's step terms), memory fits, the per-source figures.

Sign: (predicted - published) / published of the row's metric (a rate: + = predicted too fast; a step time: + = predicted
too slow).

Run: python benchmarks/perf_heldout69.py
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import perf_heldout as ph
from harness import Case, mape, print_fits

DATA = Path(__file__).resolve().parent / "data"
SWISSAI_ROWS = DATA / "heldout_2027q_swissai_gh200.csv"
MODELS = DATA / "heldout_2027q_models.yaml"
BATCH = ph.Batch((SWISSAI_ROWS,), (ph.MODELS, MODELS))
rows, models, run_all, job, fits = BATCH.rows, BATCH.models, BATCH.run_all, BATCH.job, BATCH.fits
# (title, the row-id prefix of a source), printed in this order
SOURCES = (("(1) swiss-ai/Megatron-LM on CSCS Alps GH200 (Megatron-Core 0.11, 2025-02)", "swissai_"),)


def part(run: ph.Run, prefix: str) -> ph.Run:
    """The rows of one source (its row-id prefix)."""
    return [t for t in run if t[2]["id"].startswith(prefix)]


def row_line(c: Case, result: dict[str, Any], r: dict[str, str]) -> str:
    """A scored row as perf_heldout.step_line prints it, its figures to four digits (a step of 0.9 s, a rate of 8,290
    tokens/s) and its metric; a refused one with the estimator's error."""
    if c.skipped:
        return f"  {c.row_id:52s} {c.skipped}"
    terms = ", ".join(f"{k} {v:.2f}" for k, v in result["time"]["breakdown_s"].items() if v > 0.005)
    return (f"  {c.row_id:52s} {c.measured:8.4g} {c.predicted:8.4g} ({100 * c.err:+6.1f}%) {r['metric']}; step "
            f"{result['time']['step_s']:.2f} s: {terms}")


def main() -> None:
    run = run_all()
    for title, prefix in SOURCES:
        print(f"{title}: published, predicted, error (held out, nothing fitted):")
        for c, res, r in part(run, prefix):
            print(row_line(c, res, r))
    print_fits(fits(), "perf_heldout69")
    for title, prefix in SOURCES:
        scored, refused = ph.scored_refused(part(run, prefix))
        figure = f"MAPE {mape(scored):.1f}% (median {ph.median_pct(scored):+.1f}%)" if scored else "no row scored"
        print(f"{title.split(' on ')[0]}: n={len(scored)} {figure}; refused {len(refused)}")
    print(ph.time_summary("perf_heldout69", run))


if __name__ == "__main__":
    main()
