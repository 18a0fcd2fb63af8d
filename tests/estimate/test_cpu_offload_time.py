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


def _offload_opt_s(style, zero: int = 2, fsdp: str | None = None, precision: str = "fp16") -> float:
    """The optimizer step of an 8B full fine-tune on 8 A100s with the optimizer offloaded: under the job's framework
    `style` (a name: the job's options apply) or a PerfStyle given as is."""
    from trainsizer.estimate.step_time import step_time_arrays

    training = Training(method="full", seq_len=1024, global_batch_seqs=8, optimizer="adamw", precision=precision)
    named = isinstance(style, str)
    st = Strategy(dp=8, zero=zero, micro_batch=1, recompute="full", offload="optimizer",
                  framework=style if named else "deepspeed", fsdp=fsdp)
    out = step_time_arrays(llama8b(), training, a100_cluster(8), st, framework_style=None if named else style)
    return float(out["optimizer"])


@pytest.mark.parametrize("zero", [1, 2, 3])
def test_deepspeed_offload_unscales_in_host_memory_and_uploads_fp32(zero):
    """DeepSpeed's offload step (stage_1_and_2.py / stage3.py at v0.14.2 and v0.16.6): unscale_and_clip_grads multiplies
    the fp32 gradient partition in host memory (8 B a parameter at CPU-Adam's streaming rate); ZeRO-1/2 upload the
    updated fp32 partition whole (4 B, not the 16-bit copy's 2), ZeRO-3 casts it to 16 bits on the host first (6 B
    there): docs/known-gaps.md 251 (a)."""
    import dataclasses

    from trainsizer.estimate.step_time import perf_style

    ds = perf_style("deepspeed")
    assert (ds.offload_host_pass_bytes, ds.offload_zero3_host_cast_bytes, ds.offload_upload_bytes) == (8.0, 6.0, 4.0)
    bare = dataclasses.replace(ds, offload_host_pass_bytes=0.0, offload_zero3_host_cast_bytes=0.0,
                               offload_upload_bytes=0.0)
    upd = llama8b().params_total / 8
    pcie = a100_cluster(8).pcie_gb_s * 1e9
    # ZeRO-1/2: the unscale on the host and 2 B more up; ZeRO-3: the unscale and the 16-bit cast on the host, 2 B up
    host_b, up_b = (14.0, 0.0) if zero == 3 else (8.0, 2.0)
    want = upd * host_b / (K.cpu_adam_params_per_s_per_gpu * K.cpu_adam_bytes_per_param) + upd * up_b / pcie
    for precision in ("fp16", "bf16"):  # the multiply runs whatever the loss scale
        extra = _offload_opt_s(ds, zero, precision=precision) - _offload_opt_s(bare, zero, precision=precision)
        assert extra == pytest.approx(want, rel=1e-6)


def test_the_hf_stack_takes_the_deepspeed_offload_step_on_its_engine_only():
    """The HF Trainer hands a ZeRO job with fsdp none to DeepSpeed's engine (its offload step); under FSDP (fsdp full)
    the optimizer on the host is torch's and no unscale pass is charged."""
    import dataclasses

    from trainsizer.estimate.step_time import perf_style

    hf = perf_style("hf")
    assert (hf.offload_host_pass_bytes, hf.offload_upload_bytes) == (0.0, 0.0)
    on_engine = _offload_opt_s("hf", zero=2)
    assert on_engine == pytest.approx(_offload_opt_s("deepspeed", zero=2), rel=1e-9)
    # the style as given (no job options): torch's step on the host, neither DeepSpeed term
    assert _offload_opt_s(hf, zero=2) < on_engine
    # FSDP's parameter and optimizer offload: FSDP1's CPUOffload, not the engine's step
    fsdp = dataclasses.replace(hf, zero3_runs_deepspeed=False)
    assert _offload_opt_s(fsdp, zero=3) == pytest.approx(_offload_opt_s("hf", zero=3, fsdp="full"), rel=1e-9)


@pytest.mark.parametrize("zero", [1, 2, 3])
def test_deepspeed_cpu_adam_writes_no_16bit_weight_on_the_host(zero):
    """The engine steps DeepSpeedCPUAdam without fp16_param_groups (v0.9.0 on; read at v0.14.2 and v0.19.2), so its
    adam_update streams the fp32 master, gradient and two moments (28 B), not the fused count's 30 with the 16-bit
    write; that copy is the engine's cast / upload (docs/known-gaps.md 349 (a)). FSDP's host optimizer keeps it."""
    import dataclasses

    from trainsizer.estimate.step_time import perf_style

    ds = perf_style("deepspeed")
    assert ds.offload_update_unwritten_bytes == 2.0
    writes = dataclasses.replace(ds, offload_update_unwritten_bytes=0.0)
    upd = llama8b().params_total / 8
    want = upd * 2.0 / (K.cpu_adam_params_per_s_per_gpu * K.cpu_adam_bytes_per_param)
    assert _offload_opt_s(writes, zero) - _offload_opt_s(ds, zero) == pytest.approx(want, rel=1e-6)
    if zero >= 2:  # the HF Trainer's ZeRO job on the engine takes the engine's step (as the test above)
        assert _offload_opt_s("hf", zero) == pytest.approx(_offload_opt_s("deepspeed", zero), rel=1e-9)
    assert perf_style("hf").offload_update_unwritten_bytes == 0.0
