"""Time-to-train: tokens / throughput, divided by the goodput left after failures and checkpoints.

- Wall-clock = tokens_total / (tokens_per_s x goodput) (Narayanan 2021 s5.1 "8TP/(nX)" before failures;
  goodput from reliability.py, Daly 2006 / Kokolis 2024).
- GPU-hours = wall-clock hours x GPUs (how Llama 1/2 model cards report them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from trainsizer.estimate.calibration import Calibration
from trainsizer.estimate.reliability import reliability


@dataclass(frozen=True)
class TrainTime:
    train_days: float
    gpu_hours: float
    goodput: float
    ideal_days: float  # without failures
    expected_failures: float = 0.0  # job-stopping failures expected over the run


def whole_steps(tokens_total: float, tokens_per_step: float) -> int:
    """Optimizer steps to consume `tokens_total` (0 when unknown): a partial last batch is one more step."""
    if tokens_total <= 0 or tokens_per_step <= 0:
        return 0
    return max(1, math.ceil(tokens_total / tokens_per_step - 1e-9))


def tokens_run(tokens_total: float, tokens_per_step: float) -> float:
    """Tokens a run processes: whole optimizer steps, as a real run takes them (0 when unknown). The one
    definition the estimate and the plan's pricing share."""
    return whole_steps(tokens_total, tokens_per_step) * float(tokens_per_step)


def time_to_train(tokens_total: float, tokens_per_s: float, params_total: float, gpus: int, gpus_per_node: int,
                  *, calibration: Calibration | None = None, include_failures: bool = True, extra_s: float = 0.0,
                  **reliability_kwargs) -> TrainTime:
    """Days and GPU-hours to train on `tokens_total` tokens (0 tokens -> zeros); `extra_s`: wall-clock seconds the
    run spends beside its steps (evaluation passes, estimate.evaluation)."""
    if tokens_total <= 0 or tokens_per_s <= 0:
        return TrainTime(0.0, 0.0, 1.0, 0.0)
    if calibration is not None and calibration.storage_gb_s and "storage_gb_s" not in reliability_kwargs:
        reliability_kwargs["storage_gb_s"] = calibration.storage_gb_s
    rel = reliability(params_total, gpus, gpus_per_node, **reliability_kwargs)
    good = rel.goodput if include_failures else 1.0
    ideal_s = tokens_total / tokens_per_s + extra_s
    wall_s = ideal_s / good
    failures = wall_s / rel.job_mtbf_s if include_failures else 0.0
    return TrainTime(wall_s / 86400.0, wall_s / 3600.0 * gpus, good, ideal_s / 86400.0, failures)
