"""fp8_recipe nvfp4-torchao (torchao's prototype NVFP4 training under torchtitan's NVFP4LinearConverter): the nvfp4
format and GEMM rate, torchao's Triton casts at the time torchao's own kernel benchmarks measure on GB200 (not at the
HBM rate), no weight cache, and under torchtitan's per-op selective AC nothing of a converted linear saved (its GEMM
and casts are not in the save list) so every linear's forward runs again; refused off SM100 Blackwell and on stacks
that do not run torchao's module swap, in en / zh (docs/known-gaps.md 120)."""

from __future__ import annotations

import numpy as np
import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError, StrategyError
from trainsizer.estimate.activations import op_sac_unsaved_share, torchtitan_op_sac_items
from trainsizer.estimate.calibration import load_constants, rates
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import estimate_time
from trainsizer.messages import msg, tr
from trainsizer.scenario import resolve_job


def _sc(recipe: str = "nvfp4-torchao", acc: str = "gb200", framework: str = "torchtitan", recompute: str = "selective",
        precision: str = "fp8", **extra):
    job = {"model": "llama-3.1-8b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 2048,
           "global_batch": {"sequences": 64}, "precision": precision,
           "hardware": {"accelerator": acc, "count": 4},
           "strategy": {"dp": 4, "zero": 3, "micro_batch": 16, "recompute": recompute, "framework": framework}}
    if precision == "fp8":
        job["fp8_recipe"] = recipe
    return resolve_job(job | extra, load_catalog())


def _step_s(sc) -> float:
    return float(np.asarray(estimate_time(sc.model, sc.training, sc.system, sc.strategy).step_s).reshape(-1)[0])


def _peak_gib(sc) -> float:
    return estimate_memory(sc.model, sc.training, sc.system, sc.strategy).per_gpu_bytes / 2**30


def test_same_bytes_and_gemms_as_nvfp4_but_the_casts_take_the_measured_time():
    k = load_constants()
    sys = _sc().system
    ao = rates(sys, "fp8", k, fp8_recipe="nvfp4-torchao")
    te = rates(sys, "fp8", k, fp8_recipe="nvfp4")
    assert ao.gemm_flops == pytest.approx(te.gemm_flops)  # cuBLAS's block-scaled FP4 GEMM either way
    r = k.fp8_recipes["nvfp4-torchao"]
    assert r["cast_bytes_per_element"] == k.fp8_recipes["nvfp4"]["cast_bytes_per_element"] == 5.125
    # torchao's Triton kernels are compute-bound: several times the counted bytes' streaming time, the stochastically
    # rounded backward dearer than the forward
    assert ao.fp8_cast_bytes == pytest.approx(5.125 * r["cast_time_over_bytes_forward"])
    assert ao.fp8_cast_bwd_bytes == pytest.approx(5.125 * r["cast_time_over_bytes_backward"])
    assert 2.0 < r["cast_time_over_bytes_forward"] < r["cast_time_over_bytes_backward"] < 5.0
    assert te.fp8_cast_bwd_bytes == 0.0  # TE's casts: one figure both ways


def test_casts_make_it_slower_than_te_nvfp4_without_recompute():
    assert _step_s(_sc(recompute="none")) > _step_s(_sc("nvfp4", recompute="none"))


def test_op_sac_saves_nothing_of_the_converted_linears():
    sc = _sc()
    full = torchtitan_op_sac_items(sc.model, _sc("mxfp8").training, moe=False)
    ao = torchtitan_op_sac_items(sc.model, sc.training, moe=False)
    a, h = 2.0, sc.model.hidden
    # what is left: the block input, the attention output and its log-sum-exp
    assert ao.sp + ao.tp == pytest.approx(a * h + a * sc.model.heads * sc.model.head_dims[0] + 4.0 * sc.model.heads)
    assert full.sp + full.tp > 2.5 * (ao.sp + ao.tp)


def test_bf16_tail_layers_keep_their_saves():
    sc = _sc()
    tail = _sc(bf16_layers=8)
    assert op_sac_unsaved_share(sc.training, sc.model) == 1.0
    assert op_sac_unsaved_share(tail.training, tail.model) == pytest.approx(24 / 32)
    assert op_sac_unsaved_share(_sc("nvfp4").training, sc.model) == 0.0  # TE's NVFP4 is not under this rule


def test_memory_falls_and_the_step_pays_the_recompute_under_op_sac():
    ao, mx = _sc(), _sc("mxfp8")
    assert _peak_gib(ao) < 0.8 * _peak_gib(mx)
    # every converted linear's forward runs again in backward, not every other one: op SAC costs more than under TE's
    # NVFP4, whose linears' outputs the policy saves as aten.mm's (the estimate's every-other-mm rule)
    te = _step_s(_sc("nvfp4")) - _step_s(_sc("nvfp4", recompute="none"))
    assert _step_s(ao) - _step_s(_sc(recompute="none")) > 1.3 * te


@pytest.mark.parametrize("acc", ["h100-sxm-80gb", "rtx-5090", "mi355x"])
def test_refused_off_sm100_blackwell(acc):
    with pytest.raises(SpecError) as err:
        _step_s(_sc(acc=acc))
    assert err.value.where == "training.fp8_recipe" and "nvfp4-torchao" not in err.value.allowed
    assert acc in str(err.value) and "gb200" in str(err.value)


@pytest.mark.parametrize(("acc", "runs", "not_run"), [("h100-sxm-80gb", {"blockwise", "delayed"}, {"mxfp8", "nvfp4"}),
                                                     ("mi355x", {"mxfp8", "mxfp4"}, {"blockwise", "nvfp4"})])
def test_a_refusal_lists_what_the_part_runs_auto_first(acc, runs, not_run):
    """The allowed values of a refused recipe are the recipes this part runs (an H100 runs blockwise, not MXFP8),
    auto first: the family default is always a way out (calibration.PerfConstants.recipes_on)."""
    with pytest.raises(SpecError) as err:
        _step_s(_sc(acc=acc))
    allowed = [a.strip() for a in str(err.value.allowed).split(",")]
    assert allowed[0] == "auto" and runs <= set(allowed) and not (not_run & set(allowed))


@pytest.mark.parametrize("acc", ["b200", "gb200", "gb300"])
def test_estimated_on_sm100_parts(acc):
    assert _step_s(_sc(acc=acc)) > 0


@pytest.mark.parametrize("framework", ["megatron-core", "hf", "deepspeed", "torchtune"])
def test_refused_on_stacks_without_torchaos_module_swap(framework):
    with pytest.raises(StrategyError) as err:
        _step_s(_sc(framework=framework, recompute="full"))
    assert err.value.rule == "fp8_recipe_torchao_framework"
    assert "torchtitan, fsdp" in str(err.value) and "fp8_recipe nvfp4" in str(err.value)


def test_refused_outside_fp8_precision():
    with pytest.raises(Exception, match="nvfp4-torchao"):
        resolve_job({"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": 2048, "precision": "bf16",
                     "fp8_recipe": "nvfp4-torchao", "global_batch": {"sequences": 64}}, load_catalog())


def test_refusal_reads_in_chinese():
    zh = tr(msg("rule_fp8_recipe_torchao_framework", framework="'hf'", allowed="torchtitan, fsdp"), "zh")
    assert "torchao" in zh and "框架 'hf'" in zh and "允许：torchtitan, fsdp" in zh


def test_search_keeps_only_sm100_parts():
    from trainsizer.search import Pins, hardware_candidates, load_config

    cat = load_catalog()
    sc = resolve_job({"model": "llama-3.1-8b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 2048,
                      "global_batch": {"sequences": 64}, "precision": "fp8", "fp8_recipe": "nvfp4-torchao"}, cat)
    c = hardware_candidates(sc, cat, Pins(), {"exclude": set(), "include": None}, load_config())
    accs = {o.accelerator.id for o in c.options}
    assert accs and all(a.startswith(("b100", "b200", "b300", "gb200", "gb300")) for a in accs)
    for part in ("h100-sxm-80gb", "rtx-5090", "mi355x"):
        assert [r.code for r in c.excluded[part]] == ["precision"]
