# Settles (not run yet: written 2026-12-06 for whichever GPU a later session is lent; docs/known-gaps.md 237 (a)):
# whether a training step slows when its caching allocator runs at the card's limit. nanotron's 80B at TP 4 x PP 16
# on 8 nodes and at TP 8 x PP 4, and InternLM's 7B without recompute, are their batches' largest reserved estimates and
# run 27-205% / 0.7 s a step slower than any modelled term. Here a stack of Llama-style layers trains with a ballast
# tensor taking the card's free memory step by step: each level prints its median step time, the allocator's
# num_alloc_retries (a cudaMalloc that failed, freed the cached blocks, synchronized and retried) and the peaks.
# Run: python benchmarks/device/near_limit_step.py [--tiny]   (--tiny: tiny shapes on the CPU, a smoke test; a few
# minutes on an H100)
"""Layers of hidden h (RMSNorm, fused QKV, SDPA, output projection, SwiGLU) in bf16 with AdamW states; a step runs
`inflight` micro-batches' forwards, then their backwards (the activations of `inflight` micro-batches held at once, as
1F1B's first rank holds p of them), then AdamW. One JSON line a ballast level: ballast GiB, median step ms over 5 steps
after 2 warm-ups, alloc retries in those 5, max allocated / reserved GiB; then the device's name and total GiB."""

import json
import sys

import torch
import torch.nn.functional as F
from _timing import median_ms

TINY = "--tiny" in sys.argv
CUDA = torch.cuda.is_available() and not TINY
DEV = "cuda" if CUDA else "cpu"
DT = torch.bfloat16 if CUDA else torch.float32
# a TP 4 shard of the 80B's layer (hidden 8192, 16 of its 64 heads of 128, a quarter of its 28,672 FFN) as nanotron's
# PP 16 rank holds six, one 4,096-token sequence a micro-batch; or tiny on the CPU
H, HEADS, HEAD_DIM, FFN, LAYERS, TOKENS, INFLIGHT = (
    (64, 4, 16, 128, 2, 32, 2) if TINY else (8192, 16, 128, 7168, 6, 4096, 8))
GIB = 2**30


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.n1, self.n2 = torch.nn.RMSNorm(H), torch.nn.RMSNorm(H)
        d = HEADS * HEAD_DIM
        self.qkv, self.out = torch.nn.Linear(H, 3 * d, bias=False), torch.nn.Linear(d, H, bias=False)
        self.up, self.down = torch.nn.Linear(H, 2 * FFN, bias=False), torch.nn.Linear(FFN, H, bias=False)

    def forward(self, x):
        q, k, v = self.qkv(self.n1(x)).view(1, TOKENS, 3, HEADS, HEAD_DIM).unbind(2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        x = x + self.out(a.transpose(1, 2).reshape(1, TOKENS, HEADS * HEAD_DIM))
        gate, up = self.up(self.n2(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


def step(model, opt):
    losses = [model(torch.randn(1, TOKENS, H, device=DEV, dtype=DT)).float().square().mean() for _ in range(INFLIGHT)]
    for loss in losses:
        loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


def level(model, opt, ballast_gib: float) -> dict:
    """One ballast level: the ballast held beside the steps (an OOM, in the ballast or a step, ends the sweep)."""
    retries = (lambda: torch.cuda.memory_stats().get("num_alloc_retries", 0)) if CUDA else (lambda: 0)
    try:
        ballast = torch.empty(int(ballast_gib * GIB), dtype=torch.uint8, device=DEV) if ballast_gib > 0 else None
        if CUDA:
            torch.cuda.reset_peak_memory_stats()
        before = retries()
        ms = median_ms(lambda: step(model, opt), DEV, 2, 5)
    except torch.OutOfMemoryError:
        opt.zero_grad(set_to_none=True)
        return {"ballast_gib": ballast_gib, "oom": True}
    out = {"ballast_gib": ballast_gib, "step_ms": round(ms, 2), "alloc_retries": retries() - before}
    if CUDA:
        out |= {"max_allocated_gib": round(torch.cuda.max_memory_allocated() / GIB, 2),
                "max_reserved_gib": round(torch.cuda.max_memory_reserved() / GIB, 2)}
    del ballast
    return out


def main():
    model = torch.nn.Sequential(*[Layer() for _ in range(LAYERS)]).to(DEV, DT)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, foreach=True)
    step(model, opt)  # the optimizer's states exist before the first level
    total = torch.cuda.get_device_properties(0).total_memory / GIB if CUDA else 0.0
    free = (torch.cuda.mem_get_info()[0] / GIB) if CUDA else 0.0
    # no ballast, then shares of the memory the driver still has free once a step's blocks are cached, up to OOM
    for gib in [0.0] + ([round(free * f, 1) for f in (0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 1.0)] if CUDA else []):
        row = level(model, opt, gib)
        print(json.dumps(row), flush=True)
        if row.get("oom"):
            break
        if CUDA:
            torch.cuda.empty_cache()
    name = torch.cuda.get_device_name(0) if CUDA else "cpu"
    print(json.dumps({"device": name, "total_gib": round(total, 2), "layers": LAYERS, "tokens": TOKENS,
                      "inflight": INFLIGHT}))


if __name__ == "__main__":
    main()
