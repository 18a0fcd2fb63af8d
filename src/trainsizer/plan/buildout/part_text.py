"""The catalog's NIC, CPU, part and switch descriptions in the reader's language: the Chinese of their
descriptive words (`plan/data/part_text.yaml`; vendor and part names kept) as a message that a plan stores and
renders in either language. A description the file lacks (an overlay's own) is shown as written."""

from __future__ import annotations

from functools import cache

from trainsizer.catalogues import load
from trainsizer.messages import Msg, Translated

PATH = "plan/data/part_text.yaml"


@cache
def _table(kind: str) -> dict[str, str]:
    return {str(e["en"]): str(e["zh"]) for e in load(PATH).get(kind) or []}


def described(kind: str, text: str | None) -> Msg | str:
    """`text` (a catalog server's `nics.model` for kind "nic", its `cpu_model` for "cpu", a part's name for "part",
    a switch's for "switch") as a message in both languages."""
    text = text or ""
    zh = _table(kind).get(text)
    return Translated(text, zh) if zh else text
