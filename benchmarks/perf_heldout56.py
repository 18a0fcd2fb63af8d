"""Held-out check on published runs added 2026-12-06 (thirtieth batch: measured peak memory beside time; nothing is
fitted on them), one source no benchmark held:

(1) gpjt/fine-tune-2024-04 (Giles Thomas's 'Messing around with fine-tuning LLMs' series, 2024-08 / 09): Llama 3 8B
fully fine-tuned by the HF Trainer under DeepSpeed ZeRO-3 (fp16 engine, FusedAdam, DeepSpeed's default buckets) on
one 8-GPU 80 GB host, 2,048 padded positions a sample, swept over the micro-batch until it runs out of memory: without
gradient checkpointing (batch 1-2), and with it, with and without PYTORCH_CUDA_ALLOC_CONF=expandable_segments
(batch 1-12 / 1-14). Each run writes its GPU's torch.cuda.memory_stats peaks ('active_bytes.all.peak',
'reserved_bytes.all.peak', MiB) and its iterations a second. Rows: batch 1, 2, 4, 8 and each series' largest batch
that ran (the rule set before scoring), GPU 0's line; a reserved row where the series names its allocator setting.

Not rows (read, said in docs/known-gaps.md 211): the same repository's 0.5B sweeps (Qwen1.5-0.5B on one 24 GB card
the repository does not name), its optimizer-offload series (ZeRO-3 with the optimizer on the host) and its Liger
Kernel series (the patched modules not read far enough to state).

Data: benchmarks/data/heldout_2027d_gpjt_zero3.csv (perf_heldout50's columns with `expandable_segments` and
`zero3_bucket_sizes`; every setting the source does not state is in the row's `assumed`, with the default read).

Printed: each row (published, predicted, error), per source, what a sample adds to the active peak (measured slope
against predicted), each reserved row's reserved less active peak against the estimate's and the part DeepSpeed
ZeRO's pools hold (reserved_gaps, known-gaps 234), each time row in seconds a step against the estimate and its serial
sum (step_seconds), and the first batch of each series that ran out of memory against the estimate's verdict.

Sign: (predicted - published) / published; + = predicted too fast (time) or too large (memory).

Run: python benchmarks/perf_heldout56.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import finetune_heldout as fh
import perf_heldout43 as p43
from harness import Case, print_case_rows, scored
from trainsizer.catalog import load_catalog
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.memory import GIB, estimate_memory

DATA = Path(__file__).resolve().parent / "data"
GPJT = DATA / "heldout_2027d_gpjt_zero3.csv"
SOURCES = (GPJT,)
BATCH = fh.Batch(SOURCES)
rows, job, cases = BATCH.rows, BATCH.job, BATCH.cases
# (series, first batch size that ran out of memory): the sweep's OOM lines
FIRST_OOM = (("nogc", 3), ("gc", 13), ("gcexp", 15))


def slopes(cs: list[Case]) -> list[tuple[str, float, float]]:
    """(series, measured, predicted GiB a sample adds to the active peak) between each series' smallest and largest
    scored batch."""
    got = {c.row_id: c for c in scored(cs, "peak_gib") if not c.row_id.endswith("_reserved")}
    out = []
    for series in dict.fromkeys(rid.split("_zero3_")[1].rsplit("_bs", 1)[0] for rid in got):
        sizes = sorted(int(rid.rsplit("_bs", 1)[1]) for rid in got if f"_zero3_{series}_bs" in rid)
        lo, hi = (got[f"gpjt24_llama3-8b_zero3_{series}_bs{n}"] for n in (sizes[0], sizes[-1]))
        span = sizes[-1] - sizes[0]
        out.append((series, (hi.measured - lo.measured) / span, (hi.predicted - lo.predicted) / span))
    return out


def reserved_slopes(cs: list[Case], lo: int = 2, hi: int = 8) -> list[tuple[str, float, float]]:
    """(series, measured, predicted GiB a sample adds to the reserved peak) between batch `lo` and `hi` of each series
    with both reserved rows scored: past batch 1, where the step's flat copies outgrow the checkpointed micro-batch's
    freed range, and below the card-capped rows (known-gaps 246 (a), (b))."""
    got = {c.row_id: c for c in scored(cs, "peak_gib") if c.row_id.endswith("_reserved")}
    out = []
    for series in ("gc", "gcexp"):
        a, b = (got.get(f"gpjt24_llama3-8b_zero3_{series}_bs{n}_reserved") for n in (lo, hi))
        if a is not None and b is not None:
            out.append((series, (b.measured - a.measured) / (hi - lo), (b.predicted - a.predicted) / (hi - lo)))
    return out


def reserved_gaps(cs: list[Case], rs: list[dict[str, str]]) -> list[tuple[str, float, float, float]]:
    """(reserved row, measured reserved less active, predicted, the predicted part DeepSpeed ZeRO's pools hold:
    MemoryEstimate.zero_pool_bytes, known-gaps 234) in GiB, for each reserved row whose active twin is scored."""
    cat = load_catalog()
    peaks = {c.row_id: c for c in scored(cs, "peak_gib")}
    out = []
    for r in rs:
        rid = r["id"]
        twin = peaks.get(rid.removesuffix("_reserved"))
        if not rid.endswith("_reserved") or rid not in peaks or twin is None:
            continue
        sc = fh._scenario(r, cat)
        pool = estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False).zero_pool_bytes / GIB
        res = peaks[rid]
        out.append((rid, res.measured - twin.measured, res.predicted - twin.predicted, pool))
    return out


def print_reserved_gaps(cs: list[Case], rs: list[dict[str, str]]) -> None:
    print("\nreserved less active peak, GiB (measured, predicted, of it DeepSpeed ZeRO's pools: known-gaps 234):")
    for rid, meas, pred, pool in reserved_gaps(cs, rs):
        print(f"  {rid:44s} measured {meas:5.2f} predicted {pred:5.2f} pools {pool:5.2f}")


def step_seconds(rs: list[dict[str, str]]) -> list[tuple[str, float, float, float, float]]:
    """(row id, measured, estimate, serial sum, host) seconds a step of each ZeRO-3 tokens/s row of `rs`: measured =
    the tokens the source counts a step over its tokens/s; serial sum = the estimate's GPU time with none of ZeRO-3's
    collectives hidden behind compute (step_s - zero3_hooks - dp_comm + dp_comm_serial: the chain in full,
    step_time._dp_comm_zero3, without the hooks' hold on the host); host = the host seconds a step the estimate
    counts for DeepSpeed's hooks and the layers' own issue (zero3_host, step_time._deepspeed_hook_excess). The rows'
    excess over the estimate read against that sum says whether what the estimate misses is the overlap it takes or a
    cost outside the chain (docs/known-gaps.md 226), and the floor it implies (implied_floor) against the host counted
    (262 (a))."""
    from trainsizer.estimate.step_time import step_time_arrays

    cat = load_catalog()
    out = []
    for r in rs:
        if not r["tokens_per_s"] or r["zero"] != "3" or r["refused"]:
            continue
        sc = fh._scenario(r, cat)
        a = {k: float(np.asarray(v).reshape(-1)[0]) for k, v in
             step_time_arrays(sc.model, sc.training, sc.system, sc.strategy).items()}
        measured = fh.counted_tokens(r, sc.training) / float(r["tokens_per_s"])
        serial = a["step_s"] - a["zero3_hooks"] - a["dp_comm"] + a["dp_comm_serial"]
        out.append((r["id"], measured, a["step_s"], serial, a["zero3_host"]))
    return out


def implied_floor(measured: float, serial: float) -> float | None:
    """The flat floor F whose soft maximum with the serial sum, (serial^q + F^q)^(1/q) at the per-layer host floor's
    blend norm q (perf_constants host_gpu_blend_norm), gives the measured seconds: (measured^q - serial^q)^(1/q); None
    where the row runs under its serial sum (its overlap shows, no floor binds). A reading of the rows, not a term
    (docs/known-gaps.md 251 (b))."""
    q = load_constants().host_gpu_blend_norm
    return (measured**q - serial**q) ** (1.0 / q) if measured > serial else None


def print_step_seconds(rs: list[dict[str, str]], floors: bool = False) -> None:
    """`step_seconds` printed, one line a row; with `floors`, the flat floor each row implies over its serial sum
    (implied_floor: read on a sweep whose short rows sit well above their sums, not on rows within a few hundredths of
    them, where the inversion magnifies the excess)."""
    print("\nZeRO-3 rows, seconds a step (measured, estimate, serial sum: none of the chain hidden; measured less each"
          + ("; the flat floor the row implies, known-gaps 251 (b), and the host the estimate counts, 262 (a)):"
             if floors else "):"))
    for rid, meas, est, serial, host in step_seconds(rs):
        floor = implied_floor(meas, serial) if floors else None
        print(f"  {rid:44s} measured {meas:6.3f} estimate {est:6.3f} serial {serial:6.3f}  "
              f"missing {meas - est:+6.3f} over serial {meas - serial:+6.3f}"
              + ("" if not floors else "  floor " + ("     -" if floor is None else f"{floor:6.3f}")
                 + f" host {host:6.3f}"))


def oom_verdicts() -> list[tuple[str, int, float, float]]:
    """(series, first batch that ran out of memory, the estimate's GiB a GPU at it, the card's GiB): the largest row
    of the series with its micro-batch raised."""
    cat = load_catalog()
    by = {r["id"]: r for r in rows() if r["peak_mem_unit"] == "GiB-active"}
    out = []
    for series, n in FIRST_OOM:
        last = max((r for rid, r in by.items() if f"_zero3_{series}_bs" in rid), key=lambda r: int(r["micro_batch"]))
        r = dict(last, micro_batch=str(n), global_batch_seqs=str(8 * n))
        sc = fh._scenario(r, cat)
        est = estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False)
        out.append((series, n, est.per_gpu_bytes / GIB, sc.system.memory_gib))
    return out


def main() -> None:
    cs = cases()
    print("(1) gpjt/fine-tune-2024-04: Llama 3 8B full fine-tuning, HF Trainer + DeepSpeed ZeRO-3 fp16 on 8 x 80 GB, "
          "2,048 positions a sample, micro-batch sweeps (active / reserved peak, tokens/s) (held out, nothing fitted):")
    print_case_rows([c for c in cs if c.metric in ("tokens_s", "peak_gib")], 44, "9.1f")
    print("\nper source:")
    print("\n".join(p43.source_lines(cs)))
    print("\nGiB a sample adds to the active peak (measured vs predicted):")
    print("\n".join(f"  {s:6s} measured {m:5.2f} predicted {p:5.2f}" for s, m, p in slopes(cs)))
    print("\nGiB a sample adds to the reserved peak from batch 2 to 8 (measured vs predicted; known-gaps 246 (b)):")
    print("\n".join(f"  {s:6s} measured {m:5.2f} predicted {p:5.2f}" for s, m, p in reserved_slopes(cs)))
    print_reserved_gaps(cs, rows())
    print_step_seconds(rows())
    print("\nthe first batch each series ran out of memory at (the estimate's total a GPU, the card):")
    print("\n".join(f"  {s:6s} batch {n:2d}: predicted {g:5.1f} GiB of {card:.0f} ({'does not fit' if g > card else 'fits'})"
                    for s, n, g, card in oom_verdicts()))
    print(fh.said_lines(cs))
    print("\n" + p43.summary("perf_heldout56", cs))


if __name__ == "__main__":
    main()
