"""Plans for the report tests: the committed fixture (real estimates, build-out blocks as test data) and
variants of it for one node, thousands of nodes, and a job nothing satisfies."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parent / "fixtures" / "plan_70b_fixture.json"


def load_fixture() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def load_buildout(name: str = "sft70b") -> dict:
    """A real plan with the build-out blocks in their real shape (see fixtures/README.md)."""
    return json.loads((FIXTURE.parent / f"plan_buildout_{name}.json").read_text(encoding="utf-8"))


def large_plan(nodes: int = 2000, per_rack: int = 4) -> dict:
    """The fixture's recommended option scaled to `nodes` 8-GPU nodes on a three-tier fabric."""
    plan = load_fixture()
    hw = plan["options"][0]["hardware"]
    hw.update(nodes=nodes, count=nodes * 8)
    leaves = -(-nodes * 8 // 32)
    plan["network"].update(tiers=3, switches=[
        {"tier": "leaf", "count": leaves, "radix": 64, "gbps": 400, "model": "QM9700"},
        {"tier": "spine", "count": leaves, "radix": 64, "gbps": 400, "model": "QM9700"},
        {"tier": "core", "count": leaves // 2, "radix": 64, "gbps": 400, "model": "QM9700"}],
        links=[{"from": "node", "to": "leaf", "count": nodes * 8, "gbps": 400},
               {"from": "leaf", "to": "spine", "count": leaves * 32, "gbps": 400},
               {"from": "spine", "to": "core", "count": leaves * 32, "gbps": 400}])
    plan["facility"].update(nodes_per_rack=per_rack, racks=-(-nodes // per_rack))
    return plan


def single_node_plan() -> dict:
    plan = load_fixture()
    plan["options"] = [plan["options"][2]]   # h200 x16 -> make it one node of 8
    plan["options"][0]["hardware"].update(nodes=1, count=8)
    plan["pareto"] = [0]
    for block in ("network", "facility", "bom"):
        plan.pop(block)
    return plan


def infeasible_plan() -> dict:
    plan = load_fixture()
    plan.update(recommended=None, options=[], pareto=[],
                binding={"constraint": "deadline", "needs": "5,900 x h100-sxm-80gb for 10 days",
                         "allows": "64 GPUs (max_nodes 8)"})
    for block in ("bom", "network", "node", "storage", "facility", "software", "risks", "acceptance", "phases",
                  "rules_of_thumb"):
        plan.pop(block, None)
    return plan


PLANS = {"fixture": load_fixture, "large": large_plan, "single": single_node_plan, "infeasible": infeasible_plan,
         "buildout": load_buildout, "buildout-405b": lambda: load_buildout("405b")}


@pytest.fixture(params=sorted(PLANS))
def any_plan(request) -> tuple[str, dict]:
    return request.param, copy.deepcopy(PLANS[request.param]())


@pytest.fixture
def plan() -> dict:
    return load_fixture()
