"""The device script for known-gaps 294 (e) (benchmarks/device/grouped_mm_short_k.py): its CPU smoke run prints the
environment line with a grouped product that agrees with a per-group loop, then the forward and weight-gradient
forms of every case with its TFLOP/s from its shape and time; the full run's cases sweep K at fixed FLOPs and carry
the published anchors."""

from __future__ import annotations

import importlib.util

import pytest

from .device_scripts import DEVICE_DIR, tiny_lines

pytest.importorskip("torch", reason="the device script's CPU smoke run needs PyTorch (the [dev] install has none)")

SCRIPT = DEVICE_DIR / "grouped_mm_short_k.py"


def test_tiny_run_prints_both_forms_of_every_case_with_its_rate():
    head, *lines = tiny_lines(SCRIPT)
    assert head["device"] == "cpu" and head["torch"] and head["check_max_abs_err"] < 0.5
    lines = [x for x in lines if "case" in x]
    cases = {x["case"] for x in lines}
    assert len(lines) == 2 * len(cases) and {x["form"] for x in lines} == {"fwd", "wgrad"}
    for x in lines:
        flops = 2.0 * x["groups"] * x["rows_a_group"] * x["n"] * x["k"]
        assert x["ms"] > 0 and x["tflops"] == pytest.approx(flops / x["ms"] / 1e9)
        assert x["grouped_over_plain"] == pytest.approx(x["plain_mm_ms"] / x["ms"])
        assert x["k"] % 8 == 0 and x["n"] % 8 == 0


def test_full_cases_sweep_k_at_fixed_flops_and_carry_the_anchors(monkeypatch):
    monkeypatch.syspath_prepend(str(DEVICE_DIR))
    spec = importlib.util.spec_from_file_location("grouped_mm_short_k_full", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # no --tiny in sys.argv: the device run's cases
    cases = mod.cases()
    sweep = [c for c in cases if c[0].startswith("k sweep G128")]
    assert [c[4] for c in sweep] == [256, 512, 768, 1024, 1408, 2048, 4096, 7168]
    assert {(c[1], c[2], c[3]) for c in sweep} == {(128, 4096, 2048)}
    names = {c[0] for c in cases}
    assert {"qwen3_30b_a3b w2 G128 M4096", "qwen3_30b_a3b w2 G16 M2048", "dsv3_16b w1", "dsv3_671b w1"} <= names


def test_tiny_run_times_every_combine_op_at_each_top_k():
    _, *lines = tiny_lines(SCRIPT)
    combine = [x for x in lines if "combine" in x]
    ops = {"gather", "scatter_add", "index_add", "index_put accumulate"}
    assert {x["top_k"] for x in combine} == {1, 4, 8}
    for name in {x["combine"] for x in combine}:
        assert {x["op"] for x in combine if x["combine"] == name} == ops
    for x in combine:
        assert x["ms"] > 0 and x["gelem_s"] == pytest.approx(x["tokens"] * x["top_k"] * x["hidden"] / x["ms"] / 1e6)
