"""Three strategy options read in KempnerForge's code at 01b461a (docs/known-gaps.md 121): FSDP2's gradient sync on
the last micro-batch only (fsdp_no_sync: training/grad.py maybe_no_sync, torch FSDPParam.to_accumulated_grad_if_needed
holding the unsharded gradient in the reduce dtype), the LM head's output gathered to every TP rank for the loss
(loss_parallel false: tensor_parallel.py ColwiseParallel output_layouts Replicate) and the token embedding left whole
on every TP rank (embedding_parallel false). Memory only (memory.py `_full_states`, `_activations`, `_stage_params`)."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import StrategyError, TrainsizerError
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.messages import msg
from trainsizer.models import load_model
from trainsizer.scenario import resolve_job

MODEL = load_model("llama-3.1-8b")
H200 = System(accelerator="h200-sxm-141gb", gpus=8, gpus_per_node=4, memory_gib=141.0, peak_tflops={"bf16": 989.0},
              hbm_gb_s=4800.0, intra_node_gb_s=450.0)
SEQ, MB = 4096, 2


def _items(global_batch: int = 32, tp: int = 1, **kw) -> dict[str, float]:
    """Items of an FSDP run on 8 GPUs: 8 / tp data-parallel ranks, `global_batch` sequences of micro-batch 2."""
    st = Strategy(tp=tp, dp=8 // tp, zero=3, micro_batch=MB, recompute="full", framework="torchtitan",
                  sequence_parallel=tp > 1, **kw)
    training = Training(method="pretrain", seq_len=SEQ, global_batch_seqs=global_batch)
    return estimate_memory(MODEL, training, H200, st).items_bytes


def test_no_sync_holds_every_unsharded_gradient_in_the_reduce_dtype():
    """Four micro-batches a step: the gradients are not reduce-scattered until the last, each rank holds its whole
    model's gradient unsharded, in fp32 (FSDP2's reduce_dtype), and no sharded gradient beside it."""
    base, held = _items(), _items(fsdp_no_sync=True)
    assert held["gradients"] == 0.0
    # 8 ranks shard 2-byte gradients; the hold is 4 bytes a parameter on every rank: 16 x the sharded gradients
    assert held["fsdp_unsharded_grads"] == pytest.approx(16.0 * base["gradients"], rel=1e-9)
    assert held["fsdp_unsharded_grads"] / 4.0 == pytest.approx(MODEL.params_total, rel=0.01)
    bf16 = _items(fsdp_no_sync=True, grad_reduce_in_fp32=False)  # reduced in the parameters' dtype
    assert bf16["fsdp_unsharded_grads"] == pytest.approx(held["fsdp_unsharded_grads"] / 2.0, rel=1e-9)


def test_no_sync_changes_nothing_with_one_micro_batch_a_step():
    """set_requires_gradient_sync(False) is skipped on the last micro-batch: with one a step it is never set."""
    one = 8 * MB  # one micro-batch on each of 8 ranks
    assert _items(global_batch=one, fsdp_no_sync=True) == _items(global_batch=one)


def test_no_sync_is_refused_without_fsdp():
    st = Strategy(dp=8, zero=1, micro_batch=MB, recompute="full", framework="torchtitan", fsdp_no_sync=True)
    with pytest.raises(StrategyError) as err:
        estimate_memory(MODEL, Training(method="pretrain", seq_len=SEQ, global_batch_seqs=32), H200, st)
    assert err.value.rule == "fsdp_no_sync_fsdp"
    assert "zero=1" in str(err.value)
    assert "需要完全分片" in msg("rule_fsdp_no_sync_fsdp", zero=1).tr("zh")


def test_gathered_logits_are_whole_on_every_tp_rank():
    """loss_parallel false: the head's output gathered to Replicate, so each TP rank's logits and loss backward
    temporaries are those of a run without TP (the whole micro-batch's, the plain loss's), 4 x the sharded logits;
    the layers' items do not move."""
    sharded, gathered, unsplit = _items(tp=4), _items(tp=4, loss_parallel=False), _items()
    assert gathered["logits"] == pytest.approx(4.0 * sharded["logits"], rel=1e-9)
    for key in ("logits", "loss_backward_temporaries"):
        assert gathered[key] == pytest.approx(unsplit[key], rel=1e-9)
    assert gathered["layer_activations"] == sharded["layer_activations"]
    assert _items(tp=4, loss_parallel=True) == sharded  # the style's behaviour, stated
    assert _items(loss_parallel=False)["logits"] == _items()["logits"]  # no TP: nothing to gather


def test_a_replicated_embedding_is_sharded_by_fsdp_alone():
    """embedding_parallel false: the vocabulary x hidden table is whole on each of 4 TP ranks, so each GPU holds
    1 / dp of it instead of 1 / (tp x dp): weights at 2 bytes, over 2 data-parallel ranks."""
    split, whole = _items(tp=4), _items(tp=4, embedding_parallel=False)
    emb = MODEL.vocab * MODEL.hidden
    assert whole["weights"] - split["weights"] == pytest.approx(2.0 * emb * (1.0 - 1.0 / 4.0) / 2.0, rel=1e-6)
    held = _items(tp=4, embedding_parallel=False, fsdp_no_sync=True)["fsdp_unsharded_grads"]
    assert held - _items(tp=4, fsdp_no_sync=True)["fsdp_unsharded_grads"] == pytest.approx(
        4.0 * emb * (1.0 - 1.0 / 4.0), rel=1e-6)


JOB = {"model": "llama-3.1-8b", "method": "pretrain", "data": {"tokens": 1e8}, "seq_len": SEQ,
       "global_batch": {"sequences": 32}, "hardware": {"accelerator": "h200-sxm-141gb", "count": 8,
                                                         "network": "ib-ndr400"}}


@pytest.mark.parametrize("field", ["loss_parallel", "fsdp_no_sync", "embedding_parallel"])
def test_a_bad_value_names_the_field(field):
    with pytest.raises(TrainsizerError, match=field):
        resolve_job({**JOB, "strategy": {"tp": 2, "fsdp": "full", "micro_batch": 2, field: "sometimes"}},
                    load_catalog())


def test_a_job_states_them():
    strategy = {"tp": 4, "fsdp": "full", "micro_batch": 2, "framework": "torchtitan", "loss_parallel": False,
                "fsdp_no_sync": True, "embedding_parallel": False}
    scenario = resolve_job({**JOB, "strategy": strategy}, load_catalog())
    assert scenario.strategy.loss_parallel is False and scenario.strategy.fsdp_no_sync is True
    assert scenario.strategy.embedding_parallel is False
    assert scenario.summary()["strategy"]["fsdp_no_sync"] is True
