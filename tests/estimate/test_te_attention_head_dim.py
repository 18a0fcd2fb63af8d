"""Transformer Engine's attention backend by head dim on Blackwell (docs/known-gaps.md 340 (a)): TE's cuDNN fused
attention trains d_qk and d_v up to 128 and d_qk 192 / d_v 128 on sm100 (fused_attn.cpp nvte_get_fused_attn_backend,
TE v2.5 onward; perf_constants.yaml attention.te_fused_training_sm100), so a megatron-core job whose heads are 192 wide
(Nemotron-4 340B) runs TE's flash-attn backend there and is timed at FlashAttention-2's figures; Hopper, Llama's 128,
MLA's 192 / 128 and stacks whose attention is not TE's keep the native figures."""

from __future__ import annotations

import dataclasses

import pytest

from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import PERF_STYLES, _te_attention_kernel, estimate_time
from trainsizer.models.arch import ModelArch

from .test_perf_common import b200_cluster, h100_cluster

K = load_constants()


def _wide(head_dim: int = 192) -> ModelArch:
    """An 8-layer slice of Nemotron-4 340B's shapes (18,432 / 96 heads = 192) at the given head width."""
    heads = 96 * 192 // head_dim
    return ModelArch(name=f"wide-heads-{head_dim}", family="nemotron", layers=8, hidden=18432, heads=heads,
                     kv_heads=8, ffn=73728, vocab=256000, mlp="relu2", norm="layernorm")


def _estimate(model: ModelArch, cluster, framework: str = "megatron-core", **kw):
    training = Training(seq_len=4096, global_batch_seqs=8, precision="bf16")
    st = Strategy(tp=8, dp=1, micro_batch=1, recompute="none", framework=framework, **kw)
    return estimate_time(model, training, cluster, st)


@pytest.mark.parametrize(("part", "dims", "trains"), [
    ("gb200", (192, 192), False), ("b200", (192, 192), False), ("b300", (256, 256), False),
    ("gb200", (128, 128), True), ("gb200", (64, 64), True), ("gb200", (192, 128), True),
    ("h100-sxm", (192, 192), True), ("a100-sxm-80gb", (192, 192), True)])
def test_te_fused_attention_trains_the_head_dims_its_code_admits(part, dims, trains):
    """d_qk, d_v <= 128 or the MLA pair on the sm100 families; every head dim elsewhere (Hopper's <= 256 from cuDNN
    9.5 is the native figure's own kernel; other families are not listed)."""
    assert K.te_fused_trains(part, *dims) is trains


def test_only_a_te_stack_on_blackwell_swaps_native_for_fa2():
    """megatron-core's native attention at 192 becomes fa2 on GB200; not on H100, not at 128, not MLA's 192 / 128
    (FA2 takes d_qk = d_v only), not torchtitan's cuDNN SDPA (PyTorch's own dispatch), not a stated fa2."""
    core, titan = PERF_STYLES["megatron-core"], PERF_STYLES["torchtitan"]
    gb200, h100 = dataclasses.replace(b200_cluster(), accelerator="gb200"), h100_cluster()
    mla = dataclasses.replace(_wide(), attention="mla", q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128,
                              qk_rope_head_dim=64, v_head_dim=128)
    assert mla.head_dims == (192, 128)
    assert core.te_attention and not titan.te_attention
    assert _te_attention_kernel("native", core, gb200, _wide(), K) == "fa2"
    assert _te_attention_kernel("native", core, h100, _wide(), K) == "native"
    assert _te_attention_kernel("native", core, gb200, _wide(128), K) == "native"
    assert _te_attention_kernel("native", core, gb200, mla, K) == "native"
    assert _te_attention_kernel("native", titan, gb200, _wide(), K) == "native"
    assert _te_attention_kernel("fa2", core, gb200, _wide(), K) == "fa2"


def test_the_192_wide_job_on_b200_is_timed_as_flash_attention_2_and_says_so():
    """The same step as the job stating attention_kernel fa2, slower than the cuDNN figure would make it, with a note
    naming the head dims; at 128 the native step and no note."""
    wide, narrow = _estimate(_wide(), b200_cluster()), _estimate(_wide(128), b200_cluster())
    assert wide.step_s == pytest.approx(_estimate(_wide(), b200_cluster(), attention_kernel="fa2").step_s, rel=1e-12)
    assert narrow.step_s < _estimate(_wide(128), b200_cluster(), attention_kernel="fa2").step_s
    assert any("192 / 192" in n and "flash-attn" in n for n in wide.notes)
    assert not any("flash-attn backend" in n for n in narrow.notes)


def test_hopper_keeps_the_native_figure_at_192():
    """cuDNN trains d <= 256 on sm90 (from 9.5): the H100 340B rows' attention stays native (within 3% before)."""
    est = _estimate(_wide(), h100_cluster(8))
    assert est.step_s < _estimate(_wide(), h100_cluster(8), attention_kernel="fa2").step_s
    assert not any("flash-attn backend" in n for n in est.notes)
