"""16-bit autocast over fp32 weights (the HF Trainer's AMP on a full fine-tune at ZeRO 0; perf_constants.yaml
amp_fp32_weights): the fp32 residual stream, the casts of each linear's input and of each weight, charged by their
counted bytes, the forward part again under full recompute; not for LoRA (a 16-bit base), under ZeRO / FSDP (16-bit
weights), in a compiled layer, on a style that does not keep fp32 weights under autocast, or for an MoE model."""

from __future__ import annotations

import dataclasses

import pytest

from trainsizer.estimate import compute, step_time
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.flops import layer_flops
from trainsizer.estimate.inputs import Strategy, Training

from .test_perf_common import h100_cluster, llama8b, mixtral, step_and_layer_rates

TOKENS = 2 * 2048


def _training(method: str = "full") -> Training:
    kw = dict(lora_rank=16, lora_targets=("q_proj", "v_proj")) if method == "lora" else {}
    return Training(method=method, seq_len=2048, global_batch_seqs=2, **kw)


def _run(training: Training, flag: bool = True, model=None, **kw) -> tuple:
    """(step seconds, the job's rates) of a one-GPU hf job with the style's amp_fp32_weights as `flag`."""
    style = dataclasses.replace(step_time.perf_style("hf"), amp_fp32_weights=flag)
    st = Strategy(**({"dp": 1, "micro_batch": 2, "recompute": "none", "framework": "hf", "torch_compile": False} | kw))
    return step_and_layer_rates(model or llama8b(), training, h100_cluster(1), st, style)


def _counted(r, forwards: float) -> float:
    """Llama 3.1 8B's counted bytes and kernels over its 32 layers, the forward run `forwards` times."""
    b = load_constants().raw["amp_fp32_weights"]
    m = llama8b()
    h, qk = m.hidden, m.q_dim + m.kv_dim
    per_tok = 2 * b["norm"] * h + 5 * b["input_cast"] * h + 2 * b["residual_add"] * h + b["rope"] * qk
    ew = compute.stream_time(TOKENS * per_tok, r, kernels=5 + 2 - 4)
    lf = layer_flops(m)
    cast = compute.stream_time((lf.gemm() - lf.experts) / 2 / m.layers * b["weight_cast"], r, kernels=7)
    return m.layers * (forwards * (ew + cast) + 2 * ew + cast)


def test_only_the_hf_style_keeps_fp32_weights_under_autocast():
    assert step_time.perf_style("hf").amp_fp32_weights
    for name in ("torchtune", "torchtitan", "megatron-core", "deepspeed"):
        assert not step_time.perf_style(name).amp_fp32_weights


@pytest.mark.parametrize("recompute,forwards", [("none", 1.0), ("full", 2.0)])
def test_a_full_fine_tune_at_zero_0_pays_the_counted_casts(recompute, forwards):
    on, r = _run(_training(), recompute=recompute)
    off, _ = _run(_training(), flag=False, recompute=recompute)
    assert on - off == pytest.approx(_counted(r, forwards), rel=1e-6)
    assert on > off * 1.02  # a few per cent of an 8B step on one GPU, not a rounding error


@pytest.mark.parametrize("case", ["lora", "zero3", "compiled", "moe"])
def test_not_charged_where_the_weights_or_the_kernels_differ(case):
    training = _training("lora" if case == "lora" else "full")
    kw = {"zero": 3} if case == "zero3" else {"torch_compile": True} if case == "compiled" else {}
    model = mixtral() if case == "moe" else None
    assert _run(training, model=model, **kw)[0] == _run(training, flag=False, model=model, **kw)[0]
