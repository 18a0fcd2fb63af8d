from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainsizer.render.report.fmt import Fmt, unit_of


def test_chinese_groups_large_numbers_in_wan_and_yi():
    zh = Fmt("zh")
    assert zh.num(12_345) == "1.23万"
    assert zh.num(284_512_000) == "2.85亿"
    assert zh.money(2_290_000, "CNY") == "¥229万"
    assert zh.money(1.5e9, "CNY") == "¥15亿"


def test_english_uses_thousands_separators():
    en = Fmt("en")
    assert en.num(1_284_512) == "1,284,512"
    assert en.money(9198.14, "USD") == "$9,198"
    assert en.money(12.5, "USD") == "$12.50"
    assert en.pct(0.3531) == "35.3%"


def test_units_follow_the_field_name_and_are_never_converted():
    en = Fmt("en")
    assert en.value("ram_gib", 2048) == "2,048 GiB"
    assert en.value("capacity_tb", 100) == "100 TB"
    assert en.value("dataset_gb", 80) == "80 GB"
    assert en.value("gbps_per_nic", 400) == "400 Gb/s"
    assert en.value("nvme_read_gb_s", 25.5) == "25.5 GB/s"
    assert unit_of("cpu_cores") == ""
    assert unit_of("checkpoint_interval_min") == "min"


@given(st.integers(min_value=0, max_value=10**12))
def test_english_integers_read_back(n):
    assert int(Fmt("en").num(n).replace(",", "")) == n


@given(st.floats(min_value=1e4, max_value=1e15))
def test_chinese_large_amounts_carry_a_chinese_unit(x):
    text = Fmt("zh").money(x, "CNY")
    assert text.startswith("¥") and ("万" in text or "亿" in text or "兆" in text)


def test_short_jobs_read_in_hours_or_minutes_not_fractions_of_a_day():
    assert Fmt("zh").days(0.0908) == "2.2 小时"
    assert Fmt("en").days(0.02329) == "34 min" and Fmt("zh").days(0.004) == "5.8 分钟"
    assert Fmt("en").days(0.43) == "10.3 h" and Fmt("en").days(250.4) == "250 days"
    assert Fmt("en").days(1.0) == "1 day" and Fmt("en").days(3.25) == "3.2 days"


@given(st.floats(min_value=1e-4, max_value=1e4))
def test_days_never_print_an_exponent(x):
    assert "E" not in Fmt("zh").days(x) and "E" not in Fmt("en").days(x)


def test_a_money_range_takes_full_width_brackets_in_chinese():
    assert Fmt("zh").money_range(2704, 2739, 2774, "USD") == "US$2,739（US$2,704 – US$2,774）"
    assert Fmt("en").money_range(2704, 2739, 2774, "USD") == "$2,739 ($2,704 – $2,774)"


@pytest.mark.parametrize(("x", "shown"), [(0.0508, "0.051"), (0.0063, "0.0063"), (0.000123, "0.00012"),
                                          (0.5, "0.5"), (12.345, "12.3")])
def test_small_figures_read_as_decimals_not_e_notation(x, shown):
    """A 0.05 GiB gradient in the memory table is '0.051', never '5.08E-2'."""
    assert Fmt("en").num(x) == shown and "E" not in Fmt("zh").num(x)


@pytest.mark.parametrize(("unit", "en", "zh"), [("d", "1.7 d", "1.7 天"), ("mo", "1.7 mo", "1.7 个月"),
                                                 ("wk", "1.7 wk", "1.7 周"), ("h", "1.7 h", "1.7 小时"),
                                                 ("s", "1.7 s", "1.7 s"), ("GiB", "1.7 GiB", "1.7 GiB")])
def test_time_units_read_in_the_readers_words(unit, en, zh):
    """The rent block's 'job length' in Chinese is '1.7 天', not '1.7 d'; SI units stay."""
    assert (Fmt("en").qty(1.7, unit), Fmt("zh").qty(1.7, unit)) == (en, zh)


def test_a_large_measure_reads_in_whole_units():
    """'Energy per year 2,103,500.3 kWh' in the English report: a tenth past 10,000 is noise."""
    assert Fmt("en").qty(2_103_500.31, "kWh") == "2,103,500 kWh" and Fmt("en").num(9_999.25) == "9,999.2"


def test_a_count_a_buyer_orders_is_exact_in_chinese_too():
    """'1.64万 × NVIDIA H100' / a BOM line of '2.46万' transceivers: no purchase order can use a rounded count."""
    zh = Fmt("zh")
    assert zh.count(16_384) == "16,384" and zh.value("quantity", 24_576.0) == "24,576"
    assert zh.value("nodes", 2048) == "2,048" and zh.num(16_384) == "1.64万"  # a measure still reads in 万
    assert zh.count(681.4) == "681"  # a fractional quantity (GPU-hours) as a measure


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_gib_figure_reads_as_the_capacity_sentence_writes_it(lang):
    """One B200 plan page read 'capacity 178.3 GiB per GPU' (the capacity sentence) above '178.2 GiB / 178.4 GiB'
    in the memory column: 178.35 rounded two ways. A GiB figure has one rule (numbers.fmt_gib)."""
    from trainsizer.evaluate import capacity_note
    from trainsizer.messages import tr
    from trainsizer.numbers import fmt_gib

    f = Fmt(lang)
    assert f.qty(178.35, "GiB") == f"{fmt_gib(178.35, lang)} GiB"
    note = tr(capacity_note({"kind": "label", "accelerator": "b200", "capacity_gib": 178.35, "label_gb": 192}), lang)
    assert fmt_gib(178.35, lang) in note
