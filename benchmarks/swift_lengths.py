"""What perf_heldout35's own rates say about the sample lengths its rows ran (a diagnostic; it moves no figure).

ms-swift 1.5's benchmark rows (perf_heldout35.py) delete every sample longer than the cutoff, so a row runs the kept
samples, whose lengths the page states only as the whole dataset's mean and spread (3234.4 +- 2547.5 Qwen tokens,
min 91); perf_heldout35 takes them as a lognormal cut at the cutoff. Three checks that need no assumption on the
per-token rate the estimate charges, and one of that rate:

1. A ceiling. The estimate's counted work for the row (every GEMM's FLOPs, FlashAttention's, the element-wise bytes
   counted from the model code) run at the part's datasheet peaks (the catalog's dense 16-bit TFLOP/s for the GEMMs
   and attention, its rated HBM bandwidth: a Calibration, calibration.py) is the fastest those lengths could run. A
   row measured faster than that did not run the stated lengths; the HFU the measured rate needs under them says
   the same from the FLOPs alone (cuBLAS reaches about 0.85 of the A100's peak on ideal shapes: perf_constants.yaml
   gemm.efficiency_max a100, Bekman's MAMF finder).
2. The kept lengths under other shapes of the same mean and spread. The page states no shape; a gamma and a Weibull
   of the stated mean and sd keep about as many samples at 2,048 but shorter ones (their densities fall less steeply
   towards short lengths).
3. The batch series. swift's data_collate_fn (swift/llm/utils/utils.py at 97e4d198b) pads each micro-batch to its
   longest sample, so samples/s at batch b over batch 1 is about E[L] / E[max of b L] (times whatever a larger
   micro-batch gains in GEMM efficiency and host work, which the estimate's own ratio shows to be about 1 here):
   the measured ratios say how spread the kept lengths are, whatever the per-token rate.
4. The per-token rate, without the lengths below 2,048. The December first table (swift_first_table.py) ran the same
   1,000 rows cut at each cutoff (truncation_left), timing the whole run: the difference of two cutoffs' minutes
   cancels the model loading and leaves the tokens the longer cutoff adds, at the per-token rate, so it tests the
   estimate's rate where the 2,048 rows' level cannot.

Read at the table's code (modelscope/ms-swift 97e4d198b, swift/llm/sft.py): rows up to a cutoff of 2,048 run the whole
dataset (train_dataset_sample -1 in scripts/benchmark/test_memory_time/run_single.py); above it
`random_state.permutation(1000)` indexes the dataset, which is a permutation of rows 0-999: the dataset's FIRST 1,000
rows in shuffled order, not a random draw, so the 4,096 / 8,192 rows' lengths are those rows', which the page does not
state (nor whether the dataset file is ordered, e.g. by news category). The December first table (cfcb67265,
swift_first_table.py) ran the same 1,000 rows (train_dataset_sample 1000, the same sft.py lines).

Run: python benchmarks/swift_lengths.py
"""

from __future__ import annotations

import math

import numpy as np

import finetune_heldout as fh
import perf_heldout35 as p35
from trainsizer.catalog import load_catalog
from trainsizer.estimate.calibration import Calibration
from trainsizer.estimate.inputs import System
from trainsizer.estimate.step_time import step_time_arrays

SHAPES = ("lognormal", "gamma", "weibull")
CUTOFFS = (1024, 2048, 4096, 8192)
BATCH_SERIES = {2: "swift_lora_qwen-7b_2048_bs2", 4: "swift_lora_qwen-7b_2048_bs4", 8: "swift_lora_qwen-7b_2048_bs8"}
BATCH_BASE = "swift_lora_qwen-7b_2048"
GRID = 4096  # points of the numerical integrals below (trapezoid on [0, cutoff])
# a setting's cost over another at one model and cutoff, in both tables (the published 'delete' one, perf_heldout35;
# the December truncation_left one, swift_first_table): (label, slower row, faster row). Each cost grows with the
# tokens a sample (recompute reruns the forward; the adapters' passes run over every token), so the two tables' costs
# a sample stand in the ratio of their mean lengths, whatever the per-token rate and the model loading (which both of
# a pair's runs pay alike)
DIFFERENCES = (("recompute (no gradient checkpointing)", "swift_lora_qwen-7b_2048", "swift_lora_qwen-7b_2048_nogc"),
               ("LoRA on every linear (rank 8)", "swift_lora_qwen-7b_2048_r8_all", "swift_lora_qwen-7b_2048"),
               ("full fine-tuning over LoRA", "swift_full_qwen-7b_2048", "swift_lora_qwen-7b_2048"))
# series of the December first table (one model and method over the cutoffs): its minutes between two cutoffs
MARGINAL_SERIES = ("swift_lora_qwen-1_8b_", "swift_lora_qwen-7b_", "swift_lora_qwen-14b_", "swift_full_qwen-1_8b_",
                   "swift_full_qwen-7b_")


def _lower_gamma_regularized(a: float, x: float) -> float:
    """P(a, x) = gamma(a, x) / Gamma(a), the regularized lower incomplete gamma function, by its series
    x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n)) (Abramowitz & Stegun 6.5.29); x here is at most a few
    times a, where the series converges in a few dozen terms."""
    if x <= 0.0:
        return 0.0
    term = total = 1.0
    n = 0
    while term > 1e-15 * total:
        n += 1
        term *= x / (a + n)
        total += term
        if n > 10_000:
            raise ValueError(f"incomplete gamma series did not converge at a={a}, x={x}")
    return min(1.0, total * math.exp(a * math.log(x) - x - math.lgamma(a + 1.0)))


def _weibull_shape(cv: float) -> float:
    """Weibull shape k whose coefficient of variation is `cv`: sqrt(Gamma(1 + 2/k) / Gamma(1 + 1/k)^2 - 1) = cv,
    decreasing in k (bisection on [0.2, 20])."""
    def cv_of(k: float) -> float:
        return math.sqrt(math.gamma(1 + 2 / k) / math.gamma(1 + 1 / k) ** 2 - 1)
    lo, hi = 0.2, 20.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if cv_of(mid) > cv else (lo, mid)
    return 0.5 * (lo + hi)


def cdf(shape: str, x: np.ndarray, mean: float = p35.DATASET_MEAN_TOKENS,
        sd: float = p35.DATASET_SD_TOKENS) -> np.ndarray:
    """P(L <= x) for sample lengths of the stated mean and sd under `shape`: lognormal (perf_heldout35's), gamma
    (shape (mean / sd)^2, scale sd^2 / mean) or Weibull (shape from the coefficient of variation)."""
    x = np.maximum(np.asarray(x, float), 0.0)
    if shape == "lognormal":
        sigma = math.sqrt(math.log(1 + (sd / mean) ** 2))
        mu = math.log(mean) - sigma**2 / 2
        z = (np.log(np.maximum(x, 1e-9)) - mu) / (sigma * math.sqrt(2))
        return np.where(x > 0, 0.5 * (1 + np.vectorize(math.erf)(z)), 0.0)
    if shape == "gamma":
        k, theta = (mean / sd) ** 2, sd**2 / mean
        return np.array([_lower_gamma_regularized(k, v / theta) for v in x.reshape(-1)]).reshape(x.shape)
    if shape == "weibull":
        k = _weibull_shape(sd / mean)
        lam = mean / math.gamma(1 + 1 / k)
        return 1.0 - np.exp(-((x / lam) ** k))
    raise ValueError(f"shape {shape!r}: one of {', '.join(SHAPES)}")


def _kept_cdf(shape: str, cutoff: float) -> tuple[np.ndarray, np.ndarray, float]:
    """(grid on [0, cutoff], P(L <= x | L <= cutoff) on it, P(L <= cutoff))."""
    xs = np.linspace(0.0, float(cutoff), GRID)
    f = cdf(shape, xs)
    return xs, f / f[-1], float(f[-1])


def kept(shape: str, cutoff: float) -> tuple[float, float]:
    """(share kept, mean kept length) when every sample longer than `cutoff` is deleted: E[L | L <= c] =
    integral_0^c (1 - F(x) / F(c)) dx."""
    xs, f, share = _kept_cdf(shape, cutoff)
    return share, float(np.trapezoid(1.0 - f, xs))


def truncated_mean(shape: str, cutoff: float) -> float:
    """E[min(L, cutoff)]: the mean length when every sample is cut to the cutoff (truncation_left), integral_0^c
    (1 - F(x)) dx."""
    xs = np.linspace(0.0, float(cutoff), GRID)
    return float(np.trapezoid(1.0 - cdf(shape, xs), xs))


def padding_ratio(shape: str, cutoff: float, micro_batch: int) -> float:
    """E[L] / E[max of b kept lengths]: the real share of a micro-batch of b kept samples padded to its longest,
    E[max] = integral_0^c (1 - F_c(x)^b) dx."""
    xs, f, _ = _kept_cdf(shape, cutoff)
    return float(np.trapezoid(1.0 - f, xs) / np.trapezoid(1.0 - f**micro_batch, xs))


def peak_calibration(system: System) -> Calibration:
    """The part's datasheet peaks as measured figures: GEMMs and FlashAttention at the dense bf16 TFLOP/s, HBM at the
    rated bandwidth (the catalog's, through System): the fastest the estimate's counted work can run on it."""
    bf16 = system.peak("bf16")  # TFLOP/s
    return Calibration(gemm_tflops=bf16, flash_tflops=bf16, hbm_gb_s=system.hbm_gb_s,
                       source=f"{system.accelerator} datasheet peaks (catalog)")


def ceiling_rows() -> list[tuple[str, float, float, float, float]]:
    """(row, measured samples/s, the estimate's, the estimate's at the part's peaks, HFU the measured rate needs under
    the row's stated lengths) for every scored one-card row of perf_heldout35."""
    cat, archs, out = load_catalog(), p35.models(), []
    for r in p35.rows():
        if r["refused"] or r["gpu_count"] != "1":
            continue
        sc = fh._scenario(r, cat, archs)
        args = (sc.model, sc.training, sc.system, sc.strategy)
        est = step_time_arrays(*args)
        top = step_time_arrays(*args, calibration=peak_calibration(sc.system))
        seqs = sc.training.global_batch_seqs
        step, measured = float(np.ravel(est["step_s"])[0]), float(r["samples_per_s"])
        hfu = float(np.ravel(est["hardware_flops_per_step"])[0]) * measured / seqs / (1e12 * sc.system.peak("bf16"))
        out.append((r["id"], measured, seqs / step, seqs / float(np.ravel(top["step_s"])[0]), hfu))
    return out


def batch_series(cs=None) -> list[tuple[int, float, float, dict[str, float]]]:
    """(b, measured samples/s over batch 1, predicted, {shape: E[L] / E[max of b L] at 2,048}) for the batch table."""
    by_id = {r["id"]: float(r["samples_per_s"]) for r in p35.rows()}
    pred = {c.row_id: c.predicted for c in (cs or p35.cases()) if c.metric == "samples_s"}
    return [(b, by_id[rid] / by_id[BATCH_BASE], pred[rid] / pred[BATCH_BASE],
             {s: padding_ratio(s, 2048, b) for s in SHAPES}) for b, rid in BATCH_SERIES.items()]


def difference_lengths() -> list[tuple[str, float, float, dict[str, float]]]:
    """(setting, its cost a sample in the published table, in the first table (seconds), {shape: the published rows'
    mean kept length at 2,048 that makes the two costs stand in the ratio of the tables' mean lengths, the first
    table's E[min(L, 2048)] under that shape}) for each DIFFERENCES pair. Both tables ran the whole sft at batch 1;
    the first table's minutes cover 1,000 samples (swift_first_table.SAMPLES)."""
    import swift_first_table as ft

    sps = {r["id"]: float(r["samples_per_s"]) for r in p35.rows()}
    minutes = {r["row"]: float(r["minutes"]) for r in ft.rows()}
    out = []
    for label, slow, fast in DIFFERENCES:
        published = 1.0 / sps[slow] - 1.0 / sps[fast]
        first = (minutes[slow] - minutes[fast]) * 60.0 / ft.SAMPLES
        out.append((label, published, first, {s: truncated_mean(s, 2048) * published / first for s in SHAPES}))
    return out


def first_table_marginals() -> list[tuple[str, int, int, float, float]]:
    """(series, cutoff, next cutoff, measured minutes between them, the estimate's) in the December first table
    (swift_first_table.compare: the whole run's minutes against the estimate's training minutes, truncation_left, its
    lengths the lognormal's min(L, cutoff)): the same 1,000 rows at two cutoffs, so the model loading cancels and what
    is left is the tokens the longer cutoff adds, at the per-token rate."""
    import swift_first_table as ft

    rows = {r[0]: r for r in ft.compare()}
    out = []
    for prefix in MARGINAL_SERIES:
        cutoffs = [c for c in CUTOFFS if f"{prefix}{c}" in rows]
        for a, b in zip(cutoffs, cutoffs[1:], strict=False):
            ra, rb = rows[f"{prefix}{a}"], rows[f"{prefix}{b}"]
            out.append((prefix.rstrip("_"), a, b, rb[4] - ra[4], rb[5] - ra[5]))
    return out


def main() -> None:
    print("perf_heldout35's rows at the A100's datasheet peaks (GEMM and FlashAttention at the dense bf16 peak, HBM at"
          " its rated bandwidth), each row's stated lengths:")
    print(f"  {'row':32s} {'measured':>8s} {'estimate':>8s} {'at peaks':>8s} {'meas/peaks':>10s} {'HFU needed':>10s}")
    for rid, m, e, top, hfu in ceiling_rows():
        flag = "  <- faster than the peaks" if m > top else ""
        print(f"  {rid:32s} {m:8.2f} {e:8.2f} {top:8.2f} {m / top:10.2f} {hfu:10.2f}{flag}")
    print("\nkept samples under three shapes of the stated 3234.4 +- 2547.5 tokens ('delete'; share kept, mean tokens):")
    print("  cutoff " + "".join(f"{s:>18s}" for s in SHAPES))
    for c in CUTOFFS:
        print(f"  {c:6d} " + "".join("{:>10.2f} {:>7.0f}".format(*kept(s, c)) for s in SHAPES))
    print("\nbatch series at 2,048 (Qwen-7B LoRA): samples/s over batch 1, and E[L] / E[max of b L] under each shape:")
    print(f"  {'b':>2s} {'measured':>8s} {'predicted':>9s}" + "".join(f"{s:>10s}" for s in SHAPES))
    for b, m, p, ratios in batch_series():
        print(f"  {b:2d} {m:8.3f} {p:9.3f}" + "".join(f"{ratios[s]:10.3f}" for s in SHAPES))
    print("\na setting's cost a sample at 2,048 (Qwen-7B) in the published table and the December one (same code, its first"
          " 1,000 rows cut to the cutoff), and the published rows' mean kept length it implies:")
    print(f"  {'setting':40s} {'published':>9s} {'first':>7s}" + "".join(f"{s:>10s}" for s in SHAPES))
    for label, published, first, implied in difference_lengths():
        print(f"  {label:40s} {published:9.4f} {first:7.4f}" + "".join(f"{implied[s]:10.0f}" for s in SHAPES))
    print("\nthe December table's minutes between two cutoffs (the same 1,000 rows; loading cancels), measured and the"
          " estimate's:")
    for series, a, b, measured, estimate in first_table_marginals():
        print(f"  {series:22s} {a:5d} -> {b:5d} {measured:7.2f} {estimate:7.2f} ({100 * (estimate - measured) / measured:+.1f}%)")


if __name__ == "__main__":
    main()
