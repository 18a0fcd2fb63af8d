"""Reverse questions: the largest micro-batch, sequence length or model that fits given hardware + strategy.

Memory grows monotonically in each of these (activations are linear in micro-batch and at least linear in
sequence length; parameters linear in layers), so each answer is a search over one integer:
- micro-batch: one vectorised call over every candidate (`memory_per_gpu_bytes`);
- sequence length and layers: bisection on `estimate_memory` (about 20 evaluations).
Answers are memory limits only (estimates made with `check=False`); `validate.check_strategy` still applies (e.g. batch divisibility).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import (
    DEFAULT_OPTIONS,
    MemoryEstimate,
    MemoryOptions,
    estimate_memory,
    memory_per_gpu_bytes,
)
from trainsizer.models.arch import ModelArch


@dataclass(frozen=True)
class FitResult:
    """The largest value that fits (0 when even the smallest does not) and the estimate at that value; when
    nothing fits, the smallest value tried and its estimate (`smallest`, `at_smallest`), which say why."""

    value: int
    estimate: MemoryEstimate | None
    what: str
    smallest: int = 0
    at_smallest: MemoryEstimate | None = None

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"what": self.what, "value": self.value,
                                  "memory": self.estimate.to_dict() if self.estimate else None}
        if self.at_smallest is not None:
            out["smallest"] = {"value": self.smallest, "memory": self.at_smallest.to_dict()}
        return out


def max_micro_batch(
    model: ModelArch, training: Training, system: System, strategy: Strategy, *, limit: int = 1024,
    options: MemoryOptions = DEFAULT_OPTIONS,
) -> FitResult:
    """Largest micro-batch (sequences per GPU per micro-step) that fits."""
    candidates = np.arange(1, limit + 1)
    vec = replace(strategy, micro_batch=candidates)
    _, fits = memory_per_gpu_bytes(model, training, system, vec, options)
    ok = candidates[fits]
    if ok.size == 0:
        return FitResult(0, None, "micro_batch", 1, estimate_memory(
            model, training, system, replace(strategy, micro_batch=1), options, check=False))
    best = int(ok.max())
    return FitResult(best, estimate_memory(model, training, system, replace(strategy, micro_batch=best), options,
                                           check=False),
                     "micro_batch")


def _bisect(lo: int, hi: int, ok) -> int:
    """Largest x in [lo, hi] with ok(x) (ok monotone decreasing); lo - 1 if none."""
    if not ok(lo):
        return lo - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def max_seq_len(
    model: ModelArch, training: Training, system: System, strategy: Strategy, *, granularity: int = 128,
    limit: int = 1 << 22, options: MemoryOptions = DEFAULT_OPTIONS,
) -> FitResult:
    """Longest sequence length (a multiple of `granularity`, of 2*cp under context parallelism and of tp x cp under
    sequence parallelism: the rules cp_divides_seq / sp_divides_seq) that fits: rows that long (unpacked samples'
    lengths set aside, Training.peak_row_tokens)."""
    cp, tp = int(np.asarray(strategy.cp)), int(np.asarray(strategy.tp))
    step = int(np.lcm(granularity, 2 * cp)) if cp > 1 else granularity
    if tp > 1 and bool(np.asarray(getattr(strategy, "sequence_parallel", True))):
        step = int(np.lcm(step, tp * cp))
    full_rows = replace(training, sample_mean_tokens=0.0)

    def est(k: int) -> MemoryEstimate:
        return estimate_memory(model, replace(full_rows, seq_len=k * step), system, strategy, options,
                               check=False)

    k = _bisect(1, max(1, limit // step), lambda k: est(k).fits)
    if k < 1:
        return FitResult(0, None, "seq_len", step, est(1))
    return FitResult(k * step, est(k), "seq_len")


def max_layers(
    model: ModelArch, training: Training, system: System, strategy: Strategy, *, limit: int = 4096,
    options: MemoryOptions = DEFAULT_OPTIONS,
) -> FitResult:
    """Most decoder layers of `model`'s architecture (width, heads, vocab kept) that fit; at least pp layers
    are needed. `FitResult.estimate` is for the scaled model; its parameter count is `scaled_model(...)`."""
    pp = int(np.asarray(strategy.pp)) * max(1, int(np.asarray(strategy.vpp)))

    def est(n: int) -> MemoryEstimate:
        return estimate_memory(model.with_(layers=n), training, system, strategy, options, check=False)

    n = _bisect(pp, max(pp, limit), lambda n: est(n).fits)
    if n < pp:
        return FitResult(0, None, "layers", pp, est(pp))
    return FitResult(n, est(n), "layers")


def max_params(
    model: ModelArch, training: Training, system: System, strategy: Strategy, *, limit: int = 4096,
    options: MemoryOptions = DEFAULT_OPTIONS,
) -> tuple[int, ModelArch | None]:
    """Largest parameter count reachable by scaling `model`'s depth, and the scaled architecture."""
    r = max_layers(model, training, system, strategy, limit=limit, options=options)
    if r.value == 0:
        return 0, None
    scaled = model.with_(layers=r.value)
    return scaled.params_total, scaled
