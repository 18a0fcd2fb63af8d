"""Unpacked samples longer than seq_len: cut by the collators, and a warning says how much (scenario)."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.scenario import resolve_job

JOB = {"model": "llama-3.1-8b", "method": "lora", "seq_len": 4096,
       "hardware": {"accelerator": "h100-sxm-80gb", "count": 1}}


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def test_samples_longer_than_seq_len_are_cut_and_warned_first(catalog):
    """Unpacked samples past seq_len are truncated by the collators (a real configuration, so not refused):
    the job says how much of the data is cut, first among the notes; a negligible cut is only noted."""
    job = {**JOB, "data": {"samples": 10_000, "avg_tokens": 8000}, "global_batch": {"sequences": 32}}
    sc = resolve_job(job, catalog)
    assert sc.notes[0].key == "warn_samples_truncated"
    assert sc.notes[0].params["share"] == "49%"  # 1 - 4096 / 8000 = 48.8%
    assert sc.notes[0].params["kept"] == "4096" and sc.notes[0].params["uncut"] == "8000"
    spread = resolve_job({**job, "data": {"samples": 10_000, "avg_tokens": 2000, "length_sigma": 0.8}}, catalog)
    assert spread.notes[0].key == "warn_samples_truncated"  # the tail past 4096 holds about a tenth of the tokens
    assert 0.05 < 1 - spread.training.sample_tokens / 2000 < 0.2
    short = resolve_job({**job, "data": {"samples": 10_000, "avg_tokens": 1000, "length_sigma": 0.5}}, catalog)
    bounded = resolve_job({**job, "data": {"samples": 10_000, "avg_tokens": 2000, "length_sigma": 0.8,
                                           "max_tokens": 4000}}, catalog)
    for quiet in (short, bounded):  # < 1% cut; every sample within max_tokens < seq_len: nothing cut
        assert not any(getattr(n, "key", "") == "warn_samples_truncated" for n in quiet.notes)
    packed = resolve_job({**job, "packing": True}, catalog)
    assert not any(getattr(n, "key", "") == "warn_samples_truncated" for n in packed.notes)
