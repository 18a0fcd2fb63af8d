"""The plan: what to buy or rent for a training job, and why (`trainsizer plan JOB.yaml`).

`trainsizer.plan(job)` (this module is callable) and `trainsizer.plan.make_plan(job, catalog, ...)` return a
`Plan` (pydantic; `Plan.model_dump(mode="json")` is what `trainsizer plan --json` prints). `job` is a job
file path, a mapping, a `spec.Job` or a resolved `scenario.Scenario`. The schema is in `plan.schema`
(JSON Schema: docs/plan.schema.json).
"""

from __future__ import annotations

import sys
import types
from typing import Any

from trainsizer.plan.schema import SCHEMA_VERSION, Plan, PlanOption, json_schema


def make_plan(*args: Any, **kwargs: Any) -> Plan:
    from trainsizer.plan.core import make_plan as _make

    return _make(*args, **kwargs)


class _CallableModule(types.ModuleType):
    """`trainsizer.plan(job)` calls `make_plan`: the package and the library call share one name."""

    def __call__(self, *args: Any, **kwargs: Any) -> Plan:
        return make_plan(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["SCHEMA_VERSION", "Plan", "PlanOption", "json_schema", "make_plan"]
