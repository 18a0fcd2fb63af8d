"""PyTorch's CUDA caching allocator: the reserved bytes an unpacked run's varying micro-batch lengths add beyond the
allocated peak (docs/known-gaps.md 178 and 184).

The rules (c10/cuda/CUDACachingAllocator.cpp, torch 2.1-2.13, PYTORCH_CUDA_ALLOC_CONF unset): a request over 1 MiB
takes the smallest cached free block that holds it and splits it when more than 1 MiB would be left; with none, a
new segment of the request rounded up to 2 MiB (kRoundLarge; 20 MiB below 10 MiB) is cudaMalloc'd; a freed block
merges with free neighbours of its own segment only, and segments stay reserved until a cudaMalloc fails. So a
micro-batch longer than every one before it cannot place its largest tensors in any cached segment (each was cut
for a shorter row) and cudaMallocs them again; its smaller tensors fit in the segments the largest ones of earlier
records left free (best fit, then split). The loss path's tensors (logits and their gradients: V / chunks values a
position against a layer's h or f) are the largest, so the reserved bytes of the length-dependent part come to

    loss path x sum of the record rows / longest row  +  the rest x 1,

the record rows being the micro-batch lengths that exceed every one before them (sample_lengths.padded_records
takes their expectation). benchmarks/caching_allocator.py replays the rules; tests/estimate/test_allocator.py holds
this form to the replay on generated length sequences.

With expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, torch >= 2.1) the allocator maps 2 MiB
pages into one growing virtual segment a stream, so a freed run of blocks merges into one free range any later
request can take (the allocator's Note [Expandable Segments]: "a job changing allocation sizes frequently, such as
having a changing batch size"): no growth. Frameworks that set it (`EXPANDABLE_BY_DEFAULT`) are taken as doing so.

Growth is not a requirement: a cudaMalloc that fails releases every wholly free segment and retries, so it is
reported beside the peak (MemoryEstimate.allocator_growth_bytes) and capped at the card, never counted in a fit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainsizer.estimate.allocator_pool import ROUND_LARGE_BYTES  # noqa: F401  (memory.py reads it here)
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.sample_lengths import padded_records

# the items that hold the loss path's logit-sized tensors (memory.ITEM_DOCS), the largest of a step
LOSS_PATH_ITEMS = ("logits", "loss_backward_temporaries", "loss_chunk_working_set")

# frameworks whose launch sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True unless the user set it:
# torchtune/__init__.py from 9d91fe39f (#2841, 2025-06-20: "Avoid memory fragmentation and peak reserved memory
# increasing over time"); torchtitan's run_train.sh from a5e57e4a9 (2024-10-22). Elsewhere PyTorch's default, off.
EXPANDABLE_BY_DEFAULT = ("torchtune", "torchtitan")


def expandable_segments(strategy: Strategy, framework: str, titan: Any) -> Any:
    """Whether the run's allocator maps expandable segments: strategy.allocator_expandable_segments where stated,
    else the framework's default (`EXPANDABLE_BY_DEFAULT`; framework auto: where it resolves to torchtitan)."""
    stated = getattr(strategy, "allocator_expandable_segments", None)
    if stated is not None:
        return np.asarray(bool(stated))
    if framework == "auto":
        return np.asarray(titan, bool)
    return np.asarray(framework in EXPANDABLE_BY_DEFAULT)


def micro_batches_per_rank(training: Training, dp: Any, micro_batch: Any) -> Any:
    """Micro-batches one data-parallel rank runs over the job: its samples (tokens_total over a sample's real tokens
    and sequences) over dp x micro-batch; 0 where tokens_total is unknown."""
    per_sample = training.sample_tokens * training.sequences_per_sample
    dp_mb = np.maximum(np.asarray(dp, float), 1.0) * np.maximum(np.asarray(micro_batch, float), 1.0)
    return np.floor(training.tokens_total / per_sample / dp_mb) if training.tokens_total > 0 else np.zeros(np.shape(dp_mb))


def growth_bytes(training: Training, loss_path_bytes: Any, dp: Any, micro_batch: Any, expandable: Any) -> Any:
    """Reserved bytes beyond the allocated peak that the caching allocator keeps for the record rows of an unpacked
    run (module docstring): loss_path_bytes (at the longest row, Training.peak_row_tokens) x (E[sum of the record
    rows] - E[longest row]) / the longest row. Zero for rows of one length (packed, pre-training text), under
    group_by_length (transformers' get_length_grouped_indices puts the longest megabatch first: the first row is the
    longest), with expandable segments, or where the run's length is unknown. Vectorised over strategies."""
    zero = np.zeros(np.broadcast_shapes(np.shape(loss_path_bytes), np.shape(dp), np.shape(micro_batch)))
    if not training.per_sample_rows or training.sample_sigma <= 0 or training.length_grouped_samples > 0:
        return zero
    draws = micro_batches_per_rank(training, dp, micro_batch)
    cap = training.row_cap
    records, longest = padded_records(training.sample_mean_tokens, training.sample_sigma, cap, micro_batch,
                                      np.maximum(draws, 1.0))
    extra = np.where(draws > 1, np.maximum(records - longest, 0.0) / cap, 0.0)
    return np.where(np.asarray(expandable, bool), 0.0, np.asarray(loss_path_bytes, float) * extra) + zero


def sequence_records(lengths: Any) -> tuple[float, float]:
    """(sum of the record rows, longest row) of one ordered sequence of micro-batch lengths: the form's per-run
    reading, which sample_lengths.padded_records takes the expectation of (and the replay is held to)."""
    x = np.asarray(lengths, float).ravel()
    if x.size == 0:
        return 0.0, 0.0
    before = np.concatenate(([-np.inf], np.maximum.accumulate(x)[:-1]))
    return float(np.sum(x[x > before])), float(np.max(x))
