"""trainsizer: size, cost and accept hardware for AI training jobs.

Public API (typed; every name loads on first use, so `import trainsizer` stays fast):

- `load_catalog(overlays=())` -> `Catalog`; `load_model(spec)` -> `ModelArch`; `load_job(path_or_mapping)` -> `Job`
- `resolve(job, catalog=None, overrides=None)` -> `Scenario` (model, training, system, strategy)
- `estimate(job_or_scenario, catalog=None, calibration=None)` -> `EstimateResult` (memory, time, cost,
  energy, goal); `trainsizer.estimate` is also the estimators' package, which is callable
- `fit(job_or_scenario, questions=FIT_QUESTIONS)` -> `FitAnswers`
- `plan(...)`: the plan package (`trainsizer.plan`)
- errors: `TrainsizerError` (base), `SpecError`, `StrategyError`; `Calibration` (measured figures)

See `trainsizer.api` for an example. The estimators themselves (numpy arrays of strategies) are in
`trainsizer.estimate`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_LAZY = {
    "load_catalog": "trainsizer.api",
    "load_model": "trainsizer.api",
    "load_job": "trainsizer.api",
    "resolve": "trainsizer.api",
    "fit": "trainsizer.api",
    "FIT_QUESTIONS": "trainsizer.api",
    "Catalog": "trainsizer.catalog.catalog",
    "ModelArch": "trainsizer.models.arch",
    "Job": "trainsizer.spec.job",
    "Scenario": "trainsizer.scenario",
    "EstimateResult": "trainsizer.evaluate",
    "FitAnswers": "trainsizer.evaluate",
    "Calibration": "trainsizer.estimate.calibration",
    "TrainsizerError": "trainsizer.errors",
    "SpecError": "trainsizer.errors",
    "StrategyError": "trainsizer.errors",
}

__all__ = [
    "FIT_QUESTIONS", "Calibration", "Catalog", "EstimateResult", "FitAnswers", "Job", "ModelArch", "Scenario",
    "SpecError", "StrategyError", "TrainsizerError", "__version__", "estimate", "fit", "load_catalog", "load_job",
    "load_model", "plan", "resolve",
]


def __getattr__(name: str) -> Any:
    # `trainsizer.plan(job) -> Plan` and `trainsizer.estimate(job) -> EstimateResult`: these packages are
    # callable (a submodule import would rebind the name to the package anyway); loaded on first use.
    if name in ("plan", "estimate"):
        return import_module(f"trainsizer.{name}")
    try:
        module = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'trainsizer' has no attribute {name!r}") from None
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names load lazily
    from trainsizer import estimate, plan
    from trainsizer.api import FIT_QUESTIONS, fit, load_catalog, load_job, load_model, resolve
    from trainsizer.catalog.catalog import Catalog
    from trainsizer.errors import SpecError, StrategyError, TrainsizerError
    from trainsizer.estimate.calibration import Calibration
    from trainsizer.evaluate import EstimateResult, FitAnswers
    from trainsizer.models.arch import ModelArch
    from trainsizer.scenario import Scenario
    from trainsizer.spec.job import Job
