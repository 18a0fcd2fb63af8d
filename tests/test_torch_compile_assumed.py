"""strategy.torch_compile left unstated takes the stack's default (PerfStyle.compiles_by_default: the HF Trainer,
torchtune, torchtitan and the DeepSpeed-era stacks (GPT-NeoX, Megatron-DeepSpeed) run eager unless asked; Megatron /
Megatron-Core their own fused kernels), resolved in one place
(framework.torch_compile_of) for the scalar and batch estimates alike, per candidate where "auto" picks the stack; the
estimate says which it assumed and why, in JSON and table (en / zh). A job that states it keeps it."""

from __future__ import annotations

import io

import pytest
import yaml
from rich.console import Console

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError
from trainsizer.estimate.step_time import PERF_STYLES
from trainsizer.evaluate import evaluate
from trainsizer.render.estimate_view import print_estimate
from trainsizer.render.i18n import t
from trainsizer.scenario import resolve_job
from trainsizer.spec import load_job

JOB = {"name": "lora", "model": "llama-3.1-8b", "method": "lora", "lora": {"rank": 16}, "seq_len": 2048,
       "global_batch": {"sequences": 4}, "data": {"tokens": 1.0e8},
       "hardware": {"accelerator": "h200-sxm-141gb", "count": 1, "per_node": 1}}


def _result(strategy: dict, job: dict = JOB) -> dict:
    cat = load_catalog()
    return evaluate(resolve_job({**job, "strategy": {"micro_batch": 4, **strategy}}, cat), cat)


def _table(res: dict, lang: str) -> str:
    buf = io.StringIO()
    print_estimate(res, lang, Console(file=buf, width=400))
    return buf.getvalue()


def test_the_stacks_that_run_eager_unless_asked():
    eager = sorted(name for name, style in PERF_STYLES.items() if not style.compiles_by_default)
    assert eager == ["deepspeed", "hf", "torchtitan", "torchtune"]
    for name in eager:  # each says why in both languages
        for lang in ("en", "zh"):
            assert "torch_compile: true" in t(f"torch_compile_default_{name}", lang)


def test_an_unstated_torch_compile_on_the_hf_trainer_is_timed_eager_and_said():
    stated_eager = _result({"framework": "hf", "torch_compile": False})
    for strategy in ({"framework": "hf"}, {}):  # named, or what "auto" picks for one GPU's LoRA
        res = _result(strategy)
        assert res["framework"]["torch_compile"] == {"requested": None, "assumed": False,
                                                     "reason": "torch_compile_default_hf"}
        assert res["time"]["tokens_per_s"] == stated_eager["time"]["tokens_per_s"]
        assert res["memory"]["per_gpu_gib"] == stated_eager["memory"]["per_gpu_gib"]
        for lang, label in (("en", "Element-wise kernels assumed: eager, the stack's default (strategy.torch_compile"),
                            ("zh", "假定的逐元素算子：不编译，按该框架的默认值（未写 strategy.torch_compile")):
            assert label in _table(res, lang)
    compiled = _result({"framework": "hf", "torch_compile": True})
    assert compiled["time"]["tokens_per_s"] > stated_eager["time"]["tokens_per_s"]  # the default moves the answer


def test_a_stated_torch_compile_is_kept_and_nothing_is_said():
    for value in (True, False):
        res = _result({"framework": "hf", "torch_compile": value})
        assert "torch_compile" not in res["framework"]
        assert "Element-wise kernels assumed" not in _table(res, "en")


def test_a_stack_that_fuses_by_default_says_fused():
    job = {**JOB, "hardware": {"accelerator": "h100-sxm-80gb", "count": 8, "per_node": 8}}
    res = _result({"tp": 2, "micro_batch": 1}, job)  # auto: TP is Megatron-Core's layout
    assert res["framework"]["assumed"] == "megatron-core"
    assert res["framework"]["torch_compile"] == {"requested": None, "assumed": True,
                                                 "reason": "torch_compile_default_fused"}
    assert "融合，按该框架的默认值" in _table(res, "zh")


def test_bad_input_gets_the_clear_error(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump({**JOB, "strategy": {"torch_compile": "maybe"}}))
    with pytest.raises(SpecError, match=r"strategy\.torch_compile: must be true or false \(got 'maybe'\)"):
        load_job(path)
