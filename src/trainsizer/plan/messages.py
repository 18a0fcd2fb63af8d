"""The plan's sentences (`data/explain.yaml`, `data/buildout_text.yaml`; loaded with every other sentence by
`trainsizer.messages`), written in the plan's language and remembering their key and fields.

`msg(key, lang, **fields)` is a `Msg`: a `str` in `lang` that keeps its key and fields, so the plan stores
them next to the text (`plan.texts`) and a report renders the same plan.json in either language.
"""

from __future__ import annotations

from typing import Any

from trainsizer.catalogues import LANGS
from trainsizer.messages import Msg, render

__all__ = ["LANGS", "PlanMsg", "joined", "msg"]


class PlanMsg(Msg):
    """A catalogue message whose text is in a given language (a `Msg` is English)."""

    lang: str

    def __new__(cls, key: str, lang: str, /, **fields: Any) -> PlanMsg:
        obj = str.__new__(cls, render(key, lang, fields))
        obj.key, obj.params, obj.lang = key, fields, lang
        return obj

    def __reduce__(self) -> tuple:  # pickling keeps key, language and fields
        return (_rebuild, (self.key, self.lang, self.params))


def _rebuild(key: str, lang: str, fields: dict[str, Any]) -> PlanMsg:
    return PlanMsg(key, lang, **fields)


def msg(key: str, lang: str = "en", /, **fields: Any) -> PlanMsg:
    """The sentence `key` in `lang` with its {fields}; a missing key or field is a bug (KeyError)."""
    return PlanMsg(key, lang, **fields)


def joined(parts: list[Any], lang: str) -> Any:
    """Sentences joined with '; ' ('；' in Chinese), still one message (so it translates as a whole)."""
    if not parts:
        return ""
    out = parts[0]
    for part in parts[1:]:
        out = msg("join_semicolon", lang, first=out, rest=part)
    return out
