"""Running a click command the trainsizer way: user errors print one paragraph (no traceback), exit 2."""

from __future__ import annotations

import re

import click

from trainsizer.errors import TrainsizerError, render_error
from trainsizer.messages import render as render_message


def _m(key: str, lang: str, **params: object) -> str:
    return render_message(key, lang, params)


def run_command(command: click.Command, argv: list[str] | None = None, prog_name: str | None = None,
                lang: str = "en") -> int:
    """Invoke `command` and turn its outcome into an exit status; errors are printed in `lang`."""
    try:
        result = command.main(args=argv, prog_name=prog_name, standalone_mode=False)
    except TrainsizerError as err:
        click.echo(f"{_m('error_prefix', lang)}{render_error(err, lang)}", err=True)
        return err.exit_code
    except click.exceptions.Abort:
        click.echo(_m("error_aborted", lang), err=True)
        return 1
    except click.UsageError as err:
        # the same "error: ..." paragraph as every other bad input, with where to find the usage
        ctx = err.ctx
        hint = _m("error_see_help", lang, command=ctx.command_path) if ctx is not None else ""
        text = _usage_text(err, lang).rstrip(".")
        click.echo(f"{_m('error_prefix', lang)}{text}{hint}{_m('error_end', lang)}", err=True)
        return 2
    except click.ClickException as err:
        click.echo(f"{_m('error_prefix', lang)}{_sentence(err.format_message())}", err=True)
        return 2
    except click.exceptions.Exit as err:
        return err.exit_code
    return result if isinstance(result, int) else 0


def _sentence(message: str) -> str:
    """Click's messages start with a capital; ours start lower case ("error: no such option ...")."""
    return message[:1].lower() + message[1:] if message[1:2].islower() or message[1:2] == " " else message


def _usage_text(err: click.UsageError, lang: str) -> str:
    """The commonest usage errors from the message catalogue; click's own text for the rest."""
    if isinstance(err, click.NoSuchOption):
        close = " / ".join(err.possibilities or ())
        if close:
            return _m("error_no_such_option_close", lang, option=err.option_name, close=close)
        return _m("error_no_such_option", lang, option=err.option_name)
    if isinstance(err, click.MissingParameter) and err.param is not None:
        name = str(err.param.name).upper() if isinstance(err.param, click.Argument) else (err.param.opts or [""])[0]
        return _m("error_missing_parameter", lang, name=name)
    if isinstance(err, click.BadParameter) and err.param is not None:
        name = (err.param.opts or [err.param.human_readable_name])[0]
        return _m("error_bad_parameter", lang, name=name, detail=_bad_value(err, lang))
    no_such_command = getattr(click.exceptions, "NoSuchCommand", None)  # click >= 8.4
    if no_such_command is not None and isinstance(err, no_such_command):
        close = " / ".join(err.possibilities or ())
        if close:
            return _m("error_no_such_command_close", lang, command=repr(err.command_name), close=close)
        return _m("error_no_such_command", lang, command=repr(err.command_name))
    return _sentence(err.format_message())


# click's own texts for a bad value: "'x' is not one of 'a', 'b'.", "'x' is not a valid integer.",
# "0 is not in the range x>=1."
_CLICK_VALUE = re.compile(r"(?P<value>.+?) is not (?:one of .*|a valid (?P<number>\w+)|in the range (?P<range>.*?)"
                          r"|(?P<choice>'[^']*'))\.?")


def _bad_value(err: click.BadParameter, lang: str) -> str:
    """Why a value was refused, from the message catalogue where click's text is one it writes for a type."""
    found = _CLICK_VALUE.fullmatch(err.message.strip())
    if found is None:
        return err.message
    value = found.group("value")
    if isinstance(err.param.type, click.Choice):
        return _m("error_not_one_of", lang, value=value, choices=", ".join(map(str, err.param.type.choices)))
    if found.group("number"):
        return _m("error_not_a_number", lang, value=value)
    if found.group("range"):
        return _m("error_not_in_range", lang, value=value, range=found.group("range"))
    return err.message
