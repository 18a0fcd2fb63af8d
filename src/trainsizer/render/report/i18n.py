"""The report's message catalogue (data/i18n.yaml): every label and sentence in English and Chinese.

Phase and risk names are not copied here: they are the CLI's `b_phase_<id>` / `b_risk_<id>` labels of
render/data/i18n.yaml, shown in the report's tables as `v.<id>` (one place to translate them)."""

from __future__ import annotations

from functools import cache

from trainsizer.catalogues import LANGS, load

__all__ = ["LANGS", "catalogue", "field_label", "has", "t"]

PATH = "render/report/data/i18n.yaml"
CLI_PATH = "render/data/i18n.yaml"
# CLI label prefixes whose ids the report shows as values; `_fix` entries are advice, not names
SHARED_PREFIXES = ("b_phase_", "b_risk_")


def shared_labels() -> dict[str, dict[str, str]]:
    """`v.<id>` for every phase and risk label of the CLI catalogue."""
    return {f"v.{key.removeprefix(prefix)}": entry for key, entry in load(CLI_PATH).items()
            for prefix in SHARED_PREFIXES if key.startswith(prefix) and not key.endswith("_fix")}


@cache
def catalogue() -> dict[str, dict[str, str]]:
    """The report's own entries over the shared phase and risk labels (an own entry wins)."""
    return {**shared_labels(), **load(PATH)}


def t(key: str, lang: str, **values: object) -> str:
    """The message `key` in `lang`, with `{name}` placeholders filled; a missing key is a bug (KeyError)."""
    text = catalogue()[key][lang]
    return text.format(**values) if values else text


def has(key: str) -> bool:
    return key in catalogue()


def field_label(key: str, lang: str) -> str:
    """The label of a plan field (`f.<key>`); a field the catalogue lacks shows its own name, an environment
    variable's (NCCL_NVLS_ENABLE, upper case) exactly as it is set."""
    if has(f"f.{key}"):
        return t(f"f.{key}", lang)
    return key if key.isupper() else key.replace("_", " ")
