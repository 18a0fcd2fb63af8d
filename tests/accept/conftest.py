"""Shared helpers for the acceptance tests: fixture paths, contexts on recorded telemetry."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainsizer.accept import criteria
from trainsizer.accept.context import Context, Options
from trainsizer.accept.telemetry import RecordedTelemetry

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "accept"


def fixture_text(rel: str) -> str:
    return (FIXTURES / rel).read_text()


def recorded(name: str = "h100x8-healthy.json") -> RecordedTelemetry:
    return RecordedTelemetry.from_file(FIXTURES / "telemetry" / name)


@pytest.fixture
def h100_ctx(tmp_path) -> Context:
    return Context(criteria=criteria.from_platform("h100-sxm-80gb"), telemetry=recorded(), telemetry_why="recorded",
                   options=Options(sysfs_root=FIXTURES / "sysfs-h100", storage_path=tmp_path), node="node01")


@pytest.fixture
def cpu_ctx(tmp_path) -> Context:
    return Context(criteria=criteria.generic(), telemetry=None, telemetry_why="no GPU telemetry (test)",
                   options=Options(storage_path=tmp_path, storage_size_bytes=8 * 2**20,
                                   checkpoint_size_bytes=8 * 2**20), node="cpu01")


@pytest.fixture(autouse=True)
def _history_in_tmp(tmp_path, monkeypatch):
    """No test writes to the user's default history database."""
    monkeypatch.setenv("TRAINSIZER_ACCEPT_DB", str(tmp_path / "default-history.sqlite"))
