"""strategy.expert_weight_copies: transformers 4.55 / 4.56's GptOssExperts training loop indexes each hit expert's fused
weights with a one-element tensor, a copy the matmul saves for its backward, and in full training IndexBackward's
zero gradient of the whole fused parameter (memory._expert_weight_copies; known-gaps 175)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError
from trainsizer.estimate.memory import estimate_memory
from trainsizer.models.shipped import load_preset
from trainsizer.scenario import resolve_job

CAT = load_catalog([])
OSS = "gpt-oss-20b"


def _job(method: str = "full", seq_len: int = 4096, recompute: str = "full", **strategy) -> dict:
    job = {"model": OSS, "method": method, "data": {"tokens": 1e7}, "seq_len": seq_len,
           "global_batch": {"sequences": 8}, "precision": "bf16",
           "hardware": {"accelerator": "h100-sxm-80gb", "count": 4},
           "strategy": {"micro_batch": 1, "recompute": recompute, "fsdp": "full", "framework": "hf", **strategy}}
    if method == "lora":
        job["lora"] = {"rank": 8}
    return job


def _items(**kw) -> dict:
    sc = resolve_job(_job(**kw), CAT)
    return estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False).items_bytes


def _layer_counts() -> tuple[float, float]:
    """(one layer's expert parameters, its gate_up_proj parameters) of gpt-oss-20b."""
    m = load_preset(OSS)
    return m.experts * m.mlp_params(m.expert_ffn), m.experts * m.hidden * 2 * m.expert_ffn


def test_unset_or_false_counts_no_copies_and_grouped_mm_nothing():
    grouped = _items(experts_implementation="grouped_mm")
    assert "expert_loop_buffers" not in grouped and "expert_loop_buffers" not in _items()
    eager = _items(experts_implementation="eager")
    assert _items(experts_implementation="eager", expert_weight_copies=False) == eager


def test_the_eager_loop_over_fused_experts_adds_a_whole_gate_up_gradient_without_the_copies():
    """A 0-dim index (transformers >= 4.57, v5) takes views, but each hit expert's SelectBackward0 still returns a
    gradient of the whole fused parameter: gate_up_proj once more in full training, nothing for a frozen base."""
    _, gate_up = _layer_counts()
    assert float(_items(experts_implementation="eager")["expert_loop_buffers"]) == pytest.approx(2.0 * gate_up,
                                                                                                 rel=1e-6)
    assert float(_items(method="lora", experts_implementation="eager")["expert_loop_buffers"]) == 0.0


def test_families_with_per_expert_parameters_get_nothing_from_the_eager_loop():
    sc = resolve_job(dict(_job(experts_implementation="eager"), model="mixtral-8x7b"), CAT)
    items = estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False).items_bytes
    assert "expert_loop_buffers" not in items


def test_full_recompute_holds_one_layer_of_copies_and_one_gate_up_gradient():
    """4,096 tokens at top-4 of 32 hit every expert: the re-run layer's expert weights again, bf16, and the
    gate_up_proj-sized zero gradient of a full fine-tune."""
    experts, gate_up = _layer_counts()
    got = _items(experts_implementation="eager", expert_weight_copies=True)["expert_loop_buffers"]
    assert float(got) == pytest.approx(2.0 * (experts + gate_up), rel=1e-6)


def test_a_frozen_expert_gets_no_gradient_but_its_copy_is_still_saved():
    experts, _ = _layer_counts()
    got = _items(method="lora", experts_implementation="eager", expert_weight_copies=True)["expert_loop_buffers"]
    assert float(got) == pytest.approx(2.0 * experts, rel=1e-6)


def test_without_recompute_every_moe_layer_keeps_its_copies():
    m = load_preset(OSS)
    experts, gate_up = _layer_counts()
    got = _items(recompute="none", experts_implementation="eager", expert_weight_copies=True)["expert_loop_buffers"]
    assert float(got) == pytest.approx(2.0 * (m.moe_layer_count * experts + gate_up), rel=1e-6)


@settings(max_examples=15, deadline=None)
@given(st.integers(min_value=1, max_value=12))
def test_copies_grow_with_the_tokens_that_reach_more_experts_and_stop_at_every_expert(log2_len):
    experts, gate_up = _layer_counts()
    short = float(_items(seq_len=2 ** log2_len, experts_implementation="eager",
                         expert_weight_copies=True)["expert_loop_buffers"])
    longer = float(_items(seq_len=2 ** (log2_len + 1), experts_implementation="eager",
                          expert_weight_copies=True)["expert_loop_buffers"])
    assert short <= longer <= 2.0 * (experts + gate_up) * (1 + 1e-9)


def test_copies_need_the_eager_loop():
    with pytest.raises(TrainsizerError, match="expert_weight_copies"):
        sc = resolve_job(_job(experts_implementation="grouped_mm", expert_weight_copies=True), CAT)
        estimate_memory(sc.model, sc.training, sc.system, sc.strategy)


def test_the_report_names_the_item_and_its_group():
    from trainsizer.evaluate import evaluate

    out = evaluate(resolve_job(_job(experts_implementation="eager", expert_weight_copies=True), CAT), CAT)
    item = out["memory"]["items"]["expert_loop_buffers"]
    assert item["group"] == "activations" and "expert_weight_copies" in item["what"] and item["gib"] > 2.0
