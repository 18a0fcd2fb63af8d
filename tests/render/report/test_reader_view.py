"""What a procurement reader sees in the report agrees with the CLI and reads as money and units: option numbers
are the plan's ranks, the BOM's rent figures are money, a label does not repeat the unit its figure prints."""

from __future__ import annotations

import pytest

from trainsizer.render.report.blocks import cell
from trainsizer.render.report.fmt import UNIT_SUFFIXES, Fmt, unit_of
from trainsizer.render.report.i18n import catalogue
from trainsizer.render.report.view import build_view

from .conftest import load_fixture


def test_options_are_numbered_by_their_rank_as_in_the_cli():
    plan = load_fixture()
    plan["options"][-1]["rank"] = 21   # a Pareto point kept past the top options keeps its rank
    view = build_view(plan, "en")
    rows = view.sections[0].tables[0].rows
    assert rows[-1][0] == "#21" and rows[0][0] == "#1"
    memory = next(s for s in view.sections if s.id == "memory").tables[0].rows
    assert memory[-1][0].startswith("#21 ")


@pytest.mark.parametrize(("lang", "text"), [("en", "$46,136"), ("zh", "US$4.61万")])
def test_rent_and_buy_vs_rent_amounts_are_money(lang, text):
    for key in ("per_month", "rent_per_month"):
        assert cell(key, 46136.0, Fmt(lang), "USD") == text
    assert "$" not in cell("job_days", 1.72, Fmt(lang), "USD")   # a length, not money


UNIT_WORDS = {"d": ("day", "天"), "mo": ("month", "月"), "h": ("hour", "小时"), "wk": ("week", "周"),
              "kWh": ("kwh",), "GiB": ("gib",), "GB/s": ("gb/s",), "s": ("second", "秒")}


def test_a_label_does_not_repeat_the_unit_its_figure_prints():
    for key, entry in catalogue().items():
        if not key.startswith("f."):
            continue
        unit = unit_of(key[2:])
        words = UNIT_WORDS.get(unit, ())
        for lang in ("en", "zh"):
            label = entry[lang].lower()
            assert not any(f"({w}" in label or f"（{w}" in label for w in words), (key, lang, entry[lang])
    assert set(UNIT_WORDS) <= {u for _, u in UNIT_SUFFIXES}


@pytest.mark.parametrize(("lang", "text"), [("en", "2 – 12 wk"), ("zh", "2 – 12 周")])
def test_a_low_high_pair_reads_as_a_range(lang, text):
    assert Fmt(lang).value("total_weeks", [2.0, 12.0]) == text
    assert Fmt(lang).value("critical_xids", [48, 56]) == {"en": "48, 56", "zh": "48、56"}[lang]  # a list stays a list


def test_a_chinese_list_has_no_english_comma():
    """Names are listed with '、', clauses with their own punctuation (a BOM's notes) with '；'."""
    zh = Fmt("zh")
    assert zh.value("notes", ["合计只计入有价格的物料；需询价", "租用：以下各行是租用的资源"]) == \
        "合计只计入有价格的物料；需询价；租用：以下各行是租用的资源"
    assert zh.value("parts", ["fibre-mpo12-om4", "xcvr-osfp-800g-2xdr4"]) == "fibre-mpo12-om4、xcvr-osfp-800g-2xdr4"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_notes_heading_over_nothing(lang):
    plan = load_fixture()
    plan["notes"] = []
    plan["notes_msg"] = []
    for option in plan["options"]:
        option["notes"] = []
    assert "notes" not in [s.id for s in build_view(plan, lang).sections]
    plan["notes"] = ["a note"]
    notes = next(s for s in build_view(plan, lang).sections if s.id == "notes")
    assert notes.text == ("a note",)


@pytest.mark.parametrize(("lang", "text"), [
    ("en", "Ranks: 16; Exposed data-parallel communication per step (gradient reduction + ZeRO-3/FSDP parameter "
           "gathers): 0.91 s; Exposed data-parallel communication, share of the step: 1.1%"),
    ("zh", "rank 数：16；每步暴露的数据并行通信时间（梯度归约 + ZeRO-3/FSDP 参数收集）：0.91 s；暴露的数据并行通信占单步比例：1.1%")])
def test_a_nested_value_keeps_its_fields_units_and_shares(lang, text):
    """The network block's all-reduce: a share reads as a percentage, seconds per step carry their unit, and
    the fields are set off in the reader's punctuation."""
    value = {"ranks": 16, "exposed_s_per_step": 0.91, "exposed_share_of_step": 0.0112}
    assert cell("allreduce", value, Fmt(lang), "USD") == text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_empty_risk_list_is_nothing_found_not_a_missing_part(lang):
    """A build-out that found no risk says so; 'not in this plan yet' is for a block the plan lacks."""
    from trainsizer.render.report.i18n import t

    from .conftest import load_buildout

    plan = load_buildout()
    plan["build"]["risks"] = []
    risks = next(s for s in build_view(plan, lang).sections if s.id == "risks")
    assert risks.text == (t("block_none", lang),) and not risks.missing
    del plan["build"]["risks"]
    assert next(s for s in build_view(plan, lang).sections if s.id == "risks").missing


ACCURACY = {"class": "megatron/dense/hopper/node",
            "time": {"matched": "megatron/dense/hopper", "min_rows": 8, "n": 83, "mape_pct": 5.9, "median_pct": 1.4,
                     "range": {"train_days": [29.1, 33.7]}},
            "memory": {"matched": None, "min_rows": 8, "n": 1, "range": {}}}


@pytest.mark.parametrize(("lang", "error", "likely"), [("en", "Likely error", "Likely time to train"),
                                                       ("zh", "可能误差", "可能的训练时长")])
def test_the_summary_gives_the_options_accuracy_band_and_its_likely_days(lang, error, likely):
    """plan options[].accuracy: the class, its held-out MAPE and n (the CLI's words), a coarser class's note, and the
    days its 10th..90th percentile imply beside the estimate's."""
    from trainsizer.render.report.view import _accuracy_rows

    rows = dict(_accuracy_rows({"accuracy": ACCURACY}, Fmt(lang)))
    assert list(rows) == [error, next(k for k in rows if k.startswith(likely))]
    assert all(x in rows[error] for x in ("megatron/dense/hopper", "5.9%", "+1.4%", "83", "megatron/dense/hopper/node"))
    assert rows[next(k for k in rows if k.startswith(likely))] == f"{Fmt(lang).days(29.1)} – {Fmt(lang).days(33.7)}"


@pytest.mark.parametrize(("lang", "words"), [("en", "no band"), ("zh", "不给误差范围")])
def test_a_class_without_a_band_says_so_and_gives_no_days(lang, words):
    from trainsizer.render.report.view import _accuracy_rows

    acc = {"class": "pytorch/hybrid/hopper/node", "time": {"matched": None, "min_rows": 8, "n": 1, "range": {}}}
    rows = _accuracy_rows({"accuracy": acc}, Fmt(lang))
    assert len(rows) == 1 and words in rows[0][1] and "pytorch/hybrid/hopper/node" in rows[0][1]
    assert _accuracy_rows({}, Fmt(lang)) == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_summary_writes_the_accuracy_band_as_the_cli_does(lang):
    """One text: the report's row is the CLI line's figures (render.estimate_view.accuracy_figures)."""
    from trainsizer.render.estimate_view import accuracy_figures, accuracy_line
    from trainsizer.render.report.view import _accuracy_rows

    figures = _accuracy_rows({"accuracy": ACCURACY}, Fmt(lang))[0][1]
    assert figures == accuracy_figures(ACCURACY, lang) and figures in accuracy_line(ACCURACY, lang)
