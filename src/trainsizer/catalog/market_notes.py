"""The catalog's accelerator market notes (`accelerators.yaml` `market_note`: export rules, China SKUs) in the
reader's language: the Chinese of each shipped note (`trainsizer/data/market_notes.yaml`) as a message a plan stores
and renders in either language. A note the file lacks (an overlay's own) is shown as written."""

from __future__ import annotations

from functools import cache

from trainsizer.catalogues import load
from trainsizer.messages import Msg, Translated

PATH = "data/market_notes.yaml"


@cache
def _table() -> dict[str, str]:
    return {str(e["en"]): str(e["zh"]) for e in load(PATH).get("market_note") or []}


def market_note(text: str) -> Msg | str:
    """An accelerator's `market_note` in both languages (its Chinese from the file), or as written."""
    zh = _table().get(text)
    return Translated(text, zh) if zh else text
