"""Platform reference table (data/platforms.yaml): load, look up by id, detect from a GPU name."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml

from trainsizer.errors import unknown_name


@cache
def _table() -> dict[str, Any]:
    text = resources.files("trainsizer.accept").joinpath("data/platforms.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


def platform_ids() -> list[str]:
    return [p["id"] for p in _table()["platforms"]]


def defaults() -> dict[str, Any]:
    return _table()["defaults"]


def source_text(source_id: str) -> str:
    """`id: description` for a source id of the table (the id alone if unknown)."""
    desc = _table()["sources"].get(source_id)
    return f"{source_id}: {desc}" if desc else source_id


def get(platform_id: str, where: str = "--platform") -> dict[str, Any]:
    for p in _table()["platforms"]:
        if p["id"] == platform_id:
            return p
    raise unknown_name(where, "platform", platform_id, platform_ids())


def detect(gpu_name: str) -> str | None:
    """Platform id whose `match` strings occur in an NVML/nvidia-smi GPU name, or None."""
    lowered = gpu_name.lower()
    for p in _table()["platforms"]:
        if any(m.lower() in lowered for m in p["match"]):
            return p["id"]
    return None
