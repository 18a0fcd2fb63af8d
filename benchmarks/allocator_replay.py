"""A replay of PyTorch's CUDA caching allocator (the large pool) over the Qwen-1 loss path of one micro-batch after
another, each of its own length: the diagnostic of docs/known-gaps.md 97 for perf_heldout35, whose peak memory is
torch.cuda.max_memory_reserved of batch-1, unpadded runs (ms-swift 1.5 at 97e4d198b). Nothing here feeds the estimate.

The allocator's rules, as in pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp (v2.1.1, 2023-11, the runs' torch 2.1.1;
unchanged in these respects through 2.13): sizes round up to 512 B; a request over 1 MiB (kSmallSize) goes to the large
pool and takes the smallest cached free block that holds it (get_free_block: lower_bound on (stream, size, address)),
split when more than 1 MiB would be left (should_split; max_split_size unset by default, so every block splits);
with none, a new segment of the request rounded up to 2 MiB (kRoundLarge; 20 MiB kLargeBuffer under 10 MiB,
get_allocation_size) is cudaMalloc'd. A freed block merges with free neighbours of its own segment only (free_block),
so a segment cut for a shorter sample cannot serve a longer one. Segments stay reserved until a cudaMalloc fails:
then every segment wholly free is released and the call retried (release_cached_blocks), else out of memory.
expandable_segments is off by default. The small pool (requests up to 1 MiB) is not replayed: the loss path's
tensors are all larger; a small request is counted as allocated only.

The loss path (`loss_path_ops`): Qwen/Qwen-7B modeling_qwen.py QWenLMHeadModel.forward (the hub's remote code:
lm_logits = lm_head(h); shift_logits = lm_logits[..., :-1, :].contiguous(); CrossEntropyLoss on their view), under
the autocast accelerate's prepare_model puts on the forward (log_softmax in fp32: the .float() copy, then its fp32
output, saved), then convert_outputs_to_fp32 (accelerate/accelerator.py prepare_model, v0.25.0: outputs.logits made
an fp32 copy), swift's compute_loss (swift/trainers/trainers.py at 97e4d198b: argmax of those logits, then the
outputs dropped on return), and autograd's backward (nll_loss's gradient, log_softmax's, its cast back to 16 bit,
the slice's full-size zero gradient). Its live peak is 12 bytes a shifted logit element, the estimate's hf charge
(memory_constants.yaml logits.hf_*: 4 saved + 8 in the backward); tests/estimate/test_allocator_replay_torch.py measures
the same code under torch's MemTracker.

Run: python benchmarks/allocator_replay.py   (a few seconds: cutoffs 2,048-8,192 at Qwen-1's vocabulary)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from trainsizer.estimate.allocator_pool import MIN_BLOCK_BYTES, SMALL_SIZE_BYTES, segment_bytes

GIB = 1 << 30


class OutOfMemory(Exception):
    """A cudaMalloc that fails even after the cached free segments are released."""


@dataclass
class _Block:
    segment: int
    offset: int
    size: int
    used: bool = False


class CachingAllocator:
    """The large pool of one stream. `capacity_bytes`: what cudaMalloc can hand out (None: no limit)."""

    def __init__(self, capacity_bytes: int | None = None) -> None:
        self.capacity_bytes = capacity_bytes
        self.blocks: list[_Block] = []
        self.segments: dict[int, int] = {}  # segment id -> bytes
        self.allocated = self.reserved = self.peak_allocated = self.peak_reserved = 0

    def malloc(self, nbytes: int) -> _Block:
        size = max(MIN_BLOCK_BYTES, -(-nbytes // MIN_BLOCK_BYTES) * MIN_BLOCK_BYTES)
        if size <= SMALL_SIZE_BYTES:
            block = _Block(-1, 0, size, True)
        else:
            block = self._free_block(size) or self._new_segment(size)
            if block.size - size > SMALL_SIZE_BYTES:  # should_split
                self.blocks.append(_Block(block.segment, block.offset + size, block.size - size))
                block.size = size
            block.used = True
        self.allocated += block.size
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        return block

    def free(self, block: _Block) -> None:
        self.allocated -= block.size
        block.used = False
        if block.segment < 0:
            return
        neighbours = sorted((b for b in self.blocks if b.segment == block.segment), key=lambda b: b.offset)
        kept: list[_Block] = []
        for b in neighbours:  # free_block: merge with free neighbours of the same segment
            if kept and not kept[-1].used and not b.used and kept[-1].offset + kept[-1].size == b.offset:
                kept[-1].size += b.size
                self.blocks.remove(b)
            else:
                kept.append(b)

    def _free_block(self, size: int) -> _Block | None:
        fits = [b for b in self.blocks if not b.used and b.size >= size]
        return min(fits, key=lambda b: (b.size, b.segment, b.offset)) if fits else None

    def _new_segment(self, size: int) -> _Block:
        seg_bytes = segment_bytes(size)[1]  # get_allocation_size
        if self.capacity_bytes is not None and self.reserved + seg_bytes > self.capacity_bytes:
            self._release_cached_segments()
            if self.reserved + seg_bytes > self.capacity_bytes:
                raise OutOfMemory(f"{seg_bytes} B more on {self.reserved} B reserved of {self.capacity_bytes} B")
        seg = max(self.segments, default=-1) + 1
        self.segments[seg] = seg_bytes
        self.reserved += seg_bytes
        self.peak_reserved = max(self.peak_reserved, self.reserved)
        block = _Block(seg, 0, seg_bytes)
        self.blocks.append(block)
        return block

    def _release_cached_segments(self) -> None:
        """release_cached_blocks: every segment that is one free block goes back to the driver."""
        for seg in list(self.segments):
            own = [b for b in self.blocks if b.segment == seg]
            if len(own) == 1 and not own[0].used:
                self.blocks.remove(own[0])
                self.reserved -= self.segments.pop(seg)


def loss_path_ops(tokens: int, vocab: int, rows: int = 1) -> list[tuple[str, str, int]]:
    """('alloc', name, bytes) / ('free', name, 0) of one micro-batch's loss path, in order (module docstring), for
    `rows` sequences of `tokens` each (batch 1: the sample's length)."""
    full, shifted = rows * tokens * vocab, rows * (tokens - 1) * vocab
    return [("alloc", "logits16", 2 * full), ("alloc", "shift16", 2 * shifted), ("alloc", "cast32", 4 * shifted),
            ("alloc", "logsoftmax32", 4 * shifted), ("free", "cast32", 0), ("free", "shift16", 0),
            ("alloc", "outputs32", 4 * full), ("free", "logits16", 0), ("free", "outputs32", 0),
            ("alloc", "nll_grad32", 4 * shifted), ("alloc", "logsoftmax_grad32", 4 * shifted),
            ("free", "nll_grad32", 0), ("free", "logsoftmax32", 0), ("alloc", "cast_grad16", 2 * shifted),
            ("free", "logsoftmax_grad32", 0), ("alloc", "slice_grad16", 2 * full), ("free", "cast_grad16", 0),
            ("free", "slice_grad16", 0)]


def live_peak_bytes(tokens: int, vocab: int, rows: int = 1) -> int:
    """The most bytes the loss path's tensors hold at once, as requested (before the allocator's rounding)."""
    live, sizes, peak = 0, {}, 0
    for op, name, nbytes in loss_path_ops(tokens, vocab, rows):
        if op == "alloc":
            sizes[name] = nbytes
            live += nbytes
        else:
            live -= sizes.pop(name)
        peak = max(peak, live)
    return peak


def replay(lengths: Iterable[int], vocab: int, rows: int = 1, capacity_bytes: int | None = None) -> CachingAllocator:
    """The allocator after the loss path of one micro-batch per length, in the given order."""
    alloc = CachingAllocator(capacity_bytes)
    for n in lengths:
        live: dict[str, _Block] = {}
        for op, name, nbytes in loss_path_ops(int(n), vocab, rows):
            if op == "alloc":
                live[name] = alloc.malloc(nbytes)
            else:
                alloc.free(live.pop(name))
    return alloc


def least_capacity(lengths: Sequence[int], vocab: int, rows: int = 1, tolerance_bytes: int = 16 << 20) -> int:
    """The smallest cudaMalloc capacity (within `tolerance_bytes`) on which the same sequence runs: what the run
    needs, against the reserved peak a card with room reads."""
    roomy = replay(lengths, vocab, rows)
    lo, hi = roomy.peak_allocated, roomy.peak_reserved
    while hi - lo > tolerance_bytes:
        mid = (lo + hi) // 2
        try:
            replay(lengths, vocab, rows, mid)
            hi = mid
        except OutOfMemory:
            lo = mid
    return hi


@dataclass(frozen=True)
class Excess:
    """GiB over the loss path's allocated peak, each over the seeds: reserved on a card with room, least capacity."""

    allocated_gib: float
    reserved_gib: tuple[float, ...]
    needed_gib: tuple[float, ...]


def excess(length_draws: Sequence[Sequence[int]], vocab: int, rows: int = 1) -> Excess:
    """The replay of each draw of lengths (one per seed): the loss path's allocated peak, and by how much the
    reserved peak and the least capacity exceed it."""
    reserved, needed, allocated = [], [], 0
    for lengths in length_draws:
        roomy = replay(lengths, vocab, rows)
        allocated = max(allocated, roomy.peak_allocated)
        reserved.append((roomy.peak_reserved - roomy.peak_allocated) / GIB)
        needed.append((least_capacity(lengths, vocab, rows) - roomy.peak_allocated) / GIB)
    return Excess(allocated / GIB, tuple(reserved), tuple(needed))


def main() -> None:
    from perf_heldout35 import kept_length_draws

    vocab = 151936  # Qwen-1 1.8B / 7B (config.json)
    print("Qwen-1 loss path replayed through the caching allocator (GiB; each seed 1,000 kept lengths, random order):")
    for cutoff in (2048, 4096, 8192):
        e = excess(kept_length_draws(cutoff), vocab)
        print(f"  cutoff {cutoff:5d}: allocated peak {e.allocated_gib:5.2f}; reserved over it "
              f"{' / '.join(f'{x:5.2f}' for x in e.reserved_gib)}; least card over it "
              f"{' / '.join(f'{x:4.2f}' for x in e.needed_gib)}")
    for cutoff in (2048, 8192):
        one = replay([cutoff] * 4, vocab)
        down = replay(sorted(kept_length_draws(cutoff)[0], reverse=True), vocab)
        print(f"  cutoff {cutoff:5d}, reserved over allocated: every sample {cutoff} tokens "
              f"{(one.peak_reserved - one.peak_allocated) / GIB:.2f} (least card over it "
              f"{(least_capacity([cutoff] * 4, vocab) - one.peak_allocated) / GIB:.2f}); longest first "
              f"{(down.peak_reserved - down.peak_allocated) / GIB:.2f}")


if __name__ == "__main__":
    main()
