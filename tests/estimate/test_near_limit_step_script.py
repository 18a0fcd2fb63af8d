"""The device script for known-gaps 237 (a) (benchmarks/device/near_limit_step.py): its CPU smoke run prints one JSON
line for the one level a CPU runs (no ballast), then the device line; its full-size layer is a TP 4 shard of
perf_heldout57's 80B layer, six of them as nanotron's PP 16 rank holds."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from .device_scripts import DEVICE_DIR, tiny_lines

pytest.importorskip("torch", reason="the device script's CPU smoke run needs PyTorch (the [dev] install has none)")

SCRIPT = DEVICE_DIR / "near_limit_step.py"


def test_tiny_run_prints_a_level_and_the_device():
    rows = tiny_lines(SCRIPT)
    assert len(rows) == 2
    assert set(rows[0]) == {"ballast_gib", "step_ms", "alloc_retries"} and rows[0]["ballast_gib"] == 0.0
    assert rows[0]["step_ms"] > 0 and rows[0]["alloc_retries"] == 0
    assert rows[1]["device"] == "cpu" and rows[1]["layers"] == 2


def test_the_full_size_layer_is_the_80b_at_tp_4():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    sys.path.insert(0, str(SCRIPT.parent))
    import near_limit_step as nl  # not --tiny here

    import perf_heldout57 as p57

    m = p57.models()["nanotron-bench-80b"]["model"]
    assert (nl.H, nl.HEADS * 4, nl.FFN * 4) == (m["hidden"], m["heads"], m["ffn"])
    assert nl.HEADS * nl.HEAD_DIM * 4 == m["hidden"] and nl.TOKENS == 4096
    split = p57.nanotron_split(m["layers"], m["hidden"], m["heads"], m["ffn"], m["vocab"], 16)
    assert nl.LAYERS == max(split)
