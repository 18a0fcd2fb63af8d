"""data.group_by_length: transformers' LengthGroupedSampler (trainer_pt_utils.get_length_grouped_indices) sorts random
megabatches of min(n // 4B, 50) x B samples by length and cuts them into micro-batches, so each micro-batch is padded to
little beyond its own samples (sample_lengths.grouped_padded); random micro-batches are padded to the longest of b random
samples. known-gaps 170 (a)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError
from trainsizer.estimate import sample_lengths as sl
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import estimate_time
from trainsizer.scenario import resolve_job

CAT = load_catalog()


def _job(grouped: bool = True, **data) -> dict:
    return {"model": "llama-2-7b", "method": "lora", "lora": {"rank": 8}, "seq_len": 1024, "precision": "bf16",
            "data": {"samples": 1000, "avg_tokens": 435, "length_sigma": 0.8, "group_by_length": grouped, **data},
            "global_batch": {"sequences": 4}, "hardware": {"accelerator": "h100-sxm-80gb", "count": 1},
            "strategy": {"micro_batch": 4, "recompute": "none", "framework": "hf", "attention_kernel": "sdpa"}}


def test_the_megabatch_is_the_samplers():
    """min(n // (4 B), 50) per-device batches, at least one."""
    assert sl.grouped_megabatch(1000, 4) == 200  # 62 batches of 4 capped at 50
    assert sl.grouped_megabatch(100, 4) == 24  # 100 // 16 = 6
    assert sl.grouped_megabatch(10, 4) == 4
    assert np.allclose(sl.grouped_megabatch(1e6, np.array([1, 8])), [50, 400])


@given(st.floats(50, 4000), st.floats(0.0, 1.5), st.sampled_from([1, 2, 4, 8, 16]), st.sampled_from([1, 2, 8]))
@settings(max_examples=40, deadline=None)
def test_grouped_rows_lie_between_the_real_length_and_random_padding(mean, sigma, b, accum):
    cut = 4096.0
    row, squared = sl.grouped_padded(mean, sigma, cut, b, sl.grouped_megabatch(1e6, b * accum))
    real = sl.real_tokens(mean, sigma, cut)
    assert real * 0.99 <= float(row) <= float(sl.padded_tokens(mean, sigma, cut, b)) * 1.0001
    assert float(squared) >= float(row) ** 2 * 0.999  # E[X^2] >= E[X]^2
    assert float(row) <= cut


def test_a_micro_batch_of_one_is_its_sample():
    row, _ = sl.grouped_padded(435.0, 0.8, 1024.0, 1, 50.0)
    assert float(row) == pytest.approx(sl.real_tokens(435.0, 0.8, 1024.0), rel=0.02)


def test_grouping_shortens_the_step_not_the_tokens_nor_the_peak():
    grouped, random = (resolve_job(_job(g), CAT) for g in (True, False))
    tg, tr = (estimate_time(s.model, s.training, s.system, s.strategy, memory_note=False) for s in (grouped, random))
    assert grouped.training.tokens_per_step == random.training.tokens_per_step
    assert float(tg.step_s) < 0.8 * float(tr.step_s)  # 4 random samples pad to ~1.8x the mean at sigma 0.8
    mg, mr = (estimate_memory(s.model, s.training, s.system, s.strategy).per_gpu_bytes for s in (grouped, random))
    assert mg == mr  # the longest micro-batch comes first either way: the peak is the longest sample's
    assert grouped.summary()["sample_rows"]["group_by_length"] is True


def test_it_needs_samples():
    bad = _job()
    bad["data"] = {"tokens": 1e8, "group_by_length": True}
    with pytest.raises(TrainsizerError, match="group_by_length"):
        resolve_job(bad, CAT)
