"""The search's constants (`data/search.yaml`): space limits, count ladder, tie band and tiers."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np
import yaml


@dataclass(frozen=True)
class SearchConfig:
    default_max_gpus: int
    node_ladder_steps_per_doubling: int
    max_tp: int
    max_pp: int
    cp_min_tokens_per_rank: int
    vpp_values: tuple[int, ...]
    micro_batches: tuple[int, ...]
    tie_fraction: float
    tiers: tuple[dict[str, Any], ...]
    data_parallel_only_methods: tuple[str, ...] = ()
    memory_headroom_min: float = 0.0  # least free share of GPU memory a layout should keep (search.yaml)
    partial_recompute_max_saving: float = 0.25  # most of a full-recompute step that re-running fewer layers saves
    lean_note_ratio: float = 1.5  # chosen / least fitting memory from which notes name the lean layout (search.yaml)
    pp_odd_factors: tuple[int, ...] = ()  # pipeline degrees f x 2^k besides powers of two (search.yaml)


@lru_cache(maxsize=1)
def load_config() -> SearchConfig:
    text = resources.files("trainsizer.search").joinpath("data/search.yaml").read_text(encoding="utf-8")
    raw = yaml.safe_load(text)
    return SearchConfig(
        default_max_gpus=int(raw["default_max_gpus"]),
        node_ladder_steps_per_doubling=int(raw["node_ladder_steps_per_doubling"]),
        max_tp=int(raw["max_tp"]),
        max_pp=int(raw["max_pp"]),
        cp_min_tokens_per_rank=int(raw["cp_min_tokens_per_rank"]),
        vpp_values=tuple(int(v) for v in raw["vpp_values"]),
        micro_batches=tuple(int(v) for v in raw["micro_batches"]),
        tie_fraction=float(raw["tie_fraction"]),
        tiers=tuple(raw["tiers"]),
        data_parallel_only_methods=tuple(raw.get("data_parallel_only_methods") or ()),
        memory_headroom_min=float(raw["memory_headroom_min"]),
        partial_recompute_max_saving=float(raw.get("partial_recompute_max_saving", 0.25)),
        lean_note_ratio=float(raw.get("lean_note_ratio", 1.5)),
        pp_odd_factors=tuple(int(v) for v in raw.get("pp_odd_factors") or ()),
    )


def leaves_floor(used: Any, capacity: Any, floor: float | None = None) -> Any:
    """Whether `used` of `capacity` GPU memory (one unit; arrays welcome) leaves the memory floor free:
    used <= (1 - floor) x capacity, the floor being search.yaml memory_headroom_min unless given. The one test
    of the floor: the search's choice of layout (`engine.choose`), the plan's ranking (`plan.core`) and the
    build-out's memory risk (`plan.buildout.risks`) all ask it, so a layout the search keeps is never one its
    own plan flags."""
    f = load_config().memory_headroom_min if floor is None else floor
    return np.asarray(used, dtype=float) <= (1.0 - f) * np.asarray(capacity, dtype=float)


def names_lean_layout(used_gib: float, lean_gib: float, cfg: SearchConfig | None = None) -> bool:
    """Whether a chosen layout's memory (`used_gib`) is far enough above the least that fits on the same hardware
    (`lean_gib`, OptionResult.lean_mem_gib) for the estimate and the plan to name the lean layout:
    used >= search.yaml lean_note_ratio x lean."""
    ratio = (cfg or load_config()).lean_note_ratio
    return bool(np.isfinite(lean_gib) and lean_gib > 0 and used_gib >= ratio * lean_gib)


def node_ladder(max_nodes: int, steps_per_doubling: int = 2) -> list[int]:
    """Node counts 1, 2, 3, 4, 6, 8, 12, ... (two per doubling) up to and including `max_nodes`."""
    out: set[int] = set()
    base = 1
    while base <= max_nodes:
        for k in range(steps_per_doubling):
            num = base * (steps_per_doubling + k)
            if num % steps_per_doubling == 0 and num // steps_per_doubling <= max_nodes:
                out.add(num // steps_per_doubling)
        base *= 2
    out.add(max_nodes)
    return sorted(out)
