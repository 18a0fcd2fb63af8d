"""Planning rules from `trainsizer/plan/data/*.yaml`: a value, the catalog source id that sets it, a note."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml

from trainsizer.errors import SpecError, unknown_name
from trainsizer.messages import msg
from trainsizer.sourced_rule import Rule as Rule

BLOCKS = ("fabric", "node", "storage", "facility", "software", "phases", "rules_of_thumb", "bom", "risks")


@cache
def _load(block: str) -> dict[str, Any]:
    if block not in BLOCKS:
        raise SpecError("plan rules", msg("plan_unknown_rule_file"), value=block, allowed=BLOCKS)
    text = resources.files("trainsizer.plan").joinpath(f"data/{block}.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text) or {}


def rule(block: str, name: str) -> Rule:
    """One rule; a missing rule is a data bug named precisely."""
    data = _load(block)
    entry = data.get(name)
    if not isinstance(entry, dict) or "value" not in entry or "source" not in entry:
        raise unknown_name(f"plan/data/{block}.yaml", "rule", name, [k for k, v in data.items()
                                                                     if isinstance(v, dict) and "value" in v])
    note: str = str(entry.get("note", "")).strip()
    if entry.get("note_zh"):  # a note in both languages is a catalogue message (catalogues.rule_notes)
        note = msg(f"rule.{block}.{name}")
    return Rule(name, entry["value"], str(entry["source"]), note)


def value(block: str, name: str) -> Any:
    return rule(block, name).value


def raw(block: str) -> dict[str, Any]:
    """The whole rule file (for list-shaped data such as phases)."""
    return _load(block)


def all_rules() -> list[tuple[str, Rule]]:
    """(block, rule) for every value-with-source entry of every file (tests check the sources resolve)."""
    out = []
    for block in BLOCKS:
        for name, entry in _load(block).items():
            if isinstance(entry, dict) and "value" in entry and "source" in entry:
                out.append((block, rule(block, name)))
    return out
