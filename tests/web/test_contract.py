"""API contract tests generated from the OpenAPI schema (schemathesis): no input gets a 5xx.

Bounded and derandomised so CI stays fast and repeatable: a fixed number of generated requests per
operation, the same ones every run, against the app on uvicorn on a loopback port.
"""

from __future__ import annotations

import pytest

schemathesis = pytest.importorskip("schemathesis", reason="schemathesis not installed (dev extra)")
from hypothesis import HealthCheck, Phase, settings  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.config import SchemathesisConfig  # noqa: E402
from schemathesis.specs.openapi.checks import status_code_conformance  # noqa: E402

from trainsizer.web import create_app  # noqa: E402

# The schema as the server publishes it at /openapi.json (building the app starts no worker). The coverage
# phase (boundary values of every field) runs for every operation but the planner, where each valid job is a
# whole search: there the documented examples and a few generated jobs run.
CONFIG = SchemathesisConfig.from_dict({"operations": [{"include-path": "/api/plan",
                                                        "phases": {"coverage": {"enabled": False}}}]})
schema = schemathesis.openapi.from_dict(create_app().openapi(), config=CONFIG)


CHECKS = [not_a_server_error, status_code_conformance]
SETTINGS = {"derandomize": True, "deadline": None, "phases": [Phase.explicit, Phase.generate],
            "suppress_health_check": list(HealthCheck)}


@schema.exclude(path="/api/plan").parametrize()
@settings(max_examples=25, **SETTINGS)
def test_no_input_gets_a_server_error(case, live_server):
    case.call_and_validate(base_url=live_server, checks=CHECKS, timeout=120)


@schema.include(path="/api/plan").parametrize()
@settings(max_examples=6, **SETTINGS)
def test_no_job_gets_a_server_error_from_the_planner(case, live_server):
    case.call_and_validate(base_url=live_server, checks=CHECKS, timeout=120)
