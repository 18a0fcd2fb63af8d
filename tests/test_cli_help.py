"""`--help` in both languages from one source (data/cli_help.yaml): every command and option has its en and zh
text there and nowhere else, the zh pages leave no English prose, and Chinese lines fit the terminal by cells."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainsizer.catalogues import LANGS, load
from trainsizer.cli import cli
from trainsizer.cli_support import HELP_FILE, cells, help_text, option_key, wrap_cells

sys.path.insert(0, str(Path(__file__).resolve().parent))
from english_words import english_words  # noqa: E402

HELP_NAMES = ["-h", "--help"]  # as the CLI's (click caches a command's help option: make it the same)
CLICK_MADE = ("--help", "--version")  # options click makes, with its own English help that is never shown


def _commands() -> list[tuple[str, click.Command]]:
    """(help-file key, command) of every command, the lazy ones (accept, serve) included."""
    out = [("trainsizer", cli)]

    def walk(group: click.Group, prefix: str) -> None:
        ctx = click.Context(group, help_option_names=HELP_NAMES)
        for name in group.list_commands(ctx):
            sub = group.get_command(ctx, name)
            out.append((prefix + name, sub))
            if isinstance(sub, click.Group):
                walk(sub, f"{prefix}{name} ")

    walk(cli, "")
    return out


def _options(cmd: click.Command) -> list[click.Option]:
    return [p for p in cmd.get_params(click.Context(cmd, help_option_names=HELP_NAMES))
            if isinstance(p, click.Option)]


@pytest.mark.parametrize("lang", LANGS)
def test_every_command_and_option_has_help_in_every_language(lang):
    missing = [f"{key} {name}" for key, cmd in _commands()
               for name in ("_", *(option_key(p) for p in _options(cmd))) if not help_text(key, name, lang)]
    assert not missing, f"add to src/trainsizer/{HELP_FILE} ({lang}): {missing}"


def test_the_help_file_is_the_one_source():
    """No help text in the decorators or docstrings (it would never be shown, and drift), and no entry in the
    help file that no command or option reads."""
    in_code = [key for key, cmd in _commands() if cmd.help]
    in_code += [f"{key} {option_key(p)}" for key, cmd in _commands() for p in _options(cmd)
                if p.help and option_key(p) not in CLICK_MADE]
    assert not in_code, f"move these help texts to {HELP_FILE}: {in_code}"
    used = {(key, name) for key, cmd in _commands() for name in ("_", *(option_key(p) for p in _options(cmd)))}
    texts = load(HELP_FILE)
    stale = [(key, name) for key, entries in texts.items() if not key.startswith("_")
             for name in entries if (key, name) not in used]
    stale += [name for name in texts["_shared"] if not any(n == name for _, n in used)]
    assert not stale, f"entries no command reads: {stale}"


def _page(run_cli, *args: str) -> str:
    code, out, err = run_cli(*args)
    assert code == 0, err
    return out


@pytest.mark.parametrize("key", [k for k, _ in _commands()])
def test_chinese_help_pages_have_no_english_prose(run_cli, key):
    args = [] if key == "trainsizer" else key.split()
    page = _page(run_cli, "--lang", "zh", *args, "--help")
    cmd = dict(_commands())[key]
    choices = {str(c) for p in cmd.params if isinstance(p.type, click.Choice) for c in p.type.choices}
    syntax = {"JOB_FILE", "PLAN_FILE", "KIND", "ENTRY_ID", "NAME", *choices}  # argument names, as the text names them
    assert not english_words(page, syntax), page
    assert "用法：" in page and "选项：" in page
    assert all(cells(line) <= 82 or " " not in line.strip() for line in page.splitlines()), page


def test_english_help_reads_as_before(run_cli):
    page = _page(run_cli, "plan", "--help")
    assert page.startswith("Usage: trainsizer plan [OPTIONS] JOB_FILE")
    assert "Options shown in full.  [default: 10]" in " ".join(page.split()).replace("full. [", "full.  [")
    assert "Options:" in page and "-h, --help" in page and "Show this message and exit." in page
    assert "--count INTEGER" in page


def test_the_language_of_the_help_follows_lang_wherever_it_is_written(run_cli, monkeypatch):
    monkeypatch.setenv("TRAINSIZER_LANG", "en")
    assert "用法：" in _page(run_cli, "plan", "--help", "--lang", "zh")   # after --help: hoisted
    assert "用法：" in _page(run_cli, "--help", "--lang", "zh")
    assert "Usage:" in _page(run_cli, "catalog", "show", "--help")
    monkeypatch.setenv("TRAINSIZER_LANG", "zh")
    assert "显示本帮助并退出" in _page(run_cli, "models", "--help")      # the locale's, without --lang


def test_shared_option_lists_come_from_the_names():
    from trainsizer.names import FRAMEWORKS

    assert " | ".join(FRAMEWORKS) in help_text("estimate", "--framework", "zh")
    assert "{" not in help_text("fit", "--recompute", "en")


@given(st.text(alphabet="ab 中文，。（）-", max_size=80), st.integers(min_value=4, max_value=40))
def test_wrapped_lines_fit_and_keep_every_character(text, width):
    lines = wrap_cells(text, width)
    assert "".join("".join(lines).split()) == "".join(text.split())
    for line in lines:
        # past the width only by closing punctuation kept on its line, or a run with no break in it
        core = line.rstrip("，。） ")  # the closing run, spaces within it too (a closer never starts a line)
        assert cells(core) <= width or (" " not in core and sum(cells(c) == 2 for c in core) <= 1), lines
    assert not any(line.startswith(("，", "。", "）")) for line in lines[1:]), lines
    assert not any(line.endswith("（") and line.strip("（ ") for line in lines[:-1]), lines  # but a line of openers


def test_the_usage_line_is_in_the_readers_words(run_cli):
    """'用法：trainsizer [OPTIONS] COMMAND [ARGS]...' read half in English."""
    assert _page(run_cli, "--lang", "zh", "--help").startswith("用法：trainsizer [选项] 命令 [参数]...")
    assert _page(run_cli, "--lang", "zh", "estimate", "--help").startswith("用法：trainsizer estimate [选项] JOB_FILE")
    assert _page(run_cli, "--help").startswith("Usage: trainsizer [OPTIONS] COMMAND [ARGS]...")
