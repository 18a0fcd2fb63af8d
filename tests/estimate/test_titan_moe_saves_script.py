"""The device script for known-gaps 275 (c) (benchmarks/device/titan_moe_saves.py): its CPU smoke run prints the eager
mode's line (a finite input gradient through the checkpointed blocks) and the device line; its full-size block is
Qwen3-30B-A3B's (the model catalog's widths), and the forced balance gives every expert the same share."""

from __future__ import annotations

import sys

import pytest

from trainsizer.models import load_model

from .device_scripts import DEVICE_DIR, tiny_lines

pytest.importorskip("torch", reason="the device script's CPU smoke run needs PyTorch (the [dev] install has none)")

SCRIPT = DEVICE_DIR / "titan_moe_saves.py"


def test_tiny_run_prints_the_eager_mode_and_the_device():
    rows = tiny_lines(SCRIPT)
    assert rows[0] == {"mode": "eager", "grad_finite": True}
    assert rows[-1]["device"] == "cpu" and rows[-1]["block_input_b_per_token"] == 2 * rows[-1]["hidden"]


def test_the_full_size_block_is_qwen3_30b_a3b():
    sys.path.insert(0, str(SCRIPT.parent))
    import titan_moe_saves as s  # not --tiny here

    m = load_model("qwen3-30b-a3b")
    assert (s.H, s.HEADS, s.KV, s.E, s.K) == (m.hidden, m.heads, m.kv_heads, m.experts, m.experts_per_token)
    assert s.FFN == m.expert_ffn and s.HEAD_DIM == m.head_dim
    assert s.TOKENS * s.K % s.E == 0  # the forced balance's equal shares
    assert s.MODES == ("eager", "compiled", "compiled-breaks")
