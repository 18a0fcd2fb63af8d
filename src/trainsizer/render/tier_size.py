"""The size a plan's tier is read in, shared by the console plan and the report (one rule for both)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def tier_size_key(tier: Mapping[str, Any]) -> tuple[str, dict[str, int]]:
    """Which size sentence a tier reads (a suffix of 'tier_size') and its counts beyond GPUs and nodes: an NVL72
    job counts its trays and racks (scale-up domains), where '128 GPUs on 32 nodes' would call trays nodes."""
    domains = tier.get("scaleup_domains")
    if domains:
        extra = {"per_node": tier.get("per_node") or 0, "domains": domains, "domain": tier["scaleup_domain_gpus"]}
        return "tier_size_domains" + ("_one" if domains == 1 else ""), extra
    return "tier_size" + ("_one" if tier.get("nodes") == 1 else ""), {}
