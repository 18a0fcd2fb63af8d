"""The build-out blocks inside `trainsizer plan`: the recommended option's, or the one --option names."""

import json

import pytest

from trainsizer.accept import criteria
from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError

from .conftest import REPO

SEARCH = str(REPO / "examples" / "sft-70b-search.yaml")
KEYS = {"bom", "node", "network", "storage", "facility", "software", "risks", "acceptance", "phases",
        "rules_of_thumb"}


def test_plan_carries_the_recommended_build(plan_of):
    plan = plan_of(SEARCH)
    assert plan.recommended is not None and set(plan.build) == KEYS
    assert plan.recommended.build == plan.build
    assert all(o.build is None for o in plan.options[1:])
    hw = plan.recommended.hardware
    assert plan.build["node"]["gpus_per_node"] == hw.per_node
    assert plan.build["acceptance"]["gpu_count"]["value"] == hw.per_node


def test_option_n_builds_that_option():
    from trainsizer.plan.core import make_plan

    plan = make_plan(SEARCH, load_catalog(), option=2, top=1)
    second = next(o for o in plan.options if o.rank == 2)
    assert second.build is not None and plan.build == second.build
    assert plan.options[0].build is None
    assert plan.build["node"]["gpus_per_node"] == second.hardware.per_node
    # bought: the GPUs or their servers; rented: the GPUs by the hour
    servers = [ln["part"] for ln in plan.build["bom"]["lines"] if ln["item"].startswith(("GPU", "rented"))]
    assert servers and (second.hardware.server in servers or second.hardware.accelerator in servers)


def test_option_out_of_range():
    from trainsizer.plan.buildout.for_plan import check_option

    with pytest.raises(SpecError, match="no feasible option"):
        check_option(5, 3)
    with pytest.raises(SpecError):
        check_option(0, 3)
    check_option(None, 0)


def test_accept_reads_the_plan_files_build(plan_of, tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan_of(SEARCH).model_dump(mode="json")))
    crit = criteria.load(path)
    assert crit.gpu_count.source.startswith("plan:")
    assert crit.checkpoint_size_gb == plan_of(SEARCH).build["acceptance"]["checkpoint_size_gb"]


def test_cli_option_zero_is_exit_2(run_cli):
    code, _, err = run_cli("plan", SEARCH, "--option", "0")
    assert code == 2 and "--option" in err
