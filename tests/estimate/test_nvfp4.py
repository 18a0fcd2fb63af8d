"""fp8_recipe nvfp4 (Transformer Engine NVFP4BlockScaling): the linear layers' GEMMs at the part's per-tensor FP8
GEMM rate x the measured NVFP4 / FP8 kernel ratio (at most the FP4 peak at that share), NVFP4 casts (amax pass + E2M1 row- and column-wise with E4M3 scales), NVFP4
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


@pytest.mark.parametrize("acc", ["b200", "b300", "gb200", "gb300"])
def test_gemms_run_at_the_measured_ratio_over_per_tensor_fp8(acc):
    """TE's GEMM profiling guide (B300, pre-quantized): NVFP4 at 6.812 / 3.764 = 1.81x FP8 current scaling; the same
    ratio on every Blackwell part, whatever its rated FP4 peak (perf_constants.yaml fp8.recipes.nvfp4)."""
    k = load_constants()
    sc = _sc(acc)
    r = rates(sc.system, "fp8", k, fp8_recipe="nvfp4")
    per_tensor = rates(sc.system, "fp8", k, fp8_recipe="tensorwise")
    assert r.gemm_flops == pytest.approx(1.81 * per_tensor.gemm_flops)
    assert r.gemm_flops < sc.system.peak("fp4") * 1e12 * k.gemm_efficiency(acc)  # under the FP4 peak at the share
    assert r.gemm16_flops == pytest.approx(sc.system.peak("bf16") * 1e12 * k.gemm_efficiency(acc))  # LM head 16-bit
    assert r.fp8_cast_bytes == pytest.approx(5.125) and r.fp8_cast_kernels == 2


def test_nvfp4_is_faster_than_fp8_and_blackwell_ultra_gains_what_its_fp8_gains():
    for acc in ("b200", "gb300"):
        assert _step_s(_sc(acc, "nvfp4")) < _step_s(_sc(acc, "mxfp8", fp8_param_allgather=False))
    # B300's rated dense FP4 is 13,125 against B200's 9,000 at equal FP8 / BF16 peaks, but its NVFP4 runs gain about
    # what its FP8 runs gain (MLPerf v5.1 Llama 3.1 8B on 8 GPUs: B300 / B200 NVFP4 1.09): NVFP4 follows the FP8 rate
    gain_fp4 = _step_s(_sc("b200", "nvfp4")) / _step_s(_sc("b300", "nvfp4"))
    gain_fp8 = _step_s(_sc("b200", "tensorwise")) / _step_s(_sc("b300", "tensorwise"))
    assert gain_fp4 == pytest.approx(gain_fp8, abs=0.03) and gain_fp4 < 1.1


def test_the_fp4_peak_bounds_the_rate():
    """A part whose rated FP4 peak is under 1.81x its FP8 peak runs NVFP4 at the FP4 peak x the per-tensor share."""
    import dataclasses

    k = load_constants()
    sc = _sc("b200")
    low = dataclasses.replace(sc.system, peak_tflops={**sc.system.peak_tflops, "fp4": sc.system.peak("fp8") * 1.2})
    r, per_tensor = rates(low, "fp8", k, fp8_recipe="nvfp4"), rates(low, "fp8", k, fp8_recipe="tensorwise")
    assert r.gemm_flops == pytest.approx(1.2 * per_tensor.gemm_flops)


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


def _job_sc(bf16_layers: int, recipe: str = "nvfp4"):
    st = {"dp": 8, "micro_batch": 2, "recompute": "none", "framework": "megatron-core", "distributed_optimizer": True}
    return resolve_job(JOB | {"fp8_recipe": recipe, "bf16_layers": bf16_layers, "strategy": st,
                              "hardware": {"accelerator": "b200", "count": 8}}, load_catalog())


def test_bf16_layers_run_at_the_16bit_rate_and_save_16bit_inputs():
    """Megatron-Core first_last_layers_bf16: the kept layers' GEMMs at the BF16 rate with no casts, their inputs
    saved in 16 bit, no NVFP4 weight copy; between none and all of them the step and the memory move monotonically."""
    from trainsizer.estimate.step_time import _bf16_layers

    layers = _job_sc(0).model.layers  # 32
    steps = [_step_s(_job_sc(n)) for n in (0, 4, layers)]
    assert steps[0] < steps[1] < steps[2]
    sc = _job_sc(layers)
    r = rates(sc.system, "fp8", load_constants(), fp8_recipe="nvfp4")
    allbf16 = _bf16_layers(r, sc.training, sc.model)
    assert allbf16.gemm_flops == pytest.approx(r.gemm16_flops) and allbf16.fp8_cast_bytes == 0.0
    assert r.fp8_weight_cast_bytes > 0 and allbf16.fp8_weight_cast_bytes == 0.0  # a BF16 layer casts no weight either
    mem = [estimate_memory(s.model, s.training, s.system, s.strategy).items_bytes for s in (_job_sc(0), _job_sc(4))]
    assert float(mem[1]["fp8_weight_cache"]) == pytest.approx(float(mem[0]["fp8_weight_cache"]) * (1 - 4 / layers))
    assert float(mem[1]["layer_activations"]) > float(mem[0]["layer_activations"])


def test_bf16_layers_rules():
    with pytest.raises(TrainsizerError, match="bf16_layers"):
        _step_s(_job_sc(33))  # Llama 3.1 8B has 32 decoder layers
    with pytest.raises(TrainsizerError, match="precision fp8"):
        resolve_job(JOB | {"precision": "bf16", "bf16_layers": 2}, load_catalog())


def test_plan_names_the_recipe_it_filtered_on():
    """An NVFP4 plan's note on the parts left out names nvfp4, not fp8 (H100 has FP8 but no FP4 tensor cores)."""
    from types import SimpleNamespace

    from trainsizer.plan.core import _precision_label
    from trainsizer.plan.explain import precision_notes

    assert _precision_label(SimpleNamespace(precision="fp8", fp8_recipe="nvfp4")) == "nvfp4"
    assert _precision_label(SimpleNamespace(precision="fp8", fp8_recipe="delayed")) == "fp8"
    assert _precision_label(SimpleNamespace(precision="fp8", fp8_recipe="mxfp8")) == "mxfp8"  # Blackwell / CDNA 4 only
    cands = SimpleNamespace(excluded={"h100-sxm-80gb": [SimpleNamespace(code="precision")]})
    assert "nvfp4" in precision_notes(cands, "nvfp4")[0] and "h100-sxm-80gb" in precision_notes(cands, "nvfp4")[0]


def _tp_comm_s(sc) -> float:
    o = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
    return float(np.asarray(o["tp_comm"]).reshape(-1)[0])


def test_tp_comm_overlap_off_by_default_under_nvfp4():
    """Transformer Engine's userbuffers all-gather takes FP8 / MXFP8 quantizers only (module/base.py
    fill_userbuffers_buffer_for_all_gather raises for NVFP4), and Megatron-Bridge's NVFP4 recipes set
    tp_comm_overlap False: under NVFP4 a TE style's TP collectives are exposed unless the job states otherwise."""
    tp = {"dp": 4, "tp": 2, "sequence_parallel": True}
    default, off, on = (_sc("gb200", "nvfp4", **tp), _sc("gb200", "nvfp4", tp_comm_overlap=False, **tp),
                        _sc("gb200", "nvfp4", tp_comm_overlap=True, **tp))
    assert _tp_comm_s(default) == pytest.approx(_tp_comm_s(off))
    assert _tp_comm_s(on) < _tp_comm_s(off)  # an explicit setting is honoured (e.g. a cuBLASMp build)
    # the FP8 recipes keep the style's overlap
    mx_default, mx_off = _sc("gb200", "mxfp8", **tp), _sc("gb200", "mxfp8", tp_comm_overlap=False, **tp)
    assert _tp_comm_s(mx_default) < _tp_comm_s(mx_off)


def test_the_recipes_userbuffers_entry_decides_the_overlap_default():
    """Which recipes lose TE's TP overlap is the recipe's te_userbuffers_all_gather entry (perf_constants.yaml), not
    a rule on FP4: a recipe marked so loses it, FP8 or not, and NVFP4 marked otherwise keeps it."""
    import dataclasses

    from trainsizer.estimate.calibration import load_constants

    k = load_constants()
    sc = _sc("gb200", "mxfp8", dp=4, tp=2, sequence_parallel=True)
    nv = _sc("gb200", "nvfp4", dp=4, tp=2, sequence_parallel=True)

    def tp_s(case, recipe: str, takes: float) -> float:
        recipes = k.fp8_recipes | {recipe: k.fp8_recipes[recipe] | {"te_userbuffers_all_gather": takes}}
        o = step_time_arrays(case.model, case.training, case.system, case.strategy,
                             constants=dataclasses.replace(k, fp8_recipes=recipes))
        return float(np.asarray(o["tp_comm"]).reshape(-1)[0])

    assert tp_s(sc, "mxfp8", 0.0) > tp_s(sc, "mxfp8", 1.0) == pytest.approx(_tp_comm_s(sc))
    assert tp_s(nv, "nvfp4", 1.0) < tp_s(nv, "nvfp4", 0.0) == pytest.approx(_tp_comm_s(nv))


def test_nvfp4_overlap_default_leaves_styles_without_te_quantizers():
    """torchtitan's async TP is not TE's userbuffers: a style without TE quantizers keeps its overlap under NVFP4."""
    import dataclasses

    from trainsizer.estimate.step_time import perf_style

    sc = _sc("gb200", "nvfp4", dp=4, tp=2, sequence_parallel=True)
    tt = perf_style("torchtitan")
    assert not tt.fp8_te_quantizer

    def tp_s(overlap: bool) -> float:
        o = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy,
                             framework_style=dataclasses.replace(tt, tp_comm_overlap=overlap))
        return float(np.asarray(o["tp_comm"]).reshape(-1)[0])

    assert tp_s(True) < tp_s(False)
