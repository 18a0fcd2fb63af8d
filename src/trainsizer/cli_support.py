"""Running a click command the trainsizer way: user errors print one paragraph (no traceback), exit 2."""

from __future__ import annotations

import click

from trainsizer.errors import TrainsizerError


def run_command(command: click.Command, argv: list[str] | None = None, prog_name: str | None = None) -> int:
    """Invoke `command` and turn its outcome into an exit status."""
    try:
        result = command.main(args=argv, prog_name=prog_name, standalone_mode=False)
    except TrainsizerError as err:
        click.echo(f"error: {err}", err=True)
        return err.exit_code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 1
    except click.UsageError as err:
        # the same "error: ..." paragraph as every other bad input, with where to find the usage
        ctx = err.ctx
        hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        click.echo(f"error: {_sentence(err.format_message()).rstrip('.')}{hint}.", err=True)
        return 2
    except click.ClickException as err:
        click.echo(f"error: {_sentence(err.format_message())}", err=True)
        return 2
    except click.exceptions.Exit as err:
        return err.exit_code
    return result if isinstance(result, int) else 0


def _sentence(message: str) -> str:
    """Click's messages start with a capital; ours start lower case ("error: no such option ...")."""
    return message[:1].lower() + message[1:] if message[1:2].islower() or message[1:2] == " " else message
