"""Every offload mode a plan can show has its words in both languages: the plan table's layout column and the
report's strategy line (a mode added to names.OFFLOAD without them would print English in a zh plan)."""

from __future__ import annotations

import pytest

from trainsizer.names import OFFLOAD, RECOMPUTE
from trainsizer.render.i18n import t as cli_t
from trainsizer.render.plan_view import _layout
from trainsizer.render.report.facts import strategy_text

MODES = [m for m in OFFLOAD if m != "none"]
BASE = {"tp": 1, "pp": 1, "vpp": 1, "dp": 1, "cp": 1, "ep": 1, "zero": 3, "shard_group": None,
        "distributed_optimizer": False, "micro_batch": 2, "recompute": "full"}


@pytest.mark.parametrize("mode", MODES)
def test_offload_mode_has_chinese_words(mode):
    zh_layout = _layout(BASE | {"offload": mode}, "zh")
    zh_line = strategy_text(BASE | {"offload": mode}, "zh")
    for text in (zh_layout, zh_line):
        assert "卸载" in text and "优化器" in text and "optimizer" not in text and "offload" not in text
    assert ("参数" in zh_layout) == ("params" in mode)


@pytest.mark.parametrize("mode", MODES)
def test_offload_mode_reads_as_before_in_english(mode):
    assert _layout(BASE | {"offload": mode}, "en").endswith(f"offload={mode}")
    assert strategy_text(BASE | {"offload": mode}, "en").endswith(f"mb2 recompute full offload {mode}")
    assert cli_t(f"layout_offload.{mode}", "en") == f"offload={mode}"


def test_no_offload_says_nothing_about_it():
    assert "offload" not in _layout(BASE | {"offload": "none"}, "en")
    assert "卸载" not in strategy_text(BASE | {"offload": "none"}, "zh")


@pytest.mark.parametrize("mode", [m for m in RECOMPUTE if m != "none"])
def test_recompute_mode_has_chinese_words(mode):
    zh_line = strategy_text(BASE | {"recompute": mode, "offload": "none"}, "zh")
    zh_layout = _layout(BASE | {"recompute": mode, "offload": "none"}, "zh")
    for text in (zh_line, zh_layout):
        assert "重计算" in text and mode not in text, text
    assert strategy_text(BASE | {"recompute": mode, "offload": "none"}, "en") == f"ZeRO-3 mb2 recompute {mode}"
    assert strategy_text(BASE | {"recompute": mode, "offload": "none"}, "zh").startswith("ZeRO-3 mb2，")
    assert _layout(BASE | {"recompute": mode, "offload": "none"}, "en").endswith(f"rc={mode}")


def test_no_recompute_reads_in_both_languages():
    assert "none" not in _layout(BASE | {"recompute": "none", "offload": "none"}, "zh")
    assert _layout(BASE | {"recompute": "none", "offload": "none"}, "en").endswith("rc=none")
