"""The report's message catalogue (data/i18n.yaml): every label and sentence in English and Chinese."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import yaml

LANGS = ("en", "zh")


@lru_cache(maxsize=1)
def catalogue() -> dict[str, dict[str, str]]:
    text = resources.files("trainsizer.render.report").joinpath("data/i18n.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


def t(key: str, lang: str, **values: object) -> str:
    """The message `key` in `lang`, with `{name}` placeholders filled; a missing key is a bug (KeyError)."""
    text = catalogue()[key][lang]
    return text.format(**values) if values else text


def has(key: str) -> bool:
    return key in catalogue()


def field_label(key: str, lang: str) -> str:
    """The label of a plan field (`f.<key>`); a field the catalogue lacks shows its own name."""
    return t(f"f.{key}", lang) if has(f"f.{key}") else key.replace("_", " ")
