"""Printing helpers shared by the CLI commands: rich tables for people, JSON for scripts."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from trainsizer.jsonable import to_jsonable


def echo_json(obj: Any) -> None:
    click.echo(json.dumps(to_jsonable(obj), ensure_ascii=False, indent=2))


def console() -> Console:
    # Piped output (scripts, CI logs) gets a wide page instead of rich's 80-column default.
    probe = Console()
    return Console(soft_wrap=False, width=None if probe.is_terminal else 160)


def print_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    table = Table(title=title, show_lines=False)
    for col in columns:
        table.add_column(col, overflow="ellipsis", max_width=60)
    for row in rows:
        table.add_row(*("—" if v is None else str(v) for v in row))
    console().print(table)


def fmt_params(n: float, lang: str = "en") -> str:
    """8.03e9 -> '8.03B' (English) / '80.3亿' (Chinese): see render.numbers."""
    from trainsizer.render.numbers import fmt_params as fmt

    return fmt(n, lang)
