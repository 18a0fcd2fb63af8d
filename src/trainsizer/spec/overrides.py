"""Command-line overrides of a job's `hardware` and `strategy` (`--accelerator h100-sxm-80gb --tp 8`).

Overrides are merged into the raw mapping *before* validation, so a bad flag value gets the same
field-path error as the same value written in the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HARDWARE_KEYS = ("accelerator", "count", "per_node", "network")
STRATEGY_KEYS = ("tp", "pp", "vpp", "dp", "cp", "ep", "etp", "zero", "fsdp", "shard_group", "micro_batch", "recompute",
                 "recompute_method", "recompute_num_layers", "offload", "framework")


def apply_overrides(data: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the job mapping with non-None overrides placed under `hardware` / `strategy`."""
    out = dict(data)
    for section, keys in (("hardware", HARDWARE_KEYS), ("strategy", STRATEGY_KEYS)):
        given = {k: v for k, v in overrides.items() if k in keys and v is not None}
        if given:
            current = out.get(section)
            merged = dict(current) if isinstance(current, Mapping) else {}
            merged.update(given)
            out[section] = merged
    unknown = set(overrides) - set(HARDWARE_KEYS) - set(STRATEGY_KEYS)
    if unknown:
        raise ValueError(f"not an override: {sorted(unknown)}")  # a programming error, not user input
    return out
