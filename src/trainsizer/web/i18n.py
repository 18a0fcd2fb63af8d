"""The web page's labels and help texts in English and Chinese (data/messages.yaml)."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from trainsizer.render.i18n import LANGS


@lru_cache(maxsize=1)
def messages() -> dict[str, dict[str, str]]:
    text = resources.files("trainsizer.web").joinpath("data/messages.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


@lru_cache(maxsize=1)
def text_languages() -> dict[str, dict[str, Any]]:
    """Bytes per token by language of a dataset given in GB, with sources."""
    text = resources.files("trainsizer.web").joinpath("data/text_languages.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


def pick_lang(value: str | None) -> str:
    """A supported language from a query parameter; anything else falls back to English."""
    return value if value in LANGS else "en"


def translator(lang: str):  # noqa: ANN201  (a plain callable for templates)
    table = messages()

    def tr(key: str) -> str:
        return table[key][lang]

    return tr
