"""The cross-source precision pairs (benchmarks/fp8_pairs.py): every source that publishes two recipes at one layout
gives a pair, the predicted ratio is the two rows' own predictions, and the development pairs stay where they were
when the view was added (no constant is fitted on them). Bounds: what was reached, with a margin."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import fp8_pairs as fp  # noqa: E402


@pytest.fixture(scope="module")
def rows():
    return fp.rows_of(fp.all_pairs())


def test_every_source_with_both_recipes_gives_its_pairs(rows):
    n = fp.summary(rows)
    # dgxc: 8B, 405B (proxy and full) and GPT-3 175B at each scale; the 70B's BF16 and FP8 layouts differ: left out
    assert n["dgxc NeMo 25.04 H100 FP8 / BF16"][0] == 16
    assert not any("llama3.1_70b" in r.pair.row_id for r in rows)
    assert n["torchtitan H100 float8 / BF16"][0] == 11
    assert n["AI2 OLMo-core (H100) FP8 / BF16"][0] == 4 and n["NVIDIA dgxc Nemotron-4 (H100) FP8 / BF16"][0] == 5
    assert sum(k[0] for g, k in n.items() if "NVFP4" in g) == 15
    assert len(rows) == 63


def test_a_pair_is_the_ratio_of_its_rows(rows):
    for r in rows:
        if r.pair.wide.measured is None:
            continue
        # the pair's error is the two rows' own errors combined
        assert (1 + r.err) == pytest.approx((1 + r.side_err("narrow")) / (1 + r.side_err("wide")), rel=1e-9)
        # the factor on the narrower recipe's GEMM time closes the pair exactly
        assert r.needed > 0


def test_development_pairs_within_the_reached_bounds(rows):
    dev = [abs(r.err) for r in rows if r.pair.dev]
    assert len(dev) == 32 and 100 * np.mean(dev) <= 6.5  # reached: 5.2%
    held = [abs(r.err) for r in rows if not r.pair.dev]
    assert len(held) == 31 and 100 * np.mean(held) <= 8.5  # reached: 6.8%
