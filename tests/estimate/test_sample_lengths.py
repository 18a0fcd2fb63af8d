"""Unpacked fine-tuning samples (estimate.sample_lengths, Training.sample_*): micro-batches padded to their longest
sample, lengths lognormal and truncated at the cutoff; tokens/s counts real tokens, not padding."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.estimate import sample_lengths as sl
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import perf_style, step_time_arrays

from .test_perf_common import h100_cluster, llama8b

means = st.floats(min_value=1.0, max_value=50_000.0)
sigmas = st.floats(min_value=0.0, max_value=3.0)
cutoffs = st.integers(min_value=1, max_value=65_536)
batches = st.integers(min_value=1, max_value=64)


@settings(max_examples=60, deadline=None)
@given(means, sigmas, cutoffs, batches)
def test_padded_rows_hold_at_least_the_real_tokens(mean, sigma, cutoff, b):
    real = sl.real_tokens(mean, sigma, cutoff)
    padded = float(sl.padded_tokens(mean, sigma, cutoff, b))
    # padded is a weighted mean of lengths <= cutoff: equal to it up to rounding (1879.0000000000002 vs 1879)
    assert real <= padded * (1 + 1e-9) and padded <= cutoff * (1 + 1e-9)
    assert real <= min(mean, cutoff) * (1 + 1e-9)  # truncation only removes tokens
    # a longer micro-batch waits for a longer longest sample
    assert padded <= float(sl.padded_tokens(mean, sigma, cutoff, b + 1)) * (1 + 1e-9)
    # E[max^2] >= E[max]^2 and E[L^2] >= E[L]^2 (attention spans)
    assert float(sl.padded_squared(mean, sigma, cutoff, b)) >= padded * padded * (1 - 1e-9)
    assert sl.squared_tokens(mean, sigma, cutoff) >= real * real * (1 - 1e-9)


@settings(max_examples=30, deadline=None)
@given(means, cutoffs, batches)
def test_samples_of_one_length_are_not_padded(mean, cutoff, b):
    length = min(mean, cutoff)
    assert sl.real_tokens(mean, 0.0, cutoff) == pytest.approx(length)
    assert float(sl.padded_tokens(mean, 0.0, cutoff, b)) == pytest.approx(length)


def test_one_sample_per_micro_batch_is_never_padded():
    """b = 1: the row is the sample itself, E[max of 1] = E[L]."""
    for sigma in (0.3, 1.0, 2.0):
        assert float(sl.padded_tokens(300.0, sigma, 4096, 1)) == pytest.approx(sl.real_tokens(300.0, sigma, 4096))


def _job_training(**kw) -> Training:
    return Training(method="full", seq_len=4096, global_batch_seqs=64, **kw)


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(["hf", "torchtune", "megatron-core"]), st.integers(min_value=1, max_value=8))
def test_samples_as_long_as_the_cutoff_run_as_full_rows(style, b):
    """Every sample at seq_len (sigma 0): the padded rows are today's full rows, step and tokens/s equal."""
    m, s = llama8b(), h100_cluster(8)
    stg = Strategy(dp=8, zero=1, micro_batch=b, recompute="full")
    full = step_time_arrays(m, _job_training(), s, stg, framework_style=style)
    rows = step_time_arrays(m, _job_training(sample_mean_tokens=4096.0), s, stg, framework_style=style)
    for key in ("step_s", "tokens_per_s", "model_flops_per_step"):
        assert float(rows[key]) == pytest.approx(float(full[key]), rel=1e-9)


def test_short_samples_run_faster_steps_and_count_real_tokens():
    m, s = llama8b(), h100_cluster(8)
    stg = Strategy(dp=8, zero=1, micro_batch=4, recompute="full")
    short = _job_training(sample_mean_tokens=300.0, sample_sigma=0.8)
    full = step_time_arrays(m, _job_training(), s, stg, framework_style="hf")
    out = step_time_arrays(m, short, s, stg, framework_style="hf")
    assert float(out["step_s"]) < float(full["step_s"]) / 5
    assert short.tokens_per_step == round(sl.real_tokens(300.0, 0.8, 4096) * 64)
    # the padding runs through the GEMMs: fewer real tokens per second than full rows give
    assert float(out["tokens_per_s"]) < float(full["tokens_per_s"])


def test_attention_skips_padding_only_where_the_kernel_unpads():
    """transformers' FlashAttention-2 unpads the padded rows (unpads_padding); SDPA with is_causal over the padded
    batch does not: with spread-out lengths the unpadded attention is cheaper, with equal lengths the same."""
    m, s = llama8b(), h100_cluster(8)
    stg = Strategy(dp=8, zero=1, micro_batch=8, recompute="full")
    hf = perf_style("hf")
    padded = dataclasses.replace(hf, unpads_padding=False)
    spread = _job_training(sample_mean_tokens=1500.0, sample_sigma=1.0)
    assert float(step_time_arrays(m, spread, s, stg, framework_style=hf)["step_s"]) < float(
        step_time_arrays(m, spread, s, stg, framework_style=padded)["step_s"])
    same = _job_training(sample_mean_tokens=1500.0)
    assert float(step_time_arrays(m, same, s, stg, framework_style=hf)["step_s"]) == pytest.approx(
        float(step_time_arrays(m, same, s, stg, framework_style=padded)["step_s"]), rel=1e-9)


def test_peak_memory_follows_the_longest_sample():
    m, s = llama8b(), h100_cluster(8)
    stg = Strategy(dp=8, zero=1, micro_batch=4, recompute="none")
    cutoff = estimate_memory(m, _job_training(sample_mean_tokens=300.0, sample_sigma=0.8), s, stg, check=False)
    full = estimate_memory(m, _job_training(), s, stg, check=False)
    assert cutoff.per_gpu_bytes == pytest.approx(full.per_gpu_bytes)  # longest sample unknown: rows of seq_len
    short = estimate_memory(m, _job_training(sample_mean_tokens=300.0, sample_sigma=0.8, sample_max_tokens=1024.0),
                            s, stg, check=False)
    assert short.per_gpu_bytes < full.per_gpu_bytes


def test_bad_sample_lengths_are_refused():
    from trainsizer.errors import SpecError

    m, s = llama8b(), h100_cluster(8)
    with pytest.raises(SpecError, match="sample_sigma"):
        step_time_arrays(m, _job_training(sample_mean_tokens=300.0, sample_sigma=-1.0), s,
                         Strategy(dp=8, zero=1))


def test_micro_batch_arrays_pad_each_to_its_own_longest():
    rows = sl.padded_tokens(400.0, 0.7, 4096, np.array([1, 2, 4, 4, 8]))
    assert rows.shape == (5,)
    assert rows[2] == rows[3]
    assert np.all(np.diff(rows) >= 0)


@settings(max_examples=30, deadline=None)
@given(st.floats(min_value=1.0, max_value=8192.0), sigmas, st.integers(min_value=64, max_value=16_384))
def test_next_fit_packs_waste_less_than_their_longest_sample(mean, sigma, cap):
    """A next-fit pack closes only when the next sample does not fit, so its padding is shorter than that sample:
    1 - fill < longest sample / cap, and the fill stays within (0, 1]."""
    fill = sl.next_fit_fill(mean, sigma, float(cap))
    longest = float(sl._lengths(mean, sigma, float(cap))[-1])
    assert 0.0 < fill <= 1.0
    assert (1.0 - fill) * cap < longest * (1 + 1e-9)


@pytest.mark.parametrize(("length", "cap"), [(135.0, 4096.0), (1000.0, 4096.0), (3000.0, 4096.0), (2100.0, 4096.0)])
def test_next_fit_packs_samples_of_one_length_by_hand(length, cap):
    """Equal samples: floor(cap / length) of them per pack, the rest padding (3,000 of 4,096: one per pack)."""
    assert sl.next_fit_fill(length, 0.0, cap) == pytest.approx((cap // length) * length / cap, rel=1e-9)


def test_next_fit_waste_of_short_samples_is_the_renewal_residual():
    """Samples much shorter than the pack: the sample that does not fit is length-biased and the pack ends at a
    uniform point of it, so the padding averages E[L^2] / (2 E[L]) (renewal theory; lognormal E[L^2] = m^2 e^(s^2)):
    about 97 tokens for Alpaca-like samples of mean 135, sigma 0.6."""
    mean, sigma, cap = 135.0, 0.6, 4096.0
    residual = mean * np.exp(sigma * sigma) / 2.0
    assert (1.0 - sl.next_fit_fill(mean, sigma, cap)) * cap == pytest.approx(residual, rel=0.05)


def test_packed_rows_with_padding_count_their_sample_tokens_only():
    """Training.pack_fill: the step runs every position of the rows, tokens/s counts the samples' tokens."""
    m, s = llama8b(), h100_cluster(8)
    stg = Strategy(dp=8, zero=1, micro_batch=2, recompute="full")
    full = _job_training(attention_span=135)
    padded = dataclasses.replace(full, pack_fill=0.9)
    a = step_time_arrays(m, full, s, stg, framework_style="torchtune")
    b = step_time_arrays(m, padded, s, stg, framework_style="torchtune")
    assert float(b["step_s"]) == pytest.approx(float(a["step_s"]), rel=1e-12)
    assert padded.tokens_per_step == round(0.9 * 4096 * 64)
    assert float(b["tokens_per_s"]) == pytest.approx(0.9 * float(a["tokens_per_s"]), rel=1e-5)  # whole tokens
