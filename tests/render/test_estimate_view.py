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


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_estimate_says_which_hardware_and_layout_it_estimated(lang):
    """The tables named neither: a job's own strategy (or the search's choice) was only in --json."""
    from trainsizer.layout_text import layout_in
    from trainsizer.render.i18n import t

    result = estimate(resolve(EXAMPLE))
    text = _shown(lang)
    assert f"{t('plan_layout', lang)}{t('colon', lang)}{layout_in(result['job']['strategy'], lang)}" in text
    assert ("1 x l40s (one node)" if lang == "en" else "1 张 l40s（单节点）") in text


def test_a_multi_node_estimate_counts_its_nodes_and_names_the_network():
    job = Path(__file__).resolve().parents[2] / "examples" / "sft-70b-16gpu.yaml"
    out = StringIO()
    print_estimate(estimate(resolve(job)), "en", Console(file=out, width=200, soft_wrap=False))
    assert "Hardware: 16 x h100-sxm-80gb (2 nodes x 8 GPUs), ib-ndr400" in out.getvalue()
    assert "Layout: DP16 ZeRO-3 mb1, full recompute, optimizer offloaded" in out.getvalue()
