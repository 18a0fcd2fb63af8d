"""Held-out rows added 2026-12-06, thirty-ninth batch (benchmarks/perf_heldout65.py; nothing fitted on them):
Megatron-Bridge's model-verification card of Nemotron 3 Super 120B-A12B, pre-training tokens/s a GPU on 64 H100 /
GB200 / GB300. Bounds = the figures measured when the rows were added, with a margin: they guard against a regression,
not an accuracy claim (docs/known-gaps.md 247)."""

from __future__ import annotations

import perf_heldout65 as p65
from harness import mape
from trainsizer.models import load_model

from .heldout_rows import check_card_rows, run_fixture

run = run_fixture(p65.run_all)


def test_every_row_names_its_card_commit_recipe_and_assumptions():
    rs = p65.rows()
    check_card_rows(rs, 4, p65.NATURAL)
    for r in rs:
        assert r["id"].startswith("mbcard_2026-0") and "nemotron_3_super_120b_a12b" in r["id"], r["id"]
        assert r["model"] in r["assumed"], r["id"]
        assert load_model(r["model"]).source.startswith(f"preset {r['model']}")  # a shipped preset, not inline
    assert set(p65.CARD_FLOPS) == {r["id"] for r in rs}


def test_the_rows_are_the_recipes_jobs():
    """H100: TP 1 x PP 2 x EP 32, the 1.10 padded capacity, selective recompute of four modules; GB200: TP 2 x EP 64;
    GB300: EP 64 in NVFP4; every row runs the '*E' MTP module twice."""
    by = {r["accelerator"]: p65.job(r) for r in p65.rows()}
    h100, gb200, gb300 = by["h100-sxm-80gb"], by["gb200"], by["gb300"]
    s = h100["strategy"]
    assert (s["tp"], s["pp"], s["ep"], s["recompute"], h100["global_batch"]["sequences"], h100["seq_len"]) == (
        1, 2, 32, "selective", 1280, 4096)
    assert (h100["moe_capacity_factor"], s["moe_pad_to_capacity"], tuple(s["recompute_modules"])) == (
        1.1, True, ("layernorm", "moe_act", "moe", "core_attn"))
    assert (gb200["strategy"]["tp"], gb200["strategy"]["ep"], gb200["seq_len"]) == (2, 64, 8192)
    assert (gb300["fp8_recipe"], gb300["strategy"]["ep"], gb300["seq_len"]) == ("nvfp4", 64, 8192)
    for job in by.values():
        assert (job["mtp_passes"], job["strategy"]["moe_dispatcher"], job["hardware"]["count"]) == (2, "flex", 64)


def test_batch_bounds(run):
    scored = [c for c, _, _ in run if not c.skipped]
    assert len(scored) == 4  # none refused
    assert mape(scored) < 8.0  # 3.8 at landing (+7.0 / +0.6 / +5.9 / +1.8%)
    assert all(abs(c.err) < 0.12 for c in scored)


def test_the_cards_count_the_mtp_passes_the_model_flops_do_not(run):
    """The cards' model TFLOP/s (Megatron-Bridge flop_utils) count the two MTP passes, the estimate's model FLOPs do not
    (MTP excluded, as for every model), and flop_utils halves the causal attention core: the estimate's count is
    0.89-0.91 of the cards'."""
    for c, res, r in run:
        assert 0.85 < p65.card_flops_ratio(r, res) < 0.95, c.row_id


def test_every_run_is_said_to_fit():
    assert all(f.fits for f in p65.fits())
