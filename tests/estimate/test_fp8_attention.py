"""strategy.fp8_attention (Transformer Engine / cuDNN FP8 dot-product attention), strategy.fp8_activation_store
(Megatron-Core activation_func_fp8_input_store) and strategy.cuda_graphs (per-layer or full-iteration graphs)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import estimate_time
from trainsizer.render.i18n import t
from trainsizer.scenario import resolve_job

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import attention_blackwell as ab  # noqa: E402

# MLPerf's Llama 2 70B LoRA layout: 8 GPUs, DP 8, one 8K row each, no recompute
LORA = {"model": "llama-2-70b", "method": "lora", "lora": {"rank": 16, "targets": ["qkv_proj", "o_proj"]},
        "seq_len": 8192, "data": {"samples": 1e5, "avg_tokens": 8192}, "global_batch": {"sequences": 8},
        "precision": "fp8", "fp8_recipe": "delayed"}
TOKENS, LAYERS = 8192, 80
Q, KV, FFN = 8192, 1024, 28672  # Llama 2 70B: q and output 64 x 128, k and v 8 x 128 each, SwiGLU fc1 2 x 28,672


def _scenario(accelerator: str = "gb200", precision: str = "fp8", **strategy):
    job = {**LORA, "precision": precision,
           "hardware": {"accelerator": accelerator, "count": 8, "network": "ib-ndr400"},
           "strategy": {"recompute": "none", "framework": "megatron-core", "distributed_optimizer": True,
                        "fp8_param_allgather": True, **strategy}}
    return resolve_job(job, load_catalog())


def _step(accelerator: str = "gb200", **strategy) -> float:
    sc = _scenario(accelerator, **strategy)
    return float(estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False).step_s)


def _acts(**strategy) -> float:
    sc = _scenario("b200", **strategy)
    e = estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False)
    return e.items_bytes["layer_activations"]


@pytest.mark.parametrize("family", ["b200", "b300", "gb200", "gb300", "h100", "h200"])
def test_fp8_attention_speedup_is_the_measured_cudnn_ratio(family):
    """The shipped FP8 / BF16 ratios are NVIDIA's cuDNN SDPA rows at one release (benchmarks/attention_blackwell.py),
    not a figure tuned on a training row."""
    assert load_constants().fp8_attention(family) == pytest.approx(ab.fp8_speedups()[family], abs=5e-4)


@pytest.mark.parametrize("family", ["b200", "b300", "gb200", "gb300"])
def test_mxfp8_attention_takes_cudnns_mxfp8_ratio(family):
    """Under the MXFP8 recipe attention runs cuDNN's MXFP8 kernel (Transformer Engine >= 2.15): the shipped MXFP8 /
    BF16 ratios are the same files' mxfp8 rows, at Llama's heads and at MLA's; the MXFP8 backward is slower than the
    per-tensor FP8 one on every Blackwell family (1.13-1.31x the time at 8K), no faster than BF16's at d 128."""
    k = load_constants()
    assert k.fp8_attention(family, 128, "mxfp8") == pytest.approx(ab.mxfp8_speedups()[family], abs=5e-4)
    assert k.fp8_attention(family, 192, "mxfp8") == pytest.approx(ab.mxfp8_speedups(heads="128")[family], abs=5e-4)
    for d in (128, 192):
        mx, per_tensor = k.fp8_attention(family, d, "mxfp8"), k.fp8_attention(family, d, "tensorwise")
        assert mx[1] < per_tensor[1] / 1.1 and mx[0] < per_tensor[0]
    assert k.fp8_attention(family, 128, "mxfp8")[1] < 1.0


def test_mxfp8_attention_keeps_the_per_tensor_ratio_where_none_was_measured():
    k = load_constants()
    assert k.fp8_attention("h100", 128, "mxfp8") == k.fp8_attention("h100", 128)


@pytest.mark.parametrize("family", ["b200", "b300", "gb200", "gb300", "h100"])
def test_mla_head_dim_takes_its_own_measured_ratio(family):
    """d_qk 192 (DeepSeek-V3's MLA) has its own cuDNN FP8 / BF16 rows on Blackwell, where FP8 keeps more of its gain
    (fewer exponentials per MMA FLOP); Hopper has Llama heads only, so there the family figure holds, as for any head
    dim without rows."""
    k = load_constants()
    mla = ab.fp8_speedups_mla()
    if family in mla:
        assert k.fp8_attention(family, 192) == pytest.approx(mla[family], abs=5e-4)
        assert k.fp8_attention(family, 192)[1] > k.fp8_attention(family)[1]
    else:
        assert k.fp8_attention(family, 192) == k.fp8_attention(family)
    assert k.fp8_attention(family, 64) == k.fp8_attention(family, 128) == k.fp8_attention(family)


def test_fp8_attention_shortens_only_the_attention_by_the_ratio():
    """Blackwell: the attention forward runs 1.30x, the backward 1.09x faster (GB200); the GEMMs are untouched.
    Hopper: cuDNN's FP8 causal backward is slower than BF16's (H200, 9.19.1), so the step gets longer; AMD parts have
    no FP8 / BF16 pair: unchanged."""
    from trainsizer.estimate import compute
    from trainsizer.estimate.calibration import rates
    from trainsizer.estimate.step_time import _shapes

    sc = _scenario()
    r = rates(sc.system, "fp8", load_constants(), attention_kernel="native", fp8_recipe="delayed")
    fwd_x, bwd_x = load_constants().fp8_attention("gb200")

    def layer(rate_x: float, bwd_over: float):
        return compute.layer_times(_shapes(sc.model), 8192, r, tp=1, cp=1, micro_batch=1, sp=False, recompute=0,
                                   ep=1, flash=True, flash_rate=r.flash_flops * rate_x, flash_bwd_over_fwd=bwd_over,
                                   trains_base_weights=False)

    bf16, fp8 = layer(1.0, r.flash_bwd_over_fwd), layer(fwd_x, r.flash_bwd_over_fwd * fwd_x / bwd_x)
    fixed = r.kernel_fixed_s  # the kernel's fixed cost does not shrink
    assert float(fp8.attn_fwd) - fixed == pytest.approx((float(bf16.attn_fwd) - fixed) / fwd_x, rel=1e-9)
    a_bwd = float(bf16.bwd) - float(fp8.bwd)  # only the attention backward changes
    assert a_bwd == pytest.approx(r.flash_bwd_over_fwd * (float(bf16.attn_fwd) - float(fp8.attn_fwd) * fwd_x
                                                           / bwd_x), rel=1e-6)
    saved = LAYERS * (float(bf16.fwd + bf16.bwd) - float(fp8.fwd + fp8.bwd))
    assert 0 < saved and _step() - _step(fp8_attention=True) == pytest.approx(saved, rel=2e-3)
    assert _step("h100-sxm-80gb", fp8_attention=True) > _step("h100-sxm-80gb")
    assert _step("mi300x", fp8_attention=True) == _step("mi300x")
    assert _step(fp8_attention=False) == _step()


def test_fp8_attention_and_swiglu_input_store_save_their_bytes():
    """FP8 attention keeps q, k, v and its output in FP8 (1 B for 2); activation_func_fp8_input_store keeps fc1's
    output (the SwiGLU input) in FP8: per layer and token (8 GPUs, DP 8: no TP split)."""
    base = _acts()
    assert base - _acts(fp8_attention=True) == pytest.approx((Q + KV + KV + Q) * TOKENS * LAYERS)
    assert base - _acts(fp8_activation_store=True) == pytest.approx(2 * FFN * TOKENS * LAYERS)
    both = _acts(fp8_attention=True, fp8_activation_store=True)
    assert base - both == pytest.approx((2 * Q + 2 * KV + 2 * FFN) * TOKENS * LAYERS)
    # under full recompute only the layer input is kept: nothing to store in FP8
    assert _acts(recompute="full", fp8_attention=True, fp8_activation_store=True) == _acts(recompute="full")


def test_full_iteration_graph_removes_the_host_floor_and_per_layer_graphs_keep_it():
    """A host-bound step (a small model at 1,024 tokens a GPU): one graph for the step's forward-backward issues no
    per-layer kernels from the host; per-layer graphs still replay layer by layer from Python."""
    job = {"model": "llama-3.1-8b", "seq_len": 1024, "data": {"tokens": 1e9}, "global_batch": {"sequences": 8},
           "precision": "bf16", "hardware": {"accelerator": "gb200", "count": 8, "network": "ib-ndr400"}}

    def step(graphs):
        strategy = {"recompute": "none", "framework": "megatron-core", "distributed_optimizer": True}
        if graphs:
            strategy["cuda_graphs"] = graphs
        sc = resolve_job({**job, "strategy": strategy}, load_catalog())
        return float(estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False).step_s)

    eager = step(None)
    assert step("none") == eager and step("layer") == eager
    assert step("full_iteration") < eager


@pytest.mark.parametrize(("strategy", "precision", "words"), [
    ({"fp8_attention": True}, "bf16", "precision fp8"),
    ({"fp8_attention": True, "framework": "hf", "zero": 3}, "fp8", "Megatron-Core"),
    ({"cuda_graphs": "full_iteration", "framework": "torchtitan", "zero": 3}, "fp8", "Megatron-Core"),
    ({"fp8_activation_store": True, "framework": "deepspeed", "zero": 1}, "fp8", "Megatron-Core"),
])
def test_refusals_say_what_is_needed(strategy, precision, words):
    with pytest.raises(TrainsizerError, match=words):
        sc = _scenario("gb200", precision=precision, **strategy)
        estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False)


def test_unknown_cuda_graphs_value_and_words_in_both_languages():
    with pytest.raises(TrainsizerError, match="cuda_graphs"):
        _scenario(cuda_graphs="per_layer")
    for field in ("fp8_attention", "fp8_activation_store", "cuda_graphs"):
        assert t(f"field_strategy.{field}", "zh") != t(f"field_strategy.{field}", "en")
