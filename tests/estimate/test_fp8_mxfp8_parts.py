"""fp8_recipe mxfp8 needs tensor cores that take E8M0 block scales (Blackwell, AMD CDNA 4): a Hopper, Ada, Ampere or
CDNA 3 job stating it is refused in en / zh (perf_constants.yaml fp8.recipe_families), the search drops those parts,
and auto keeps each family's own default (MXFP8 on Blackwell, delayed scaling elsewhere)."""

from __future__ import annotations

import numpy as np
import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.messages import msg, tr
from trainsizer.scenario import resolve_job
from trainsizer.search import Pins, hardware_candidates, load_config

JOB = {"model": "llama-3.1-8b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 8192,
       "global_batch": {"sequences": 32}, "precision": "fp8"}


def _step_s(acc: str, recipe: str = "mxfp8") -> float:
    st = {"dp": 8, "micro_batch": 2, "recompute": "none", "framework": "megatron-core", "distributed_optimizer": True}
    sc = resolve_job(JOB | {"fp8_recipe": recipe, "hardware": {"accelerator": acc, "count": 8}, "strategy": st},
                     load_catalog())
    o = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
    return float(np.asarray(o["step_s"]).reshape(-1)[0])


@pytest.mark.parametrize("acc", ["h100-sxm-80gb", "h200-sxm-141gb", "l40s", "a100-sxm-80gb", "mi300x"])
def test_refused_without_block_scaled_tensor_cores(acc):
    with pytest.raises(SpecError) as err:
        _step_s(acc)
    assert err.value.where == "training.fp8_recipe" and "mxfp8" not in err.value.allowed
    assert str(err.value.allowed).startswith("auto, ")  # the family's own default is always a way out
    assert acc in str(err.value) and "b200" in str(err.value) and "E8M0" in str(err.value)


@pytest.mark.parametrize("acc", ["b200", "gb300", "mi355x"])
def test_estimated_where_the_part_runs_it(acc):
    assert _step_s(acc) > 0


def test_auto_keeps_the_family_default_on_hopper():
    assert _step_s("h100-sxm-80gb", "auto") == _step_s("h100-sxm-80gb", "delayed")


def test_refusal_reads_in_chinese():
    zh = tr(msg("fp8_recipe_parts_mxfp8", recipe="mxfp8", accelerator="h100-sxm-80gb", parts="b200, mi355x"), "zh")
    assert "无法在 h100-sxm-80gb 上运行" in zh and "Blackwell" in zh and "b200, mi355x" in zh


def test_search_keeps_only_parts_that_run_mxfp8():
    cat = load_catalog()
    sc = resolve_job(JOB | {"fp8_recipe": "mxfp8"}, cat)
    c = hardware_candidates(sc, cat, Pins(), {"exclude": set(), "include": None}, load_config())
    accs = {o.accelerator.id for o in c.options}
    assert "b200" in accs and not any(a.startswith(("h100", "h200", "l40", "mi300", "a100")) for a in accs)
    assert [r.code for r in c.excluded["h100-sxm-80gb"]] == ["precision"]
