"""Chinese and English labels for everything a person reads (CLI tables, reports)."""

from __future__ import annotations

from trainsizer.catalogues import LANGS, default_lang, load

__all__ = ["LANGS", "MissingMessage", "WARNING_NOTES", "default_lang", "note_label", "t"]


def _table() -> dict[str, dict[str, str]]:
    return load("render/data/i18n.yaml")


class MissingMessage(KeyError):
    """A label or message without an entry for a language: a bug, named precisely for whoever adds strings."""


def t(key: str, lang: str) -> str:
    """The label for `key` in `lang` (labels: render/data/i18n.yaml; sentences: data/messages.yaml)."""
    entry = _table().get(key)
    if entry is None:
        from trainsizer.messages import catalogue

        entry = catalogue().get(key)
    if entry is None or not entry.get(lang):
        raise MissingMessage(f"no {lang!r} text for message key {key!r}: add `{key}: {{en: ..., zh: ...}}` to "
                             "src/trainsizer/render/data/i18n.yaml (labels) or src/trainsizer/data/messages.yaml")
    return entry[lang]


# Notes that change what the job trains on, not only how it runs, are shown as warnings (label "warning").
WARNING_NOTES = frozenset({"warn_samples_truncated"})


def note_label(key: str | None, lang: str) -> str:
    """"warning" for a note whose message key is one of WARNING_NOTES, else "note"."""
    return t("warning" if key in WARNING_NOTES else "note", lang)
