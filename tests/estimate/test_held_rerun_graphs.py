"""strategy.moe_router_output_held: each MoE layer's dispatcher keeps the router's output past the step (the Nous
Research torchtitan fork's PrimusTurboDeepepManager.setup_metadata at 366776ace). Under torchtitan's full AC, a
non-reentrant checkpoint whose re-run graph the backward never runs, that output keeps each layer's re-run graph up to
the router, with the attention's and the router's saves, from the layer's backward to its next forward: at the end of
the backward every MoE layer's but the running one's (memory._held_rerun_graphs; docs/known-gaps.md 282 (a))."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.estimate.memory import estimate_memory, memory_per_gpu_bytes
from trainsizer.scenario import resolve_job

CAT = load_catalog([])


def _job(model: str = "qwen3-30b-a3b", micro_batch: int = 8, recompute: str = "full", framework: str = "torchtitan",
         ep: int = 8, **strategy) -> dict:
    return {"model": model, "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
            "global_batch": {"sequences": micro_batch * 8}, "precision": "bf16",
            "hardware": {"accelerator": "b200", "count": 8},
            "strategy": {"dp": 8, "zero": 3, "fsdp": "full", "ep": ep, "micro_batch": micro_batch,
                         "recompute": recompute, "framework": framework, **strategy}}


def _est(**kw):
    sc = resolve_job(_job(**kw), CAT)
    return estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False)


@pytest.mark.parametrize("bad", ["sometimes", 2, [True]])
def test_a_value_that_is_not_a_boolean_is_refused_naming_the_field(bad):
    with pytest.raises(Exception, match="moe_router_output_held"):
        resolve_job(_job(moe_router_output_held=bad), CAT)


def test_unstated_or_false_is_the_estimate_as_before():
    before = _est()
    assert _est(moe_router_output_held=False).per_gpu_bytes == before.per_gpu_bytes
    assert _est(moe_router_output_held=None).items_bytes == before.items_bytes
    assert "held_rerun_graphs" not in before.items_bytes


def test_the_end_of_the_backward_holds_every_layer_but_one_up_to_its_router():
    """Qwen3-30B-A3B (hidden 2,048, 32 query heads and 4 K / V heads of 128, 128 experts, top 8, 48 MoE layers), a token
    of one layer up to the router: the eager norms' 12,292 B each, the projections' input 4,096, q 8,192, k and v
    1,024 each and expanded to the query heads (repeat_kv, the torchtitan style's: 14,336 more), the attention's output
    8,192 and fp32 log-sum-exp 128, the router's input 4,096, fp32 probabilities 512 and top-k indices 64: 66,248 B,
    less the block input the checkpoint keeps anyway (4,096); 47 layers of 32,768 tokens."""
    items = _est(moe_router_output_held=True).items_bytes
    upstream = 2 * 12292 + 4096 + 8192 + 2 * 1024 + 14336 + 8192 + 128 + 4096 + 512 + 64
    assert items["held_rerun_graphs"] == pytest.approx(47 * (upstream - 4096) * 8 * 4096)
    assert items.get("logits", 0.0) == 0.0  # the loss phase, before any re-run, no longer the peak


def test_k_and_v_at_their_own_width_where_the_model_passes_enable_gqa():
    expanded = _est(moe_router_output_held=True).items_bytes["held_rerun_graphs"]
    gqa = _est(moe_router_output_held=True, repeat_kv=False).items_bytes["held_rerun_graphs"]
    assert expanded - gqa == pytest.approx(47 * 14336 * 8 * 4096)


@pytest.mark.parametrize("kw", [dict(recompute="none"), dict(recompute="selective"),
                                dict(framework="megatron-core"), dict(model="qwen3-8b", ep=1)])
def test_nothing_without_a_non_reentrant_rerun_or_a_router(kw):
    """No recompute: the forward's own graph frees each node's saves as the backward runs it. Megatron's re-run is a
    reentrant checkpoint, whose re-run graph is the one its backward runs. A dense model has no router."""
    held = _est(moe_router_output_held=True, **kw)
    assert held.items_bytes.get("held_rerun_graphs", 0.0) == 0.0
    assert held.per_gpu_bytes == _est(**kw).per_gpu_bytes


@settings(max_examples=10, deadline=None)
@given(mb=st.integers(1, 10))
def test_a_held_router_output_never_needs_less_and_grows_with_the_batch(mb):
    assert _est(micro_batch=mb, moe_router_output_held=True).per_gpu_bytes >= _est(micro_batch=mb).per_gpu_bytes
    one, more = (_est(micro_batch=m, moe_router_output_held=True).items_bytes["held_rerun_graphs"] for m in (mb, mb + 1))
    assert more == pytest.approx(one * (mb + 1) / mb)


def test_the_batch_path_agrees_with_the_scalar_one():
    sc = resolve_job(_job(moe_router_output_held=True), CAT)
    worst, _ = memory_per_gpu_bytes(sc.model, sc.training, sc.system, sc.strategy)
    one = estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False).per_gpu_bytes
    assert float(np.asarray(worst).reshape(-1)[0]) == pytest.approx(one)
