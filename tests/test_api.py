"""The public API in `trainsizer/__init__.py`: lazy, typed, and the same answers as the modules it fronts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import trainsizer as ts
from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError, TrainsizerError
from trainsizer.evaluate import evaluate, reverse_questions
from trainsizer.scenario import resolve_job

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_import_is_light_and_every_public_name_resolves():
    code = ("import sys, trainsizer; "
            "print(sorted(m for m in ('numpy', 'pydantic', 'yaml', 'click', 'trainsizer.estimate') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    for name in ts.__all__:
        assert getattr(ts, name) is not None, name
    assert set(ts.__all__) == set(ts._LAZY) | {"__version__", "plan", "estimate"}
    assert ts.TrainsizerError is TrainsizerError and issubclass(ts.SpecError, ts.TrainsizerError)


def test_estimate_is_callable_whether_or_not_the_estimators_were_imported_first():
    code = ("import trainsizer.estimate.memory, trainsizer as ts; "
            "r = ts.estimate('{job}'); print(r['memory']['fits'], callable(ts.estimate.estimate_memory))")
    job = EXAMPLES / "lora-8b-one-gpu.yaml"
    out = subprocess.run([sys.executable, "-c", code.format(job=job)], capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["True", "True"]


def test_the_api_answers_as_the_modules_do():
    catalog = load_catalog()
    path = EXAMPLES / "sft-70b-16gpu.yaml"
    scenario = ts.resolve(path, catalog)
    assert scenario == resolve_job(path, catalog)
    assert ts.estimate(scenario, catalog) == evaluate(scenario, catalog)
    assert ts.estimate(path) == evaluate(scenario, catalog)  # a path, the shipped catalog
    assert ts.fit(scenario, ["micro-batch"]) == reverse_questions(scenario, ("micro-batch",))


def test_overrides_apply_to_paths_mappings_and_jobs():
    path = EXAMPLES / "sft-70b-16gpu.yaml"
    change = {"tp": 2, "dp": 8}
    from_path = ts.resolve(path, overrides=change)
    assert (from_path.strategy.tp, from_path.strategy.dp) == (2, 8)
    job = ts.load_job(path)
    assert ts.resolve(job, overrides=change).strategy == from_path.strategy
    data = job.model_dump(mode="json", exclude_unset=True)
    assert ts.resolve(data, overrides=change).strategy == from_path.strategy


def test_bad_input_raises_the_error_tree():
    with pytest.raises(SpecError) as err:
        ts.resolve({"model": "no-such-model", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
                    "global_batch": {"sequences": 8}})
    assert "model" in err.value.where
    with pytest.raises(ts.SpecError, match="needs hardware"):
        ts.estimate({"model": "llama-3.1-8b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
                     "global_batch": {"sequences": 8}})
