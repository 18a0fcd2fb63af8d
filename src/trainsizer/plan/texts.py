"""The plan's sentences as catalogue messages, so one plan.json reads in English and in Chinese.

A text field `X` of the plan (a sentence: why an option wins, what binds, a note, a risk's evidence) may have
a sibling `X_msg` = {key, params}: the catalogue message it was written from (`trainsizer.messages`). `X`
holds the text in the language the plan was made in; a reader in another language renders `X_msg` instead
(`localise`). A list of texts has a parallel list of messages (None for a text without one, e.g. catalog
prose), a mapping of texts a mapping of messages. Plans from before schema 1.1 have no `_msg` fields: their
texts are shown as written.

Parameters are encoded for JSON: a nested message as {key, params}, a sum of parts (tuple) as {"all": [...]},
alternatives (list) as {"any": [...]}; numbers and strings as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from trainsizer.messages import Msg, msg, storable
from trainsizer.messages import stored as _decode

SUFFIX = "_msg"


class MessageRef(BaseModel):
    """A catalogue message: its key and parameters (data/messages.yaml, plan/data/explain.yaml,
    plan/data/buildout_text.yaml)."""

    model_config = ConfigDict(extra="forbid")

    key: str
    params: dict[str, Any] = {}


def ref(text: Any) -> MessageRef | None:
    """The message `text` was written from; None for a plain string."""
    if not isinstance(text, Msg):
        return None
    return MessageRef.model_validate(storable(text))


def refs(texts: Any) -> Any:
    """`ref` of each text of a list (a list), or of each value of a mapping (a dict); None when none has one."""
    if isinstance(texts, Mapping):
        out = {k: ref(v) for k, v in texts.items()}
        return out if any(v is not None for v in out.values()) else None
    out_list = [ref(v) for v in texts]
    return out_list if any(v is not None for v in out_list) else None


def say(message: Mapping[str, Any], lang: str) -> str:
    """A stored message ({key, params}) in `lang`."""
    return _decode(dict(message)).tr(lang)


def _said(text: Any, message: Any, lang: str) -> Any:
    if isinstance(message, Mapping) and "key" in message:
        try:
            return say(message, lang)
        except KeyError:
            # a plan.json from an earlier version whose sentence has since been removed or has gained a field:
            # shown as written, in the plan's own language (as texts from before schema 1.1 are)
            return text
    if isinstance(message, list) and isinstance(text, list) and len(message) == len(text):
        return [_said(t, m, lang) for t, m in zip(text, message, strict=True)]
    if isinstance(message, Mapping) and isinstance(text, Mapping):
        return {k: _said(v, message.get(k), lang) for k, v in text.items()}
    return text


def localise(node: Any, lang: str, *, keep: bool = True) -> Any:
    """A copy of `node` (a plan or any block of it, as JSON data) with every text that has a stored message
    written in `lang`. `keep=False` drops the `_msg` fields (a copy for display)."""
    if isinstance(node, list):
        return [localise(v, lang, keep=keep) for v in node]
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    for k, v in node.items():
        if k.endswith(SUFFIX) and k[: -len(SUFFIX)] in node:
            if keep:
                out[k] = v
            continue
        message = node.get(k + SUFFIX)
        out[k] = _said(v, message, lang) if message is not None else localise(v, lang, keep=keep)
    return out


class WithTexts(BaseModel):
    """Base of plan models with text fields: a field `X` given a catalogue message (a `Msg`, or a list or
    mapping of them) gets its sibling `X_msg` filled from it, so no construction site can forget it."""

    @model_validator(mode="before")
    @classmethod
    def _store_messages(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        for name in cls.model_fields:
            base = name[: -len(SUFFIX)] if name.endswith(SUFFIX) else None
            if base is None or data.get(name) is not None or base not in data:
                continue
            value = data[base]
            found = (ref(value) if isinstance(value, str) else
                     refs(value) if value and isinstance(value, list | tuple | Mapping) else None)
            if found is not None:
                data = {**data, name: found}
        return data


def listed(parts: list[Any]) -> Any:
    """Items joined with ', ' ('、' in Chinese), still one message."""
    if not parts:
        return ""
    out = parts[0]
    for part in parts[1:]:
        out = msg("join_comma", first=out, rest=part)
    return out


def with_refs(block: Mapping[str, Any]) -> dict[str, Any]:
    """A block from the estimators (as `estimate --json`) with `X_msg` beside each text `X` that is a
    catalogue message (e.g. memory.worst_gpu)."""
    out = dict(block)
    for k, v in block.items():
        stored = ref(v) if isinstance(v, str) else None
        if stored is not None and f"{k}{SUFFIX}" not in block:
            out[f"{k}{SUFFIX}"] = stored.model_dump()
    return out


def in_language(plan: Any, lang: str) -> Any:
    """`plan` (a pydantic model) with every text that has a stored message in `lang` (sentences from the
    shared catalogue, such as the job's notes, are written in English when they are made)."""
    if lang == "en":
        return plan
    return type(plan).model_validate(localise(plan.model_dump(mode="json", by_alias=True), lang))


def as_msg(message: MessageRef | Mapping[str, Any]) -> Msg:
    """A stored message as a `Msg` again (to use as a field of another message)."""
    data = message.model_dump() if isinstance(message, MessageRef) else dict(message)
    return _decode(data)
