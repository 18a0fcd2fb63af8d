"""Paged optimizers (bitsandbytes PagedAdamW / PagedAdamW8bit: states in CUDA unified memory, outside the GPU
peak) for any method, and parameter offload (FSDP CPUOffload(offload_params=True)): gradients live in host memory
with the parameters."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import estimate_memory
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
