"""A host sync that drains the GPU's queue: what the kernels issued after it cost, and the host facts it reads.

Mechanism (one line each):
- Eager PyTorch issues kernels asynchronously; the host runs ahead of the GPU until it needs a device value on the
  host (tensor.item(), .tolist(), .cpu() of a device tensor, an explicit stream sync). It then waits until every
  kernel queued before the read has run and the copy is back: the queue is empty (torch c10/cuda/CUDAFunctions.h
  memcpy_and_sync: cudaMemcpyAsync + cudaStreamSynchronize, on ROCm hipMemcpyWithStream).
- After the read the host issues the next kernels one by one while the GPU, idle, runs each as it arrives: an
  in-order two-stage pipeline (host issue, then GPU run). Kernel i is issued at r + i h and finishes at
  f_i = max(f_(i-1), r + i h) + g, so n uniform kernels finish at r + h + g + (n - 1) max(h, g): launch-bound
  (r + n h + g) while the host is slower per kernel, GPU-bound (r + h + n g) once it is faster and gets ahead.
- Where the sync sits in a training framework's code (Megatron-Core's MoE token dispatchers, HF's per-expert loop)
  decides n, h and g; this module only times the drained run. The round trip r and the host time per op h are per
  vendor facts (perf_constants.yaml host_sync), each with its source; a vendor without a published figure has none.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainsizer.estimate.calibration import load_constants

# per-vendor host facts (perf_constants.yaml `host_sync:`): {kind: {vendor: seconds}}
HOST_SYNC: dict[str, dict[str, float]] = {kind: {str(v): float(s) for v, s in table.items()}
                                          for kind, table in load_constants().raw["host_sync"].items()}


def host_figure(kind: str, vendor: str) -> float | None:
    """A per-vendor host fact in seconds (kind launch_bound_op_s, round_trip_s, blas_heuristic_s, blas_matmul_s or
    gmm_gemm_period_s), or None where no figure was read for that vendor (the data file says which)."""
    if kind not in HOST_SYNC:
        raise KeyError(f"host_sync has no table {kind!r}; tables: {', '.join(sorted(HOST_SYNC))}")
    return HOST_SYNC[kind].get(vendor)


def drained_run_s(kernels: Any, host_s_per_kernel: Any, gpu_s: Any, round_trip_s: Any) -> np.ndarray:
    """Wall time from a host sync to the end of the `kernels` kernels issued after it (elementwise): the round trip,
    then the in-order host-issue / GPU-run pipeline on an empty queue, r + h + g + (n - 1) max(h, g), with gpu_s
    the GPU time of the n kernels shared evenly (g = gpu_s / n). Zero kernels cost the round trip alone."""
    n = np.asarray(kernels, float)
    h, gpu, r = (np.asarray(v, float) for v in (host_s_per_kernel, gpu_s, round_trip_s))
    if np.any(n < 0) or np.any(h < 0) or np.any(gpu < 0) or np.any(r < 0):
        raise ValueError("drained_run_s takes non-negative kernel counts and times")
    g = np.divide(gpu, n, out=np.zeros(np.broadcast(gpu, n).shape), where=n > 0)
    run = h + g + np.maximum(n - 1.0, 0.0) * np.maximum(h, g)
    return r + np.where(n > 0, run, 0.0)


def drain_excess_s(kernels: Any, host_s_per_kernel: Any, gpu_s: Any, round_trip_s: Any) -> np.ndarray:
    """What the sync adds over the GPU's own time for the kernels after it (drained_run_s - gpu_s): the round trip
    plus the first launch when the host keeps ahead, the whole host-GPU difference when it never does."""
    return drained_run_s(kernels, host_s_per_kernel, gpu_s, round_trip_s) - np.asarray(gpu_s, float)
