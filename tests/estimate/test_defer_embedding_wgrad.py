"""strategy.defer_embedding_wgrad / wgrad_deferral_limit (Megatron-Core defer_embedding_wgrad_compute: the LM head's
weight-gradient GEMMs of the first `limit` micro-batches run on the last pipeline rank after its last backward) and
their timing (step_time._deferred_head_wgrad)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import StrategyError, TrainsizerError
from trainsizer.estimate import compute, step_time
from trainsizer.estimate.step_time import estimate_time, step_time_arrays
from trainsizer.render.i18n import t
from trainsizer.scenario import resolve_job

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import perf_heldout36 as h36  # noqa: E402

# GPT-3 175B at MLPerf v4.1's 512-H100 layout: 64 micro-batches of 2 a pipeline, 12 layers a stage, no slots, so
# the last stage (12 layers + the 16-bit head under FP8 layers) paces the pipeline
GPT3 = {"model": "gpt-3-175b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 2048,
        "global_batch": {"sequences": 2048}, "precision": "fp8", "fp8_recipe": "delayed",
        "hardware": {"accelerator": "h100-sxm-80gb", "count": 512, "network": "ib-ndr400"}}
LAYOUT = {"tp": 4, "pp": 8, "vpp": 6, "micro_batch": 2, "recompute": "none", "framework": "megatron-core",
          "distributed_optimizer": True, "tp_comm_overlap": True}


def _arrays(job: dict = GPT3, **strategy) -> dict[str, float]:
    sc = resolve_job({**job, "strategy": {**LAYOUT, **strategy}}, load_catalog())
    return {k: float(np.asarray(v).reshape(-1)[0])
            for k, v in step_time_arrays(sc.model, sc.training, sc.system, sc.strategy).items()}


def _estimate(**strategy) -> float:
    """The step as `trainsizer estimate` times it: the strategy checked first (validate.check_strategy)."""
    sc = resolve_job({**GPT3, "strategy": {**LAYOUT, **strategy}}, load_catalog())
    return estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False).step_s


def _head_wgrad_s(job: dict = GPT3) -> float:
    sc = resolve_job({**job, "strategy": LAYOUT}, load_catalog())
    x = step_time._step(sc.model, sc.training, sc.system, sc.strategy, None, None, None)
    return float(np.asarray(compute.lm_head_wgrad_time(step_time._shapes(sc.model), x.tok, x.t, x.r)).reshape(-1)[0])


def test_off_by_default_and_a_limit_alone_changes_nothing():
    base = _arrays()
    assert _arrays(defer_embedding_wgrad=False) == base
    assert _arrays(wgrad_deferral_limit=10) == base


def test_the_paced_last_stage_runs_the_deferred_micro_batches_without_the_head_wgrad():
    """Every micro-batch deferred (limit 0, or any limit of at least m): the step loses at most m head wgrads, all
    in the layers' compute; the drain (64 x ~1.7 ms) hides in the last rank's wait for the earlier ranks' last chunk
    backwards ((p - 1) x 2 layers), so the bubble term barely moves."""
    base, all_of = _arrays(), _arrays(defer_embedding_wgrad=True)
    assert _arrays(defer_embedding_wgrad=True, wgrad_deferral_limit=64) == all_of
    assert _arrays(defer_embedding_wgrad=True, wgrad_deferral_limit=1000) == all_of
    w = _head_wgrad_s()
    saved = base["step_s"] - all_of["step_s"]
    assert 0.0 < saved <= 64 * w + 1e-9
    assert base["compute"] - all_of["compute"] == pytest.approx(64 * w, rel=1e-6)
    assert all_of["pp_bubble"] - base["pp_bubble"] < 0.25 * (base["compute"] - all_of["compute"])


def test_a_limit_defers_that_many_micro_batches():
    base = _arrays()
    some = _arrays(defer_embedding_wgrad=True, wgrad_deferral_limit=16)
    assert base["compute"] - some["compute"] == pytest.approx(16 * _head_wgrad_s(), rel=1e-6)


def test_a_drain_longer_than_the_last_ranks_wait_is_exposed():
    """Llama 3.1 8B at pp 8 x vpp 4: the last rank waits 7 one-layer chunk backwards while 64 head wgrads over a
    128,256-token vocabulary (TP 2) take far longer, so the rest is charged to the bubble; the step grows by the
    drain less the wait and less the pace saving."""
    job = {**GPT3, "model": "llama-3.1-8b", "precision": "bf16", "seq_len": 4096, "global_batch": {"sequences": 64},
           "hardware": {"accelerator": "h100-sxm-80gb", "count": 16, "network": "ib-ndr400"}}
    kw = {"pp": 8, "vpp": 4, "tp": 2, "micro_batch": 1}
    base, on = _arrays(job, **kw), _arrays(job, defer_embedding_wgrad=True, **kw)
    drain = on["pp_bubble"] - base["pp_bubble"]
    assert drain > 0.0
    assert on["step_s"] - base["step_s"] == pytest.approx(drain - (base["compute"] - on["compute"]), rel=1e-6)


def test_a_frozen_head_has_no_weight_gradient_to_defer():
    lora = {**GPT3, "method": "lora", "data": {"samples": 1e5, "avg_tokens": 2048}, "lora": {"rank": 16}}
    assert _arrays(lora, defer_embedding_wgrad=True) == _arrays(lora)


@pytest.mark.parametrize(("strategy", "rule"), [
    ({"pp": 1, "vpp": 1, "tp": 8}, "defer_embedding_wgrad_pipelined"),
    ({"gradient_accumulation_fusion": False}, "defer_embedding_wgrad_pipelined"),
    ({"framework": "megatron"}, "defer_embedding_wgrad_framework"),
])
def test_refused_where_megatron_core_refuses_it_or_has_no_such_option(strategy, rule):
    with pytest.raises(StrategyError) as err:
        _estimate(defer_embedding_wgrad=True, **strategy)
    assert err.value.rule == rule
    assert "defer_embedding_wgrad" in str(err.value)


def test_megatron_core_runs_it():
    assert 0.0 < _estimate(defer_embedding_wgrad=True, wgrad_deferral_limit=65) < _estimate()


def test_a_negative_limit_is_bad_input():
    with pytest.raises(TrainsizerError, match="wgrad_deferral_limit"):
        _estimate(defer_embedding_wgrad=True, wgrad_deferral_limit=-1)


def test_words_in_both_languages():
    for field in ("defer_embedding_wgrad", "wgrad_deferral_limit"):
        assert t(f"field_strategy.{field}", "zh") != t(f"field_strategy.{field}", "en")


def test_the_runs_whose_configs_defer_state_it():
    """MLPerf v4.1's 256 / 512-H100 GPT-3 configs (DEFER_EMBEDDING_WGRAD_COMPUTE True, WGRAD_DEFERRAL_LIMIT 65) and
    v4.0's micro-batch-1 runs (custom.yaml's default: pp > 1, MINIBS <= 256, micro-batch 1; no limit: all); not
    v3.1's code (NeMo 23.09 predates the option) nor the micro-batch-2 configs that set neither."""
    on = {r["id"]: h36.job(r)["strategy"].get("wgrad_deferral_limit") for r in h36.scored_rows()
          if h36.job(r)["strategy"].get("defer_embedding_wgrad")}
    assert on == {"mlperf4.1_nvidia_h100_gpt3_175b_fp8_256gpu": 65, "mlperf4.1_nvidia_h100_gpt3_175b_fp8_512gpu": 65,
                  "mlperf4.0_nvidia_h100_gpt3_175b_fp8_10752gpu": 0, "mlperf4.0_nvidia_h100_gpt3_175b_fp8_11616gpu": 0}


def test_the_dgxc_llama_recipes_defer_and_gpt3_does_not():
    """dgxc v25.04's Llama 3.1 scripts run NeMo's performance-mode recipes (70B limit 22, 405B limit 50, pipelined
    rows only); its GPT-3 175B runs NeMo 1's hydra config, which sets none."""
    import perf_modern as pm

    seen = {}
    for r in pm.modern_rows():
        if r["source"].startswith("NVIDIA/dgxc"):
            s = pm.configure(r)[3]
            seen.setdefault(r["model"], set()).add((s.pp > 1, getattr(s, "wgrad_deferral_limit", None)))
    assert seen["Llama 3.1 70B"] == {(True, 22)}
    assert seen["Llama 3.1 405B"] == {(True, 50)}
    assert seen["GPT-3 175B"] == {(True, None)}
    assert seen["Llama 3.1 8B"] == {(False, None)}
