"""Runs benchmarks/memory_validation.py and holds it to its stated tolerances."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "memory_validation.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("memory_validation", BENCH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["memory_validation"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_zero_paper_within_tolerance(bench) -> None:
    cases = bench.zero_cases()
    assert len(cases) == 58
    bad = [(c.case, c.error, c.tolerance) for c in cases if abs(c.error) > c.tolerance]
    assert not bad
    # the tolerance is 1% except where the paper's rounding is coarser than 1%
    assert sum(c.tolerance > bench.ZERO_TOLERANCE for c in cases) <= 3  # 1.9, 0.47, 0.12 GB


def test_qwen_measured_mape(bench) -> None:
    cases = bench.qwen_cases()
    assert len(cases) == 81
    s = bench.summary(cases)
    assert s["mape"] <= bench.QWEN_MAPE_TARGET
    assert s["worst"] < 0.45  # reported, not a target: see the benchmark output


def test_qwen_qlora_within_12_percent_at_every_length(bench) -> None:
    """Issue 13: the longest sequence a QLoRA fine-tune fits was predicted ~30% off (the loss on Qwen-1's
    16-bit logits counted as fp32). The subset's MAPE is held to the issue's 12%, and the longest sequences may
    not drift apart from the short ones again."""
    cases = [c for c in bench.qwen_cases() if c.subset == "Q-LoRA"]
    assert len(cases) == 24
    assert bench.summary(cases)["mape"] <= 0.12
    long_rows = [c for c in cases if c.case.endswith("_s8192")]
    assert all(abs(c.error) < 0.15 for c in long_rows), [(c.case, c.error) for c in long_rows]


def test_qwen_full_parameter_runs_as_its_zero3_script_within_12_percent(bench) -> None:
    """finetune_ds.sh runs DeepSpeed ZeRO-3; read as ZeRO-2, the 7B two-GPU rows came out 21-41% high."""
    cases = [c for c in bench.qwen_cases() if c.subset == "Full-parameter"]
    assert len(cases) == 9
    assert bench.summary(cases)["mape"] <= 0.12
    seven = [c for c in cases if c.case.startswith("qwen1_7B")]
    assert all(abs(c.error) < 0.15 for c in seven), [(c.case, c.error) for c in seven]


def test_qlora_claims_hold(bench) -> None:
    for claim, _pred, _thr, ok in bench.qlora_claims():
        assert ok, claim


def test_benchmark_prints_table(bench, capsys) -> None:
    bench.main()
    out = capsys.readouterr().out
    assert "predicted GiB" in out and "MAPE" in out
