"""DeepSpeed v0.3's fp16 ZeRO-1 step (zero/stage1.py, EleutherAI DeeperSpeed eb7f5cf): the overflow check and the
gradient norm read every local gradient tensor with a host read each (step_time._fp16_serial_checks)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from trainsizer.estimate.calibration import load_constants, rates
from trainsizer.estimate.compute import stream_time
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time, param_tensors, perf_style

from .test_perf_common import a100_cluster, gpt

# GPT-NeoX-like: LayerNorm, biases everywhere, untied embeddings
NEOX = gpt(layers=16, hidden=2048, heads=16, vocab=50304).with_(position="rope", qkv_bias=True, out_bias=True,
                                                               mlp_bias=True)
DS = perf_style("deepspeed")
OFF = replace(DS, fp16_zero1_serial_checks=False)


def _opt(style, precision="fp16", zero=1, tp=1, pp=1):
    st = Strategy(tp=tp, pp=pp, dp=64 // (tp * pp), zero=zero, micro_batch=8, recompute="full")
    tr = Training(precision=precision, seq_len=2048, global_batch_seqs=512)
    return estimate_time(NEOX, tr, a100_cluster(64), st, framework_style=style).breakdown_s["optimizer"]


def test_gpt_neox_layer_holds_twelve_parameter_tensors():
    # 2 LayerNorms (weight, bias), query_key_value, dense, dense_h_to_4h, dense_4h_to_h (weight, bias);
    # embed_in, embed_out, final LayerNorm (weight, bias)
    assert param_tensors(NEOX, 1) == 12 + 4
    assert param_tensors(NEOX, 16) == 16 * 12 + 4


def test_fp16_zero1_step_reads_every_local_gradient_twice_with_a_host_read_per_tensor():
    assert DS.fp16_zero1_serial_checks
    extra = _opt(DS) - _opt(OFF)
    r = rates(a100_cluster(64), "fp16", load_constants())
    want = stream_time(NEOX.params_total * 20.0, r, kernels=6.0 * param_tensors(NEOX, NEOX.layers))
    assert extra == pytest.approx(float(want), rel=1e-9)
    assert extra > 0.0


def test_tensor_parallel_ranks_read_their_shards_but_as_many_tensors():
    extra_tp = _opt(DS, tp=4) - _opt(OFF, tp=4)
    r = rates(a100_cluster(64), "fp16", load_constants())
    want = stream_time(NEOX.params_total / 4 * 20.0, r, kernels=6.0 * param_tensors(NEOX, NEOX.layers))
    assert extra_tp == pytest.approx(float(want), rel=1e-9)


@pytest.mark.parametrize(("precision", "zero", "style"), [
    ("bf16", 1, DS),  # BF16_Optimizer: no overflow check
    ("fp16", 2, DS),  # stage 2 checks its partition
    ("fp16", 3, DS),
    ("fp16", 1, perf_style("megatron")),
])
def test_only_deepspeed_fp16_zero1(precision, zero, style):
    assert _opt(style, precision, zero) == pytest.approx(_opt(replace(style, fp16_zero1_serial_checks=False),
                                                              precision, zero), rel=1e-12)


def test_fp16_gradients_accumulate_in_place_after_the_first_micro_batch():
    assert DS.fp16_grad_accum_bytes == 6.0
    no_acc = replace(DS, fp16_grad_accum_bytes=0.0)

    def compute(style, gbs):
        st = Strategy(tp=1, pp=1, dp=64, zero=1, micro_batch=8, recompute="full")
        tr = Training(precision="fp16", seq_len=2048, global_batch_seqs=gbs)
        return estimate_time(NEOX, tr, a100_cluster(64), st, framework_style=style).breakdown_s["compute"]

    assert compute(DS, 512) == pytest.approx(compute(no_acc, 512), rel=1e-12)  # one micro-batch: nothing to add
    r = rates(a100_cluster(64), "fp16", load_constants())
    extra = compute(DS, 2048) - compute(no_acc, 2048)  # 4 micro-batches: 3 in-place adds
    assert extra == pytest.approx(float(stream_time(3 * NEOX.params_total * 6.0, r, kernels=0.0)), rel=1e-4)
