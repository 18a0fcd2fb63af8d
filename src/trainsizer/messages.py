"""Sentences a person reads (errors, notes), in English and Chinese, from `data/messages.yaml`.

`msg(key, **params)` returns a `Msg`: a `str` holding the English text (so JSON output, logs and code that
compares strings keep working) that remembers its key and parameters, so a renderer can print it in the
reader's language with `tr(text, lang)`. Parameters that are themselves `Msg` are translated too. This
module sits at the bottom of the layers (beside `errors`): every layer may build messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from typing import Any

LANGS = ("en", "zh")


@lru_cache(maxsize=1)
def catalogue() -> dict[str, dict[str, str]]:
    """{key: {en: ..., zh: ...}} of every message (yaml imported here: `import trainsizer.estimate` stays light)."""
    import yaml

    text = resources.files("trainsizer").joinpath("data/messages.yaml").read_text(encoding="utf-8")
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def render(key: str, lang: str, params: Mapping[str, Any]) -> str:
    """The message `key` in `lang` with `params` filled in; a missing key or language is a bug (KeyError)."""
    entry = catalogue().get(key)
    if entry is None or not entry.get(lang):
        raise KeyError(f"no {lang!r} text for message key {key!r}: add `{key}: {{en: ..., zh: ...}}` to "
                       "src/trainsizer/data/messages.yaml")
    template = entry[lang]
    # a tuple parameter is a sum of parts ("embedding + 80 layers + LM head"), a list one of alternatives
    # ("mapping | text"); each part is translated
    return template.format(**{k: _joined(v, lang) for k, v in params.items()})


def _joined(value: Any, lang: str) -> Any:
    if isinstance(value, tuple):
        return " + ".join(str(tr(p, lang)) for p in value)
    if isinstance(value, list):
        return " | ".join(str(tr(p, lang)) for p in value)
    return tr(value, lang)


class Msg(str):
    """A catalogue message: the English text, plus its key and parameters for translation."""

    key: str
    params: dict[str, Any]

    def __new__(cls, key: str, /, **params: Any) -> Msg:
        obj = super().__new__(cls, render(key, "en", params))
        obj.key, obj.params = key, params
        return obj

    def __reduce__(self) -> tuple:  # pickling (multiprocessing in the search) keeps key and parameters
        return (_rebuild, (self.key, self.params))

    def tr(self, lang: str) -> str:
        return render(self.key, lang, self.params)


def _rebuild(key: str, params: dict[str, Any]) -> Msg:
    return Msg(key, **params)


def msg(key: str, /, **params: Any) -> Msg:
    return Msg(key, **params)


def tr(text: Any, lang: str) -> Any:
    """`text` in `lang` when it is a catalogue message (or a list of them); anything else unchanged."""
    if isinstance(text, Msg):
        return text.tr(lang)
    if isinstance(text, list | tuple):
        return type(text)(tr(t, lang) for t in text)
    return text
