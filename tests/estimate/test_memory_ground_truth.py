"""Estimator vs tensors autograd really saves (small plain-PyTorch models on CPU); see
benchmarks/memory_ground_truth.py for the modules and what each case exercises."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", minversion="2.5")  # SDPA enable_gqa

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "memory_ground_truth.py"


@pytest.fixture(scope="module")
def gt():
    torch.set_num_threads(2)
    spec = importlib.util.spec_from_file_location("memory_ground_truth", BENCH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["memory_ground_truth"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.torch
@pytest.mark.slow
def test_ground_truth_within_tolerance(gt) -> None:
    rows = gt.run()
    assert len(rows) == 2 * len(gt.CASES)
    bad = [(c.name, what, pred, got) for c, what, pred, got in rows if abs(pred - got) > gt.TOLERANCE * got]
    assert not bad


@pytest.mark.torch
def test_cases_cover_mechanisms(gt) -> None:
    kinds = {(c.model.name, c.impl, c.recompute, c.method) for c in gt.CASES}
    for rc in ("none", "selective", "full"):
        assert any(k[2] == rc for k in kinds)
    assert {c.model.name for c in gt.CASES} == {"tiny-llama", "tiny-qwen-moe", "tiny-mla"}
    assert any(c.method == "lora" for c in gt.CASES)
    assert {c.impl for c in gt.CASES} == {"sdpa", "eager"}
    assert len({c.seq for c in gt.CASES}) > 1 and len({c.batch for c in gt.CASES}) > 1


@pytest.mark.torch
def test_ground_truth_can_fail(gt) -> None:
    """A wrong estimate is caught: change the model the estimator sees, the activations must disagree."""
    c = gt.CASES[0]
    wrong = gt.GTCase(c.name, c.model.with_(ffn=c.model.ffn * 2), c.impl, c.recompute, c.seq, c.batch)
    got = gt.measure(c)["activations"]
    assert abs(gt.predict(wrong)["activations"] - got) > gt.TOLERANCE * got
