# Settles (not run yet: written 2026-12-06, no GPU lent that session; docs/known-gaps.md 255 (a), 261 (a)) how long
# transformers' GraniteMoe MoE block takes a layer on a GPU at the fms-acceleration runs' shapes, host and device apart:
# the estimate's eager expert path gave those runs 0.55 s a micro-batch where they measured 1.14 s; since 261 it charges
# the whole-weight gradient of every expert's select in the backward (about 19 ms a block on an A100-80GB).
# Run: python benchmarks/device/granitemoe_expert_loop.py (needs torch only; --tiny on a CPU as a smoke test)
"""Wall and host milliseconds of one GraniteMoe MoE block, forward + backward (and the reentrant checkpoint's
re-forward), at granite-3.0-3b-a800m's widths: hidden 1536, 40 experts top-8 of SwiGLU width 512.

The block as transformers 4.45-4.52 write it (models/granitemoe/modeling_granitemoe.py, JetMoe's copy): the router
GEMM in bf16 then .float(), topk, softmax over the k, a zeros / scatter to count each expert's tokens and .tolist() (a
host sync), a sort of the routed slots, the gathered inputs split by expert and one F.linear per expert, every expert
(input_linear 1536 -> 1024, SwiGLU chunk, output_linear 512 -> 1536), torch.cat, the gates multiplied in, index_add
back to the tokens. Written here in plain torch so no transformers install is needed. Cases: loop (that code),
own_weights (the same loop with each expert's weights a parameter of its own, as a ModuleList holds them: no select,
so no whole-weight gradient; loop less own_weights is what 261 (a) charges, whose bytes a block each line prints as
fused_grad_gb) and grouped (the same routed rows through torch._grouped_mm where the build has it, else one bmm over
the experts padded to the largest: a lower bound on the device work with one launch a projection). Tokens: 8 x 240 (the runs' micro-batch
of 8 padded to the 52K Alpaca lengths' expected longest), 8 x 416 (the same at alpaca-cleaned's lengths, mean 218:
docs/known-gaps.md 317 (a)), 1 x 1,744 (those 8 samples padding-free: 8 x 218; with 8 x 416 the block's cost a position
and its fixed part, as 317 (b) splits the ScatterMoE pair) and 8 x 1,304 (the longest sample). Each case at 2 and at 6
stacked blocks, the figure a block = (t6 - t2) / 4, under torch.utils.checkpoint(use_reentrant=True) as the runs'
gradient checkpointing. Host = time until backward() returns without a sync. One JSON line per case and size.
Budget on an A100 / H100: about two minutes. --tiny: tiny widths on the CPU (a smoke test).
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
H, FFN, E, K = (32, 16, 8, 2) if TINY else (1536, 512, 40, 8)
SIZES = [(2, 16)] if TINY else [(8, 240), (8, 416), (1, 1744), (8, 1304)]
WARM, N = (1, 2) if TINY else (3, 10)
BLOCKS = (2, 6)


CASES = ("loop", "own_weights", "grouped")
# bytes a block's backward streams for the whole-weight gradients of the loop case (261 (a)): per expert and fused
# parameter zeros of the whole parameter, then E - 1 adds into the accumulating one (read two, write one)
FUSED_BYTES = E * 3 * H * FFN * (2 if CUDA else 4)
FUSED_GRAD_GB = round((E * FUSED_BYTES + (E - 1) * 3 * FUSED_BYTES) / 1e9, 3)


class Block(torch.nn.Module):
    """GraniteMoeMoE with its gating (JetMoe's code); `case` grouped routes the experts through one call a projection,
    own_weights keeps each expert's weights as parameters of their own (views of these in the loop's layout)."""

    def __init__(self, case: str):
        super().__init__()
        self.case = case
        self.router = torch.nn.Linear(H, E, bias=False)
        self.w_in = torch.nn.Parameter(torch.randn(E, 2 * FFN, H) * 0.02)
        self.w_out = torch.nn.Parameter(torch.randn(E, H, FFN) * 0.02)
        if case == "own_weights":  # one [out, in] parameter an expert, as nn.Linear experts in a ModuleList
            self.own_in = torch.nn.ParameterList([torch.nn.Parameter(w.detach().clone()) for w in self.w_in])
            self.own_out = torch.nn.ParameterList([torch.nn.Parameter(w.detach().clone()) for w in self.w_out])

    def _experts(self, x, proj, sizes):
        w = getattr(self, f"w_{proj}")
        if self.case != "grouped":  # GraniteMoeParallelExperts.forward: split, one F.linear an expert, cat
            ws = getattr(self, f"own_{proj}") if self.case == "own_weights" else w
            return torch.cat([F.linear(part, ws[i]) for i, part in enumerate(x.split(sizes, dim=0))], dim=0)
        if hasattr(torch, "_grouped_mm") and CUDA:
            offs = torch.tensor(sizes, device=x.device).cumsum(0).to(torch.int32)
            try:
                return torch._grouped_mm(x, w.transpose(1, 2), offs=offs)
            except RuntimeError:  # a build or part without the kernel: the padded bmm below
                pass
        top = max(sizes)
        padded = torch.zeros(E, top, x.shape[1], device=x.device, dtype=x.dtype)
        for i, part in enumerate(x.split(sizes, dim=0)):
            padded[i, : part.shape[0]] = part
        out = torch.bmm(padded, w.transpose(1, 2))
        return torch.cat([out[i, :n] for i, n in enumerate(sizes)], dim=0)

    def forward(self, h):
        flat = h.reshape(-1, H)
        logits = self.router(flat).float()
        top_logits, top_idx = logits.topk(K, dim=1)
        gates = torch.softmax(top_logits, dim=1).type_as(flat)
        counts = torch.zeros(flat.shape[0], E, dtype=gates.dtype, device=flat.device).scatter(1, top_idx, 1)
        sizes = counts.long().sum(0).tolist()  # the block's host sync
        _, order = top_idx.flatten().sort(0)
        rows = order.div(K, rounding_mode="trunc")
        x = flat[rows]
        a, b = self._experts(x, "in", sizes).chunk(2, dim=-1)
        y = self._experts(F.silu(a) * b, "out", sizes) * gates.flatten()[order][:, None]
        out = torch.zeros_like(flat).index_add(0, rows, y)
        return h + out.view_as(h)


def timed(case: str, n_blocks: int, b: int, s: int) -> tuple[float, float]:
    """(median wall ms with a sync, median host ms until backward() returned) of n_blocks stacked blocks."""
    blocks = [Block(case).to(DEV, DT) for _ in range(n_blocks)]
    h = torch.randn(b, s, H, device=DEV, dtype=DT, requires_grad=True)
    walls, hosts = [], []
    for i in range(WARM + N):
        if CUDA:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        checkpointed_backward(blocks, h)
        host = time.perf_counter() - t0
        if CUDA:
            torch.cuda.synchronize()
        if i >= WARM:
            walls.append((time.perf_counter() - t0) * 1e3)
            hosts.append(host * 1e3)
    return sorted(walls)[N // 2], sorted(hosts)[N // 2]


def main() -> None:
    for case in CASES:
        for b, s in SIZES:
            (w2, h2), (w6, h6) = (timed(case, n, b, s) for n in BLOCKS)
            per = BLOCKS[1] - BLOCKS[0]
            print(json.dumps({"case": case, "tokens": b * s, "device": DEV,
                              "wall_ms_per_block": round((w6 - w2) / per, 3),
                              "host_ms_per_block": round((h6 - h2) / per, 3),
                              "fused_grad_gb": FUSED_GRAD_GB if case == "loop" else 0.0}))


if __name__ == "__main__":
    main()
