"""Megatron-FSDP's optim and optim_grads sharding strategies (strategy.megatron_fsdp_sharding; docs/known-gaps.md 316),
read at NVIDIA/Megatron-LM 0d8e0714: optim shards the main weights and optimizer states (ZeRO-1; the gradient buffer
whole, all-reduced on the last micro-batch), optim_grads the gradients too (ZeRO-2; reduce-scattered every micro-batch),
both without FSDP units, so every module takes the hooks (perf_constants.yaml megatron_fsdp_module_hooks)."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError, StrategyError
from trainsizer.estimate import megatron_fsdp
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Strategy
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import _megatron_fsdp_sharding_options, estimate_time, perf_style
from trainsizer.messages import msg
from trainsizer.names import MEGATRON_FSDP_SHARDINGS, MEGATRON_FSDP_ZERO
from trainsizer.render.i18n import t
from trainsizer.scenario import resolve_job

C = load_constants().raw["megatron_fsdp_module_hooks"]
JOB = {"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": 4096, "global_batch": {"sequences": 64},
       "hardware": {"accelerator": "h100-sxm-80gb", "count": 4, "network": "ib-ndr400"}}
BASE = {"framework": "megatron-core", "tp": 1, "micro_batch": 1, "recompute": "full", "distributed_optimizer": True}
LAYOUT = {"optim": {"zero": 1}, "optim_grads": {"zero": 2}, "optim_grads_params": {"fsdp": "full"}}


def _scenario(seq_len: int = 4096, **strategy):
    return resolve_job({**JOB, "seq_len": seq_len, "strategy": {**BASE, **strategy}}, load_catalog())


def _sharded(sharding: str):
    return _scenario(megatron_fsdp_sharding=sharding, **LAYOUT[sharding])


def _memory(sc):
    return estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False)


def _step_s(sc) -> float:
    return estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False).step_s


def test_the_field_takes_megatron_fsdps_three_strategies_and_names_a_bad_one():
    assert MEGATRON_FSDP_SHARDINGS == tuple(MEGATRON_FSDP_ZERO) and MEGATRON_FSDP_ZERO["optim"] == 1
    for sharding in MEGATRON_FSDP_SHARDINGS:
        assert _sharded(sharding).strategy.megatron_fsdp_sharding == sharding
    assert _scenario().strategy.megatron_fsdp_sharding is None  # unstated: as before
    with pytest.raises(SpecError, match="megatron_fsdp_sharding") as err:
        _scenario(zero=1, megatron_fsdp_sharding="zero1")
    assert "optim_grads" in str(err.value)
    assert t("field_strategy.megatron_fsdp_sharding", "zh") != t("field_strategy.megatron_fsdp_sharding", "en")


def test_each_strategy_needs_its_zero_stage_on_megatron_core():
    for sharding, zero in (("optim", 2), ("optim_grads", 1), ("optim_grads_params", 1)):
        with pytest.raises(StrategyError) as err:
            _step_s(_scenario(megatron_fsdp_sharding=sharding, zero=zero))
        assert err.value.rule == "megatron_fsdp_sharding_zero" and f"zero={zero}" in str(err.value)
    with pytest.raises(StrategyError) as err:
        _step_s(_scenario(framework="torchtitan", fsdp="full", distributed_optimizer=False,
                          megatron_fsdp_sharding="optim_grads_params"))
    assert err.value.rule == "megatron_fsdp_sharding_framework"
    assert "需要 zero=1" in msg("rule_megatron_fsdp_sharding_zero", sharding="optim", stage=1, zero=2).tr("zh")


def test_memory_per_gpu_falls_as_each_strategy_shards_more():
    """After the step and at the peak: optim (16-bit weights and fp32 gradients whole) > optim_grads (gradients
    sharded) > optim_grads_params (weights sharded too), on 4 GPUs."""
    after = [_memory(_sharded(s)).after_step_bytes for s in MEGATRON_FSDP_SHARDINGS]
    peak = [_memory(_sharded(s)).per_gpu_bytes for s in MEGATRON_FSDP_SHARDINGS]
    assert after[0] > after[1] > after[2] and peak[0] > peak[1] > peak[2], (after, peak)
    m = _sharded("optim").model
    n = sum(m.layer_params(i).total for i in range(m.layers)) + m.embedding_params + m.lm_head_params
    # optim -> optim_grads: the fp32 gradient buffer's 3/4 leaves each of the 4 GPUs (grad_reduce_in_fp32 default)
    assert after[0] - after[1] == pytest.approx(4.0 * n * 3 / 4, rel=0.05)


def test_optim_all_reduces_once_and_optim_grads_reduce_scatters_every_micro_batch():
    style = perf_style("megatron-core")
    assert _megatron_fsdp_sharding_options(Strategy(zero=1, megatron_fsdp_sharding="optim"), style) == {
        "megatron_fsdp_modules": True, "zero1_grad_allreduce": True}
    assert _megatron_fsdp_sharding_options(Strategy(zero=2, megatron_fsdp_sharding="optim_grads"), style) == {
        "megatron_fsdp_modules": True, "zero2_micro_batch_reduce": True}
    assert _megatron_fsdp_sharding_options(Strategy(zero=3, megatron_fsdp_sharding="optim_grads_params"), style) == {}


def test_a_qwen3_layer_makes_82_hook_calls_a_micro_batch_written_out():
    """16 modules (the q / k norms TENorm, IdentityOp without QK norm: called either way), 15 with an input that
    requires grad (not cross_attn_bda): 2 x 16 pre-hooks + 15 Functions forward, 15 backward, 8 tensors'
    main-gradient views (2 each) and the 4 norms' copies: 82 (Llama: 6 tensors, 2 copies: 76)."""
    modules, with_grad = megatron_fsdp.layer_modules(C, False, False)
    assert (modules, with_grad) == (16.0, 15.0)
    tensors, copied = megatron_fsdp.layer_tensors(True, 1.0, 0.0, False, 1.0, False)
    assert megatron_fsdp.module_calls(C, modules, with_grad, tensors, copied, 0.0) == 2 * 16 + 15 + 15 + 16 + 4 == 82
    assert megatron_fsdp.module_calls(C, modules, with_grad, tensors, copied, 1.0) == 82 + 2 * 16 + 15
    assert megatron_fsdp.module_calls(C, modules, with_grad, 6.0, 2.0, 0.0) == 82 - 2 * 2 - 2 == 76
    assert megatron_fsdp.layer_modules(C, True, True) == (16.0 + 2 + 3, 15.0 + 2 + 3)


def test_the_hooks_make_the_step_slower_than_megatron_cores_own_zero():
    """The same ZeRO-1 / 2 layout without the field is Megatron-Core's DDP and distributed optimizer: no module hooks.
    At 1,024 tokens a micro-batch the layer's host time is near its GPU time (the course's runs, perf_heldout74), so the
    hooks show; at 4,096 the GPU hides most of them (the soft maximum of step_time._host_excess)."""
    for sharding in ("optim", "optim_grads"):
        short, long = (_step_s(_scenario(seq, **LAYOUT[sharding])) for seq in (1024, 4096))
        with_hooks = [_step_s(_scenario(seq, megatron_fsdp_sharding=sharding, **LAYOUT[sharding])) for seq in (1024, 4096)]
        assert with_hooks[0] > short * 1.05 and long < with_hooks[1] < long * 1.02, (sharding, short, long, with_hooks)
