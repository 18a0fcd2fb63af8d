"""moe_dispatcher hybridep: DeepEP's transport, the tokens grouped by expert inside HybridEP's own dispatch / combine
kernels, so each pass takes the longer of the transport and the permute (step_time._permute_in_transport)."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError, StrategyError
from trainsizer.estimate.step_time import estimate_time
from trainsizer.render.i18n import t
from trainsizer.scenario import resolve_job

# NeMo AutoModel's Qwen3-30B-A3B benchmark layout (perf_heldout40)
JOB = {"model": "qwen3-30b-a3b", "data": {"tokens": 1e9}, "seq_len": 4096, "global_batch": {"sequences": 128},
       "hardware": {"accelerator": "h100-sxm-80gb", "count": 8, "network": "ib-ndr400"}}
STRATEGY = {"framework": "torchtitan", "fsdp": "full", "ep": 8, "micro_batch": 4, "recompute": "full",
            "torch_compile": False, "norm_kernel": "fused", "activation_kernel": "fused"}


def _time(job: dict = JOB, **strategy):
    sc = resolve_job({**job, "strategy": {**STRATEGY, **strategy}}, load_catalog())
    return estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False)


def test_hybridep_hides_the_permute_behind_its_transport():
    """Same transport and compute as DeepEP (flex); the framework's permute passes overlap the transport, so the
    saving is at most the transport (here the permute, 8 B a routed copy and hidden element forward, is longer: all
    of the transport is hidden)."""
    flex, hyb = _time(moe_dispatcher="flex"), _time(moe_dispatcher="hybridep")
    assert hyb.breakdown_s["compute"] == pytest.approx(flex.breakdown_s["compute"], rel=1e-12)
    assert 0.0 <= hyb.breakdown_s["ep_comm"] < flex.breakdown_s["ep_comm"]
    assert flex.step_s - hyb.step_s == pytest.approx(flex.breakdown_s["ep_comm"] - hyb.breakdown_s["ep_comm"], rel=1e-9)


def test_across_nodes_the_saving_is_the_permute():
    """EP 16 over two nodes: the RDMA transport outlasts the permute, so what is hidden is the permute itself, and
    some transport stays exposed."""
    job = {**JOB, "global_batch": {"sequences": 256},
           "hardware": {**JOB["hardware"], "count": 16}}
    flex = _time(job, ep=16, micro_batch=2, moe_dispatcher="flex")
    hyb = _time(job, ep=16, micro_batch=2, moe_dispatcher="hybridep")
    assert 0.0 < hyb.breakdown_s["ep_comm"] < flex.breakdown_s["ep_comm"]


def test_a_dense_model_or_another_dispatcher_is_unchanged():
    dense = {**JOB, "model": "llama-3.1-8b"}
    s = {**STRATEGY, "ep": 1}
    a = resolve_job({**dense, "strategy": {**s, "moe_dispatcher": "hybridep"}}, load_catalog())
    b = resolve_job({**dense, "strategy": s}, load_catalog())
    assert estimate_time(a.model, a.training, a.system, a.strategy, memory_note=False).step_s == pytest.approx(
        estimate_time(b.model, b.training, b.system, b.strategy, memory_note=False).step_s, rel=1e-12)


def test_unknown_dispatcher_refused_by_name_and_words_in_both_languages():
    with pytest.raises(SpecError, match="moe_dispatcher"):
        resolve_job({**JOB, "strategy": {**STRATEGY, "moe_dispatcher": "hybrid"}}, load_catalog())
    assert t("moe_dispatcher_hybridep", "zh") != t("moe_dispatcher_hybridep", "en")


def test_hybridep_is_nvidia_only():
    """Primus's Megatron-LM backend runs a DeepEP port on AMD parts (flex), no HybridEP."""
    amd = {**JOB, "hardware": {"accelerator": "mi300x", "count": 8, "network": "ib-ndr400"}}
    strategy = {"framework": "megatron-core", "ep": 8, "micro_batch": 1, "recompute": "full"}
    sc = resolve_job({**amd, "strategy": {**strategy, "moe_dispatcher": "flex"}}, load_catalog())
    estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False)
    sc = resolve_job({**amd, "strategy": {**strategy, "moe_dispatcher": "hybridep"}}, load_catalog())
    with pytest.raises(StrategyError) as err:
        estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False)
    assert err.value.rule == "moe_dispatcher_vendor"
