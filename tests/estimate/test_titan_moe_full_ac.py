"""benchmarks/titan_moe_full_ac.py (known-gaps 214 (d)): torchtitan's token-choice MoE block under full activation
checkpointing leaves only its output allocated after the forward (CPU replay, eager), while without the checkpoint it
keeps its routed tensors; the compiled replay (Inductor) is the script's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import titan_moe_full_ac as tm  # noqa: E402

pytestmark = pytest.mark.torch


def test_the_checkpointed_moe_block_keeps_its_output_alone():
    out = 2 * tm.D  # the block's 16-bit output a token
    assert tm.held_bytes_a_token(full_ac=True, compiled=False) == pytest.approx(out, rel=0.01)
    assert tm.held_bytes_a_token(full_ac=False, compiled=False) > 2 * tm.D * tm.K  # the routed copies at least
