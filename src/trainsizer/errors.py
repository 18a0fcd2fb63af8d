"""Errors a user can act on.

Every error trainsizer raises for bad input is a `TrainsizerError`: the CLI prints its message as one
paragraph (no traceback) and exits with status 2. Messages say what is wrong, where, and what is allowed.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

MAX_VALUE_CHARS = 80


class TrainsizerError(Exception):
    """Base class for errors caused by user input or environment, not by a bug."""

    exit_code = 2


class SpecError(TrainsizerError):
    """A value in a job, catalog or model file is wrong.

    `where` is a dotted field path (``strategy.tp``) optionally prefixed by the file name.
    """

    def __init__(
        self,
        where: str,
        problem: str,
        *,
        value: object = None,
        allowed: str | Iterable[str] | None = None,
        suggestion: str | None = None,
    ) -> None:
        self.where = where
        self.problem = problem
        self.value = value
        if allowed is not None and not isinstance(allowed, str):
            allowed = ", ".join(str(a) for a in allowed)
        self.allowed = allowed
        self.suggestion = suggestion
        super().__init__(self._render())

    def _render(self) -> str:
        parts = [f"{self.where}: {self.problem}"]
        if self.value is not None:
            shown = repr(self.value)
            if len(shown) > MAX_VALUE_CHARS:  # a 10 kB value in a one-paragraph error hides the message
                shown = f"{shown[:MAX_VALUE_CHARS]}... ({len(shown)} characters)"
            parts.append(f"(got {shown})")
        msg = " ".join(parts) + "."
        if self.suggestion:
            msg += f" Did you mean {self.suggestion!r}?"
        if self.allowed:
            msg += f" Allowed: {self.allowed}."
        return msg


class StrategyError(TrainsizerError):
    """A parallel strategy breaks a rule (e.g. TP does not divide the attention heads)."""

    def __init__(self, rule: str, detail: str) -> None:
        self.rule = rule
        self.detail = detail
        super().__init__(f"invalid strategy ({rule}): {detail}")


def did_you_mean(name: str, choices: Iterable[str]) -> str | None:
    """Closest known name to a misspelt one, or None."""
    matches = difflib.get_close_matches(str(name).lower(), [c.lower() for c in choices], n=1, cutoff=0.6)
    if not matches:
        return None
    lowered = {c.lower(): c for c in choices}
    return lowered[matches[0]]


def unknown_name(where: str, kind: str, name: str, choices: Iterable[str]) -> SpecError:
    """Error for a name not found among `choices`, with a suggestion."""
    choices = sorted(choices)
    # A short name that starts several ids ("h100") is ambiguous rather than misspelt: name the candidates.
    starts = [c for c in choices if str(name) and c.lower().startswith(str(name).lower())]
    if len(starts) > 1:
        return SpecError(where, f"ambiguous {kind}: matches {', '.join(starts)}", value=name)
    shown = choices if len(choices) <= 12 else [*choices[:12], f"... ({len(choices)} in all)"]
    return SpecError(
        where,
        f"unknown {kind}",
        value=name,
        allowed=shown,
        suggestion=starts[0] if starts else did_you_mean(name, choices),
    )
