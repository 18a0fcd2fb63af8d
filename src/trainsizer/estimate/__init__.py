"""Estimators: memory per GPU, step time, time to train, cost and energy of a training job.

Public API (everything else is internal to its module):

- inputs: `Training`, `System`, `Strategy` (fields may be numpy arrays: one entry per strategy)
- rules: `check_strategy` (one strategy: raises `StrategyError(rule, detail)`, returns warnings),
  `valid_mask` (arrays), `RULES`
- memory: `estimate_memory` -> `MemoryEstimate`, `memory_per_gpu_bytes` (arrays), `MemoryOptions`
- time: `estimate_time` -> `TimeEstimate`, `Calibration`
- the search's entry point: `evaluate_batch` (rules + memory + time of many strategies, numpy arrays)
- after the step: `time_to_train`, `rent_cost`, `buy_cost`, `energy`
- memory limits: `max_micro_batch`, `max_seq_len`, `max_layers`, `max_params` (-> `FitResult`)
- frameworks: `FRAMEWORKS`, `resolve_framework` (see `estimate.framework` for the "auto" rule)

Importing this package loads numpy and the small input/energy modules only; the estimators (and pydantic,
the YAML constants) load on first use of their names.
"""

from __future__ import annotations

import sys
import types
from importlib import import_module
from typing import TYPE_CHECKING, Any

# `energy` is both a module and a function: bind the function eagerly so the name never means the module.
from trainsizer.estimate.energy import energy
from trainsizer.estimate.inputs import FRAMEWORKS, Strategy, System, Training

_LAZY = {
    "check_strategy": ("validate", "check_strategy"),
    "valid_mask": ("validate", "valid_mask"),
    "RULES": ("validate", "RULES"),
    "estimate_memory": ("memory", "estimate_memory"),
    "memory_per_gpu_bytes": ("memory", "memory_per_gpu_bytes"),
    "MemoryEstimate": ("memory", "MemoryEstimate"),
    "MemoryOptions": ("memory", "MemoryOptions"),
    "estimate_time": ("step_time", "estimate_time"),
    "TimeEstimate": ("step_time", "TimeEstimate"),
    "Calibration": ("calibration", "Calibration"),
    "evaluate_batch": ("batch", "evaluate_batch"),
    "time_to_train": ("train_time", "time_to_train"),
    "rent_cost": ("cost", "rent_cost"),
    "buy_cost": ("cost", "buy_cost"),
    "max_micro_batch": ("fit", "max_micro_batch"),
    "max_seq_len": ("fit", "max_seq_len"),
    "max_layers": ("fit", "max_layers"),
    "max_params": ("fit", "max_params"),
    "FitResult": ("fit", "FitResult"),
    "resolve_framework": ("framework", "resolve"),
}

__all__ = [
    "FRAMEWORKS", "RULES", "Calibration", "FitResult", "MemoryEstimate", "MemoryOptions", "Strategy", "System",
    "TimeEstimate", "Training", "buy_cost", "check_strategy", "energy", "estimate_memory", "estimate_time",
    "evaluate_batch", "max_layers", "max_micro_batch", "max_params", "max_seq_len", "memory_per_gpu_bytes",
    "rent_cost", "resolve_framework", "time_to_train", "valid_mask",
]


def __getattr__(name: str) -> Any:
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'trainsizer.estimate' has no attribute {name!r}") from None
    value = getattr(import_module(f"trainsizer.estimate.{module}"), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _CallableModule(types.ModuleType):
    """`trainsizer.estimate(job_or_scenario, ...)`: the package is also the library's one-configuration entry
    point (`trainsizer.api.estimate`), so `trainsizer.estimate` means the same thing whether or not this
    package has been imported."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from trainsizer.api import estimate

        return estimate(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule


if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names load lazily
    from trainsizer.estimate.batch import evaluate_batch
    from trainsizer.estimate.calibration import Calibration
    from trainsizer.estimate.cost import buy_cost, rent_cost
    from trainsizer.estimate.fit import FitResult, max_layers, max_micro_batch, max_params, max_seq_len
    from trainsizer.estimate.framework import resolve as resolve_framework
    from trainsizer.estimate.memory import (
        MemoryEstimate,
        MemoryOptions,
        estimate_memory,
        memory_per_gpu_bytes,
    )
    from trainsizer.estimate.step_time import TimeEstimate, estimate_time
    from trainsizer.estimate.train_time import time_to_train
    from trainsizer.estimate.validate import RULES, check_strategy, valid_mask
