"""`trainsizer estimate`'s tables read in the reader's language: Chinese lines use full-width brackets, and a
tiny part of the step is shown in ms, not in E notation."""

from __future__ import annotations

import re
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from trainsizer.api import estimate, resolve
from trainsizer.render.estimate_view import _seconds, print_estimate

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "lora-8b-one-gpu.yaml"
# a Han character followed by an ASCII bracket, or a figure's bracket after Chinese ("租用 (USD)", "(典型 15.1)")
HAN_ASCII_PAREN = re.compile(r"[\u4e00-\u9fff] ?\(|\([\u4e00-\u9fff]")


def _shown(lang: str) -> str:
    out = StringIO()
    print_estimate(estimate(resolve(EXAMPLE)), lang, Console(file=out, width=200, soft_wrap=False))
    return out.getvalue()


def test_chinese_estimate_uses_full_width_brackets():
    text = _shown("zh")
    assert not HAN_ASCII_PAREN.search(text), HAN_ASCII_PAREN.search(text)
    assert "（典型" in text and "（USD）" in text


def test_english_estimate_keeps_its_brackets():
    text = _shown("en")
    assert "Rent (USD)" in text and "(typical " in text and "E-" not in text


@pytest.mark.parametrize(("seconds", "lang", "shown"), [(6.08e-4, "en", "0.608 ms"), (41.2, "zh", "41.2 s"),
                                                         (0.05, "en", "0.05 s")])
def test_a_part_of_the_step_reads_in_s_or_ms(seconds, lang, shown):
    assert _seconds(seconds, lang) == shown
