"""Jobs from requests: a JSON body or the form, checked with the CLI's own models and messages.

No path is ever taken from a request: `model` must name a shipped preset, or be a mapping (an inline
architecture, or the parsed content of an uploaded config.json).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from trainsizer.errors import SpecError, given, unknown_name
from trainsizer.messages import msg
from trainsizer.models import preset_names
from trainsizer.spec import Job
from trainsizer.spec.load import parse_model
from trainsizer.spec.parse_problems import parse_problem
from trainsizer.web.errors import TooLarge

ORIGIN = "job"


def parse_json_object(raw: bytes, where: str, max_bytes: int) -> dict[str, Any]:
    """A JSON object from request bytes; anything else is a SpecError naming `where`."""
    if len(raw) > max_bytes:
        raise TooLarge(msg("web_too_large", where=where, size=len(raw), limit=max_bytes),
                       field=where)
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise SpecError(where, msg("web_not_utf8")) from None
    except json.JSONDecodeError as err:
        raise SpecError(where, msg("web_bad_json", line=err.lineno, column=err.colno, detail=parse_problem(err.msg))) from None
    if not isinstance(data, Mapping):
        raise SpecError(where, msg("cal_expected_object"), value=given(data))
    return dict(data)


def check_model_reference(model: object) -> None:
    """A model given as text must be a preset: the server never opens a file a request names."""
    if isinstance(model, str) and model.strip().lower() not in preset_names():
        err = unknown_name(f"{ORIGIN}: model", "model preset", model.strip(), preset_names())
        raise err.at(err.where, msg("web_preset_only", problem=err.problem))


def _finite(node: Any, path: str) -> None:
    """JSON from Python (and text such as "inf" in a form) can carry infinities, which no job quantity is."""
    if isinstance(node, float) and not math.isfinite(node):
        raise SpecError(f"{ORIGIN}: {path}", msg("spec_finite"), value=node)
    if isinstance(node, Mapping):
        for k, v in node.items():
            _finite(v, f"{path}.{k}" if path else str(k))
    elif isinstance(node, list | tuple):
        for i, v in enumerate(node):
            _finite(v, f"{path}[{i}]")


def validate_job(data: Mapping[str, Any]) -> Job:
    """The job, validated exactly as `trainsizer check` validates a file, plus the no-path rule."""
    job = parse_model(Job, data, ORIGIN)
    check_model_reference(job.model)
    _finite(job.model_dump(), "")
    return job
