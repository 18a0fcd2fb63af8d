"""What Megatron-Core's legacy GroupedMLP keeps for the backward between its two grouped GEMMs, measured with torch
itself (skipped without torch; CPU): the expert activation with the routing probabilities, as Megatron-LM 847781764f
(the Primus MoE package's submodule) writes it (moe/experts.py GroupedMLP: glu and activation_func_with_probs, both
under jit_fuser = torch.compile for torch >= 2.2, core/jit.py), partitioned by the min-cut rematerialisation Inductor
uses. The estimate's per-slot count (routed fc1 output 4 f and routing weight) is that partition's; eager PyTorch would
keep two more f-wide tensors a slot (docs/known-gaps.md 165 (a))."""

from __future__ import annotations

import pytest

from trainsizer.estimate.activations import layer_items
from trainsizer.estimate.inputs import Training
from trainsizer.models import load_model

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

SLOTS = 512
LITE = load_model({"name": "deepseek-v2-lite", "layers": 27, "hidden": 2048, "heads": 16, "kv_heads": 16,
                   "ffn": 10944, "vocab": 102400, "experts": 64, "experts_per_token": 6, "expert_ffn": 1408,
                   "shared_expert_ffn": 2816, "dense_layers": 1, "attention": "mla", "q_lora_rank": 0,
                   "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
                   "mlp": "swiglu", "norm": "rmsnorm", "position": "rope", "tied_embeddings": False})
BF16 = Training(method="pretrain", precision="bf16", seq_len=4096, global_batch_seqs=768)


def _min_cut(fn):
    """torch.compile with AOTAutograd's min-cut partition (Inductor's default) and the graphs run as traced."""
    partitioners = pytest.importorskip("torch._functorch.partitioners")
    aot = pytest.importorskip("torch._functorch.aot_autograd")
    boxed = pytest.importorskip("functorch.compile").make_boxed_func

    def backend(gm, example_inputs):
        run = lambda g, _: boxed(g.forward)  # noqa: E731
        return aot.aot_module_simplified(gm, example_inputs, fw_compiler=run, bw_compiler=run,
                                         partition_fn=partitioners.min_cut_rematerialization_partition)
    return torch.compile(fn, backend=backend)


def _saved_bytes_per_slot(compiled: bool, probs_dtype) -> float:
    """Distinct storage bytes autograd keeps for one call of activation_func_with_probs, per routed slot."""
    jit_fuser = _min_cut if compiled else (lambda fn: fn)

    @jit_fuser
    def glu(x):
        x = torch.chunk(x, 2, dim=-1)
        return torch.nn.functional.silu(x[0]) * x[1]

    @jit_fuser
    def activation_func_with_probs(x, probs):
        dtype = x.dtype
        res = glu(x) * probs
        return res.to(dtype)

    x = torch.randn(SLOTS, 2 * LITE.expert_ffn, dtype=torch.bfloat16, requires_grad=True)
    probs = torch.rand(SLOTS, dtype=probs_dtype, requires_grad=True)
    storages: dict[int, int] = {}

    def pack(t):
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = activation_func_with_probs(x, probs.unsqueeze(-1))
    out.float().sum().backward()  # the partition runs its backward on what it kept
    assert x.grad is not None and probs.grad is not None
    return sum(storages.values()) / SLOTS


def test_compiled_activation_keeps_the_fc1_output_and_the_probability_the_estimate_counts():
    d = layer_items(LITE, BF16, moe=True, profile="megatron", recompute="none", impl="flash").detail
    counted = d["routed_expert_fc1_out_per_slot"] + d["routed_routing_weight_per_slot"]
    assert _saved_bytes_per_slot(True, torch.bfloat16) == pytest.approx(counted)  # 5,632 + 2 B a slot


def test_eager_activation_would_keep_two_more_f_wide_tensors():
    """The check can fail: run eagerly (jit_fuser a no-op), silu's output and the glu product are kept as well."""
    compiled = _saved_bytes_per_slot(True, torch.float32)
    eager = _saved_bytes_per_slot(False, torch.float32)
    assert eager - compiled == pytest.approx(2 * 2 * LITE.expert_ffn)
