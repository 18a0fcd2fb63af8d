"""The fsdp style's FSDP1 units under 16-bit MixedPrecision (estimate/fsdp1_mixed.py, docs/known-gaps.md 281 (a)): the
fp32 shard is their only weights (no 16-bit shard item), the sharded gradient is fp32 and made by the backward (the
loop sets the gradients to None at the step), and the loss phase holds the root unit's 16-bit weights and one
prefetched layer, not two layers, a layer's gradient and the root's gradient."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.estimate import fsdp1_mixed
from trainsizer.estimate.memory import estimate_memory
from trainsizer.scenario import resolve_job

CAT = load_catalog([])
P_7B = 6_738_415_616  # Llama 2 7B's parameters (untied embedding and head)
LAYER_7B = 4 * 4096 * 4096 + 3 * 4096 * 11008 + 2 * 4096  # q, k, v, o, gate, up, down and the two norms
ROOT_7B = 2 * 32000 * 4096 + 4096  # embedding, LM head, final norm


def _job(gpus: int = 8, micro_batch: int = 4, precision: str = "bf16", method: str = "pretrain",
         sequences: int | None = None, **strategy) -> dict:
    return {"model": "llama-2-7b", "method": method, "data": {"tokens": 1e9}, "seq_len": 4096,
            "global_batch": {"sequences": sequences or micro_batch * gpus}, "precision": precision,
            "hardware": {"accelerator": "a100-sxm-80gb", "count": gpus, "network": "roce-800"},
            "strategy": {"dp": gpus, "zero": 3, "fsdp": "full", "micro_batch": micro_batch, "recompute": "full",
                         "framework": "fsdp", **strategy}}


def _est(**kw):
    sc = resolve_job(_job(**kw), CAT)
    return estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False)


class _Training:
    def __init__(self, precision: str = "bf16", trains_base_weights: bool = True):
        self.precision, self.trains_base_weights = precision, trains_base_weights


class _Strategy:
    def __init__(self, fsdp: str = "full", fsdp_version: int | None = None):
        self.fsdp, self.fsdp_version = fsdp, fsdp_version


def _units(name: str = "fsdp", z: int = 3, dpc: int = 8, training=None, strategy=None) -> bool:
    off = np.zeros((), dtype=bool)
    return bool(fsdp1_mixed.fp32_shard_units(strategy or _Strategy(), name, off, off, z, dpc, training or _Training()))


def test_where_the_units_keep_only_the_fp32_shard():
    assert _units()
    assert _units(strategy=_Strategy("hybrid"))
    assert not _units(name="hf")  # accelerate's FSDP1 keeps the model's own dtype: not read here
    assert not _units(strategy=_Strategy(fsdp_version=2))
    assert not _units(strategy=_Strategy("none"))
    assert not _units(z=0)
    assert not _units(dpc=1)  # one rank: NO_SHARD
    assert not _units(training=_Training("fp32"))
    assert not _units(training=_Training(trains_base_weights=False))


def test_no_16bit_shard_and_an_fp32_sharded_gradient():
    """The step phase's states: the fp32 shard (master), AdamW's moments and the fp32 sharded gradient, 16 B a
    parameter over the shard group, as the 2 + 2 + 12 B they replace; no weights item."""
    est = _est(live_at_rerun="none", micro_batch=1)
    items = est.items_bytes
    assert items.get("weights", 0.0) == 0.0
    assert items["master_weights"] == pytest.approx(4.0 * P_7B / 8, rel=1e-3)
    v2 = _est(live_at_rerun="none", micro_batch=1, fsdp_version=2)
    assert v2.items_bytes["weights"] == pytest.approx(2.0 * P_7B / 8, rel=1e-3)
    assert est.after_step_bytes == pytest.approx(v2.after_step_bytes)


def test_the_loss_phase_holds_the_root_and_one_layer_and_no_gradient():
    """ATorch's loop (live_at_rerun logits, the cache returned): the forward's loss is the peak; the gathered units
    are the root's and the last layer's 16-bit weights; the gradients are the LM head's only (this backward's)."""
    est = _est(live_at_rerun="logits", returns_kv_cache=True)
    items = est.items_bytes
    assert items["logits"] > 0.0  # the loss phase wins
    assert items["framework_buffers"] == pytest.approx(2.0 * (ROOT_7B + LAYER_7B), rel=1e-3)
    assert items["gradients"] < 0.1 * 4.0 * P_7B / 8
    before = _est(live_at_rerun="logits", returns_kv_cache=True, fsdp_version=2).items_bytes
    assert before["framework_buffers"] == pytest.approx(2.0 * (2 * ROOT_7B + 3 * LAYER_7B), rel=1e-3)


def test_accumulation_keeps_the_gradients_and_the_sum_style_keeps_its_sum():
    """With two micro-batches a step the first's sharded gradients live through the second (Composer syncs every
    micro-batch under FSDP); the style's default loop holds the loss phase (live_at_rerun loss): the sum, in which the
    16-bit shard's bytes move to the fp32 gradient and the total stays."""
    two = _est(live_at_rerun="logits", micro_batch=1, sequences=16)
    assert two.items_bytes["gradients"] == pytest.approx(4.0 * P_7B / 8, rel=1e-3)
    assert _est().per_gpu_bytes == pytest.approx(_est(fsdp_version=2).per_gpu_bytes)


@settings(max_examples=12, deadline=None)
@given(gpus=st.sampled_from([2, 4, 8, 16, 32, 64]), micro_batch=st.integers(1, 4),
       live=st.sampled_from(["none", "logits"]))
def test_never_above_the_accounting_it_replaces(gpus, micro_batch, live):
    """Only items the run does not hold are left out: the peak never rises against FSDP2's accounting (fsdp_version 2,
    the style's previous items), and the step's states are the same bytes."""
    new = _est(gpus=gpus, micro_batch=micro_batch, live_at_rerun=live)
    old = _est(gpus=gpus, micro_batch=micro_batch, live_at_rerun=live, fsdp_version=2)
    assert new.per_gpu_bytes <= old.per_gpu_bytes + 1.0
    assert new.after_step_bytes == pytest.approx(old.after_step_bytes)


def test_fp32_training_and_lora_keep_the_items():
    assert _est(precision="fp32").items_bytes["weights"] > 0.0
    lora = _est(method="lora")
    assert lora.per_gpu_bytes == pytest.approx(_est(method="lora", fsdp_version=2).per_gpu_bytes)
