"""torchtitan's per-op SAC without the attention in its save list (strategy.sac_saves_attention false): releases before
b39377f9f (2025-12-01) listed only SDPA's flash and efficient backends in _op_sac_save_list, while their SDPA wrapper ran
cuDNN first on sm100 (PR 1196, 2025-05-14), so the backward re-ran the attention forward and its output was not kept
(compute._selective_recompute, memory._sac_unsaved_attention). docs/known-gaps.md 116."""

from __future__ import annotations

import numpy as np
import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import StrategyError
from trainsizer.estimate import compute
from trainsizer.estimate.calibration import rates
from trainsizer.estimate.memory import GIB, estimate_memory
from trainsizer.estimate.step_time import estimate_time, perf_style
from trainsizer.messages import render
from trainsizer.render.i18n import t
from trainsizer.scenario import resolve_job


def _job(framework: str = "torchtitan", compile_: bool = True, recompute: str = "selective", **strategy) -> dict:
    """Llama 3 8B on one host of 8 B200 as TorchAO's MX README ran it (FSDP 8, 1 x 8,192, per-op SAC)."""
    return {"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": 8192, "global_batch": {"sequences": 8},
            "precision": "bf16", "hardware": {"accelerator": "b200", "count": 8, "network": "ib-ndr400"},
            "strategy": {"micro_batch": 1, "recompute": recompute, "framework": framework, "fsdp": "full",
                         "torch_compile": compile_, **strategy}}


def _scenario(**kw):
    return resolve_job(_job(**kw), load_catalog())


def _step_s(**kw) -> float:
    sc = _scenario(**kw)
    return float(estimate_time(sc.model, sc.training, sc.system, sc.strategy).step_s)


def _memory(**kw):
    sc = _scenario(**kw)
    return estimate_memory(sc.model, sc.training, sc.system, sc.strategy)


def test_the_style_keeps_the_attention_and_an_unstated_job_is_todays_torchtitan():
    assert perf_style("torchtitan").sac_saves_attention
    assert _step_s() == pytest.approx(_step_s(sac_saves_attention=True))
    assert _memory().per_gpu_bytes == pytest.approx(_memory(sac_saves_attention=True).per_gpu_bytes)


def test_the_backward_reruns_one_attention_forward_a_layer():
    """The layer's backward grows by exactly its attention-core forward, and only under the per-op policy."""
    sc = _scenario()
    r = rates(sc.system, "bf16")
    shapes = compute.ModelShapes.of(sc.model)
    kw = dict(tp=1, cp=1, micro_batch=1, sp=False, ep=1, flash=True, flash_rate=r.flash_flops,
              flash_bwd_over_fwd=3.1, selective_op_policy=True)
    saved = compute.layer_times(shapes, 8192, r, recompute=1, **kw)
    unsaved = compute.layer_times(shapes, 8192, r, recompute=1, sac_attention_saved=False, **kw)
    assert float(unsaved.bwd - saved.bwd) == pytest.approx(float(saved.attn_fwd), rel=1e-9)
    assert float(unsaved.fwd) == pytest.approx(float(saved.fwd))
    for rc in (0, 2):  # no SAC: nothing is re-run on its account
        assert float(compute.layer_times(shapes, 8192, r, recompute=rc, sac_attention_saved=False, **kw).bwd) == \
            pytest.approx(float(compute.layer_times(shapes, 8192, r, recompute=rc, **kw).bwd))
    megatron = dict(kw, selective_op_policy=False)  # Megatron's selective re-runs the attention core anyway
    assert float(compute.layer_times(shapes, 8192, r, recompute=1, sac_attention_saved=False, **megatron).bwd) == \
        pytest.approx(float(compute.layer_times(shapes, 8192, r, recompute=1, **megatron).bwd))


def test_the_step_is_slower_only_under_selective():
    assert _step_s(sac_saves_attention=False) > _step_s()
    assert _step_s(recompute="full", sac_saves_attention=False) == pytest.approx(_step_s(recompute="full"))
    assert _step_s(recompute="none", sac_saves_attention=False) == pytest.approx(_step_s(recompute="none"))


def test_compiled_blocks_keep_less_by_the_attention_output_and_lse():
    """Compiled, the 32 blocks each drop their attention output (16-bit, 4,096 wide) and fp32 log-sum-exp (32
    heads) at 8,192 tokens: 32 x 8,192 x (2 x 4,096 + 4 x 32) B = 2.03 GiB."""
    base, unsaved = _memory(), _memory(sac_saves_attention=False)
    dropped = base.items_bytes["layer_activations"] - unsaved.items_bytes["layer_activations"]
    assert dropped == pytest.approx(32 * 8192 * (2 * 4096 + 4 * 32), rel=1e-6)
    others = {k for k, v in base.items_bytes.items() if v != pytest.approx(unsaved.items_bytes[k])}
    assert others == {"layer_activations", "fragmentation"}  # the allocator's share of a smaller peak falls too
    assert base.per_gpu_bytes - unsaved.per_gpu_bytes == pytest.approx(dropped, rel=0.1)


def test_eager_the_rerun_block_holds_its_attention_output_again():
    """Eager, the non-reentrant checkpoint re-runs a whole block at once: the recomputed attention output joins its
    working set (one block), so the peak falls by 31 of the 32 blocks' share."""
    # the loss phase summed in (live_at_rerun loss), so the re-run block's item shows beside it (known-gaps 214)
    base = _memory(compile_=False, live_at_rerun="loss")
    unsaved = _memory(compile_=False, sac_saves_attention=False, live_at_rerun="loss")
    per_block = 8192 * (2 * 4096 + 4 * 32)
    assert base.items_bytes["layer_activations"] - unsaved.items_bytes["layer_activations"] == pytest.approx(
        32 * per_block, rel=1e-6)
    assert unsaved.items_bytes["recompute_working_set"] - base.items_bytes["recompute_working_set"] == pytest.approx(
        per_block, rel=1e-6)


def test_the_published_fa2_to_cudnn_memory_drop():
    """torchtitan PR 1196 (2025-05-14), Llama 3 8B on B200 in its default eager config (1 x 8,192, per-op SAC):
    46.39 GiB with FlashAttention-2 (saved), 44.59 GiB with cuDNN first (not in the save list): 1.80 GiB. A check of
    the mechanism's size, not a fit (the rows' other settings are not stated)."""
    drop = (_memory(compile_=False).per_gpu_bytes
            - _memory(compile_=False, attention_kernel="native", sac_saves_attention=False).per_gpu_bytes) / GIB
    assert drop == pytest.approx(46.39 - 44.59, rel=0.2)


def test_other_stacks_are_refused_in_both_languages():
    with pytest.raises(StrategyError) as err:
        _step_s(framework="megatron-core", compile_=None, sac_saves_attention=False)
    assert err.value.rule == "sac_saves_attention_framework"
    assert "'megatron-core'" in str(err.value) and "allowed: torchtitan" in str(err.value)
    zh = render("rule_sac_saves_attention_framework", "zh", {"framework": "'megatron-core'", "allowed": "torchtitan"})
    assert "sac_saves_attention" in zh and zh != str(err.value)


def test_a_job_file_states_it_and_the_field_reads_in_both_languages():
    sc = _scenario(sac_saves_attention=False)
    assert sc.strategy.sac_saves_attention is False
    assert sc.summary()["strategy"]["sac_saves_attention"] is False
    assert "torchtitan" in t("field_strategy.sac_saves_attention", "en")
    assert t("field_strategy.sac_saves_attention", "zh") != t("field_strategy.sac_saves_attention", "en")
    assert np.isfinite(_step_s(sac_saves_attention=False))
