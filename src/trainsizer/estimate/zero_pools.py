"""DeepSpeed ZeRO's reserved bytes outside the forward / backward's own segments (docs/known-gaps.md 234).

PyTorch's caching allocator keeps a pool a stream (c10/cuda/CUDACachingAllocator.cpp, torch 2.x: a block belongs to
the stream it was allocated on, get_free_block searches that stream's blocks only, and under expandable segments each
stream maps its own segment), so what DeepSpeed allocates while its reduce stream is current stays cached for that
stream: the default stream's freed activations can never hold it, nor it them.

ZeRO-3 (deepspeed/runtime/zero/stage3.py, the same lines v0.10.0 to v0.16.4; overlap_comm, the stage-3 default, makes
reduce_and_partition_stream a stream of its own):
- each gradient bucket is reduce-scattered from a flattened copy: __reduce_and_partition_ipg_grads, on that stream,
  -> __avg_scatter_grads -> runtime/comm/coalesced_collectives.py reduce_scatter_coalesced, torch.cat of the bucket's
  gradients (at most reduce_bucket_size elements; a lone parameter that divides evenly is reduced in place);
- fp16 only (_overflow_check_and_loss_scale_update: `if self.dtype == torch.float16`): the step's overflow check runs
  on that stream too (has_overflow: torch.isinf(self.grad_partitions_flat_buffer).any(), then torch.isnan(...)), and
  isinf is `self.abs() == inf` (aten/src/ATen/native/TensorCompare.cpp): a 16-bit copy of the rank's gradient
  partition and a bool of it alive together, then isnan's `self != self`, one more bool.
The stream's pool peaks at the larger of the bucket copy and the check's two blocks under expandable segments; with
the default segments a request larger than every cached block of the pool cudaMallocs a segment of its own, so the
bucket copy's segment plus each check block that segment cannot hold (allocator_pool's rules).

Without expandable segments the optimizer step's two flat blocks (stage3.py _prepare_fp32_grad_for_sub_group,
stage_1_and_2.py step: flatten(averaged gradients) and its .to(fp32), memory._deepspeed_step_blocks) each need one
free block of their size; a block larger than every block the forward / backward cut (the largest being the fp32
logits or the LM head's 16-bit gradient) gets a segment of its own beside them, as segments never merge. Under
expandable segments the default stream's blocks share one range (the allocator's Note [Expandable Segments]: "one
segment (per stream) that grows as necessary"; freed neighbours merge), so by the step the forward / backward's freed
blocks are one free range at its end; the flat copy, then its cast while the copy lives, are laid in it, and what
the two need beyond it is mapped at the range's end (a free block at the end grows into the unmapped pages:
get_free_block's expandable_size, try_allocate_expandable_block; c10/cuda/CUDACachingAllocator.cpp, torch 2.1-2.13).
A short sequence or a checkpointed micro-batch of one frees less than the two blocks (docs/known-gaps.md 246 (a)).

Reported beside the peak (MemoryEstimate.zero_pool_bytes), never counted in a fit: a failing cudaMalloc frees every
wholly free cached segment, of every stream, and retries.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# bytes a gradient-partition element of has_overflow's isinf: the bool result beside the 16-bit abs() copy
BOOL_BYTES = 1.0


def reduce_stream_bytes(bucket_bytes: Any, partition_elems: Any, w16: float, fp16: bool, expandable: Any) -> Any:
    """Bytes ZeRO-3's reduce_and_partition_stream keeps reserved (module docstring): the bucket's flattened copy
    (`bucket_bytes`) and, in fp16, the overflow check's abs() copy (w16 bytes a partition element) and bool beside it;
    the larger under expandable segments, else the copy's segment and each check block it cannot hold (the isnan bool
    takes the abs copy's freed segment). Vectorised over strategies."""
    cat = np.asarray(bucket_bytes, float)
    abs_b = w16 * np.asarray(partition_elems, float) if fp16 else np.zeros(np.shape(cat))
    bool_b = BOOL_BYTES * np.asarray(partition_elems, float) if fp16 else np.zeros(np.shape(cat))
    abs_new = abs_b > cat
    bool_new = np.where(abs_new, bool_b > cat, abs_b + bool_b > cat) & (bool_b > 0)
    segments = cat + np.where(abs_new, abs_b, 0.0) + np.where(bool_new, bool_b, 0.0)
    return np.where(np.asarray(expandable, bool), np.maximum(cat, abs_b + bool_b), segments)


def step_segment_bytes(flat_bytes: Any, fp32_bytes: Any, largest_block_bytes: Any, freed_bytes: Any,
                       expandable: Any) -> Any:
    """Bytes the optimizer step's flat 16-bit gradient copy and its fp32 cast reserve beyond the forward / backward's
    own (module docstring): without expandable segments each block larger than the forward / backward's largest
    (`largest_block_bytes`) gets a segment of its own; under expandable segments the two together less the range the
    forward / backward freed on the default stream (`freed_bytes`), never below 0. Vectorised over strategies."""
    largest = np.asarray(largest_block_bytes, float)
    flat, fp32 = np.asarray(flat_bytes, float), np.asarray(fp32_bytes, float)
    new = np.where(flat > largest, flat, 0.0) + np.where(fp32 > largest, fp32, 0.0)
    mapped = np.maximum(flat + fp32 - np.asarray(freed_bytes, float), 0.0)
    return np.where(np.asarray(expandable, bool), mapped, new)
