"""Sentences a person reads (errors, notes), in English and Chinese, from `data/messages.yaml`.

`msg(key, **params)` returns a `Msg`: a `str` holding the English text (so JSON output, logs and code that
compares strings keep working) that remembers its key and parameters, so a renderer can print it in the
reader's language with `tr(text, lang)`. Parameters that are themselves `Msg` are translated too. This
module sits at the bottom of the layers (beside `errors`): every layer may build messages.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from trainsizer.numbers import fmt_exact
from trainsizer.numbers import money as write_money

# Chinese typography puts no space beside full-width punctuation; a space left by a template ("框架 {framework} 没有")
# next to a parameter that ends in one ("'auto'（此布局解析为 fsdp）") is dropped.
_ZH_SPACED_PUNCT = re.compile(r" +(?=[（）：；，。、！？「」])|(?<=[（）：；，。、！？「」]) +")


# Sentence catalogues, one key space: the shared messages, the plan's and the web server's own sentences
# (tests/plan/test_texts.py checks that no key is defined in two of them).
SENTENCE_FILES = ("data/messages.yaml", "plan/data/explain.yaml", "plan/data/buildout_text.yaml",
                  "web/data/errors.yaml")
# Plan rule files whose notes (a rule's reason, shown beside the figure it sets) carry a Chinese `note_zh`.
RULE_FILES = ("plan/data/facility.yaml", "plan/data/storage.yaml", "plan/data/node.yaml", "plan/data/fabric.yaml",
              "plan/data/software.yaml", "plan/data/rules_of_thumb.yaml")


@lru_cache(maxsize=1)
def catalogue() -> dict[str, dict[str, str]]:
    """{key: {en: ..., zh: ...}} of every sentence (read by `trainsizer.catalogues`, the one loader)."""
    from trainsizer.catalogues import load, rule_notes

    merged: dict[str, dict[str, str]] = {}
    for path in SENTENCE_FILES:
        merged.update(load(path))
    for path in RULE_FILES:
        merged.update(rule_notes(path))
    return merged


def render(key: str, lang: str, params: Mapping[str, Any]) -> str:
    """The message `key` in `lang` with `params` filled in; a missing key or language is a bug (KeyError)."""
    entry = catalogue().get(key)
    if entry is None or not entry.get(lang):
        raise KeyError(f"no {lang!r} text for message key {key!r}: add `{key}: {{en: ..., zh: ...}}` to "
                       "src/trainsizer/data/messages.yaml")
    template = entry[lang]
    # a tuple parameter is a sum of parts ("embedding + 80 layers + LM head"), a list one of alternatives
    # ("mapping | text"); each part is translated
    text = template.format(**{k: _joined(v, lang) for k, v in params.items()})
    return _ZH_SPACED_PUNCT.sub("", text) if lang == "zh" else text


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


MONEY_KEY = "money_amount"


class Money(Msg):
    """An amount of money inside a sentence, written in each reader's convention by `numbers.money` ($373 in
    English, US$373 / ¥229万 in Chinese): a plan made in English reads in Chinese with Chinese money."""

    def __new__(cls, amount: float, currency: str) -> Money:
        obj = str.__new__(cls, write_money(amount, currency, "en"))
        obj.key, obj.params = MONEY_KEY, {"amount": amount, "currency": currency}
        return obj

    def __reduce__(self) -> tuple:
        return (Money, (self.params["amount"], self.params["currency"]))

    def tr(self, lang: str) -> str:
        return write_money(self.params["amount"], self.params["currency"], lang)


NUMBER_KEY = "number_value"


class Number(Msg):
    """A number inside a sentence (a value the user gave, a field's allowed range), written exactly in each reader's
    convention by `numbers.fmt_exact`, the tables' formatter: 1万亿 in Chinese, 1T in English, where Python wrote
    1000000000000.0 and '{:g}' 1e+08."""

    def __new__(cls, value: float) -> Number:
        obj = str.__new__(cls, fmt_exact(value, "en"))
        obj.key, obj.params = NUMBER_KEY, {"value": value}
        return obj

    def __reduce__(self) -> tuple:
        return (Number, (self.params["value"],))

    def tr(self, lang: str) -> str:
        return fmt_exact(self.params["value"], lang)


TRANSLATED_KEY = "translated_text"


class Translated(Msg):
    """A text whose languages a data file gives, not the catalogue (the catalog's NIC and CPU descriptions,
    plan/data/part_text.yaml): both kept, so a stored plan reads in either language."""

    def __new__(cls, en: str, zh: str) -> Translated:
        obj = str.__new__(cls, en)
        obj.key, obj.params = TRANSLATED_KEY, {"en": en, "zh": zh}
        return obj

    def __reduce__(self) -> tuple:
        return (Translated, (self.params["en"], self.params["zh"]))

    def tr(self, lang: str) -> str:
        return str(self.params.get(lang) or self.params["en"])


LISTING_KEY = "listed_items"
# How each language separates the items of a list in a sentence: Chinese enumerates with the 顿号 "、"
LIST_SEPARATORS = {"en": ", ", "zh": "、"}


class Listing(Msg):
    """Names or values listed in a sentence ("pretrain, cpt, full" / "pretrain、cpt、full"), each item translated
    when it is a message itself."""

    def __new__(cls, items: Any) -> Listing:
        items = list(items)
        obj = str.__new__(cls, LIST_SEPARATORS["en"].join(str(i) for i in items))
        obj.key, obj.params = LISTING_KEY, {"items": items}
        return obj

    def __reduce__(self) -> tuple:
        return (Listing, (self.params["items"],))

    def tr(self, lang: str) -> str:
        return LIST_SEPARATORS[lang].join(str(tr(i, lang)) for i in self.params["items"])


def msg(key: str, /, **params: Any) -> Msg:
    return Msg(key, **params)


def duration(days: float) -> Msg:
    """How long a job takes, for a person: days from one day on, hours under a day, minutes under an hour, so a
    short job never reads "0.00 days" (JSON keeps `train_days` in days)."""
    if not math.isfinite(days):
        return msg("dur_days", n="∞" if days > 0 else "—")
    if days >= 1.0:
        return msg("dur_days", n=f"{days:,.1f}")
    hours = days * 24.0
    if hours >= 1.0:
        return msg("dur_hours", n=f"{hours:.1f}")
    minutes = hours * 60.0
    return msg("dur_minutes", n=f"{minutes:.0f}" if minutes >= 10.0 else f"{minutes:.1f}")


def tr(text: Any, lang: str) -> Any:
    """`text` in `lang` when it is a catalogue message (or a list of them); anything else unchanged."""
    if isinstance(text, Msg):
        return text.tr(lang)
    if isinstance(text, list | tuple):
        return type(text)(tr(t, lang) for t in text)
    return text


def storable(value: Any) -> Any:
    """A message as JSON data ({key, params}; a sum of parts {"all": [...]}, alternatives {"any": [...]}), the
    form `stored` reads back; anything else unchanged."""
    if isinstance(value, Msg):
        return {"key": value.key, "params": {k: storable(v) for k, v in value.params.items()}}
    if isinstance(value, tuple):
        return {"all": [storable(v) for v in value]}
    if isinstance(value, list):
        return {"any": [storable(v) for v in value]}
    return value


def stored(value: Any) -> Any:
    """A message stored as JSON (`plan/texts.py`: {key, params}, a sum of parts {"all": [...]}, alternatives
    {"any": [...]}) back as a `Msg`, nested parameters included; anything else unchanged. Plans store their
    sentences this way, and `trainsizer accept` reads a plan's threshold sources with it."""
    if isinstance(value, Mapping):
        if value.get("key") == MONEY_KEY:
            return Money(**value["params"])
        if value.get("key") == NUMBER_KEY:
            return Number(**value["params"])
        if value.get("key") == TRANSLATED_KEY:
            return Translated(**value["params"])
        if value.get("key") == LISTING_KEY:
            return Listing(stored(value["params"]["items"]))
        if "key" in value and "params" in value:
            return msg(str(value["key"]), **{k: stored(v) for k, v in (value.get("params") or {}).items()})
        if set(value) == {"all"}:
            return tuple(stored(v) for v in value["all"])
        if set(value) == {"any"}:
            return [stored(v) for v in value["any"]]
    return value
