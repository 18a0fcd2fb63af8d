"""What torchtitan's per-op selective activation checkpointing keeps of a GPT-OSS MoE block, eager and compiled: a
block written as torchtitan's gpt_oss at b5bcd76c6 writes it (models/gpt_oss/__init__.py, model.py, moe.py and
models/common/moe.py, token_dispatcher.py: tokens as [T, D], RMSNorm, one fused wqkv with a bias, RoPE, attention,
wo with a bias; the router's biased gate under fp32, softmax, topk, gather, route_norm; the local dispatcher's argsort
and gather; GptOssGroupedExperts' two torch._grouped_mm with their biases and the clamped SwiGLU; the combine's fp32
score product and scatter_add), wrapped as SelectiveAC wraps it (distributed/activation_checkpoint.py at b5bcd76c6:
`_get_default_save_ops` -- torch's compute-intensive ops, linear, topk, max, the attention -- every second aten.mm
recomputed, the router gate's mm shape forced to recompute) and compiled as apply_compile compiles it (the wrapped
block, fullgraph) on torch's min-cut partitioner (aot_eager_decomp_partition, which partitions as Inductor does).
Attention: SDPA's CPU flash kernel (in the save list as the flex / varlen ops are on GPU), without gpt-oss's sinks
(an element-wise rescale by the kept log-sum-exp).

Printed: the bytes kept per token (eager: the storages SAC's dispatch mode caches and the block input; compiled: what
the compiled block saves for its backward), each tensor, and the memory estimate's count for the same widths
(activations.torchtitan_op_sac_items(moe=True): block input, wqkv, attention output and log-sum-exp, wo, the fp32
router scores, topk's fp32 value and int64 index per slot; no routed expert tensor).
Modes eager-noac / compile-noac (and -plain: the common GroupedExperts of Qwen3 / DeepSeek-V3 / Llama 4, silu(x w1) *
(x w3) without biases): the block without AC, what it saves for its backward; the routed slots' share is
activations.titan_expert_slot_bytes. Measured on torch 2.13 (CPU, 2026-12-05): see docs/known-gaps.md 169 (a).

Run: python benchmarks/titan_sac_moe_saves.py [eager|compile|eager-noac|compile-noac|eager-noac-plain|...]   (CPU)"""
from __future__ import annotations

import sys
from collections import defaultdict

import torch
import torch.nn.functional as F
from torch import nn
from torch._functorch.partitioners import get_default_op_list
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

import titan_sac_saves as tss

torch.manual_seed(0)
H, NH, NKV, HD, E, K, FE, T = 256, 4, 1, 64, 8, 2, 256, 512
DT = torch.bfloat16


RMSNorm = tss.RMSNorm  # torchtitan's RMSNorm, as titan_sac_saves writes it


ROPE_TABLES = ("cos", "sin")  # this block's RoPE buffers, attributes of the block


def swiglu(x, alpha: float = 1.702, limit: float = 7.0):  # models/gpt_oss/moe.py
    x_glu, x_linear = x[..., ::2], x[..., 1::2]
    x_glu = x_glu.clamp(min=None, max=limit)
    x_linear = x_linear.clamp(min=-limit, max=limit)
    out_glu = x_glu * torch.sigmoid(alpha * x_glu)
    return torch.addcmul(out_glu, out_glu, x_linear)


class Block(nn.Module):
    def __init__(self, plain: bool = False):
        super().__init__()
        self.plain = plain  # the common GroupedExperts (Qwen3, DeepSeek-V3, Llama 4) instead of gpt-oss's
        self.attention_norm, self.ffn_norm = RMSNorm(H), RMSNorm(H)
        self.wqkv = nn.Linear(H, (NH + 2 * NKV) * HD, bias=True)
        self.wo = nn.Linear(NH * HD, H, bias=True)
        self.gate = nn.Linear(H, E, bias=True)
        self.mlp1_w = nn.Parameter(torch.randn(E, 2 * FE, H) * 0.02)
        self.mlp1_b = nn.Parameter(torch.zeros(E, 2 * FE))
        self.mlp2_w = nn.Parameter(torch.randn(E, H, FE) * 0.02)
        self.mlp2_b = nn.Parameter(torch.zeros(E, H))
        theta = 1.0 / (150000 ** (torch.arange(0, HD, 2).float() / HD))
        self.cos = torch.cos(torch.outer(torch.arange(T).float(), theta)).repeat(1, 2)
        self.sin = torch.sin(torch.outer(torch.arange(T).float(), theta)).repeat(1, 2)

    def rope(self, x):
        x1, x2 = x[..., : HD // 2], x[..., HD // 2:]
        rot = torch.cat((-x2, x1), dim=-1)
        return (x.float() * self.cos[:, None] + rot.float() * self.sin[:, None]).type_as(x)

    def attention(self, x):
        q, k, v = self.wqkv(self.attention_norm(x)).split([NH * HD, NKV * HD, NKV * HD], dim=-1)
        q, k = self.rope(q.view(T, NH, HD)), self.rope(k.view(T, NKV, HD))
        v = v.view(T, NKV, HD)
        o = F.scaled_dot_product_attention(q.transpose(0, 1)[None], k.transpose(0, 1)[None],
                                           v.transpose(0, 1)[None], is_causal=True, enable_gqa=True)
        return self.wo(o[0].transpose(0, 1).reshape(T, NH * HD).contiguous())

    def moe(self, x):
        scores = F.softmax(F.linear(x.float(), self.gate.weight.float(), self.gate.bias.float()), dim=-1)
        _, ids = torch.topk(scores, k=K, dim=-1, sorted=False)
        top = scores.gather(-1, ids)
        top = top / (top.sum(-1, keepdim=True) + 1e-20)
        counts = torch.zeros_like(scores, dtype=torch.bool).scatter_(-1, ids, True).sum(0)
        order = torch.argsort(ids.view(-1), stable=True)
        top_sorted = top.view(-1)[order]
        tok = order // K
        routed = x[tok]
        offs = torch.cumsum(counts, 0, dtype=torch.int32)
        n = torch.cat([counts, (routed.shape[0] - offs[-1]).unsqueeze(0)]).long()
        b1 = torch.cat([self.mlp1_b, self.mlp1_b.new_zeros(1, 2 * FE)]).repeat_interleave(n, 0, output_size=T * K)
        if self.plain:  # models/common/moe.py GroupedExperts: silu(x w1) * (x w3), w2; no biases
            w1, w3 = self.mlp1_w[:, :FE], self.mlp1_w[:, FE:]
            h = F.silu(torch._grouped_mm(routed, w1.transpose(-2, -1), offs=offs))
            h = h * torch._grouped_mm(routed, w3.transpose(-2, -1), offs=offs)
            h = torch._grouped_mm(h, self.mlp2_w.transpose(-2, -1), offs=offs)
        else:
            h = torch._grouped_mm(routed, self.mlp1_w.transpose(-2, -1), offs=offs) + b1
            b2 = torch.cat([self.mlp2_b, self.mlp2_b.new_zeros(1, H)]).repeat_interleave(n, 0, output_size=T * K)
            h = torch._grouped_mm(swiglu(h), self.mlp2_w.transpose(-2, -1), offs=offs) + b2
        h = (h.float() * top_sorted.reshape(-1, 1)).to(h.dtype)
        return torch.zeros_like(x).scatter_add(0, tok.reshape(-1, 1).expand(-1, H), h)

    def forward(self, x):
        x = x + self.attention(x)
        return x + self.moe(self.ffn_norm(x))


def titan_policy():
    """SelectiveAC's policy at b5bcd76c6 for the ops of this block (the CPU flash kernel for the attention op)."""
    save = {op.default for op in get_default_op_list().compute_intensive_ops}
    save |= {torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default, torch.ops.aten.max.default,
             torch.ops.aten.linear.default, torch.ops.aten.topk.default}
    mm_ops = (torch.ops.aten.mm.default, torch.ops.aten.linear.default)
    force = {(H, E)}  # force_recompute_mm_shapes_by_fqns ["moe.router.gate"]: (in, out)
    meta = defaultdict(int)

    def policy(ctx, func, *args, **kwargs):
        key = "recompute" if ctx.is_recompute else "forward"
        if func in mm_ops:
            shape = tuple(args[1].shape)
            if (shape[::-1] if func == torch.ops.aten.linear.default else shape) in force:
                return CheckpointPolicy.PREFER_RECOMPUTE
            meta[key] += 1
        if func in save:
            if func in mm_ops and meta[key] % 2 == 0:
                return CheckpointPolicy.PREFER_RECOMPUTE
            return CheckpointPolicy.MUST_SAVE
        return CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(policy)


def eager_saved(block, x):
    """titan_sac_saves.eager_saved on this block's RoPE tables (cos, sin)."""
    return tss.eager_saved(block, x, ROPE_TABLES)


def compiled_saved(block, x):
    return tss.compiled_saved(block, x, ROPE_TABLES)


def estimate_bytes_per_token() -> float:
    from trainsizer.estimate.activations import torchtitan_op_sac_items
    from trainsizer.estimate.inputs import Training
    from trainsizer.models import load_model

    model = load_model({"name": "gpt-oss-like", "layers": 1, "hidden": H, "heads": NH, "kv_heads": NKV,
                        "head_dim": HD, "ffn": 0, "vocab": 1024, "experts": E, "experts_per_token": K,
                        "expert_ffn": FE, "qkv_bias": True, "out_bias": True, "router_bias": True,
                        "mlp": "swiglu", "norm": "rmsnorm", "position": "rope", "tied_embeddings": False})
    items = torchtitan_op_sac_items(model, Training(method="pretrain", precision="bf16", seq_len=T,
                                                    global_batch_seqs=1), moe=True)
    return items.sp + items.tp + items.routed * K


def main() -> None:
    for mode in sys.argv[1:] or ["eager", "compile"]:
        block = checkpoint_wrapper(Block().to(DT), context_fn=titan_policy, preserve_rng_state=False)
        x = torch.randn(T, H, dtype=DT, requires_grad=True)
        if "noac" in mode:  # no AC: what the block saves for its backward, eager or compiled
            block = Block(plain=mode.endswith("plain")).to(DT)
            if mode.startswith("compile"):
                block = torch.compile(block, backend="aot_eager_decomp_partition", fullgraph=True)
                compiled_saved(block, x)
            seen = compiled_saved(block, x)
        elif mode == "compile":
            block = torch.compile(block, backend="aot_eager_decomp_partition", fullgraph=True)
            compiled_saved(block, x)  # trace once
            seen = compiled_saved(block, x)
        else:
            seen = eager_saved(block, x)
            seen[x.untyped_storage().data_ptr()] = (x.untyped_storage().nbytes(), tuple(x.shape), x.dtype)
        total = sum(v[0] for v in seen.values())
        print(f"{mode}: {total / T:.0f} bytes per token ({total / (T * H):.2f} h)")
        for v in sorted(seen.values(), key=lambda v: -v[0]):
            print(f"   {v[0] / T:8.1f} B/token {v[1]} {v[2]}")
    print(f"estimate (activations.torchtitan_op_sac_items, moe): {estimate_bytes_per_token():.0f} bytes per token")


if __name__ == "__main__":
    main()
