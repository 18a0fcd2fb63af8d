"""benchmarks/titan_rerun_graph_held.py (known-gaps 282 (a)): under torchtitan's non-reentrant full AC a router output
kept on a per-layer object past the step (the Nous fork's DeepEP manager) holds each layer's re-run graph up to the
router, about what the block saves there without AC; without the kept output nothing is left after the backward
(CPU replay, eager; the compiled replay with a graph break at the dispatch is the script's)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import titan_rerun_graph_held as tr  # noqa: E402

pytestmark = pytest.mark.torch


def test_a_kept_router_output_holds_the_rerun_graph_up_to_the_router():
    tokens, layers = 256, 2
    assert tr.held_bytes_a_token_layer(held=False, compiled=False, tokens=tokens, layers=layers) == pytest.approx(
        0.0, abs=8.0)
    held = tr.held_bytes_a_token_layer(held=True, compiled=False, tokens=tokens, layers=layers)
    upstream = tr.router_upstream_a_token(tokens)
    assert upstream > 8 * 2 * tr.D  # the attention's and the router's saves, several hidden widths
    assert held == pytest.approx(upstream, rel=0.1)
