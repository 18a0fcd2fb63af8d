"""What torchtitan's token-choice MoE block holds between its forward and its backward under full activation
checkpointing, eager and compiled whole (fullgraph), replayed on CPU: a diagnostic for known-gaps 214 (d), where the
B200 Qwen3-30B-A3B runs' reserved peaks (perf_heldout48's Lambda sweep, perf_heldout55's Nous Research table) grow by
more than the estimate's block input a sequence. Nothing here feeds the estimate.

The block as torchtitan runs it at 1690e0ae (2026-05-13, the Lambda sweep's commit): an attention sub-block, then
models/common/moe.py's MoE with expert parallelism off: TokenChoiceTopKRouter (softmax scores, top-k, gather),
LocalTokenDispatcher.dispatch (histc counts, a stable argsort of the expert indices, the routed copy of the tokens scaled
by their scores), GroupedExperts._experts_forward (three torch._grouped_mm over the cumulative counts, SiLU gate) and
combine's scatter_add; the block under torch.utils.checkpoint (non-reentrant, ptd_checkpoint_wrapper's), and compiled
as distributed/compile.py's apply_compile compiles it at that commit (the whole block, fullgraph, with
capture_scalar_outputs). At a small width (hidden 256, 16 experts, top 4, expert width 128).

Printed: the bytes a token that the forward leaves allocated (torch.profiler's memory events, the block's input and
weights made before), with and without the checkpoint. Measured on torch 2.13 (CPU, 2026-12-06): with the checkpoint
513 B a token eager and compiled (the block's 16-bit output, 512, which the next block saves: the block input), without
it 18,120 eager and 11,976 compiled. So the checkpoint keeps no routed tensor in either mode here; what the Qwen3-30B-A3B
peaks hold beyond the estimate (5-13 hidden widths a token a layer) is not the compiled block's saves.

Run: python benchmarks/titan_moe_full_ac.py   (CPU, about a minute with the compiles)"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from titan_loss_unchunked import live_after

D, E, K, FFN, T = 256, 16, 4, 128, 4096  # hidden, experts, top-k, expert width, tokens
DT = torch.bfloat16


class MoE(nn.Module):
    """torchtitan's MoE at 1690e0ae with EP 1 (router, LocalTokenDispatcher, GroupedExperts), scores before experts."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = nn.Linear(D, E, bias=False)
        self.w1 = nn.Parameter(torch.randn(E, FFN, D) * 0.02)
        self.w3 = nn.Parameter(torch.randn(E, FFN, D) * 0.02)
        self.w2 = nn.Parameter(torch.randn(E, D, FFN) * 0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bs, slen, dim = x.shape
        x = x.view(-1, dim)
        scores = F.softmax(self.gate(x).float(), dim=-1)
        _, idx = torch.topk(scores, K, dim=1)
        top = scores.gather(1, idx)
        counts = torch.histc(idx.view(-1).float(), bins=E, min=0, max=E)
        order = torch.argsort(idx.view(-1), stable=True)
        sorted_scores = top.view(-1)[order]
        tokens = order // K
        routed = (x[tokens].float() * sorted_scores.reshape(-1, 1)).to(x.dtype)
        offs = torch.cumsum(counts, dim=0, dtype=torch.int32)
        h = F.silu(torch._grouped_mm(routed, self.w1.transpose(-2, -1), offs=offs))
        h = h * torch._grouped_mm(routed, self.w3.transpose(-2, -1), offs=offs)
        out = torch._grouped_mm(h, self.w2.transpose(-2, -1), offs=offs)
        combined = torch.zeros_like(x).scatter_add(0, tokens.reshape(-1, 1).expand(-1, dim), out)
        return combined.view(bs, slen, dim)


class Block(nn.Module):
    def __init__(self, full_ac: bool) -> None:
        super().__init__()
        self.full_ac = full_ac
        self.attention_norm, self.ffn_norm = nn.RMSNorm(D), nn.RMSNorm(D)
        self.wqkv, self.wo = nn.Linear(D, 3 * D, bias=False), nn.Linear(D, D, bias=False)
        self.moe = MoE()

    def _body(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = self.wqkv(self.attention_norm(x)).view(b, t, 3, 4, D // 4).unbind(2)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        h = x + self.wo(o.transpose(1, 2).reshape(b, t, D))
        return h + self.moe(self.ffn_norm(h))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return checkpoint(self._body, x, use_reentrant=False) if self.full_ac else self._body(x)


def held_bytes_a_token(full_ac: bool, compiled: bool) -> float:
    """Bytes a token the block's forward leaves allocated (its input and weights made before the trace)."""
    torch.manual_seed(0)
    torch._dynamo.reset()
    torch._dynamo.config.capture_scalar_outputs = True  # apply_compile's setting at 1690e0ae
    block = Block(full_ac).to(DT)
    run_block = torch.compile(block, fullgraph=True) if compiled else block
    warm = torch.randn(1, T, D, dtype=DT, requires_grad=True)
    run_block(warm).sum().backward()  # compile and first-call workspaces outside the trace
    x = torch.randn(1, T, D, dtype=DT, requires_grad=True)
    kept: dict[str, torch.Tensor] = {}

    def forward() -> None:
        kept["out"] = run_block(x)

    return live_after(forward) / T


def main() -> None:
    print(f"torchtitan MoE block (1690e0ae, EP 1): hidden {D}, {E} experts, top {K}, expert width {FFN}, {T} tokens;")
    print(f"bytes a token left allocated by the forward (the 16-bit output alone: {2 * D})")
    for full_ac in (True, False):
        for compiled in (False, True):
            label = f"{'full AC' if full_ac else 'no AC':8s}{'compiled' if compiled else 'eager':9s}"
            print(f"  {label} {held_bytes_a_token(full_ac, compiled):9.0f}")


if __name__ == "__main__":
    main()
