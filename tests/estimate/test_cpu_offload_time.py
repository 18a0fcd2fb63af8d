"""The optimizer step under CPU offload streams host memory: CPU-Adam's rate (ZeRO-Offload) scaled by the bytes
the update moves per parameter (torchtune's bf16 fused AdamW: 14 of CPU-Adam's 30), and FSDP2's CPUOffloadPolicy
copies the gradient shard down during the backward instead of around the step. A framework that keeps its states
in the model dtype streams fewer bytes on the GPU too."""

from __future__ import annotations

import pytest

from trainsizer.errors import SpecError
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time

from .test_perf_common import a100_cluster, llama8b

K = load_constants()


def _opt_s(framework: str, offload: str, optimizer: str = "adamw") -> float:
    training = Training(method="full", seq_len=2048, global_batch_seqs=16, optimizer=optimizer)
    st = Strategy(dp=8, zero=3, micro_batch=2, recompute="full", offload=offload, framework=framework)
    return estimate_time(llama8b(), training, a100_cluster(8), st).breakdown_s["optimizer"]


def test_cpu_step_scales_with_the_bytes_the_update_moves():
    upd = llama8b().params_total / 8
    ds = _opt_s("deepspeed", "optimizer")
    tt = _opt_s("torchtune", "optimizer+params")
    rate = K.cpu_adam_params_per_s_per_gpu
    # DeepSpeed: CPU-Adam at its measured rate, plus fp32 gradients down and 16-bit parameters up
    assert ds >= upd / rate
    # torchtune: 14 of 30 bytes per parameter, the gradient copy hidden in the backward
    assert tt == pytest.approx(upd / rate * 14 / 30, rel=0.02)
    assert tt < ds / 2


def test_model_dtype_states_stream_fewer_bytes_on_the_gpu():
    assert _opt_s("torchtune", "none") < _opt_s("hf", "none") * 0.6
    assert _opt_s("torchtune", "none", "adamw8bit") < _opt_s("torchtune", "none")


def test_foreach_adamw_streams_twenty_passes_of_the_parameter_dtype():
    """torch.optim.AdamW without fused=True runs the multi-tensor (foreach) step: 20 element reads / writes per
    parameter in the parameter dtype (2 B under torchtune's bf16) against the fused kernel's 14 B."""
    training = Training(method="full", seq_len=2048, global_batch_seqs=2, optimizer="adamw")

    def opt(impl):
        st = Strategy(dp=1, micro_batch=2, recompute="full", framework="torchtune", optimizer_impl=impl)
        return estimate_time(llama8b(), training, a100_cluster(1), st).breakdown_s["optimizer"]

    fused, foreach = opt(None), opt("foreach")
    assert opt("fused") == fused
    assert foreach > 2.5 * fused  # 40 / 14 B of streaming, the kernel launches the same
    with pytest.raises(SpecError):
        opt("forEach")


def test_job_file_names_the_optimizer_implementations():
    import typing

    from trainsizer.names import OPTIMIZER_IMPLS
    from trainsizer.spec import job

    assert typing.get_args(job.OptimizerImpl) == OPTIMIZER_IMPLS
