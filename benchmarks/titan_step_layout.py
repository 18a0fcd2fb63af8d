"""What a torchtitan rank reserves in a step with full activation checkpointing: the forward's layers, the loss and
the backward's re-run layers laid out by the caching allocator under expandable segments, replayed on CPU (known-gaps
214 (a); the question of 203 (f): torchtitan's train step frees the model's output before the backward, so the loss
phase and a re-run layer are never live together, yet memory_modern's torchtitan rows read as their sum).

The step, as torchtitan's train.py runs it without pipelining (at ba2469780, 2024-12, the llama3_h100_202412 rows'
code): `pred = model(input_ids); loss = loss_fn(pred, labels); del pred; loss.backward()`, loss_fn
`F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))` (eager: that train.py leaves the loss uncompiled),
every decoder block wrapped in a non-reentrant checkpoint (ptd_checkpoint_wrapper, activation_checkpoint mode full).
The block is a Llama one (RMSNorm, SDPA with causal mask, SwiGLU), at a small width; what matters is the ratio of the
loss's logit-sized tensors to a block's tensors (vocabulary 16 x hidden here: the fp32 logits of a token 17 x the
block's widest tensor; Llama 3 8B's 36 x, 70B's at TP 8 and sequence parallel 4 x). Each parameter's gradient is
dropped as it is accumulated (FSDP2 reduce-scatters the unsharded gradient and frees it), so the trace holds the
activations, the loss and the working sets alone.

Every allocation and release comes from torch.profiler's memory events; requests of 1 MiB or less (the caching
allocator's small pool) are left out. Printed, in bytes a token:
- allocated: the most bytes live at once (torch.cuda.max_memory_allocated's figure);
- expandable segment: the extent of one address range laid out in allocation order, each request in the smallest
  free block that holds it, else at the end (titan_loss_unchunked.mapped_peak: PYTORCH_CUDA_ALLOC_CONF
  expandable_segments:True, which torchtitan's run_train.sh sets; torch.cuda.max_memory_reserved's figure);
- segments: the default allocator (allocator_replay.CachingAllocator);
- the phases the estimate adds or takes the larger of (memory._backward_phases): the checkpoints at the end of the
  forward, the loss phase's peak above them and the backward's re-run layer peak above them;
- the forward's holes: what its layout maps beyond what it holds when the loss starts (each checkpointed block's
  freed tensors, below the later blocks' checkpoints, the final norm's output and the logits).
Measured on torch 2.13 (CPU, 2026-12-06), bytes a token: live at the loss 6,656, loss phase 48,640 above it, re-run
layer 15,360; the forward's holes 5,888 (the estimate's forward segments, 3 f + 2 h in bf16: 6,400); the phases apart
55,296 (the allocated peak), with the holes beside the loss 61,184, summed 70,656; the expandable segment 65,024 (the
holes, and the loss's own layout 0.9 B a logit element above its live bytes, 138 (a)); the default allocator 72,704.
So under expandable segments the loss's tensors do not reuse the forward's freed pages: known-gaps 214 (a).
Under torchtitan's per-op SAC, eager (op_sac_context: the matmuls and the attention saved, every second matmul
recomputed): live at the loss 41,472, loss phase 48,640, re-run layer 11,520, the forward's holes 2,816; the phases apart
90,112 (the allocated peak), with the holes 92,928, summed 101,632; the expandable segment 99,328 (known-gaps 214 (f)).

Run: python benchmarks/titan_step_layout.py   (CPU, about 10 s; 2 GB of memory)"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

from titan_loss_unchunked import _trace, allocated_peak, mapped_peak, segments_peak
from trainsizer.estimate.allocator_pool import SMALL_SIZE_BYTES  # kSmallSize: up to it, the small pool

D, HEADS, FFN, V = 256, 4, 896, 4096  # hidden, heads, SwiGLU width (3.5 x), vocabulary (16 x)
T, LAYERS = 4096, 8  # tokens of the micro-batch (one sequence), decoder blocks
DT = torch.bfloat16


class Block(nn.Module):
    """A Llama decoder block (torchtitan models/llama/model.py TransformerBlock, at a small width)."""

    def __init__(self) -> None:
        super().__init__()
        self.attention_norm, self.ffn_norm = nn.RMSNorm(D), nn.RMSNorm(D)
        self.wqkv, self.wo = nn.Linear(D, 3 * D, bias=False), nn.Linear(D, D, bias=False)
        self.w1, self.w3 = nn.Linear(D, FFN, bias=False), nn.Linear(D, FFN, bias=False)
        self.w2 = nn.Linear(FFN, D, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = self.wqkv(self.attention_norm(x)).view(b, t, 3, HEADS, D // HEADS).unbind(2)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        h = x + self.wo(o.transpose(1, 2).reshape(b, t, D))
        n = self.ffn_norm(h)
        return h + self.w2(F.silu(self.w1(n)) * self.w3(n))


# torchtitan's per-op SAC save list (distributed/activation_checkpoint.py _op_sac_save_list: the matmuls and the
# attention; CPU SDPA's op in place of the flash / efficient ones), every second matmul recomputed
SAC_SAVE = {torch.ops.aten.mm.default, torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default,
            torch.ops.aten._scaled_dot_product_flash_attention.default,
            torch.ops.aten._scaled_dot_product_efficient_attention.default}


def op_sac_context():
    """torchtitan's _get_custom_policy: save the list's ops but every second matmul (counted apart in the forward
    and the recompute)."""
    counts = {"forward": 0, "recompute": 0}

    def policy(ctx, func, *args, **kwargs):
        mode = "recompute" if ctx.is_recompute else "forward"
        if func == torch.ops.aten.mm.default:
            counts[mode] += 1
        save = func in SAC_SAVE and not (func == torch.ops.aten.mm.default and counts[mode] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if save else CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(policy)


class Model(nn.Module):
    def __init__(self, op_sac: bool = False) -> None:
        super().__init__()
        self.op_sac = op_sac
        self.layers = nn.ModuleList(Block() for _ in range(LAYERS))
        self.norm, self.output = nn.RMSNorm(D), nn.Linear(D, V, bias=False)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            if self.op_sac:
                h = checkpoint(layer, h, use_reentrant=False, context_fn=op_sac_context)
            else:
                h = checkpoint(layer, h, use_reentrant=False)
        return self.output(self.norm(h))


def step_events(op_sac: bool = False) -> tuple[list[tuple[str, int, int]], int]:
    """(the step's allocation events from the embedding's output on, the index of the first event after the
    forward's last block), with each gradient dropped once accumulated; full AC, or torchtitan's per-op SAC, eager."""
    torch.manual_seed(0)
    model = Model(op_sac).to(DT)
    for p in model.parameters():
        p.register_post_accumulate_grad_hook(lambda q: setattr(q, "grad", None))
    labels = torch.randint(0, V, (1, T))
    x = torch.randn(1, T, D, dtype=DT, requires_grad=True)

    def run() -> None:
        pred = model(x)
        loss = F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))
        del pred
        loss.backward()

    run()  # warm up (kernels' first-call workspaces) outside the trace
    x.grad = None
    events = _without_scratch([e for e in _trace(run) if e[2] > SMALL_SIZE_BYTES])
    return events, _forward_end(events)


def _without_scratch(events: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """The events less each request released by the very next event: a kernel's own scratch, which depends on the CPU
    (on an AVX-512 host without native bf16 math, each bf16 matmul takes an fp32 accumulator of twice its output's
    bytes + 128 and frees it before anything else runs; on a GPU a GEMM works in cuBLAS's persistent workspace)."""
    out: list[tuple[str, int, int]] = []
    for e in events:
        if out and e[0] == "f" and out[-1] == ("a", e[1], e[2]):
            out.pop()
        else:
            out.append(e)
    return out


def _forward_end(events: list[tuple[str, int, int]]) -> int:
    """Index of the first event of the loss: the first request of a logit-sized tensor (T x V, 2 or 4 B)."""
    return next(i for i, (kind, _, n) in enumerate(events) if kind == "a" and n >= T * V * 2)


def phases(events: list[tuple[str, int, int]], start: int) -> tuple[int, int, int]:
    """(bytes live when the loss starts, the loss phase's peak above them, the backward's re-run peak above the
    live bytes when it starts): the loss phase runs from `start` until the last logit-sized tensor is freed."""
    live, at_start = 0, 0
    sizes: dict[int, int] = {}
    big = T * V * 2
    loss_peak = rerun_peak = rerun_base = None
    open_big = 0
    for i, (kind, key, n) in enumerate(events):
        if i == start:
            at_start, loss_peak = live, live
        if kind == "a":
            live += n
            sizes[key] = n
            open_big += n >= big
        elif key in sizes:
            live -= sizes.pop(key)
            open_big -= n >= big
        if i >= start and rerun_base is None:
            loss_peak = max(loss_peak, live)
            if open_big == 0 and i > start:
                rerun_base, rerun_peak = live, live
        elif rerun_base is not None:
            rerun_peak = max(rerun_peak, live)
    return at_start, loss_peak - at_start, rerun_peak - at_start


def forward_holes(events: list[tuple[str, int, int]], start: int) -> int:
    """Bytes the forward leaves mapped and free below what it still holds when the loss starts: the laid-out extent
    of its events less the bytes live then (memory._forward_segments' charge: 3 f + 2 h a token in the model dtype)."""
    live = 0
    sizes: dict[int, int] = {}
    for kind, key, n in events[:start]:
        if kind == "a":
            live += n
            sizes[key] = n
        elif key in sizes:
            live -= sizes.pop(key)
    return mapped_peak(events[:start]) - live


def main() -> None:
    print(f"Llama block D {D}, SwiGLU {FFN}, vocabulary {V}, {LAYERS} blocks, {T} tokens, eager loss, `del pred`; "
          f"bytes a token")
    for op_sac in (False, True):
        events, start = step_events(op_sac)
        acts, loss, rerun = phases(events, start)
        holes = forward_holes(events, start)
        rows = (("live at the loss's start (checkpoints, head input)", acts), ("loss phase above it", loss),
                ("re-run layer above it", rerun), (f"the forward's holes below it (3 f + 2 h: {2 * (3 * FFN + 2 * D)})",
                                                   holes),
                ("the phases apart (larger of the two)", acts + max(loss, rerun)),
                ("apart, the holes beside the loss phase", acts + max(loss + holes, rerun)),
                ("the phases summed", acts + loss + rerun), ("allocated peak", allocated_peak(events)),
                ("expandable segment", mapped_peak(events)), ("segments (default allocator)", segments_peak(events)))
        print("per-op SAC (torchtitan's policy):" if op_sac else "full AC:")
        for label, n in rows:
            print(f"  {label:52s} {n / T:9.0f}")


if __name__ == "__main__":
    main()
