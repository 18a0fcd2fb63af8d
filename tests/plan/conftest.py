from __future__ import annotations

from functools import cache

import pytest

from trainsizer.catalog import load_catalog


@cache
def cached_plan(path: str, **_: object):
    """One plan per example for the whole session (plans are pure functions of the job and catalog)."""
    from trainsizer.plan.core import make_plan

    return make_plan(path, load_catalog())


@pytest.fixture
def plan_of():
    return cached_plan
