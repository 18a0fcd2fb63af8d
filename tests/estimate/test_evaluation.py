"""Evaluation passes inside a run's wall-clock (job `evaluation`, estimate.evaluation): Hugging Face's Trainer runs
them in its training loop, so its train_runtime holds them. A pass is the step's forward only (step_time_arrays'
forward_compute), over the evaluation samples split across the data-parallel ranks."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError
from trainsizer.estimate.evaluation import eval_pass_s, evaluation_s
from trainsizer.estimate.inputs import Training
from trainsizer.estimate.model_states import check_training
from trainsizer.estimate.step_time import estimate_time, step_time_arrays
from trainsizer.evaluate import evaluate
from trainsizer.scenario import resolve_job

CAT = load_catalog([])


def _job(evaluation: dict | None = None, epochs: float = 1.0, gpus: int = 8, **strategy) -> dict:
    job = {"model": "llama-3.1-8b", "method": "lora", "data": {"samples": 64_000, "avg_tokens": 2048, "epochs": epochs},
           "packing": True, "seq_len": 2048, "global_batch": {"sequences": 8 * gpus},
           "hardware": {"accelerator": "h100-sxm-80gb", "count": gpus, "network": "ib-ndr400"},
           "strategy": {"micro_batch": 2, "recompute": "full", "fsdp": "full", "framework": "hf", **strategy}}
    if evaluation is not None:
        job["evaluation"] = evaluation
    return job


def _sc(**kw):
    return resolve_job(_job(**kw), CAT)


def test_no_evaluation_is_the_default():
    sc = _sc()
    assert (sc.training.eval_samples, sc.training.eval_passes) == (0.0, 0)
    assert evaluation_s(sc.model, sc.training, sc.system, sc.strategy) == 0.0
    assert evaluate(sc, CAT)["time"]["eval_s"] == 0.0


@pytest.mark.parametrize(("epochs", "passes"), [(1.0, 1), (0.4, 1), (2.5, 3), (3.0, 3)])
def test_eval_strategy_epoch_evaluates_at_each_epoch_end_a_partial_last_one_included(epochs, passes):
    assert _sc(evaluation={"samples": 1000}, epochs=epochs).training.eval_passes == passes


def test_eval_strategy_steps_evaluates_at_each_multiple_of_eval_steps():
    sc = _sc(evaluation={"samples": 1000, "every_steps": 300})
    assert sc.steps == 1000  # 64,000 samples at 64 a step
    assert sc.training.eval_passes == 3


def test_a_pass_is_the_forward_of_its_micro_batches_on_one_rank():
    sc = _sc(evaluation={"samples": 8 * 4 * 10, "micro_batch": 4})
    one = dataclasses.replace(sc.training, global_batch_seqs=4 * 8 * 10)
    fwd = step_time_arrays(sc.model, one, sc.system, dataclasses.replace(sc.strategy, micro_batch=4))
    assert eval_pass_s(sc.model, sc.training, sc.system, sc.strategy) == pytest.approx(
        float(fwd["forward_compute"]))
    # forward only: cheaper than a training step over as many micro-batches (no backward, no recompute)
    assert eval_pass_s(sc.model, sc.training, sc.system, sc.strategy) < float(fwd["step_s"]) / 2


@settings(max_examples=15, deadline=None)
@given(batches=st.integers(1, 40), gpus=st.sampled_from([8, 16, 32]))
def test_the_pass_is_split_over_the_data_parallel_ranks(batches, gpus):
    """Every rank runs ceil(batches / dp) micro-batches (accelerate's even_batches): the pass is whole micro-batch
    forwards, and a batch more than a multiple of dp costs one more on every rank."""
    sc = _sc(evaluation={"samples": 2 * batches * gpus, "micro_batch": 2}, gpus=gpus)
    one = _sc(evaluation={"samples": 2 * gpus, "micro_batch": 2}, gpus=gpus)
    per_mb = eval_pass_s(one.model, one.training, one.system, one.strategy)
    assert eval_pass_s(sc.model, sc.training, sc.system, sc.strategy) == pytest.approx(batches * per_mb, rel=1e-9)
    extra = _sc(evaluation={"samples": 2 * batches * gpus + 1, "micro_batch": 2}, gpus=gpus)
    assert eval_pass_s(extra.model, extra.training, extra.system, extra.strategy) == pytest.approx(
        (batches + 1) * per_mb, rel=1e-9)


def test_the_passes_are_in_the_time_to_train_not_in_the_step():
    base, ev = _sc(), _sc(evaluation={"samples": 5000, "micro_batch": 4})
    t0 = estimate_time(base.model, base.training, base.system, base.strategy, memory_note=False)
    t1 = estimate_time(ev.model, ev.training, ev.system, ev.strategy, memory_note=False)
    assert t1.step_s == t0.step_s and t1.tokens_per_s == t0.tokens_per_s
    assert t1.eval_s == pytest.approx(evaluation_s(ev.model, ev.training, ev.system, ev.strategy)) and t1.eval_s > 0
    assert t1.train_days * t1.goodput - t0.train_days * t0.goodput == pytest.approx(t1.eval_s / 86400.0, rel=1e-6)


@pytest.mark.parametrize(("evaluation", "field"), [({"samples": 0}, "samples"), ({"samples": 10, "micro_batch": 0},
                                                   "micro_batch"), ({"samples": 10, "every_steps": -1}, "every_steps"),
                                                  ({"micro_batch": 4}, "samples"), ({"samples": 10, "each": 3}, "each")])
def test_bad_evaluation_fields_are_refused_naming_them(evaluation, field):
    with pytest.raises(TrainsizerError, match=f"evaluation.*{field}|{field}.*evaluation"):
        _sc(evaluation=evaluation)


def test_the_estimate_refuses_negative_evaluation_fields_passed_past_the_spec():
    with pytest.raises(TrainsizerError, match="eval"):
        check_training(Training(eval_samples=-1.0))
    check_training(Training(eval_samples=10.0, eval_passes=2))
    assert math.isfinite(Training(eval_samples=10.0).eval_samples)


def test_the_job_summary_states_the_passes_taken():
    """`trainsizer check` / the estimate's JSON job: the evaluation as the estimate takes it; absent without one."""
    assert "evaluation" not in _sc().summary()
    got = _sc(evaluation={"samples": 1000}, epochs=2.5).summary()["evaluation"]
    assert got == {"samples": 1000.0, "micro_batch": 2, "passes": 3}
