"""Partial full recompute: which decoder layers of a model chunk Megatron checkpoints under recompute: full.

Megatron-Core TransformerBlock._checkpointed_forward (megatron/core/transformer/transformer_block.py, core_r0.15;
the same loop in Megatron-LM's --recompute-method since 2021 and NeMo's activations_checkpoint_method /
activations_checkpoint_num_layers) walks the layers of one model chunk (a pipeline stage, or a virtual stage under
interleaving: num_layers_per_pipeline_rank is the chunk's layer count):
- `uniform`: groups of recompute_num_layers N consecutive layers, each group one checkpoint: only the group's input
  is kept, every layer's forward runs again in the backward, and a group's N layers are re-created together
  (the last group is cut at the chunk's end);
- `block`: the first N layers checkpointed one by one (each keeps its input and is re-run), the other layers keep
  all their activations and are not re-run. The backward reaches the checkpointed layers last, once the kept
  layers of that micro-batch are freed, so the re-created layer adds to the peak only when every layer is
  checkpointed. (Under FP8, a chunk whose input needs no gradient -- a frozen embedding in front of it --
  starts the window one layer later, recompute_skip_num_layers: the same count unless N is the whole chunk.)
recompute: full without a method checkpoints every layer on its own (uniform 1 = block with every layer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class ChunkShares:
    """Per chunk of layers under recompute: full (arrays broadcast): `rerun` the share of its layers whose forward
    runs again in the backward; `checkpointed` layer inputs kept, per layer (the full-recompute item set);
    `kept` the share of layers that keep every activation (the no-recompute item set); `working` layers'
    activations re-created at once in the backward, beyond what the chunk already holds."""

    rerun: Any
    checkpointed: Any
    kept: Any
    working: Any


def chunk_shares(method: str | None, num_layers: int | None, chunk_layers: Any) -> ChunkShares:
    """What a chunk of `chunk_layers` decoder layers checkpoints, keeps and re-runs under recompute: full with
    Megatron's `method` (names.RECOMPUTE_METHODS) and `num_layers` N (None: every layer on its own; an array: one N
    per strategy, broadcast with `chunk_layers`)."""
    n = np.maximum(np.asarray(chunk_layers, dtype=float), 1.0)
    if method is None or num_layers is None:
        return ChunkShares(rerun=1.0, checkpointed=1.0, kept=0.0, working=1.0)
    if method == "uniform":
        group = np.minimum(np.maximum(np.asarray(num_layers, dtype=float), 1.0), n)
        return ChunkShares(rerun=1.0, checkpointed=np.ceil(n / group - 1e-9) / n, kept=0.0, working=group)
    k = np.minimum(np.asarray(num_layers, dtype=float), n)
    return ChunkShares(rerun=k / n, checkpointed=k / n, kept=1.0 - k / n,
                       working=np.where(k > 0, np.maximum(1.0 - (n - k), 0.0), 0.0))


def strategy_chunk_shares(strategy: Any, chunk_layers: Any) -> ChunkShares:
    """`chunk_shares` for a Strategy's recompute_method / recompute_num_layers (read where recompute is full)."""
    return chunk_shares(getattr(strategy, "recompute_method", None), getattr(strategy, "recompute_num_layers", None),
                        chunk_layers)
