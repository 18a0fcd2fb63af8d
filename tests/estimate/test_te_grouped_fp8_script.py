"""The device script for known-gaps 332 (c) (benchmarks/device/te_grouped_fp8.py): its CPU smoke run prints one JSON
line a case (Transformer Engine and FP8 need a GPU), and its cases are the held-out rows' routed-expert shapes."""

from __future__ import annotations

import pytest

from .device_scripts import DEVICE_DIR, tiny_lines

pytest.importorskip("torch", reason="the device script's CPU smoke run needs PyTorch (the [dev] install has none)")

SCRIPT = DEVICE_DIR / "te_grouped_fp8.py"


def test_tiny_run_prints_the_torch_stand_in_a_case():
    rows = tiny_lines(SCRIPT)
    assert [(r["case"], r["path"], r["precision"]) for r in rows] == [("tiny", "torch-loop", "fp32")]
    assert rows[0]["ms"] >= 0.0


def test_the_cases_are_the_rows_expert_shapes():
    """Mixtral 8x22B (hidden 6,144, expert FFN 16,384) at expert TP 2 and 1, Grok-1 (FFN 32,768) at expert TP 4: the
    fc1 output is gate + up over the expert TP, fc2's input the FFN over it; the rows are the estimate's."""
    import importlib
    import sys

    sys.path.insert(0, str(SCRIPT.parent))
    mod = importlib.import_module("te_grouped_fp8")  # not --tiny here: the full cases
    by = {c[0]: c[1:] for c in mod.CASES}
    assert by["mixtral-8x22b mcore etp2"] == (6144, 2 * 16384 // 2, 16384 // 2, 2, 4096)
    assert by["mixtral-8x22b folding etp1"] == (6144, 2 * 16384, 16384, 1, 4096)
    assert by["grok-1 v24.11 ep2 etp4"] == (6144, 2 * 32768 // 4, 32768 // 4, 4, 2048)
    assert by["grok-1 v24.11 ep8 etp4"][3:] == (1, 8192)
    assert by["llama3.1-405b dense tp8 cp2"] == (16384, 13312, 6656, 1, 4096)  # the dense control
