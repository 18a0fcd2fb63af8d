"""How large a cluster of an accelerator is documented to work (`evidence/scale.yaml`, read into the catalog's
`scale_platforms` so an overlay can extend it), and where an option of a given size stands against it.

Standing of `count` GPUs (one server is always documented: it is the product):
- demonstrated: count <= the largest published training run or benchmark on the platform;
- designed: count <= the largest vendor reference design that covers the platform;
- beyond: larger than both, by `doublings` = ceil(log2(count / documented)) doublings (documented = the larger
  of the two, or one server when the platform has neither).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from trainsizer.catalog.catalog import Catalog, load_catalog
from trainsizer.catalog.records import ScaleEvidence as Evidence
from trainsizer.catalog.records import ScalePlatform as Platform

LEVELS = ("demonstrated", "designed", "beyond")
__all__ = ["LEVELS", "Evidence", "Platform", "Standing", "platform_of", "platforms", "source_ids", "standing",
           "standing_on"]


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


def platforms(catalog: Catalog | None = None) -> dict[str, Platform]:
    """The platforms of `catalog` (default: the built-in catalog), overlays included."""
    return (catalog or load_catalog()).scale_platforms


def platform_of(accelerator_id: str, catalog: Catalog | None = None) -> Platform | None:
    return (catalog or load_catalog()).scale_platform_of(accelerator_id)


def source_ids(catalog: Catalog | None = None) -> set[str]:
    """Every source id the scale evidence cites (for the registry checks)."""
    return {s for p in platforms(catalog).values() for e in p.evidence() for s in e.sources}


def standing(accelerator_id: str, count: int, per_server: int, catalog: Catalog | None = None) -> Standing:
    """Where `count` accelerators (servers of `per_server`) stand against the documented scale (module doc)."""
    return standing_on(platform_of(accelerator_id, catalog), count, per_server)


def standing_on(plat: Platform | None, count: int, per_server: int) -> Standing:
    """`standing` on a platform already looked up (None: an accelerator with no documented deployment)."""
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
