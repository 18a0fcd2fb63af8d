"""The step's gradient / weight passes beyond the fused update (step_time._step_passes): Megatron-LM's gradient norm
read and separate master -> model weight copy over the parameters a rank updates, and its gradient buffer cleared
over every local parameter (perf_constants.yaml frameworks: megatron step_update_extra_bytes / grad_buffer_zero_bytes);
Megatron-Core's the same, its bf16 gradient shard cast to fp32 and its buffer cleared in the reduce dtype; torch DDP's
bucket copies and torch-style clipping (the HF Trainer; nanotron as megatron with strategy.ddp_impl torch)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.errors import StrategyError
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time, perf_style

from .test_perf_common import h100_cluster, llama8b

K = load_constants()


def _optimizer_s(style, tp=1, dp=8, **extra) -> float:
    training = Training(seq_len=4096, global_batch_seqs=dp, precision="bf16")
    st = Strategy(dp=dp, tp=tp, micro_batch=1, recompute="full", **extra)
    system = h100_cluster(dp * tp)
    return estimate_time(llama8b(), training, system, st, framework_style=style).breakdown_s["optimizer"]


def _passes(tp=1, dp=8, **extra) -> float:
    """optimizer seconds with the megatron style's passes less without them."""
    off = dataclasses.replace(perf_style("megatron"), step_update_extra_bytes=0.0, grad_buffer_zero_bytes=0.0)
    return _optimizer_s(perf_style("megatron"), tp, dp, **extra) - _optimizer_s(off, tp, dp, **extra)


def _hbm() -> float:
    return h100_cluster().hbm_gb_s * 1e9 * K.hbm_efficiency


def test_megatron_counts_norm_copy_and_zero_the_fsdp_styles_none():
    mega = perf_style("megatron")
    assert (mega.step_update_extra_bytes, mega.grad_buffer_zero_bytes) == (8.0, 4.0)
    for name in ("torchtitan", "deepspeed", "torchtune", "fsdp"):
        style = perf_style(name)
        assert style.step_update_extra_bytes == 0.0 and style.grad_buffer_zero_bytes == 0.0
        assert not (style.grad_buffer_reduce_dtype or style.main_grad_cast or style.torch_ddp
                    or style.clip_scales_always)


def test_replicated_optimizer_streams_12_bytes_per_local_parameter():
    assert _passes() == pytest.approx(12 * llama8b().params_total / _hbm(), rel=1e-6)


def test_distributed_optimizer_shards_the_norm_and_copy_not_the_zeroing():
    p = llama8b().params_total
    assert _passes(distributed_optimizer=True) == pytest.approx((8 * p / 8 + 4 * p) / _hbm(), rel=1e-6)


@settings(max_examples=15, deadline=None)
@given(tp=hs.sampled_from([1, 2, 4, 8]))
def test_passes_fall_with_tensor_parallelism(tp):
    """Each TP rank holds 1 / tp of the weights, so streams 1 / tp of the bytes (the embedding split too)."""
    assert _passes(tp=tp) == pytest.approx(_passes() / tp, rel=1e-6)


def _step_bytes(framework: str, dp: int = 8, **extra) -> float:
    """Optimizer seconds of a framework's Llama 3.1 8B job (tp 1) as HBM bytes per parameter of the model."""
    training = Training(seq_len=4096, global_batch_seqs=dp, precision="bf16")
    st = Strategy(dp=dp, micro_batch=1, recompute="full", framework=framework, **extra)
    opt = estimate_time(llama8b(), training, h100_cluster(dp), st).breakdown_s["optimizer"]
    return opt * _hbm() / llama8b().params_total


FUSED = float(K.optimizer_bytes_per_param["adamw"])  # 30 B


@pytest.mark.parametrize(("extra", "per_param"), [
    # bf16 buffer (the NeMo performance recipes): 8 + 6 B (cast) over the 1 / 8 shard updated, 2 B zeroed
    ({"distributed_optimizer": True}, (FUSED + 8 + 6) / 8 + 2),
    # fp32 buffer: no cast, 4 B zeroed
    ({"distributed_optimizer": True, "grad_reduce_in_fp32": True}, (FUSED + 8) / 8 + 4),
    ({}, FUSED + 8 + 6 + 2),  # replicated optimizer: every local parameter updated
])
def test_megatron_core_norm_copy_cast_and_buffer_zeroing(extra, per_param):
    """Megatron-Core core_r0.11.0: the shard of a bf16 gradient buffer cast to fp32 (2 + 4 B), the norm read (4 B)
    and the master -> 16-bit parameter copy (4 B beyond the fused count's write) per updated parameter; the whole
    local gradient buffer cleared in its dtype (zero_grad_buffer)."""
    assert _step_bytes("megatron-core", **extra) == pytest.approx(per_param, abs=0.05)


def test_hf_ddp_copies_each_gradient_into_its_bucket_and_back_and_clips_every_gradient():
    """HF Trainer under torch DDP (ZeRO 0, 8 ranks): norm read 4 B, torch clip_grad_norm_'s multiply 4 + 4 B, DDP's
    bucket copy in and out 2 x (2 + 2) B = 20 B per parameter beyond the fused update; one GPU has no DDP (12 B);
    ZeRO-1 runs DeepSpeed, whose buckets are not torch DDP's (the clip over the 1 / 8 shard updated)."""
    assert _step_bytes("hf") == pytest.approx(FUSED + 20, abs=0.05)
    assert _step_bytes("hf", dp=1) == pytest.approx(FUSED + 12, abs=0.05)
    assert _step_bytes("hf", zero=1) == pytest.approx((FUSED + 12) / 8, abs=0.05)


def test_nanotron_torch_ddp_adds_bucket_copies_and_an_unconditional_clip_to_megatron():
    """nanotron (framework megatron, strategy.ddp_impl torch): torch DDP's bucket copies (8 B) and its
    clip_grad_norm's multiply of every fp32 gradient (8 B) beside Megatron's passes; ddp_impl megatron is the
    style's own."""
    mega = _step_bytes("megatron")
    assert mega == pytest.approx(FUSED + 12, abs=0.05)
    assert _step_bytes("megatron", ddp_impl="torch") == pytest.approx(mega + 16, abs=0.05)
    assert _step_bytes("megatron", ddp_impl="megatron") == pytest.approx(mega, rel=1e-9)
    assert _step_bytes("hf", ddp_impl="torch") == pytest.approx(_step_bytes("hf"), rel=1e-9)


@pytest.mark.parametrize(("framework", "impl"), [
    ("megatron-core", "torch"), ("torchtitan", "torch"), ("hf", "megatron"), ("deepspeed", "megatron")])
def test_ddp_impl_refused_where_the_framework_does_not_run_it(framework, impl):
    with pytest.raises(StrategyError, match="ddp_impl_framework") as err:
        _step_bytes(framework, zero=3 if framework == "torchtitan" else 0, ddp_impl=impl)
    assert impl in str(err.value) and "leave ddp_impl unset" in str(err.value)


def test_ddp_impl_in_a_job_file_reaches_the_estimate_and_an_unknown_value_is_refused():
    from trainsizer.catalog import load_catalog
    from trainsizer.errors import SpecError
    from trainsizer.scenario import resolve_job

    job = {"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": 4096, "global_batch": {"sequences": 64},
           "hardware": {"accelerator": "h100-sxm-80gb", "count": 8},
           "strategy": {"tp": 2, "framework": "megatron", "ddp_impl": "torch"}}
    sc = resolve_job(job, load_catalog())
    assert sc.strategy.ddp_impl == "torch" and sc.summary()["strategy"]["ddp_impl"] == "torch"
    with pytest.raises(SpecError, match="ddp_impl"):
        resolve_job({**job, "strategy": {**job["strategy"], "ddp_impl": "apex"}}, load_catalog())


@pytest.mark.parametrize("style", ["hf", "torchtune"])
@pytest.mark.parametrize("m", [1, 2, 4])
def test_autograd_accumulation_adds_each_later_micro_batch_into_grad(style, m):
    """The HF Trainer (DDP's no_sync steps, or one GPU) and torchtune on one device accumulate in `.grad`: every
    micro-batch after the first adds its bf16 gradients in place (AccumulateGrad, 2 + 2 read, 2 written), so a step
    of m micro-batches pays 6 (m - 1) B per parameter; none with a single micro-batch or under ZeRO / FSDP."""
    training = Training(seq_len=2048, global_batch_seqs=m, precision="bf16")
    st = Strategy(dp=1, micro_batch=1, recompute="full")
    on = perf_style(style)
    off = dataclasses.replace(on, autograd_grad_accum=False)
    system = h100_cluster(1)
    extra = (estimate_time(llama8b(), training, system, st, framework_style=on).step_s
             - estimate_time(llama8b(), training, system, st, framework_style=off).step_s)
    assert extra == pytest.approx(6.0 * (m - 1) * llama8b().params_total / _hbm(), rel=1e-6, abs=1e-12)
    sharded = Strategy(dp=1, micro_batch=1, recompute="full", zero=3)
    assert estimate_time(llama8b(), training, system, sharded, framework_style=on).step_s == pytest.approx(
        estimate_time(llama8b(), training, system, sharded, framework_style=off).step_s, rel=1e-12)


def test_deepspeed_zero3_step_counts_its_norm_cast_unscale_and_copy():
    """DeepSpeed's ZeRO-3 step (stage3.py at v0.16.6) over the 1 / 8 partition a rank updates: the float64 norm of
    each bf16 gradient (18 B), the fp32 cast of the flattened sub-group (10 B), the unscale (8 B) and the fp32 ->
    16-bit copy's read (4 B): 40 B beyond the fused update, on the deepspeed style and on an hf job that runs
    DeepSpeed's engine (fsdp unset), in place of the HF Trainer's clipping, which accelerate skips under DeepSpeed.
    An hf job on FSDP keeps the Trainer's norm read and multiply (12 B); ZeRO-2 is not this step."""
    assert perf_style("deepspeed").zero3_step_update_bytes == 40.0
    assert perf_style("hf").zero3_step_update_bytes == 0.0  # the hf style takes it with DeepSpeed's engine only
    assert _step_bytes("deepspeed", zero=3) == pytest.approx((FUSED + 40) / 8, abs=0.05)
    assert _step_bytes("hf", zero=3) == pytest.approx((FUSED + 40) / 8, abs=0.05)
    assert _step_bytes("hf", zero=3, fsdp="full") == pytest.approx((FUSED + 12) / 8, abs=0.05)
    assert _step_bytes("deepspeed", zero=2) == pytest.approx(FUSED / 8, abs=0.05)
    # torch AdamW's foreach step on the fp32 partition (20 element passes of 4 B) beside DeepSpeed's passes
    foreach = 4.0 * float(K.raw["optimizer"]["foreach_adamw_element_passes"])
    assert _step_bytes("hf", zero=3, optimizer_impl="foreach") == pytest.approx((foreach + 40) / 8, abs=0.05)


def test_deepspeed_v03_on_demand_zero3_keeps_no_step_passes():
    """DeepSpeed v0.3-v0.5's stage 3 (zero3_prefetch false: the Narayanan 2021 rows) is not the step read for
    zero3_step_update_bytes, so none of it is charged there."""
    v03 = dataclasses.replace(perf_style("deepspeed"), zero3_prefetch=False)
    off = dataclasses.replace(v03, zero3_step_update_bytes=0.0)
    assert _optimizer_s(v03, zero=3) == pytest.approx(_optimizer_s(off, zero=3), rel=1e-12)
    on = perf_style("deepspeed")
    assert _optimizer_s(on, zero=3) > _optimizer_s(dataclasses.replace(on, zero3_step_update_bytes=0.0), zero=3)
