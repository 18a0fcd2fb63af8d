"""Held-out check on single-GPU fine-tuning under Hugging Face Transformers + PEFT as a fine-tuning framework drives
it (added 2026-12-05, tenth batch; nothing is fitted on them). One source, the most common user job: LoRA, QLoRA
and full SFT of a 2-14B model on one card.

ms-swift's benchmark page (modelscope/ms-swift at 97e4d198b, 2024-01-02, docs/source/LLM/Benchmark.md; English copy
docs/source_en/LLM/Benchmark.md): swift 1.5 `swift sft` on one A100 80GB (torch 2.1.1, flash_attn 2.3.4, bitsandbytes
0.41.3), the cls-fudan-news-zh dataset (3234.4 +- 2547.5 Qwen tokens a sample, min 91, max 19548), batch 1 x gradient
accumulation 16, gradient checkpointing, FlashAttention-2, LoRA rank 8 on c_attn unless a table varies one of them.
Each table prints training speed (the HF Trainer's train_samples_per_second, scripts/benchmark/test_memory_time/
run_single.py) and GPU memory (torch.cuda.max_memory_reserved, swift/trainers/trainers.py at that commit). Rows:
benchmarks/data/heldout_2026k_swift_a100.csv, finetune_heldout.csv's columns (each row goes through
finetune_heldout.row_cases, the public job path) plus `attention_kernel`, `optimizer_precision`, `samples_per_s`
and `refused` (the reason a stated row is not estimated), `lora_impl` (peft-base-dtype on the LoRA rows: PEFT 0.7.1,
swift 1.5's pin, keeps the adapters in the bf16 base dtype, docs/known-gaps.md 104) and `lora_dropout` (0.05 on the
LoRA / QLoRA rows: swift's lora_dropout_p default, argument.py at 97e4d198b; 104 (d)) and `epoch_samples` (the samples
an epoch runs, epoch_samples()). The peak is scored as read, on the GiB-reserved basis: the estimate's peak plus the
caching allocator's growth over the epoch's record rows (estimate.allocator; known-gaps 198 (a)). Every setting the page
does not state is in `assumed`:
- swift 1.5's truncation_strategy 'delete' drops every sample longer than max_length, so a row runs the samples
  under its cutoff: their lengths are taken from the stated mean and spread as a lognormal cut at the cutoff
  (avg_tokens, length_sigma, max_tokens); rows keeping under a fifth of the samples (cutoffs 512, 1024) rest on the
  unstated tail and are refused;
- samples/s is scored as published: the estimate's global batch over its step time.
Refused as stated: two-A100 rows (device_map 'auto', transformers' naive layer split), GPTQ bases, eager attention,
models other than Qwen (the dataset's lengths are stated for Qwen's tokenizer only). Left out: the gradient
accumulation table's middle rows (2-32: the default row within 0.5%; its 1 and 64 ends are kept), the 'Tuners',
'Export', 'AWQ' and 'AQLM' tables (later pages; other datasets or inference).

After the scores, a diagnostic splits each row's peak-memory gap over the allocated peak (allocated_peak_gib) by the
two candidates of docs/known-gaps.md 97: the
Qwen-1 loss path's live bytes against the estimate's loss items, and PyTorch's caching allocator replayed over that
path at the row's kept lengths (allocator_replay.py): reserved over allocated on a card with room, and the least card
the same sequence runs on. It moves no figure.

Sign: (predicted - measured) / measured, + = predicted too fast (samples/s) or too much memory (GiB).

Run: python benchmarks/perf_heldout35.py
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np

import allocator_replay as ar
import finetune_heldout as fh
from harness import Case, mape, print_case_rows, print_totals, refusals_said, scored
from trainsizer.catalog import load_catalog
from trainsizer.estimate.memory import GIB, estimate_memory
from trainsizer.estimate.step_time import step_time_arrays

DATA = Path(__file__).resolve().parent / "data"
ROWS = DATA / "heldout_2026k_swift_a100.csv"
MODELS = DATA / "heldout_models.yaml"
# the page's token statistics of cls-fudan-news-zh (Qwen's tokenizer): mean and standard deviation a sample
DATASET_MEAN_TOKENS, DATASET_SD_TOKENS = 3234.4, 2547.5
MIN_KEPT = 0.2  # a cutoff keeping fewer samples than this rests on the unstated tail: refused
DATASET_MIN_TOKENS = 91  # the page's shortest sample
# known-gaps 97's replay: run_single.py at 97e4d198b takes 1,000 samples before 'delete' above a max_length of 2048
# (sft.py's random_state.permutation(1000) indexes the dataset: its first 1,000 rows, shuffled; known-gaps 149)
# (about 750 kept at 4,096, 950 at 8,192) and keeps the whole dataset at or under it (its size unstated): the replay
# takes 1,000 kept lengths in the HF Trainer's random order, three seeds
REPLAY_SAMPLES, REPLAY_SEEDS = 1000, 3
# the rows a run tokenises before 'delete': cls-fudan-news-zh's 4,959 samples (swift's dataset table at 97e4d198b,
# docs/source/LLM/支持的模型和数据集.md; known-gaps 118 (b)) at or under a max_length of 2,048, its first 1,000 above it
# (run_single.py train_dataset_sample; known-gaps 149 (d))
DATASET_ROWS, SAMPLED_ROWS = 4959, 1000


def kept_lengths(cutoff: int, mean: float = DATASET_MEAN_TOKENS, sd: float = DATASET_SD_TOKENS) -> tuple[float, float, float]:
    """(share kept, mean length, spread of ln length) of the samples swift's truncation_strategy 'delete' keeps at
    `cutoff`, the lengths lognormal with the stated mean and sd: ln L normal (mu, sigma) cut above at ln cutoff, so
    E[L | L <= c] = mean * Phi(b - sigma) / Phi(b) and Var[ln L | .] = sigma^2 (1 - b l - l^2), b = (ln c - mu) / sigma,
    l = phi(b) / Phi(b) (the upper-truncated normal's moments, Johnson, Kotz & Balakrishnan 1994, ch. 13)."""
    sigma = math.sqrt(math.log(1 + (sd / mean) ** 2))
    b = (math.log(cutoff) - math.log(mean) + sigma**2 / 2) / sigma
    cdf = 0.5 * (1 + math.erf(b / math.sqrt(2)))
    lam = math.exp(-b * b / 2) / math.sqrt(2 * math.pi) / cdf
    return cdf, mean * 0.5 * (1 + math.erf((b - sigma) / math.sqrt(2))) / cdf, sigma * math.sqrt(1 - b * lam - lam**2)


def epoch_samples(cutoff: int) -> int:
    """The samples one epoch runs at `cutoff`: the rows run_single.py hands sft (the whole dataset at or under 2,048,
    the first 1,000 above) times the share 'delete' keeps under the stated lognormal (kept_lengths). The caching
    allocator's record rows count them (estimate.allocator; the rows' `epoch_samples`)."""
    rows_run = DATASET_ROWS if cutoff <= 2048 else SAMPLED_ROWS
    return round(rows_run * kept_lengths(cutoff)[0])


def kept_length_draws(cutoff: int, samples: int = REPLAY_SAMPLES, seeds: int = REPLAY_SEEDS) -> list[list[int]]:
    """`seeds` draws of `samples` lengths that 'delete' keeps at `cutoff` (the stated mean and sd as a lognormal, at
    least the stated minimum), in the order drawn: what the allocator replay of known-gaps 97 runs."""
    sigma = math.sqrt(math.log(1 + (DATASET_SD_TOKENS / DATASET_MEAN_TOKENS) ** 2))
    mu = math.log(DATASET_MEAN_TOKENS) - sigma**2 / 2
    draws = []
    for seed in range(seeds):
        rng, kept = np.random.default_rng(seed), np.empty(0, dtype=int)
        while kept.size < samples:
            x = rng.lognormal(mu, sigma, 4 * samples).astype(int)
            kept = np.concatenate([kept, x[(x >= DATASET_MIN_TOKENS) & (x <= cutoff)]])
        draws.append([int(n) for n in kept[:samples]])
    return draws


# the rows and their architectures (finetune_heldout.Batch); the cases stay this file's: its own step and sample-length
# draws (docs/known-gaps.md 257 (b))
BATCH = fh.Batch((ROWS,), (MODELS,))
rows, models = BATCH.rows, BATCH.models


def _table(r: dict[str, str]) -> str:
    """'Batch Size' from the row's source 'ms-swift 1.5 Benchmark.md (A100) (Batch Size)'."""
    return r["source"].rsplit(" (", 1)[1].rstrip(")")


def row_cases(r: dict[str, str], cat, archs: dict) -> list[Case]:
    """The row's samples/s and peak GiB (finetune_heldout's memory basis), or one refused case."""
    table = _table(r)
    if r["refused"]:
        return [Case(r["id"], table, "refused", 0.0, skipped=r["refused"])]
    out = [Case(c.row_id, table, c.metric, c.measured, c.predicted, skipped=c.skipped)
           for c in fh.row_cases(r, cat, archs)]
    if any(c.metric == "refused" for c in out):
        return out
    sc = fh._scenario(r, cat, archs)
    step = float(np.asarray(step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)["step_s"]).reshape(-1)[0])
    out.append(Case(r["id"], table, "samples_s", float(r["samples_per_s"]), sc.training.global_batch_seqs / step))
    return out


def cases() -> list[Case]:
    cat, archs = load_catalog(), models()
    return refusals_said(rows(), lambda r: row_cases(r, cat, archs), _table)



def series(cs: list[Case], prefix: str, by: str) -> list[tuple[str, float, float]]:
    """(row, measured, predicted samples/s over the series' first row's) for rows whose id starts with `prefix`
    (one model and method across max_length, or the 2048 default row's variants): what each setting costs."""
    got = [c for c in scored(cs, "samples_s") if c.row_id.startswith(prefix)]
    if not got:
        return []
    base = next((c for c in got if c.row_id == by), got[0])
    return [(c.row_id, c.measured / base.measured, c.predicted / base.predicted) for c in got if c is not base]


LOSS_ITEMS = ("logits", "loss_backward_temporaries")  # the estimate's loss-path items (memory.py)


def allocated_peak_gib(r: dict[str, str], est) -> float:
    """The row's predicted peak without the caching allocator's growth (the row read as GiB-allocator: the estimate's
    live peak at the cutoff, its 5% fragmentation share kept): what known-gaps 97's gap table and
    swift_first_table.py compare, the scored figure being the reserved one (GiB-reserved)."""
    return fh._memory_gib(dict(r, peak_mem_unit="GiB-allocator"), est)[1]


def allocated_peaks() -> dict[str, float]:
    """allocated_peak_gib per row the estimate takes (refused rows left out)."""
    cat, archs, out = load_catalog(), models(), {}
    for r in rows():
        if r["refused"]:
            continue
        sc = fh._scenario(r, cat, archs)
        out[r["id"]] = allocated_peak_gib(r, estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False))
    return out


def gap_by_candidate(cs: list[Case], samples: int = REPLAY_SAMPLES) -> list[tuple[str, float, float, ar.Excess]]:
    """Known-gaps 97's split of each scored row's peak-memory gap over the allocated peak (measured - allocated_peak_gib,
    GiB): (row, gap, candidate 1:
    the Qwen-1 loss path's live peak at a micro-batch of the cutoff less the estimate's loss items, candidate 2: the
    allocator's excesses over that path (allocator_replay.excess over kept_length_draws, each micro-batch padded to
    its longest))."""
    cat, archs, by_id = load_catalog(), models(), {r["id"]: r for r in rows()}
    out, replays = [], {}
    for c in scored(cs, "peak_gib"):
        r = by_id[c.row_id]
        sc = fh._scenario(r, cat, archs)
        est = estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False)
        gap = c.measured - allocated_peak_gib(r, est)
        if est.peak_phase == "optimizer step":  # the loss items of the forward / backward phase (known-gaps 128 (a))
            fwd_bwd = dataclasses.replace(sc.strategy, optimizer_impl="fused")
            est = estimate_memory(sc.model, sc.training, sc.system, fwd_bwd, check=False)
        mb, cutoff, vocab = int(r["micro_batch"]), int(r["seq_len"]), sc.model.vocab
        if (cutoff, vocab, mb) not in replays:
            draws = [[max(d[i:i + mb]) for i in range(0, len(d), mb)] for d in kept_length_draws(cutoff, samples)]
            live = ar.live_peak_bytes(cutoff, vocab, mb) / GIB  # at the length the estimate charges: the cutoff
            replays[cutoff, vocab, mb] = live, ar.excess(draws, vocab, mb)
        live, e = replays[cutoff, vocab, mb]
        charged = sum(est.items_bytes.get(k, 0.0) for k in LOSS_ITEMS) / GIB
        out.append((c.row_id, gap, live - charged, e))
    return out


def _span(xs: tuple[float, ...]) -> str:
    return f"{min(xs):5.1f} .. {max(xs):5.1f}"


def print_gap_by_candidate(cs: list[Case]) -> None:
    print(f"\npeak memory gap by candidate (GiB; known-gaps 97: allocator_replay.py, {REPLAY_SEEDS} draws of "
          f"{REPLAY_SAMPLES} kept lengths):")
    print(f"  {'row':34s} {'gap':>6s} {'loss path':>9s}  {'reserved over allocated':>23s}  {'least card over it':>18s}")
    for rid, gap, loss, e in gap_by_candidate(cs):
        print(f"  {rid:34s} {gap:+6.2f} {loss:+9.2f}  {_span(e.reserved_gib):>23s}  {_span(e.needed_gib):>18s}")


def main() -> None:
    cs = cases()
    print("ms-swift 1.5 on one A100 80GB (HF Transformers + PEFT; held out, nothing fitted):")
    print_case_rows(cs, 34, "7.2f")
    print("\nper table and figure (MAPE, worst):")
    for table in dict.fromkeys(c.source for c in cs):
        for metric in ("samples_s", "peak_gib"):
            g = [c for c in scored(cs, metric) if c.source == table]
            if g:
                worst = max(g, key=lambda c: abs(c.err))
                print(f"  {table:42s} {metric:9s} n={len(g):2d} MAPE {mape(g):5.1f}%  worst {worst.row_id} "
                      f"({100 * worst.err:+.1f}%)")
    print("\neach series over its first row (samples/s, measured vs predicted):")
    for prefix, by in (("swift_lora_qwen-7b_", "swift_lora_qwen-7b_2048"), ("swift_lora_qwen-14b_", ""),
                       ("swift_lora_qwen-1_8b_", ""), ("swift_full_qwen-1_8b_", ""), ("swift_full_qwen-7b_", "")):
        for rid, meas, pred in series(cs, prefix, by):
            print(f"  {rid:34s} measured {meas:.3f} predicted {pred:.3f}")
    print_gap_by_candidate(cs)
    refused = [c for c in cs if c.skipped]
    print(f"refused or predicted not to fit: {len(refused)} row(s)")
    print_totals("perf_heldout35", cs)


if __name__ == "__main__":
    main()
