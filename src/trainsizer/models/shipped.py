"""Shipped model presets: published `config.json` files under `presets/`, provenance in `presets/index.json`."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from decimal import Decimal
from functools import cache
from importlib import resources
from typing import Any

from trainsizer.errors import unknown_name
from trainsizer.models.arch import ModelArch
from trainsizer.models.hf_config import arch_from_hf_config

_INDEX = "index.json"


def _preset_dir() -> Any:
    return resources.files("trainsizer.models").joinpath("presets")


@dataclass(frozen=True)
class PresetInfo:
    """One shipped preset, its exact counts and the published figures they are checked against."""

    name: str
    family: str
    params_total: int
    params_active: int
    source: str
    published_params_total_b: str | None  # as printed by the source, in billions
    published_params_active_b: str | None
    published_source: str
    checkpoint_params: int | None  # exact count of the released weights, where known
    known_discrepancy: str | None

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def published_params_total(self) -> float | None:
        return _billions(self.published_params_total_b)

    @property
    def published_params_active(self) -> float | None:
        b = self.published_params_active_b or self.published_params_total_b
        return _billions(b)


def _billions(text: str | None) -> float | None:
    return None if text is None else float(Decimal(text) * 10**9)


def published_tolerance(text: str) -> float:
    """Half a unit in the last printed digit of a published figure in billions ("1.7" -> 0.05e9 parameters)."""
    exponent = Decimal(text).as_tuple().exponent
    assert isinstance(exponent, int)
    return float(Decimal(5).scaleb(exponent - 1) * 10**9)


@cache
def _index() -> dict[str, dict[str, Any]]:
    raw = json.loads(_preset_dir().joinpath(_INDEX).read_text(encoding="utf-8"))
    return {k: v for k, v in raw.items() if not k.startswith("_")}


@cache
def preset_names() -> tuple[str, ...]:
    files = sorted(
        p.name[: -len(".json")]
        for p in _preset_dir().iterdir()
        if p.name.endswith(".json") and p.name != _INDEX
    )
    return tuple(files)


def preset_for_repo(repo: str) -> str | None:
    """The shipped preset whose config.json was read from the Hugging Face repo `repo` (case-insensitive)."""
    return next((name for name, meta in _index().items()
                 if str(meta.get("hf_repo") or "").lower() == repo.strip().lower()), None)


def load_preset(name: str, *, where: str = "model") -> ModelArch:
    """A shipped preset by name (case-insensitive); `where` prefixes the error for an unknown name."""
    key = name.strip().lower()
    if key not in preset_names():
        raise unknown_name(where, "model preset", name, preset_names())
    return _load(key)


@cache
def _load(key: str) -> ModelArch:
    raw = json.loads(_preset_dir().joinpath(f"{key}.json").read_text(encoding="utf-8"))
    meta = _index().get(key, {})
    source = f"preset {key} ({meta.get('source', 'source not recorded')})"
    return arch_from_hf_config(raw, name=key, source=source)


def list_presets() -> list[PresetInfo]:
    out = []
    index = _index()
    for name in preset_names():
        arch = load_preset(name)
        meta = index.get(name, {})
        out.append(
            PresetInfo(
                name=name,
                family=arch.family,
                params_total=arch.params_total,
                params_active=arch.params_active,
                source=meta.get("source", ""),
                published_params_total_b=meta.get("published_params_total_b"),
                published_params_active_b=meta.get("published_params_active_b"),
                published_source=meta.get("published_source", ""),
                checkpoint_params=meta.get("checkpoint_params"),
                known_discrepancy=meta.get("known_discrepancy"),
            )
        )
    return out
