"""The `trainsizer` command line: rich tables for people, `--json` for scripts, `--lang zh|en`.

One module per command family; each registers its commands on the group in `app`. `accept` (and its
PyTorch-facing imports) loads only when that command runs, so the other commands start fast.
"""

from __future__ import annotations

from trainsizer.cli import (  # noqa: F401  (register their commands)
    build_cmd,
    catalog_cmd,
    job_cmd,
    models_cmd,
    plan_cmd,
    report_cmd,
)
from trainsizer.cli.app import cli
from trainsizer.cli.argv import chosen_lang, hoist_global_options
from trainsizer.cli_support import run_command, wants_json

cli.add_lazy_command("accept", "trainsizer.accept.command", "accept")
cli.add_lazy_command("serve", "trainsizer.cli.serve_cmd", "serve")


def main(argv: list[str] | None = None) -> int:
    """Entry point: user errors print one paragraph (no traceback; with --json, a JSON object) and exit 2."""
    import sys

    args = hoist_global_options(list(sys.argv[1:] if argv is None else argv))
    return run_command(cli, args, prog_name="trainsizer", lang=chosen_lang(args), as_json=wants_json(args))


__all__ = ["cli", "main"]
