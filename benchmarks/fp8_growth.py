"""FP8's extra step-time growth with scale in NVIDIA's DGX Cloud benchmark tables: weak scaling (the same per-GPU batch
at every GPU count), FP8 rows against the BF16 rows of the same model and release (issue 13; docs/known-gaps.md 252).

The tables: dgxc-benchmarking v25.04 (NeMo 2 recipes on NeMo 25.02; the development set's step-time rows of
benchmarks/data/throughput.csv, perf_modern's jobs), v24.11 (NeMo 1 on NeMo 24.05 / 24.09; perf_heldout62's held-out
rows) and v25.05 on GB200 (NeMo 25.04: perf_heldout34's Llama 4 Maverick and Grok-1 rows at 128 / 256 / 512 GPUs, their
tokens/s a GPU read back as the step: sequence x global batch / (rate x GPUs)). A series is one model, release, precision and layout (TP / PP / VP / CP / EP, sequence, micro-batch) at two or
more GPU counts; an FP8 series is paired with the BF16 series of its model and release over the same lowest and highest
GPU counts (the layout the same, or said to differ: the v25.04 70B runs PP 8 x CP 1 in FP8, PP 4 x CP 2 in BF16).

Printed per pair, measured and predicted:
- growth: the step at the highest count over the step at the lowest, FP8's over BF16's ("FP8 / BF16 growth");
- FP8's extra seconds: FP8's step growth less BF16's relative growth applied to FP8's lowest-count step, and the
  estimate's extra by breakdown term (tp_comm holds delayed scaling's amax all-reduces, step_time
  _delayed_amax_reductions; dp_comm the gradient reduce-scatter and the 1-byte FP8 parameter all-gather);
- the synchronous amax reductions a step under delayed scaling (two a model chunk and micro-batch: 2 m v) and the
  data-parallel replicas they synchronise (the TP x CP ranks of a replica already wait for each other every layer),
  the measured extra each reduction would carry, and what a per-segment jitter would have to be to carry it: the
  standard deviation, as a share of a segment (the FP8 step over 2 m v), of a delay independent across replicas and
  segments whose largest of d draws each reduction waits for (Blom's expected maximum of d normal draws). A figure a
  source would have to show before it is charged; nothing here is fitted or fed back to the estimate.

Sign: growth ratios > 1 = slower at the highest count.

Run: python benchmarks/fp8_growth.py
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

import perf_heldout34 as p34
import perf_heldout62 as p62
import perf_modern as pm
from harness import degrees, num, whole
from trainsizer.estimate.step_time import step_time_arrays

MIN_EXTRA_S = 0.05  # the summary's pairs: FP8 growing this much more than BF16's relative growth (s)
TERMS = ("compute", "tp_comm", "cp_comm", "ep_comm", "dp_comm", "pp_bubble", "pp_comm", "optimizer")


@dataclass(frozen=True)
class Point:
    """One row: a release's model at one GPU count and precision, measured and predicted step (s)."""

    release: str
    model: str
    fp8: bool
    layout: tuple  # (tp, pp, vpp, cp, ep, seq, micro_batch)
    gpus: int
    dp: int
    micro_batches: int  # a pipeline's micro-batches a step: global batch / (DP x micro-batch)
    measured: float
    predicted: float
    terms: dict = field(default_factory=dict)  # the estimate's breakdown (s)


def _layout(r: dict[str, str]) -> tuple:
    return tuple(whole(r[c], 1) or 1 for c in ("tp", "pp", "vpp", "cp", "ep", "seq_len", "micro_batch"))


def _point(release: str, r: dict[str, str], measured: float, predicted: float, terms: dict) -> Point:
    gpus, tp, pp, cp, dp = degrees({**r, "dp": ""})
    m = whole(r["global_batch_seqs"]) // (dp * (whole(r["micro_batch"], 1) or 1))
    return Point(release, r["model"], "fp8" in r["precision"].lower(), _layout(r), gpus, dp, m, measured, predicted,
                 terms)


def v2504_points() -> list[Point]:
    """The development set's dgxc v25.04 step-time rows (perf_modern's jobs)."""
    out = []
    for r in pm.modern_rows():
        if not r["source"].startswith("NVIDIA/dgxc") or r["metric"] != "step_time":
            continue
        model, training, system, strategy, _ = pm.configure(r)
        res = step_time_arrays(model, training, system, strategy)
        terms = {k: float(np.asarray(res[k]).reshape(-1)[0]) for k in TERMS}
        out.append(_point("v25.04", r, num(r["value"]), float(np.asarray(res["step_s"]).reshape(-1)[0]), terms))
    return out


def v2411_points() -> list[Point]:
    """perf_heldout62's dgxc v24.11 rows (held out)."""
    return [_point("v24.11", r, c.measured, c.predicted, dict(res["time"]["breakdown_s"]))
            for c, res, r in p62.run_all() if not c.skipped]


def v2505_points() -> list[Point]:
    """perf_heldout34's dgxc v25.05 rows (held out), the release keyed by part: tokens/s a GPU as the step."""
    out = []
    for c, res, r in p34.dgxc_run():
        if c.skipped:
            continue
        per_gpu = whole(r["seq_len"]) * whole(r["global_batch_seqs"]) / whole(r["gpu_count"])
        out.append(_point(f"v25.05 {r['accelerator']}", r, per_gpu / c.measured, per_gpu / c.predicted,
                          dict(res["time"]["breakdown_s"])))
    return out


def all_points() -> list[Point]:
    return v2504_points() + v2411_points() + v2505_points()


@dataclass(frozen=True)
class Pair:
    """An FP8 series and the BF16 series of its model and release, each at the same lowest and highest GPU count."""

    fp8_lo: Point
    fp8_hi: Point
    bf16_lo: Point
    bf16_hi: Point

    @property
    def same_layout(self) -> bool:
        return self.fp8_lo.layout == self.bf16_lo.layout

    def growth(self, measured: bool) -> tuple[float, float]:
        """(FP8, BF16) step at the highest count over the lowest."""
        def step(p: Point) -> float:
            return p.measured if measured else p.predicted
        return step(self.fp8_hi) / step(self.fp8_lo), step(self.bf16_hi) / step(self.bf16_lo)

    def extra_s(self, measured: bool) -> float:
        """FP8's step growth (s) beyond BF16's relative growth applied to FP8's lowest-count step."""
        g_f, g_b = self.growth(measured)
        lo = self.fp8_lo.measured if measured else self.fp8_lo.predicted
        return lo * (g_f - g_b)

    def extra_by_term(self) -> dict[str, float]:
        """The estimate's FP8 extra (s) by breakdown term, each term's BF16 growth scaled by the steps' ratio."""
        r = self.fp8_lo.predicted / self.bf16_lo.predicted
        return {k: (self.fp8_hi.terms.get(k, 0.0) - self.fp8_lo.terms.get(k, 0.0))
                - r * (self.bf16_hi.terms.get(k, 0.0) - self.bf16_lo.terms.get(k, 0.0)) for k in TERMS}

    def reductions(self) -> int:
        """Delayed scaling's synchronous amax all-reduces a step: two a model chunk and micro-batch (2 m v; 245 (c))."""
        return 2 * self.fp8_hi.micro_batches * self.fp8_hi.layout[2]


def expected_max(n: int) -> float:
    """Blom's (1958) approximation of the expected largest of n standard normal draws; 0 for one draw."""
    return 0.0 if n <= 1 else NormalDist().inv_cdf((n - 0.375) / (n + 0.25))


def implied_jitter(rest_s: float, reductions: int, segment_s: float, d_lo: int, d_hi: int) -> float:
    """The per-segment delay's standard deviation, as a share of `segment_s`, that makes `reductions` waits on the
    largest of d draws grow by `rest_s` from d_lo to d_hi replicas (nan where d does not grow)."""
    gap = expected_max(d_hi) - expected_max(d_lo)
    if gap <= 0.0 or reductions <= 0:
        return float("nan")
    return rest_s / reductions / gap / segment_s


def pairs(points: list[Point]) -> list[Pair]:
    """Every FP8 series paired with its model and release's BF16 series over the same lowest and highest counts
    (the BF16 series of the same layout where there is one)."""
    series: dict[tuple, dict[int, Point]] = {}
    for p in points:
        series.setdefault((p.release, p.model, p.fp8, p.layout), {})[p.gpus] = p
    out = []
    for (release, model, fp8, layout), s in series.items():
        if not fp8 or len(s) < 2:
            continue
        lo, hi = min(s), max(s)
        twins = [b for (r2, m2, f2, l2), b in series.items() if (r2, m2, f2) == (release, model, False)
                 and lo in b and hi in b]
        if twins:
            b = next((b for b in twins if b[lo].layout == layout), twins[0])
            out.append(Pair(s[lo], s[hi], b[lo], b[hi]))
    return out


def pair_line(p: Pair) -> str:
    gm, pr = p.growth(True), p.growth(False)
    lo, hi = p.fp8_lo, p.fp8_hi
    note = "" if p.same_layout else " (BF16 layout differs)"
    return (f"  {lo.release} {lo.model:28s} {lo.gpus:>4d} -> {hi.gpus:>4d} GPUs: FP8 / BF16 growth measured "
            f"{gm[0] / gm[1]:.3f} ({gm[0]:.3f} / {gm[1]:.3f}), predicted {pr[0] / pr[1]:.3f} ({pr[0]:.3f} / "
            f"{pr[1]:.3f}){note}")


def detail_line(p: Pair) -> str:
    by = p.extra_by_term()
    meas, pred = p.extra_s(True), p.extra_s(False)
    n, d_lo, d_hi = p.reductions(), p.fp8_lo.dp, p.fp8_hi.dp
    rest = meas - pred
    seg = p.fp8_lo.measured / n
    sigma = implied_jitter(rest, n, seg, d_lo, d_hi)
    return (f"      FP8 extra: measured {meas:+.3f} s, predicted {pred:+.3f} s (tp_comm {by['tp_comm']:+.3f}, dp_comm "
            f"{by['dp_comm']:+.3f}, other {pred - by['tp_comm'] - by['dp_comm']:+.3f}); {n} amax reductions a step, "
            f"DP {d_lo} -> {d_hi}: the rest {1e3 * rest / n:.3f} ms a reduction, a jitter of {100 * sigma:.1f}% of "
            f"a {1e3 * seg:.1f} ms segment")


def main() -> None:
    ps = pairs(all_points())
    print("FP8's step growth with the GPU count against BF16's (weak scaling; dgxc v25.04 = development set, v24.11 = "
          "perf_heldout62, v25.05 GB200 = perf_heldout34, held out):")
    for p in ps:
        print(pair_line(p))
        print(detail_line(p))
    for release in ("v25.04", "v24.11", "v25.05 gb200"):
        sel = [p for p in ps if p.fp8_lo.release == release]
        meas = [p.growth(True)[0] / p.growth(True)[1] for p in sel]
        pred = [p.growth(False)[0] / p.growth(False)[1] for p in sel]
        share = [p.extra_s(False) / p.extra_s(True) for p in sel if p.extra_s(True) > MIN_EXTRA_S] or [float("nan")]
        print(f"{release}: {len(sel)} pairs, FP8 / BF16 growth measured {min(meas):.3f}-{max(meas):.3f}, predicted "
              f"{min(pred):.3f}-{max(pred):.3f}; where FP8's measured extra exceeds {MIN_EXTRA_S} s ({len(share)} of "
              f"them) the estimate carries {100 * min(share):.0f}-{100 * max(share):.0f}% of it")


if __name__ == "__main__":
    main()
