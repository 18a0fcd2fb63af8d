"""strategy.zero3_expert_fetch: how DeepSpeed ZeRO-3 gathers transformers' routed experts
(step_time._deepspeed_expert_gathers). per_expert = each expert linear its own module (4.x's ModuleList experts):
one all-gather call each, prefetched one module ahead behind the experts' own compute; block = the MoE block a ZeRO-3
leaf (set_z3_leaf_modules) or v5's packed experts: one gather a layer, issued at the block's hook, exposed. FSDP's unit
is the decoder layer (experts inside): untouched. The estimate says which it assumed."""

from __future__ import annotations

import numpy as np
import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError
from trainsizer.estimate import step_time
from trainsizer.evaluate import evaluate
from trainsizer.scenario import resolve_job

CAT = load_catalog([])


def _job(model: str = "mixtral-8x7b", seq_len: int = 512, **strategy) -> dict:
    return {"model": model, "method": "full", "data": {"tokens": 1e8}, "seq_len": seq_len,
            "global_batch": {"sequences": 32}, "precision": "bf16",
            "hardware": {"accelerator": "h100-sxm-80gb", "count": 32, "network": "ib-ndr400"},
            "strategy": {"micro_batch": 1, "recompute": "full", "framework": "hf", **strategy}}


def _evaluate(**kw) -> dict:
    return evaluate(resolve_job(_job(**kw), CAT), CAT)


def _dp(**kw) -> float:
    return float(_evaluate(**kw)["time"]["breakdown_s"]["dp_comm"])


def test_fsdp_gathers_the_experts_inside_its_layer_unit():
    """The option is DeepSpeed's: under fsdp it is refused, and the FSDP estimate does not move with the experts
    implementation's fetch default (one unit a layer either way)."""
    with pytest.raises(TrainsizerError, match="zero3_expert_fetch"):
        _dp(fsdp="full", zero3_expert_fetch="per_expert")
    assert "zero3_expert_fetch" not in _evaluate(fsdp="full", experts_implementation="eager")["framework"]


def test_per_expert_calls_cost_their_ring_latency_over_the_layer_unit():
    """Mixtral at 512 tokens a GPU: the experts' compute (128 tokens an expert) hides little, so DeepSpeed's 24 expert
    calls a layer add at least their latency over FSDP's one-unit schedule, and a stated leaf (block: one call a
    layer) sits between."""
    fsdp = _dp(fsdp="full", experts_implementation="eager", checkpoint_impl="reentrant")
    per_expert = _dp(zero=3, experts_implementation="eager", zero3_expert_fetch="per_expert")
    block = _dp(zero=3, experts_implementation="eager", zero3_expert_fetch="block")
    assert per_expert > block > fsdp


def test_the_block_gather_is_exposed_where_compute_would_hide_a_per_expert_chain():
    """At 16K tokens a GPU an expert's GEMMs outrun its linears' gathers: the per-expert chain hides behind them, the
    leaf's one gather at the block's hook does not."""
    per_expert = _dp(seq_len=16384, zero=3, zero3_expert_fetch="per_expert")
    block = _dp(seq_len=16384, zero=3, zero3_expert_fetch="block")
    assert block > per_expert


def test_a_dense_model_is_unchanged():
    assert _dp(model="llama-3.1-8b", zero=3, zero3_expert_fetch="per_expert") == _dp(model="llama-3.1-8b", zero=3)


def test_unstated_follows_the_experts_implementation_and_is_said():
    """A family without a default leaf (gpt-oss): per_expert under the 4.x eager loop, block under v5's packed
    experts; said with why."""
    eager = _evaluate(model="gpt-oss-20b", zero=3, experts_implementation="eager")["framework"]["zero3_expert_fetch"]
    assert eager == {"requested": None, "assumed": "per_expert", "why": "eager_experts"}
    packed = _evaluate(model="gpt-oss-20b", zero=3)["framework"]["zero3_expert_fetch"]
    assert packed == {"requested": None, "assumed": "block", "why": "packed_experts"}
    stated = _evaluate(zero=3, experts_implementation="eager", zero3_expert_fetch="block")["framework"]
    assert stated["zero3_expert_fetch"] == {"requested": "block", "assumed": "block"}
    assert _dp(model="gpt-oss-20b", zero=3, experts_implementation="eager") == _dp(
        model="gpt-oss-20b", zero=3, experts_implementation="eager", zero3_expert_fetch="per_expert")
    assert "zero3_expert_fetch" not in _evaluate(model="llama-3.1-8b", zero=3)["framework"]
    assert "zero3_expert_fetch" not in _evaluate(zero=2)["framework"]


def test_outside_transformers_stacks_it_is_refused_with_the_rule():
    with pytest.raises(TrainsizerError, match="zero3_expert_fetch"):
        _dp(framework="deepspeed", zero=3, zero3_expert_fetch="block")


def test_an_unknown_value_is_refused_with_the_allowed_ones():
    with pytest.raises(TrainsizerError, match="per_expert"):
        _dp(zero=3, zero3_expert_fetch="per_module")


def test_deepspeeds_default_leaf_classes_fetch_mixtral_and_qwen_moe_as_a_block():
    """DeepSpeed >= 0.18.0 makes MixtralSparseMoeBlock, Qwen2MoeSparseMoeBlock and Qwen3MoeSparseMoeBlock ZeRO-3 leaves
    on every engine (leaf_module_config.py DEFAULT_LEAF_MODULE_CLASSES, PR 7604): unstated, these families fetch their
    experts as one block even under the 4.x eager loop, said in the JSON and the table (en / zh); a run on an older
    DeepSpeed states per_expert."""
    import io

    from rich.console import Console

    from trainsizer.render.estimate_view import print_estimate

    for model in ("mixtral-8x7b", "qwen3-30b-a3b"):
        res = _evaluate(model=model, zero=3, experts_implementation="eager")
        assert res["framework"]["zero3_expert_fetch"] == {"requested": None, "assumed": "block", "why": "leaf_default"}
        assert res["time"]["breakdown_s"]["dp_comm"] == _dp(model=model, zero=3, experts_implementation="eager",
                                                            zero3_expert_fetch="block")
        assert res["time"]["breakdown_s"]["dp_comm"] != _dp(model=model, zero=3, experts_implementation="eager",
                                                            zero3_expert_fetch="per_expert")
        for lang, text in (("en", "DeepSpeed >= 0.18.0"), ("zh", "默认把该模型的 MoE 模块设为 ZeRO-3 叶子模块")):
            buf = io.StringIO()
            print_estimate(res, lang, Console(file=buf, width=400))
            assert text in buf.getvalue()


@pytest.mark.parametrize("model,impl,stated", [("mixtral-8x7b", "eager", None), ("gpt-oss-20b", "eager", None),
                                               ("gpt-oss-20b", None, None), ("mixtral-8x7b", "eager", "per_expert")])
def test_the_step_times_the_fetch_the_estimate_says(model, impl, stated):
    """The step's resolved fetch (step_time._Step.expert_fetch, read by the hook count, the hook excess and the expert
    gathers; docs/known-gaps.md 310 (b)) is the one the JSON says it assumed."""
    kw = {k: v for k, v in {"experts_implementation": impl, "zero3_expert_fetch": stated}.items() if v is not None}
    sc = resolve_job(_job(model=model, zero=3, **kw), CAT)
    x = step_time._step(sc.model, sc.training, sc.system, sc.strategy, None, None, None)
    said = _evaluate(model=model, zero=3, **kw)["framework"]["zero3_expert_fetch"]["assumed"]
    assert np.all(x.expert_fetch == said)
