"""PyTorch's CUDA caching allocator, large pool only: the rules as a replayable pool (the estimate's replays:
estimate.nf4_init; the benchmarks' diagnostics: benchmarks/caching_allocator.py, which re-exports it).

Rules as in c10/cuda/CUDACachingAllocator.cpp (PyTorch 2.x, default PYTORCH_CUDA_ALLOC_CONF: no expandable segments,
no max_split_size): a request is rounded up to 512 B; the smallest free cached block that holds it is taken (best fit)
and split when more than 1 MiB (kSmallSize) would be left; with none, a new segment is cudaMalloc'ed, of the request
rounded up to 2 MiB (kRoundLarge) from 10 MiB (kMinLargeAlloc), 20 MiB (kLargeBuffer) below; a freed block merges with
free neighbours of its own segment only; segments are given back only on an OOM retry or empty_cache, so the reserved
bytes only grow while the card has room. Requests of 1 MiB or less (the small pool) are not modelled.
"""

from __future__ import annotations

import bisect

MIB = 1 << 20
# The allocator's constants, defined once here for the estimate and the benchmarks' replays
# (c10/cuda/CUDACachingAllocator.cpp@v2.1.1, namespace c10::cuda::CUDACachingAllocator, unchanged through 2.13):
MIN_BLOCK_BYTES = 512  # kMinBlockSize: every request rounded up to a multiple
SMALL_SIZE_BYTES = MIB  # kSmallSize: the small pool's largest request; a large block splits above it
SMALL_BUFFER_BYTES = 2 * MIB  # kSmallBuffer: the small pool's segment
LARGE_BUFFER_BYTES = 20 * MIB  # kLargeBuffer: the segment of a request between kSmallSize and kMinLargeAlloc
MIN_LARGE_ALLOC_BYTES = 10 * MIB  # kMinLargeAlloc: from here a segment is the request rounded to kRoundLarge
ROUND_LARGE_BYTES = 2 * MIB  # kRoundLarge


def segment_bytes(n: int) -> tuple[int, int]:
    """(the rounded request, the segment a cudaMalloc for it would take) in bytes."""
    n = max(MIN_BLOCK_BYTES, -(-n // MIN_BLOCK_BYTES) * MIN_BLOCK_BYTES)
    if n <= SMALL_SIZE_BYTES:
        return n, SMALL_BUFFER_BYTES
    if n < MIN_LARGE_ALLOC_BYTES:
        return n, LARGE_BUFFER_BYTES
    return n, -(-n // ROUND_LARGE_BYTES) * ROUND_LARGE_BYTES


class Pool:
    """The large pool: segments of blocks, the free ones in a size-sorted list; `peak_reserved` in bytes."""

    def __init__(self) -> None:
        self.free: list[tuple[int, int]] = []  # (size, block id), sorted
        self.blocks: dict[int, list] = {}  # id -> [segment, offset, size, is_free]
        self.segments: dict[int, dict[int, int]] = {}  # segment -> offset -> block id
        self.reserved = self.peak_reserved = self._next = 0

    def _block(self, seg: int, off: int, size: int, free: bool) -> int:
        self._next += 1
        self.blocks[self._next] = [seg, off, size, free]
        self.segments[seg][off] = self._next
        if free:
            bisect.insort(self.free, (size, self._next))
        return self._next

    def malloc(self, n: int) -> int:
        """A block of at least `n` bytes (best fit, split, or a new segment); its id."""
        n, seg_size = segment_bytes(n)
        i = bisect.bisect_left(self.free, (n, 0))
        if i < len(self.free):
            size, bid = self.free.pop(i)
        else:
            seg = len(self.segments)
            self.segments[seg] = {}
            self.reserved += seg_size
            self.peak_reserved = max(self.peak_reserved, self.reserved)
            size, bid = seg_size, self._block(seg, 0, seg_size, False)
        b = self.blocks[bid]
        b[3] = False
        if size - n > SMALL_SIZE_BYTES:
            b[2] = n
            self._block(b[0], b[1] + n, size - n, True)
        return bid

    def release(self, bid: int) -> None:
        """Free a block, merged with free neighbours in its segment."""
        b = self.blocks[bid]
        seg, off, size = b[0], b[1], b[2]
        offs = self.segments[seg]
        nxt = offs.get(off + size)
        if nxt is not None and self.blocks[nxt][3]:
            ns = self.blocks.pop(nxt)[2]
            self.free.remove((ns, nxt))
            del offs[off + size]
            size += ns
        prev = next((pid for po, pid in offs.items() if po < off and po + self.blocks[pid][2] == off), None)
        if prev is not None and self.blocks[prev][3]:
            ps = self.blocks[prev][2]
            self.free.remove((ps, prev))
            del offs[off], self.blocks[bid]
            self.blocks[prev][2] = ps + size
            bisect.insort(self.free, (ps + size, prev))
            return
        b[2], b[3] = size, True
        bisect.insort(self.free, (size, bid))
