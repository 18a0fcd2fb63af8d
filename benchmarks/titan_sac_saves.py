"""What torchtitan's per-op selective activation checkpointing keeps of a Llama block, eager and compiled: a
torchtitan-style block (models/llama3: RMSNorm, wq / wk / wv, RoPE, SDPA with K / V expanded by repeat_kv, wo, SwiGLU
w1 / w3 / w2) wrapped as torchtitan's SelectiveAC wraps it (distributed/activation_checkpoint.py at bcc09297a:
checkpoint_wrapper with create_selective_checkpoint_contexts; its policy saves compute-intensive ops and SDPA, every
second mm recomputed), then compiled as apply_compile compiles it (the wrapped block), on torch's min-cut
partitioner (the backend aot_eager_decomp_partition, which partitions as Inductor does).
Eager, it counts the block input the checkpoint keeps and the outputs SAC's dispatch mode caches (the
_VersionWrapper objects alive after the forward); compiled, what the compiled block saves for its backward
(saved_tensors_hooks). The memory estimate counts, per token, the block input, wq / wv / w1 outputs, the attention
output with its log-sum-exp and, eager only, w2's output (activations.torchtitan_op_sac_items,
memory._compiled_sac_unread): at these widths 2 + 2 + 0.67 + 5.33 + 2 + 2 h bytes per token and the log-sum-exp
(0.03), 14.03 eager, 12.03 compiled. Measured on torch 2.13 (CPU, 2026-12-04): eager 14.03, compiled 12.03, the
difference w2's output.

Run: python benchmarks/titan_sac_saves.py [eager|compile]   (CPU)"""
from __future__ import annotations

import gc
import sys
from collections import defaultdict

import torch
import torch.nn.functional as F
from torch import nn
from torch._functorch.partitioners import get_default_op_list
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

torch.manual_seed(0)
H, NH, NKV, HD, FFN, S, B = 768, 6, 2, 128, 2048, 256, 1
DT = torch.bfloat16


class RMSNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)).type_as(x) * self.weight


def rope(x, freqs):  # torchtitan apply_rotary_emb: complex product in fp32
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(xc * freqs.view(1, x.shape[1], 1, -1)).flatten(3).type_as(x)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention_norm, self.ffn_norm = RMSNorm(H), RMSNorm(H)
        self.wq, self.wk = nn.Linear(H, NH * HD, bias=False), nn.Linear(H, NKV * HD, bias=False)
        self.wv, self.wo = nn.Linear(H, NKV * HD, bias=False), nn.Linear(NH * HD, H, bias=False)
        self.w1, self.w3 = nn.Linear(H, FFN, bias=False), nn.Linear(H, FFN, bias=False)
        self.w2 = nn.Linear(FFN, H, bias=False)
        theta = 1.0 / (500000 ** (torch.arange(0, HD, 2).float() / HD))
        # complex RoPE table kept off the module's buffers, so .to(bf16) leaves it complex
        self.freqs = torch.polar(torch.ones(S, HD // 2), torch.outer(torch.arange(S).float(), theta))

    def forward(self, x):
        b, s, _ = x.shape
        h = self.attention_norm(x)
        q = rope(self.wq(h).view(b, s, NH, HD), self.freqs)
        k = rope(self.wk(h).view(b, s, NKV, HD), self.freqs)
        v = self.wv(h).view(b, s, NKV, HD)
        rep = NH // NKV  # repeat_kv
        k = k[:, :, :, None, :].expand(b, s, NKV, rep, HD).reshape(b, s, NH, HD)
        v = v[:, :, :, None, :].expand(b, s, NKV, rep, HD).reshape(b, s, NH, HD)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        x = x + self.wo(a.transpose(1, 2).reshape(b, s, -1))
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


def titan_policy():
    """torchtitan SelectiveAC's policy (activation_checkpoint.py at bcc09297a), the ops of this block."""
    save = {op.default for op in get_default_op_list().compute_intensive_ops}
    save |= {torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default,
             torch.ops.aten._scaled_dot_product_efficient_attention.default,
             torch.ops.aten._scaled_dot_product_flash_attention.default, torch.ops.aten.max.default}
    mm_ops = (torch.ops.aten.mm.default, torch.ops.aten.linear.default)
    meta = defaultdict(int)

    def policy(ctx, func, *args, **kwargs):
        key = "recompute" if ctx.is_recompute else "forward"
        if func in mm_ops:
            meta[key] += 1
        if func in save:
            if func in mm_ops and meta[key] % 2 == 0:
                return CheckpointPolicy.PREFER_RECOMPUTE
            return CheckpointPolicy.MUST_SAVE
        return CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(policy)


def wrapped():
    return checkpoint_wrapper(Block().to(DT), context_fn=titan_policy, preserve_rng_state=False)


def eager_saved(block, x, tables: tuple[str, ...] = ("freqs",)):
    """Storages SAC's dispatch mode caches (its _VersionWrapper objects) plus what the checkpoint keeps; objects gc
    hands back that are dead weak proxies are skipped."""
    from torch.utils.checkpoint import _VersionWrapper

    params = _constants(block, tables)
    out = block(x)
    seen = {}
    for o in gc.get_objects():
        try:
            if not isinstance(o, _VersionWrapper) or not isinstance(o.val, torch.Tensor):
                continue
        except ReferenceError:
            continue
        st = o.val.untyped_storage()
        if st.data_ptr() not in params:
            seen[st.data_ptr()] = (st.nbytes(), tuple(o.val.shape), o.val.dtype)
    out.float().sum().backward()
    return seen


def _constants(block, tables: tuple[str, ...]):
    """Storages that are not activations: parameters and the block's RoPE tables (one per model in torchtitan)."""
    inner = block._orig_mod if hasattr(block, "_orig_mod") else block
    inner = inner._checkpoint_wrapped_module if hasattr(inner, "_checkpoint_wrapped_module") else inner
    kept = [*inner.parameters(), *inner.buffers(), *(getattr(inner, name) for name in tables)]
    return {t.untyped_storage().data_ptr() for t in kept}


def compiled_saved(block, x, tables: tuple[str, ...] = ("freqs",)):
    params = _constants(block, tables)
    seen = {}

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in params:
            seen[st.data_ptr()] = (st.nbytes(), tuple(t.shape), t.dtype)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = block(x)
    out.float().sum().backward()
    return seen


def main() -> None:
    for mode in sys.argv[1:] or ["eager", "compile"]:
        block = wrapped()
        x = torch.randn(B, S, H, dtype=DT, requires_grad=True)
        if mode == "compile":
            block = torch.compile(block, backend="aot_eager_decomp_partition", fullgraph=True)
            compiled_saved(block, x)  # trace once
            seen = compiled_saved(block, x)
        else:
            seen = eager_saved(block, x)
            seen[x.untyped_storage().data_ptr()] = (x.untyped_storage().nbytes(), tuple(x.shape), x.dtype)
        total = sum(v[0] for v in seen.values())
        print(f"{mode}: {total / (B * S * H):.2f} h bytes per token")
        for v in sorted(seen.values(), key=lambda v: -v[0]):
            print(f"   {v[0] / (B * S * H):6.3f}h {v[1]} {v[2]}")


if __name__ == "__main__":
    main()
