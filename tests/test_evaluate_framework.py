"""The estimate says which training stack it assumed, and why, in JSON and in the table (en / zh)."""

from __future__ import annotations

import io

from rich.console import Console

from trainsizer.catalog import load_catalog
from trainsizer.evaluate import evaluate
from trainsizer.render.estimate_view import print_estimate
from trainsizer.scenario import resolve_job

JOB = {"model": "llama-3.1-8b", "method": "full", "data": {"tokens": 1e8}, "seq_len": 4096,
       "global_batch": {"sequences": 64}, "hardware": {"accelerator": "h100-sxm-80gb", "count": 8}}


def _result(strategy: dict) -> dict:
    cat = load_catalog()
    return evaluate(resolve_job({**JOB, "strategy": strategy}, cat), cat)


def test_auto_names_the_stack_and_the_reason():
    r = _result({"tp": 2, "micro_batch": 1})["framework"]
    assert (r["requested"], r["assumed"], r["reason"]) == ("auto", "megatron-core", "auto_reason_model_parallel")
    assert "Transformer Engine" in r["assumes"]["stack"]
    r = _result({"fsdp": "full", "micro_batch": 1})["framework"]
    assert (r["assumed"], r["memory_profile"]) == ("hf", "hf")
    r = _result({"tp": 2, "fsdp": "full", "micro_batch": 1})["framework"]
    assert r["assumed"] == "torchtitan"


def test_a_named_framework_is_kept_and_printed():
    res = _result({"tp": 2, "micro_batch": 1, "framework": "torchtitan"})
    assert res["framework"]["assumed"] == "torchtitan" and res["framework"]["reason"] is None
    for lang, label in (("en", "Training stack assumed: "), ("zh", "假定的训练框架：")):
        buf = io.StringIO()
        print_estimate(res, lang, Console(file=buf, width=200))
        assert f"{label}torchtitan" in buf.getvalue()


def test_moe_jobs_say_which_token_dispatcher_was_assumed():
    cat = load_catalog()
    job = {"model": "qwen3-30b-a3b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
           "global_batch": {"sequences": 512}}
    b200 = {**job, "hardware": {"accelerator": "b200", "count": 8, "network": "ib-ndr400"},
            "strategy": {"ep": 8, "micro_batch": 1, "recompute": "none", "distributed_optimizer": True}}
    res = evaluate(resolve_job(b200, cat), cat)
    assert res["framework"]["moe_dispatcher"] == {"requested": "auto", "assumed": "alltoall"}
    gb200 = {**b200, "hardware": {"accelerator": "gb200", "count": 8, "network": "ib-ndr400"}}
    assert evaluate(resolve_job(gb200, cat), cat)["framework"]["moe_dispatcher"]["assumed"] == "flex"
    for lang, label in (("en", "MoE token dispatcher assumed: alltoall"), ("zh", "假定的 MoE 令牌分发器：alltoall")):
        buf = io.StringIO()
        print_estimate(res, lang, Console(file=buf, width=200))
        assert label in buf.getvalue()
    assert "moe_dispatcher" not in _result({"tp": 2, "micro_batch": 1})["framework"]  # dense: not said
