"""Bus bandwidth as nccl-tests reports it (NVIDIA/nccl-tests doc/PERFORMANCE.md).

algbw = S / t; busbw = algbw x factor, factor 2(n-1)/n for all-reduce, (n-1)/n for all-gather,
reduce-scatter and all-to-all, 1 for broadcast/reduce. S is the full buffer in bytes; GB/s = 10**9 B/s.
"""

from __future__ import annotations

from trainsizer.errors import SpecError
from trainsizer.messages import msg

_FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
}


def bus_factor(op: str, nranks: int) -> float:
    if op not in _FACTORS:
        raise SpecError("collective", msg("error_unknown_name", kind=msg("kind_collective")), value=op,
                        allowed=sorted(_FACTORS))
    if nranks < 1:
        raise SpecError("nranks", msg("cli_at_least_1"), value=nranks)
    return _FACTORS[op](nranks)


def algbw_gb_s(size_bytes: int, time_s: float) -> float:
    return size_bytes / time_s / 1e9


def busbw_gb_s(op: str, size_bytes: int, time_s: float, nranks: int) -> float:
    return algbw_gb_s(size_bytes, time_s) * bus_factor(op, nranks)
