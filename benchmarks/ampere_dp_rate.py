"""What-if, not applied (docs/known-gaps.md 323): the held-out rows with the data-parallel collectives of one GPU
family run at a fraction of the NVLink ring rate the estimate gives them. A diagnostic, nothing fitted, no estimate
change.

Why: hf/dense/ampere/node's sharded rows miss a flat 4-8 ms a decoder layer and micro-batch (docs/known-gaps.md 312
(b)), read there as no byte count. Read against the estimate's own overlap model instead, the miss of each
Ampere sharded family is about the exposed gather / reduce-scatter chain again: fms-acceleration's FSDP1 orca-math
rows (perf_heldout64) leave about twice the estimate's serial chain for FSDP at 2, 4 and 8 A100 alike (their
measured step less every other term of the estimate), and gpjt's ZeRO-3 rows about 1.8x.

What it does: every held-out time row (accuracy_bands.collect, the benchmarks' own rows and predictions) whose part
belongs to the family (a catalog id starting with one of FAMILY's prefixes; A100 and A800 by default), on more than
one GPU, re-timed with the estimate's data-parallel terms (step_time._dp_comm_zero3: FSDP / ZeRO-3 gathers and
reduce-scatters; step_time._dp_comm_replicated: DDP / ZeRO-1/2 reductions) run on rates whose intra-domain ring
bandwidth (Rates.intra_busbw, perf_constants.yaml comm.intra_busbw_fraction of the link) is FACTORS x the shipped
one; tensor / pipeline / expert parallel communication keeps the shipped rate. Each row's error at a factor is its
error as shipped scaled by its step's change ((1 + e) x step / step_f - 1, a rate and a duration alike: the rows'
evaluation passes and checkpoint saves, beside the step, are left as they are). Printed: per accuracy_bands class
and per family (benchmark and the series its ids name) the rows, MAPE and median at each factor; the same rows at the
shipped rate with the compute slowdown one A100 FSDP trace reads beside an all-gather (TRACE_INTERFERENCE) charged on
the family's data-parallel terms in place of perf_constants overlap_interference; then, as shipped,
per family, what each row's measured step leaves for its data-parallel collectives over the estimate's serial chain
(chain_multiple; rows whose chain is at least CHAIN_SHARE of the step).

Not applied: no published measurement puts the A100's NVLink data-parallel collectives at half the rate nccl-tests
gives its ring (the catalog's 235 GB/s of 300: networks.yaml), and the same lever on Hopper parts breaks Hopper's
multi-node sharded rows (docs/known-gaps.md 323 (b)). What would settle it is a trace of one FSDP1 or ZeRO-3 step on an A100 node.

Run: python benchmarks/ampere_dp_rate.py                       (A100 / A800; a few minutes: it runs every
                                                                 held-out benchmark's rows)
     python benchmarks/ampere_dp_rate.py --family h100,h800,h200  (the same what-if on Hopper parts: the control)
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from accuracy_bands import DATA, Row, classify, collect, release_of
from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError
from trainsizer.estimate import step_time
from trainsizer.scenario import resolve_job

FAMILY = ("a100", "a800")  # catalog ids of the Ampere data-centre parts with NVLink 3 (a100-sxm-80gb, a800-sxm-80gb, ...)
FACTORS = (1.0, 0.75, 0.5)  # the data-parallel ring rate as a fraction of the shipped one
DP_TERMS = ("_dp_comm_zero3", "_dp_comm_replicated")  # step_time's data-parallel collective terms
# compute's lost share while an NVLink all-gather runs beside it: 1 - 1/1.76, the GEMM kernel 1.18 -> 2.08 ms (attention
# 0.18 -> 0.33, x1.83) under FSDP's AllGather in a Hugging Face FSDP run on A100-SXM4-80GB (NVIDIA/nccl issue 1428,
# 2024-09-05, Nsight Systems; the maintainer's reading: HBM bandwidth, 2-3x the NVLink rate in memory traffic); against
# perf_constants overlap_interference 0.20 (arXiv:2507.03114's 18.9% mean, tuned on llm-foundry's FSDP rows)
TRACE_INTERFERENCE = 1.0 - 1.18 / 2.08
CHAIN_SHARE = 0.1  # chain_multiple reads a row whose serial data-parallel chain is at least this share of its step


def in_family(accelerator: str, family: Sequence[str]) -> bool:
    """Whether a catalog accelerator id belongs to the family (an id starting with one of its prefixes)."""
    return str(accelerator).startswith(tuple(family))


@contextlib.contextmanager
def dp_rate(factor: float, family: Sequence[str] = FAMILY, interference: float | None = None) -> Iterator[None]:
    """Within the block, step_time's data-parallel terms (DP_TERMS) of a job on a family part run on rates whose
    intra-domain ring bandwidth is `factor` x the shipped one and, where `interference` is given, charge that share
    of their hidden time in place of perf_constants overlap_interference; every other term and every other part as
    shipped. The terms are restored on exit."""
    if factor <= 0.0:
        raise ValueError(f"dp_rate takes a positive factor, got {factor}")
    saved = {name: getattr(step_time, name) for name in DP_TERMS}

    def scaled(fn):
        def term(x, *args, **kwargs):
            if in_family(x.system.accelerator, family):
                x = dataclasses.replace(x, r=dataclasses.replace(x.r, intra_busbw=x.r.intra_busbw * factor))
                if interference is not None:
                    x = dataclasses.replace(x, k=dataclasses.replace(x.k, overlap_interference=interference))
            return fn(x, *args, **kwargs)
        return term

    try:
        for name, fn in saved.items():
            setattr(step_time, name, scaled(fn))
        yield
    finally:
        for name, fn in saved.items():
            setattr(step_time, name, fn)


def scaled_error(err: float, step_s: float, step_f_s: float) -> float:
    """A row's signed error (a fraction) once its step goes from `step_s` to `step_f_s`: (1 + e) x step / step_f - 1
    (+ = predicted too fast; a slower step lowers a rate's prediction and raises a duration's alike)."""
    return (1.0 + err) * step_s / step_f_s - 1.0


def family_rows(classed: list[tuple[Row, tuple[str, ...]]], family: Sequence[str]) -> list[tuple[Row, tuple[str, ...]]]:
    """The time rows on a family part with more than one GPU, as written in their jobs, with their class keys."""
    out = []
    for row, keys in classed:
        hw = row.job.get("hardware") or {}
        if row.quantity == "time" and in_family(hw.get("accelerator", ""), family) and int(hw.get("count", 1)) > 1:
            out.append((row, keys))
    return out


def _step_s(row: Row, catalogs: dict[str, Any]) -> float | None:
    """The estimate's step seconds for the row's job on its catalog, or None where the job does not resolve."""
    t = dp_terms(row, catalogs)
    return None if t is None else t["step_s"]


def dp_terms(row: Row, catalogs: dict[str, Any]) -> dict[str, float] | None:
    """The estimate's step, exposed data-parallel and serial data-parallel seconds a step and micro-batches for the row's
    job as shipped, or None where it does not resolve."""
    if row.overlay not in catalogs:
        catalogs[row.overlay] = load_catalog([DATA / row.overlay] if row.overlay else [])
    try:
        sc = resolve_job(row.job, catalogs[row.overlay])
        out = step_time.step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
    except (TrainsizerError, KeyError, TypeError, ValueError):
        return None
    return {k: float(np.asarray(out[k]).reshape(-1)[0]) for k in ("step_s", "dp_comm", "dp_comm_serial",
                                                                  "micro_batches")}


def chain_multiple(err: float, t: dict[str, float]) -> float:
    """What the row's measured step leaves for its data-parallel collectives (the estimate's exposed data-parallel
    time plus the row's miss, step x e: every other term taken as the estimate has it) over the estimate's serial
    data-parallel chain (dp_comm_serial, none hidden); nan where the chain is under CHAIN_SHARE of the step (a
    small chain's multiple reads the other terms' misses, not the chain). 1 = the chain run in full beside nothing,
    2 = twice the chain's time."""
    if t["dp_comm_serial"] < CHAIN_SHARE * t["step_s"] or t["dp_comm_serial"] <= 0.0:
        return float("nan")
    return (t["dp_comm"] + t["step_s"] * err) / t["dp_comm_serial"]


def whatif(rows: list[tuple[Row, tuple[str, ...]]], family: Sequence[str] = FAMILY,
           factors: Sequence[float] = FACTORS, interference: float | None = None
           ) -> list[tuple[Row, tuple[str, ...], list[float]]]:
    """(row, class keys, signed error % at each factor, under `interference` where given: dp_rate) for the rows whose
    job resolves; factor 1.0 with no interference gives the row's error as shipped."""
    catalogs: dict[str, Any] = {}
    steps: dict[int, list[float | None]] = defaultdict(list)
    for f in factors:
        with dp_rate(f, family, interference):
            for row, _ in rows:
                steps[id(row)].append(_step_s(row, catalogs))
    out = []
    for row, keys in rows:
        s = steps[id(row)]
        base = _step_s(row, catalogs)
        if base is None or any(v is None for v in s):
            continue
        out.append((row, keys, [100.0 * scaled_error(row.err, base, v) for v in s]))
    return out


def summary(results: list[tuple[Row, tuple[str, ...], list[float]]], key) -> list[tuple[str, int, list[float],
                                                                                         list[float]]]:
    """(group, rows, MAPE % at each factor, median signed % at each factor) of the results grouped by `key(row,
    keys)` (None: left out), most rows first."""
    groups: dict[str, list[list[float]]] = defaultdict(list)
    for row, keys, errs in results:
        for g in key(row, keys) or ():
            groups[g].append(errs)
    out = []
    for g, vals in groups.items():
        arr = np.asarray(vals)
        out.append((g, len(vals), list(np.mean(np.abs(arr), axis=0)), list(np.median(arr, axis=0))))
    return sorted(out, key=lambda t: (-t[1], t[0]))


def by_class(row: Row, keys: tuple[str, ...]) -> tuple[str, ...]:
    """The row's class keys two and three levels deep (stack/kind/generation[/scale])."""
    return tuple(k for k in keys if k.count("/") >= 2)


def by_family(row: Row, keys: tuple[str, ...]) -> tuple[str, ...]:
    """The row's family: its benchmark and the series its id names (accuracy_bands.release_of)."""
    return (f"{row.benchmark} {release_of(row.row_id)}",)


def family_arg(args: list[str]) -> tuple[str, ...]:
    """--family a,b,...: the catalog id prefixes; FAMILY where none is given."""
    if "--family" not in args:
        return FAMILY
    at = args.index("--family")
    if at + 1 >= len(args) or not args[at + 1].strip(","):
        raise SystemExit("ampere_dp_rate --family needs catalog id prefixes, e.g. --family a100,a800")
    return tuple(p for p in args[at + 1].split(",") if p)


def chain_multiples(results: list[tuple[Row, tuple[str, ...], list[float]]]) -> dict[str, list[float]]:
    """chain_multiple of each row with a data-parallel chain, by family (by_family), in the results' order."""
    catalogs: dict[str, Any] = {}
    out: dict[str, list[float]] = defaultdict(list)
    for row, keys, _ in results:
        t = dp_terms(row, catalogs)
        v = chain_multiple(row.err, t) if t is not None else float("nan")
        if np.isfinite(v):
            out[by_family(row, keys)[0]].append(v)
    return out


def _chain_lines(results) -> list[str]:
    groups = sorted(chain_multiples(results).items(), key=lambda g: (-len(g[1]), g[0]))
    return [f"  {g:36s} {len(v):4d}  median {np.median(v):5.2f}  {min(v):5.2f}..{max(v):5.2f}" for g, v in groups]


def _lines(groups, factors: Sequence[float], width: int) -> list[str]:
    head = "  ".join(f"x{f:g}: MAPE / median" for f in factors)
    out = [f"  {'':{width}s} {'rows':>4s}  {head}"]
    for g, n, mape, med in groups:
        cells = "  ".join(f"{m:5.1f} / {d:+6.1f}   " for m, d in zip(mape, med, strict=True))
        out.append(f"  {g:{width}s} {n:4d}  {cells}")
    return out


def main() -> None:
    family = family_arg(sys.argv[1:])
    results = whatif(family_rows(classify(collect()), family), family)
    print(f"What-if, not applied: the data-parallel collectives (FSDP / ZeRO-3 gathers and reduce-scatters, DDP and "
          f"ZeRO-1/2 reductions) of the multi-GPU held-out time rows on {', '.join(p + '*' for p in family)} parts at "
          f"{' / '.join(f'{f:g}' for f in FACTORS)} x the shipped intra-domain ring rate; every other term as "
          f"shipped ({len(results)} rows; signed % + = predicted too fast)")
    print("\nper accuracy_bands class (these rows of it):")
    print("\n".join(_lines(summary(results, by_class), FACTORS, 36)))
    print("\nper family (benchmark, series):")
    print("\n".join(_lines(summary(results, by_family), FACTORS, 36)))
    rows = [(r, k) for r, k, _ in results]
    inter = whatif(rows, family, (1.0,), TRACE_INTERFERENCE)
    print(f"\nthe same rows at the shipped rate with overlap_interference {TRACE_INTERFERENCE:.2f} on the family's "
          "data-parallel terms (the compute slowdown one A100 FSDP trace shows beside an all-gather, TRACE_INTERFERENCE) "
          "in place of the shipped 0.20, per class, then per family:")
    print("\n".join(_lines(summary(inter, by_class), (1.0,), 36)))
    print("\n".join(_lines(summary(inter, by_family), (1.0,), 36)[1:]))
    print("\nas shipped: what each row's measured step leaves for its data-parallel collectives over the estimate's serial "
          "chain (chain_multiple: 1 = the whole chain beside nothing), per family: rows whose chain is at least "
          f"{CHAIN_SHARE:.0%} of the step, median, range")
    print("\n".join(_chain_lines(results)))


if __name__ == "__main__":
    main()
