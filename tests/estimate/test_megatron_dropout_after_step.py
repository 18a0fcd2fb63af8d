"""The job's dropout (hidden_dropout / attention_dropout: the masks their backward reads) and the memory held after the
optimizer step (Megatron-Core's fp32 copy of a bf16 gradient shard until the next zero_grad); docs/known-gaps.md 172."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from pydantic import ValidationError

from trainsizer.errors import SpecError
from trainsizer.estimate import megatron_fsdp
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.memory import STEP_STATE_ITEMS, estimate_memory
from trainsizer.spec.job import Job

from .test_perf_common import h100_cluster, llama8b

JOB = {"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": 4096, "global_batch": {"sequences": 64}}
MEGA = Strategy(tp=2, dp=4, micro_batch=1, recompute="none", distributed_optimizer=True, framework="megatron-core")


def _tr(**kw) -> Training:
    return Training(seq_len=4096, global_batch_seqs=64, **kw)


def _states(e) -> float:
    return sum(v for k, v in e.items_bytes.items() if k in STEP_STATE_ITEMS)


def test_the_job_fields_default_to_none_and_refuse_a_probability_of_one():
    assert Job(**JOB).hidden_dropout == 0.0 and Job(**JOB).attention_dropout == 0.0
    assert Job(**JOB, hidden_dropout=0.1, attention_dropout=0.1).hidden_dropout == 0.1
    for field in ("hidden_dropout", "attention_dropout"):
        with pytest.raises(ValidationError, match=field):
            Job(**JOB, **{field: 1.0})
    with pytest.raises(SpecError, match="dropout"):
        estimate_memory(llama8b(), _tr(hidden_dropout=-0.1), h100_cluster(8), MEGA)


def test_residual_dropout_keeps_one_byte_masks_split_by_tp_only_under_sequence_parallelism():
    m, s = llama8b(), h100_cluster(8)
    tokens = 4096.0  # micro-batch 1
    for sp in (False, True):
        st = MEGA.with_(sequence_parallel=sp)
        off, on = estimate_memory(m, _tr(), s, st), estimate_memory(m, _tr(hidden_dropout=0.1), s, st)
        added = on.items_bytes["layer_activations"] - off.items_bytes["layer_activations"]
        per_layer = 2 * m.hidden * tokens / (2 if sp else 1)  # two masks a layer, 1 B an element
        assert added == pytest.approx(m.layers * per_layer, rel=1e-9)  # one micro-batch in flight, 32 layers
        assert on.items_bytes["embedding_and_rope"] - off.items_bytes.get("embedding_and_rope", 0.0) == pytest.approx(
            m.hidden * tokens / (2 if sp else 1), rel=1e-9)


def test_attention_dropout_keeps_a_mask_only_outside_fused_kernels():
    m, s = llama8b(), h100_cluster(8)
    flash = estimate_memory(m, _tr(), s, MEGA)
    assert estimate_memory(m, _tr(attention_dropout=0.1), s, MEGA).per_gpu_bytes == flash.per_gpu_bytes
    eager = _tr(flash_attention=False)
    assert (estimate_memory(m, _tr(flash_attention=False, attention_dropout=0.1), s, MEGA).per_gpu_bytes
            > estimate_memory(m, eager, s, MEGA).per_gpu_bytes)


def test_a_bf16_gradient_reduce_holds_the_fp32_shard_copy_after_the_step():
    m, s = llama8b(), h100_cluster(8)
    fp32 = estimate_memory(m, _tr(), s, MEGA)
    assert fp32.after_step_bytes == pytest.approx(_states(fp32), rel=1e-9)  # .float() of an fp32 buffer: no copy
    half = estimate_memory(m, _tr(), s, MEGA.with_(grad_reduce_in_fp32=False))
    shard = m.params_total / 2 / 4  # TP 2, the distributed optimizer over DP 4
    assert half.after_step_bytes - _states(half) == pytest.approx(4 * shard, rel=0.02)
    assert half.to_dict()["after_step_gib"] == pytest.approx(half.after_step_bytes / 2**30, abs=1e-4)
    # DeepSpeed frees its fp32 partition gradients within the step: nothing held
    ds = estimate_memory(m, _tr(), s, Strategy(dp=8, zero=1, micro_batch=1, framework="deepspeed"))
    assert ds.after_step_bytes == pytest.approx(_states(ds), rel=1e-9)


@settings(max_examples=20, deadline=None)
@given(p=hs.floats(0.0, 0.5), tp=hs.sampled_from([1, 2, 4]), g32=hs.booleans())
def test_dropout_never_lowers_memory_and_the_after_step_figure_holds_the_states(p: float, tp: int, g32: bool):
    m, s = llama8b(), h100_cluster(8)
    st = MEGA.with_(tp=tp, dp=8 // tp, grad_reduce_in_fp32=g32)
    base, drop = estimate_memory(m, _tr(), s, st), estimate_memory(m, _tr(hidden_dropout=p, attention_dropout=p), s, st)
    assert drop.per_gpu_bytes >= base.per_gpu_bytes and (drop.per_gpu_bytes > base.per_gpu_bytes) == (p > 0)
    assert drop.after_step_bytes == base.after_step_bytes >= _states(base) > 0


def test_a_megatron_job_that_states_no_dropout_is_told_what_megatron_lm_defaults_to():
    from trainsizer.catalog import load_catalog
    from trainsizer.scenario import resolve_job

    cat = load_catalog()
    job = {**JOB, "hardware": {"accelerator": "h100-sxm-80gb", "count": 8}}

    def keys(**kw) -> list[str]:
        return [getattr(n, "key", "") for n in resolve_job({**job, **kw}, cat).notes]

    for framework in ("megatron", "megatron-core"):
        assert "note_megatron_dropout" in keys(strategy={"tp": 2, "framework": framework})
        assert "note_megatron_dropout" not in keys(strategy={"tp": 2, "framework": framework}, hidden_dropout=0.0)
    assert "note_megatron_dropout" not in keys(strategy={"tp": 2, "framework": "torchtitan"})
    assert "note_megatron_dropout" not in keys()  # no framework named: nothing said


def test_megatron_fsdp_holds_its_fp32_gradient_shard_copy_after_the_step_only():
    """update_main_grads' cast (dist_main_grad) lives from the step to Megatron-FSDP's zero_grad, not in the forward /
    backward: the peak of a forward / backward-peaking job does not move with it."""
    m, s = llama8b(), h100_cluster(8)
    st = Strategy(dp=8, zero=3, fsdp="full", micro_batch=1, recompute="none", framework="megatron-core")
    fp32, half = estimate_memory(m, _tr(), s, st), estimate_memory(m, _tr(), s, st.with_(grad_reduce_in_fp32=False))
    # and start_param_sync's gathered buckets, the untied embedding's and three layers' (docs/known-gaps.md 306 (b))
    emb = megatron_fsdp.embedding_bucket_params(m.vocab, m.hidden, False, 1)
    sync = 2.0 * megatron_fsdp.param_sync_bucket_params(emb, float(m.layer_params(0).total), m.layers, 1e9)
    assert sync == pytest.approx(2.0 * (emb + 3 * m.layer_params(0).total))
    assert fp32.after_step_bytes == pytest.approx(_states(fp32) + sync, rel=1e-9)
    assert half.after_step_bytes - _states(half) - sync == pytest.approx(4 * m.params_total / 8, rel=0.02)
    assert "grad_fp32_copy" not in half.items_bytes or half.items_bytes["grad_fp32_copy"] == 0.0
