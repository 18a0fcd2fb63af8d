"""The report's message catalogue (data/i18n.yaml): every label and sentence in English and Chinese."""

from __future__ import annotations

from trainsizer.catalogues import LANGS, load

__all__ = ["LANGS", "catalogue", "field_label", "has", "t"]

PATH = "render/report/data/i18n.yaml"


def catalogue() -> dict[str, dict[str, str]]:
    return load(PATH)


def t(key: str, lang: str, **values: object) -> str:
    """The message `key` in `lang`, with `{name}` placeholders filled; a missing key is a bug (KeyError)."""
    text = catalogue()[key][lang]
    return text.format(**values) if values else text


def has(key: str) -> bool:
    return key in catalogue()


def field_label(key: str, lang: str) -> str:
    """The label of a plan field (`f.<key>`); a field the catalogue lacks shows its own name."""
    return t(f"f.{key}", lang) if has(f"f.{key}") else key.replace("_", " ")
