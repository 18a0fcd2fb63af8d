"""The device script for known-gaps 292 (f) (benchmarks/device/granitemoe_memory.py): its CPU smoke run trains the tiny
model for two steps of two micro-batches and prints a line a step, then one of the model states."""

from __future__ import annotations

import pytest

from .device_scripts import DEVICE_DIR, tiny_lines

torch = pytest.importorskip("torch", reason="the device script's CPU smoke run needs PyTorch (the [dev] install has none)")

SCRIPT = DEVICE_DIR / "granitemoe_memory.py"


def test_tiny_run_prints_a_line_a_step_then_the_model_states():
    rows = tiny_lines(SCRIPT)
    steps, states = rows[:-1], rows[-1]
    assert [r["step"] for r in steps] == [0, 1]
    assert all(r["setting"] == "default" and r["loss_finite"] for r in steps)
    assert steps[1]["longest"] == 24  # the record micro-batch the script puts in step RECORD_STEP
    assert all(r["max_reserved_gib"] is None for r in steps)  # no CUDA allocator on the CPU
    assert set(states) == {"setting", "params_gib", "optimizer_states_gib", "device"} and states["device"] == "cpu"
