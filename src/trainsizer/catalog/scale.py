"""How large a cluster of an accelerator is documented to work (`evidence/scale.yaml`), and where an
option of a given size stands against it.

Standing of `count` GPUs (one server is always documented: it is the product):
- demonstrated: count <= the largest published training run or benchmark on the platform;
- designed: count <= the largest vendor reference design that covers the platform;
- beyond: larger than both, by `doublings` = ceil(log2(count / documented)) doublings (documented = the larger
  of the two, or one server when the platform has neither).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

LEVELS = ("demonstrated", "designed", "beyond")


@dataclass(frozen=True)
class Evidence:
    gpus: int
    kind: str  # training_run | benchmark | reference_design
    what: str
    sources: tuple[str, ...]
    date: str


@dataclass(frozen=True)
class Platform:
    id: str
    name: str
    members: tuple[str, ...]
    demonstrated: Evidence | None
    designed: Evidence | None
    confidence: str
    also: tuple[Evidence, ...] = ()  # smaller published runs, for reference
    software: tuple[Evidence, ...] = ()  # what the training stack documents about scale (gpus 0: not a size)


@dataclass(frozen=True)
class Standing:
    """Where `count` GPUs stand against the documented scale of their platform."""

    level: str  # demonstrated | designed | beyond
    documented_gpus: int  # the size the level is judged against (the larger documented size when beyond)
    evidence: Evidence | None  # what documents that size (None: one server, or no platform)
    platform: str | None
    doublings: int = 0  # beyond only: doublings past documented_gpus

    @property
    def rank_key(self) -> int:
        """0 demonstrated, 1 designed, 2 + doublings beyond: lower is better documented."""
        return {"demonstrated": 0, "designed": 1}.get(self.level, 2 + self.doublings)


def _evidence(raw: dict[str, Any] | None) -> Evidence | None:
    if raw is None:
        return None
    return Evidence(gpus=int(raw.get("gpus", 0)), kind=str(raw.get("kind", "software")), what=str(raw["what"]).strip(),
                    sources=tuple(raw["sources"]), date=str(raw["date"]))


@lru_cache(maxsize=1)
def platforms() -> dict[str, Platform]:
    text = resources.files("trainsizer.catalog").joinpath("evidence/scale.yaml").read_text(encoding="utf-8")
    raw = yaml.safe_load(text)["platforms"]
    return {pid: Platform(id=pid, name=str(p["name"]), members=tuple(p["members"]),
                          demonstrated=_evidence(p.get("demonstrated")), designed=_evidence(p.get("designed")),
                          confidence=str(p["confidence"]),
                          also=tuple(e for e in map(_evidence, p.get("also") or ()) if e is not None),
                          software=tuple(e for e in map(_evidence, p.get("software") or ()) if e is not None))
            for pid, p in raw.items()}


@lru_cache(maxsize=256)
def platform_of(accelerator_id: str) -> Platform | None:
    return next((p for p in platforms().values() if accelerator_id in p.members), None)


def source_ids() -> set[str]:
    """Every source id the scale evidence cites (for the registry checks)."""
    return {s for p in platforms().values() for e in (p.demonstrated, p.designed, *p.also, *p.software) if e
            for s in e.sources}


def standing(accelerator_id: str, count: int, per_server: int) -> Standing:
    """Where `count` accelerators (servers of `per_server`) stand against the documented scale (module doc)."""
    plat = platform_of(accelerator_id)
    dem = plat.demonstrated if plat else None
    des = plat.designed if plat else None
    pid = plat.id if plat else None
    if count <= max(per_server, 1):
        return Standing("demonstrated", max(per_server, 1), None, pid)
    if dem is not None and count <= dem.gpus:
        return Standing("demonstrated", dem.gpus, dem, pid)
    if des is not None and count <= des.gpus:
        return Standing("designed", des.gpus, des, pid)
    best = max((e for e in (dem, des) if e is not None), key=lambda e: e.gpus, default=None)
    documented = max(best.gpus if best else 0, per_server, 1)
    return Standing("beyond", documented, best, pid, doublings=math.ceil(math.log2(count / documented)))
