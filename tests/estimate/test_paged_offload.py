"""Paged optimizers (bitsandbytes PagedAdamW / PagedAdamW8bit: states in CUDA unified memory, outside the GPU
peak) for any method, and parameter offload (FSDP CPUOffload(offload_params=True)): gradients live in host memory
with the parameters."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import estimate_memory, paged_bytes_moved
from trainsizer.models import load_model
from trainsizer.scenario import resolve_job

MODEL = load_model("llama-3.1-8b")
CARD = System(accelerator="rtx-4090", gpus=1, gpus_per_node=1, memory_gib=24.0, peak_tflops={"bf16": 165.0},
              hbm_gb_s=1008.0, intra_node_gb_s=25.0)


def _est(optimizer: str, **kw):
    training = Training(method="full", seq_len=2048, global_batch_seqs=2, optimizer=optimizer)
    st = Strategy(micro_batch=2, recompute="full", framework="torchtune", **kw)
    return estimate_memory(MODEL, training, CARD, st, check=False)


def test_paged_optimizer_states_leave_the_gpu_for_host_memory():
    plain, paged = _est("adamw8bit"), _est("paged_adamw8bit")
    states = plain.items_bytes["optimizer_states"]
    assert states == pytest.approx(2 * MODEL.params_total, rel=1e-2)
    assert paged.items_bytes["optimizer_states"] == 0
    assert paged.per_gpu_bytes < plain.per_gpu_bytes - 0.9 * states
    assert paged.host_bytes_per_node >= states


def test_parameter_offload_keeps_gradients_off_the_gpu():
    on = _est("adamw", dp=1, offload="optimizer+params")
    assert on.items_bytes["gradients"] == 0 and on.items_bytes["weights"] == 0
    # the gradients go to host memory with the parameters and the optimizer states
    assert on.host_bytes_per_node >= (2 + 2 + 4) * MODEL.params_total * 0.99
    assert _est("adamw", dp=1, offload="optimizer").items_bytes["gradients"] > 0


def test_job_accepts_paged_optimizers_and_names_them_on_a_typo():
    job = {"model": "llama-3.1-8b", "method": "full", "seq_len": 2048, "data": {"tokens": 1e8},
           "global_batch": {"sequences": 2}, "optimizer": "paged_adamw8bit",
           "hardware": {"accelerator": "rtx-4090", "count": 1},
           "strategy": {"micro_batch": 2, "recompute": "full", "framework": "torchtune"}}
    assert resolve_job(job, load_catalog()).training.optimizer == "paged_adamw8bit"
    with pytest.raises(SpecError, match="paged_adamw8bit"):
        resolve_job({**job, "optimizer": "paged_adamw_8bit"}, load_catalog())


def _times(optimizer: str, memory_gib: float, micro_batch=2):
    from trainsizer.estimate.step_time import step_time_arrays

    training = Training(method="full", seq_len=2048, global_batch_seqs=2, optimizer=optimizer)
    st = Strategy(micro_batch=micro_batch, recompute="full", framework="torchtune", optimizer_in_backward=True)
    system = replace(CARD, memory_gib=memory_gib)
    return step_time_arrays(MODEL, training, system, st), paged_bytes_moved(MODEL, training, system, st)


def test_paged_states_that_do_not_fit_cross_the_host_link_every_step():
    """8B full fine-tune with PagedAdamW8bit and the optimizer in the backward (torchtune 8B_full_single_device):
    15 GiB of states do not fit beside the weights on a 24 GiB card, so all of them cross PCIe each step (the
    driver evicts the oldest chunk first: a pass over more than the room finds none resident); on an 80 GiB card
    they stay and nothing is charged."""
    small, moved = _times("paged_adamw8bit", 24.0)
    big, none = _times("paged_adamw8bit", 80.0)
    states = _est("adamw8bit").items_bytes["optimizer_states"]
    assert float(none) == 0.0 and float(moved) == pytest.approx(states, rel=1e-3)
    seconds = float(small["optimizer"] - big["optimizer"])
    assert seconds == pytest.approx(states / (CARD.pcie_gb_s * 1e9), rel=1e-3)
    assert float(small["step_s"] - big["step_s"]) == pytest.approx(seconds)
    # an optimizer whose states stay on the GPU pages nothing
    assert _times("adamw8bit", 24.0)[1] == 0.0


def test_paged_bytes_are_per_strategy_in_arrays():
    """On a 34 GiB card the states fit beside micro-batch 1's activations, not beside micro-batch 2's."""
    _, moved = _times("paged_adamw8bit", 34.0, micro_batch=np.array([1, 2]))
    assert moved[0] == 0.0 < moved[1]
    for i, b in enumerate((1, 2)):
        assert float(moved[i]) == pytest.approx(float(_times("paged_adamw8bit", 34.0, micro_batch=b)[1]))


@settings(max_examples=15, deadline=None)
@given(st.floats(16.0, 96.0), st.floats(0.0, 32.0))
def test_more_memory_never_pages_more(memory_gib, more_gib):
    small = float(_times("paged_adamw8bit", memory_gib)[1])
    large = float(_times("paged_adamw8bit", memory_gib + more_gib)[1])
    assert 0.0 <= large <= small <= _est("adamw8bit").items_bytes["optimizer_states"] * 1.001
