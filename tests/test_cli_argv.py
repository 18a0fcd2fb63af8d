"""Global options after the subcommand; `accept` imported only when it runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from trainsizer.cli.argv import hoist_global_options


@pytest.mark.parametrize(("args", "expected"), [
    (["estimate", "j.yaml", "--lang", "zh"], ["--lang", "zh", "estimate", "j.yaml"]),
    (["estimate", "--lang=zh", "j.yaml", "--json"], ["--lang=zh", "estimate", "j.yaml", "--json"]),
    (["--lang", "en", "check", "j.yaml", "--catalog", "o.yaml"], ["--lang", "en", "--catalog", "o.yaml", "check",
                                                                  "j.yaml"]),
    (["check", "--", "--lang"], ["check", "--", "--lang"]),
    (["check", "--lang"], ["check", "--lang"]),
])
def test_hoist_global_options(args, expected):
    assert hoist_global_options(args) == expected


def test_lang_after_the_subcommand(run_cli):
    code, out, _ = run_cli("models", "list", "--lang", "zh")
    assert code == 0 and "模型预设" in out


def test_usage_errors_use_the_same_prefix(run_cli):
    code, _, err = run_cli("check", "x.yaml", "--bogus")
    assert code == 2 and err.startswith("error: no such option --bogus") and "Usage:" not in err
    code, _, err = run_cli("--lang", "zh", "check", "x.yaml", "--jsn")
    assert code == 2 and err.startswith("错误：没有选项 --jsn；是否想写 --json？")


def test_cli_start_does_not_import_accept():
    code = "import sys, trainsizer.cli; print(any(m.startswith('trainsizer.accept') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_accept_is_listed_and_runs_lazily(run_cli):
    code, out, _ = run_cli("--help")
    assert code == 0 and "accept" in out
    code, out, _ = run_cli("accept", "--help")
    assert code == 0 and "--plan" in out


def test_a_count_in_exponent_notation_is_said_to_need_digits(run_cli):
    """`--count 1e9` read "'1e9' is not a valid number": it is a number; the option takes a whole number in digits."""
    code, _, err = run_cli("plan", "examples/sft-70b-search.yaml", "--count", "1e9")
    assert code == 2 and "whole number in digits" in err and "not a valid number" not in err
    code, _, err = run_cli("--lang", "zh", "plan", "examples/sft-70b-search.yaml", "--count", "1e9")
    assert code == 2 and "整数" in err
    code, _, err = run_cli("plan", "examples/sft-70b-search.yaml", "--budget", "lots")
    assert code == 2 and "not a valid number" in err     # a float option keeps its word
