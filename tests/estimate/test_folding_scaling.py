"""benchmarks/folding_scaling.py (diagnostic, known-gaps 331): perf_heldout77's MoE Parallel Folding rows read as the
step's time beyond its micro-batches (y slots of one micro-batch). Both models' published pairs hold fewer slots than
a non-interleaved 1F1B bubble (Mixtral 2.6-3.9 of 7 at PP 8, Qwen2 0.7-2.1 of 3 at PP 4), which leaves VPP 7, the
other size Megatron-LM takes at 7 layers a stage; at VPP 7 with fp32 gradients the estimate holds 0.3-1.3 fewer."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import folding_scaling as fs  # noqa: E402
import perf_heldout77 as p77  # noqa: E402


@pytest.fixture(scope="module")
def run():
    return p77.run_all()


@pytest.fixture(scope="module")
def layouts(run):
    return fs.layout_rows(run)


def _pairs(rows):
    first = rows[0]
    return [(x, fs.implied_slots(first["published"], first["m"], x["published"], x["m"]),
             fs.implied_slots(first["predicted"], first["m"], x["predicted"], x["m"])) for x in rows[1:]]


@pytest.mark.parametrize("y", [0.0, 0.43, 3.0, 7.0])
def test_implied_slots_recovers_the_steps_extra_slots(y):
    """MFU = A m / (m + y) at two micro-batch counts gives back y, whatever A."""
    mfu = {m: 52.0 * m / (m + y) for m in (128, 16)}
    assert fs.implied_slots(mfu[128], 128, mfu[16], 16) == pytest.approx(y, abs=1e-9)


def test_every_layout_has_its_rows(layouts):
    """Mixtral: 128-1,024 GPUs at global batch 1,024 and Table 2's 128-GPU row at 256; Qwen2: 64-1,024 and 64 at 256;
    the rows' pipeline: Mixtral PP 8, Qwen2 PP 4, both VPP 7 (one layer a virtual stage)."""
    for (model, _), rows in layouts.items():
        assert len(rows) == (5 if model == "mixtral8x22b" else 6)
        assert {(x["p"], x["v"]) for x in rows} == ({(8, 7)} if model == "mixtral8x22b" else {(4, 7)})
        assert rows[0]["m"] == 128 and all(x["bubble_s"] / x["t_mb_s"] == pytest.approx((x["p"] - 1) / x["v"])
                                           for x in rows)


def test_megatron_takes_vpp_1_or_7_at_seven_layers_a_stage():
    assert fs.vpp_options(56, 8) == [1, 7] and fs.vpp_options(28, 4) == [1, 7] and fs.vpp_options(32, 4) == [1, 2, 4, 8]


def test_the_published_pairs_exclude_vpp_1(run):
    """At VPP 1 the bubble alone (7 / 3 slots) exceeds every published y and the estimate holds 7.3-7.6 / 3.4-3.6; at
    VPP 7 (1 / 0.43) it is below every published y and the estimate holds less than published."""
    for (model, _), options in fs.slots_at_each_vpp(run).items():
        (v1, bubble1, lo, hi, pred1), (v7, bubble7, _, _, pred7) = options
        assert (v1, v7) == (1, 7) and bubble1 > hi and bubble7 < lo and pred1 > bubble1 and pred7 < hi, model
        assert lo > (2.5 if model == "mixtral8x22b" else 0.6), model


def test_mixtral_holds_a_little_more_than_predicted(layouts):
    """Every Mixtral pair, at a fixed GPU count (global batch 256 against 1,024 on 128 GPUs) as across 128 -> 1,024
    GPUs: published 2.5-4 slots beyond the micro-batches, predicted 1.8-2.8 at VPP 7 (the bubble 1; p2p, the fp32
    gradient reduce-scatter / all-gather and the optimizer the rest): 0.2-1.4 slots not charged (331 (b))."""
    for method in ("mcore", "folding"):
        for x, pub, pred in _pairs(layouts[("mixtral8x22b", method)]):
            assert 2.5 < pub < 4.0 and 1.8 < pred < 2.8 and 0.2 < pub - pred < 1.4, (x["id"], pub, pred)


def test_qwen2_matches_at_a_fixed_count_and_past_128_gpus(layouts):
    """Qwen2 at VPP 7 with fp32 gradients: global batch 256 against 1,024 on 64 GPUs within 0.35 slot; from 256 GPUs on
    within 0.7 (at bf16 gradients the published exceeded the predicted by 0.6-1.2 there: 331 (b))."""
    for method in ("mcore", "folding"):
        for x, pub, pred in _pairs(layouts[("qwen2_57b", method)]):
            if x["gpus"] == 64:
                assert abs(pub - pred) < 0.35, (x["id"], pub, pred)
            elif x["gpus"] >= 256:
                assert abs(pub - pred) < 0.7, (x["id"], pub, pred)


def test_the_heads_bubble_share_is_small_here(layouts):
    """Charging the bubble's slots at the stage time without the LM head (the replay's rate: test_pipeline) lowers
    every row's bubble, but moves no row by 1.5% of MFU at VPP 7 (Mixtral's 1,024-GPU rows by 0.9% at VPP 1)."""
    for rows in layouts.values():
        for x in rows:
            what_if = fs.headless_what_if(x)
            assert x["predicted"] < what_if < 1.015 * x["predicted"], x["id"]
