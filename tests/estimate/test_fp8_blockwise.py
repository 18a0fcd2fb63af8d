"""fp8_recipe blockwise (Transformer Engine Float8BlockScaling, Megatron-Core --fp8-recipe blockwise: 1x128 activation
and gradient blocks, 128x128 weight tiles, FP32 scales): one cast kernel a tensor writing both quantized copies with
their scales (no amax pass, no fusion into the norm), block-scaled GEMMs at TE's measured ratio over per-tensor FP8 on
Hopper, MXFP8's GEMMs where TE emulates it (SM >= 10.0), no userbuffers TP overlap, and refused on parts that do not
run it (Ada, Ampere, AMD) in en / zh, in the estimate and in the search."""

from __future__ import annotations

import numpy as np
import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError
from trainsizer.estimate.calibration import load_constants, rates
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.messages import msg, tr
from trainsizer.scenario import resolve_job
from trainsizer.search import Pins, hardware_candidates, load_config

JOB = {"model": "llama-3.1-8b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 8192,
       "global_batch": {"sequences": 32}, "precision": "fp8"}


def _sc(acc: str = "h100-sxm-80gb", recipe: str = "blockwise", **strategy):
    st = {"dp": 8, "micro_batch": 2, "recompute": "none", "framework": "megatron-core",
          "distributed_optimizer": True} | strategy
    return resolve_job(JOB | {"fp8_recipe": recipe, "hardware": {"accelerator": acc, "count": 8},
                              "strategy": st}, load_catalog())


def _step_s(sc) -> float:
    o = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
    return float(np.asarray(o["step_s"]).reshape(-1)[0])


def test_casts_are_one_kernel_writing_both_copies_and_their_scales():
    k = load_constants()
    for fused in (False, True):  # TE's norm does not quantize to blocks: the same standalone cast either way
        r = rates(_sc().system, "fp8", k, fp8_recipe="blockwise", fused_cast=fused)
        # read 2 B, write the row-wise and the column-wise FP8 copy 1 + 1 B, an FP32 scale per 128 each: 2 x 4 / 128
        assert r.fp8_cast_bytes == pytest.approx(2 + 1 + 1 + 2 * 4 / 128) and r.fp8_cast_kernels == 1
    delayed = rates(_sc().system, "fp8", k, fp8_recipe="delayed", fused_cast=True)
    assert delayed.fp8_cast_bytes < r.fp8_cast_bytes  # delayed scaling's cast fuses into the norm; block scaling's not


def test_hopper_gemms_run_at_the_measured_ratio_over_per_tensor_fp8():
    k = load_constants()
    sys = _sc().system
    block = rates(sys, "fp8", k, fp8_recipe="blockwise")
    tensor = rates(sys, "fp8", k, fp8_recipe="tensorwise")
    ratio = k.fp8_recipes["blockwise"]["gemm_rate_over_tensorwise"]
    assert 0.7 < ratio < 0.9  # TE's GEMM profiling guide, H200 (perf_constants.yaml fp8.recipes.blockwise)
    assert block.gemm_flops == pytest.approx(tensor.gemm_flops * ratio)
    assert block.gemm16_flops == pytest.approx(tensor.gemm16_flops)


def test_blackwell_runs_mxfp8_gemms_with_the_block_casts():
    k = load_constants()
    sys = _sc("b200").system
    block = rates(sys, "fp8", k, fp8_recipe="blockwise")
    mx = rates(sys, "fp8", k, fp8_recipe="mxfp8")
    assert block.gemm_flops == pytest.approx(mx.gemm_flops)
    assert block.fp8_cast_bytes == pytest.approx(4.0625) != mx.fp8_cast_bytes


def test_step_sits_between_bf16_and_per_tensor_fp8_on_hopper():
    block = _step_s(_sc())
    assert _step_s(_sc(recipe="delayed")) < block < _step_s(resolve_job(
        JOB | {"precision": "bf16", "hardware": {"accelerator": "h100-sxm-80gb", "count": 8},
               "strategy": {"dp": 8, "micro_batch": 2, "recompute": "none", "framework": "megatron-core",
                            "distributed_optimizer": True}}, load_catalog()))


def test_no_userbuffers_tp_overlap_unless_stated():
    stated = _step_s(_sc(tp=8, dp=1, sequence_parallel=True, tp_comm_overlap=True))
    default = _step_s(_sc(tp=8, dp=1, sequence_parallel=True))
    assert default > stated  # TE's userbuffers take no Float8BlockQuantizer: the TP collectives stay exposed


@pytest.mark.parametrize("acc", ["l40s", "rtx-4090", "a100-sxm-80gb", "mi300x", "mi355x"])
def test_refused_where_transformer_engine_does_not_run_it(acc):
    with pytest.raises(SpecError) as err:
        _step_s(_sc(acc))
    assert err.value.where == "training.fp8_recipe" and "blockwise" not in err.value.allowed
    assert acc in str(err.value) and "h100" in str(err.value) and "Float8BlockScaling" in str(err.value)


def test_refusal_reads_in_chinese():
    m = msg("fp8_recipe_parts_blockwise", recipe="blockwise", accelerator="l40s", parts="h100, b200")
    zh = tr(m, "zh")
    assert "无法在 l40s 上运行" in zh and "Hopper 或 Blackwell" in zh and "h100, b200" in zh


@pytest.mark.parametrize("acc", ["h100-sxm-80gb", "h200-sxm-141gb", "gb200", "b300"])
def test_estimated_on_hopper_and_blackwell(acc):
    assert _step_s(_sc(acc)) > 0


def test_search_keeps_only_parts_that_run_blockwise():
    cat = load_catalog()
    sc = resolve_job(JOB | {"fp8_recipe": "blockwise"}, cat)
    c = hardware_candidates(sc, cat, Pins(), {"exclude": set(), "include": None}, load_config())
    accs = {o.accelerator.id for o in c.options}
    assert "h100-sxm-80gb" in accs and not any(a.startswith(("l40", "mi3", "a100")) for a in accs)
    assert [r.code for r in c.excluded["l40s"]] == ["precision"]


def test_plan_names_the_parts_left_out_for_the_recipe():
    from types import SimpleNamespace

    from trainsizer.plan.core import _precision_label
    from trainsizer.plan.explain import precision_notes

    assert _precision_label(SimpleNamespace(precision="fp8", fp8_recipe="blockwise")) == "blockwise"
    cat = load_catalog()
    sc = resolve_job(JOB | {"fp8_recipe": "blockwise"}, cat)
    cands = hardware_candidates(sc, cat, Pins(), {"exclude": set(), "include": None}, load_config())
    en, zh = precision_notes(cands, "blockwise"), precision_notes(cands, "blockwise", "zh")
    assert "l40s" in en[0] and "fp8_recipe blockwise is not run there" in en[0] and "delayed" in en[0]
    assert "l40s" in zh[0] and "不支持 fp8_recipe blockwise" in zh[0]
