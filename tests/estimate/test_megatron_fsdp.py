"""Megatron-FSDP's wrapper (estimate/megatron_fsdp.py; docs/known-gaps.md 306): its per-unit hooks' host calls
(perf_constants.yaml megatron_fsdp_hooks, counted from Megatron-LM 0d8e0714, each at the launch-bound eager op, joined
to the layer's host floor in step_time._host_excess) and the buckets start_param_sync leaves gathered after the step
(memory._megatron_fsdp_sync_bytes)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.estimate import megatron_fsdp
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.host_sync import host_figure
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.memory import STEP_STATE_ITEMS, estimate_memory
from trainsizer.estimate.step_time import perf_style, step_time_arrays
from trainsizer.models.arch import ModelArch

from .test_perf_common import h100_cluster, llama8b, mixtral

K = load_constants()
C = K.raw["megatron_fsdp_hooks"]
OP_S = host_figure("launch_bound_op_s", "nvidia")


def qwen3_4b() -> ModelArch:
    return ModelArch(name="qwen3-4b", family="qwen3", layers=36, hidden=2560, heads=32, kv_heads=8, head_dim=128,
                     ffn=9728, vocab=151936, tied_embeddings=True, qk_norm=True, max_position=32768)


def _step(model, *, mb=1, seq=1024, dp=4, hooks=True, **kw) -> dict[str, float]:
    """Megatron-FSDP (fsdp full on megatron-core) with its hooks charged, or the same style with them off."""
    st = Strategy(tp=1, dp=dp, zero=3, fsdp="full", micro_batch=mb, framework="megatron-core", **kw)
    style = dataclasses.replace(perf_style("megatron-core"), megatron_fsdp_hooks=hooks)
    out = step_time_arrays(model, Training(seq_len=seq, global_batch_seqs=dp * mb * 8), h100_cluster(gpus=dp), st,
                           framework_style=style)
    return {k: float(np.asarray(v).reshape(-1)[0]) for k, v in out.items()}


def test_a_qwen3_unit_makes_108_calls_a_micro_batch_written_out():
    """Qwen3's TransformerLayer: linear_qkv, linear_proj, linear_fc1, linear_fc2 weights, the two fused norms'
    weights and the q / k norms (8 tensors, the 4 norms' gradients copied), one bucket group: 3 + 37 + 8 x 8 + 4."""
    tensors, copied = megatron_fsdp.layer_tensors(True, 1.0, 0.0, False, 1.0, False)
    assert (tensors, copied) == (8.0, 4.0)
    calls = megatron_fsdp.unit_calls(C, tensors, copied, 1.0, 0.0)
    assert calls == (C["unit_calls"]["forward"] + C["unit_calls"]["backward"] + C["group_calls"]["forward"]
                     + C["group_calls"]["backward"] + 8 * (C["tensor_calls"]["forward"] + C["tensor_calls"]["backward"])
                     + 4 * C["copied_grad_calls"]) == 108
    assert megatron_fsdp.unit_calls(C, tensors, copied, 1.0, 1.0) == 108 + C["recompute_calls"]
    # Llama's layer has no q / k norms; LayerNorm's bias is a tensor of its own; an MoE layer adds the router (copied),
    # two grouped weights a local expert and a second bucket group (the experts' own DP group)
    assert megatron_fsdp.layer_tensors(False, 1.0, 0.0, False, 1.0, False) == (6.0, 2.0)
    assert megatron_fsdp.layer_tensors(False, 2.0, 4.0, False, 1.0, False) == (12.0, 8.0)
    assert megatron_fsdp.layer_tensors(False, 1.0, 0.0, True, 4.0, False) == (13.0, 3.0)


def test_the_one_gpu_step_at_micro_batch_1_carries_the_hooks_whole():
    """At micro-batch 1 of 1,024 tokens the layer is host-bound (3 passes at host_s_per_layer_pass), so the hooks'
    108 calls a layer add almost in full: 36 layers x 8 micro-batches."""
    m = qwen3_4b()
    fsdp, ddp = _step(m, dp=1), _step(m, dp=1, hooks=False)
    want = 36 * 8 * 108 * OP_S
    assert 0.85 * want < fsdp["compute"] - ddp["compute"] < 1.01 * want
    assert fsdp["host_excess"] - ddp["host_excess"] == pytest.approx(fsdp["compute"] - ddp["compute"], rel=1e-6)
    # gradient_accumulation_fusion off: the four linears' gradients are copied too, 4 calls more a layer
    on, off = (_step(m, dp=1, hooks=h, gradient_accumulation_fusion=False) for h in (True, False))
    assert 0.85 * 36 * 8 * 112 * OP_S < on["compute"] - off["compute"] < 1.01 * 36 * 8 * 112 * OP_S


def test_the_hooks_hide_behind_long_micro_batches():
    """perf_mbridge26's / Together's Megatron-FSDP rows run 8,192 tokens and more a micro-batch: the same calls sit
    under the layer's GEMMs (the soft maximum), well under 1% of the step."""
    m = llama8b()
    on, off = _step(m, mb=2, seq=8192), _step(m, mb=2, seq=8192, hooks=False)
    assert 0.0 < on["compute"] - off["compute"] < 0.01 * on["compute"]


def test_only_the_megatron_core_style_runs_megatron_fsdp():
    assert perf_style("megatron-core").megatron_fsdp_hooks
    for name in ("megatron", "torchtitan", "fsdp", "hf", "deepspeed", "torchtune", "deepseek-dualpipe"):
        assert not perf_style(name).megatron_fsdp_hooks
    # torchtitan's FSDP2 at the same layout: no Megatron-FSDP charge (its own hooks are its style's)
    m = qwen3_4b()
    tt = Strategy(tp=1, dp=1, zero=3, fsdp="full", micro_batch=1, framework="torchtitan")
    a = step_time_arrays(m, Training(seq_len=1024, global_batch_seqs=8), h100_cluster(gpus=1), tt)
    assert float(np.asarray(a["compute"]).reshape(-1)[0]) < _step(m, dp=1)["compute"]


@settings(max_examples=15, deadline=None)
@given(mb=hs.sampled_from([1, 2, 4]), seq=hs.sampled_from([512, 2048, 8192]), moe=hs.booleans())
def test_the_charge_never_speeds_a_step_nor_passes_its_own_host_time(mb, seq, moe):
    """Dense or MoE (two bucket groups a MoE unit), any micro-batch: the hooks add between nothing and their whole
    host time (the soft maximum's excess never passes the host term it adds)."""
    m = mixtral() if moe else llama8b()
    kw = {"ep": 4} if moe else {}
    on, off = _step(m, mb=mb, seq=seq, dp=8, **kw), _step(m, mb=mb, seq=seq, dp=8, hooks=False, **kw)
    tensors = 6.0 + (1.0 + 2.0 * 8 / 4 if moe else 0.0) - (2.0 if moe else 0.0)  # an MoE layer: router, 2 x 2 experts
    copied = 2.0 + (1.0 if moe else 0.0)
    most = m.layers * 8 * megatron_fsdp.unit_calls(C, tensors, copied, 2.0 if moe else 1.0, 0.0) * OP_S
    assert 0.0 < on["step_s"] - off["step_s"] <= most * (1.0 + 1e-9)


def test_start_param_sync_leaves_the_embedding_and_five_qwen3_layers_gathered():
    """Qwen3-4B: a unit of 100.9M parameters, so the prefetch window is 5e8 (the 1e9 floor halved) and five layer
    buckets follow the tied embedding's (151,936 x 2,560): 893.6M bf16 parameters after the step at 2 and 4 ranks,
    none at one (the weight buffer is whole) -- the PAIP rows' 1.8-1.9 GiB that did not shrink with the shard count."""
    m = qwen3_4b()
    layer = float(m.layer_params(0).total)
    emb = megatron_fsdp.embedding_bucket_params(m.vocab, m.hidden, True, 1)
    assert megatron_fsdp.param_sync_bucket_params(emb, layer, m.layers, 1e9) == pytest.approx(emb + 5 * layer)
    # a 70B layer (856M) is past the floor: the window is one unit, and an untied model's bucket holds the head too
    assert megatron_fsdp.param_sync_bucket_params(0.0, 8.56e8, 80, 1e9) == pytest.approx(8.56e8)
    assert megatron_fsdp.embedding_bucket_params(128256, 8192, False, 4) == pytest.approx(2 * 128256 * 8192 / 4)
    tr = Training(seq_len=1024, global_batch_seqs=32)
    for dp, want in ((1, 0.0), (2, 2.0 * (emb + 5 * layer)), (4, 2.0 * (emb + 5 * layer))):
        st = Strategy(tp=1, dp=dp, zero=3, fsdp="full", micro_batch=1, framework="megatron-core")
        est = estimate_memory(m, tr, h100_cluster(gpus=dp), st)
        states = sum(v for k, v in est.items_bytes.items() if k in STEP_STATE_ITEMS)
        assert est.after_step_bytes - states == pytest.approx(want, rel=0.01)
    # torchtitan's FSDP2 leaves nothing gathered after its step
    st = Strategy(tp=1, dp=4, zero=3, fsdp="full", micro_batch=1, framework="torchtitan")
    est = estimate_memory(m, tr, h100_cluster(gpus=4), st)
    assert est.after_step_bytes == pytest.approx(sum(v for k, v in est.items_bytes.items() if k in STEP_STATE_ITEMS))
