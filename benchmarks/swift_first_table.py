"""The first version of ms-swift's benchmark page as a check on perf_heldout35's readings (added 2026-12-05; held out,
nothing fitted; docs/known-gaps.md 118, items (b) and (c)).

modelscope/ms-swift cfcb67265 (2023-12-14) docs/source/LLM/Benchmark.md printed the same setups as the table
perf_heldout35 scores (97e4d198b, 2024-01-02), run otherwise: scripts/benchmark/test_memory_time/run_single.py at
cfcb67265 passes train_dataset_sample 1000 and truncation_strategy 'truncation_left' (a sample longer than max_length
keeps its last max_length tokens), prints the wall minutes of the whole sft_main (model load and tokenising included)
and torch.cuda.max_memory_reserved after it. Under truncation_left most samples have the cutoff's length (62% at
2,048 under the stated mean and sd), so the peak is read where the lengths repeat and the mean length hardly depends on
the distribution's unstated shape. Rows: benchmarks/data/heldout_2026k_swift_a100_first_table.csv, each naming the
perf_heldout35 row of the same setting (its job, cutoff and the peak the estimate charges at the cutoff).

Printed, not scored: measured GiB against the estimate's allocated peak and its reserved peak under this table's
lengths (reserved_peaks: the caching allocator's growth, known-gaps 198 (a)), and measured minutes (an upper bound on
the training time) against the estimate's training minutes for 1,000 samples of length min(L, cutoff), L the page's
dataset statistics as a lognormal. Then the LoRA rows' memory gap (measured - predicted) in both tables beside the caching
allocator's reserve over the Qwen-1 loss path (allocator_replay.py, known-gaps 97 (b)) under each table's lengths:
truncation_left's min(L, cutoff) here, 'delete''s kept lengths there (docs/known-gaps.md 128, item (b)).

Run: python benchmarks/swift_first_table.py
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

import allocator_replay as ar
import finetune_heldout as fh
import perf_heldout35 as p35
from harness import scored
from trainsizer.catalog import load_catalog
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import step_time_arrays

ROWS = Path(__file__).resolve().parent / "data" / "heldout_2026k_swift_a100_first_table.csv"
SAMPLES = 1000  # run_single.py at cfcb67265: train_dataset_sample=1000
MIB = 2**20
DATASET_MAX_TOKENS = 19548  # the page's longest sample (Qwen tokens); each run cuts at its cutoff (seq_len)
CUTOFFS = (2048, 4096, 8192)  # the cutoffs both tables scored


def rows() -> list[dict[str, str]]:
    return list(csv.DictReader(ROWS.open(encoding="utf-8")))


def dataset_lengths() -> tuple[float, float]:
    """(mean, spread of ln length) of the whole dataset as the page states it, taken as a lognormal (94 (a)): the
    estimate truncates such lengths at the cutoff itself (estimate/sample_lengths.py: min(L, cutoff)), which is what
    truncation_left does to a sample's length."""
    mean, sd = p35.DATASET_MEAN_TOKENS, p35.DATASET_SD_TOKENS
    return mean, math.sqrt(math.log(1 + (sd / mean) ** 2))


def training_minutes(r: dict[str, str], cat, archs: dict) -> float:
    """The estimate's minutes for SAMPLES truncation_left samples of the perf_heldout35 row `r`'s job."""
    mean, spread = dataset_lengths()
    job = dict(r, avg_tokens=f"{mean:.1f}", length_sigma=f"{spread:.4f}", max_tokens=str(DATASET_MAX_TOKENS))
    sc = fh._scenario(job, cat, archs)
    step = float(np.asarray(step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)["step_s"]).reshape(-1)[0])
    return SAMPLES * step / sc.training.global_batch_seqs / 60.0


def compare() -> list[tuple[str, str, float, float, float, float]]:
    """(row, setting, measured GiB, predicted GiB, measured minutes, predicted training minutes) per first-table row;
    the predicted peak is perf_heldout35's for the same setting (the estimate's peak at the cutoff)."""
    cat, archs = load_catalog(), p35.models()
    by_id = {r["id"]: r for r in p35.rows()}
    peaks = p35.allocated_peaks()  # the live peak at the cutoff: no growth under repeated lengths
    return [(t["row"], t["setting"], float(t["peak_mib"]) * MIB / 2**30, peaks[t["row"]], float(t["minutes"]),
             training_minutes(by_id[t["row"]], cat, archs)) for t in rows()]


def truncation_left_job(r: dict[str, str]) -> dict[str, str]:
    """The perf_heldout35 row `r` as this table ran it: SAMPLES samples of min(L, cutoff), L the page's statistics as a
    lognormal (dataset_lengths), the figure torch.cuda.max_memory_reserved (GiB-reserved)."""
    mean, spread = dataset_lengths()
    return dict(r, avg_tokens=f"{mean:.1f}", length_sigma=f"{spread:.4f}", max_tokens=str(DATASET_MAX_TOKENS),
                epoch_samples=str(SAMPLES), peak_mem_unit="GiB-reserved")


def reserved_peaks() -> dict[str, float]:
    """Per first-table row, the estimate's reserved peak (GiB) under this table's own lengths: the allocated peak plus
    the caching allocator's growth over truncation_left's record rows (estimate.allocator; known-gaps 198 (a)). Under
    truncation_left most samples sit at the cutoff, so the records stop early: a check of the growth form on another
    length mix of the same code, printed, not scored."""
    cat, archs, by_id = load_catalog(), p35.models(), {r["id"]: r for r in p35.rows()}
    out = {}
    for t in rows():
        job = truncation_left_job(by_id[t["row"]])
        sc = fh._scenario(job, cat, archs)
        out[t["row"]] = fh._memory_gib(job, estimate_memory(sc.model, sc.training, sc.system, sc.strategy,
                                                            check=False))[1]
    return out


def truncated_length_draws(cutoff: int, samples: int = SAMPLES, seeds: int = p35.REPLAY_SEEDS) -> list[list[int]]:
    """`seeds` draws of the lengths truncation_left leaves at `cutoff`: the page's statistics as a lognormal (at least
    its shortest sample), min(L, cutoff), in the order drawn (as perf_heldout35.kept_length_draws for 'delete')."""
    mean, spread = dataset_lengths()
    mu = math.log(mean) - spread**2 / 2
    draws = []
    for seed in range(seeds):
        x = np.random.default_rng(seed).lognormal(mu, spread, 4 * samples).astype(int)
        draws.append([int(min(n, cutoff)) for n in x[x >= p35.DATASET_MIN_TOKENS][:samples]])
    return draws


def reserve_by_length_mix(samples: int = SAMPLES, vocab: int = 151936) -> list[tuple[int, tuple, tuple]]:
    """(cutoff, GiB reserved over allocated per seed under truncation_left's lengths, the same under 'delete''s):
    the caching allocator replayed over the Qwen-1 loss path (vocab: Qwen-1 1.8B / 7B), batch 1."""
    out = []
    for cutoff in CUTOFFS:
        over = [tuple((a.peak_reserved - a.peak_allocated) / ar.GIB for a in (ar.replay(d, vocab) for d in draws))
                for draws in (truncated_length_draws(cutoff, samples), p35.kept_length_draws(cutoff, samples))]
        out.append((cutoff, over[0], over[1]))
    return out


def lora_gaps(compared: list[tuple]) -> dict[str, tuple[float, float]]:
    """Per LoRA model-and-cutoff row: (gap in this table, gap in perf_heldout35's), GiB measured - predicted, both over
    the estimate's allocated peak (perf_heldout35.allocated_peaks: its scored figure adds the allocator's growth)."""
    allocated = p35.allocated_peaks()
    published = {c.row_id: c.measured - allocated[c.row_id] for c in scored(p35.cases(), "peak_gib")}
    return {rid: (gib - pred, published[rid]) for rid, _, gib, pred, _, _ in compared
            if rid.startswith("swift_lora_qwen-") and rid.rsplit("_", 1)[-1].isdigit() and rid in published}


def main() -> None:
    print("ms-swift's first benchmark page (cfcb67265, 2023-12-14): truncation_left, 1,000 samples, one A100 80GB")
    print(f"  {'perf_heldout35 row':32s} {'GiB meas':>8s} {'pred':>6s} {'err':>7s}  {'reserved':>8s} {'err':>7s}   "
          f"{'min meas':>8s} {'pred':>6s}")
    reserved = reserved_peaks()
    for rid, _, gib, pred, minutes, pred_min in compare():
        res = reserved[rid]
        print(f"  {rid:32s} {gib:8.2f} {pred:6.2f} {100 * (pred / gib - 1):+6.1f}%  {res:8.2f} {100 * (res / gib - 1):+6.1f}%"
              f"   {minutes:8.2f} {pred_min:6.2f}")
    gaps = lora_gaps(compare())
    print("\nLoRA memory gap (measured - predicted GiB), this table (truncation_left) / perf_heldout35's ('delete'), and the")
    print(f"allocator's reserve over the loss path's allocated peak under each table's lengths ({p35.REPLAY_SEEDS} seeds, "
          f"{SAMPLES} samples; known-gaps 128 (b)):")
    for cutoff, trunc, delete in reserve_by_length_mix():
        rows_ = [g for rid, g in gaps.items() if rid.endswith(f"_{cutoff}")]
        first, pub = [g[0] for g in rows_], [g[1] for g in rows_]
        print(f"  cutoff {cutoff:5d}: gap {min(first):+5.1f} .. {max(first):+5.1f} / {min(pub):+5.1f} .. {max(pub):+5.1f};"
              f"  replay {min(trunc):5.1f} .. {max(trunc):5.1f} / {min(delete):5.1f} .. {max(delete):5.1f}")


if __name__ == "__main__":
    main()
