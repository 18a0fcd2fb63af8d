# Settles (not run yet: written 2026-12-07 for whichever GPU a later session is lent; docs/known-gaps.md 275 (c)):
# whether torchtitan's Qwen3-30B-A3B MoE block keeps memory between its forward and its backward under full
# activation checkpointing on CUDA. The B200 runs of that model (perf_heldout48's Lambda sweep, perf_heldout55's Nous
# Research table) miss 1-2.5 MiB a token beyond the estimate, ~24-51 KB a token and layer, while the CPU replays
# (benchmarks/titan_moe_full_ac.py, and with graph breaks, known-gaps 275 (c)) leave only the block's 16-bit output.
# Here a stack of the model's blocks at its own widths runs one forward and backward under
# torch.utils.checkpoint (non-reentrant, as ptd_checkpoint_wrapper), eager, compiled whole (fullgraph, torchtitan's
# apply_compile from 2026) and compiled with graph breaks around the experts (fullgraph False, the Nous branch's
# MoE blocks with DeepEP's C++ calls); each prints what the forward leaves allocated a token and layer, the peaks, and
# the largest blocks alive after the forward.
# Run: python benchmarks/device/titan_moe_saves.py [--tiny]   (--tiny: tiny shapes on the CPU, eager only, a smoke test; a few
# minutes on an H100 or B200, most of it compiling; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True as torchtitan's
# run_train.sh sets it, if the caller wants the reserved figure as the runs had it)
"""Qwen3-30B-A3B's block (hidden 2,048; 32 query heads and 4 K / V heads of 128 with q / k RMSNorm; 128 experts of
768, top 8, softmax scores renormalised) as torchtitan's models/common/moe.py runs it without expert parallelism: the
router's fp32 scores, a stable argsort of the expert indices, the routed copy of the tokens, three torch._grouped_mm
over the cumulative counts, the scores applied after the experts in fp32 and scatter_add back. Routing is torchtitan's
forced balance (debug_moe_force_load_balance: round-robin experts, every expert the same share), so the grouped GEMMs'
offsets stay aligned. One JSON line a mode: held bytes a token and layer after the forward (beyond the inputs), the
max allocated / reserved over the step, and the sizes of the five largest live blocks after the forward (CUDA); then
the device line."""

import json
import sys

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

TINY = "--tiny" in sys.argv
CUDA = torch.cuda.is_available() and not TINY
DEV = "cuda" if CUDA else "cpu"
DT = torch.bfloat16
H, HEADS, KV, HEAD_DIM, E, K, FFN, LAYERS, TOKENS = (
    (64, 4, 2, 16, 8, 2, 32, 2, 64) if TINY else (2048, 32, 4, 128, 128, 8, 768, 4, 8192))
GIB = 2**30
# the smoke run leaves out the compiled modes (Inductor's compile takes minutes on a CPU)
MODES = ("eager",) if TINY else ("eager", "compiled", "compiled-breaks")


class Block(torch.nn.Module):
    """One decoder block: attention with q / k norms and K / V repeated to the query heads (torchtitan's repeat_kv),
    then the MoE; `breaks` puts a graph break before and after the routed experts."""

    def __init__(self, breaks: bool):
        super().__init__()
        self.breaks = breaks
        self.n1, self.n2 = torch.nn.RMSNorm(H), torch.nn.RMSNorm(H)
        self.qn, self.kn = torch.nn.RMSNorm(HEAD_DIM), torch.nn.RMSNorm(HEAD_DIM)
        self.wq = torch.nn.Linear(H, HEADS * HEAD_DIM, bias=False)
        self.wkv = torch.nn.Linear(H, 2 * KV * HEAD_DIM, bias=False)
        self.wo = torch.nn.Linear(HEADS * HEAD_DIM, H, bias=False)
        self.gate = torch.nn.Linear(H, E, bias=False)
        self.w1 = torch.nn.Parameter(torch.randn(E, FFN, H) * 0.02)
        self.w3 = torch.nn.Parameter(torch.randn(E, FFN, H) * 0.02)
        self.w2 = torch.nn.Parameter(torch.randn(E, H, FFN) * 0.02)

    def attention(self, x):
        t = x.shape[1]
        q = self.qn(self.wq(x).view(1, t, HEADS, HEAD_DIM))
        k, v = self.wkv(x).view(1, t, 2, KV, HEAD_DIM).unbind(2)
        k = self.kn(k).repeat_interleave(HEADS // KV, dim=2)
        v = v.repeat_interleave(HEADS // KV, dim=2)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        return self.wo(o.transpose(1, 2).reshape(1, t, HEADS * HEAD_DIM))

    def moe(self, x):
        x = x.view(-1, H)
        n = x.shape[0]
        scores = F.softmax(self.gate(x).float(), dim=-1)
        idx = (torch.arange(n * K, device=x.device) % E).view(n, K)  # forced balance (round-robin)
        top = scores.gather(1, idx)
        top = top / top.sum(dim=-1, keepdim=True)
        order = torch.argsort(idx.view(-1), stable=True)
        tokens = order // K
        routed = x[tokens]
        offs = (torch.arange(1, E + 1, device=x.device) * (n * K // E)).to(torch.int32)  # every expert's share
        if self.breaks:
            torch._dynamo.graph_break()
        h = F.silu(torch._grouped_mm(routed, self.w1.transpose(-2, -1), offs=offs))
        h = h * torch._grouped_mm(routed, self.w3.transpose(-2, -1), offs=offs)
        out = torch._grouped_mm(h, self.w2.transpose(-2, -1), offs=offs)
        if self.breaks:
            torch._dynamo.graph_break()
        out = (out.float() * top.view(-1)[order].reshape(-1, 1)).to(x.dtype)
        return torch.zeros_like(x).scatter_add(0, tokens.reshape(-1, 1).expand(-1, H), out).view(1, n, H)

    def body(self, x):
        h = x + self.attention(self.n1(x))
        return h + self.moe(self.n2(h))

    def forward(self, x):
        return checkpoint(self.body, x, use_reentrant=False)


def largest_live_mib(n: int = 5) -> list[float]:
    blocks = [b["size"] for seg in torch.cuda.memory_snapshot() for b in seg["blocks"] if b["state"] == "active_allocated"]
    return [round(s / 2**20, 1) for s in sorted(blocks, reverse=True)[:n]]


def run(mode: str) -> dict:
    torch.manual_seed(0)
    torch._dynamo.reset()
    torch._dynamo.config.capture_scalar_outputs = True
    blocks = [Block(breaks=mode == "compiled-breaks").to(DEV, DT) for _ in range(LAYERS)]
    run_blocks = blocks if mode == "eager" else [torch.compile(b, fullgraph=mode == "compiled") for b in blocks]

    def step(x):
        for b in run_blocks:
            x = b(x)
        return x

    step(torch.randn(1, TOKENS, H, device=DEV, dtype=DT, requires_grad=True)).float().square().mean().backward()
    for b in blocks:
        b.zero_grad(set_to_none=True)
    x = torch.randn(1, TOKENS, H, device=DEV, dtype=DT, requires_grad=True)
    out = {"mode": mode}
    if CUDA:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    y = step(x)
    if CUDA:
        torch.cuda.synchronize()
        held = torch.cuda.memory_allocated() - base - y.numel() * y.element_size()
        out |= {"held_b_per_token_layer": round(held / TOKENS / LAYERS), "live_after_forward_mib": largest_live_mib()}
    y.float().square().mean().backward()
    if CUDA:
        torch.cuda.synchronize()
        out |= {"max_allocated_gib": round((torch.cuda.max_memory_allocated() - base) / GIB, 3),
                "max_reserved_gib": round(torch.cuda.max_memory_reserved() / GIB, 3)}
    out["grad_finite"] = bool(torch.isfinite(x.grad).all())
    return out


def main():
    for mode in MODES:
        print(json.dumps(run(mode)), flush=True)
    name = torch.cuda.get_device_name(0) if CUDA else "cpu"
    print(json.dumps({"device": name, "layers": LAYERS, "tokens": TOKENS, "hidden": H, "experts": E, "top_k": K,
                      "block_input_b_per_token": 2 * H}))


if __name__ == "__main__":
    main()
