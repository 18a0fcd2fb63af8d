"""Routed experts' biases added per routed row in eager PyTorch (step_time._expert_bias_index_add_time): torchtitan's
gpt-oss port repeat_interleaves each bias to one row a routed slot and adds it to the grouped GEMM's output; the
gradient is an index_add_ of every routed row into its expert's bias row, timed at aten index_add_'s measured bf16
rate under contention (perf_constants.yaml gemm.expert_bias_index_add). Compiled blocks, bias-free models and other
styles pay nothing. Checked against torchtitan PR 2686 (8 H100), which replaced both calls by Triton kernels."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.estimate import step_time
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import PERF_STYLES, estimate_time
from trainsizer.models import load_model

from .test_perf_common import h100_cluster

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

K = load_constants()
GPT_OSS = load_model("gpt-oss-20b")


def _compute(model=GPT_OSS, framework="torchtitan", torch_compile=False, recompute="full", mb=1,
             ep=1, dispatcher="auto") -> float:
    training = Training(seq_len=8192, global_batch_seqs=8 * mb, precision="bf16")
    st = Strategy(dp=8, zero=3, ep=ep, micro_batch=mb, recompute=recompute, framework=framework,
                  torch_compile=torch_compile, moe_dispatcher=dispatcher)
    return estimate_time(model, training, h100_cluster(8), st).breakdown_s["compute"]


def _without(monkeypatch, **kw) -> float:
    with monkeypatch.context() as m:
        m.setattr(step_time, "_expert_bias_index_add_time", lambda x: 0.0)
        return _compute(**kw)


def _elements_per_layer(mb: int = 1) -> float:
    """Elements of one layer's mlp1 (2 x expert_ffn) and mlp2 (hidden) outputs over a micro-batch's routed slots."""
    return 8192 * mb * GPT_OSS.experts_per_token * (2 * GPT_OSS.expert_ffn + GPT_OSS.hidden)


def test_the_style_states_it_for_torchtitan_only():
    assert PERF_STYLES["torchtitan"].moe_bias_index_add
    assert not any(s.moe_bias_index_add for name, s in PERF_STYLES.items() if name != "torchtitan")


def test_eager_torchtitan_pays_the_index_add_at_its_measured_rate(monkeypatch):
    extra = _compute() - _without(monkeypatch)
    atomics = GPT_OSS.layers * _elements_per_layer() / K.expert_bias_index_add["index_add_elements_per_s"]
    hbm = h100_cluster().hbm_gb_s * 1e9 * K.hbm_efficiency
    forward = GPT_OSS.layers * _elements_per_layer() * K.expert_bias_index_add["forward"] * 2 / hbm  # and recomputed
    assert extra == pytest.approx(atomics + forward, rel=0.05)  # and the kernels' launches


def test_compiled_blocks_bias_free_models_and_other_styles_pay_nothing(monkeypatch):
    assert _compute(torch_compile=True) == _without(monkeypatch, torch_compile=True)
    qwen = load_model("qwen3-30b-a3b")
    assert not qwen.mlp_bias and _compute(model=qwen) == _without(monkeypatch, model=qwen)
    assert _compute(framework="hf") == _without(monkeypatch, framework="hf")


def test_recompute_repeats_only_the_forward(monkeypatch):
    full = _compute() - _without(monkeypatch)
    none = _compute(recompute="none") - _without(monkeypatch, recompute="none")
    forward = GPT_OSS.layers * _elements_per_layer() * K.expert_bias_index_add["forward"] / (
        h100_cluster().hbm_gb_s * 1e9 * K.hbm_efficiency)
    assert full - none == pytest.approx(forward, rel=0.05)  # the bias copies and adds, plus their kernels' launches


@settings(max_examples=5, deadline=None)
@given(mb=hs.sampled_from([1, 2, 4]))
def test_it_grows_with_the_routed_rows(mb):
    with pytest.MonkeyPatch.context() as m:
        m.setattr(step_time, "_expert_bias_index_add_time", lambda x: 0.0)
        off, off1 = _compute(mb=mb), _compute(mb=1)
    assert _compute(mb=mb) - off == pytest.approx(mb * (_compute(mb=1) - off1), rel=0.02)


def test_torchtitan_pr_2686_gain_on_8_h100(monkeypatch):
    """torchtitan PR 2686 (2026-03-24, 8 H100, gpt_oss_20b stock: 1 x 8,192, full AC, FSDP 8, eager model): Triton
    kernels for the bias gather-add (read h, write it: 4 B an element, each forward) and the bias gradient (a row sum
    per expert: read the gradient, 2 B) took MFU 16.50 -> 18.68%, 183 ms a step at torchtitan's 31.3 GFLOP a token.
    The estimate's charge less those kernels' bytes at the part's streaming rate comes within 25% of it."""
    import perf_heldout48 as p48

    flops = p48.titan_flops_per_token("gpt-oss-20b", 8192)
    measured = 8192 * flops * (1.0 / (0.1650 * 989e12) - 1.0 / (0.1868 * 989e12))
    hbm = h100_cluster().hbm_gb_s * 1e9 * K.hbm_efficiency
    triton = GPT_OSS.layers * _elements_per_layer() * (4.0 * 2 + 2.0) / hbm
    charged = _compute() - _without(monkeypatch)
    assert measured == pytest.approx(0.183, abs=0.002)
    assert charged - triton == pytest.approx(measured, rel=0.25)
    print(f"PR 2686 on 8 H100: measured {measured * 1e3:.0f} ms, charged {charged * 1e3:.0f} ms less the Triton "
          f"kernels' {triton * 1e3:.0f} ms = {(charged - triton) * 1e3:.0f} ms")
