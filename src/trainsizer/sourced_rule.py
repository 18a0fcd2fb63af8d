"""A sourced rule: a value, the catalog source id that sets it, a note. The plan's rules (plan/buildout/rules.py) and
the host-memory constants (estimate/host_memory.py) are both read into it, so it sits below both layers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Rule:
    name: str
    value: Any
    source: str  # catalog source id
    note: str = ""

    def cite(self) -> str:
        """'source id: note' for plan output."""
        return f"{self.source}" + (f": {self.note}" if self.note else "")
