"""FSDP's gradient sync between a step's micro-batches, as the estimate assumes it: the HF Trainer's accumulation runs
FSDP1's no_sync unless accelerate's sync_each_batch is set, so hf (and auto, which resolves a data-parallel fine-tune
to hf) hold each unit's unsharded gradients when strategy.fsdp_no_sync is unstated; the estimate says what it assumed
and why, in JSON and table (en / zh), and a stated value is kept (estimate/fsdp1_no_sync.py assumed;
docs/known-gaps.md 250 (a))."""

from __future__ import annotations

import io

from rich.console import Console

from trainsizer.catalog import load_catalog
from trainsizer.evaluate import evaluate
from trainsizer.render.estimate_view import print_estimate
from trainsizer.scenario import resolve_job

JOB = {"name": "sft", "model": "llama-3.1-8b", "method": "full", "seq_len": 2048, "global_batch": {"sequences": 64},
       "data": {"tokens": 1.0e8}, "hardware": {"accelerator": "h100-sxm-80gb", "count": 8, "per_node": 8}}


def _result(strategy: dict, job: dict = JOB) -> dict:
    cat = load_catalog()
    layout = {"dp": 8, "fsdp": "full", "micro_batch": 2, "recompute": "full"}
    return evaluate(resolve_job({**job, "strategy": {**layout, **strategy}}, cat), cat)


def _table(res: dict, lang: str) -> str:
    buf = io.StringIO()
    print_estimate(res, lang, Console(file=buf, width=600))
    return buf.getvalue()


def test_an_unstated_fsdp_no_sync_on_hf_holds_fsdp1s_gradients_and_says_so():
    synced = _result({"framework": "hf", "fsdp_no_sync": False})
    for strategy, reason in (({"framework": "hf"}, "fsdp_no_sync_default_hf"), ({}, "fsdp_no_sync_default_auto")):
        res = _result(strategy)
        assert res["framework"]["fsdp_no_sync"] == {"requested": None, "assumed": True, "fsdp_version": 1,
                                                    "reason": reason}
        assert res["memory"]["per_gpu_gib"] > synced["memory"]["per_gpu_gib"] + 10.0  # 7/8 of 15 GiB of bf16 grads
        en, zh = _table(res, "en"), _table(res, "zh")
        assert "FSDP gradient sync between micro-batches assumed: skipped on all but a step's last micro-batch " \
               "(FSDP1 no_sync)" in en and "write fsdp_no_sync: false" in en
        assert "假定的 FSDP 微批次间梯度同步：除每步最后一个微批次外均跳过（FSDP1 no_sync）" in zh
        assert "请写 fsdp_no_sync: false" in zh


def test_a_stated_value_is_kept_and_said_without_a_default():
    res = _result({"framework": "hf", "fsdp_no_sync": False})
    assert res["framework"]["fsdp_no_sync"] == {"requested": False, "assumed": False, "fsdp_version": 1,
                                                "reason": None}
    en = _table(res, "en")
    assert "micro-batches assumed: after every micro-batch" in en and "not stated" not in en.split("FSDP gradient")[1]


def test_other_stacks_and_fsdp2_say_their_own_default():
    titan = _result({"framework": "torchtitan"})["framework"]["fsdp_no_sync"]
    assert (titan["assumed"], titan["fsdp_version"], titan["reason"]) == (False, 2, "fsdp_no_sync_default_synced")
    hf2 = _result({"framework": "hf", "fsdp_version": 2})
    assert (hf2["framework"]["fsdp_no_sync"]["assumed"], hf2["framework"]["fsdp_no_sync"]["reason"]) == (
        False, "fsdp_no_sync_default_fsdp2_accelerate")
    assert "accelerate >= 1.11.0" in _table(hf2, "en") and "v1.11.0 之前的 accelerate" in _table(hf2, "zh")


def test_nothing_is_said_with_one_micro_batch_a_step_or_without_fsdp():
    one = _result({"framework": "hf"}, {**JOB, "global_batch": {"sequences": 16}})
    assert "fsdp_no_sync" not in one["framework"]
    ddp = _result({"framework": "hf", "fsdp": "none", "zero": 0})
    assert "fsdp_no_sync" not in ddp["framework"]
    assert "FSDP gradient sync" not in _table(one, "en")
