# Settles (not run yet: written 2026-12-07, no GPU lent that session; docs/known-gaps.md 273 (b), (c)) what a Mixtral
# MoE layer costs a micro-batch on a GPU and its host, host and device apart: the estimate misses the hf Mixtral rows
# by a cost a layer flat in the tokens (about 6 ms on DeepCompile's H100 hosts, 13-18 ms on fms-acceleration's A100
# host), and a host twice the shipped per-op figures fits the A100 rows.
# Run: python benchmarks/device/mixtral_moe_loop.py (needs torch only; --tiny on a CPU as a smoke test)
"""Host facts of the lent machine and wall / host milliseconds of one Mixtral-8x7B MoE block, forward + backward with
the reentrant checkpoint's re-forward, at Mixtral's widths (hidden 4,096, 8 experts top-2 of SwiGLU width 14,336).

Host facts (the estimate's perf_constants.yaml host_sync figures, by their own methods): launch_bound_op_us, torch.mm
at 64 x 64 x 64 in bf16 timed back to back without a sync, per op (pytorch/pytorch PR 194311's method, NVIDIA's 14.8 us
shipped); round_trip_us, a one-element add followed by torch.cuda.synchronize on an empty queue, per pair (no NVIDIA
figure is shipped; AMD's 16.9 us from pytorch/FBGEMM PR 6219).

The block as transformers 4.45-4.51 write it (models/mixtral/modeling_mixtral.py MixtralSparseMoeBlock), in plain torch:
the router GEMM, fp32 softmax, top-2, renormalised weights, one_hot(...).permute(2, 1, 0), then per expert
torch.where(expert_mask[i]) (a host sync), hidden_states[None, top_x], w1 / act / w3 / product / w2, the routing
weight, index_add_. Cases: loop (4.45: range(num_experts)), loop_hit (4.47+: the hit experts from
expert_mask.sum(...).nonzero(), the ModuleList indexed by a one-element tensor: two syncs an expert), grouped (the same
routed rows through torch._grouped_mm where the build has it, else one padded bmm: the device work with one call a
projection) and dense (one SwiGLU MLP of the same widths over every token: Mistral-7B's, the dense twin of the rows).
Tokens: 125 (fms-acceleration's Mixtral row: one Alpaca sample) and 8,192 (its two-GPU rows: 2 x 4,096). Each case at
2 and at 4 stacked blocks, the figure a block = (t4 - t2) / 2, under torch.utils.checkpoint(use_reentrant=True) as the
runs' gradient checkpointing. Host = time until backward() returns without a sync. One JSON line per fact, case and
size. Budget on an H100: about two minutes (a block's weights are 2.8 GB in bf16, their gradients as much).
--tiny: tiny widths on the CPU (a smoke test).
"""

import json
import sys
import time

import torch
import torch.nn.functional as F
from _timing import checkpointed_backward

TINY = "--tiny" in sys.argv
CUDA = torch.cuda.is_available() and not TINY
DEV = "cuda" if CUDA else "cpu"
DT = torch.bfloat16 if CUDA else torch.float32
H, FFN, E, K = (32, 64, 8, 2) if TINY else (4096, 14336, 8, 2)
TOKENS = [16, 64] if TINY else [125, 8192]
WARM, N = (1, 2) if TINY else (2, 6)
BLOCKS = (2, 4)
CASES = ("loop", "loop_hit", "grouped", "dense")


def sync() -> None:
    if CUDA:
        torch.cuda.synchronize()


def host_facts() -> dict[str, float]:
    """(launch_bound_op_us, round_trip_us) on this machine, medians of N batches."""
    a = torch.randn(64, 64, device=DEV, dtype=DT)
    one = torch.ones(1, device=DEV)
    ops, trips = [], []
    for _ in range(WARM + N):
        sync()
        t0 = time.perf_counter()
        for _ in range(200):
            torch.mm(a, a)
        ops.append((time.perf_counter() - t0) / 200 * 1e6)
        sync()
        t0 = time.perf_counter()
        for _ in range(200):
            one.add_(1.0)
            sync()
        trips.append((time.perf_counter() - t0) / 200 * 1e6)
    return {"launch_bound_op_us": round(sorted(ops[WARM:])[N // 2], 2),
            "round_trip_us": round(sorted(trips[WARM:])[N // 2], 2)}


class Expert(torch.nn.Module):
    """MixtralBlockSparseTop2MLP: w2(act(w1 x) * w3 x)."""

    def __init__(self):
        super().__init__()
        self.w1 = torch.nn.Linear(H, FFN, bias=False)
        self.w3 = torch.nn.Linear(H, FFN, bias=False)
        self.w2 = torch.nn.Linear(FFN, H, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(torch.nn.Module):
    """MixtralSparseMoeBlock (its residual added here), or one dense Expert for the dense case."""

    def __init__(self, case: str):
        super().__init__()
        self.case = case
        self.gate = torch.nn.Linear(H, E, bias=False)
        self.experts = torch.nn.ModuleList([Expert() for _ in range(1 if case == "dense" else E)])

    def _grouped(self, flat, routing, selected):
        order = selected.flatten().argsort()
        rows = order.div(K, rounding_mode="trunc")
        sizes = torch.bincount(selected.flatten(), minlength=E).tolist()
        x = flat[rows]
        ws = [torch.stack([getattr(ex, n).weight for ex in self.experts]) for n in ("w1", "w3", "w2")]
        if CUDA and hasattr(torch, "_grouped_mm"):
            offs = torch.tensor(sizes, device=x.device).cumsum(0).to(torch.int32)
            mm = lambda a, w: torch._grouped_mm(a, w.transpose(1, 2), offs=offs)  # noqa: E731
        else:
            def mm(a, w):
                outs = [F.linear(part, w[i]) for i, part in enumerate(a.split(sizes, dim=0))]
                return torch.cat(outs, dim=0)
        y = mm(F.silu(mm(x, ws[0])) * mm(x, ws[1]), ws[2]) * routing.flatten()[order][:, None]
        return torch.zeros_like(flat).index_add(0, rows, y)

    def forward(self, h):
        flat = h.reshape(-1, H)
        if self.case == "dense":
            return h + self.experts[0](flat).view_as(h)
        logits = self.gate(flat)
        routing = F.softmax(logits, dim=1, dtype=torch.float)
        routing, selected = torch.topk(routing, K, dim=-1)
        routing = (routing / routing.sum(dim=-1, keepdim=True)).to(flat.dtype)
        if self.case == "grouped":
            return h + self._grouped(flat, routing, selected).view_as(h)
        out = torch.zeros_like(flat)
        mask = F.one_hot(selected, num_classes=E).permute(2, 1, 0)
        hit = torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero() if self.case == "loop_hit" else range(E)
        for i in hit:
            expert = self.experts[i]  # loop_hit: a one-element tensor, __index__ -> .item()
            idx, top_x = torch.where(mask[i].squeeze(0) if self.case == "loop_hit" else mask[i])
            state = flat[None, top_x].reshape(-1, H)
            out.index_add_(0, top_x, (expert(state) * routing[top_x, idx, None]).to(flat.dtype))
        return h + out.view_as(h)


def timed(case: str, n_blocks: int, tokens: int) -> tuple[float, float]:
    """(median wall ms with a sync, median host ms until backward() returned) of n_blocks stacked blocks."""
    blocks = [Block(case).to(DEV, DT) for _ in range(n_blocks)]
    h = torch.randn(1, tokens, H, device=DEV, dtype=DT, requires_grad=True)
    walls, hosts = [], []
    for i in range(WARM + N):
        for blk in blocks:
            blk.zero_grad(set_to_none=True)
        sync()
        t0 = time.perf_counter()
        checkpointed_backward(blocks, h)
        host = time.perf_counter() - t0
        sync()
        if i >= WARM:
            walls.append((time.perf_counter() - t0) * 1e3)
            hosts.append(host * 1e3)
    del blocks
    if CUDA:
        torch.cuda.empty_cache()
    return sorted(walls)[N // 2], sorted(hosts)[N // 2]


def main() -> None:
    print(json.dumps({"case": "host", "device": DEV} | host_facts()))
    for case in CASES:
        for tokens in TOKENS:
            (w2, h2), (w4, h4) = (timed(case, n, tokens) for n in BLOCKS)
            per = BLOCKS[1] - BLOCKS[0]
            print(json.dumps({"case": case, "tokens": tokens, "device": DEV,
                              "wall_ms_per_block": round((w4 - w2) / per, 3),
                              "host_ms_per_block": round((h4 - h2) / per, 3)}))


if __name__ == "__main__":
    main()
