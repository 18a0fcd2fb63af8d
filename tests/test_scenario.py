"""Scenario: a batch beyond the data is refused; time-to-train never shorter than the steps it needs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError
from trainsizer.evaluate import evaluate
from trainsizer.scenario import resolve_job

JOB = {"model": "llama-3.1-8b", "method": "lora", "seq_len": 4096,
       "hardware": {"accelerator": "h100-sxm-80gb", "count": 8, "per_node": 8},
       "strategy": {"tp": 1, "dp": 8, "micro_batch": 1}}


def test_batch_larger_than_the_data_is_refused():
    """Issue 15: 1e8 tokens with 100,000 sequences of 4,096 per step reported 1 step of 33,594 s in 0.095 days."""
    with pytest.raises(SpecError, match=r"global_batch: one step needs 409,600,000 tokens, more than"):
        resolve_job({**JOB, "data": {"tokens": 1e8}, "global_batch": {"sequences": 100_000}}, load_catalog())


@settings(max_examples=15)
@given(tokens=st.floats(1e6, 1e10), seqs=st.integers(1, 512).map(lambda n: 8 * n))
def test_train_days_never_shorter_than_its_steps(tokens, seqs):
    job = {**JOB, "data": {"tokens": tokens}, "global_batch": {"sequences": seqs}}
    if seqs * 4096 > tokens:
        with pytest.raises(SpecError):
            resolve_job(job, load_catalog())
        return
    sc = resolve_job(job, load_catalog())
    out = evaluate(sc, load_catalog())
    steps, step_s = out["job"]["steps"], out["time"]["step_s"]
    assert steps >= tokens / (seqs * 4096)
    assert out["time"]["train_days"] * 86400 >= steps * step_s * (1 - 1e-9)
