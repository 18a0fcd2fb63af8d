"""strategy.experts_implementation dense_all: every routed expert runs on every token, the input scaled by a router
score that is zero off the chosen experts (transformers' Llama4TextMoe.forward, modeling_llama4.py at 63210d0e3 /
000c33fdf): the expert GEMMs and the expert activations at top-k = the expert count, the model FLOPs (MFU) at the
model's own top-k; the hf stack's default for Llama 4 (perf_constants.yaml hf dense_expert_families), overridable."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError
from trainsizer.estimate.framework import experts_implementation_of, routed_model
from trainsizer.evaluate import evaluate
from trainsizer.models.shipped import load_preset
from trainsizer.scenario import resolve_job

CAT = load_catalog([])
SCOUT = "llama-4-scout-17b-16e"


def _job(model: str = SCOUT, framework: str = "hf", **strategy) -> dict:
    return {"model": model, "method": "qlora", "lora": {"rank": 16}, "data": {"tokens": 1e7}, "seq_len": 2048,
            "global_batch": {"sequences": 4}, "precision": "bf16",
            "hardware": {"accelerator": "h100-sxm-80gb", "count": 4},
            "strategy": {"micro_batch": 1, "recompute": "full", "fsdp": "full", "framework": framework, **strategy}}


def _evaluate(model: str = SCOUT, **kw) -> dict:
    return evaluate(resolve_job(_job(model, **kw), CAT), CAT)


def test_llama4_under_hf_runs_every_expert_by_default_and_says_so():
    unstated, grouped = _evaluate(), _evaluate(experts_implementation="grouped_mm")
    assert unstated["framework"]["experts_implementation"] == {"requested": None, "assumed": "dense_all"}
    assert grouped["framework"]["experts_implementation"]["assumed"] == "grouped_mm"
    assert unstated["time"]["step_s"] > 2 * grouped["time"]["step_s"]  # 16 experts' GEMMs where top-1 ran one
    # the experts' activations are the re-run layer's: with the loss phase summed beside it (live_at_rerun loss) the
    # peak holds them; at the hf default the loss phase, larger here at 2,048 positions of a 202,048-token vocabulary,
    # sets the peak (known-gaps 203), so the two agree
    summed, summed_grouped = _evaluate(live_at_rerun="loss"), _evaluate(experts_implementation="grouped_mm",
                                                                        live_at_rerun="loss")
    assert summed["memory"]["per_gpu_gib"] > summed_grouped["memory"]["per_gpu_gib"]
    assert unstated["memory"]["per_gpu_gib"] >= grouped["memory"]["per_gpu_gib"]


def test_dense_all_is_the_model_at_top_k_equal_to_its_expert_count_save_for_model_flops():
    every = {"preset": SCOUT, "experts_per_token": load_preset(SCOUT).experts}
    dense = evaluate(resolve_job(_job(experts_implementation="dense_all"), CAT), CAT)
    as_topk = evaluate(resolve_job(dict(_job(experts_implementation="grouped_mm"), model=every), CAT), CAT)
    assert dense["time"]["step_s"] == pytest.approx(as_topk["time"]["step_s"], rel=1e-9)
    assert dense["memory"]["per_gpu_gib"] == pytest.approx(as_topk["memory"]["per_gpu_gib"], rel=1e-9)
    grouped = _evaluate(experts_implementation="grouped_mm")
    assert dense["time"]["model_flops_per_step"] == pytest.approx(grouped["time"]["model_flops_per_step"], rel=1e-9)
    assert dense["time"]["hardware_flops_per_step"] > 5 * grouped["time"]["hardware_flops_per_step"]


def _layout(framework: str, tp: int = 1, ep: int = 1, zero: int = 0):
    return type("S", (), {"framework": framework, "tp": tp, "pp": 1, "cp": 1, "ep": ep, "zero": zero,
                          "distributed_optimizer": False})()


def test_other_families_and_other_stacks_keep_their_default():
    assert _evaluate("mixtral-8x7b")["framework"]["experts_implementation"]["assumed"] == "grouped_mm"
    scout = load_preset(SCOUT)
    assert experts_implementation_of(_layout("auto", tp=2), scout) is None  # auto: megatron-core's own MoE
    assert experts_implementation_of(_layout("torchtitan"), scout) is None
    assert routed_model(scout, _layout("torchtitan")) is scout


def test_auto_applies_the_default_of_the_stack_it_resolves_to():
    """framework auto resolves a data-parallel fine-tune to hf (framework.auto_index), which runs Llama 4's experts
    dense: the same estimate as naming hf, and it says so; a tensor-parallel layout resolves to megatron-core, whose MoE
    routes (known-gaps 154 (a))."""
    scout = load_preset(SCOUT)
    assert experts_implementation_of(_layout("auto"), scout) == "dense_all"
    assert experts_implementation_of(_layout("auto", zero=3), scout, pretraining=True) is None  # torchtitan
    auto, hf = _evaluate(framework="auto"), _evaluate()
    assert auto["framework"]["assumed"] == "hf"
    assert auto["framework"]["experts_implementation"] == {"requested": None, "assumed": "dense_all"}
    assert auto["time"]["step_s"] == pytest.approx(hf["time"]["step_s"], rel=1e-12)
    assert auto["memory"]["per_gpu_gib"] == pytest.approx(hf["memory"]["per_gpu_gib"], rel=1e-12)


def test_a_bad_value_is_refused_with_the_allowed_names():
    with pytest.raises(TrainsizerError) as err:
        _evaluate(experts_implementation="every")
    assert "dense_all" in str(err.value)


def test_dense_all_outside_hf_is_refused():
    with pytest.raises(TrainsizerError):
        _evaluate(framework="torchtitan", experts_implementation="dense_all")


@settings(max_examples=8, deadline=None)
@given(st.sampled_from(["eager", "grouped_mm", "dense_all", None]))
def test_routed_model_changes_only_top_k(impl):
    scout = load_preset(SCOUT)
    strat = type("S", (), {"framework": "hf", "experts_implementation": impl})()
    m = routed_model(scout, strat)
    want = scout.experts if impl in ("dense_all", None) else scout.experts_per_token
    assert m.experts_per_token == want
    assert dataclasses.replace(m, experts_per_token=scout.experts_per_token) == scout
