"""Read a job file (YAML or JSON) into a `Job`, turning every problem into a one-paragraph `SpecError`."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from trainsizer.errors import SpecError, did_you_mean
from trainsizer.spec.job import Job
from trainsizer.spec.yaml_loader import DuplicateKeyError, load_yaml

M = TypeVar("M", bound=BaseModel)
# pydantic names its classes in some messages ("... or instance of GlobalBatch"): users never see them
_CLASS_NAME = re.compile(r" or instance of \w+")


# Deeper nesting than any job or overlay needs (a job file is 3-4 levels deep); refused before it can
# exhaust Python's recursion limit in the parsers or the validators.
MAX_DEPTH = 32
# Longer than any job or catalog file people write by hand (the largest example is 2 kB).
MAX_FILE_BYTES = 50 * 2**20


def read_text(path: Path) -> str:
    """The UTF-8 text of a user file, or a SpecError saying why it is not one."""
    path = Path(path)
    try:
        if not path.exists():
            raise SpecError(str(path), "file not found")
        if path.is_dir():
            raise SpecError(str(path), "is a folder; expected a YAML or JSON file")
        if path.stat().st_size > MAX_FILE_BYTES:
            raise SpecError(str(path), f"file too large for a job or catalog file (over {MAX_FILE_BYTES // 2**20} MiB)")
        raw = path.read_bytes()
    except OSError as err:
        raise SpecError(str(path), f"cannot read the file: {err.strerror or err}") from None
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise SpecError(str(path), "the file is UTF-16; save it as UTF-8")
    if b"\x00" in raw[:8192]:
        raise SpecError(str(path), "a binary file, not YAML or JSON text")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise SpecError(f"{path}:{line}", f"not UTF-8 text (byte 0x{raw[err.start]:02x}); save the file as UTF-8"
                        ) from None


def parse_text(text: str, where: str, as_json: bool) -> Any:
    """YAML (or JSON) text -> Python data; syntax, duplicate keys and over-deep nesting are SpecErrors."""
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates) if as_json else load_yaml(text)
    except json.JSONDecodeError as err:
        raise SpecError(f"{where}:{err.lineno}:{err.colno}", f"not valid JSON: {err.msg}") from None
    except DuplicateKeyError as err:
        raise SpecError(f"{where}:{err.line}", f"key {err.key!r} is given twice (first on line {err.first_line})"
                        ) from None
    except _JsonDuplicate as err:
        raise SpecError(where, f"key {err.args[0]!r} is given twice") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f"{where}:{mark.line + 1}:{mark.column + 1}" if mark else where
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise SpecError(at, f"not valid YAML: {problem}") from None
    except RecursionError:
        raise SpecError(where, f"nested too deeply (more than {MAX_DEPTH} levels)") from None
    if nesting_depth(data) > MAX_DEPTH:
        raise SpecError(where, f"nested too deeply (more than {MAX_DEPTH} levels)")
    return data


class _JsonDuplicate(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _JsonDuplicate(key)
        out[key] = value
    return out


def nesting_depth(data: Any) -> int:
    """Levels of mappings/lists in `data`, counted without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children = list(item.values())
        elif isinstance(item, list | tuple):
            children = list(item)
        else:
            continue
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            return depth
        stack.extend((c, depth + 1) for c in children)
    return deepest


def read_mapping(path: Path) -> dict[str, Any]:
    """Parse a YAML or JSON file whose top level must be a mapping."""
    path = Path(path)
    data = parse_text(read_text(path), str(path), path.suffix.lower() == ".json")
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
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        known = _field_names(model, (*loc, "_"))
        return SpecError(where, "expected a mapping" + (f" of {', '.join(known)}" if known else ""),
                         value=value)
    msg = _CLASS_NAME.sub("", e["msg"])
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    if isinstance(value, Mapping):
        value = None  # a whole sub-mapping is noise in a one-line message
    return SpecError(where, msg[:1].lower() + msg[1:], value=value)
