"""Diagnostic (nothing fitted, no estimate changed): how much of Megatron-Core's per-expert host charge each held-out
row wants. The charge is perf_constants.yaml gemm.moe_host_s_per_expert_kernel (step_time._host_excess: the kernels
TE GroupedLinear issues per local expert after the MoE layer's host sync, exposed); this prints, for every scored
held-out time row whose estimate that charge moves by 1% or more, the share of it (both dispatchers' figures scaled
alike) at which the estimate meets the measurement, beside the row's error as predicted and with the charge off.

A share near 1 says the row agrees with the charge as derived; a row far below the rest with the GPU side right
points at a term only it carries. The Nemotron 3 Nano rows on H100 (perf_hybrid: the only scored rows that recompute
the whole MoE block, recompute_modules moe) want about a quarter of it where the other rows of the class centre
near one (docs/known-gaps.md 131); by the local experts a GPU holds, the share falls where the charge (linear in
them) grows largest: perf_heldout67's DGX-B300 Nemotron 3 Super rows at 64 (docs/known-gaps.md 256 (a)). Rows resolved on a catalog overlay are left out (the estimate here runs on the
built-in catalog).

Run: python benchmarks/moe_host_share.py
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Callable

import numpy as np

from accuracy_bands import Row, collect
from harness import job_tokens_per_gpu
from trainsizer.estimate.calibration import PerfConstants, load_constants

MOVED = 0.01  # rows whose predicted rate the charge moves by less than this are left out
SHARE_MAX = 4.0  # the largest share searched


def scaled(k: PerfConstants, share: float) -> PerfConstants:
    """`k` with every dispatcher's per-expert host figure times `share`."""
    return dataclasses.replace(k, moe_host_s_per_expert_kernel={name: v * share for name, v in
                                                                k.moe_host_s_per_expert_kernel.items()})


def share_that_fits(err_at: Callable[[float], float], hi: float = SHARE_MAX, steps: int = 12) -> float:
    """The share s in [0, hi] where err_at(s) = 0, by bisection; err_at falls as the share rises (a dearer host
    charge predicts slower). NaN where the sign does not change over [0, hi]: the charge alone cannot meet the row."""
    lo = 0.0
    if err_at(lo) < 0.0 or err_at(hi) > 0.0:
        return math.nan
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if err_at(mid) > 0.0 else (lo, mid)
    return 0.5 * (lo + hi)


def _err_with(row: Row, ratio: float) -> float:
    """The row's signed error had its predicted tokens/s been `ratio` times what it is (a duration divides)."""
    from accuracy_bands import DURATION_METRICS

    predicted = row.predicted / ratio if row.metric in DURATION_METRICS else row.predicted * ratio
    return dataclasses.replace(row, predicted=predicted).err


def facts(row: Row) -> dict[str, str]:
    """What the rows are grouped by: part, precision (FP8 recipe), whether the MoE block is recomputed (selective
    `moe` or full), micro-batch, and whether Megatron-Core's combined 1F1B pairs the micro-batches (the EP all-to-all
    overlap, strategy.moe_a2a_overlap: each layer pair then issues both micro-batches' expert kernels between two of
    the forward's syncs, docs/known-gaps.md 194) with its MoE dispatcher."""
    hw, st = row.job.get("hardware") or {}, row.job.get("strategy") or {}
    mods = st.get("recompute_modules") or ()
    mods = mods.split() if isinstance(mods, str) else tuple(mods)
    rerun = "moe" in mods or st.get("recompute") == "full"
    recipe = row.job.get("fp8_recipe") or ""
    precision = str(row.job.get("precision", "-")) + (f"/{recipe}" if recipe and recipe != "auto" else "")
    return {"part": str(hw.get("accelerator", "-")), "precision": precision,
            "moe_rerun": "yes" if rerun else "no", "ep": str(st.get("ep", 1)),
            "micro_batch": str(st.get("micro_batch", "-")),
            "a2a_overlap": f"{st.get('moe_a2a_overlap', '-')} {st.get('moe_dispatcher', '-')}"}


def shares(rows: list[Row] | None = None) -> list[tuple[Row, float, float]]:
    """(row, share that fits, error with the charge off) for each scored time row the charge moves by MOVED or more."""
    k = load_constants()
    off = scaled(k, 0.0)
    out = []
    for row in rows if rows is not None else collect():
        if row.quantity != "time" or row.overlay or not isinstance(row.job, dict):
            continue
        job = [(row.row_id, row.job)]
        base = job_tokens_per_gpu(job)[0][1]
        if abs(job_tokens_per_gpu(job, constants=off)[0][1] - base) < MOVED * base:
            continue

        def err_at(share: float, job=job, base=base, row=row) -> float:
            return _err_with(row, job_tokens_per_gpu(job, constants=scaled(k, share))[0][1] / base)

        out.append((row, share_that_fits(err_at), err_at(0.0)))
    return out


def local_experts_bucket(experts: int, ep: int) -> str:
    """The routed experts one GPU holds (experts / EP), bucketed: '<=8', '16', '32', '>=64' (a dense model: '-')."""
    if experts <= 1:
        return "-"
    local = experts / max(ep, 1)
    return "<=8" if local <= 8 else "16" if local <= 16 else "32" if local <= 32 else ">=64"


def local_experts(row: Row) -> str:
    """The row's local-expert bucket, from its resolved job (the model's routed experts over its EP degree)."""
    from trainsizer.catalog import load_catalog
    from trainsizer.scenario import resolve_job

    sc = resolve_job(row.job, load_catalog())
    return local_experts_bucket(int(sc.model.experts), int(np.ravel(sc.strategy.ep)[0]))


def figure_s(row: Row) -> float:
    """The per-expert-kernel figure (seconds) the row's job is charged: its dispatcher's (alltoall or flex, "auto"
    resolved as the estimate resolves it, step_time.moe_alltoall), so share x figure is the seconds a kernel the row
    wants (docs/known-gaps.md 194 (e))."""
    from trainsizer.catalog import load_catalog
    from trainsizer.estimate.step_time import moe_alltoall
    from trainsizer.scenario import resolve_job

    sc = resolve_job(row.job, load_catalog())
    st = sc.strategy
    alltoall = bool(np.ravel(moe_alltoall(st.moe_dispatcher, sc.system, st.ep, st.tp))[0])
    return load_constants().moe_host_s_per_expert_kernel["alltoall" if alltoall else "flex"]


def main() -> None:
    got = sorted(shares(), key=lambda g: (math.isnan(g[1]), g[1]))
    print(f"{'share':>6s} {'err%':>7s} {'off%':>7s}  {'benchmark':16s} {'row':56s} {'part':14s} {'precision':16s} "
          "moe rerun  ep  mb")
    for row, s, off in got:
        f = facts(row)
        print(f"{s:6.2f} {100 * row.err:+7.1f} {100 * off:+7.1f}  {row.benchmark:16s} {row.row_id[:56]:56s} "
              f"{f['part'][:14]:14s} {f['precision'][:16]:16s} {f['moe_rerun']:>9s} {f['ep']:>3s} {f['micro_batch']:>3s}")
    print("\nshare that fits, median by group (rows the charge alone cannot meet left out):")
    for key in ("part", "precision", "moe_rerun", "a2a_overlap"):
        groups: dict[str, list[float]] = defaultdict(list)
        for row, s, _ in got:
            if not math.isnan(s):
                groups[facts(row)[key]].append(s)
        print(f"  by {key}: " + "; ".join(f"{g} n={len(v)} {float(np.median(v)):.2f}"
                                          for g, v in sorted(groups.items(), key=lambda kv: -len(kv[1]))))
    local: dict[str, list[float]] = defaultdict(list)
    for row, s, _ in got:
        if not math.isnan(s):
            local[local_experts(row)].append(s)
    print("  by local experts (routed experts / EP): " + "; ".join(
        f"{g} n={len(local[g])} {float(np.median(local[g])):.2f}" for g in ("<=8", "16", "32", ">=64") if local[g]))
    print("\nseconds a kernel the rows want (share x their dispatcher's figure), median by the EP overlap:")
    per_kernel: dict[str, list[float]] = defaultdict(list)
    for row, s, _ in got:
        if not math.isnan(s):
            per_kernel[facts(row)["a2a_overlap"]].append(1e6 * s * figure_s(row))
    print("  " + "; ".join(f"{g} n={len(v)} {float(np.median(v)):.0f} us ({min(v):.0f}-{max(v):.0f})"
                           for g, v in sorted(per_kernel.items(), key=lambda kv: -len(kv[1]))))


if __name__ == "__main__":
    main()
