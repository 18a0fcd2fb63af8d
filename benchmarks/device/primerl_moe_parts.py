# Settles (not run yet: written 2026-12-06; no GPU is lent this session; docs/known-gaps.md 222 (a), 204 (a)): which
# of the MoE layer's parts carries the Qwen3-30B-A3B prime-rl row's +3.18 s a step (8 H200, EP 1, 2 micro-batches of
# 1 x 16,384 a GPU, every layer checkpointed). Run it under the rows' torch 2.9 on one H200 (or H100): each part's
# seconds a step (per_step_s) against the estimate's, the grouped GEMMs against plain GEMMs of the same rows.
# Run: python benchmarks/device/primerl_moe_parts.py (--tiny on a CPU as a smoke test)
"""prime-rl d8f290ef0's MoE layer (models/layers/moe.py, torchtitan a1fdd7e's) at one GPU's micro-batch of the row:
16,384 tokens, hidden 2,048, 128 experts of width 768, top-8, all experts local (EP 1). Its parts, each timed alone
with CUDA events (median of N): torch.gather of the routed rows (forward; backward = scatter_add of bf16 rows into
the tokens), the three torch._grouped_mm of the experts (w1 / w3: N 768, K 2,048; w2: N 2,048, K 768) forward, dgrad
and wgrad (the 2d x 2d form with offsets), the same GEMMs as one plain torch.mm over all routed rows (the estimate's
dense rate), the weighted out.scatter_add into the tokens (forward; backward = gather), torchtitan's expert_parallel
permute x[permuted_indices] (forward; backward = index_put_ accumulate), and the whole MoE forward + backward eager and
(on a GPU) torch.compile'd as prime-rl compiles a layer. Routing: balanced (token i -> experts 8 i .. 8 i + 7 mod
128) and random top-8 of random logits. One JSON line per part and routing: ms a call, the calls a step (48 layers x
2 micro-batches x the passes the part runs: forward, its re-run, backward), per_step_s, and TFLOP/s where it is a
GEMM."""

import json
import sys

import torch
from _timing import median_ms

TINY = "--tiny" in sys.argv
DEV = "cuda" if torch.cuda.is_available() and not TINY else "cpu"
TOKENS, HIDDEN, FFN, EXPERTS, TOPK = (64, 32, 16, 4, 2) if TINY else (16384, 2048, 768, 128, 8)
LAYER_PASSES = 48 * 2  # Qwen3-30B-A3B's 48 layers x the row's 2 micro-batches a step
WARM, N = (1, 3) if TINY else (3, 20)
BF16 = torch.bfloat16


def timed(fn) -> float:
    """Median milliseconds of fn() over N runs after WARM (_timing.median_ms)."""
    return median_ms(fn, DEV, WARM, N)


def routing(kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(token index of each routed row in expert-major order, rows each expert takes), as TokenReorderer builds them
    (stable argsort of the selected experts)."""
    if kind == "balanced":
        sel = (torch.arange(TOKENS).unsqueeze(1) * TOPK + torch.arange(TOPK)) % EXPERTS
    else:
        sel = torch.randn(TOKENS, EXPERTS, generator=torch.Generator().manual_seed(0)).topk(TOPK, dim=1).indices
    order = torch.argsort(sel.reshape(-1), stable=True)
    counts = torch.bincount(sel.reshape(-1), minlength=EXPERTS)
    return (order // TOPK).to(DEV), counts.to(DEV)


def experts(x, w1, w2, w3, offs):
    """prime-rl's _run_experts_grouped_mm body (silu(x w1) * (x w3)) w2, one torch._grouped_mm each."""
    h = torch.nn.functional.silu(torch._grouped_mm(x, w1.transpose(-2, -1), offs=offs))
    h = h * torch._grouped_mm(x, w3.transpose(-2, -1), offs=offs)
    return torch._grouped_mm(h, w2.transpose(-2, -1), offs=offs)


def moe(x, w1, w2, w3, idx, offs, scores):
    """prime-rl's MoE.forward after the router: gather, experts, scores after the experts, scatter_add."""
    routed = torch.gather(x, 0, idx)
    out = (experts(routed, w1, w2, w3, offs).float() * scores).to(x.dtype)
    return torch.zeros_like(x).scatter_add(0, idx, out)


def gemm_parts(rows: int, offs) -> dict:
    """{name: (fn, flops)}: w1's and w2's grouped forward, dgrad and wgrad, and the same GEMM as one plain mm."""
    parts = {}
    for name, n, k in (("w1", FFN, HIDDEN), ("w2", HIDDEN, FFN)):
        a, w = torch.randn(rows, k, dtype=BF16, device=DEV), torch.randn(EXPERTS, n, k, dtype=BF16, device=DEV)
        g, wd = torch.randn(rows, n, dtype=BF16, device=DEV), torch.randn(k, n, dtype=BF16, device=DEV)
        f = 2.0 * rows * n * k
        parts[f"{name} grouped fwd"] = (lambda a=a, w=w: torch._grouped_mm(a, w.transpose(-2, -1), offs=offs), f)
        parts[f"{name} grouped dgrad"] = (lambda g=g, w=w: torch._grouped_mm(g, w, offs=offs), f)
        parts[f"{name} grouped wgrad"] = (lambda g=g, a=a: torch._grouped_mm(g.t(), a, offs=offs), f)
        parts[f"{name} plain mm fwd"] = (lambda a=a, wd=wd: a @ wd, f)
    return parts


def part_lines(kind: str) -> list[dict]:
    """One dict a part at one routing: ms, calls a step, per_step_s, TFLOP/s for the GEMMs."""
    idx_tok, counts = routing(kind)
    rows = idx_tok.numel()
    offs = torch.cumsum(counts, 0, dtype=torch.int32)
    idx = idx_tok.unsqueeze(1).expand(-1, HIDDEN)
    x = torch.randn(TOKENS, HIDDEN, dtype=BF16, device=DEV)
    routed = torch.randn(rows, HIDDEN, dtype=BF16, device=DEV)
    perm = torch.randperm(rows, device=DEV)
    ops = {"gather fwd": (lambda: torch.gather(x, 0, idx), 2),
           "gather bwd scatter_add": (lambda: torch.zeros_like(x).scatter_add_(0, idx, routed), 1),
           "combine fwd scatter_add": (lambda: torch.zeros_like(x).scatter_add(0, idx, routed), 2),
           "combine bwd gather": (lambda: routed.gather(0, idx), 1),
           "ep permute fwd index": (lambda: routed[perm], 2),
           "ep permute bwd index_put accumulate": (
               lambda: torch.zeros_like(routed).index_put_((perm,), routed, accumulate=True), 1)}
    out = [{"part": p, "routing": kind, "ms": timed(fn), "calls_a_step": c * LAYER_PASSES}
           for p, (fn, c) in ops.items()]
    for p, (fn, flops) in gemm_parts(rows, offs).items():
        ms = timed(fn)
        calls = (2 if "fwd" in p else 1) * (2 if p.startswith("w1") else 1) * LAYER_PASSES  # w1 and w3 alike
        out.append({"part": p, "routing": kind, "ms": ms, "calls_a_step": calls,
                    "tflops": float(f"{flops / ms / 1e9:.4g}")})
    out.append(whole_moe(kind, x, idx, offs, routed))
    return out


def whole_moe(kind: str, x, idx, offs, routed) -> dict:
    """The MoE after the router, forward + backward (its re-run's forward not included), eager; compiled on a GPU."""
    ws = [torch.randn(*s, dtype=BF16, device=DEV, requires_grad=True)
          for s in ((EXPERTS, FFN, HIDDEN), (EXPERTS, HIDDEN, FFN), (EXPERTS, FFN, HIDDEN))]
    xr = x.clone().requires_grad_(True)
    scores = torch.rand(routed.shape[0], 1, device=DEV)
    line = {"part": "moe fwd+bwd", "routing": kind, "calls_a_step": LAYER_PASSES,
            "check_max_abs_err": check_grouped(routed, ws[0].detach(), offs)}
    for name, f in (("ms", moe), ("compiled_ms", torch.compile(moe) if DEV == "cuda" else None)):
        if f is not None:
            line[name] = timed(lambda f=f: f(xr, *ws, idx, offs, scores).backward(torch.ones_like(x)))
    return line


def check_grouped(x, w, offs) -> float:
    """Max abs difference of w1's grouped forward from a per-expert loop over the same rows (fp32 reference)."""
    got = torch._grouped_mm(x, w.transpose(-2, -1), offs=offs).float()
    starts = [0] + offs[:-1].tolist()
    bounds = zip(starts, offs.tolist(), strict=True)
    ref = torch.cat([x[a:b].float() @ w[e].float().t() for e, (a, b) in enumerate(bounds)])
    return float((got - ref).abs().max())


def main() -> None:
    name = torch.cuda.get_device_name(0) if DEV == "cuda" else "cpu"
    print(json.dumps({"torch": torch.__version__, "cuda": torch.version.cuda, "device": name, "tokens": TOKENS,
                      "hidden": HIDDEN, "ffn": FFN, "experts": EXPERTS, "topk": TOPK}))
    for kind in ("balanced", "random"):
        for line in part_lines(kind):
            for key in ("ms", "compiled_ms"):
                if key in line:
                    line[key.replace("ms", "per_step_s")] = round(line[key] * line["calls_a_step"] / 1e3, 4)
                    line[key] = round(line[key], 4)
            print(json.dumps(line))


if __name__ == "__main__":
    main()
