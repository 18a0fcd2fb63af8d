"""The `trainsizer` command line."""

from __future__ import annotations

import sys

import click

from trainsizer import __version__
from trainsizer.errors import TrainsizerError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="trainsizer")
def cli() -> None:
    """Size, cost and accept hardware for AI training jobs."""


def main(argv: list[str] | None = None) -> int:
    try:
        cli.main(args=argv, standalone_mode=False)
    except TrainsizerError as err:
        click.echo(f"error: {err}", err=True)
        return err.exit_code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 1
    except click.ClickException as err:
        err.show()
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
