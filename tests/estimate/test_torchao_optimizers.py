"""torchao's low-bit AdamW as optimizers a job names (ao_adamw8bit, ao_adamw4bit, ao_adamw_fp8): their states from
torchao/optim's subclasses, their step streamed with no synchronise (docs/known-gaps.md 174)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from pydantic import ValidationError

from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.model_states import optimizer_state_bytes
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.models import load_model
from trainsizer.names import OPTIMIZERS, TORCHAO_OPTIMIZERS, optimizer_precisions_for
from trainsizer.spec.job import Job

LLAMA2 = load_model("llama-2-7b")
A100 = System(accelerator="a100-sxm-80gb", gpus=1, gpus_per_node=1, memory_gib=80.0, peak_tflops={"bf16": 312.0},
              hbm_gb_s=2039.0, intra_node_gb_s=300.0, sms=108, threads_per_sm=2048, registers_per_sm=65536,
              dram_latency_s=405e-9)


def _training(optimizer: str) -> Training:
    return Training(method="full", seq_len=2048, global_batch_seqs=2, optimizer=optimizer)


def _strategy(**kw) -> Strategy:
    return Strategy(micro_batch=2, recompute="full", framework="torchtune", **kw)


@pytest.mark.parametrize("optimizer, codes_b, block", [("ao_adamw8bit", 1.0, 256), ("ao_adamw4bit", 0.5, 128),
                                                       ("ao_adamw_fp8", 1.0, 256)])
def test_states_are_codes_and_an_fp32_scale_a_block(optimizer, codes_b, block):
    """Two moments, each its codes and one fp32 scale per block (torchao/optim subclass_*bit.py at 36027d82)."""
    assert optimizer in OPTIMIZERS and optimizer in TORCHAO_OPTIMIZERS
    assert optimizer_state_bytes(_training(optimizer), LLAMA2) == pytest.approx(2 * (codes_b + 4.0 / block))


def test_four_bit_moments_hold_half_the_eight_bit_ones_on_a_bf16_model():
    states = {o: estimate_memory(LLAMA2, _training(o), A100, _strategy()).items_bytes["optimizer_states"]
              for o in ("adamw8bit", "ao_adamw8bit", "ao_adamw4bit")}
    assert states["ao_adamw8bit"] == states["adamw8bit"]
    assert states["ao_adamw4bit"] == pytest.approx(states["ao_adamw8bit"] / 2)


def test_the_step_streams_its_bytes_with_no_synchronise_nor_bitsandbytes_kernel():
    """torchao's compiled per-parameter step: no device synchronise (bitsandbytes' 291 x host figure) and not
    bitsandbytes' latency-bound kernel: at the same bytes it is faster than adamw8bit; the 4-bit codes stream less."""
    opt = {o: float(step_time_arrays(LLAMA2, _training(o), A100, _strategy())["optimizer"].reshape(-1)[0])
           for o in ("adamw8bit", "ao_adamw8bit", "ao_adamw_fp8", "ao_adamw4bit")}
    bare = replace(A100, sms=0, dram_latency_s=0.0)
    assert opt["ao_adamw8bit"] == pytest.approx(
        float(step_time_arrays(LLAMA2, _training("ao_adamw8bit"), bare, _strategy())["optimizer"].reshape(-1)[0]))
    assert opt["ao_adamw8bit"] == opt["ao_adamw_fp8"] < opt["adamw8bit"]
    assert opt["ao_adamw4bit"] == pytest.approx(opt["ao_adamw8bit"] * 8.0 / 10.0, rel=0.02)


def test_a_job_names_them_and_their_precisions():
    base = {"model": "llama-2-7b", "method": "full", "precision": "bf16", "seq_len": 2048, "data": {"tokens": 1e8},
            "global_batch": {"sequences": 2}, "hardware": {"accelerator": "a100-sxm-80gb", "count": 1}}
    for o in TORCHAO_OPTIMIZERS:
        assert Job.model_validate({**base, "optimizer": o}).optimizer == o
        assert optimizer_precisions_for(o) == ("fp32", "bf16")
    with pytest.raises(ValidationError, match="ao_adamw4bit"):
        Job.model_validate({**base, "optimizer": "ao_adamw4bit",
                            "strategy": {"micro_batch": 2, "optimizer_precision": "bf16-moments"}})
