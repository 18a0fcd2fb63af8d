"""What torchtitan's per-op selective activation checkpointing keeps of a Llama block under tensor parallelism with
sequence parallelism (TP 2), eager and compiled, beside what `titan_sac_saves.py` counts without TP: the block of
titan_sac_saves.py parallelised as torchtitan's llama3 apply_tp parallelises a TransformerBlock (attention_norm /
ffn_norm SequenceParallel, PrepareModuleInput Shard(1) -> Replicate, wq / wk / wv / w1 / w3 ColwiseParallel, wo / w2
RowwiseParallel(output_layouts=Shard(1))), its save list torchtitan's late-2025 `_save_list` (mm, the SDPA ops,
_c10d_functional.reduce_scatter_tensor, max: torchtitan/distributed/activation_checkpoint.py), every second mm
recomputed. One process on torch's fake process group (world size 2: collectives keep their shapes, move nothing).
Printed: bytes kept per token of the whole sequence, in units of h (hidden x 1 B), per TP rank.

Run: python benchmarks/titan_tp_sac_saves.py [eager|compile]   (CPU)"""
from __future__ import annotations

import sys
from collections import defaultdict

import torch
import torch.distributed as dist
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
from torch.distributed.tensor import Replicate, Shard
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    RowwiseParallel,
    SequenceParallel,
    parallelize_module,
)
from torch.testing._internal.distributed.fake_pg import FakeStore
from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

from titan_sac_saves import DT, B, Block, H, S

TP = 2
SAVE = {torch.ops.aten.mm.default, torch.ops.aten._scaled_dot_product_efficient_attention.default,
        torch.ops.aten._scaled_dot_product_flash_attention.default,
        torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default,
        torch.ops._c10d_functional.reduce_scatter_tensor.default, torch.ops.aten.max.default}


def policy_context():
    meta = defaultdict(int)

    def policy(ctx, func, *args, **kwargs):
        key = "recompute" if ctx.is_recompute else "forward"
        if func == torch.ops.aten.mm.default:
            meta[key] += 1
        if func in SAVE and not (func == torch.ops.aten.mm.default and meta[key] % 2 == 0):
            return CheckpointPolicy.MUST_SAVE
        return CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(policy)


class TPBlock(Block):
    """The block as a TP rank runs it: the normed Shard(1) sequence gathered to Replicate before the projections
    (torchtitan's PrepareModuleInput on attention / feed_forward), local head counts (its views take -1 heads)."""

    def forward(self, x):
        import titan_sac_saves as base
        nh, nkv, hd = base.NH // TP, base.NKV // TP, base.HD
        h = self.attention_norm(x).redistribute(placements=[Replicate()]).to_local()
        b, s, _ = h.shape
        q = base.rope(self.wq(h).view(b, s, nh, hd), self.freqs)
        k = base.rope(self.wk(h).view(b, s, nkv, hd), self.freqs)
        v = self.wv(h).view(b, s, nkv, hd)
        rep = nh // nkv  # repeat_kv
        k = k[:, :, :, None, :].expand(b, s, nkv, rep, hd).reshape(b, s, nh, hd)
        v = v[:, :, :, None, :].expand(b, s, nkv, rep, hd).reshape(b, s, nh, hd)
        a = base.F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                is_causal=True)
        x = x + self.wo(a.transpose(1, 2).reshape(b, s, -1))
        h = self.ffn_norm(x).redistribute(placements=[Replicate()]).to_local()
        return x + self.w2(base.F.silu(self.w1(h)) * self.w3(h))


def build(mesh):
    block = TPBlock().to(DT)
    plan = {
        "attention_norm": SequenceParallel(use_local_output=False),
        "wq": ColwiseParallel(), "wk": ColwiseParallel(), "wv": ColwiseParallel(),
        "wo": RowwiseParallel(output_layouts=Shard(1)),
        "ffn_norm": SequenceParallel(use_local_output=False),
        "w1": ColwiseParallel(), "w3": ColwiseParallel(),
        "w2": RowwiseParallel(output_layouts=Shard(1)),
    }
    parallelize_module(block, mesh, plan)
    return checkpoint_wrapper(block, context_fn=policy_context, preserve_rng_state=False)


def _locals(block):
    inner = block._orig_mod if hasattr(block, "_orig_mod") else block
    inner = inner._checkpoint_wrapped_module if hasattr(inner, "_checkpoint_wrapped_module") else inner
    kept = [p.to_local() if hasattr(p, "to_local") else p for p in inner.parameters()] + [inner.freqs]
    return {t.untyped_storage().data_ptr() for t in kept}


def saved(block, x, compiled: bool):
    """Storages the block keeps for its backward: eager, SAC's cached outputs (its _VersionWrapper objects) and
    the checkpoint's input; compiled, what the compiled block saves (saved_tensors_hooks)."""
    import gc

    from torch.utils.checkpoint import _VersionWrapper
    params = _locals(block)
    seen = {}

    def note(t):
        t = t.to_local() if hasattr(t, "to_local") else t
        st = t.untyped_storage()
        if st.data_ptr() not in params:
            seen[st.data_ptr()] = (st.nbytes(), tuple(t.shape), t.dtype)

    if compiled:
        def pack(t):
            note(t)
            return t
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = block(x)
    else:
        out = block(x)
        for o in gc.get_objects():
            try:
                if isinstance(o, _VersionWrapper) and isinstance(o.val, torch.Tensor):
                    note(o.val)
            except ReferenceError:
                continue
        note(x)
    out.float().sum().backward()
    return seen


def main() -> None:
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=TP)
    mesh = dist.device_mesh.init_device_mesh("cpu", (TP,))
    for mode in sys.argv[1:] or ["eager", "compile"]:
        block = build(mesh)
        x = torch.randn(B, S // TP, H, dtype=DT, requires_grad=True)
        if mode == "compile":
            block = torch.compile(block, backend="aot_eager_decomp_partition")
            saved(block, x, True)
        seen = saved(block, x, mode == "compile")
        total = sum(v[0] for v in seen.values())
        print(f"{mode} TP {TP}: {total / (B * S * H):.3f} h bytes per token of the sequence, a TP rank")
        for v in sorted(seen.values(), key=lambda v: -v[0]):
            print(f"   {v[0] / (B * S * H):6.3f}h {v[1]} {v[2]}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
