"""Checkpoint saves inside a run's wall-clock (job `checkpoint_saves`, estimate.checkpoint_saves): Hugging Face's
Trainer saves in its training loop, so its train_runtime holds them. A save writes the training state (weights,
master copies, optimizer states; a LoRA job's adapters) at the storage bandwidth of the nodes that write."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError
from trainsizer.estimate.checkpoint_saves import checkpoint_save_bytes, checkpoint_saves_s, save_s
from trainsizer.estimate.inputs import Training
from trainsizer.estimate.model_states import check_training, lora_trainable_params
from trainsizer.estimate.reliability import checkpoint_write_s, reliability
from trainsizer.estimate.step_time import estimate_time
from trainsizer.evaluate import evaluate
from trainsizer.scenario import resolve_job

CAT = load_catalog([])


def _sc(saves: dict | None = None, method: str = "full", precision: str = "bf16", gpus: int = 8,
        epochs: float = 1.0):
    job = {"model": "llama-3.1-8b", "method": method, "precision": precision,
           "data": {"samples": 64_000, "avg_tokens": 2048, "epochs": epochs}, "packing": True, "seq_len": 2048,
           "global_batch": {"sequences": 8 * gpus},
           "hardware": {"accelerator": "h100-sxm-80gb", "count": gpus, "network": "ib-ndr400"},
           "strategy": {"micro_batch": 1, "recompute": "full", "fsdp": "full", "framework": "hf"}}
    if saves is not None:
        job["checkpoint_saves"] = saves
    return resolve_job(job, CAT)


def test_no_saves_is_the_default():
    sc = _sc()
    assert (sc.training.save_count, sc.training.save_sharded) == (0, False)
    assert checkpoint_saves_s(sc.model, sc.training, sc.system, sc.strategy) == 0.0
    assert evaluate(sc, CAT)["time"]["save_s"] == 0.0
    assert "checkpoint_saves" not in sc.summary()


@pytest.mark.parametrize(("saves", "epochs", "count"), [({"every_steps": 300}, 1.0, 3), ({}, 2.5, 3), ({}, 0.4, 1)])
def test_saves_are_counted_as_the_trainer_saves(saves, epochs, count):
    """save_strategy steps: at each multiple of save_steps over the run's 1,000 steps an epoch; epoch: at each epoch's
    end, a partial last one included."""
    sc = _sc(saves, epochs=epochs)
    assert sc.training.save_count == count
    assert sc.summary()["checkpoint_saves"] == {"saves": count, "sharded": False}


@pytest.mark.parametrize(("precision", "per_param"), [("fp32", 4 + 8), ("bf16", 2 + 4 + 8)])
def test_a_full_fine_tune_saves_weights_master_and_optimizer_states(precision, per_param):
    sc = _sc({}, precision=precision)
    assert checkpoint_save_bytes(sc.model, sc.training, sc.strategy) == pytest.approx(
        per_param * sc.model.params_total)


def test_a_lora_job_saves_its_adapters_only():
    sc = _sc({}, method="lora")
    got = checkpoint_save_bytes(sc.model, sc.training, sc.strategy)
    assert got == pytest.approx(14 * lora_trainable_params(sc.model, sc.training))
    assert got < 0.01 * checkpoint_save_bytes(_sc({}).model, _sc({}).training, _sc({}).strategy)


def test_a_save_is_its_bytes_at_the_storage_bandwidth_of_the_nodes_that_write():
    """One process writing: one node's bandwidth, whatever the job's size; sharded: every node's. The write time is
    the goodput model's (reliability.checkpoint_write_s), one formula."""
    one, two = _sc({}, gpus=16), _sc({"sharded": True}, gpus=16)
    b = checkpoint_save_bytes(one.model, one.training, one.strategy)
    assert save_s(one.model, one.training, one.system, one.strategy) == pytest.approx(float(checkpoint_write_s(b, 1)))
    assert save_s(two.model, two.training, two.system, two.strategy) == pytest.approx(
        save_s(one.model, one.training, one.system, one.strategy) / 2)
    rel = reliability(one.model.params_total, 16, 8, checkpoint_bytes_per_param=14.0)
    assert rel.checkpoint_write_s == pytest.approx(float(checkpoint_write_s(14.0 * one.model.params_total, 2)))


@settings(max_examples=15, deadline=None)
@given(every=st.integers(1, 1000))
def test_the_run_s_saves_are_the_count_times_one_save(every):
    sc = _sc({"every_steps": every})
    one = save_s(sc.model, sc.training, sc.system, sc.strategy)
    assert checkpoint_saves_s(sc.model, sc.training, sc.system, sc.strategy) == pytest.approx(
        (1000 // every) * one)


def test_the_saves_are_in_the_time_to_train_not_in_the_step():
    base, sv = _sc(), _sc({"every_steps": 100})
    t0 = estimate_time(base.model, base.training, base.system, base.strategy, memory_note=False)
    t1 = estimate_time(sv.model, sv.training, sv.system, sv.strategy, memory_note=False)
    assert t1.step_s == t0.step_s and t1.tokens_per_s == t0.tokens_per_s and t1.save_s > 0
    assert t1.train_days * t1.goodput - t0.train_days * t0.goodput == pytest.approx(t1.save_s / 86400.0, rel=1e-6)


@pytest.mark.parametrize(("saves", "field"), [({"every_steps": 0}, "every_steps"), ({"every_steps": -5}, "every_steps"),
                                              ({"sharded": "maybe"}, "sharded"), ({"each": 3}, "each")])
def test_bad_checkpoint_save_fields_are_refused_naming_them(saves, field):
    with pytest.raises(TrainsizerError, match=f"checkpoint_saves.*{field}|{field}.*checkpoint_saves"):
        _sc(saves)


def test_the_estimate_refuses_a_negative_save_count_passed_past_the_spec():
    with pytest.raises(TrainsizerError, match="save_count"):
        check_training(Training(save_count=-1))
    check_training(Training(save_count=3))
