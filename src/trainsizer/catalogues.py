"""The one loader of message catalogues: YAML files `{key: {en: ..., zh: ...}}` inside the package.

Every catalogue (sentences in `data/messages.yaml` and `plan/data/explain.yaml`, CLI labels in
`render/data/i18n.yaml`, report labels in `render/report/data/i18n.yaml`, web texts in `web/data/messages.yaml`)
is read here, once, with the C YAML parser when present. It sits at the bottom of the layers: reading a data
file imports no package above it.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

LANGS = ("en", "zh")


def default_lang() -> str:
    """'zh' when the locale is Chinese, else 'en' (TRAINSIZER_LANG overrides)."""
    import locale
    import os

    forced = os.environ.get("TRAINSIZER_LANG")
    if forced in LANGS:
        return forced
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(var)
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    loc = locale.getlocale()[0] or ""
    return "zh" if loc.lower().startswith("zh") else "en"


@cache
def load(path: str) -> dict[str, dict[str, Any]]:
    """The catalogue at `path` (relative to the trainsizer package); yaml is imported on first use so that
    `import trainsizer.estimate` stays light."""
    import yaml

    text = resources.files("trainsizer").joinpath(path).read_text(encoding="utf-8")
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}


def text(path: str, key: str, lang: str) -> str:
    """The entry `key` of the catalogue at `path` in `lang`; a missing key or language is a bug (KeyError)
    that names the file to add it to."""
    entry = load(path).get(key)
    if entry is None or not entry.get(lang):
        raise KeyError(f"no {lang!r} text for message key {key!r}: add `{key}: {{en: ..., zh: ...}}` to "
                       f"src/trainsizer/{path}")
    return entry[lang]


def rule_notes(path: str) -> dict[str, dict[str, str]]:
    """The notes of a plan rule file (`{name: {value, source, note, note_zh}}`) that are written in both
    languages, as catalogue entries `rule.<file stem>.<name>` (plan/buildout/rules.py names them so)."""
    stem = path.rsplit("/", 1)[-1].removesuffix(".yaml")
    return {f"rule.{stem}.{name}": {"en": " ".join(str(e["note"]).split()), "zh": " ".join(str(e["note_zh"]).split())}
            for name, e in load(path).items() if isinstance(e, dict) and e.get("note") and e.get("note_zh")}
