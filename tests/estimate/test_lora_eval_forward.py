"""An evaluation pass runs the decoder layers' LoRA adapters once, in eval mode (docs/known-gaps.md 298 (b)):
step_time_arrays' forward_compute (what estimate.evaluation times a pass with) holds the adapters' forward, PEFT's
fp32 input cast where it runs, and no dropout (nn.Dropout returns its input in eval mode)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.estimate import step_time
from trainsizer.scenario import resolve_job

CAT = load_catalog([])


def _job(dropout: float = 0.1, impl: str = "peft", recompute: str = "full", targets=None) -> dict:
    return {"model": "mistral-7b", "method": "lora", "data": {"tokens": 1e8}, "seq_len": 2048,
            "global_batch": {"sequences": 4}, "precision": "bf16",
            "lora": {"rank": 8, "targets": targets or ["q_proj", "k_proj", "v_proj", "o_proj"], "dropout": dropout,
                     "impl": impl},
            "hardware": {"accelerator": "h100-sxm-80gb", "count": 1},
            "strategy": {"micro_batch": 2, "recompute": recompute, "framework": "hf"}}


def _out(job: dict) -> dict:
    sc = resolve_job(job, CAT)
    return {k: float(np.asarray(v).reshape(-1)[0]) for k, v in
            step_time.step_time_arrays(sc.model, sc.training, sc.system, sc.strategy).items()}


def _x(job: dict) -> step_time._Step:
    sc = resolve_job(job, CAT)
    return step_time._step(sc.model, sc.training, sc.system, sc.strategy, None, None, None)


@settings(max_examples=8, deadline=None)
@given(dropout=st.sampled_from([0.05, 0.1, 0.3]), impl=st.sampled_from(["peft", "litgpt"]))
def test_the_pass_runs_no_dropout(dropout, impl):
    """The training step pays the adapter dropout; the evaluation's forward does not."""
    on, off = _out(_job(dropout, impl)), _out(_job(0.0, impl))
    assert on["forward_compute"] == pytest.approx(off["forward_compute"], rel=1e-12)
    assert on["step_s"] > off["step_s"]


@pytest.mark.parametrize("impl", ["peft", "litgpt"])
def test_the_pass_holds_one_adapter_forward(impl):
    """Without recompute or dropout the adapters' training time is their forward and backward: the evaluation's share
    is the forward alone, above zero and below the training time."""
    x = _x(_job(0.0, impl, recompute="none"))
    train, once = float(step_time._lora_adapters(x)), float(step_time._lora_adapters(x, eval_forward=True))
    assert 0.0 < once < train
    more = _out(_job(0.0, impl, targets=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj"]))
    assert more["forward_compute"] > _out(_job(0.0, impl))["forward_compute"]


def test_peft_s_cast_is_in_the_pass():
    """PEFT's fp32 input cast runs in eval as in training (lora_A.weight is fp32): its forward costs more than
    LitGPT's adapters, which keep the model's dtype."""
    peft = float(step_time._lora_adapters(_x(_job(0.0, "peft")), eval_forward=True))
    litgpt = float(step_time._lora_adapters(_x(_job(0.0, "litgpt")), eval_forward=True))
    assert peft > litgpt > 0.0
