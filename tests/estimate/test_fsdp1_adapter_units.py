"""FSDP1's adapter units on the host (step_time._fsdp1_adapter_unit_excess, docs/known-gaps.md 244 (a)): under torch
FSDP1 FULL_SHARD each LoRA adapter's A and B is its own unit, whose hooks run counted host calls; FSDP1's rate limiter
holds the CPU within two freed units of the GPU, so per adapted linear and pass the units' host time is exposed past
the base linear's GEMM."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.estimate import step_time
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Strategy, Training

from .test_perf_common import a100_cluster, llama8b

TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")


def _training(method: str = "lora", seq_len: int = 4096, targets=TARGETS) -> Training:
    return Training(seq_len=seq_len, global_batch_seqs=8, method=method, lora_rank=16 if method != "full" else 0,
                    lora_targets=targets if method != "full" else ())


def _strategy(micro_batch: int = 2, fsdp: str = "full", zero: int = 3, version: int | None = 1) -> Strategy:
    return Strategy(tp=1, dp=2, zero=zero, fsdp=fsdp, micro_batch=micro_batch, framework="hf", recompute="full",
                    fsdp_version=version if fsdp != "none" else None)


def _excess(training: Training | None = None, strategy: Strategy | None = None) -> float:
    x = step_time._step(llama8b(), training or _training(), a100_cluster(2), strategy or _strategy(), None, None, None)
    return float(np.asarray(step_time._fsdp1_adapter_unit_excess(x)).reshape(-1)[0])


def _host_excess_s(training: Training, strategy: Strategy) -> float:
    out = step_time.step_time_arrays(llama8b(), training, a100_cluster(2), strategy)
    return float(np.asarray(out["host_excess"]).reshape(-1)[0])


def test_fsdp1_lora_exposes_its_adapter_units_and_the_step_carries_them():
    got = _excess()
    assert got > 0.0
    # the diagnostic host_excess (a step's host-bound seconds) holds it for every layer of the micro-batch
    fsdp2 = _strategy(version=2)
    layers, micro_batches = llama8b().layers, 8 / (2 * 2)
    assert _host_excess_s(_training(), _strategy()) - _host_excess_s(_training(), fsdp2) == pytest.approx(
        got * layers * micro_batches, rel=1e-6)


@pytest.mark.parametrize("case", ["fsdp2", "full_finetune", "deepspeed_engine", "shard_grad_op"])
def test_nothing_where_the_mechanism_is_absent(case):
    training, strategy = _training(), _strategy()
    if case == "fsdp2":  # fully_shard: no flat-parameter units, no FSDP1 rate limiter
        strategy = _strategy(version=2)
    elif case == "full_finetune":  # one unit a decoder layer, no adapter units
        training = _training("full")
    elif case == "deepspeed_engine":  # zero 3 without fsdp: DeepSpeed's coordinator
        strategy = _strategy(fsdp="none")
    else:  # SHARD_GRAD_OP keeps the parameters after the forward: no free enqueued, no sync
        strategy = _strategy(zero=2)
    assert _excess(training, strategy) == 0.0


def test_bounded_by_the_units_host_calls_in_full():
    k = load_constants().raw["lora"]
    op_s = step_time._launch_op_s("nvidia")
    units, calls = k["fsdp1_units_per_adapter"], k["fsdp1_unit_calls"]
    full = len(TARGETS) * units * op_s * (2 * calls["forward"] + calls["backward"])  # full recompute: 2 forwards
    assert 0.0 < _excess() < full


@settings(max_examples=15, deadline=None)
@given(mb=hs.integers(1, 7), seq=hs.sampled_from([512, 1024, 2048, 4096]))
def test_longer_gemms_hide_more(mb, seq):
    """The base GEMM is the window the host's unit work runs in: more tokens a micro-batch expose no more of it."""
    training = _training(seq_len=seq)
    assert _excess(training, _strategy(mb + 1)) <= _excess(training, _strategy(mb)) + 1e-12


def test_each_adapted_linear_adds_its_units():
    one = _excess(_training(targets=("k_proj",)))
    two = _excess(_training(targets=("k_proj", "v_proj")))  # the same shapes under GQA: twice the exposure
    assert one > 0.0 and two == pytest.approx(2.0 * one, rel=1e-9)
