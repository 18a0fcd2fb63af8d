"""Running a click command the trainsizer way: user errors print one paragraph (no traceback), or with --json
the HTTP API's error object on stdout, exit 2; `--help` in the reader's language.

Help: every command's and option's help comes from `data/cli_help.yaml` (en + zh; the click decorators carry
none), click's own words ("Usage:", "Options", "[default: 10]") too, wrapped by the terminal cells a character
takes (a Chinese character takes two). Commands made with `cls=HelpCommand` (or inside a `HelpGroup`) show it.
The language: the root command's `--lang` (an eager option, so it is read before `--help`), else the one
`run_command` was given, else the locale's.
"""

from __future__ import annotations

import json
import re
import unicodedata
from contextvars import ContextVar
from typing import Any

import click

from trainsizer.catalogues import default_lang, load
from trainsizer.errors import ERROR_FIELDS, TrainsizerError, error_fields
from trainsizer.jsonable import to_jsonable
from trainsizer.messages import LIST_SEPARATORS
from trainsizer.messages import render as render_message
from trainsizer.names import FRAMEWORKS, OFFLOAD, RECOMPUTE, RECOMPUTE_METHODS


def _m(key: str, lang: str, **params: object) -> str:
    return render_message(key, lang, params)


def run_command(command: click.Command, argv: list[str] | None = None, prog_name: str | None = None,
                lang: str = "en", as_json: bool = False) -> int:
    """Invoke `command` and turn its outcome into an exit status; errors are printed in `lang`: one paragraph
    on stderr, or with `as_json` (the line asked for --json) the object {"error": {kind, message, field, where,
    value, allowed, suggestion, rule}} on stdout, the HTTP API's error body."""
    token = run_lang.set(lang)
    try:
        result = command.main(args=argv, prog_name=prog_name, standalone_mode=False)
    except (TrainsizerError, click.exceptions.Abort, click.ClickException) as err:
        code, fields = _failure(err, lang)
        if as_json:
            click.echo(json.dumps({"error": fields}, ensure_ascii=False, indent=2))
        else:
            prefix = "" if fields["kind"] == "aborted" else _m("error_prefix", lang)
            click.echo(prefix + fields["message"], err=True)
        return code
    except click.exceptions.Exit as err:
        return err.exit_code
    finally:
        run_lang.reset(token)
    return result if isinstance(result, int) else 0


def wants_json(args: list[str]) -> bool:
    """Whether the command line asks for --json (before a `--`): its errors are then JSON too."""
    return "--json" in (args[:args.index("--")] if "--" in args else args)


def _failure(err: Exception, lang: str) -> tuple[int, dict[str, Any]]:
    """(exit status, the error's fields for scripts, `message` being the paragraph after "error: ")."""
    if isinstance(err, TrainsizerError):
        fields = error_fields(err, lang)
        return err.exit_code, {**fields, "value": to_jsonable(fields["value"])}
    if isinstance(err, click.exceptions.Abort):
        return 1, {**ERROR_FIELDS, "kind": "aborted", "message": _m("error_aborted", lang)}
    if isinstance(err, click.UsageError):
        # the same "error: ..." paragraph as every other bad input, with where to find the usage
        ctx = err.ctx
        hint = _m("error_see_help", lang, command=ctx.command_path) if ctx is not None else ""
        text = _usage_text(err, lang).rstrip(".")
        return 2, {**ERROR_FIELDS, **_usage_parts(err), "kind": "usage",
                   "message": f"{text}{hint}{_m('error_end', lang)}"}
    return 2, {**ERROR_FIELDS, "kind": "usage", "message": _sentence(err.format_message())}


def _usage_parts(err: click.UsageError) -> dict[str, Any]:
    """A usage error's option (`where`), bad value, allowed choices and closest option, where click knows them."""
    param = getattr(err, "param", None)
    parts: dict[str, Any] = {}
    if isinstance(err, click.NoSuchOption):
        parts.update(where=err.option_name, suggestion=(err.possibilities or [None])[0])
    elif param is not None:
        parts["where"] = str(param.name).upper() if isinstance(param, click.Argument) else option_key(param)
        if isinstance(param.type, click.Choice):
            parts["allowed"] = LIST_SEPARATORS["en"].join(map(str, param.type.choices))
    found = _CLICK_VALUE.fullmatch(str(getattr(err, "message", "")).strip())
    if isinstance(err, click.BadParameter) and found is not None:
        parts["value"] = found.group("value").strip("'")
    return parts


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
        return _m("error_not_one_of", lang, value=value, choices=LIST_SEPARATORS[lang].join(map(str, err.param.type.choices)))
    if found.group("number") == "integer":  # '1e9', '2.5', '4k': a number, but the option counts in digits
        return _m("error_not_whole_number", lang, value=value)
    if found.group("number"):
        return _m("error_not_a_number", lang, value=value)
    if found.group("range"):
        return _m("error_not_in_range", lang, value=value, range=found.group("range"))
    return err.message


# --------------------------------------------------------------------------------------------------------- --help
HELP_FILE = "data/cli_help.yaml"
# the name lists a help text may name as {frameworks}, {recompute}, ... (one definition: trainsizer.names)
NAME_LISTS = {"frameworks": FRAMEWORKS, "recompute": RECOMPUTE, "recompute_methods": RECOMPUTE_METHODS,
              "offload": OFFLOAD}
run_lang: ContextVar[str | None] = ContextVar("trainsizer_help_lang", default=None)


def help_lang(ctx: click.Context) -> str:
    return ctx.find_root().params.get("lang") or run_lang.get() or default_lang()


def command_key(ctx: click.Context) -> str:
    """The command's entry in the help file: its path below the root ('catalog list'), the root's own name."""
    path = []
    while ctx.parent is not None:
        path.append(ctx.command.name or "")
        ctx = ctx.parent
    return " ".join(reversed(path)) or str(ctx.command.name)


def option_key(param: click.Parameter) -> str:
    return next((o for o in param.opts if o.startswith("--")), param.opts[0])


def help_text(command: str, key: str, lang: str) -> str | None:
    """The help of `key` ('_' = the command itself, else an option '--top') of `command` in `lang`; options
    several commands share come from `_shared`. None when the file has none (tests/test_cli_help.py fails)."""
    texts = load(HELP_FILE)
    entry = (texts.get(command) or {}).get(key) or (texts["_shared"].get(key) if key != "_" else None)
    if entry is None:
        return None
    text = entry[lang]
    for name, values in NAME_LISTS.items():
        text = text.replace(f"{{{name}}}", " | ".join(values))
    return text


def click_word(key: str, lang: str) -> str:
    return load(HELP_FILE)["_click"][key][lang]


# ----------------------------------------------------------------------------------------- wrapping by cells
def cells(text: str) -> int:
    """Terminal cells `text` takes: two for a wide (East Asian) character, one for the rest."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


# a token: a run of narrow non-space characters with its trailing spaces, or one wide character with its own
_TOKEN = re.compile(r"[^\s\u2e80-\uffef]+\s*|[\u2e80-\uffef]\s*|\s+")
_NO_LINE_START = set("，。、；：）」』］！？,.;:)]")
_NO_LINE_END = set("（「『［([")


def wrap_cells(text: str, width: int) -> list[str]:
    """`text` (one paragraph) in lines of at most `width` cells: breaks at spaces and beside wide characters;
    no line starts with closing punctuation (it stays on the line before, a cell or two past `width`) or ends
    with opening punctuation (it moves to the next line)."""
    lines: list[str] = []
    line = ""
    for token in _TOKEN.findall(" ".join(text.split())):
        if line and cells((line + token).rstrip()) > width and token[0] not in _NO_LINE_START:
            line = line.rstrip()
            kept = line.rstrip("".join(_NO_LINE_END) + " ")  # a run of opening punctuation moves on together
            carried = line[len(kept):].lstrip() if kept else ""
            lines.append(kept if carried else line)
            if carried and cells(carried + token.rstrip()) > width:  # the run alone, rather than past the width
                lines.append(carried)
                carried = ""
            line = carried + token.lstrip()
        else:
            line += token
    return [*lines, line.rstrip()] if line.strip() else lines


class CellFormatter(click.HelpFormatter):
    """click's formatter with text wrapped by terminal cells (wrap_cells), so Chinese help fits the width."""

    def write_heading(self, heading: str) -> None:
        self.write(f"{'':>{self.current_indent}}{heading}\n")  # the colon is the language's (help file)

    def write_text(self, text: str) -> None:
        indent = " " * self.current_indent
        width = max(self.width - self.current_indent, 11)
        paragraphs = ["\n".join(indent + line for line in wrap_cells(p, width)) for p in text.split("\n\n")]
        self.write("\n\n".join(paragraphs) + "\n")

    def write_dl(self, rows: Any, col_max: int = 30, col_spacing: int = 2) -> None:
        rows = list(rows)
        first_col = min(max(cells(first) for first, _ in rows), col_max) + col_spacing
        for first, second in rows:
            self.write(f"{'':>{self.current_indent}}{first}")
            if not second:
                self.write("\n")
                continue
            if cells(first) <= first_col - col_spacing:
                self.write(" " * (first_col - cells(first)))
            else:
                self.write("\n" + " " * (first_col + self.current_indent))
            lines = wrap_cells(second, max(self.width - first_col - 2, 10))
            pad = " " * (first_col + self.current_indent)
            self.write("\n".join([lines[0], *(pad + line for line in lines[1:])]) + "\n")


# ----------------------------------------------------------------------------------------- the commands
def _short(text: str) -> str:
    """The first sentence of a command's help: its line in its group's command list."""
    first = text.split("\n\n")[0]
    found = re.search(r"(?<=[.])\s|(?<=。)", first)
    return " ".join((first[:found.start()] if found else first).split())


class HelpCommand(click.Command):
    """A command whose --help comes from the help file, in the reader's language."""

    def get_help(self, ctx: click.Context) -> str:
        ctx.formatter_class = CellFormatter
        return super().get_help(ctx)

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        lang, words = help_lang(ctx), load(HELP_FILE)["_click_usage"]
        pieces = [words[p][lang] if p in words else p for p in self.collect_usage_pieces(ctx)]
        formatter.write_usage(ctx.command_path, " ".join(pieces), prefix=click_word("usage", lang))

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        text = help_text(command_key(ctx), "_", help_lang(ctx))
        if text:
            formatter.write_paragraph()
            with formatter.indentation():
                formatter.write_text(text)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        lang, key = help_lang(ctx), command_key(ctx)
        rows = [_option_row(p, ctx, help_text(key, option_key(p), lang) or "", lang)
                for p in self.get_params(ctx) if isinstance(p, click.Option) and not p.hidden]
        if rows:
            with formatter.section(click_word("options", lang)):
                formatter.write_dl(rows)


def _option_row(param: click.Option, ctx: click.Context, text: str, lang: str) -> tuple[str, str]:
    """(flags and metavar, help with its [default: ...; required] in `lang`)."""
    spec = param.get_help_record(ctx)
    extra = param.get_help_extra(ctx) if hasattr(param, "get_help_extra") else {}
    items = ([click_word("default", lang).format(value=extra["default"])] if "default" in extra else []) + \
        ([str(extra["range"])] if "range" in extra else []) + \
        ([click_word("required", lang)] if "required" in extra else [])
    if items:
        text = (text + click_word("extra", lang).format(items=click_word("extra_sep", lang).join(items))).strip()
    flags = spec[0] if spec else option_key(param)
    for word, entry in load(HELP_FILE)["_click_metavars"].items():  # "--count INTEGER": the type's name
        if flags.endswith(f" {word}"):
            return flags[:-len(word)] + entry[lang], text
    return flags, text


class HelpGroup(HelpCommand, click.Group):
    """A group whose --help (its own, and its command list) comes from the help file; its subcommands are
    HelpCommands and its subgroups of its own class."""

    command_class = HelpCommand
    group_class = type

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        HelpCommand.format_options(self, ctx, formatter)
        self.format_commands(ctx, formatter)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        lang = help_lang(ctx)
        below = f"{command_key(ctx)} " if ctx.parent is not None else ""
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, _short(help_text(below + name, "_", lang) or "")))
        if rows:
            with formatter.section(click_word("commands", lang)):
                formatter.write_dl(rows)
