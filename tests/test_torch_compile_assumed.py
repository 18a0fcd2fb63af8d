"""An hf job that leaves strategy.torch_compile unstated is timed compiled (the field's default), while the HF Trainer
runs eager unless asked (PerfStyle.compiles_by_default false): the estimate says which it timed, in JSON and table."""

from __future__ import annotations

import io

from rich.console import Console

from trainsizer.catalog import load_catalog
from trainsizer.estimate.step_time import perf_style
from trainsizer.evaluate import evaluate
from trainsizer.render.estimate_view import print_estimate
from trainsizer.scenario import resolve_job

JOB = {"name": "lora", "model": "llama-3.1-8b", "method": "lora", "lora": {"rank": 16}, "seq_len": 2048,
       "global_batch": {"sequences": 4}, "data": {"tokens": 1.0e8},
       "hardware": {"accelerator": "h200-sxm-141gb", "count": 1, "per_node": 1}}


def _result(strategy: dict) -> dict:
    cat = load_catalog()
    return evaluate(resolve_job({**JOB, "strategy": {"micro_batch": 4, **strategy}}, cat), cat)


def test_an_unstated_torch_compile_on_the_hf_trainer_is_said_in_json_and_table():
    for strategy in ({"framework": "hf"}, {}):  # named, or what "auto" picks for one GPU's LoRA
        res = _result(strategy)
        assert res["framework"]["torch_compile"] == {"requested": None, "assumed": True}
        for lang, label in (("en", "Element-wise kernels assumed: compiled (strategy.torch_compile not stated"),
                            ("zh", "假定的逐元素算子：已编译（未写 strategy.torch_compile")):
            buf = io.StringIO()
            print_estimate(res, lang, Console(file=buf, width=400))
            assert label in buf.getvalue()


def test_nothing_is_said_where_the_job_states_it_or_the_stack_compiles_by_default():
    for strategy in ({"framework": "hf", "torch_compile": False}, {"framework": "hf", "torch_compile": True},
                     {"framework": "torchtitan"}):
        assert "torch_compile" not in _result(strategy)["framework"]
    assert not perf_style("hf").compiles_by_default and perf_style("torchtitan").compiles_by_default
