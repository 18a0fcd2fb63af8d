from __future__ import annotations

import json

from conftest import REPO
from trainsizer.plan import SCHEMA_VERSION, json_schema


def test_shipped_schema_matches_the_models():
    """docs/plan.schema.json is generated from `plan.schema`; regenerate it when the models change:
    python -c "import json; from trainsizer.plan import json_schema; print(json.dumps(json_schema(), indent=2))"
    """
    shipped = json.loads((REPO / "docs" / "plan.schema.json").read_text(encoding="utf-8"))
    assert shipped == json_schema()


def test_schema_is_versioned():
    schema = json_schema()
    assert schema["properties"]["schema_version"]["default"] == SCHEMA_VERSION
    assert SCHEMA_VERSION.split(".")[0] == "1"
    for key in ("search", "tier", "recommended", "options", "pareto", "binding", "notes"):
        assert key in schema["properties"]


def test_library_call_returns_a_plan():
    import trainsizer
    from trainsizer.plan import Plan

    plan = trainsizer.plan(str(REPO / "examples" / "qlora-7b-one-gpu.yaml"), top=1)
    assert isinstance(plan, Plan) and plan.recommended.hardware.count == 1
