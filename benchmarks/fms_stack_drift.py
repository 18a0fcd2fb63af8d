"""What moved between fms-acceleration's 2024-11 and 2025-02 A100 runs (docs/known-gaps.md 330): the granite MoE rows
ran 1.19-1.25x faster, the same suite's dense rows 1.01x; a diagnostic, nothing fitted, no estimate change.

perf_heldout66's granite-3.0-3b-a800m rows (refs/a100_80gb_moe.csv) ran one job at 5b35eae (2024-11-13) and again at
c959c6b (2025-02-24); the estimate gives both the same step (the MoE layer's code is the same at transformers 4.45.2 and
4.49.0: 289 (a), 330 (a)). Each commit's refs/requirements_moe.txt is a `pip freeze`, which names the interpreter too:
5b35eae lists async-timeout (aiohttp's dependency below CPython 3.11) with networkx 3.4.2 (3.10 on): CPython 3.10;
c959c6b lists setuptools, which pip's freeze shows from CPython 3.12 on (pip's _should_suppress_build_backends) and
torch 2.4.1's cp312 wheel requires (its cp311 wheel does not): CPython 3.12 (STACKS).

The suite's dense file (refs/a100_80gb.csv) was measured across the same change a day after the MoE file's first run
(9239802, 2024-11-14, CPython 3.10, transformers 4.45.2) and again (24bdadb, 2025-02-07, CPython 3.12, transformers
4.48.1), torch 2.4.1 both: 124 configurations in both files, 85 with a figure in both (benchmarks/data/
fms_stack_drift.csv). Printed:

- the 85 pairs' throughput ratio (2025-02 over 2024-11) by framework_config and method;
- this machine's CPU under CPython 3.10 and 3.12 with one torch 2.4.1 build (benchmarks/python_release_host.py's
  output, benchmarks/data/python_release_host_cpu.csv): the interpreter alone, one torch op, a module call, the
  GraniteMoe block's forward and backward;
- the estimate's own answer to "a host f times slower in 2024-11": each row's step at f over its step as shipped
  (hf_moe_residual.host_steps), for the dense rows perf_heldout61 scores and the granite rows, beside the measured
  ratio, and the factor at which the two agree (implied_factor) where the measured ratio, over the median of the rows
  the estimate calls GPU-bound (gpu_bound_drift), falls in the what-if's range. A host change the GPU-bound rows hide
  shows on the rows the estimate calls host-bound.

Run: python benchmarks/fms_stack_drift.py   (under a minute: it estimates 22 jobs at five host factors)
"""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
PAIRS = DATA / "fms_stack_drift.csv"
INTERPRETER = DATA / "python_release_host_cpu.csv"
FACTORS = (1.0, 1.25, 1.5, 2.0, 3.0)  # the 2024-11 host's time a kernel and a layer pass over the shipped figures
GPU_BOUND = 1.005  # a row the estimate moves less than this at FACTORS[-1] is GPU-bound: no host factor read on it

# what each commit's freeze pins (fms-acceleration scripts/benchmarks/refs/requirements*.txt) and the CPython it implies
STACKS = {
    "5b35eae (MoE, 2024-11-13)": "CPython 3.10, torch 2.4.1, transformers 4.45.2, trl 0.11.4, flash-attn 2.6.3",
    "9239802 (dense, 2024-11-14)": "CPython 3.10, torch 2.4.1, transformers 4.45.2, trl 0.11.4, flash-attn 2.6.3",
    "24bdadb (dense, 2025-02-07)": "CPython 3.12, torch 2.4.1, transformers 4.48.1, trl 0.13.0, flash-attn 2.7.3",
    "c959c6b (MoE, 2025-02-24)": "CPython 3.12, torch 2.4.1, transformers 4.49.0, trl 0.14.0, flash-attn 2.7.4.post1",
}
GRANITE = (("fmsmoe_v1_granite3b_none_1gpu", "fmsmoe_v2_granite3b_none_1gpu"),
           ("fmsmoe_v1_granite3b_none_2gpu", "fmsmoe_v2_granite3b_none_2gpu"),
           ("fmsmoe_v1_granite3b_none_4gpu", "fmsmoe_v2_granite3b_none_4gpu"))


def _rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(line for line in path.open() if not line.startswith("#")))


def pairs() -> list[dict[str, str]]:
    """The dense file's configurations measured at both commits."""
    return _rows(PAIRS)


def ratio(r: dict[str, str]) -> float:
    """A pair's 2025-02 throughput over its 2024-11 throughput."""
    return float(r["samples_per_s_24bdadb"]) / float(r["samples_per_s_9239802"])


def drift_by_group(ps: list[dict[str, str]]) -> list[tuple[str, int, float, float, float]]:
    """(framework_config / method, pairs, median, min, max ratio), and the whole file last as 'all'."""
    groups: dict[str, list[float]] = {}
    for r in ps:
        groups.setdefault(f"{r['framework_config']} / {r['peft_method']}", []).append(ratio(r))
    out = [(g, len(v), statistics.median(v), min(v), max(v)) for g, v in sorted(groups.items())]
    every = [ratio(r) for r in ps]
    return out + [("all", len(every), statistics.median(every), min(every), max(every))]


def interpreter_ratios() -> list[tuple[str, float, float, float]]:
    """(case, CPython 3.10 us, CPython 3.12 us, ratio) of this machine's CPU time a call, medians of the runs."""
    by: dict[tuple[str, str], list[float]] = {}
    for r in _rows(INTERPRETER):
        by.setdefault((r["case"], r["python"][:4]), []).append(float(r["cpu_us_per_call"]))
    cases = dict.fromkeys(c for c, _ in by)
    return [(c, statistics.median(by[(c, "3.10")]), statistics.median(by[(c, "3.12")]),
             statistics.median(by[(c, "3.10")]) / statistics.median(by[(c, "3.12")])) for c in cases]


def host_ratios(jobs: list[dict], catalog) -> list[list[float]]:
    """Each job's estimated step at each of FACTORS over its step as shipped: the throughput a host that many times
    slower would lose, i.e. the 2025-02 over 2024-11 ratio the estimate gives if only the host changed."""
    from hf_moe_residual import host_steps

    return [[s / steps[0] for s in steps] for steps in host_steps(jobs, catalog, FACTORS)]


def gpu_bound_drift(measured: list[float], ratios: list[list[float]]) -> float:
    """The median measured ratio of the rows the estimate calls GPU-bound (under 0.5% slower at the largest host
    factor): the drift every row shows whatever its host share (GPU, driver, kernels)."""
    return statistics.median(m for m, g in zip(measured, ratios, strict=True) if g[-1] < GPU_BOUND)


def implied_factor(measured: float, ratios: list[float]) -> float | None:
    """The host factor (between FACTORS' points, linearly) at which the estimate's ratio (host_ratios, one job) equals
    the measured one; None for a GPU-bound row (GPU_BOUND) or where the measured ratio lies outside the ratios' range
    (a host more than FACTORS[-1] times slower, or a row that moved less than the drift)."""
    if ratios[-1] < GPU_BOUND:
        return None
    for i in range(len(FACTORS) - 1):
        (f0, f1), (r0, r1) = FACTORS[i : i + 2], ratios[i : i + 2]
        if r0 <= measured <= r1 and r1 > r0:
            return f0 + (f1 - f0) * (measured - r0) / (r1 - r0)
    return None


def _heldout_jobs() -> tuple[dict[str, dict], dict[str, dict[str, str]]]:
    """(perf_heldout61's and perf_heldout66's jobs by row id, perf_heldout66's rows by id)."""
    import perf_heldout61 as h61
    import perf_heldout66 as h66

    jobs = {r["id"]: h61.job(r) for r in h61.rows()} | {r["id"]: h66.job(r) for r in h66.rows()}
    return jobs, {r["id"]: r for r in h66.rows()}


def main() -> None:
    from trainsizer.catalog import load_catalog

    print("fms-acceleration's A100 runs, the stack each commit's freeze pins:")
    print("\n".join(f"  {k:28s} {v}" for k, v in STACKS.items()))
    ps = pairs()
    print("\nthe dense file's configurations measured at 9239802 (2024-11-14) and 24bdadb (2025-02-07): throughput "
          "2025-02 over 2024-11")
    print("\n".join(f"  {g:40s} n={n:3d} median {m:5.3f}  {lo:5.3f}..{hi:5.3f}" for g, n, m, lo, hi in
                    drift_by_group(ps)))
    print("\nthis machine's CPU, one torch 2.4.1 build under CPython 3.10 and 3.12 (benchmarks/python_release_host.py; "
          "CPU us a call, medians of the runs in python_release_host_cpu.csv):")
    print("\n".join(f"  {c:14s} 3.10 {a:10.3f}  3.12 {b:10.3f}  ratio {x:5.3f}" for c, a, b, x in interpreter_ratios()))
    jobs, moe = _heldout_jobs()
    dense = [r for r in ps if r["heldout_id"]]
    picked = [jobs[r["heldout_id"]] for r in dense] + [jobs[new] for _, new in GRANITE]
    got = host_ratios(picked, load_catalog())
    print("\nmeasured 2025-02 over 2024-11 beside the estimate's ratio if only the host changed, the 2024-11 host at "
          + " / ".join(f"{f:g}x" for f in FACTORS[1:]) + " the shipped figures:")
    measured = [ratio(r) for r in dense] + [float(moe[new]["samples_per_s"]) / float(moe[old]["samples_per_s"])
                                            for old, new in GRANITE]
    drift = gpu_bound_drift(measured, got)
    print(f"  (the rows the estimate calls GPU-bound moved {drift:5.3f}, median; the host factor is read on the measured "
          "ratio over that)")
    for rid, m, g in zip([r["heldout_id"] for r in dense] + [new for _, new in GRANITE], measured, got, strict=True):
        f = implied_factor(m / drift, g)
        print(f"  {rid:36s} measured {m:5.3f}  if host " + " ".join(f"{x:5.3f}" for x in g[1:])
              + (f"  the estimate's host factor for it {f:4.2f}" if f is not None else ""))


if __name__ == "__main__":
    main()
