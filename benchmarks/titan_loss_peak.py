"""Peak memory of torchtitan's chunked loss with its inner cross-entropy eager (ChunkedLossWrapper, components/loss.py
at bcc09297a, the loop without FSDP: each chunk's lm_head, CrossEntropyLoss on the .float() logits and backward
before the next, the hidden-state gradient gathered in GradAccumulator's fp32 buffer), measured with torch's
MemTracker (a TorchDispatchMode that follows every storage; CPU). Past the weights, the hidden states and labels,
the peak holds the fp32 buffer, the chunks' contiguous 16-bit copies (micro-batch > 1), the head's 16-bit weight
gradient and one chunk's loss tensors. The memory estimate counts the last as 14 B a chunk element: the loop's 16-bit
logits, log_softmax's fp32 output, the NLL gradient and the log-softmax input gradient (memory_constants.yaml
logits.torchtitan_chunked). Measured on torch 2.13 (2026-12-04): 14.00.

Run: python benchmarks/titan_loss_peak.py   (CPU, seconds)"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributed._tools.mem_tracker import MemTracker

torch.manual_seed(0)
D, V, B, L, N = 256, 32000, 4, 256, 8  # hidden, vocabulary, micro-batch, sequence, chunks (torchtitan's default 8)
DT = torch.bfloat16


def chunked_loss(h: torch.Tensor, labels: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """ChunkedLossWrapper.__call__'s loop (FSDP and TP left out): returns the hidden states' gradient."""
    step = L // N
    h_chunks = [c.contiguous().detach().requires_grad_(True) for c in torch.split(h, step, dim=1)]
    grad = torch.zeros_like(h, dtype=torch.float32)  # GradAccumulator
    for i, (c, y) in enumerate(zip(h_chunks, torch.split(labels, step, dim=1), strict=True)):
        logits = F.linear(c, weight)  # lm_head(h_chunk)
        loss = F.cross_entropy(logits.flatten(0, 1).float(), y.flatten(0, 1), reduction="sum")
        loss.backward()
        grad[:, i * step:(i + 1) * step] = c.grad
        c.grad = None
    return grad.to(h.dtype)


def main() -> None:
    head = nn.Linear(D, V, bias=False).to(DT)
    h = torch.randn(B, L, D, dtype=DT)
    labels = torch.randint(0, V, (B, L))
    tracker = MemTracker()
    tracker.track_external(head, h, labels)
    with tracker:
        chunked_loss(h, labels, head.weight)
    peak = sum(snap["Total"] for snap in tracker.get_tracker_snapshot("peak").values())
    held = head.weight.numel() * 2 + h.numel() * 2 + labels.numel() * 8
    buffers = B * L * D * (4 + 2) + head.weight.numel() * 2  # fp32 buffer, chunk copies, weight gradient
    chunk_elements = B * (L // N) * V
    print(f"peak {peak / 2**20:.1f} MiB; one chunk's loss tensors: {(peak - held - buffers) / chunk_elements:.2f} B "
          f"per chunk logit element (the estimate: 14)")


if __name__ == "__main__":
    main()
