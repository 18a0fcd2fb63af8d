"""Read a job file (YAML or JSON) into a `Job`, turning every problem into a one-paragraph `SpecError`."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from trainsizer.errors import NULL, SpecError, did_you_mean, given
from trainsizer.messages import Listing, Msg, Number, msg
from trainsizer.spec.job import Job
from trainsizer.spec.parse_problems import parse_problem
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
            raise SpecError(str(path), msg("file_not_found"))
        if path.is_dir():
            raise SpecError(str(path), msg("file_is_folder"))
        if path.stat().st_size > MAX_FILE_BYTES:
            raise SpecError(str(path), msg("file_too_large", mib=MAX_FILE_BYTES // 2**20))
        raw = path.read_bytes()
    except OSError as err:
        raise SpecError(str(path), msg("file_unreadable", reason=err.strerror or str(err))) from None
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise SpecError(str(path), msg("file_utf16"))
    if b"\x00" in raw[:8192]:
        raise SpecError(str(path), msg("file_binary"))
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise SpecError(f"{path}:{line}", msg("file_not_utf8", byte=f"{raw[err.start]:02x}")
                        ) from None


def parse_text(text: str, where: str, as_json: bool) -> Any:
    """YAML (or JSON) text -> Python data; syntax, duplicate keys and over-deep nesting are SpecErrors."""
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates) if as_json else load_yaml(text)
    except json.JSONDecodeError as err:
        raise SpecError(f"{where}:{err.lineno}:{err.colno}", msg("file_bad_json",
                        detail=parse_problem(err.msg))) from None
    except DuplicateKeyError as err:
        raise SpecError(f"{where}:{err.line}", msg("file_duplicate_key", key=repr(err.key), first=err.first_line)
                        ) from None
    except _JsonDuplicate as err:
        raise SpecError(where, msg("file_duplicate_key_json", key=repr(err.args[0]))) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f"{where}:{mark.line + 1}:{mark.column + 1}" if mark else where
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise SpecError(at, msg("file_bad_yaml", detail=parse_problem(problem))) from None
    except RecursionError:
        raise SpecError(where, msg("file_too_deep", depth=MAX_DEPTH)) from None
    if nesting_depth(data) > MAX_DEPTH:
        raise SpecError(where, msg("file_too_deep", depth=MAX_DEPTH))
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
        raise SpecError(str(path), msg("file_top_not_mapping"),
                        value=given(data))
    return dict(data)


def load_job(source: Path | str | Mapping[str, Any]) -> Job:
    """A validated `Job` from a file path or an already-parsed mapping."""
    if isinstance(source, Mapping):
        data, origin = dict(source), "job"
    else:
        data, origin = read_mapping(Path(source)), str(source)
    return parse_model(Job, data, origin)


# keys every Hugging Face config.json carries (transformers PretrainedConfig.to_dict) and no job has
_HF_CONFIG_KEYS = ("model_type", "architectures")


def _not_a_model_config(data: Mapping[str, Any], origin: str) -> None:
    """A model's config.json given where the job goes (`trainsizer plan config.json`, or posted as the job) is
    said to be one, with how to name it as the job's model, not reported as its first unknown key."""
    if "model" in data or not any(k in data for k in _HF_CONFIG_KEYS):
        return
    kind = str(data.get("model_type") or (data.get("architectures") or ["?"])[0])
    path = Path(origin) if origin and Path(origin).is_file() else None  # a file: name its path as the model
    how = msg("job_is_model_config_path", path=str(path)) if path is not None else msg("job_is_model_config_inline")
    raise SpecError(origin, msg("job_is_model_config", kind=kind, how=how))


def parse_model(model: type[M], data: Mapping[str, Any], origin: str) -> M:
    if model is Job:  # every path a job comes in by (files, the API, the web form) reads it here
        _not_a_model_config(data, origin)
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
    if e["type"] == "missing":  # a required key misspelt is missing and unknown at once: name the typo
        e = next((x for x in errors if x["type"] == "extra_forbidden" and x["loc"][:-1] == e["loc"][:-1]), e)
    raw = tuple(e["loc"])
    kind, ctx = e["type"], e.get("ctx") or {}
    # Unions report one branch per error: drop pydantic's branch labels ('str', 'NetworkSpec',
    # 'function-after[...]'). The last part of an unknown-key error is the user's key: keep it as written.
    head, tail = (raw[:-1], raw[-1:]) if kind == "extra_forbidden" else (raw, ())
    loc = tuple(p for p in head if not _is_branch_label(p)) + tail
    path = ".".join(str(p) for p in loc)
    if path:
        where: str = f"{origin}: {path}" if origin else path
    else:  # a rule about the whole job: "(top level)" in the reader's language
        where = msg("error_origin_top", origin=origin) if origin else msg("error_top_level")
    value = e.get("input")
    if value is None and "input" in e:
        value = NULL  # the file's `key: null` (or an empty `key:`): shown as "got null"
    if kind == "extra_forbidden":
        known = _field_names(model, loc)
        return SpecError(where, msg("spec_unknown_key"), allowed=known or None,
                         suggestion=did_you_mean(str(loc[-1]), known) if known else None)
    if kind == "missing":
        return SpecError(where, msg("spec_missing"))
    if kind == "literal_error":
        expected = str(ctx.get("expected", ""))
        choices = [c.strip().strip("'") for c in expected.replace(" or ", ", ").split(",") if c.strip()]
        return SpecError(where, msg("spec_not_allowed"), value=value, allowed=choices,
                         suggestion=did_you_mean(str(value), choices))
    shapes = sorted({_SHAPE_NAMES[x["type"]] for x in errors if x["type"] in _SHAPE_NAMES
                     and tuple(p for p in x["loc"] if not _is_branch_label(p)) == loc})
    if len(shapes) > 1:  # a union (model: name | mapping) none of whose shapes matched
        return SpecError(where, msg("spec_one_of", kinds=[msg(f"shape_{k}") for k in shapes]), value=value)
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        known = _field_names(model, (*loc, "_"))
        return SpecError(where, msg("spec_expected_mapping_of", keys=Listing(known)) if known
                         else msg("spec_expected_mapping"), value=value)
    if isinstance(value, Mapping) and kind not in _SHAPE_NAMES:
        value = None  # a rule's own message over a whole section names what it needs: the section is noise
    written = _written_number(kind, value, str(loc[-1]) if loc else "")
    span = _bounds(model, loc) if kind in _BOUND_KINDS and not written else None
    return SpecError(where, written or _problem(e, kind, ctx), value=value, allowed=span)


# a number out of its field's bounds: the error names the whole allowed range, not only the bound it crossed
_BOUND_KINDS = frozenset({"greater_than_equal", "greater_than", "less_than_equal", "less_than"})


def _bounds(model: type[BaseModel], loc: tuple[Any, ...]) -> Msg | None:
    """The range a bounded number field allows, as a catalogue message ('from 1 to 1e+13', 'greater than 0 and
    at most 3'), read from the field's own constraints; None when the field has a bound on one side only or
    the path does not lead to a model field (a list item, a union of models)."""
    current: Any = model
    names = [p for p in loc if isinstance(p, str)]
    if not names or len(names) != len(loc):
        return None
    for i, part in enumerate(names):
        fields = getattr(current, "model_fields", None)
        if not fields or part not in fields:
            return None
        if i == len(names) - 1:
            limits = {k: getattr(m, k) for m in fields[part].metadata for k in _LIMIT_KEYS if hasattr(m, k)}
            low = next((k for k in ("ge", "gt") if k in limits), None)
            high = next((k for k in ("le", "lt") if k in limits), None)
            if low is None or high is None:
                return None
            return msg(f"spec_range_{low}_{high}", low=_limit(limits[low]), high=_limit(limits[high]))
        ann = fields[part].annotation
        current = next((a for a in getattr(ann, "__args__", (ann,)) if isinstance(a, type) and issubclass(a, BaseModel)), None)
    return None


def _limit(x: Any) -> Any:
    """A bound as the reader's numbers write it (messages.Number: 1亿 / 100M, never 1e+08)."""
    return Number(x) if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) else str(x)


# "2B" tokens, "500k" USD, "20kW" for rack_kw, "14d" for deadline_days: a number written as people say it
_NUMBER_WORD = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]+)\s*$")
_MULTIPLIERS = {"k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}
_UNIT_WORDS = {"days": ("d", "day", "days"), "hours": ("h", "hr", "hour", "hours")}


def _plain(number: float) -> str:
    """As a job file writes it: 500000, 2e9, 1.5e12 (no '+' nor leading zero in the exponent)."""
    return re.sub(r"e\+?0*(\d)", r"e\1", f"{number:g}")


def _written_number(kind: str, value: Any, key: str) -> Msg | None:
    """The problem of a number written with a multiplier or the unit its key already names, with the plain
    number to write; None for anything else. A whole-number field gets no decimal guess ('4k' tokens of
    context are often 4096)."""
    found = _NUMBER_WORD.match(value) if isinstance(value, str) and kind in ("float_parsing", "int_parsing") else None
    if found is None:
        return None
    number, word = float(found.group(1)), found.group(2)
    unit = key.rsplit("_", 1)[-1].lower() if "_" in key else ""
    if word.lower() == unit or word.lower() in _UNIT_WORDS.get(unit, ()):
        return msg("spec_number_written", value=value, number=_plain(number))
    if word in _MULTIPLIERS and kind == "float_parsing":
        return msg("spec_number_multiplier", value=value, number=_plain(number * _MULTIPLIERS[word]))
    if word in _MULTIPLIERS:
        return msg("spec_int_multiplier")
    return None


_SHAPE_NAMES = {"string_type": "text", "dict_type": "mapping", "model_type": "mapping",
                "model_attributes_type": "mapping", "int_type": "int", "float_type": "number",
                "bool_type": "bool", "list_type": "list", "tuple_type": "list"}

# pydantic error types -> catalogue messages (the limit, where there is one, from the error's context)
_TYPE_MESSAGES = {
    "finite_number": "spec_finite", "greater_than_equal": "spec_ge", "greater_than": "spec_gt",
    "less_than_equal": "spec_le", "less_than": "spec_lt", "int_type": "spec_int", "int_parsing": "spec_int",
    "int_from_float": "spec_int", "int_parsing_size": "spec_le", "float_type": "spec_number",
    "float_parsing": "spec_number", "string_type": "spec_string", "bool_type": "spec_bool",
    "bool_parsing": "spec_bool", "list_type": "spec_list", "tuple_type": "spec_list",
}
_LIMIT_KEYS = ("ge", "gt", "le", "lt")


def pydantic_problem(e: Mapping[str, Any]) -> str:
    """One pydantic error's problem as a catalogue message (model files and catalog records use it too)."""
    return _problem(e, e.get("type", ""), e.get("ctx") or {})


def _problem(e: Mapping[str, Any], kind: str, ctx: Mapping[str, Any]) -> str:
    """The problem of one pydantic error as a catalogue message, else pydantic's text without class names."""
    if kind == "value_error" and isinstance(ctx.get("error"), Msg):
        return ctx["error"]  # our own validators raise ValueError(msg(...))
    if kind == "value_error" and isinstance(ctx.get("error"), ValueError) and \
            isinstance(ctx["error"].args[:1] and ctx["error"].args[0], Msg):
        return ctx["error"].args[0]
    if kind in _TYPE_MESSAGES:
        limit = next((ctx[k] for k in _LIMIT_KEYS if k in ctx), None)
        if kind == "int_parsing_size":
            limit = f"{2**63 - 1:.3g}"
        return msg(_TYPE_MESSAGES[kind], limit=_limit(limit))
    text = _CLASS_NAME.sub("", e["msg"])
    if text.startswith("Value error, "):
        text = text[len("Value error, "):]
    return msg("spec_invalid", detail=text[:1].lower() + text[1:])
