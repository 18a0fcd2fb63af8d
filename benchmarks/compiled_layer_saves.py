"""Saved-for-backward bytes of a torchtune-style Llama decoder layer (torchtune/modules at 1814feb: RMSNorm with its
fp32 upcast, MultiHeadAttention with K / V expanded before SDPA, RoPE in fp32, FeedForward with a SiLU gate), eager
and under torch.compile (per layer, as torchtune's training.compile_model does), full fine-tuning and LoRA (rank 64
on q, v, o and the MLP, as llama3_2/3B_lora_single_device), measured with saved_tensors_hooks (each storage once,
parameters and buffers left out). Dimensions keep Llama 3.2 3B's ratios (ffn / hidden 2.67, K / V 1/3 of the
hidden width, head dim 128). The memory estimate's torchtune items (memory.py: hf eager items + expanded K / V;
compiled: norms as a fused kernel, no SiLU output) give 45.4 / 32.0 h bytes per token for the full layer.

Run: python benchmarks/compiled_layer_saves.py [eager|compile]   (CPU; compiling takes a few minutes)"""
from __future__ import annotations

import sys

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
H, NH, NKV, HD, FFN, S, B = 768, 6, 2, 128, 2048, 512, 1
DT = torch.bfloat16


class RMSNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(d))

    def forward(self, x):
        x_fp32 = x.float()
        x_normed = (x_fp32 * torch.rsqrt(x_fp32.pow(2).mean(-1, keepdim=True) + 1e-5)).type_as(x)
        return x_normed * self.scale


def rope(x, cache):  # torchtune RotaryPositionalEmbeddings: fp32 math
    xs = x.float().reshape(*x.shape[:-1], -1, 2)
    c = cache[: x.shape[1]].view(1, x.shape[1], 1, xs.size(3), 2)
    out = torch.stack([xs[..., 0] * c[..., 0] - xs[..., 1] * c[..., 1],
                       xs[..., 1] * c[..., 0] + xs[..., 0] * c[..., 1]], -1)
    return out.flatten(3).type_as(x)


class Layer(nn.Module):
    def __init__(self, lora):
        super().__init__()
        self.n1, self.n2 = RMSNorm(H), RMSNorm(H)
        self.q, self.k = nn.Linear(H, NH * HD, bias=False), nn.Linear(H, NKV * HD, bias=False)
        self.v, self.o = nn.Linear(H, NKV * HD, bias=False), nn.Linear(NH * HD, H, bias=False)
        self.w1, self.w3, self.w2 = (nn.Linear(H, FFN, bias=False), nn.Linear(H, FFN, bias=False),
                                     nn.Linear(FFN, H, bias=False))
        theta = 1.0 / (500000 ** (torch.arange(0, HD, 2).float() / HD))
        ang = torch.outer(torch.arange(S).float(), theta)
        self.register_buffer("cache", torch.stack([ang.cos(), ang.sin()], -1), persistent=False)
        self.lora = lora
        if lora:  # rank-64 adapters on q, v, o and the MLP (3B_lora_single_device)
            r = 64
            self.ad = nn.ModuleDict({n: nn.Sequential(nn.Linear(i, r, bias=False), nn.Linear(r, o_, bias=False))
                                     for n, i, o_ in (("q", H, NH * HD), ("v", H, NKV * HD), ("o", NH * HD, H),
                                                      ("w1", H, FFN), ("w3", H, FFN), ("w2", FFN, H))})

    def lin(self, name, x):
        y = getattr(self, name)(x)
        if self.lora and name in self.ad:
            y = y + 2.0 * self.ad[name](x)
        return y

    def forward(self, x):
        b, s, _ = x.shape
        h = self.n1(x)
        q = rope(self.lin("q", h).view(b, s, NH, HD), self.cache)
        k = rope(self.lin("k", h).view(b, s, NKV, HD), self.cache)
        v = self.lin("v", h).view(b, s, NKV, HD)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        shape = (b, NKV, NH // NKV, s, HD)
        k = k.unsqueeze(2).expand(shape).flatten(1, 2)
        v = v.unsqueeze(2).expand(shape).flatten(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        a = a.transpose(1, 2).contiguous().view(b, s, -1)
        x = x + self.lin("o", a)
        h = self.n2(x)
        return x + self.lin("w2", F.silu(self.lin("w1", h)) * self.lin("w3", h))


def saved_bytes(layer, x):
    seen = {}
    skip = {t.untyped_storage().data_ptr() for t in list(layer.parameters()) + list(layer.buffers())}

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() in skip:
            return t
        seen[st.data_ptr()] = (st.nbytes(), tuple(t.shape), t.dtype)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = layer(x)
    out.float().sum().backward()
    return seen


def main() -> None:
    modes = sys.argv[1:] or ["eager", "compile"]
    for mode, lora in [(m, lo) for m in modes for lo in (False, True)]:
        layer = Layer(lora).to(DT)
        if lora:
            for n, p in layer.named_parameters():
                p.requires_grad_(n.startswith("ad."))
        x = torch.randn(B, S, H, dtype=DT, requires_grad=True)
        if mode == "compile":
            layer = torch.compile(layer)
            saved_bytes(layer, x)  # warm up / compile
        seen = saved_bytes(layer, x)
        tot = sum(v[0] for v in seen.values())
        # weights are parameters (skipped); per token per hidden element
        print(f"{mode} lora={lora}: {tot / (B * S * H):.2f} h bytes per token")
        for v in sorted(seen.values(), key=lambda v: -v[0]):
            print(f"   {v[0] / (B * S * H):6.3f}h {v[1]} {v[2]}")


if __name__ == "__main__":
    main()
