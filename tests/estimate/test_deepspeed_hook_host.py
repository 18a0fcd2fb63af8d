"""benchmarks/deepspeed_hook_host.py (docs/known-gaps.md 262 (c)): the transformers-shaped decoder it times has the
module tree DeepSpeed hooks, and its smoke run times the plain model (DeepSpeed is not a project dependency)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# the benchmark builds a torch model; the README's test command runs without torch
torch = pytest.importorskip("torch")

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import deepspeed_hook_host as dh  # noqa: E402


def test_the_decoder_calls_every_module_a_transformers_layer_does():
    """A layer: itself, two norms, the attention with q / k / v / o and its rotary module (called for q and k), the MLP
    with gate / up / down and act_fn: 15 calls; the model, embedding, final norm and LM head 4 more."""
    ids = torch.zeros((1, 4), dtype=torch.long)
    for layers in (1, 3):
        model = dh.Decoder(layers, 8, 16, 32)
        assert dh.module_calls(model, ids) == 4 + 15 * layers
        assert sum(1 for _ in model.parameters()) == 3 + 9 * layers


def test_the_smoke_run_times_the_plain_model():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-W", "ignore", str(BENCH / "deepspeed_hook_host.py"), "--tiny"],
                         capture_output=True, text=True, check=True, cwd=BENCH, env=env).stdout
    assert "19 module calls a forward, 12 parameters" in out
    assert "plain PyTorch forward + backward:" in out
    assert "deepspeed: not installed" in out or "added a module call" in out
