"""PyTorch's CUDA caching allocator, large pool only, replayed over a run's micro-batches (a diagnostic; known-gaps 178).
The pool itself (Pool, segment_bytes) lives in src/trainsizer/estimate/allocator_pool.py, re-exported here.

The allocator's rules (c10/cuda/CUDACachingAllocator.cpp, PyTorch 2.x defaults) are stated once, in that module's
docstring.
"""

from __future__ import annotations

from trainsizer.estimate.allocator_pool import MIB, MIN_BLOCK_BYTES, SMALL_SIZE_BYTES, Pool, segment_bytes  # noqa: F401


def chunked_loss_step(pool: Pool, layer_b: int, layers: int, head_b: int, chunk_b: int, chunks: int, loss_b: int) -> None:
    """One micro-batch of a checkpointed model with a chunked loss, in the order its tensors live: each layer's saved
    input, the head input, the logit chunks; the loss backward chunk by chunk (its temporaries, the chunk's gradient
    replacing the chunk: memory_constants.yaml's chunked_compiled), the gradients until the LM head's backward takes
    them; then the layers' inputs freed in reverse. A layer's own forward / recompute temporaries are not
    replayed."""
    ins = [pool.malloc(layer_b) for _ in range(layers)]
    head = pool.malloc(head_b)
    logits = [pool.malloc(chunk_b) for _ in range(chunks)]
    grads = []
    for c in reversed(range(chunks)):
        tmp = pool.malloc(loss_b)
        grads.append(pool.malloc(chunk_b))
        pool.release(tmp)
        pool.release(logits[c])
    for g in grads:
        pool.release(g)
    pool.release(head)
    for x in reversed(ins):
        pool.release(x)


class ExpandablePool:
    """The large pool with expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; the allocator's
    Note [Expandable Segments], torch >= 2.1): one virtual range a stream whose pages are mapped as it grows. A request
    takes the smallest free block that holds it (split when more than 1 MiB would be left); with none, the free block
    at the end of the range, if any, grows by mapping 2 MiB pages (else pages are mapped at the end); a freed block
    merges with free neighbours on both sides, since the range is one segment. Pages stay mapped (reserved) until an
    OOM retry or empty_cache. A diagnostic beside `Pool` (known-gaps 213)."""

    def __init__(self) -> None:
        self.blocks: list[list[int]] = []  # [offset, size, is_free], by offset
        self.by_id: dict[int, list[int]] = {}
        self.reserved = self.peak_reserved = self._next = 0

    def malloc(self, n: int) -> int:
        """A block of at least `n` bytes (best fit, else the range grown at its end); its id."""
        n = max(MIN_BLOCK_BYTES, -(-n // MIN_BLOCK_BYTES) * MIN_BLOCK_BYTES)
        fits = [b for b in self.blocks if b[2] and b[1] >= n]
        block = min(fits, key=lambda b: b[1]) if fits else None
        if block is None:
            tail = self.blocks[-1] if self.blocks and self.blocks[-1][2] else None
            grow = -(-(n - (tail[1] if tail else 0)) // (2 * MIB)) * 2 * MIB
            if tail is None:
                tail = [self.reserved, 0, 1]
                self.blocks.append(tail)
            tail[1] += grow
            self.reserved += grow
            self.peak_reserved = max(self.peak_reserved, self.reserved)
            block = tail
        block[2] = 0
        if block[1] - n > SMALL_SIZE_BYTES:
            self.blocks.insert(self.blocks.index(block) + 1, [block[0] + n, block[1] - n, 1])
            block[1] = n
        self._next += 1
        self.by_id[self._next] = block
        return self._next

    def release(self, bid: int) -> None:
        """Free a block, merged with its free neighbours."""
        block = self.by_id.pop(bid)
        block[2] = 1
        i = self.blocks.index(block)
        if i + 1 < len(self.blocks) and self.blocks[i + 1][2]:
            block[1] += self.blocks.pop(i + 1)[1]
        if i > 0 and self.blocks[i - 1][2]:
            self.blocks[i - 1][1] += block[1]
            self.blocks.pop(i)
