"""The library's public face: load a job, resolve it against the catalog, estimate it, ask what fits.

    import trainsizer as ts

    catalog = ts.load_catalog()                               # shipped catalog (+ overlay files)
    scenario = ts.resolve("examples/sft-70b-16gpu.yaml", catalog, overrides={"tp": 2})
    result = ts.estimate(scenario, catalog)                   # memory, time, cost, energy, goal
    print(result["memory"]["fits"], result["time"]["step_s"])
    print(ts.fit(scenario, ["micro-batch"])["max_micro_batch"])

Bad input raises a `trainsizer.TrainsizerError` (`SpecError`: what is wrong, where, what is allowed;
`StrategyError`: the rule a strategy breaks). The `trainsizer` command is built on these functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from trainsizer.catalog.catalog import Catalog
    from trainsizer.estimate.calibration import Calibration
    from trainsizer.evaluate import EstimateResult, FitAnswers
    from trainsizer.models.arch import ModelArch
    from trainsizer.scenario import Scenario
    from trainsizer.spec.job import Job

    JobSource: TypeAlias = Path | str | Mapping[str, Any] | Job

FIT_QUESTIONS = ("micro-batch", "seq-len", "model")


def load_catalog(overlays: Sequence[Path | str] = ()) -> Catalog:
    """The hardware catalog: the shipped data, with overlay files (same shape) on top."""
    from trainsizer.catalog.catalog import load_catalog as _load

    return _load(overlays)


def load_model(spec: str | Path | Mapping[str, Any]) -> ModelArch:
    """A model architecture from a preset name, a Hugging Face config.json or an inline mapping."""
    from trainsizer.models import load_model as _load

    return _load(spec)


def load_job(source: Path | str | Mapping[str, Any]) -> Job:
    """A validated job from a YAML/JSON file or an already-parsed mapping (names not yet looked up)."""
    from trainsizer.spec.load import load_job as _load

    return _load(source)


def resolve(job: JobSource, catalog: Catalog | None = None, *,
            overrides: Mapping[str, Any] | None = None) -> Scenario:
    """Every name of a job looked up (model, accelerator, network): the inputs the estimators take.

    `job`: a file path, a mapping or a `Job`. `overrides`: hardware / strategy fields by their command-line
    names (`accelerator`, `count`, `tp`, `zero`, ... see `spec.overrides`), applied before validation."""
    from trainsizer.scenario import resolve_job
    from trainsizer.spec.job import Job as _Job

    catalog = catalog if catalog is not None else load_catalog()
    if not overrides:
        return resolve_job(job, catalog)
    from trainsizer.spec.load import read_mapping
    from trainsizer.spec.overrides import apply_overrides

    if isinstance(job, _Job):
        return resolve_job(apply_overrides(job.model_dump(mode="json", exclude_unset=True), overrides), catalog)
    if isinstance(job, Mapping):
        return resolve_job(apply_overrides(job, overrides), catalog)
    return resolve_job(job, catalog, data=apply_overrides(read_mapping(Path(job)), overrides))


def _scenario(job: Scenario | JobSource, catalog: Catalog | None) -> Scenario:
    from trainsizer.scenario import Scenario as _Scenario

    return job if isinstance(job, _Scenario) else resolve(job, catalog)


def estimate(job: Scenario | JobSource, catalog: Catalog | None = None,
             calibration: Calibration | Path | str | None = None) -> EstimateResult:
    """Memory per GPU, step time, MFU, time-to-train, cost, energy and the goal check of one configuration
    (the job must name its hardware and strategy). `calibration`: measured figures, or the path of a
    `trainsizer accept` result file whose `calibration` section holds them."""
    from trainsizer.evaluate import evaluate, load_calibration

    catalog = catalog if catalog is not None else load_catalog()
    scenario = _scenario(job, catalog)
    if isinstance(calibration, Path | str):
        calibration = load_calibration(calibration, scenario.training.precision)
    return evaluate(scenario, catalog, calibration)


def fit(job: Scenario | JobSource, questions: Iterable[str] = FIT_QUESTIONS,
        catalog: Catalog | None = None) -> FitAnswers:
    """The largest micro-batch, sequence length and model depth that fit the job's hardware and strategy
    (memory limits; everything else in the job is kept)."""
    from trainsizer.evaluate import reverse_questions

    return reverse_questions(_scenario(job, catalog), tuple(questions))
