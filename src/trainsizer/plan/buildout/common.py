"""Shared pieces of the build-out blocks: the pydantic base and a figure that carries its rule."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict

from trainsizer.plan.buildout.rules import Rule
from trainsizer.plan.texts import MessageRef, WithTexts


class Block(WithTexts):
    """Base of every block model (JSON out); a text field `X` given a catalogue message gets `X_msg`."""

    model_config = ConfigDict(extra="forbid")


class Cited(Block):
    """A figure with the rule or formula that produced it and the source of its inputs."""

    value: Any
    value_msg: MessageRef | None = None  # a value that is a sentence (a framework's name), as a message
    rule: str
    rule_msg: MessageRef | None = None  # the catalogue message of `rule` (plan/texts.py)
    source: str


def cited(value: Any, rule: Any, source: str) -> Cited:
    return Cited(value=value, rule=rule, source=source)


def from_rule(r: Rule) -> Cited:
    return Cited(value=r.value, rule=r.note or r.name, source=r.source)


def ceil_div(a: float, b: float) -> int:
    """Whole units needed to hold `a` in units of `b` (exact for integers)."""
    if b <= 0:
        raise ValueError(f"divisor must be positive, got {b}")
    if isinstance(a, int) and isinstance(b, int):
        return -(-a // b)
    import math

    return math.ceil(a / b - 1e-9)
