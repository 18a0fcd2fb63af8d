"""Chinese and English labels for everything a person reads (CLI tables, reports)."""

from __future__ import annotations

import locale
import os
from functools import lru_cache
from importlib import resources

import yaml

LANGS = ("en", "zh")


def default_lang() -> str:
    """'zh' when the locale is Chinese, else 'en' (TRAINSIZER_LANG overrides)."""
    forced = os.environ.get("TRAINSIZER_LANG")
    if forced in LANGS:
        return forced
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(var)
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    loc = locale.getlocale()[0] or ""
    return "zh" if loc.lower().startswith("zh") else "en"


@lru_cache(maxsize=1)
def _table() -> dict[str, dict[str, str]]:
    text = resources.files("trainsizer.render").joinpath("data/i18n.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


def t(key: str, lang: str) -> str:
    """The label for `key` in `lang`; a missing key is a bug, so it raises KeyError."""
    return _table()[key][lang]
