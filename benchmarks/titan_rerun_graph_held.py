"""What a MoE dispatcher that keeps its router's output holds under torchtitan's full activation checkpointing,
replayed on CPU: a diagnostic for known-gaps 282 (a) (perf_heldout55's Nous Research DeepEP rows, Qwen3-30B-A3B on
8-128 B200, whose reserved peaks miss ~57 KB a token and layer). Nothing here feeds the estimate.

The code read: the Nous fork's torchtitan at 366776ace (2025-11-24, the same commits as pytorch/torchtitan PR 2237's
branch). models/moe/moe.py MoE.forward calls `deepep_dispatcher.dispatch_preprocess(top_scores, indices)`, which
(distributed/deepep/utils.py PrimusTurboDeepepManager.setup_metadata) keeps `self.token_probs = top_scores.view(-1,
k)` and the indices on the layer's manager; combine() clears the handle, the dispatched probabilities and the
permutation map, never token_probs. top_scores is the router's softmax output after top-k and route_norm: it needs a
gradient, so its grad_fn reaches back through the router, the MLP norm and the attention to the block's input.
Full AC (distributed/activation_checkpoint.py _apply_full_ac) is ptd_checkpoint_wrapper over torch.utils.checkpoint
(use_reentrant False, preserve_rng_state False, early_stop False: ACConfig's default). The non-reentrant checkpoint
re-runs the block in the backward under its recomputation hook, whose pack hook stores each recomputed tensor for the
first graph's unpack and returns it to the re-run graph (torch 2.13 utils/checkpoint.py _recomputation_hook; the
same at 2.9): the re-run graph, which the backward never runs, keeps every tensor it saved while any of its nodes is
alive. The manager's token_probs from the re-run keeps the nodes up to the router, so each layer's attention and
router saves stay from its backward until its next forward's setup_metadata replaces them. torchtitan's own DeepEP
at 36a4b6942 (2025-12-17) passes its dispatch state by value (DispatchState) and keeps only handles: nothing held.

The replay: four blocks (hidden 256, eight query heads of 32, two K / V heads expanded by repeat_interleave as the
fork's repeat_kv, 16 experts, top 4, expert width 64, 2,048 tokens), each under the non-reentrant checkpoint, with and
without a per-layer manager keeping the router's output; eager, and compiled as torchtitan 366776ace compiles MoE
blocks (apply_compile: the checkpoint-wrapped block, fullgraph False) with a graph break where DeepEP's dispatch
runs. Printed: the bytes a token and layer left allocated after one step's backward (torch.profiler's memory events;
the weights' gradients left out) and, for scale, what the block keeps from its input to the router's output without
checkpointing (its forward run to the router alone). Measured on torch 2.13 (CPU, 2026-12-07): held 0 without the
manager; with it 7,596 B eager and compiled alike, against 7,324 B that the block keeps up to the router without AC
(the rest: the kept scores and indices, 48 B, and the re-run's own copies the first graph's did not need).

Run: python benchmarks/titan_rerun_graph_held.py   (CPU, about two minutes with the compiles)"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from titan_loss_unchunked import live_after

D, H, KVH, E, K, FFN, T, L = 256, 8, 2, 16, 4, 64, 2048, 4  # hidden, heads, K / V heads, experts, top-k, width,
DT = torch.bfloat16  # tokens, layers


class Manager:
    """PrimusTurboDeepepManager's metadata (setup_metadata): the router's output, kept on the layer's object."""

    def __init__(self) -> None:
        self.token_probs: torch.Tensor | None = None
        self.token_indices: torch.Tensor | None = None

    def setup_metadata(self, scores: torch.Tensor, indices: torch.Tensor) -> None:
        self.token_probs, self.token_indices = scores.view(-1, K), indices.view(-1, K)


class Block(nn.Module):
    """An attention sub-block and a token-choice MoE (softmax router, top-k, route_norm, grouped experts)."""

    def __init__(self, held: bool, dispatch_break: bool) -> None:
        super().__init__()
        self.held, self.dispatch_break, self.manager = held, dispatch_break, Manager()
        hd = D // H
        self.attention_norm, self.ffn_norm = nn.RMSNorm(D), nn.RMSNorm(D)
        self.wq, self.wo = nn.Linear(D, D, bias=False), nn.Linear(D, D, bias=False)
        self.wk, self.wv = nn.Linear(D, KVH * hd, bias=False), nn.Linear(D, KVH * hd, bias=False)
        self.gate = nn.Linear(D, E, bias=False)
        self.w1 = nn.Parameter(torch.randn(E, FFN, D) * 0.02)
        self.w3 = nn.Parameter(torch.randn(E, FFN, D) * 0.02)
        self.w2 = nn.Parameter(torch.randn(E, D, FFN) * 0.02)

    def router(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(the MLP norm's output, the routed scores, their expert indices) of the block's input."""
        b, t, _ = x.shape
        hd = D // H
        a = self.attention_norm(x)
        q = self.wq(a).view(b, t, H, hd).transpose(1, 2)
        k = self.wk(a).view(b, t, KVH, hd).transpose(1, 2).repeat_interleave(H // KVH, 1)
        v = self.wv(a).view(b, t, KVH, hd).transpose(1, 2).repeat_interleave(H // KVH, 1)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        h = x + self.wo(o.transpose(1, 2).reshape(b, t, D))
        y = self.ffn_norm(h).view(-1, D)
        scores = F.softmax(self.gate(y).float(), dim=1)
        top, idx = torch.topk(scores, K, dim=1)
        return h, y, top / (top.sum(dim=-1, keepdim=True) + 1e-20), idx

    def body(self, x: torch.Tensor) -> torch.Tensor:
        h, y, top, idx = self.router(x)
        if self.held:
            self.manager.setup_metadata(top, idx)
        if self.dispatch_break:
            torch._dynamo.graph_break()  # DeepEP's dispatch: C++ calls the compiler does not trace
        order = torch.argsort(idx.view(-1), stable=True)
        counts = torch.histc(idx.view(-1).float(), bins=E, min=0, max=E)
        tokens = order // K
        routed = y[tokens]
        offs = torch.cumsum(counts, 0, dtype=torch.int32)
        g = F.silu(torch._grouped_mm(routed, self.w1.transpose(-2, -1), offs=offs))
        g = g * torch._grouped_mm(routed, self.w3.transpose(-2, -1), offs=offs)
        out = torch._grouped_mm(g, self.w2.transpose(-2, -1), offs=offs)
        out = (out.float() * top.view(-1)[order].reshape(-1, 1)).to(out.dtype)
        combined = torch.zeros_like(y).scatter_add(0, tokens.reshape(-1, 1).expand(-1, D), out)
        return h + combined.view_as(h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return checkpoint(self.body, x, use_reentrant=False, preserve_rng_state=False)


def held_bytes_a_token_layer(held: bool, compiled: bool, tokens: int = T, layers: int = L) -> float:
    """Bytes a token and layer left allocated after one step's backward, the weights' gradients left out."""
    torch.manual_seed(0)
    torch._dynamo.reset()
    blocks = nn.ModuleList(Block(held, dispatch_break=compiled) for _ in range(layers)).to(DT)
    run = [torch.compile(b, fullgraph=False) for b in blocks] if compiled else list(blocks)

    def step() -> None:
        y = x = torch.randn(1, tokens, D, dtype=DT, requires_grad=True)
        for block in run:
            y = block(y)
        y.float().square().mean().backward()
        del x

    step()  # compiles, first-call workspaces and the gradients outside the trace
    for p in blocks.parameters():
        p.grad = None
    grads = sum(p.numel() * p.element_size() for p in blocks.parameters())
    return (live_after(step) - grads) / (tokens * layers)


def router_upstream_a_token(tokens: int = T) -> float:
    """What one block keeps without checkpointing from its input to the router's output, a token."""
    torch.manual_seed(0)
    block = Block(held=False, dispatch_break=False).to(DT)
    x = torch.randn(1, tokens, D, dtype=DT, requires_grad=True)
    kept: dict[str, torch.Tensor] = {}

    def forward() -> None:
        kept["top"] = block.router(x)[2]

    return (live_after(forward) - kept["top"].numel() * kept["top"].element_size()) / tokens


def main() -> None:
    print(f"torchtitan MoE blocks under non-reentrant full AC: hidden {D}, {H} / {KVH} heads (K / V expanded), {E} "
          f"experts, top {K}, {T} tokens, {L} layers")
    print(f"what a block keeps from its input to the router's output without AC: {router_upstream_a_token():7.0f} B a "
          f"token (the block input {2 * D} B, held by the checkpoint)")
    print("bytes a token and layer left allocated after the step's backward:")
    for compiled in (False, True):
        for held in (False, True):
            label = f"{'compiled, a graph break at the dispatch' if compiled else 'eager':41s}"
            kept = "router output kept" if held else "nothing kept"
            print(f"  {label} {kept:19s} {held_bytes_a_token_layer(held, compiled):7.0f}")


if __name__ == "__main__":
    main()
