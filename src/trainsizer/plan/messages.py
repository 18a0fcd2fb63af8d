"""The plan's sentences in English and Chinese (`data/explain.yaml`), filled with their fields."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

LANGS = ("en", "zh")


@lru_cache(maxsize=1)
def catalogue() -> dict[str, dict[str, str]]:
    text = resources.files("trainsizer.plan").joinpath("data/explain.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


def msg(key: str, lang: str, **fields: Any) -> str:
    """The sentence `key` in `lang` with its {fields}; a missing key or field is a bug (KeyError)."""
    return catalogue()[key][lang].format(**fields)
