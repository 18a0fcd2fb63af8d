"""torchtitan's MoE glue and dispatch host syncs (step_time._moe_eager_glue_time, _moe_dispatch_sync_excess): the
gather, permutation, scatter and fp32 weighted combine that run eager outside its per-submodule compile (counted bytes,
perf_constants.yaml gemm.moe_eager_glue_bytes), and the blocking host syncs of its token dispatch (one a forward on the
all-to-all path at EP > 1, five behind DeepEP). docs/known-gaps.md 98."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.step_time import perf_style, step_time_arrays
from trainsizer.models.arch import ModelArch
from trainsizer.render.i18n import t


def _moe(experts_per_token: int = 8, family: str = "deepseek_v3") -> ModelArch:
    return ModelArch(name="moe", family=family, layers=4, hidden=7168, heads=32, kv_heads=32, ffn=0, vocab=129280,
                     max_position=8192, experts=64, experts_per_token=experts_per_token, expert_ffn=2048)


def _h100() -> System:
    return System(accelerator="h100", gpus=16, gpus_per_node=8, memory_gib=80,
                  peak_tflops={"bf16": 989.0, "fp16": 989.0, "fp8": 1979.0}, hbm_gb_s=3350.0,
                  intra_node_gb_s=450.0, scaleup_domain=8, inter_node_gb_s=50.0)


def _step(glue: bool, syncs: float = 0.0, dispatcher: str = "alltoall", ep: int = 16, model: ModelArch | None = None,
          recompute: str = "none") -> dict:
    style = dataclasses.replace(perf_style("torchtitan"), moe_eager_glue=glue, moe_dispatch_syncs=syncs,
                                moe_deepep_syncs=5.0 * syncs)
    st = Strategy(dp=16, zero=3, ep=ep, micro_batch=1, framework="torchtitan", moe_dispatcher=dispatcher,
                  recompute=recompute)
    return step_time_arrays(model or _moe(), Training(seq_len=4096, global_batch_seqs=16), _h100(), st,
                            framework_style=style)


def _fb(out: dict) -> float:
    return float(np.asarray(out["compute"]))


def _after_bytes(topk: int = 8) -> tuple[float, float]:
    """(forward, backward) bytes a routed copy element on the scores-after-experts path (DeepSeek-V3's port)."""
    k = load_constants().moe_eager_glue_bytes
    return tuple(k[kind] + k[f"{kind}_per_token"] / topk + k[f"after_{kind}"] + k[f"after_{kind}_per_token"] / topk
                 for kind in ("forward", "backward"))


def test_deepseek_v3s_count_at_top_8():
    assert _after_bytes() == pytest.approx((33.25, 44.0))


def test_the_glue_adds_the_counted_bytes_beyond_the_charged_permutation():
    """4 MoE layers, 4,096 tokens x top-8 routed copies a GPU, h 7,168: the forward and backward grow by the counted
    bytes less the permutation's charged 4 / 8 activation bytes, at the streaming rate (within its launch gaps)."""
    added = _fb(_step(True)) - _fb(_step(False))
    elements = 4 * 4096 * 8 * 7168
    fwd, bwd = _after_bytes()
    nbytes = elements * ((fwd - 8.0) + (bwd - 16.0))
    assert added > 0
    assert nbytes / added == pytest.approx(3350e9, rel=0.35)  # an HBM-bound cost, near the part's streaming rate


def test_the_glue_runs_again_in_a_full_recompute():
    plain = _fb(_step(True)) - _fb(_step(False))
    full = _fb(_step(True, recompute="full")) - _fb(_step(False, recompute="full"))
    fwd, bwd = (v - c for v, c in zip(_after_bytes(), (8.0, 16.0), strict=True))
    assert full / plain == pytest.approx((2 * fwd + bwd) / (fwd + bwd), rel=0.05)


def test_the_llama_4_port_weights_before_the_experts_and_moves_more():
    """torchtitan's Llama 4 takes MoEArgs' score_before_experts True: the fp32 multiply on every routed copy
    before the experts and a sum after, more bytes than the fp32 bmm after them at top-8."""
    assert "llama4_text" not in perf_style("torchtitan").moe_score_after_families.split(",")
    after = _fb(_step(True)) - _fb(_step(False))
    before = _fb(_step(True, model=_moe(family="llama4_text"))) - _fb(_step(False, model=_moe(family="llama4_text")))
    assert before > after


def test_no_glue_behind_deepep_or_on_a_dense_model():
    assert _fb(_step(True, dispatcher="flex")) == pytest.approx(_fb(_step(False, dispatcher="flex")))
    dense = ModelArch(name="d", family="llama", layers=4, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256,
                      max_position=8192)
    assert float(np.asarray(_step(True, model=dense)["step_s"])) == pytest.approx(
        float(np.asarray(_step(False, model=dense)["step_s"])))


def test_the_style_and_a_stated_false():
    """torchtitan's style runs the glue eager; a job that states false (a release whose compile covers it) does not
    pay it, and its step equals the style's with the glue taken out."""
    assert perf_style("torchtitan").moe_eager_glue and not perf_style("megatron-core").moe_eager_glue

    def run(glue):
        st = Strategy(dp=16, zero=3, ep=16, micro_batch=1, framework="torchtitan", moe_dispatcher="alltoall",
                      moe_eager_glue=glue)
        return float(np.asarray(step_time_arrays(_moe(), Training(seq_len=4096, global_batch_seqs=16), _h100(),
                                                 st)["compute"]))

    assert run(None) == pytest.approx(run(True))
    assert run(False) < run(True)
    assert run(True) - run(False) == pytest.approx(_fb(_step(True)) - _fb(_step(False)), rel=1e-6)


def test_a_dispatch_sync_costs_a_latency_at_ep_only():
    """One sync a forward: the next op's issue (NVIDIA has no round-trip figure), a few tens of us a step here; none
    at EP 1, five times as much behind DeepEP."""
    base = float(np.asarray(_step(False)["step_s"]))
    one = float(np.asarray(_step(False, syncs=1.0)["step_s"])) - base
    assert 0.0 < one < 1e-3
    ep1 = _step(False, syncs=1.0, ep=1)
    assert float(np.asarray(ep1["step_s"])) == pytest.approx(float(np.asarray(_step(False, ep=1)["step_s"])))
    flex = float(np.asarray(_step(False, syncs=1.0, dispatcher="flex")["step_s"])) - float(
        np.asarray(_step(False, dispatcher="flex")["step_s"]))
    assert flex == pytest.approx(5.0 * one, rel=0.05)


def test_the_field_reads_in_both_languages():
    assert "torchtitan" in t("field_strategy.moe_eager_glue", "en")
    assert t("field_strategy.moe_eager_glue", "zh") != t("field_strategy.moe_eager_glue", "en")


def _job_step(framework: str, **strategy) -> float:
    from trainsizer.catalog import load_catalog
    from trainsizer.estimate.step_time import estimate_time
    from trainsizer.scenario import resolve_job

    job = {"model": "qwen3-30b-a3b", "data": {"tokens": 1e9}, "seq_len": 4096, "global_batch": {"sequences": 8},
           "precision": "bf16", "hardware": {"accelerator": "h100-sxm-80gb", "count": 8},
           "strategy": {"micro_batch": 1, "recompute": "full", "framework": framework, "dp": 8, "zero": 3, "ep": 8,
                        **strategy}}
    sc = resolve_job(job, load_catalog())
    return float(estimate_time(sc.model, sc.training, sc.system, sc.strategy).step_s)


def test_a_job_file_states_it_and_other_stacks_are_refused_naming_the_allowed_one():
    from trainsizer.errors import StrategyError

    assert _job_step("torchtitan", moe_eager_glue=False) < _job_step("torchtitan")
    with pytest.raises(StrategyError) as err:
        _job_step("megatron-core", moe_eager_glue=True)
    assert err.value.rule == "moe_eager_glue_framework"
    assert "'megatron-core'" in str(err.value) and "allowed: torchtitan" in str(err.value)
