"""The loss phase of torchtitan's unchunked cross-entropy, eager and compiled, as bytes per logit element (tokens x
vocabulary), replayed on CPU: what the torchao README's March 2025 run (loss eager) and the torchao tutorial's June
2025 rerun of the same job (loss compiled) held between the LM head's forward and its backward (known-gaps 138).

- eager: torchtitan at 54ef42221 (2025-03-12): the model returns the 16-bit logits (models/llama/model.py
  `self.output(h)`), components/loss.py cross_entropy_loss upcasts them (`pred.flatten(0, 1).float()`) into
  F.cross_entropy, and train.py `del pred` before `loss.backward()`.
- compiled: torchtitan at 775a486ed (2025-06-03): the same loss under torch.compile (components/loss.py
  build_cross_entropy_loss, training.compile), Inductor here as on the GPU (CPU code generation).

Every allocation and release of the replay comes from torch.profiler's memory events (profile_memory: each CPU
allocator call, Inductor's generated code included). Three figures, the head's input and weight left out:
- allocated: the most bytes live at once (what torch.cuda.max_memory_allocated sees);
- expandable segment: the extent of one address range laid out in allocation order, each request placed in the
  smallest free block that holds it (freed neighbours merged), else at the end, a free tail block grown in place: a
  model of the caching allocator under PYTORCH_CUDA_ALLOC_CONF expandable_segments:True (torchtitan's run_train.sh
  sets it at both commits), whose mapped pages torch.cuda.max_memory_reserved counts until empty_cache; one stream;
- segments: the same events through allocator_replay.CachingAllocator (the default allocator: a cudaMalloc segment
  a request no cached block holds; here + 0.31 B of 20 MiB segments for the CPU kernels' 1-10 MiB workspaces).
The memory estimate's figures: eager 4 + 8 = 12 B (memory_constants.yaml logits hf_*), compiled 2 + 2 = 4 B
(compiled_*), chunked after the head (torchtune's CEWithChunkedOutputLoss, loss_impl chunked) 4 + 2.5 = 6.5 B.
Measured on torch 2.13 (CPU, 2026-12-05), allocated / expandable segment / segments: eager 12.00 / 14.00 / 14.31,
compiled 4.00 / 4.00 / 4.31, PR 996's chunked loss 6.50 / 7.00 / 6.81. Eager, the freed fp32 copy and (at `del pred`) the
16-bit logits leave a 6 B hole below the saved 4 B log-softmax output; the backward's NLL and log-softmax gradients
(4 + 4) need 8, so the second goes above it: 14 B mapped for 12 live.

Run: python benchmarks/titan_loss_unchunked.py   (CPU, about 30 s with the first compile; 1 GB of memory)"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

from allocator_replay import CachingAllocator

D, V, T = 64, 32768, 2048  # hidden, vocabulary, tokens (one sequence): the figures are per logit element
DT = torch.bfloat16


def _trace(run) -> list[tuple[str, int, int]]:
    """Allocation and release events of `run()`, in order: ('a' | 'f', address, bytes), from torch.profiler's
    memory events (profile_memory: every CPU allocator call, Inductor's generated code included)."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        run()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(path))
        events = json.loads(path.read_text(encoding="utf-8"))["traceEvents"]
    out = []
    for e in events:
        if e.get("name") == "[memory]":
            n = int(e["args"]["Bytes"])
            out.append(("a" if n > 0 else "f", int(e["args"]["Addr"]), abs(n)))
    return out


def live_after(run) -> int:
    """Bytes that `run()` allocates and leaves allocated (its `_trace`'s allocations less their releases)."""
    live: dict[int, int] = {}
    for kind, key, n in _trace(run):
        if kind == "a":
            live[key] = n
        else:
            live.pop(key, None)
    return sum(live.values())


def allocated_peak(events: list[tuple[str, int, int]]) -> int:
    live = peak = 0
    for kind, _, n in events:
        live += n if kind == "a" else -n
        peak = max(peak, live)
    return peak


def mapped_peak(events: list[tuple[str, int, int]]) -> int:
    """Extent of a best-fit layout on one growing address range (free neighbours merged, a free tail grown)."""
    blocks: list[list] = []  # [start, size, key or None when free], in address order
    where: dict[int, int] = {}
    end = 0
    for kind, key, n in events:
        if kind == "f":
            if key not in where:  # made before the replay
                continue
            start = where.pop(key)
            for b in blocks:
                if b[0] == start:
                    b[2] = None
            blocks = _merge(blocks)
            continue
        fits = [b for b in blocks if b[2] is None and b[1] >= n]
        if fits:
            b = min(fits, key=lambda b: b[1])
            i = blocks.index(b)
            blocks[i:i + 1] = [[b[0], n, key]] + ([[b[0] + n, b[1] - n, None]] if b[1] > n else [])
        elif blocks and blocks[-1][2] is None:  # grow the free tail in place
            b = blocks[-1]
            b[1], b[2] = n, key
        else:
            blocks.append([end if not blocks else blocks[-1][0] + blocks[-1][1], n, key])
        where[key] = next(b[0] for b in blocks if b[2] == key)
        end = max(end, blocks[-1][0] + blocks[-1][1])
    return end


def segments_peak(events: list[tuple[str, int, int]]) -> int:
    """Peak reserved bytes of the caching allocator without expandable segments (allocator_replay.CachingAllocator:
    a new cudaMalloc segment when no cached free block holds the request)."""
    alloc, live = CachingAllocator(), {}
    for kind, key, n in events:
        if kind == "a":
            live[key] = alloc.malloc(n)
        elif key in live:
            alloc.free(live.pop(key))
    return alloc.peak_reserved


def _merge(blocks: list[list]) -> list[list]:
    out: list[list] = []
    for b in blocks:
        if out and out[-1][2] is None and b[2] is None:
            out[-1][1] += b[1]
        else:
            out.append(list(b))
    return out


def cross_entropy_loss(pred: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """torchtitan components/loss.py cross_entropy_loss (the same at both commits)."""
    return F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))


def chunked_cross_entropy_loss(logits: torch.Tensor, labels: torch.Tensor, num_output_chunks: int = 8) -> torch.Tensor:
    """torchtitan PR 996's chunked loss (components/loss.py at e23bb707d, 2025-03-24; never the default, removed by
    bbb1b616e): the 16-bit logits split after the head, each chunk upcast into cross_entropy_loss, eager."""
    total = 0.0
    for logit_chunk, label_chunk in zip(logits.chunk(num_output_chunks, dim=1), labels.chunk(num_output_chunks, dim=1),
                                        strict=True):
        total += cross_entropy_loss(logit_chunk, label_chunk)
    return total / num_output_chunks


def loss_phase(loss_fn) -> list[tuple[str, int, int]]:
    """train.py's non-PP step from the LM head on: pred = output(h); loss = loss_fn(pred, labels); del pred;
    loss.backward(); the head's weight gradient and the hidden-state gradient are dropped from the trace (FSDP
    takes the first, the last decoder layer the second; the estimate counts them elsewhere)."""
    torch.manual_seed(0)
    h = torch.randn(1, T, D, dtype=DT, requires_grad=True)
    w = torch.randn(V, D, dtype=DT, requires_grad=True)
    labels = torch.randint(0, V, (1, T))

    def run() -> None:
        pred = F.linear(h, w)
        loss = loss_fn(pred, labels)
        del pred
        loss.backward()

    head = {w.numel() * 2, h.numel() * 2}  # the head's weight gradient and the hidden-state gradient
    return [e for e in _trace(run) if e[2] not in head]


def main() -> None:
    compiled = torch.compile(cross_entropy_loss)
    loss_phase(compiled)  # compile outside the trace
    elements = T * V
    runs = (("eager (54ef42221)", cross_entropy_loss), ("compiled (775a486ed)", compiled),
            ("PR 996 chunked, eager", chunked_cross_entropy_loss))
    for name, fn in runs:
        ev = loss_phase(fn)
        print(f"{name:22s} allocated {allocated_peak(ev) / elements:5.2f}, expandable segment "
              f"{mapped_peak(ev) / elements:5.2f}, segments {segments_peak(ev) / elements:5.2f} B per logit element")


if __name__ == "__main__":
    main()
