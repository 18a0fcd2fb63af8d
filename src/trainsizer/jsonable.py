"""Any result as plain JSON types (dicts, lists, str, int, float, bool, null) for `--json`, the HTTP API and
error objects; NaN / inf become null (JSON has none)."""

from __future__ import annotations

import math
from typing import Any


def to_jsonable(obj: Any) -> Any:
    """Plain JSON types; NaN/inf become null (JSON has no NaN)."""
    if hasattr(obj, "to_dict"):
        return to_jsonable(obj.to_dict())
    if hasattr(obj, "model_dump"):
        return to_jsonable(obj.model_dump(mode="json"))
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars
        return to_jsonable(obj.item())
    if isinstance(obj, str | int | bool) or obj is None:
        return obj
    return str(obj)
