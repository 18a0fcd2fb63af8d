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


@pytest.fixture(scope="module")
def moe_rows():
    return fp.rows_of(fp.moe_pairs())


def test_moe_releases_give_their_pairs_with_the_dense_controls(moe_rows):
    """dgxc v24.11 (Grok-1 at 8-2,048 H100, GPT-3 175B), v25.05 (Maverick and Grok-1 on H100 and GB200, Llama 3.1 405B on
    GB200: its BF16 row reduces gradients in fp32, a recipe setting each side states; Nemotron-4 15B / 340B on H100 and
    340B on GB200, perf_heldout78) and the Folding paper's Mixtral;
    the paper's MFU / TFLOP/s rows give the ratio only (their model FLOPs are not the split's tokens)."""
    n = fp.summary(moe_rows)
    assert n["dgxc v24.11 H100 MoE FP8 / BF16"][0] == 8 and n["dgxc v24.11 H100 dense FP8 / BF16"][0] == 2
    assert n["dgxc v25.05 H100 MoE FP8 / BF16"][0] == 2 and n["dgxc v25.05 H100 dense FP8 / BF16"][0] == 2
    assert n["dgxc v25.05 GB200 MoE FP8 / BF16"][0] == 6 and n["dgxc v25.05 GB200 dense FP8 / BF16"][0] == 9
    assert n["MoE Parallel Folding H100 MoE FP8 / BF16"][0] == 2
    assert all(r.pair.wide.measured is None for r in moe_rows if "Folding" in r.pair.group)
    assert {r.pair.row_id for r in moe_rows}.isdisjoint(r.pair.row_id for r in fp.rows_of(fp.all_pairs()))


def test_moe_fp8_gain_within_the_reached_bounds(moe_rows):
    """The same releases' dense pairs are within 5%; the Hopper MoE pairs' modelled FP8 gain is too large (docs/known-gaps.md
    332: reached 9.9% mean, every pair above), a bound an estimate that closes it also meets."""
    dense = [abs(r.err) for r in moe_rows if "dense" in r.pair.group]
    assert len(dense) == 13 and 100 * np.mean(dense) <= 5.0  # reached: 3.6%; 1.9% from known-gaps 340
    hopper = [abs(r.err) for r in moe_rows if "MoE" in r.pair.group and "H100" in r.pair.group]
    assert len(hopper) == 12 and 100 * np.mean(hopper) <= 12.0  # reached: 9.9%
