"""Rules, memory and step time of many strategies in one call: the search's entry point.

`evaluate_batch` runs `validate.valid_mask`, `memory.memory_per_gpu_bytes` and `step_time.step_time_arrays`
(the same vectorised code the scalar `estimate_memory` / `estimate_time` run, so they agree) on every
strategy of a `Strategy` whose fields are arrays, and returns arrays aligned with the input strategies.
A strategy that breaks a rule never raises: `valid` is False, `fits` False, its numbers NaN. Bad input that
is not about the strategy (an unknown optimizer, a precision the GPU lacks) still raises SpecError.

Speed: memory and time are evaluated only for the strategies that pass the rules; the strategies are cut
into chunks of `chunk` entries (every temporary of a chunk stays in the CPU
cache instead of streaming 8 MB arrays through memory) and the chunks run on `threads` threads (numpy
releases the GIL inside its loops, so chunks run in parallel on the cores). The formulas allocate a few
hundred chunk-sized temporaries per call; with glibc's default dynamic thresholds the freed heap is trimmed
and refaulted on every call, which doubled the CPU time (half of it in page faults, measured with getrusage).
`_tune_malloc` therefore raises glibc's trim threshold and fixes its mmap threshold once per process
(mallopt; Linux/glibc only, best effort, set TRAINSIZER_MALLOC_TUNING=0 to skip): the process keeps up to
M_TRIM_THRESHOLD bytes of freed heap per arena instead of returning them to the OS.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np

from trainsizer.estimate.calibration import Calibration
from trainsizer.estimate.inputs import DEGREE_FIELDS, FLAG_FIELDS, MODE_FIELDS, Strategy, System, Training
from trainsizer.estimate.memory import DEFAULT_OPTIONS, MemoryOptions, memory_arrays
from trainsizer.estimate.step_time import BREAKDOWN_KEYS, PerfStyle, step_time_arrays
from trainsizer.estimate.validate import strategy_arrays, valid_mask
from trainsizer.models.arch import ModelArch

NUMERIC_FIELDS = (*DEGREE_FIELDS, *FLAG_FIELDS)
# fields that are one value for a batch or, where an array, one per strategy (the search's partial-recompute pass;
# etp as resolved by validate.strategy_arrays; the search's stated pipeline end stages, 0 where none is stated)
OPTIONAL_ARRAY_FIELDS = ("recompute_num_layers", "etp", "pp_first_stage_layers", "pp_last_stage_layers")
TIME_KEYS = ("step_s", "tokens_per_s", "mfu", "hfu", "model_tflops_per_gpu", "hardware_tflops_per_gpu",
             "model_flops_per_step", "hardware_flops_per_step", "micro_batches", *BREAKDOWN_KEYS)
# every key evaluate_batch returns (arrays of one entry per strategy)
KEYS = ("valid", "fits", "feasible", "mem_bytes", "host_bytes_per_node", "gpus", *TIME_KEYS)
PARTS = ("valid", "memory", "time")  # what evaluate_batch can compute; `parts=` picks some (benchmarks)
_PART_KEYS = {"valid": ("valid",), "memory": ("fits", "mem_bytes", "host_bytes_per_node"),
              "time": ("gpus", *TIME_KEYS)}
DEFAULT_CHUNK = 1 << 15
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc malloc.h
_MALLOC_TUNED: list[bool] = []


def _tune_malloc() -> None:
    """Keep freed chunk temporaries in the heap (see module docstring); once, best effort."""
    if _MALLOC_TUNED or os.environ.get("TRAINSIZER_MALLOC_TUNING", "1") == "0":
        return
    _MALLOC_TUNED.append(True)
    try:
        import ctypes
        import ctypes.util

        name = ctypes.util.find_library("c")
        if not name:
            return
        libc = ctypes.CDLL(name)
        libc.mallopt(_M_MMAP_THRESHOLD, 32 << 20)  # glibc's largest dynamic threshold (64-bit)
        libc.mallopt(_M_TRIM_THRESHOLD, 256 << 20)
    except (OSError, AttributeError):  # not glibc: nothing to tune
        return


def _flatten(strategy: Strategy) -> tuple[Strategy, int, tuple[int, ...]]:
    """The strategy with every numeric field a contiguous 1-D float array of one common length (an optional
    per-strategy field, `OPTIONAL_ARRAY_FIELDS`, too when it is an array)."""
    a = strategy_arrays(strategy)  # names checked here (SpecError), codes as floats
    a |= {f: np.asarray(getattr(strategy, f), dtype=float) for f in _arrays_in(strategy)}
    shape = np.broadcast_shapes(*(v.shape for v in a.values()))
    flat = {f: (v if v.shape == shape else np.broadcast_to(v, shape)).reshape(-1) for f, v in a.items()}
    return replace(strategy, **flat), int(np.prod(shape)), shape


def _arrays_in(strategy: Strategy) -> tuple[str, ...]:
    return tuple(f for f in OPTIONAL_ARRAY_FIELDS if np.ndim(getattr(strategy, f, None)) > 0)


def _slice(strategy: Strategy, lo: int, hi: int) -> Strategy:
    changes = {f: getattr(strategy, f)[lo:hi] for f in (*NUMERIC_FIELDS, *MODE_FIELDS, *_arrays_in(strategy))}
    return replace(strategy, **changes)


def _take(strategy: Strategy, rows: np.ndarray) -> Strategy:
    changes = {f: getattr(strategy, f)[rows] for f in (*NUMERIC_FIELDS, *MODE_FIELDS, *_arrays_in(strategy))}
    return replace(strategy, **changes)


def _put(dst: np.ndarray, rows: np.ndarray | None, values: np.ndarray, fill: float | bool) -> None:
    """dst = values (rows None) or dst[rows] = values and `fill` elsewhere."""
    if rows is None:
        dst[...] = values
    else:
        dst.fill(fill)
        dst[rows] = values


def _check_parts(parts: tuple[str, ...]) -> None:
    for p in parts:
        if p not in PARTS:
            from trainsizer.errors import unknown_name

            raise unknown_name("parts", "evaluate_batch part", p, PARTS)


def _mark_all_invalid(out: dict[str, np.ndarray], keys: list[str], lo: int, hi: int) -> None:
    """Rows lo:hi all break a rule: not fitting and no figures (NaN); validity and GPU count stay."""
    for key in keys:
        if key not in ("valid", "gpus"):
            out[key][lo:hi] = False if key == "fits" else np.nan


def _run_in_chunks(run: Callable[[int, int], None], n: int, chunk: int, threads: int | None) -> None:
    """run(lo, hi) over [0, n) in chunks of `chunk`, on up to `threads` threads (default: the CPUs)."""
    bounds = [(lo, min(lo + chunk, n)) for lo in range(0, n, max(int(chunk), 1))]
    workers = max(1, min(threads or os.cpu_count() or 1, len(bounds)))
    if workers == 1:
        for lo, hi in bounds:
            run(lo, hi)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for fut in [pool.submit(run, lo, hi) for lo, hi in bounds]:
            fut.result()  # re-raises a SpecError from any chunk


def evaluate_batch(
    model: ModelArch, training: Training, system: System, strategy: Strategy,
    calibration: Calibration | None = None, *, memory_options: MemoryOptions = DEFAULT_OPTIONS,
    framework_style: str | PerfStyle | None = None, chunk: int = DEFAULT_CHUNK, threads: int | None = None,
    parts: tuple[str, ...] = PARTS,
) -> dict[str, np.ndarray]:
    """Validity, memory and step time of every strategy in `strategy` (fields may be numpy arrays).

    Returns arrays shaped like the broadcast strategy fields: `valid` (every rule of `validate.RULES`
    holds), `fits` (valid and within device memory / host RAM), `feasible` (= fits), `mem_bytes` (worst
    GPU), `host_bytes_per_node` (states kept in a node's host RAM), `gpus`, and the step-time figures of `step_time.step_time_arrays` (`step_s`, `tokens_per_s`,
    `mfu`, `hfu`, TFLOP/s per GPU, FLOPs per step, micro-batches and the breakdown terms in seconds).
    Invalid strategies get NaN numbers. `framework_style` / `memory_options.framework` override
    `strategy.framework` as in the scalar estimators. `parts` (a subset of PARTS) limits the work, for
    benchmarks: without "valid" nothing is masked."""
    _check_parts(parts)
    _tune_malloc()
    flat, n, shape = _flatten(strategy)
    keys = [key for p in PARTS if p in parts for key in _PART_KEYS[p]]
    out: dict[str, np.ndarray] = {key: np.empty(n, dtype=bool if key in ("valid", "fits") else float)
                                  for key in keys}

    def run(lo: int, hi: int) -> None:
        part = _slice(flat, lo, hi)
        rows = None  # the chunk's strategies still to evaluate (None: all of them)
        if "valid" in parts:
            ok = valid_mask(model, training, system, part)
            out["valid"][lo:hi] = ok
            if not ok.all():  # skip memory and time of strategies that break a rule
                rows = np.flatnonzero(ok)
                part = _take(part, rows)
        if "time" in parts:
            f = flat
            out["gpus"][lo:hi] = f.tp[lo:hi] * f.pp[lo:hi] * f.dp[lo:hi] * f.cp[lo:hi]
        if rows is not None and rows.size == 0:
            _mark_all_invalid(out, keys, lo, hi)
            return
        with np.errstate(all="ignore"):
            if "memory" in parts:
                mem, fits, host = memory_arrays(model, training, system, part, memory_options)
                _put(out["mem_bytes"][lo:hi], rows, mem, np.nan)
                _put(out["host_bytes_per_node"][lo:hi], rows, host, np.nan)
                _put(out["fits"][lo:hi], rows, fits, False)
            if "time" in parts:
                t = step_time_arrays(model, training, system, part, calibration=calibration,
                                     framework_style=framework_style)
                for key in TIME_KEYS:
                    _put(out[key][lo:hi], rows, t[key], np.nan)

    _run_in_chunks(run, n, chunk, threads)
    if "fits" in out:
        out["feasible"] = out["fits"].copy()
    return {key: val.reshape(shape) for key, val in out.items()}


__all__ = ["KEYS", "evaluate_batch"]
