"""Errors as the web shows them: JSON naming the field, the value and what is allowed (the CLI's message).

Every user error is a `TrainsizerError`; its text is the same paragraph the CLI prints after "error: ".
Conditions of the server itself (too large, busy, time limit) get their own small classes here.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from trainsizer.errors import TrainsizerError, error_fields, render_error
from trainsizer.jsonable import to_jsonable
from trainsizer.messages import msg, tr


class WebError(TrainsizerError):
    """A request the server refuses for a reason of its own (size, load, time), with its HTTP status."""

    status = 400

    def __init__(self, message: str | TrainsizerError, *, field: str | None = None) -> None:
        self.field = field
        # a catalogue message (`trainsizer.messages.msg`) or an error of its own renders in either language
        self.message = message
        super().__init__(str(message))

    def render(self, lang: str) -> str:
        return render_error(self.message, lang) if isinstance(self.message, TrainsizerError) else \
            str(tr(self.message, lang))


class TooLarge(WebError):
    status = 413


class Busy(WebError):
    status = 503


class TimeLimit(WebError):
    status = 503


class NotFound(WebError):
    status = 404


class Refused(WebError):
    """A task's user error, carried back from a worker process as its JSON detail and status."""

    def __init__(self, detail: dict[str, Any], status: int) -> None:
        self.detail = detail
        self.status = status
        super().__init__(detail.get("message", ""), field=detail.get("field"))


class ErrorDetail(BaseModel):
    """One refused request. `message` is the CLI's error paragraph; the other fields split it up."""

    kind: str  # spec | strategy | limit | not_found | internal (the CLI's --json also: usage | aborted)
    message: str
    field: str | None = None  # job path such as data.tokens or constraints.include
    where: str | None = None
    value: Any = None
    allowed: str | None = None
    suggestion: str | None = None
    rule: str | None = None


class ErrorBody(BaseModel):
    error: ErrorDetail


def error_detail(err: BaseException, lang: str = "en") -> ErrorDetail:
    """The JSON body of a refused request, its message in `lang`; never a traceback."""
    if isinstance(err, Refused):
        return ErrorDetail.model_validate(err.detail)
    if isinstance(err, WebError):
        return ErrorDetail(kind="not_found" if isinstance(err, NotFound) else "limit",
                           message=render_error(err, lang), field=err.field)
    if isinstance(err, TrainsizerError):
        fields = error_fields(err, lang)
        return ErrorDetail(**{**fields, "value": to_jsonable(fields.get("value"))})
    return ErrorDetail(kind="internal", message=msg("web_internal_error").tr(lang))


def status_of(err: BaseException) -> int:
    if isinstance(err, WebError):
        return err.status
    if isinstance(err, TrainsizerError):
        return 422
    return 500
