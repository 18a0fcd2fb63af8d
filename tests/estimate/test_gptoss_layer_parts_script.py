"""The device script for known-gaps 263 (e) (benchmarks/device/gptoss_layer_parts.py): its CPU smoke run prints the
environment line, the expert GEMMs with and without a bias per shape, and the attention with and without a learnable
sink and a sliding window, each with its time and rate."""

from __future__ import annotations

import pytest

from .device_scripts import DEVICE_DIR, tiny_lines

pytest.importorskip("torch", reason="the device script's CPU smoke run needs PyTorch (the [dev] install has none)")

SCRIPT = DEVICE_DIR / "gptoss_layer_parts.py"


def test_tiny_run_prints_each_part_with_and_without_its_gpt_oss_feature():
    head, *rows = tiny_lines(SCRIPT)
    assert head["device"] == "cpu" and head["transformer_engine"] is None
    experts = [r for r in rows if r["part"] == "experts"]
    attention = [r for r in rows if r["part"] == "attention"]
    assert [r["bias"] for r in experts] == [False, True]  # each shape without, then with, its bias
    assert {r["path"] for r in experts} == {"torch.nn.functional.linear loop"}  # TE is not used off a GPU
    assert [(r["softmax"], r["window"]) for r in attention] == [("vanilla", None), ("vanilla", 7),
                                                                ("learnable", None), ("learnable", 7)]
    assert {r["backend"] for r in attention} == {"-"}
    assert all(r["ms"] > 0 and r["tflops"] >= 0 for r in rows)
