"""fp8_recipe mxfp4 (AMD's Transformer Engine fork MXFP4BlockScaling, Primus fp4_recipe mxfp4): the linear layers'
GEMMs at the CDNA 4 FP4 peak through the same code as NVFP4 (perf_constants.yaml fp8.fp4_recipes), MX casts (E8M0
scale per 32 elements inside the cast: no amax pass), MXFP4 saved inputs and weight cache; refused on parts without
FP4 matrix cores that run it (CDNA 3, Hopper) and NVFP4 refused on CDNA 4."""

from __future__ import annotations

import numpy as np
import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError, TrainsizerError
from trainsizer.estimate.calibration import load_constants, rates
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.scenario import resolve_job
from trainsizer.search import Pins, hardware_candidates, load_config

JOB = {"model": "llama-3.1-8b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 8192,
       "global_batch": {"sequences": 32}, "precision": "fp8"}


def _sc(acc: str = "mi355x", recipe: str = "mxfp4", **strategy):
    st = {"dp": 8, "micro_batch": 2, "recompute": "none", "framework": "megatron-core",
          "distributed_optimizer": True, "fp8_param_allgather": False} | strategy
    return resolve_job(JOB | {"fp8_recipe": recipe, "hardware": {"accelerator": acc, "count": 8},
                              "strategy": st}, load_catalog())


def _step_s(sc) -> float:
    o = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
    return float(np.asarray(o["step_s"]).reshape(-1)[0])


def test_gemms_run_at_the_cdna4_fp4_peak_with_the_fp4_ratio():
    k = load_constants()
    sc = _sc()
    r = rates(sc.system, "fp8", k, fp8_recipe="mxfp4")
    eff16 = k.gemm_efficiency("mi355x")
    assert sc.system.peak("fp4") == pytest.approx(10066)
    # one block-scaled FP4 GEMM rate over per-tensor FP8 shared with NVFP4 (no CDNA 4 MXFP4 GEMM rate was found)
    ratio = k.fp8_recipes["mxfp4"]["gemm_rate_over_tensorwise"]
    assert ratio == k.fp8_recipes["nvfp4"]["gemm_rate_over_tensorwise"]
    share8 = eff16 * k.fp8_recipes["tensorwise"]["gemm_efficiency_ratio"]
    expect = min(ratio * sc.system.peak("fp8"), sc.system.peak("fp4")) * 1e12 * share8
    assert r.gemm_flops == pytest.approx(expect)
    assert r.gemm_flops > sc.system.peak("fp8") * 1e12 * share8  # faster than its per-tensor FP8 GEMMs
    assert r.gemm16_flops == pytest.approx(sc.system.peak("bf16") * 1e12 * eff16)
    # read 2 B, write row- and column-wise E2M1 with E8M0 scales per 32: 2 + 2 x (0.5 + 1/32), one kernel
    assert r.fp8_cast_bytes == pytest.approx(3.0625) and r.fp8_cast_kernels == 1


def test_mxfp4_is_faster_than_fp8_on_cdna4():
    for acc in ("mi355x", "mi350x"):
        assert _step_s(_sc(acc, "mxfp4")) < _step_s(_sc(acc, "delayed"))


@pytest.mark.parametrize("acc", ["mi300x", "mi325x", "h100-sxm-80gb", "b200"])
def test_refused_without_cdna4_fp4_matrix_cores(acc):
    with pytest.raises(SpecError) as err:
        _step_s(_sc(acc))
    assert err.value.where == "training.fp8_recipe" and "mxfp4" not in err.value.allowed
    assert acc in str(err.value) and "mi355x" in str(err.value)


def test_nvfp4_refused_on_cdna4():
    with pytest.raises(SpecError) as err:
        _step_s(_sc("mi355x", "nvfp4"))
    assert "nvfp4" not in err.value.allowed and "b200" in str(err.value)


def test_spec_rules_name_the_recipe():
    with pytest.raises(TrainsizerError, match="fp8_recipe mxfp4 .*precision fp8"):
        resolve_job(JOB | {"precision": "bf16", "fp8_recipe": "mxfp4"}, load_catalog())
    with pytest.raises(TrainsizerError, match="fp8_param_allgather true with fp8_recipe mxfp4"):
        _sc(fp8_param_allgather=True)


def test_memory_mxfp4_copies_are_smaller_than_nvfp4s():
    mx = _sc()
    a = estimate_memory(mx.model, mx.training, mx.system, mx.strategy).items_bytes
    d = _sc(recipe="delayed")
    b = estimate_memory(d.model, d.training, d.system, d.strategy).items_bytes
    assert 0 < float(a["fp8_weight_cache"]) < float(b["fp8_weight_cache"])
    assert float(a["weights"]) == pytest.approx(float(b["weights"]))  # 16-bit primary weights alike here


def test_search_keeps_only_parts_that_run_mxfp4():
    cat = load_catalog()
    sc = resolve_job(JOB | {"fp8_recipe": "mxfp4"}, cat)
    c = hardware_candidates(sc, cat, Pins(), {"exclude": set(), "include": None}, load_config())
    accs = {o.accelerator.id for o in c.options}
    assert accs and all(a.startswith(("mi350x", "mi355x")) for a in accs)
    assert [r.code for r in c.excluded["b200"]] == ["precision"]
    assert [r.code for r in c.excluded["mi300x"]] == ["precision"]
