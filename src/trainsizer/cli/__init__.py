"""The `trainsizer` command line: rich tables for people, `--json` for scripts, `--lang zh|en`.

One module per command family; each registers its commands on the group in `app`.
"""

from __future__ import annotations

from trainsizer.accept.command import accept
from trainsizer.cli import catalog_cmd, job_cmd, models_cmd  # noqa: F401  (register their commands)
from trainsizer.cli.app import cli
from trainsizer.cli_support import run_command

cli.add_command(accept)


def main(argv: list[str] | None = None) -> int:
    """Entry point: user errors print one paragraph (no traceback) and exit 2."""
    return run_command(cli, argv, prog_name="trainsizer")


__all__ = ["cli", "main"]
