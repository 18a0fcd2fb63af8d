"""strategy.returns_kv_cache: the model returns its key / value cache in training (transformers' use_cache left on
where recompute is applied outside transformers' own gradient_checkpointing flag: ATorch's checkpoint optimization,
torch's apply_activation_checkpointing). Each checkpointed layer's K (after RoPE) and V live to the end of the forward
and, where the loop holds the outputs (live_at_rerun logits), through the backward and the next forward: twice at the
loss, once after (memory._returned_kv_bytes, memory._kv_phases; docs/known-gaps.md 271 (a))."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.estimate.memory import estimate_memory, memory_per_gpu_bytes
from trainsizer.scenario import resolve_job

CAT = load_catalog([])


def _job(seq_len: int = 4096, micro_batch: int = 4, gpus: int = 8, recompute: str = "full", **strategy) -> dict:
    return {"model": "llama-2-7b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": seq_len,
            "global_batch": {"sequences": micro_batch * gpus}, "precision": "bf16",
            "hardware": {"accelerator": "a100-sxm-80gb", "count": gpus},
            "strategy": {"dp": gpus, "zero": 3, "fsdp": "full", "micro_batch": micro_batch, "recompute": recompute,
                         "framework": "fsdp", **strategy}}


def _est(**kw):
    sc = resolve_job(_job(**kw), CAT)
    return estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False)


def _cache_bytes(seq_len: int = 4096, micro_batch: int = 4) -> float:
    """Llama 2 7B: 32 layers of K and V, 4,096 wide each (32 heads of 128), bf16."""
    return 32 * 2 * micro_batch * seq_len * 4096 * 2.0


@pytest.mark.parametrize("bad", ["both", "yes please", 3])
def test_a_value_that_is_not_a_boolean_is_refused_naming_the_field(bad):
    with pytest.raises(Exception, match="returns_kv_cache"):
        resolve_job(_job(returns_kv_cache=bad), CAT)


@pytest.mark.parametrize("live", [None, "none", "logits", "loss"])
def test_unstated_or_false_is_the_estimate_as_before(live):
    extra = {} if live is None else {"live_at_rerun": live}
    before = _est(**extra)
    assert _est(returns_kv_cache=False, **extra).per_gpu_bytes == before.per_gpu_bytes
    assert _est(returns_kv_cache=None, **extra).items_bytes == before.items_bytes
    assert "returned_kv_cache" not in before.items_bytes


def test_the_cache_is_every_checkpointed_layers_k_and_v_once_where_the_loop_drops_the_outputs():
    items = _est(returns_kv_cache=True, live_at_rerun="none").items_bytes
    assert items["returned_kv_cache"] in (pytest.approx(_cache_bytes()), 0.0)  # the loss phase's, or a layer's
    loss_phase = _est(returns_kv_cache=True, live_at_rerun="none", seq_len=4096, micro_batch=8).items_bytes
    assert loss_phase["returned_kv_cache"] == pytest.approx(_cache_bytes(micro_batch=8))


def test_a_loop_holding_its_outputs_holds_two_steps_caches_at_the_loss():
    """ATorch's fsdp_llama2.py: `outputs = model(**batch)` is rebound only when the next forward returns, so that
    forward's loss runs beside the previous step's cache and its own."""
    items = _est(returns_kv_cache=True, live_at_rerun="logits").items_bytes
    assert items["logits"] > 0.0  # the loss phase wins
    assert items["returned_kv_cache"] == pytest.approx(2 * _cache_bytes())


def test_without_recompute_the_cache_is_what_the_attention_saves_anyway():
    held = _est(returns_kv_cache=True, live_at_rerun="logits", recompute="none")
    assert held.items_bytes.get("returned_kv_cache", 0.0) == 0.0
    assert held.per_gpu_bytes == _est(recompute="none", live_at_rerun="logits").per_gpu_bytes


def test_the_sum_counts_it_once():
    with_cache = _est(returns_kv_cache=True, live_at_rerun="loss")
    assert with_cache.items_bytes["returned_kv_cache"] == pytest.approx(_cache_bytes())


@settings(max_examples=15, deadline=None)
@given(seq=st.sampled_from([1024, 2048, 4096]), mb=st.integers(1, 6),
       live=st.sampled_from(["none", "logits", "loss"]))
def test_a_returned_cache_never_needs_less(seq, mb, live):
    without = _est(seq_len=seq, micro_batch=mb, live_at_rerun=live).per_gpu_bytes
    assert _est(seq_len=seq, micro_batch=mb, live_at_rerun=live, returns_kv_cache=True).per_gpu_bytes >= without


def test_the_batch_path_agrees_with_the_scalar_one():
    sc = resolve_job(_job(returns_kv_cache=True, live_at_rerun="logits"), CAT)
    worst, _ = memory_per_gpu_bytes(sc.model, sc.training, sc.system, sc.strategy)
    one = estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False).per_gpu_bytes
    assert float(np.asarray(worst).reshape(-1)[0]) == pytest.approx(one)
