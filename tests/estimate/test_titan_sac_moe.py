"""torchtitan's per-op selective AC on MoE blocks (activations._op_sac_moe_items, memory._titan_sac_a2a_bytes): its save
list (activation_checkpoint.py `_get_default_save_ops` at b5bcd76c6) has no torch._grouped_mm, so the routed experts
keep nothing but topk's value and index a slot; a biased linear (aten.addmm) is always kept, an unbiased one every
other time; under EP the dispatch and combine all_to_all outputs are kept (docs/known-gaps.md 169)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.estimate.activations import titan_expert_slot_bytes, torchtitan_op_sac_items
from trainsizer.estimate.inputs import Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.models import load_model
from trainsizer.scenario import resolve_job

BF16 = Training(method="pretrain", precision="bf16", seq_len=8192, global_batch_seqs=64)
OSS = load_model("gpt-oss-20b")


def _bytes(model, training=BF16) -> float:
    items = torchtitan_op_sac_items(model, training, moe=True)
    return items.sp + items.tp + items.routed * model.experts_per_token


def test_gpt_oss_block_keeps_its_biased_linears_attention_router_and_topk_only():
    h, q, kv, a = OSS.hidden, OSS.heads * OSS.head_dim, OSS.kv_dim, 2
    want = a * h + a * (q + 2 * kv) + (a * q + 4 * OSS.heads) + a * h + 4 * OSS.experts + 12 * OSS.experts_per_token
    assert _bytes(OSS) == pytest.approx(want)
    assert torchtitan_op_sac_items(OSS, BF16, moe=True).routed == 12.0


@settings(max_examples=20, deadline=None)
@given(ffn=st.integers(64, 16384), k=st.integers(1, 8))
def test_no_routed_expert_tensor_is_kept(ffn, k):
    """The grouped GEMMs are recomputed: the expert width never changes the saved bytes, top-k only through topk."""
    m = dataclasses.replace(OSS, expert_ffn=ffn, experts_per_token=k)
    assert _bytes(m) - 12 * k == pytest.approx(_bytes(OSS) - 12 * OSS.experts_per_token)


def test_unbiased_linears_are_kept_every_other_mm_and_the_shared_expert_continues_the_count():
    bare = dataclasses.replace(OSS, qkv_bias=False, out_bias=False, router_bias=False)
    q, kv, h = OSS.heads * OSS.head_dim, OSS.kv_dim, OSS.hidden
    items = torchtitan_op_sac_items(bare, BF16, moe=True)
    assert items.sp == pytest.approx(2 * h)  # block input; wo (the 4th mm) recomputed, no router scores
    assert items.tp - (2 * q + 4 * OSS.heads) == pytest.approx(2 * (q + kv))  # wq and wv
    shared = dataclasses.replace(bare, shared_expert_ffn=1024)  # w1 (5th) and w2 (7th) kept, w3 (6th) not
    s_items = torchtitan_op_sac_items(shared, BF16, moe=True)
    assert s_items.tp - items.tp == pytest.approx(2 * 1024)
    assert s_items.sp - items.sp == pytest.approx(2 * h)


def _job(ep: int = 1, recompute: str = "selective") -> dict:
    return {"model": "gpt-oss-120b", "data": {"tokens": 1e9}, "seq_len": 8192, "global_batch": {"sequences": 1024},
            "precision": "bf16", "hardware": {"accelerator": "gb300", "count": 64},
            "strategy": {"micro_batch": 16, "recompute": recompute, "framework": "torchtitan", "fsdp": "full",
                         "ep": ep, "torch_compile": True}}


def _acts_gib(**kw) -> float:
    sc = resolve_job(_job(**kw), load_catalog())
    return estimate_memory(sc.model, sc.training, sc.system, sc.strategy).items_bytes["layer_activations"] / 2**30


def test_expert_parallel_keeps_the_dispatch_and_combine_all_to_all_outputs():
    m = load_model("gpt-oss-120b")
    per_slot = 2 * 2 * m.hidden  # two 16-bit hidden-wide rows a routed slot
    want = 16 * 8192 * m.experts_per_token * per_slot * m.layers / 2**30
    assert _acts_gib(ep=8) - _acts_gib(ep=1) == pytest.approx(want, rel=1e-6)
    assert _acts_gib(ep=8, recompute="full") == pytest.approx(_acts_gib(ep=1, recompute="full"))


@pytest.mark.torch
def test_measured_with_torch_on_a_gpt_oss_style_block():
    """benchmarks/titan_sac_moe_saves.py: SelectiveAC's policy on a gpt-oss block, eager, keeps what the items count."""
    pytest.importorskip("torch")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import torch

    import titan_sac_moe_saves as b

    block = b.checkpoint_wrapper(b.Block().to(b.DT), context_fn=b.titan_policy, preserve_rng_state=False)
    x = torch.randn(b.T, b.H, dtype=b.DT, requires_grad=True)
    seen = b.eager_saved(block, x)
    total = sum(v[0] for v in seen.values()) + x.untyped_storage().nbytes()
    assert total / b.T == pytest.approx(b.estimate_bytes_per_token())
    assert not any(v[1] == (b.T * b.K, 2 * b.FE) for v in seen.values())  # no mlp1 output kept


@settings(max_examples=30, deadline=None)
@given(h=st.integers(256, 16384), f=st.integers(64, 16384), clamp=st.booleans())
def test_no_ac_expert_slots_compiled_keep_less_than_eager(h, f, clamp):
    """Compiled, the element-wise operands are recomputed: the input, fc1's output, w2's input and the output stay."""
    m = dataclasses.replace(OSS, hidden=h, expert_ffn=f, activation_clamp=clamp)
    eager = titan_expert_slot_bytes(m, BF16, compiled=False)
    compiled = titan_expert_slot_bytes(m, BF16, compiled=True)
    assert compiled < eager
    assert compiled - 28 == pytest.approx(2 * 2 * h + 3 * 2 * f)
    assert eager - 28 == pytest.approx(2 * h + 4 * h + (7 if clamp else 4) * 2 * f)


@pytest.mark.torch
@pytest.mark.parametrize("mode", ["eager-noac", "compile-noac", "eager-noac-plain", "compile-noac-plain"])
def test_no_ac_expert_slots_measured_with_torch(mode):
    """benchmarks/titan_sac_moe_saves.py without AC: the tensors a routed slot keeps (the rows of the dispatched
    tokens) against titan_expert_slot_bytes, within the index tensors' bytes (16-36 B a slot measured, 28 counted)."""
    torch = pytest.importorskip("torch")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import titan_sac_moe_saves as b

    block = b.Block(plain=mode.endswith("plain")).to(b.DT)
    if mode.startswith("compile"):
        block = torch.compile(block, backend="aot_eager_decomp_partition", fullgraph=True)
    x = torch.randn(b.T, b.H, dtype=b.DT, requires_grad=True)
    b.compiled_saved(block, x)
    seen = b.compiled_saved(block, x)
    slots = b.T * b.K
    kept = sum(v[0] for v in seen.values() if v[1] and v[1][0] == slots) / slots
    m = load_model({"name": "titan-moe", "layers": 1, "hidden": b.H, "heads": b.NH, "kv_heads": b.NKV, "head_dim": b.HD,
                    "ffn": 0, "vocab": 1024, "experts": b.E, "experts_per_token": b.K, "expert_ffn": b.FE,
                    "activation_clamp": not mode.endswith("plain"), "mlp": "swiglu", "norm": "rmsnorm",
                    "position": "rope", "tied_embeddings": False})
    assert kept == pytest.approx(titan_expert_slot_bytes(m, BF16, compiled=mode.startswith("compile")), abs=12.0)
