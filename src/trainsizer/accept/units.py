"""Parsing durations ("24h", "30m", "1h30m", "45s") and sizes ("64MiB", "1GiB", "16G" = 16 GiB, "1GB")."""

from __future__ import annotations

import re

from trainsizer.errors import SpecError
from trainsizer.messages import msg

_DUR = re.compile(r"(\d+(?:\.\d+)?)(ms|d|h|m|s)")  # "ms" before "m", or "500ms" never matches
_DUR_S = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
# K/M/G alone are binary, as nccl-tests' -b/-e read them; KB/MB/GB decimal; KiB/MiB/GiB binary.
_SIZE = {"": 1, "b": 1, "k": 2**10, "kib": 2**10, "kb": 10**3, "m": 2**20, "mib": 2**20, "mb": 10**6,
         "g": 2**30, "gib": 2**30, "gb": 10**9, "t": 2**40, "tib": 2**40, "tb": 10**12}


def parse_duration_s(text: str, where: str) -> float:
    s = str(text).strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", s):
        return float(s)
    parts = _DUR.findall(s)
    if not parts or "".join(a + b for a, b in parts) != s:
        raise SpecError(where, msg("acc_not_duration"), value=text, allowed="45s, 30m, 24h, 1h30m, 2d, ...")
    return sum(float(n) * _DUR_S[u] for n, u in parts)


def parse_size_bytes(text: str, where: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m[2].lower() not in _SIZE:
        raise SpecError(where, msg("acc_not_size"), value=text, allowed=msg("acc_allowed_size"))
    return int(float(m[1]) * _SIZE[m[2].lower()])
