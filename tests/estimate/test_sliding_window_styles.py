"""Sliding windows save attention work only where the framework's kernel skips the tiles outside them
(PerfStyle.sliding_windows): Hugging Face's FlashAttention-2 window_size does, torchtune (no window in its Mistral
builder, a masked full matmul in its Gemma 2 attention) does not."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import perf_style, step_time_arrays
from trainsizer.models import load_model

from .test_perf_common import h100_cluster

WINDOWED = load_model("mistral-7b")  # Mistral 7B v0.1: 4096-token window on all 32 layers
FULL = WINDOWED.with_(sliding_window=0, window_layers=0)
TRAINING = Training(method="full", seq_len=16384, global_batch_seqs=8)


def _compute(model, framework: str, **kw) -> np.ndarray:
    st = Strategy(dp=8, micro_batch=1, recompute="full", framework=framework, **kw)
    return step_time_arrays(model, TRAINING, h100_cluster(), st)["compute"]


def test_flash_attention_skips_the_tiles_outside_the_window():
    assert float(_compute(WINDOWED, "hf")) < 0.9 * float(_compute(FULL, "hf"))


def test_torchtune_runs_every_layer_over_the_whole_row():
    assert float(_compute(WINDOWED, "torchtune")) == pytest.approx(float(_compute(FULL, "torchtune")))


def test_a_style_array_keeps_each_strategys_rule():
    """A perf style whose fields are arrays (framework auto, one style per strategy): windows honoured in the first
    strategy, not in the second."""
    mixed = dataclasses.replace(perf_style("hf"), sliding_windows=np.array([True, False]))
    st = Strategy(dp=8, micro_batch=np.array([1, 1]), recompute="full", framework="hf")
    both = step_time_arrays(WINDOWED, TRAINING, h100_cluster(), st, framework_style=mixed)["compute"]
    honoured = step_time_arrays(WINDOWED, TRAINING, h100_cluster(), st, framework_style="hf")["compute"]
    whole = step_time_arrays(FULL, TRAINING, h100_cluster(), st, framework_style="hf")["compute"]
    assert both[0] == pytest.approx(honoured[0]) and both[1] == pytest.approx(whole[1])
