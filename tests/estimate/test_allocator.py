"""The caching allocator's reserved growth in closed form (estimate.allocator; known-gaps 184): held to the replay of
benchmarks/caching_allocator.py on generated length sequences, its expectation to a Monte-Carlo draw, and the cases
where nothing grows."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from trainsizer.estimate import allocator
from trainsizer.estimate.inputs import Training
from trainsizer.estimate.sample_lengths import padded_records
from trainsizer.spec.job import Job

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import caching_allocator as ca  # noqa: E402

KIB = 1024


def _replay(lengths, layer_pp, layers, chunk_pp, chunks, loss_pp) -> int:
    """Reserved bytes of the replayed pool over the sequence (caching_allocator.chunked_loss_step)."""
    pool = ca.Pool()
    for n in lengths:
        ca.chunked_loss_step(pool, layer_pp * n, layers, layer_pp * n, chunk_pp * n, chunks, loss_pp * n)
    return pool.peak_reserved


# one step's tensors: `layers` layer inputs and the head input (the rest), `chunks` logit chunks, one chunk's
# gradient and a loss temporary (the loss path: chunk-sized tensors, the largest of the step); the rest's bytes at
# most the loss path's, each layer tensor at most a quarter of a chunk (a record row rarely 4 times the one before) and at least 10 MiB (kMinLargeAlloc: below it requests
# share 20 MiB buffers), a chunk at least 64 MiB (records further apart than the 2 MiB a segment is rounded to): the
# form's conditions (allocator module docstring)
@st.composite
def _runs(draw):
    n = draw(st.integers(2, 120))
    sigma = draw(st.floats(0.3, 1.2))
    mean = draw(st.floats(100.0, 1000.0))
    seed = draw(st.integers(0, 2**31))
    lengths = np.ceil(np.clip(np.random.default_rng(seed).lognormal(np.log(mean), sigma, n), 64, 4096)).astype(int)
    layer_pp, layers, chunks = draw(st.integers(160, 1024)) * KIB, draw(st.integers(1, 40)), draw(st.integers(1, 8))
    big_pp = (layers + 1) * layer_pp * draw(st.floats(1.0, 6.0))
    share = draw(st.floats(0.0, 1.0))  # the loss temporary, in chunks
    chunk_pp = int(big_pp / (chunks + 1 + share))
    chunk_pp = max(chunk_pp, 4 * layer_pp, 1024 * KIB)
    return lengths.tolist(), layer_pp, layers, chunk_pp, chunks, int(share * chunk_pp)


@settings(max_examples=40, deadline=None)
@given(_runs())
def test_the_closed_form_tracks_the_replay(run):
    """The replayed reserved peak is 0.5-1.25 times the form's: the one-length peak at the longest row plus the loss
    path's bytes again for every earlier record row (sequence_records). Across 1,500 runs drawn as here (numpy, seed 7)
    the ratio spanned 0.71-1.14, median 0.90: the form is a little high where a shorter row's split pieces hold part of
    a later record's loss path, and low (to about 1.17 at the edges hypothesis finds) where the rest is nearly the loss
    path's size and one earlier record's segments cannot take all of it. The form is highest where the chunk sits at its
    1 MiB-a-position floor, so the loss path is 5-10 times the rest: there hypothesis found 0.537 (a landing's run,
    2026-12-06) and a 10,000-run search edged to the strategy's bounds 0.61, hence 0.5 (the 0.6 bound failed then)."""
    lengths, layer_pp, layers, chunk_pp, chunks, loss_pp = run
    records, longest = allocator.sequence_records(lengths)
    one = _replay([int(longest)], layer_pp, layers, chunk_pp, chunks, loss_pp)
    loss_path = ((chunks + 1) * chunk_pp + loss_pp) * longest
    form = one + loss_path * (records - longest) / longest
    assert 0.5 <= _replay(lengths, layer_pp, layers, chunk_pp, chunks, loss_pp) / form <= 1.25


def test_one_length_reserves_once():
    """Every row one length: one record, nothing beyond the one-step peak (replay and form alike)."""
    lengths = [700] * 30
    assert allocator.sequence_records(lengths) == (700.0, 700.0)
    assert _replay(lengths, 256 * KIB, 8, 2048 * KIB, 4, 0) == _replay([700], 256 * KIB, 8, 2048 * KIB, 4, 0)


@pytest.mark.parametrize(("mean", "sigma", "cap", "b", "n"), [(222, 0.6, 1304, 16, 808), (1346, 0.381, 2048, 1, 400),
                                                             (500, 1.0, 8192, 4, 50)])
def test_the_expected_record_sum_matches_draws(mean, sigma, cap, b, n):
    """padded_records' quadrature against the mean of 400 drawn runs (rows the longest of b lognormal samples, capped):
    within 4% (the quadrature folds the tails past 1 / 8,192 into its extreme points)."""
    records, longest = padded_records(mean, sigma, cap, b, n)
    rng, mu = np.random.default_rng(0), np.log(mean) - sigma * sigma / 2
    runs = [allocator.sequence_records(np.minimum(rng.lognormal(mu, sigma, (n, b)), cap).max(axis=1)) for _ in range(400)]
    assert records == pytest.approx(np.mean([r[0] for r in runs]), rel=0.04)
    assert longest == pytest.approx(np.mean([r[1] for r in runs]), rel=0.04)


@settings(max_examples=30, deadline=None)
@given(st.floats(50.0, 3000.0), st.floats(0.05, 1.5), st.integers(1, 32), st.integers(2, 5000))
def test_records_grow_with_the_run_and_never_fall_short_of_the_longest(mean, sigma, b, n):
    records, longest = padded_records(mean, sigma, 4 * mean, b, n)
    more, _ = padded_records(mean, sigma, 4 * mean, b, 2 * n)
    assert records >= longest * (1 - 1e-9) and more >= records * (1 - 1e-9)


def _unpacked(**kw) -> Training:
    base = Training(method="full", seq_len=1304, global_batch_seqs=256, sample_mean_tokens=222.0, sample_sigma=0.6,
                    tokens_total=51_760 * 222.0)
    return replace(base, **kw)


def test_growth_where_lengths_vary_and_none_elsewhere():
    """Growth for unpacked rows of varying length without expandable segments; none for one length, packed or
    pre-training rows, length-grouped sampling (the longest row first), expandable segments or an unknown run."""
    loss = np.array([5.6e9, 5.6e9])
    grown = allocator.growth_bytes(_unpacked(), loss, np.array([4, 4]), np.array([16, 16]), False)
    assert np.all(grown > 1.5 * loss) and np.all(grown < 4 * loss)
    for t in (_unpacked(sample_sigma=0.0), _unpacked(sample_mean_tokens=0.0), _unpacked(length_grouped_samples=51_760.0),
              _unpacked(tokens_total=0.0)):
        assert not np.any(allocator.growth_bytes(t, loss, np.array([4, 4]), np.array([16, 16]), False))
    assert not np.any(allocator.growth_bytes(_unpacked(), loss, np.array([4, 4]), np.array([16, 16]), True))
    mixed = allocator.growth_bytes(_unpacked(), loss, np.array([4, 4]), np.array([16, 16]), np.array([True, False]))
    assert mixed[0] == 0.0 and mixed[1] == grown[1]


def test_framework_defaults_and_a_stated_setting():
    class S:
        allocator_expandable_segments = None

    assert allocator.expandable_segments(S(), "torchtune", False) and allocator.expandable_segments(S(), "torchtitan", False)
    assert not allocator.expandable_segments(S(), "hf", False)
    assert list(allocator.expandable_segments(S(), "auto", np.array([True, False]))) == [True, False]
    S.allocator_expandable_segments = False
    assert not allocator.expandable_segments(S(), "torchtune", True)


def test_the_job_field_is_checked():
    job = {"model": "llama-3-8b", "seq_len": 2048, "global_batch": {"sequences": 64}, "data": {"tokens": 1e9},
           "hardware": {"accelerator": "h100-sxm-80gb", "count": 8}}
    assert Job.model_validate(job | {"strategy": {"allocator_expandable_segments": False}})
    with pytest.raises(ValidationError, match="allocator_expandable_segments"):
        Job.model_validate(job | {"strategy": {"allocator_expandable_segments": "sometimes"}})


def _torchao_row_estimate(**extra):
    import finetune_heldout as fh
    import perf_heldout47 as p47
    from trainsizer.estimate.memory import estimate_memory

    r = next(x for x in p47.rows() if x["id"] == p47.BF16_ROW)
    sc = fh._scenario(r, p47.catalog(r["overlay"]), strategy_extra=extra or None)
    return estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False)


def test_the_growth_is_reported_beside_the_peak_and_noted():
    """The torchao row (unpacked, expandable segments off at its torchtune): the peak is the allocated one with the
    forward's cached segments (known-gaps 203), the growth beside it and in the notes; with expandable segments
    neither."""
    grown, flat = _torchao_row_estimate(), _torchao_row_estimate(allocator_expandable_segments=True)
    segments = grown.items_bytes["forward_layer_segments"]
    assert segments > 0 and flat.items_bytes.get("forward_layer_segments", 0.0) == 0.0
    assert grown.per_gpu_bytes - segments == pytest.approx(flat.per_gpu_bytes) and flat.allocator_growth_bytes == 0.0
    assert grown.allocator_growth_bytes > 2 ** 30 and grown.reserved_peak_bytes > grown.per_gpu_bytes
    assert any("expandable_segments:True" in n for n in grown.notes)
    assert not any("expandable_segments:True" in n for n in flat.notes)
    assert grown.to_dict()["allocator_growth_gib"] > 1.0


def test_an_optimizer_step_peak_takes_the_cached_segments():
    """Where the optimizer step peaks (torch's foreach AdamW on a replicated model) the growth counts only above it."""
    step = _torchao_row_estimate(framework="hf", zero=0, optimizer_impl="foreach", micro_batch=1)
    fwd = _torchao_row_estimate(framework="hf", zero=0, micro_batch=1, optimizer_impl="fused")
    assert step.peak_phase == "optimizer step" and step.per_gpu_bytes > fwd.per_gpu_bytes
    assert 0.0 <= step.allocator_growth_bytes <= fwd.allocator_growth_bytes
    assert step.reserved_peak_bytes >= max(step.per_gpu_bytes, fwd.per_gpu_bytes + fwd.allocator_growth_bytes) - 1.0
