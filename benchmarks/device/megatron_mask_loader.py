# Settles (not run yet: written 2026-12-07, no GPU lent that session; docs/known-gaps.md 272 (a), (e)): how fast the
# host side of Megatron-Core's data path delivers micro-batches that carry GPTDataset's s x s attention mask, against the
# same micro-batches without it (the swiss-ai 300M row's step would be loader-bound at 149 MB/s of mask a rank).
# Run: python benchmarks/device/megatron_mask_loader.py (needs torch; on a GPU host, ideally a GH200 node under the
# swiss-ai script's `numactl --membind=0-3`; --tiny on a CPU as a smoke test)
"""Micro-batches a second through torch's DataLoader as Megatron-LM builds it, with and without the attention mask.

The dataset returns what megatron/core/datasets/gpt_dataset.py GPTDataset.__getitem__ returns at swiss-ai/Megatron-LM
108d9b8f with the masks cacheable (no reset_position_ids / reset_attention_mask / eod_mask_loss): tokens and labels (int64,
s each), loss_mask (fp32) and position_ids (int64) cached, and, with create_attention_mask on (Megatron's default: no
--no-create-attention-mask-in-dataloader), the cached causal mask torch.tril(torch.ones(s, s)).unsqueeze(0) < 0.5 (s x s
bools). The loader is megatron/legacy/data/data_samplers.py's: batch = the micro-batch, num_workers 2 (the swiss-ai
300M script's), pin_memory, persistent_workers; each micro-batch's tensors then go to the GPU with .cuda(non_blocking=True)
as megatron/training/utils.py get_batch_on_this_tp_rank moves them. The consumer does nothing else, so the figure is the
loader's ceiling: ms a micro-batch and MB of mask a second. Layouts: the swiss-ai rows' (2 x 4,096: the 300M; 1 x 8,192 and
2 x 8,192: the 3B; 4 x 4,096: the 8B at TP 2). Prints one JSON line a layout and case, with the host's CPU architecture.
Budget on a GPU host: about a minute. --tiny: short sequences on the CPU, no pinning (a smoke test).
"""

import json
import platform
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

TINY = "--tiny" in sys.argv
CUDA = torch.cuda.is_available() and not TINY
LAYOUTS = [(2, 64), (1, 128)] if TINY else [(2, 4096), (1, 8192), (2, 8192), (4, 4096)]
WARM, N = (1, 3) if TINY else (4, 40)
WORKERS = 2
VOCAB = 128256


class GPTLikeDataset(Dataset):
    """GPTDataset.__getitem__'s output (random token ids in place of the indexed file's), masks cached per worker."""

    def __init__(self, seq: int, mask: bool):
        self.seq, self.mask, self.cached = seq, mask, None

    def __len__(self) -> int:
        return 1 << 30

    def __getitem__(self, idx: int) -> dict:
        text = torch.randint(0, VOCAB, (self.seq + 1,), dtype=torch.long)
        if self.cached is None:
            attention = torch.tril(torch.ones((self.seq, self.seq))).unsqueeze(0) < 0.5 if self.mask else None
            self.cached = (attention, torch.ones(self.seq, dtype=torch.float), torch.arange(self.seq, dtype=torch.long))
        attention, loss_mask, position_ids = self.cached
        out = {"tokens": text[:-1].contiguous(), "labels": text[1:].contiguous(), "loss_mask": loss_mask,
               "position_ids": position_ids}
        if self.mask:
            out["attention_mask"] = attention
        return out


def per_micro_batch_ms(micro_batch: int, seq: int, mask: bool) -> float:
    """Mean milliseconds a micro-batch over N, after WARM, through the loader and onto the device."""
    loader = DataLoader(GPTLikeDataset(seq, mask), batch_size=micro_batch, num_workers=WORKERS, pin_memory=CUDA,
                        persistent_workers=True)
    it = iter(loader)

    def take() -> None:
        batch = next(it)
        if CUDA:
            for value in batch.values():
                value.cuda(non_blocking=True)

    for _ in range(WARM):
        take()
    if CUDA:
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(N):
        take()
    if CUDA:
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) / N * 1e3


def main() -> None:
    host = platform.machine()
    for micro_batch, seq in LAYOUTS:
        for mask in (True, False):
            ms = per_micro_batch_ms(micro_batch, seq, mask)
            mask_mb = micro_batch * seq * seq / 1e6 if mask else 0.0
            print(json.dumps({"micro_batch": micro_batch, "seq": seq, "mask": mask, "ms": round(ms, 3),
                              "mask_mb": round(mask_mb, 3), "mask_mb_s": round(mask_mb / ms * 1e3, 1),
                              "device": "cuda" if CUDA else "cpu", "host": host}), flush=True)


if __name__ == "__main__":
    main()
