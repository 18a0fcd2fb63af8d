"""FSDP1's no_sync under the HF Trainer's gradient accumulation (estimate/fsdp1_no_sync.py; docs/known-gaps.md 250 (a)):
accelerate's accumulate runs every micro-batch but a step's last under FSDP1's no_sync, which keeps each unit's
gradient unsharded in the compute dtype, so a rank holds one whole model's gradients, not its shard."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.models import load_model

MODEL = load_model("mistral-7b")


def _a100s(n: int) -> System:
    return System(accelerator="a100-sxm-80gb", gpus=n, gpus_per_node=8, memory_gib=80.0, peak_tflops={"bf16": 312.0},
                  hbm_gb_s=2039.0, intra_node_gb_s=300.0)


def _est(n: int = 4, accum: int = 2, framework: str = "hf", **kw):
    """Full fine-tuning on n A100s under FSDP FULL_SHARD, micro-batch 1 of 1,024 tokens, `accum` micro-batches a
    step (fms-acceleration's orca-math job in bf16: perf_heldout64)."""
    st = Strategy(dp=n, zero=3, micro_batch=1, recompute="full", framework=framework, **({"fsdp": "full"} | kw))
    training = Training(method="full", seq_len=1024, global_batch_seqs=n * accum, precision="bf16")
    return estimate_memory(MODEL, training, _a100s(n), st)


def test_the_hf_style_holds_the_whole_models_gradients_in_the_compute_dtype():
    """Two micro-batches a step: the hold is 2 bytes a parameter on every rank (bf16, FSDP1 keeps autograd's gradient
    as it is) in place of the 1 / 4 shard."""
    held, synced = _est().items_bytes, _est(fsdp_no_sync=False).items_bytes
    assert held["gradients"] == 0.0 and "fsdp_unsharded_grads" not in synced
    assert held["fsdp_unsharded_grads"] == pytest.approx(4.0 * synced["gradients"], rel=1e-9)
    assert held["fsdp_unsharded_grads"] / 2.0 == pytest.approx(MODEL.params_total, rel=0.01)


@pytest.mark.parametrize("kw", [dict(accum=1), dict(fsdp_no_sync=False), dict(fsdp_version=2),
                                dict(framework="torchtitan"), dict(framework="torchtune"), dict(fsdp="none")])
def test_no_hold_where_the_gradients_are_synced_every_micro_batch(kw):
    """One micro-batch a step; accelerate's sync_each_batch (fsdp_no_sync false); FSDP2 under accelerate before
    v1.11 (no no_sync: synced); a loop that reduce-scatters each micro-batch; DeepSpeed's engine (zero 3, no fsdp)."""
    assert "fsdp_unsharded_grads" not in _est(**kw).items_bytes


def test_a_stated_fsdp1_no_sync_holds_the_compute_dtype_where_fsdp2_holds_fp32():
    fsdp1 = _est(framework="torchtitan", fsdp_version=1, fsdp_no_sync=True).items_bytes["fsdp_unsharded_grads"]
    fsdp2 = _est(framework="torchtitan", fsdp_no_sync=True).items_bytes["fsdp_unsharded_grads"]
    assert fsdp2 == pytest.approx(2.0 * fsdp1, rel=1e-9)


@settings(max_examples=20, deadline=None)
@given(n=hs.sampled_from([2, 4, 8, 16, 32]), accum=hs.integers(2, 8))
def test_the_hold_adds_the_other_ranks_share_of_the_gradients(n, accum):
    """The forward / backward phase holds (1 - 1 / GPUs) of the model's 16-bit gradients more than with a sync every
    micro-batch, whatever the scale and the accumulation; the peak never falls."""
    held, synced = _est(n, accum), _est(n, accum, fsdp_no_sync=False)
    extra = held.items_bytes["fsdp_unsharded_grads"] - synced.items_bytes["gradients"]
    assert extra == pytest.approx(2.0 * MODEL.params_total * (1.0 - 1.0 / n), rel=0.01)
    assert held.per_gpu_bytes >= synced.per_gpu_bytes
