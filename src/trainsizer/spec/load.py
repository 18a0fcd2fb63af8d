"""Read a job file (YAML or JSON) into a `Job`, turning every problem into a one-paragraph `SpecError`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from trainsizer.errors import SpecError, did_you_mean
from trainsizer.spec.job import Job

M = TypeVar("M", bound=BaseModel)


def read_mapping(path: Path) -> dict[str, Any]:
    """Parse a YAML or JSON file whose top level must be a mapping."""
    path = Path(path)
    if not path.exists():
        raise SpecError(str(path), "file not found")
    if path.is_dir():
        raise SpecError(str(path), "is a folder; expected a YAML or JSON file")
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as err:
        raise SpecError(f"{path}:{err.lineno}:{err.colno}", f"not valid JSON: {err.msg}") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = getattr(err, "problem", None) or str(err)
        raise SpecError(where, f"not valid YAML: {problem}") from None
    if not isinstance(data, Mapping):
        raise SpecError(str(path), "the top level must be a mapping of keys (model, method, data, ...)",
                        value=type(data).__name__)
    return dict(data)


def load_job(source: Path | str | Mapping[str, Any]) -> Job:
    """A validated `Job` from a file path or an already-parsed mapping."""
    if isinstance(source, Mapping):
        data, origin = dict(source), "job"
    else:
        data, origin = read_mapping(Path(source)), str(source)
    return parse_model(Job, data, origin)


def parse_model(model: type[M], data: Mapping[str, Any], origin: str) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise validation_to_spec_error(err, model, origin) from None


def _field_names(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """Known keys at the location of an unknown key, for a did-you-mean."""
    current: Any = model
    for part in loc[:-1]:
        fields = getattr(current, "model_fields", None)
        if not fields or part not in fields:
            return []
        ann = fields[part].annotation
        current = next((a for a in getattr(ann, "__args__", (ann,)) if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if current is None:
            return []
    return list(getattr(current, "model_fields", {}))


def _is_branch_label(part: object) -> bool:
    if not isinstance(part, str):
        return False
    return "[" in part or part in ("str", "int", "float", "bool") or part[:1].isupper()


def validation_to_spec_error(err: ValidationError, model: type[BaseModel], origin: str) -> SpecError:
    """The first pydantic error as a SpecError with a dotted path, the value and what is allowed."""
    errors = err.errors()
    # In a union (e.g. network: id | {nics_per_node, ...}) prefer the branch that matches the input's shape.
    shape_errors = {"string_type", "int_type", "float_type", "bool_type", "dict_type", "model_type", "tuple_type"}
    e = next((x for x in errors if x["type"] not in shape_errors), errors[0])
    raw = tuple(e["loc"])
    kind, ctx = e["type"], e.get("ctx") or {}
    # Unions report one branch per error: drop pydantic's branch labels ('str', 'NetworkSpec',
    # 'function-after[...]'). The last part of an unknown-key error is the user's key: keep it as written.
    head, tail = (raw[:-1], raw[-1:]) if kind == "extra_forbidden" else (raw, ())
    loc = tuple(p for p in head if not _is_branch_label(p)) + tail
    path = ".".join(str(p) for p in loc) or "(top level)"
    where = f"{origin}: {path}" if origin else path
    value = e.get("input")
    if kind == "extra_forbidden":
        known = _field_names(model, loc)
        return SpecError(where, "unknown key", allowed=known or None,
                         suggestion=did_you_mean(str(loc[-1]), known) if known else None)
    if kind == "missing":
        return SpecError(where, "required key is missing")
    if kind == "literal_error":
        expected = str(ctx.get("expected", ""))
        choices = [c.strip().strip("'") for c in expected.replace(" or ", ", ").split(",") if c.strip()]
        return SpecError(where, "not an allowed value", value=value, allowed=choices,
                         suggestion=did_you_mean(str(value), choices))
    msg = e["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    if isinstance(value, Mapping):
        value = None  # a whole sub-mapping is noise in a one-line message
    return SpecError(where, msg[:1].lower() + msg[1:], value=value)
