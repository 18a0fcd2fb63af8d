"""benchmarks/titan_loss_unchunked.py (known-gaps 138 (a)): its expandable-segment layout on known event sequences,
and torchtitan's eager unchunked loss replayed on CPU against the estimate's charge for it (memory_constants.yaml
logits hf_*: the live bytes) and against the layout's 14 B. The compiled replay (Inductor, ~30 s) is the script's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import titan_loss_unchunked as tl  # noqa: E402
from trainsizer.estimate.model_states import load_memory_constants  # noqa: E402

pytestmark = pytest.mark.torch


def test_layout_reuses_a_merged_hole_and_grows_a_free_tail_in_place():
    # 2 and 4 freed side by side make a hole of 6 that takes a 4; the next 4 goes above the live block
    events = [("a", 1, 2), ("a", 2, 4), ("a", 3, 4), ("f", 2, 4), ("f", 1, 2), ("a", 4, 4), ("a", 5, 4)]
    assert tl.mapped_peak(events) == 14
    assert tl.allocated_peak(events) == 12
    # a free block at the end grows to the request instead of a new block after it
    assert tl.mapped_peak([("a", 1, 4), ("a", 2, 2), ("f", 2, 2), ("a", 3, 5)]) == 9


def test_eager_loss_replayed_holds_the_estimates_live_bytes_and_lays_out_two_more():
    logits = load_memory_constants()["logits"]
    charged = logits["hf_saved_bytes_per_element"] + logits["hf_backward_extra_bytes_per_element"]
    events = tl.loss_phase(tl.cross_entropy_loss)
    elements = tl.T * tl.V
    assert tl.allocated_peak(events) / elements == pytest.approx(charged, abs=0.05)
    assert tl.mapped_peak(events) / elements == pytest.approx(charged + 2, abs=0.05)


def test_pr996_chunking_after_the_head_saves_what_its_log_read():
    # torchtitan PR 996: 49.58 -> 42.26 GiB on 8,192 x 128,256 logit elements, 7.5 B each; laid out 14 - 7 = 7
    elements = tl.T * tl.V
    eager = tl.mapped_peak(tl.loss_phase(tl.cross_entropy_loss)) / elements
    chunked = tl.mapped_peak(tl.loss_phase(tl.chunked_cross_entropy_loss)) / elements
    measured = (49.58 - 42.26) * 2**30 / (8192 * 128256)
    assert eager - chunked == pytest.approx(measured, abs=0.6)
