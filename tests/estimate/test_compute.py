from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.estimate.calibration import Calibration, load_constants, rates
from trainsizer.estimate.compute import ModelShapes, gemm_time, layer_times, linear_gemms, optimizer_time

from .test_perf_common import a100_cluster, b200_cluster, gpt, h100_cluster, llama8b, mixtral


def _rates(system=None, precision="bf16", cal=None):
    return rates(system or h100_cluster(), precision, load_constants(), cal)


def _eff(m, n, k, r):
    return 2.0 * m * n * k / float(gemm_time(m, n, k, r)) / r.gemm_peak_flops


def test_big_gemm_approaches_efficiency_max_and_never_exceeds_it():
    r = _rates()
    e_max = load_constants().gemm_efficiency("h100-sxm")
    e = _eff(16384, 16384, 16384, r)
    assert 0.95 * e_max < e <= e_max


def test_tp_split_gemms_are_less_efficient():
    r = _rates()
    effs = [_eff(8192, 4 * 4096 / t, 4096, r) for t in (1, 2, 4, 8)]
    assert all(a >= b for a, b in zip(effs, effs[1:], strict=False))
    assert _eff(8192, 4096, 128, r) < 0.6 * effs[0]  # thin K is memory-bound


@settings(max_examples=50, deadline=None)
@given(m=hs.integers(1, 1 << 15), n=hs.integers(1, 1 << 15), k=hs.integers(1, 1 << 15))
def test_gemm_time_monotone_and_bounded(m, n, k):
    r = _rates()
    t = float(gemm_time(m, n, k, r))
    assert t >= 2.0 * m * n * k / r.gemm_peak_flops  # never faster than the dense peak
    assert float(gemm_time(m + 64, n, k, r)) >= t


@settings(max_examples=30, deadline=None)
@given(m=hs.integers(1, 1 << 16), n=hs.integers(1, 1 << 15), k=hs.integers(1, 1 << 15))
def test_linear_backward_is_dgrad_plus_wgrad_each_a_forward_under_the_roofline(m, n, k):
    # the three GEMMs of a linear layer read and write the same operands: under the soft roofline each takes the
    # forward's time (Narayanan 2021 s5.1: backward = 2x forward); a frozen weight has no wgrad
    r = _rates()
    fwd, bwd = linear_gemms(m, n, k, r)
    assert float(bwd) == pytest.approx(2.0 * float(fwd), rel=1e-9)
    assert float(linear_gemms(m, n, k, r, weights=False)[1]) == pytest.approx(float(fwd), rel=1e-9)


def test_fp8_gemm_faster_than_bf16_but_below_double():
    g = dict(m=16384, n=16384, k=16384)
    t16 = float(gemm_time(**g, rates=_rates(precision="bf16")))
    t8 = float(gemm_time(**g, rates=_rates(precision="fp8")))
    assert t16 / 2 < t8 < t16


def test_calibration_gemm_tflops_replaces_model():
    r = _rates(cal=Calibration(gemm_tflops=400.0))
    assert r.gemm_flops == 400e12
    assert _eff(16384, 16384, 16384, r) == pytest.approx(400 / 989, rel=0.02)


def _lt(model, system, **kw):
    args = dict(tp=1, cp=1, micro_batch=1, sp=0, recompute=0, ep=1, flash=True)
    args.update(kw)
    r = _rates(system)
    k = load_constants()
    return layer_times(ModelShapes.of(model), 4096, r, flash_rate=r.flash_flops,
                       flash_bwd_over_fwd=k.flash_bwd_over_fwd, **args)


def test_recompute_costs_and_backward_about_twice_forward():
    m, sysm = gpt(24, 4096, 32), h100_cluster()
    none = _lt(m, sysm, recompute=0)
    full = _lt(m, sysm, recompute=2)
    sel = _lt(m, sysm, recompute=1)
    assert 1.7 < float(none.bwd / none.fwd) < 2.6
    assert float(full.bwd - none.bwd) == pytest.approx(float(none.fwd), rel=1e-9)
    assert float(none.bwd) < float(sel.bwd) < float(full.bwd)


def test_sequence_parallel_and_tp_reduce_per_gpu_time():
    m, sysm = gpt(24, 4096, 32), h100_cluster()
    t1 = _lt(m, sysm, tp=1)
    t4 = _lt(m, sysm, tp=4)
    t4sp = _lt(m, sysm, tp=4, sp=1)
    assert float(t4.fwd) < float(t1.fwd)
    assert float(t4sp.fwd) < float(t4.fwd)


def test_non_flash_attention_slower_than_flash():
    m, sysm = gpt(24, 4096, 32), a100_cluster()
    assert float(_lt(m, sysm, flash=False).fwd) > float(_lt(m, sysm, flash=True).fwd)


def test_moe_layer_and_vectorised_shapes():
    m, sysm = mixtral(), h100_cluster()
    lt = _lt(m, sysm, ep=np.array([1, 2, 8]), tp=np.array([1, 1, 1]))
    assert lt.fwd.shape == (3,)
    assert np.all(lt.fwd > 0)


def test_optimizer_time_scales_with_params():
    r = _rates()
    assert float(optimizer_time(2e9, 30, r)) > float(optimizer_time(1e9, 30, r))


def test_packed_sequences_attend_within_their_samples():
    """Packing 8 samples of 1024 tokens into an 8192 row: the attention core spans 1024 keys, not 8192."""
    from trainsizer.estimate.inputs import Strategy, Training
    from trainsizer.estimate.step_time import step_time_arrays

    from .test_perf_common import h100_cluster, llama8b

    m, s = llama8b(), h100_cluster(8)
    st = Strategy(dp=8, zero=1, recompute="none", framework="megatron-core")
    full = step_time_arrays(m, Training(method="full", seq_len=8192, global_batch_seqs=64), s, st)
    packed = step_time_arrays(m, Training(method="full", seq_len=8192, global_batch_seqs=64, attention_span=1024),
                              s, st)
    assert float(packed["step_s"]) < float(full["step_s"])
    assert float(packed["model_flops_per_step"]) == float(full["model_flops_per_step"])  # MFU convention kept


def test_fp8_cast_kernels_are_counted_per_tensor_by_recipe():
    from trainsizer.estimate.compute import _fp8_casts

    k = load_constants()
    for recipe, per_tensor in (("delayed", 1), ("tensorwise", 2), ("rowwise", 2), ("mxfp8", 1)):
        r = rates(b200_cluster() if recipe == "mxfp8" else h100_cluster(), "fp8", fp8_recipe=recipe)
        assert r.fp8_cast_kernels == per_tensor == k.fp8_recipes[recipe]["cast_kernels_per_tensor"]
        # no bytes: only the kernels' fixed cost is left; 4 activations (+ 4 weights cast once) forward,
        # 4 output gradients backward
        # (torchao rowwise re-casts the 4 weights in backward along their other axis)
        fwd, bwd = _fp8_casts(0.0, 0.0, 0.0, 1e-30, r, 1.0)
        assert float(fwd) == pytest.approx(per_tensor * 8 * k.kernel_fixed_s, rel=1e-6)
        recast = 4 if recipe == "rowwise" else 0
        assert float(bwd) == pytest.approx(per_tensor * (4 + recast) * k.kernel_fixed_s)
    assert _fp8_casts(1e6, 4096.0, 4096.0, 1e6, rates(h100_cluster(), "bf16"), 1.0) == (0.0, 0.0)


def test_eager_rope_and_qk_norm_run_over_every_query_and_key_head():
    """Qwen3 32B's 64 query heads of 128 are wider than its hidden 5,120: eager RoPE streams its bytes over the
    (64 + 8) x 128 query and key widths, and its qk-norm (an RMSNorm a head, before RoPE) adds the eager RMSNorm's 36 B
    per element of them, one fused norm kernel's 4 B under norm_kernel "fused", nothing when compiled (Inductor fuses
    the norm into the RoPE kernel)."""
    from trainsizer.estimate.compute import eager_elementwise_traffic
    from trainsizer.models.arch import ModelArch

    eager_b = load_constants().eager_bytes_per_element
    kw = dict(name="q", family="custom", layers=64, hidden=5120, heads=64, kv_heads=8, head_dim=128, ffn=25600,
              vocab=151936)
    plain, qk = ModelArch(**kw), ModelArch(**kw, qk_norm=True)
    h, qkv, ffn, qk_w = 5120, 8192 + 2 * 1024, 25600, (64 + 8) * 128
    fused_total = 22 * h + 4 * qkv + 6 * ffn
    base = 86 * h + 20 * qk_w + 10 * ffn
    assert float(eager_elementwise_traffic(plain, eager_b, 20.0)) == pytest.approx(base / fused_total)
    assert float(eager_elementwise_traffic(qk, eager_b, 20.0)) == pytest.approx((base + 36 * qk_w) / fused_total)
    assert float(eager_elementwise_traffic(qk, eager_b, 20.0, "fused")) == pytest.approx(
        (base - 64 * h + 4 * qk_w) / fused_total)
    assert float(eager_elementwise_traffic(qk, eager_b, 20.0, fused_rest=True)) == pytest.approx(1.0)
    assert float(eager_elementwise_traffic(qk, eager_b, 20.0, "eager", fused_rest=True)) == pytest.approx(
        (86 * h + 4 * qkv + 6 * ffn + 36 * qk_w) / fused_total)


def test_torchao_rowwise_runs_tensorwise_gemms_and_casts_each_weight_twice():
    """torchao rowwise: the forward's row-scaled CUTLASS GEMM and the backward's cuBLAS tensorwise GEMMs (the
    slow-accumulation workaround in float8_ops.addmm_float8_unwrapped) run at the tensorwise rate; the cost of the
    recipe is its casts: every activation and gradient twice (10 B), the weight along in_features in forward (5 B)
    and again along out_features with the wgrad output's rescale in backward (9 B)."""
    from trainsizer.estimate.compute import _fp8_casts

    tw = rates(h100_cluster(), "fp8", fp8_recipe="tensorwise")
    rw = rates(h100_cluster(), "fp8", fp8_recipe="rowwise")
    assert rw.gemm_flops == tw.gemm_flops
    assert (rw.fp8_cast_bytes, rw.fp8_weight_cast_bytes, rw.fp8_weight_bwd_bytes) == (10.0, 5.0, 9.0)
    assert tw.fp8_weight_bwd_bytes == 0.0 == rates(h100_cluster(), "bf16").fp8_weight_bwd_bytes
    weights = 2e8
    _, bwd_none = _fp8_casts(8192.0, 4096.0, 4096.0, 0.0, rw, 1.0)
    _, bwd_w = _fp8_casts(8192.0, 4096.0, 4096.0, weights, rw, 1.0)
    extra = weights * 9.0 / rw.hbm_bytes_s
    assert float(bwd_w - bwd_none) == pytest.approx(extra + 4 * rw.fp8_cast_kernels * rw.kernel_fixed_s, rel=1e-6)


def test_fused_fp8_cast_figures_by_recipe():
    k = load_constants()
    fig = k.fp8_recipes["delayed"]
    fused = rates(h100_cluster(), "fp8", fp8_recipe="delayed", fused_cast=True)
    alone = rates(h100_cluster(), "fp8", fp8_recipe="delayed")
    assert fused.fp8_cast_bytes == fig["fused_cast_bytes_per_element"] < alone.fp8_cast_bytes
    assert fused.fp8_cast_kernels <= alone.fp8_cast_kernels
    # recipes without a fused figure (an amax pass first, or block scales) cast the same way in every framework
    for recipe in ("tensorwise", "rowwise", "mxfp8"):
        system = b200_cluster() if recipe == "mxfp8" else h100_cluster()  # MXFP8 needs Blackwell's block scales
        assert rates(system, "fp8", fp8_recipe=recipe, fused_cast=True) == rates(system, "fp8", fp8_recipe=recipe)


def test_unfused_fp32_cross_entropy_streams_its_counted_bytes():
    """Megatron's vocab_parallel_cross_entropy on output.float(): 38 B per logit forward and 14 B backward against
    the fused loss's 6 + 12 B, and its 6 + 2 kernels against 3 + 6 (perf_constants.yaml cross_entropy / kernels)."""
    m, sysm = gpt(24, 4096, 32), a100_cluster()
    r = _rates(sysm)
    fused, unfused = _lt(m, sysm, tp=2), _lt(m, sysm, tp=2, ce_unfused_fp32=True)
    logits = 4096 * m.vocab / 2
    k = r.kernel_fixed_s
    assert float(unfused.head_fwd - fused.head_fwd) == pytest.approx((38 - 6) * logits / r.hbm_bytes_s + 3 * k,
                                                                     rel=1e-9)
    assert float(unfused.head_bwd - fused.head_bwd) == pytest.approx((14 - 12) * logits / r.hbm_bytes_s - 4 * k,
                                                                     rel=1e-9)
    assert float(unfused.fwd) == float(fused.fwd) and float(unfused.bwd) == float(fused.bwd)


def test_eager_elementwise_traffic_is_counted_per_op_from_the_model_code():
    from trainsizer.estimate.compute import eager_elementwise_traffic

    from .test_perf_common import llama8b

    eager = load_constants().eager_bytes_per_element
    # Llama 3 8B (h 4096, GQA kv 1024, SwiGLU 14336): RMSNorm 36 B against 4 fused, SwiGLU 10 against 6, RoPE 20
    # over q and k against 4 over q, k and v: (86 h + 20 x 5120 + 10 x 14336) / (22 h + 4 x 6144 + 6 x 14336)
    hf = eager_elementwise_traffic(llama8b(), eager, 20.0)
    assert float(hf) == pytest.approx((86 * 4096 + 20 * 5120 + 10 * 14336) / (22 * 4096 + 4 * 6144 + 6 * 14336))
    # torchtune's float RoPE streams more than HF's rotate_half; arrays of RoPE bytes (framework auto) broadcast
    both = eager_elementwise_traffic(llama8b(), eager, np.array([20.0, 48.0]))
    assert both.shape == (2,) and both[1] > both[0] == pytest.approx(float(hf))
    # LayerNorm, GeLU and learned positions are single kernels eager too: nothing to add
    assert float(eager_elementwise_traffic(gpt(), eager, 48.0)) == pytest.approx(1.0)



def test_sliding_window_layers_attend_over_the_window_only():
    """A windowed layer's attention core spans its window (FlashAttention skips the tiles outside the band): at 4K
    with a 128-token window on half the layers the attention forward drops by about half; with the window as long
    as the row nothing changes; the GEMMs are the same."""
    m = gpt(24, 4096, 32)
    full = _lt(m, h100_cluster())
    half = _lt(m.with_(sliding_window=128, window_layers=12), h100_cluster())
    wide = _lt(m.with_(sliding_window=4096, window_layers=24), h100_cluster())
    assert 0.45 < float(half.attn_fwd / full.attn_fwd) < 0.6
    assert float(wide.attn_fwd) == pytest.approx(float(full.attn_fwd))
    assert float(full.fwd - half.fwd) == pytest.approx(float(full.attn_fwd - half.attn_fwd), rel=1e-6)


def test_chunked_layers_attend_within_their_chunk_only():
    """A chunked layer's query attends over the earlier keys of its own chunk: at 4K with 512-token chunks on all
    layers the attention forward drops to about an eighth; with chunks as long as the row nothing changes."""
    m = gpt(24, 4096, 32)
    full = _lt(m, h100_cluster())
    chunked = _lt(m.with_(attention_chunk=512, chunk_layers=24), h100_cluster())
    whole = _lt(m.with_(attention_chunk=4096, chunk_layers=24), h100_cluster())
    assert 0.1 < float(chunked.attn_fwd / full.attn_fwd) < 0.2
    assert float(whole.attn_fwd) == pytest.approx(float(full.attn_fwd))


def test_eager_attention_computes_the_whole_score_matrix_under_a_window():
    """Without FlashAttention (eager matmul + masked softmax, as transformers' eager path and torchtune's Gemma 2
    attention run it) the window is only a mask: the attention core costs what the full row costs."""
    m = gpt(24, 4096, 32)
    full = _lt(m, h100_cluster(), flash=False)
    half = _lt(m.with_(sliding_window=128, window_layers=12), h100_cluster(), flash=False)
    assert float(half.attn_fwd) == pytest.approx(float(full.attn_fwd))
    assert float(half.fwd) == pytest.approx(float(full.fwd))


@pytest.mark.parametrize("tp", [1, 8])
def test_split_projections_sum_their_input_gradients_over_every_token(monkeypatch, tp):
    """q, k, v (and gate, up) as separate linears: autograd adds their input gradients (read 3 + write 1, read 2 +
    write 1 tensors of tokens x hidden) after the dgrads; under TP the input is the gathered one, so the sums do not
    shrink with TP. Forward unchanged."""
    from trainsizer.estimate import compute

    m, sysm = llama8b(), h100_cluster()
    with_sums = _lt(m, sysm, tp=tp, sp=1, split_projections=True)
    monkeypatch.setattr(compute, "_input_grad_sum", lambda n, tok, h, rates: 0.0)
    without = _lt(m, sysm, tp=tp, sp=1, split_projections=True)
    r = _rates(sysm)
    tok_h_bytes = 4096 * m.hidden * r.act_bytes
    expected = (4 + 3) * tok_h_bytes / r.hbm_bytes_s + 2 * r.kernel_fixed_s
    assert float(with_sums.bwd - without.bwd) == pytest.approx(expected, rel=1e-9)
    assert float(with_sums.fwd) == pytest.approx(float(without.fwd), rel=1e-12)


def test_fp8_inputs_gathered_in_fp8_are_cast_on_their_sequence_shard():
    """Under SP a gather of FP8 data is cast before it: the qkv / MLP-up inputs (forward) and the o / MLP-down output
    gradients (backward) cast 1 / t of the tokens; without SP, or in bf16, the share changes nothing."""
    m, sysm = gpt(24, 4096, 32), h100_cluster()
    r = _rates(sysm, precision="fp8")
    k = load_constants()

    def lt(share, sp=1, precision="fp8"):
        rr = _rates(sysm, precision=precision)
        return layer_times(ModelShapes.of(m), 4096, rr, flash_rate=rr.flash_flops, flash_bwd_over_fwd=k.flash_bwd_over_fwd,
                           tp=8, cp=1, micro_batch=1, sp=sp, recompute=0, ep=1, flash=True, fp8_gathered_casts=share)

    saved = 2.0 * m.hidden * 4096 * (1.0 - 1.0 / 8) * r.fp8_cast_bytes / r.hbm_bytes_s
    assert float(lt(0.0).fwd - lt(1.0).fwd) == pytest.approx(saved, rel=1e-9)
    assert float(lt(0.0).bwd - lt(1.0).bwd) == pytest.approx(saved, rel=1e-9)  # the o / down output gradients
    assert float(lt(1.0, sp=0).fwd) == pytest.approx(float(lt(0.0, sp=0).fwd), rel=1e-12)
    assert float(lt(1.0, precision="bf16").fwd) == pytest.approx(float(lt(0.0, precision="bf16").fwd), rel=1e-12)
