"""Partial full recompute in the search: Megatron's block method (recompute_method block, recompute_num_layers N)
on layouts where full recompute fits and neither no recompute nor selective recompute does.

Under block the first N decoder layers of each model chunk are checkpointed and re-run in the backward, the other
layers keep every activation (estimate/partial_recompute.py), so N trades memory for the re-run forward of N of
the chunk's layers. Real runs fit this way: AMD's MLPerf Training v5.0 Llama 2 70B LoRA on 8 MI300X recomputes
21 of 80 layers (benchmarks/perf_amd.py). For each such layout the search judges every N and keeps, per
layout, the smallest N that fits and the smallest that leaves the memory floor free: fewer re-run layers is the
shorter step, the rest of the step being the same. It is tried on the hardware options whose best strategy
without it re-runs every layer (full recompute needed for memory), the case a buyer meets.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from trainsizer.estimate import evaluate_batch
from trainsizer.estimate.batch import OPTIONAL_ARRAY_FIELDS
from trainsizer.estimate.inputs import (
    DEGREE_FIELDS,
    FLAG_FIELDS,
    MODE_FIELDS,
    RECOMPUTE_CODE,
    Strategy,
    System,
    Training,
)
from trainsizer.estimate.memory import GIB
from trainsizer.estimate.validate import PARTIAL_RECOMPUTE_FRAMEWORKS
from trainsizer.models.arch import ModelArch
from trainsizer.search.config import SearchConfig, leaves_floor

METHOD = "block"  # uniform re-runs every layer (rerun share 1): it saves memory, never time, so it is not searched
# per-strategy fields (arrays in the search); `take` indexes these and leaves the rest (one value per batch) alone
FIELDS = (*DEGREE_FIELDS, *MODE_FIELDS, *FLAG_FIELDS, *OPTIONAL_ARRAY_FIELDS)
_NONE, _SEL, _FULL = RECOMPUTE_CODE["none"], RECOMPUTE_CODE["selective"], RECOMPUTE_CODE["full"]


def searched(framework: str, training: Training, cfg: SearchConfig) -> bool:
    """Whether partial recompute is tried at all: a framework with Megatron's recompute_method ("auto" resolves
    per layout; the rules refuse the layouts whose stack has none) and a method not searched data parallel only."""
    return (training.method not in cfg.data_parallel_only_methods
            and (framework == "auto" or framework in PARTIAL_RECOMPUTE_FRAMEWORKS))


def candidate_rows(strat: Strategy, fits: np.ndarray) -> np.ndarray:
    """Rows of full recompute that fit where the same layout and micro-batch under no recompute and under selective
    recompute do not (`search.space.strategies` lists the three recompute modes of a layout one after the other)."""
    rec = np.asarray(strat.recompute, dtype=float)
    if rec.ndim == 0 or rec.size < 3:
        return np.zeros(0, dtype=int)
    full = np.flatnonzero((rec == _FULL) & fits)
    full = full[full >= 2]
    twins = (rec[full - 2] == _NONE) & (rec[full - 1] == _SEL) & ~fits[full - 2] & ~fits[full - 1]
    return full[twins]


def chunk_layers(model: ModelArch, strat: Strategy) -> np.ndarray:
    """Decoder layers per model chunk (a pipeline stage, or a virtual stage under interleaving), rounded down."""
    pp = np.asarray(strat.pp, dtype=float)
    vpp = np.maximum(np.asarray(strat.vpp, dtype=float), 1.0)
    return np.floor(model.layers / np.maximum(pp * vpp, 1.0))


def every_n(chunks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(candidate index, N) for N = 1 .. c - 1 of each candidate's chunk of c layers (N = c is full recompute,
    judged already), in ascending N per candidate."""
    top = int(chunks.max()) if chunks.size else 0
    n = np.arange(1, max(top, 1), dtype=float)
    keep = n[None, :] < chunks[:, None]
    idx, col = np.nonzero(keep)
    return idx, n[col]


def take(strategy: Strategy, rows: np.ndarray) -> Strategy:
    """The strategies at `rows` (fields left scalar stay scalar: they hold for every strategy)."""
    return replace(strategy, **{f: np.asarray(v)[rows] for f in FIELDS if np.ndim(v := getattr(strategy, f))})


def _block(strat: Strategy, rows: np.ndarray, n_layers: np.ndarray) -> Strategy:
    """The strategies at `rows` under block partial recompute with N = `n_layers` (one per row)."""
    return replace(take(strat, rows), recompute_method=METHOD, recompute_num_layers=n_layers.astype(float))


def _first_per(idx: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Positions of the first True of `ok` per value of `idx` (rows sorted by idx, then ascending N)."""
    hits = np.flatnonzero(ok)
    if not hits.size:
        return hits
    _, first = np.unique(idx[hits], return_index=True)
    return hits[first]


def partial_layouts(model: ModelArch, training: Training, system: System, strat: Strategy, fits: np.ndarray,
                    cfg: SearchConfig, full_step_s: np.ndarray, fastest_s: float
                    ) -> tuple[tuple[Strategy, np.ndarray, dict, np.ndarray, np.ndarray] | None, int]:
    """Block partial-recompute strategies of the layouts that need full recompute to fit (`candidate_rows`) -- per
    layout the smallest N that fits and the smallest that leaves the memory floor free -- with their bytes, step
    times, full-recompute steps and host bytes a node, and how many strategies were judged. A layout whose full-recompute step
    `full_step_s` (per row of `strat`) less the most re-running fewer layers saves (search.yaml
    partial_recompute_max_saving) is not within the tie band of `fastest_s` could not be chosen, and is not tried.
    Every N of every such layout is judged in one memory call, the N kept timed in one more."""
    rows = candidate_rows(strat, fits)
    rows = rows[full_step_s[rows] * (1.0 - cfg.partial_recompute_max_saving) < fastest_s * (1.0 + cfg.tie_fraction)]
    if not rows.size:
        return None, 0
    idx, n = every_n(chunk_layers(model, take(strat, rows)))
    if not idx.size:
        return None, 0
    trial = _block(strat, rows[idx], n)
    mem = evaluate_batch(model, training, system, trial, parts=("valid", "memory"), threads=1)
    ok = mem["fits"]
    roomy = ok & leaves_floor(mem["mem_bytes"], system.memory_gib * GIB, cfg.memory_headroom_min)
    keep = np.union1d(_first_per(idx, ok), _first_per(idx, roomy))
    if not keep.size:
        return None, int(idx.size)
    kept = take(trial, keep)
    times = evaluate_batch(model, training, system, kept, parts=("time",), threads=1)
    return (kept, mem["mem_bytes"][keep], times, full_step_s[rows[idx[keep]]], mem["host_bytes_per_node"][keep]), \
        int(idx.size)
