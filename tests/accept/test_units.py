from __future__ import annotations

import pytest

from trainsizer.accept.units import parse_duration_s, parse_size_bytes
from trainsizer.errors import SpecError


@pytest.mark.parametrize(("text", "seconds"), [
    ("45s", 45.0), ("30m", 1800.0), ("24h", 86400.0), ("1h30m", 5400.0), ("2d", 172800.0), ("90", 90.0),
    ("500ms", 0.5), ("1m500ms", 60.5), ("1.5h", 5400.0),
])
def test_durations(text, seconds):
    assert parse_duration_s(text, "--thermal") == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "abc", "5x", "1h 30m", "-5s", "30mm"])
def test_bad_duration_names_the_option(text):
    with pytest.raises(SpecError, match="--thermal"):
        parse_duration_s(text, "--thermal")


@pytest.mark.parametrize(("text", "size"), [
    ("4096", 4096), ("64MiB", 64 * 2**20), ("4M", 4 * 2**20), ("1GiB", 2**30), ("16G", 16 * 2**30),
    ("2GB", 2 * 10**9), ("256KiB", 256 * 2**10), ("1.5MB", 1_500_000),
])
def test_sizes_binary_and_decimal(text, size):
    assert parse_size_bytes(text, "--storage-size") == size


def test_bad_size_names_the_option():
    with pytest.raises(SpecError, match="--storage-size"):
        parse_size_bytes("12 parsecs", "--storage-size")
