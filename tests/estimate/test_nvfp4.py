"""fp8_recipe nvfp4 (Transformer Engine NVFP4BlockScaling): the linear layers' GEMMs at the FP4 tensor-core peak x
the bf16 share x the recipe's ratio, NVFP4 casts (amax pass + E2M1 row- and column-wise with E4M3 scales), NVFP4
saved inputs and weight cache, 16-bit primary weights; refused where no Blackwell FP4 tensor cores run it."""

from __future__ import annotations

import numpy as np
import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError, TrainsizerError
from trainsizer.estimate.calibration import load_constants, rates
from trainsizer.estimate.memory import GIB, estimate_memory
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.scenario import resolve_job
from trainsizer.search import Pins, hardware_candidates, load_config

JOB = {"model": "llama-3.1-8b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 8192,
       "global_batch": {"sequences": 16}, "precision": "fp8"}


def _sc(acc: str = "b200", recipe: str = "nvfp4", count: int = 8, **strategy):
    st = {"dp": count, "micro_batch": 2, "recompute": "none", "framework": "megatron-core",
          "distributed_optimizer": True} | strategy
    return resolve_job(JOB | {"fp8_recipe": recipe, "hardware": {"accelerator": acc, "count": count,
                                                                  "network": "ib-ndr400"},
                              "strategy": st}, load_catalog())


def _step_s(sc) -> float:
    o = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
    return float(np.asarray(o["step_s"]).reshape(-1)[0])


def test_gemms_run_at_the_fp4_peak_with_the_recipe_ratio():
    k = load_constants()
    sc = _sc("b300")
    r = rates(sc.system, "fp8", k, fp8_recipe="nvfp4")
    eff16 = k.gemm_efficiency("b300")
    assert r.gemm_flops == pytest.approx(sc.system.peak("fp4") * 1e12 * eff16 * 0.586)
    assert r.gemm16_flops == pytest.approx(sc.system.peak("bf16") * 1e12 * eff16)  # the LM head stays 16-bit
    assert r.fp8_cast_bytes == pytest.approx(5.125) and r.fp8_cast_kernels == 2


def test_nvfp4_is_faster_than_fp8_and_blackwell_ultra_gains_its_fp4_peak():
    for acc in ("b200", "gb300"):
        assert _step_s(_sc(acc, "nvfp4")) < _step_s(_sc(acc, "mxfp8", fp8_param_allgather=False))
    # B300's dense FP4 is 13,125 against B200's 9,000 at equal FP8 / BF16 peaks: NVFP4 gains, MXFP8 does not
    gain_fp4 = _step_s(_sc("b200", "nvfp4")) / _step_s(_sc("b300", "nvfp4"))
    gain_fp8 = _step_s(_sc("b200", "mxfp8")) / _step_s(_sc("b300", "mxfp8"))
    assert gain_fp4 > gain_fp8 + 0.05


@pytest.mark.parametrize("acc", ["h100-sxm-80gb", "mi355x"])
def test_refused_without_nvidia_fp4_tensor_cores(acc):
    sc = _sc(acc)
    with pytest.raises(SpecError) as err:
        _step_s(sc)
    assert err.value.where == "training.fp8_recipe" and "nvfp4" not in err.value.allowed
    assert "tensorwise" in err.value.allowed and acc in str(err.value)


def test_spec_rules():
    with pytest.raises(TrainsizerError, match="precision fp8"):
        resolve_job(JOB | {"precision": "bf16", "fp8_recipe": "nvfp4"}, load_catalog())
    with pytest.raises(TrainsizerError, match="fp8_param_allgather"):
        _sc(fp8_param_allgather=True)


def test_memory_nvfp4_copies_and_16bit_primary_weights():
    nv, mx = _sc("b200", "nvfp4"), _sc("b200", "mxfp8", fp8_param_allgather=False)
    a = estimate_memory(nv.model, nv.training, nv.system, nv.strategy).items_bytes
    b = estimate_memory(mx.model, mx.training, mx.system, mx.strategy).items_bytes
    # weight cache: 2 x (0.5 + 1/16) B per GEMM weight against MXFP8's FP8 copy + column-wise copy, 2 B
    assert float(a["fp8_weight_cache"]) == pytest.approx(float(b["fp8_weight_cache"]) * 1.125 / 2.0)
    # FP8 primary weights (the megatron-core FP8 default) do not apply: the 16-bit weights are kept
    assert float(a["weights"]) == pytest.approx(float(b["weights"]))
    fp8_default = _sc("b200", "mxfp8")  # FP8 primary weights: 1 B per GEMM weight
    c = estimate_memory(fp8_default.model, fp8_default.training, fp8_default.system, fp8_default.strategy)
    assert float(c.items_bytes["weights"]) < 0.7 * float(a["weights"])
    # saved linear inputs at 0.5625 B against FP8's 1 B: less activation memory, a lower peak
    per_gpu = [estimate_memory(s.model, s.training, s.system, s.strategy).per_gpu_bytes / GIB for s in (nv, mx)]
    assert per_gpu[0] < per_gpu[1] - 1.0


def test_search_leaves_out_parts_without_nvfp4():
    cat = load_catalog()
    sc = resolve_job(JOB | {"fp8_recipe": "nvfp4"}, cat)
    c = hardware_candidates(sc, cat, Pins(), {"exclude": set(), "include": None}, load_config())
    accs = {o.accelerator.id for o in c.options}
    assert accs and all(a.startswith(("b", "gb", "rtx-5090", "rtx-pro-6000", "rubin")) for a in accs)
    assert [r.code for r in c.excluded["h100-sxm-80gb"]] == ["precision"]
    assert [r.code for r in c.excluded["mi355x"]] == ["precision"]
