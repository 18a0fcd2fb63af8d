"""The web page's labels and help texts in English and Chinese (data/messages.yaml)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from trainsizer.catalogues import LANGS, load


def messages() -> dict[str, dict[str, str]]:
    return load("web/data/messages.yaml")


@lru_cache(maxsize=1)
def text_languages() -> dict[str, dict[str, Any]]:
    """Bytes per token by language of a dataset given in GB, with sources."""
    text = resources.files("trainsizer.web").joinpath("data/text_languages.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


def lang_of(headers: Mapping[str, str], explicit: str | None = None) -> str:
    """A request's language: `explicit` (?lang=) when given, else the browser's Accept-Language (zh* -> zh),
    else English."""
    if explicit:
        return pick_lang(explicit)
    return "zh" if headers.get("accept-language", "").lower().startswith("zh") else "en"


def pick_lang(value: str | None) -> str:
    """A supported language from a query parameter; anything else falls back to English."""
    return value if value in LANGS else "en"


def translator(lang: str):  # noqa: ANN201  (a plain callable for templates)
    table = messages()

    def tr(key: str) -> str:
        return table[key][lang]

    return tr
