"""Framework options a job can state: async TP / TP overlap, FP8 FSDP all-gather, activation offloading,
optimizer in backward, the attention kernel generation; and a power-capped part described through a catalog overlay."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError, StrategyError
from trainsizer.estimate import step_time
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import estimate_time
from trainsizer.scenario import resolve_job

from .test_perf_common import h100_cluster, llama8b

TR = Training(seq_len=8192, global_batch_seqs=64)


def test_async_tp_and_fp8_all_gather_are_job_options():
    m, s = llama8b(), h100_cluster(64)
    base = Strategy(tp=8, dp=8, zero=3, micro_batch=8, framework="torchtitan")
    plain = estimate_time(m, TR, s, base).breakdown_s
    overlapped = estimate_time(m, TR, s, base.with_(tp_comm_overlap=True)).breakdown_s
    assert overlapped["tp_comm"] < plain["tp_comm"]
    fp8 = Training(seq_len=8192, global_batch_seqs=64, precision="fp8", fp8_recipe="tensorwise")
    st = Strategy(dp=64, zero=3, micro_batch=1, framework="torchtitan")
    gathered = estimate_time(m, fp8, s, st.with_(fp8_param_allgather=True)).breakdown_s["dp_comm"]
    assert gathered < estimate_time(m, fp8, s, st).breakdown_s["dp_comm"]


def test_activation_offload_and_optimizer_in_backward_lower_gpu_memory():
    m, s = llama8b(), h100_cluster(8)
    st = Strategy(dp=8, zero=3, micro_batch=1, recompute="none", framework="torchtune")
    tr = Training(method="full", seq_len=8192, global_batch_seqs=8)
    base = estimate_memory(m, tr, s, st)
    off = estimate_memory(m, tr, s, st.with_(activation_offload=True))
    assert off.items_bytes["layer_activations"] < base.items_bytes["layer_activations"] / 8
    assert off.host_bytes_per_node > base.host_bytes_per_node
    # torchtune frees the gradients each step: the fused step lowers the end of the backward, where every gradient
    # is live (full recompute, a short sequence); under a long sequence without recompute the loss phase, which
    # holds only the LM head's gradient, is the peak either way
    short, ac = Training(method="full", seq_len=1024, global_batch_seqs=8), st.with_(recompute="full")
    unfused = estimate_memory(m, short, s, ac)
    fused = estimate_memory(m, short, s, ac.with_(optimizer_in_backward=True))
    assert fused.items_bytes["gradients"] < unfused.items_bytes["gradients"]
    assert fused.per_gpu_bytes < unfused.per_gpu_bytes
    assert estimate_memory(m, tr, s, st.with_(optimizer_in_backward=True)).per_gpu_bytes <= base.per_gpu_bytes
    with pytest.raises(StrategyError, match="optimizer_in_backward"):
        estimate_memory(m, Training(method="full", seq_len=8192, global_batch_seqs=16), s,
                        st.with_(optimizer_in_backward=True))



def test_a_layer_count_of_activation_offload_is_megatron_core_only():
    """activation_offload: N is Megatron-Core's cpu_offloading_num_layers; true (every layer) is torchtune's."""
    m, s = llama8b(), h100_cluster(8)
    st = Strategy(dp=8, zero=3, micro_batch=1, recompute="none")
    tr = Training(method="full", seq_len=8192, global_batch_seqs=8)
    for fw in ("hf", "torchtune", "torchtitan"):
        with pytest.raises(StrategyError, match="cpu_offloading_num_layers"):
            estimate_memory(m, tr, s, st.with_(framework=fw, activation_offload=8))
        estimate_memory(m, tr, s, st.with_(framework=fw, activation_offload=True))
    mc = Strategy(dp=8, micro_batch=1, recompute="none", distributed_optimizer=True, framework="megatron-core")
    assert estimate_memory(m, tr, s, mc.with_(activation_offload=8)).per_gpu_bytes < \
        estimate_memory(m, tr, s, mc).per_gpu_bytes

def test_a_layer_count_of_activation_offload_under_auto_is_judged_on_the_resolved_stack():
    """framework auto resolves per strategy (framework.auto_index): a data-parallel layout resolves to hf,
    which has no cpu_offloading_num_layers, so N is refused there and the error says what auto became."""
    m, s = llama8b(), h100_cluster(8)
    tr = Training(method="full", seq_len=8192, global_batch_seqs=8)
    for dp_only in (Strategy(dp=8, micro_batch=1, recompute="none", activation_offload=8),  # -> hf
                    Strategy(dp=8, zero=3, micro_batch=1, recompute="none", activation_offload=8)):
        with pytest.raises(StrategyError, match="cpu_offloading_num_layers") as err:
            estimate_memory(m, tr, s, dp_only)
        assert "hf" in str(err.value)
    fsdp_tp = Strategy(tp=2, dp=4, zero=3, micro_batch=1, recompute="none", activation_offload=8)  # -> torchtitan
    with pytest.raises(StrategyError, match="torchtitan"):
        estimate_memory(m, tr, s, fsdp_tp)
    for mega in (Strategy(dp=8, micro_batch=1, recompute="none", distributed_optimizer=True, activation_offload=8),
                 Strategy(tp=2, dp=4, micro_batch=1, recompute="none", activation_offload=8)):
        estimate_memory(m, tr, s, mega)  # auto -> megatron-core: accepted


def test_the_auto_offload_refusal_is_masked_per_strategy_in_a_batch():
    """The search's mask judges each strategy of a batch on the stack auto picks for it."""
    import numpy as np

    from trainsizer.estimate.validate import valid_mask

    m, s = llama8b(), h100_cluster(8)
    tr = Training(method="full", seq_len=8192, global_batch_seqs=8)
    batch = Strategy(tp=np.array([1, 2, 1]), dp=np.array([8, 4, 8]), zero=np.array([0, 0, 0]),
                     micro_batch=1, recompute="none", distributed_optimizer=np.array([False, False, True]),
                     activation_offload=8)
    assert valid_mask(m, tr, s, batch).tolist() == [False, True, True]


def test_power_capped_96gb_h100_through_a_catalog_overlay(tmp_path):
    """torchtitan's Grand Teton H100: 96 GB held at 500 W, said in the user's own catalog overlay."""
    path = tmp_path / "teton.yaml"
    path.write_text(textwrap.dedent("""
        date: 2026-12-01
        accelerators:
          h100-sxm-80gb: {memory_gib: 96, power_limit_w: 500}
    """), encoding="utf-8")
    job = {"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": 8192, "global_batch": {"sequences": 16},
           "hardware": {"accelerator": "h100-sxm-80gb", "count": 8},
           "strategy": {"fsdp": "full", "micro_batch": 2, "framework": "torchtitan"}}
    capped = resolve_job(job, load_catalog([path]))
    stock = resolve_job(job, load_catalog())
    assert capped.system.power_limit_w == 500 and capped.system.memory_gib == 96
    t = [estimate_time(sc.model, sc.training, sc.system, sc.strategy).step_s for sc in (capped, stock)]
    assert t[0] > t[1]


def test_megatron_bf16_gradient_buffers_and_fp8_primary_weights():
    """grad_reduce_in_fp32 false: bf16 gradient buffer (2 B/param) instead of the fp32 main_grad, and the
    distributed optimizer's fp32 cast of its shard at the step; fp8_param_gather: GEMM weights stored in FP8."""
    m, s = llama8b(), h100_cluster(8)
    st = Strategy(dp=8, micro_batch=1, recompute="full", distributed_optimizer=True, framework="megatron-core")
    base = estimate_memory(m, TR, s, st)
    half = estimate_memory(m, TR, s, st.with_(grad_reduce_in_fp32=False))
    params = m.params_total
    assert base.items_bytes["grad_accum_buffer"] == pytest.approx(4 * params, rel=1e-9)
    assert half.items_bytes.get("grad_accum_buffer", 0.0) == 0.0
    if half.peak_phase == "optimizer step":  # the fp32 cast of the shard: 4 B per parameter over 8 ranks
        assert half.items_bytes["optimizer_step_grad_buffers"] == pytest.approx(4 * params / 8, rel=1e-9)
    else:
        assert half.items_bytes["gradients"] == pytest.approx(2 * params, rel=1e-9)
    assert half.per_gpu_bytes < base.per_gpu_bytes - 1.5 * params
    fp8 = Training(seq_len=8192, global_batch_seqs=64, precision="fp8")
    cached = estimate_memory(m, fp8, s, st.with_(fp8_param_allgather=False))
    primary = estimate_memory(m, fp8, s, st.with_(fp8_param_allgather=True))
    saved = cached.items_bytes["weights"] - primary.items_bytes["weights"]
    gemm = params - 2 * m.vocab * m.hidden  # the linear layers (embedding and LM head stay bf16)
    assert saved == pytest.approx(gemm, rel=0.01)
    assert primary.items_bytes["fp8_weight_cache"] == pytest.approx(cached.items_bytes["fp8_weight_cache"] / 2)
    # the option is Megatron-Core's: a DeepSpeed / HF job keeps its 16-bit gradients and weights
    hf = Strategy(dp=8, zero=1, micro_batch=1, recompute="full", framework="hf")
    assert estimate_memory(m, TR, s, hf.with_(grad_reduce_in_fp32=False)).per_gpu_bytes == \
        estimate_memory(m, TR, s, hf).per_gpu_bytes


def test_megatron_core_fp8_defaults_to_fp8_primary_weights_as_nemo_2_recipes():
    """Unset, strategy.fp8_param_allgather takes the style's default: on in megatron-core (NeMo 2.0's
    bf16_with_fp8_mixed sets fp8_params), off in 2020-2022 Megatron-LM; memory and step time agree on it."""
    m, s = llama8b(), h100_cluster(64)
    fp8 = Training(seq_len=8192, global_batch_seqs=64, precision="fp8")
    st = Strategy(dp=64, micro_batch=1, recompute="full", distributed_optimizer=True, framework="megatron-core")
    unset, on, off = (estimate_memory(m, fp8, s, st.with_(fp8_param_allgather=v)) for v in (None, True, False))
    assert unset.per_gpu_bytes == on.per_gpu_bytes < off.per_gpu_bytes
    t_unset, t_on, t_off = (estimate_time(m, fp8, s, st.with_(fp8_param_allgather=v)).breakdown_s["dp_comm"]
                            for v in (None, True, False))
    assert t_unset == t_on < t_off
    auto = st.with_(framework="auto")  # the distributed optimizer: auto assumes megatron-core
    assert estimate_memory(m, fp8, s, auto).per_gpu_bytes == on.per_gpu_bytes
    # Megatron FSDP (ZeRO-3): NeMo turns fp8_param_gather off there, so the default is off
    fsdp = st.with_(distributed_optimizer=False, zero=3)
    assert estimate_memory(m, fp8, s, fsdp).per_gpu_bytes == \
        estimate_memory(m, fp8, s, fsdp.with_(fp8_param_allgather=False)).per_gpu_bytes
    assert estimate_time(m, fp8, s, fsdp).step_s == estimate_time(m, fp8, s, fsdp.with_(fp8_param_allgather=False)).step_s
    old = st.with_(framework="megatron")
    assert estimate_memory(m, fp8, s, old).per_gpu_bytes == \
        estimate_memory(m, fp8, s, old.with_(fp8_param_allgather=False)).per_gpu_bytes
    # BF16 training has no FP8 weights whatever the option says
    assert estimate_memory(m, TR, s, st).per_gpu_bytes == \
        estimate_memory(m, TR, s, st.with_(fp8_param_allgather=False)).per_gpu_bytes


def test_grad_reduce_in_fp32_is_a_job_option_and_sets_the_wire_dtype():
    m, s = llama8b(), h100_cluster(64)
    st = Strategy(dp=64, micro_batch=1, recompute="full", distributed_optimizer=True, framework="megatron-core")
    wide = estimate_time(m, TR, s, st.with_(grad_reduce_in_fp32=True)).breakdown_s["dp_comm"]
    assert wide > estimate_time(m, TR, s, st.with_(grad_reduce_in_fp32=False)).breakdown_s["dp_comm"]
    job = {"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": 8192, "global_batch": {"sequences": 64},
           "hardware": {"accelerator": "h100-sxm-80gb", "count": 8},
           "strategy": {"distributed_optimizer": True, "grad_reduce_in_fp32": False, "framework": "megatron-core"}}
    sc = resolve_job(job, load_catalog())
    assert sc.strategy.grad_reduce_in_fp32 is False
    assert sc.summary()["strategy"]["grad_reduce_in_fp32"] is False


def test_deepspeed_zero3_step_casts_one_sub_group_at_a_time():
    """DeepSpeed ZeRO-3's optimizer step casts one sub-group (sub_group_size, 1e9 elements) of the partition to
    fp32 at a time: the step adds 6 B x min(partition, 1e9) over the model states (stage3.py step)."""
    from trainsizer.estimate.model_states import load_memory_constants

    m, s = llama8b(), h100_cluster(2)
    tr = Training(method="full", seq_len=512, global_batch_seqs=2)
    st = Strategy(dp=2, zero=3, micro_batch=1, recompute="full", framework="deepspeed")
    e = estimate_memory(m, tr, s, st)
    assert e.peak_phase == "optimizer step"
    sub = load_memory_constants()["optimizer_step"]["zero3_sub_group_params"]
    assert m.params_total / 2 > sub  # the partition is larger than one sub-group
    assert e.items_bytes["optimizer_step_grad_buffers"] == pytest.approx(6 * sub)
    # FSDP (framework fsdp / torchtitan) steps its sharded fp32 parameters in place: no such buffers
    fsdp = estimate_memory(m, tr, s, st.with_(framework="fsdp"))
    assert "optimizer_step_grad_buffers" not in fsdp.items_bytes


def test_flash_attention_v1_runs_the_attention_core_at_half_the_fa2_rate():
    """attention_kernel fa1 (GPT-NeoX / Pythia, StarCoder): FA2 is "around 2x" FA1 (arXiv:2307.08691); only the
    attention core slows, so a short-sequence wide model moves less than a long-sequence narrow one."""
    def step(model, seq, kernel):
        job = {"model": model, "data": {"tokens": 1e9}, "seq_len": seq, "global_batch": {"sequences": 64},
               "hardware": {"accelerator": "a100-sxm-80gb", "count": 8},
               "strategy": {"micro_batch": 8, "framework": "megatron", "attention_kernel": kernel}}
        sc = resolve_job(job, load_catalog())
        return estimate_time(sc.model, sc.training, sc.system, sc.strategy).step_s

    gpt = {"vocab": 50304, "mlp": "gelu", "norm": "layernorm"}
    narrow = {"layers": 12, "hidden": 768, "heads": 12, "ffn": 3072, **gpt}
    wide = {"layers": 8, "hidden": 8192, "heads": 64, "ffn": 32768, **gpt}
    slow_narrow = step(narrow, 8192, "fa1") / step(narrow, 8192, "fa2")
    slow_wide = step(wide, 1024, "fa1") / step(wide, 1024, "fa2")
    assert 1.0 < slow_wide < slow_narrow < 2.0
    assert step(narrow, 8192, None) == step(narrow, 8192, "fa2")  # the megatron style's own kernel


def test_flash_kernels_run_a_head_dim_between_their_sizes_as_the_next_one_up():
    """FA1 (flash-attn v0.2 - v1.0) is compiled for head dims 32 / 64 / 128, FA2 for 32-256 in steps of 32 up to
    192, then 256: a head dim of 80 (Pythia 2.8B) runs the 128 (FA1) or 96 (FA2) kernel; cuDNN is not rounded."""
    from trainsizer.estimate.compute import flash_head_dim_ratio

    assert flash_head_dim_ratio(80, 80, "fa1") == pytest.approx(128 / 80)
    assert flash_head_dim_ratio(80, 80, "fa2") == pytest.approx(96 / 80)
    assert flash_head_dim_ratio(80, 80, "native") == 1.0
    assert flash_head_dim_ratio(128, 128, "fa1") == flash_head_dim_ratio(64, 64, "fa2") == 1.0
    assert flash_head_dim_ratio(256, 256, "fa1") == 1.0  # above FA1's largest: taken as is
    assert flash_head_dim_ratio(192, 128, "fa2") == 1.0  # MLA's q / k and v widths, each compiled
    assert list(flash_head_dim_ratio(80, 80, np.array(["fa1", "native"]))) == pytest.approx([1.6, 1.0])

    def attention_s(heads, kernel):
        job = {"model": {"layers": 4, "hidden": 2560, "heads": heads, "ffn": 10240, "vocab": 50304, "mlp": "gelu",
                         "norm": "layernorm"},
               "data": {"tokens": 1e9}, "seq_len": 8192, "global_batch": {"sequences": 64},
               "hardware": {"accelerator": "a100-sxm-80gb", "count": 8},
               "strategy": {"micro_batch": 1, "framework": "megatron", "attention_kernel": kernel}}
        sc = resolve_job(job, load_catalog())
        return estimate_time(sc.model, sc.training, sc.system, sc.strategy).step_s

    # same width and FLOPs: 32 heads of 80 pay the padded kernel, 20 heads of 128 do not
    for kernel in ("fa1", "fa2"):
        assert attention_s(32, kernel) > attention_s(20, kernel)
    # cuDNN is not padded: heads of 80 pay only its narrow-head softmax share (calibration.narrow_head), below FA2's pad
    assert 0 < attention_s(32, "native") - attention_s(20, "native") < attention_s(32, "fa2") - attention_s(20, "fa2")
    assert attention_s(32, "fa1") - attention_s(20, "fa1") > attention_s(32, "fa2") - attention_s(20, "fa2")


def test_unknown_attention_kernel_is_a_clear_error():
    job = {"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": 4096, "global_batch": {"sequences": 8},
           "hardware": {"accelerator": "h100-sxm-80gb", "count": 8}, "strategy": {"attention_kernel": "fa4"}}
    with pytest.raises(SpecError, match="attention_kernel"):
        resolve_job(job, load_catalog())


def test_grad_reduce_overlap_is_a_job_option_and_deepspeed_zero1_reduces_after_backward():
    """DeepSpeed ZeRO-0 / ZeRO-1 reduce the gradients after the last backward (the PipelineEngine's
    _exec_reduce_grads: an all-reduce at ZeRO-1, then the all-gather), ZeRO-2 in backward hooks (reduce-scatter);
    grad_reduce_overlap overrides a style either way."""
    m, s = llama8b(), h100_cluster(64)
    tr = Training(seq_len=4096, global_batch_seqs=64)
    ds = Strategy(dp=64, micro_batch=1, recompute="full", framework="deepspeed")
    zero1 = estimate_time(m, tr, s, ds.with_(zero=1)).breakdown_s["dp_comm"]
    zero2 = estimate_time(m, tr, s, ds.with_(zero=2)).breakdown_s["dp_comm"]
    hooked = estimate_time(m, tr, s, ds.with_(zero=1, grad_reduce_overlap=True)).breakdown_s["dp_comm"]
    assert zero2 < hooked < zero1  # hooked at ZeRO-1: overlapped, still an all-reduce where ZeRO-2 reduce-scatters
    mega = Strategy(dp=64, micro_batch=1, recompute="full", distributed_optimizer=True, framework="megatron")
    after = estimate_time(m, tr, s, mega.with_(grad_reduce_overlap=False)).breakdown_s["dp_comm"]
    assert after > estimate_time(m, tr, s, mega).breakdown_s["dp_comm"]
    job = {"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": 4096, "global_batch": {"sequences": 64},
           "hardware": {"accelerator": "h100-sxm-80gb", "count": 8},
           "strategy": {"zero": 1, "grad_reduce_overlap": False, "framework": "deepspeed"}}
    _assert_yes_no_option(job, "grad_reduce_overlap", False)


def _assert_yes_no_option(job: dict, option: str, value: bool) -> None:
    """A job file's yes/no strategy option reaches the strategy and the JSON summary; any other value is refused,
    naming the option."""
    sc = resolve_job(job, load_catalog())
    assert getattr(sc.strategy, option) is value
    assert sc.summary()["strategy"][option] is value
    with pytest.raises(SpecError, match=f"{option}: must be true or false"):
        resolve_job({**job, "strategy": {**job["strategy"], option: "sometimes"}}, load_catalog())


def _unfused_extra_s(tp: int, seqs: int, mb: int) -> float:
    """Step seconds that gradient_accumulation_fusion false adds to a Megatron-Core Llama 3.1 8B job on 8 H100, over
    the fused step with its weight-gradient GEMMs' main-gradient traffic left out (step_time._wgrad_accum_rate, whose
    bytes tests/estimate/test_wgrad_accum.py checks): the separate add pass alone."""
    m, s = llama8b(), h100_cluster(8)
    tr = Training(seq_len=4096, global_batch_seqs=seqs)
    st = Strategy(tp=tp, dp=8 // tp, micro_batch=mb, recompute="full", distributed_optimizer=True,
                  framework="megatron-core")
    unfused = estimate_time(m, tr, s, st.with_(gradient_accumulation_fusion=False)).step_s
    original = step_time._wgrad_accum_rate
    try:
        step_time._wgrad_accum_rate = lambda r, *args, **kwargs: r
        return unfused - estimate_time(m, tr, s, st).step_s
    finally:
        step_time._wgrad_accum_rate = original


@settings(max_examples=12, deadline=None)
@given(tp=hs.sampled_from([1, 2, 4, 8]), mb=hs.sampled_from([1, 2]), steps=hs.sampled_from([1, 2, 4]))
def test_unfused_gradient_accumulation_costs_each_micro_batch_a_pass_over_the_local_weights(tp, mb, steps):
    """false: each micro-batch adds its 16-bit weight gradients into the fp32 main gradient by a separate kernel
    (10 B per local parameter): the added time grows with the micro-batches and shrinks with TP (pp 1: every
    parameter on each GPU, split over TP)."""
    seqs = (8 // tp) * mb * steps
    extra = _unfused_extra_s(tp, seqs, mb)
    assert extra > 0.0
    one_tp_one_mb = _unfused_extra_s(1, 8, 1)
    assert extra == pytest.approx(one_tp_one_mb * steps / tp, rel=1e-9)


def test_fused_gradient_accumulation_is_the_megatron_default_and_a_job_option_megatron_has():
    m, s = llama8b(), h100_cluster(8)
    st = Strategy(tp=2, dp=4, micro_batch=1, recompute="full", distributed_optimizer=True, framework="megatron-core")
    assert estimate_time(m, TR, s, st.with_(gradient_accumulation_fusion=True)).step_s == \
        estimate_time(m, TR, s, st).step_s
    with pytest.raises(StrategyError, match="gradient_accumulation_fusion_framework"):
        estimate_time(m, TR, s, Strategy(dp=8, zero=3, framework="torchtitan", gradient_accumulation_fusion=False))
    job = {"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": 8192, "global_batch": {"sequences": 64},
           "hardware": {"accelerator": "h100-sxm-80gb", "count": 8},
           "strategy": {"tp": 2, "gradient_accumulation_fusion": False, "framework": "megatron"}}
    _assert_yes_no_option(job, "gradient_accumulation_fusion", False)


def test_grad_bucket_params_is_a_job_option_and_small_buckets_pay_the_ring_latency_per_bucket():
    """Each gradient bucket is its own reduce-scatter (and parameter all-gather) of n - 1 ring steps: Megatron-Core
    sizes buckets max(4e7, 1e6 x DP) since 0fda386c (2024-04-11) so their count falls as DP grows; a job that states
    the old 4e7 (or its --ddp-bucket-size) pays more latency the more ranks it has."""
    m = llama8b()
    tr = Training(seq_len=4096, global_batch_seqs=1024)

    def dp_s(dp: int, **kw) -> float:
        st = Strategy(tp=8, dp=dp, micro_batch=1, distributed_optimizer=True, framework="megatron-core", **kw)
        return estimate_time(m, tr, h100_cluster(8 * dp), st).breakdown_s["dp_comm"]

    assert dp_s(256, grad_bucket_params=256e6) == pytest.approx(dp_s(256))  # the default, stated
    fixed = [dp_s(dp, grad_bucket_params=4e7) for dp in (64, 128, 256)]
    scaled = [dp_s(dp) for dp in (64, 128, 256)]
    assert all(f >= d for f, d in zip(fixed, scaled, strict=True))
    assert fixed[2] - fixed[0] > scaled[2] - scaled[0]  # fixed buckets: the latency grows with the ranks
    job = {"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": 4096, "global_batch": {"sequences": 64},
           "hardware": {"accelerator": "h100-sxm-80gb", "count": 16, "network": "ib-ndr400"},
           "strategy": {"tp": 8, "distributed_optimizer": True, "framework": "megatron-core",
                        "grad_bucket_params": 4e7}}
    sc = resolve_job(job, load_catalog())
    assert sc.strategy.grad_bucket_params == 4e7
    assert sc.summary()["strategy"]["grad_bucket_params"] == 4e7
    with pytest.raises(SpecError, match="grad_bucket_params"):
        resolve_job({**job, "strategy": {**job["strategy"], "grad_bucket_params": 0}}, load_catalog())


def test_zero1_grad_allreduce_is_a_job_option_an_all_reduce_costs_what_a_reduce_scatter_does_twice():
    """nanotron's ZeRO-1 all-reduces its whole fp32 gradient buffer after the backward (trainer.training_step
    sync_gradients_across_dp reduce_scatter=False at 0e0a27ea), where the megatron style reduce-scatters; the
    updated shards are all-gathered either way. A ring all-reduce moves twice a reduce-scatter's bytes, so the
    exposed DP term grows by one reduce-scatter; the deepspeed style's all-reduce is turned off the same way."""
    m, s = llama8b(), h100_cluster(64)
    tr = Training(seq_len=4096, global_batch_seqs=64)
    mega = Strategy(tp=8, dp=8, micro_batch=1, recompute="full", zero=1, framework="megatron",
                    grad_reduce_overlap=False, grad_reduce_in_fp32=True)
    rs = estimate_time(m, tr, s, mega).breakdown_s["dp_comm"]
    ar = estimate_time(m, tr, s, mega.with_(zero1_grad_allreduce=True)).breakdown_s["dp_comm"]
    assert estimate_time(m, tr, s, mega.with_(zero1_grad_allreduce=False)).breakdown_s["dp_comm"] == rs
    zero0 = estimate_time(m, tr, s, mega.with_(zero=0)).breakdown_s["dp_comm"]  # the all-reduce alone
    assert ar > rs and ar == pytest.approx(rs + zero0 / 2.0, rel=0.15)
    ds = Strategy(dp=64, micro_batch=1, recompute="full", zero=1, framework="deepspeed")
    assert (estimate_time(m, tr, s, ds.with_(zero1_grad_allreduce=False)).breakdown_s["dp_comm"]
            < estimate_time(m, tr, s, ds).breakdown_s["dp_comm"])
    job = {"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": 4096, "global_batch": {"sequences": 64},
           "hardware": {"accelerator": "h100-sxm-80gb", "count": 8},
           "strategy": {"zero": 1, "zero1_grad_allreduce": True, "framework": "megatron"}}
    _assert_yes_no_option(job, "zero1_grad_allreduce", True)


def test_zero_init_is_a_job_option_of_deepspeeds_zero3_engine_only():
    """strategy.zero_init (known-gaps 225): false reaches the strategy and the JSON summary and raises the memory
    estimate of an HF Trainer ZeRO-3 job; with FSDP, a stated ZeRO stage other than 3, or a stack that runs no
    DeepSpeed engine, it is refused, naming the option."""
    job = {"model": "llama-3.1-8b", "method": "full", "data": {"tokens": 1e8}, "seq_len": 2048,
           "global_batch": {"sequences": 8}, "precision": "fp16",
           "hardware": {"accelerator": "a100-sxm-80gb", "count": 8},
           "strategy": {"zero": 3, "micro_batch": 1, "recompute": "none", "framework": "hf", "zero_init": False}}
    _assert_yes_no_option(job, "zero_init", False)
    for bad in ({"fsdp": "full"}, {"zero": 2}):
        with pytest.raises(SpecError, match="zero_init"):
            resolve_job({**job, "strategy": {**job["strategy"], **bad}}, load_catalog())
    tr = Training(precision="fp16", seq_len=2048, global_batch_seqs=8)
    hf = Strategy(dp=8, micro_batch=1, recompute="none", zero=3, framework="hf")
    assert (estimate_memory(llama8b(), tr, h100_cluster(8), hf.with_(zero_init=False)).per_gpu_bytes
            > estimate_memory(llama8b(), tr, h100_cluster(8), hf).per_gpu_bytes + 12 * 2**30)
    with pytest.raises(StrategyError) as err:
        estimate_memory(llama8b(), tr, h100_cluster(8), hf.with_(framework="torchtitan", zero_init=False))
    assert err.value.rule == "zero_init_framework" and "hf, deepspeed" in str(err.value)
