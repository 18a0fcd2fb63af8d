from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
import yaml

from trainsizer.catalog import load_catalog


@cache
def cached_plan(path: str, **_: object):
    """One plan per example for the whole session (plans are pure functions of the job and catalog)."""
    from trainsizer.plan.core import make_plan

    return make_plan(path, load_catalog())


@pytest.fixture
def plan_of():
    return cached_plan


REPO = Path(__file__).resolve().parents[2]


def make_job(**changes) -> dict:
    """A small multi-node job (llama-3.1-8b full fine-tune on 2 x 8 H100, NDR400) with changes applied."""
    job = {
        "name": "test job",
        "model": "llama-3.1-8b",
        "method": "full",
        "data": {"tokens": 1.0e9},
        "seq_len": 4096,
        "global_batch": {"sequences": 64},
        "goal": {"deadline_days": 30, "procurement": "buy"},
        "hardware": {"accelerator": "h100-sxm-80gb", "count": 16, "per_node": 8, "network": "ib-ndr400"},
        "strategy": {"tp": 1, "pp": 1, "fsdp": "full", "micro_batch": 1, "recompute": "selective"},
    }
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(job.get(key), dict):
            job[key] = {**job[key], **value}
        else:
            job[key] = value
    return job


@pytest.fixture(scope="session")
def catalog():
    from trainsizer.catalog import load_catalog

    return load_catalog()


@pytest.fixture
def build(catalog):
    """build(**job changes) -> BuildInput for the test job."""
    from trainsizer.plan.buildout.inputs import build_input
    from trainsizer.scenario import resolve_job

    def make(**changes):
        return build_input(resolve_job(make_job(**changes), catalog), catalog)

    return make


@pytest.fixture
def blocks(build):
    """blocks(**job changes) -> BuildOut."""
    from trainsizer.plan.buildout import build_blocks

    return lambda **changes: build_blocks(build(**changes))


def example_job(name: str, **changes) -> dict:
    """An example job without its hardware and strategy (so the search chooses them), sections updated."""
    data = yaml.safe_load((REPO / "examples" / name).read_text(encoding="utf-8"))
    data.pop("hardware", None)
    data.pop("strategy", None)
    for section, values in changes.items():
        data[section] = {**(data.get(section) or {}), **values}
    return data
