"""Eager chains' backward as autograd runs them (step_time._eager_chain_backward_time; docs/known-gaps.md 304 (a)): an
eager RMSNorm's 92 B per hidden element against twice its forward's 36, HF's eager RoPE 20 per q / k element against
40, gpt-oss's clamped SwiGLU 94 per routed inner element against 64; fused or compiled chains pay nothing."""

from __future__ import annotations

import dataclasses

import pytest

from trainsizer.estimate import step_time
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time, perf_style

from .test_perf_common import h100_cluster, llama8b, mixtral

K = load_constants()
EB = K.eager_bytes_per_element
# the layer's rule before the counts: every chain's backward twice its forward
TWICE_FORWARD = dataclasses.replace(
    K, eager_backward_bytes_per_element={"rmsnorm": 2.0 * EB["rmsnorm"], "swiglu_clamped": 2.0 * EB["swiglu_clamped"]})
HBM = h100_cluster().hbm_gb_s * 1e9 * K.hbm_efficiency
SEQ = 4096


def _compute(monkeypatch, constants, model=None, style=None, **kw) -> float:
    monkeypatch.setattr(step_time, "load_constants", lambda: constants)
    training = Training(seq_len=SEQ, global_batch_seqs=8, precision="bf16")
    st = Strategy(dp=8, micro_batch=1, recompute="none", **kw)
    return estimate_time(model or llama8b(), training, h100_cluster(8), st,
                         framework_style=style).breakdown_s["compute"]


def _norm_extra(monkeypatch, **kw) -> float:
    return _compute(monkeypatch, K, **kw) - _compute(monkeypatch, TWICE_FORWARD, **kw)


def test_an_eager_rmsnorm_streams_its_counted_backward(monkeypatch):
    """torchtitan without compile: two RMSNorms a layer over the hidden width, 92 B against 72 (+20)."""
    m = llama8b()
    expected = SEQ * 2.0 * m.hidden * m.layers * (92.0 - 72.0) / HBM
    assert _norm_extra(monkeypatch, framework="torchtitan", torch_compile=False) == pytest.approx(expected, rel=1e-6)


def test_hf_eager_rope_streams_half_the_twice_forward_rule(monkeypatch):
    """HF's apply_rotary_pos_emb: its backward 20 B a q / k element against 40 (cos / sin take no gradient)."""
    hf = perf_style("hf")
    rule = dataclasses.replace(hf, rope_eager_backward_bytes=2.0 * hf.rope_eager_bytes)
    m = llama8b()
    delta = _compute(monkeypatch, K, style=hf) - _compute(monkeypatch, K, style=rule)
    assert delta == pytest.approx(SEQ * (m.q_dim + m.kv_dim) * m.layers * (20.0 - 40.0) / HBM, rel=1e-6)
    assert delta < 0.0


def test_the_clamped_swiglu_of_eager_routed_experts(monkeypatch):
    """gpt-oss's clamped SwiGLU on eager torchtitan: 94 B a routed slot's inner element against 64."""
    model = dataclasses.replace(mixtral(), activation_clamp=True)
    extra = _norm_extra(monkeypatch, model=model, framework="torchtitan", torch_compile=False, ep=8)
    norms = _norm_extra(monkeypatch, model=mixtral(), framework="torchtitan", torch_compile=False, ep=8)
    slots = SEQ * model.experts_per_token * model.layers
    assert extra - norms == pytest.approx(slots * model.expert_ffn * (94.0 - 64.0) / HBM, rel=1e-6)


@pytest.mark.parametrize(("framework", "compiled"), [("megatron", None), ("megatron-core", None), ("torchtitan", True)])
def test_fused_and_compiled_chains_pay_nothing(monkeypatch, framework, compiled):
    assert _norm_extra(monkeypatch, framework=framework, torch_compile=compiled) == 0.0
    assert _norm_extra(monkeypatch, framework="torchtitan", torch_compile=False, norm_kernel="fused") == 0.0
