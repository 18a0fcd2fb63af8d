"""strategy.live_at_rerun: what the training loop still holds of the loss phase when the backward re-runs the last
checkpointed layer (names.LIVE_AT_RERUN; memory._backward_phases, docs/known-gaps.md 203).

PyTorch's engine runs the loss's and the LM head's backward before the last layer's checkpoint and frees each node's
saved tensors as it goes, so under full recompute the loss phase and a re-run layer are apart unless the loop keeps the
forward's outputs: none (transformers' Trainer returns the loss alone from compute_loss; torchtune `del logits`),
logits (`output = model(...); output.loss.backward()`: the outputs' logits live through the backward), loss (the
sum, for the stacks whose loop was not read). The caching allocator's segments that the forward's layers cut stay
reserved beside the loss's larger tensors (memory._forward_segments) unless expandable segments are on."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.estimate.memory import estimate_memory
from trainsizer.scenario import resolve_job

CAT = load_catalog([])


def _job(seq_len: int = 4096, micro_batch: int = 2, method: str = "lora", accumulation: int = 1, **strategy) -> dict:
    job = {"model": "llama-3.1-8b", "method": method, "data": {"tokens": 1e8}, "seq_len": seq_len,
           "global_batch": {"sequences": micro_batch * accumulation}, "precision": "bf16",
           "hardware": {"accelerator": "h100-sxm-80gb", "count": 1},
           "strategy": {"micro_batch": micro_batch, "recompute": "full", "framework": "hf", **strategy}}
    if method == "lora":
        job["lora"] = {"rank": 8, "targets": ["q_proj", "v_proj"]}
    return job


def _est(**kw):
    sc = resolve_job(_job(**kw), CAT)
    return estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False)


@pytest.mark.parametrize("bad", ["held", "sum", 1])
def test_a_value_outside_the_list_is_refused_naming_the_field(bad):
    with pytest.raises(Exception, match="live_at_rerun"):
        resolve_job(_job(live_at_rerun=bad), CAT)


def test_the_hf_default_frees_the_outputs_and_loss_is_the_old_sum():
    default, none, summed = _est(), _est(live_at_rerun="none"), _est(live_at_rerun="loss")
    assert default.per_gpu_bytes == none.per_gpu_bytes
    items = none.items_bytes
    assert items["logits"] == 0.0 or items["recompute_working_set"] == 0.0  # one phase or the other
    s = summed.items_bytes
    assert s["logits"] > 0 and s["recompute_working_set"] > 0 and "forward_layer_segments" not in s
    assert _allocated(none) < _allocated(summed)


def _allocated(e) -> float:
    """The estimate less the loss path's own segments (memory._loss_path_segments): replayed only for the loop that
    drops its outputs (none), so a loop that keeps them is compared on what it allocates."""
    return e.per_gpu_bytes - e.items_bytes.get("loss_path_segments", 0.0)


def test_held_logits_are_the_models_fp32_outputs_in_both_phases():
    """loss_impl upcast (the hf default: transformers <= 4.45 returns `logits.float()`): 4 B a logit element kept
    beside whichever phase peaks; upcast-shift returns 16-bit logits (2 B); a fused loss returns none."""
    sc = resolve_job(_job(), CAT)
    elems = 2 * 4096 * sc.model.vocab
    held = _est(live_at_rerun="logits")
    assert held.items_bytes["held_logits"] == pytest.approx(4.0 * elems)
    assert held.per_gpu_bytes > _est().per_gpu_bytes
    shift = _est(live_at_rerun="logits", loss_impl="upcast-shift").items_bytes
    assert shift["held_logits"] == pytest.approx(2.0 * elems)
    assert "held_logits" not in _est(live_at_rerun="logits", loss_impl="fused").items_bytes


def test_the_forward_segments_are_the_mlps_cached_tensors_unless_expandable():
    """3 ffn-wide tensors and 2 hidden-wide ones a token in bf16 (transformers' LlamaMLP under a checkpointed
    forward), reserved beside the loss phase; none under expandable segments or without full recompute. Two
    micro-batches a step, so the loss phase holds every gradient and peaks (with one, the HF Trainer's set_to_none
    leaves none there and the backward's end peaks: docs/known-gaps.md 242)."""
    sc = resolve_job(_job(method="full"), CAT)
    m = sc.model
    items = _est(method="full", accumulation=2).items_bytes
    assert items["forward_layer_segments"] == pytest.approx(2 * 4096 * 2.0 * (3 * m.ffn + 2 * m.hidden))
    assert _est(method="full", accumulation=2,
                allocator_expandable_segments=True).items_bytes.get("forward_layer_segments", 0) == 0
    assert _est(method="full", accumulation=2, recompute="none").items_bytes.get("forward_layer_segments", 0) == 0


def test_other_styles_keep_the_sum_unless_stated():
    """Styles whose loop was not read keep the sum (their default "loss"); a stated value applies to any style."""
    mc = _est(framework="megatron-core", method="full").items_bytes
    assert mc["logits"] > 0 and mc["recompute_working_set"] > 0
    stated = _est(framework="megatron-core", method="full", live_at_rerun="none").items_bytes
    assert stated["logits"] == 0.0 or stated["recompute_working_set"] == 0.0


@settings(max_examples=25, deadline=None)
@given(seq=st.sampled_from([512, 2048, 8192]), mb=st.integers(1, 4), method=st.sampled_from(["full", "lora"]))
def test_freeing_the_outputs_never_needs_more_than_keeping_them(seq, mb, method):
    none = _allocated(_est(seq_len=seq, micro_batch=mb, method=method))
    for live in ("logits", "loss"):
        assert none <= _est(seq_len=seq, micro_batch=mb, method=method, live_at_rerun=live).per_gpu_bytes * (1 + 1e-9)


def test_auto_frees_where_it_resolves_to_hf_and_sums_where_to_megatron_core():
    """framework auto applies the default of the stack it resolves to (framework.auto_index): a data-parallel
    fine-tune is the hf style's (none), a tensor-parallel one Megatron-Core's (loss)."""
    assert _est(framework="auto").per_gpu_bytes == _est().per_gpu_bytes
    job = _job(method="full", framework="auto", tp=2)
    job["hardware"]["count"] = 2
    sc = resolve_job(job, CAT)
    items = estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False).items_bytes
    assert items["logits"] > 0 and items["recompute_working_set"] > 0
