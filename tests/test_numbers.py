"""One money rule for every page and report (numbers.money): cents below 100, whole units above, 万 / 亿 in
Chinese from 1万 on; the amount stays in its own currency."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainsizer.messages import Money, stored
from trainsizer.numbers import money, significant


def test_cents_only_below_a_hundred():
    assert money(3.97, "USD", "en") == "$3.97" and money(99.5, "USD", "en") == "$99.50"
    assert money(372.75, "USD", "en") == "$373" and money(9198.14, "USD", "en") == "$9,198"
    assert money(372.75, "USD", "zh") == "US$373" and money(372.75, "CNY", "zh") == "¥373"
    assert money(2_290_000, "CNY", "zh") == "¥229万" and money(2_290_000, "CNY", "en") == "CN¥2,290,000"


@given(st.floats(min_value=100, max_value=1e9))
def test_whole_units_read_back_in_english(x):
    assert int(money(x, "USD", "en").lstrip("$").replace(",", "")) == round(x)


def test_money_in_a_sentence_survives_json_and_pickle_and_changes_language():
    m = Money(372.75, "USD")
    assert m == "$373" and m.tr("zh") == "US$373"
    assert stored({"key": m.key, "params": m.params}).tr("zh") == "US$373"
    assert pickle.loads(pickle.dumps(m)).tr("zh") == "US$373"


@pytest.mark.parametrize(("x", "shown"), [(2.7e-05, "0.000027"), (0.00053, "0.00053"), (4.123, "4.1"),
                                          (1234.5, "1234"), (0.0, "0"), (15.0, "15")])
def test_a_figure_inside_a_sentence_keeps_two_significant_figures(x, shown):
    """'tokens/s x bytes/token = 0.000027 GB/s', not '0.0000 GB/s' or '2.7e-05'."""
    assert significant(x) == shown


def test_a_range_is_written_in_one_form():
    """The ends of a range read like its typical value: a Chinese page never writes 'US$7,000 – US$1万'."""
    from trainsizer.render.report.fmt import Fmt

    zh, en = Fmt("zh"), Fmt("en")
    assert zh.money_range(7000, 9000, 10001, "USD") == "US$9,000（US$7,000 – US$10,001）"
    assert zh.money_range(7200, 12000, 15000, "USD") == "US$1.2万（US$0.72万 – US$1.5万）"
    assert zh.money_range(7.22, 10.59, 29.26, "USD") == "US$10.59（US$7.22 – US$29.26）"
    assert en.money_range(80, 99.5, 120, "USD") == "$99.50 ($80.00 – $120.00)"
    assert money(8000, "CNY", "zh", like=12000) == "¥0.8万" and money(8000, "CNY", "zh") == "¥8,000"


@pytest.mark.parametrize(("x", "shown"), [(5.3e-4, "0.00053"), (8.76e-5, "0.0000876"), (0.0123, "0.0123"),
                                          (1.2e-7, "1.2E-7")])
def test_a_small_figure_in_a_table_is_a_plain_decimal(x, shown):
    """'Write GB/s (blocking save) 0.00053', not '5.3E-4' (scientific notation only below a millionth)."""
    from trainsizer.numbers import fmt_num

    assert fmt_num(x, "en") == shown and fmt_num(x, "zh") == shown


@pytest.mark.parametrize(("n", "en", "zh"), [(671e9, "671B", "6710亿"), (405.85e9, "405.9B", "4058.5亿"),
                                             (13e9, "13B", "130亿"), (8.03e9, "8.03B", "80.3亿")])
def test_a_parameter_count_reads_one_way(n, en, zh):
    """The form's preset list: '671B' beside '405.9B', never '671.0B'; in Chinese 亿 (the zh form passes its lang)."""
    from trainsizer.numbers import fmt_params

    assert fmt_params(n, "en") == en and fmt_params(n, "zh") == zh


@pytest.mark.parametrize(("x", "zh"), [(9_999, "9,999"), (10_000, "1万"), (12_345, "1.23万"), (54_321, "5.43万"),
                                       (284_512_000, "2.85亿")])
def test_the_cli_and_the_report_switch_to_wan_at_the_same_figure(x, zh):
    """One rule for 万 (numbers.COMPACT_FROM): the report wrote 1.23万 where the CLI wrote 12,345 (the CLI
    switched at 100,000, the report at 10,000)."""
    from trainsizer.numbers import fmt_num
    from trainsizer.render.report.fmt import Fmt

    assert fmt_num(x, "zh") == Fmt("zh").num(x) == zh


def test_a_catalog_figure_keeps_its_digits():
    """A catalog row's figures as the file gives them: a price row read '8,000 | — | 1.5万' in Chinese."""
    from trainsizer.numbers import fmt_num

    assert fmt_num(15_000, "zh", digits=4, compact=False) == "15,000" and fmt_num(15_000, "zh") == "1.5万"
    assert fmt_num(11_600.0, "zh", digits=4, compact=False) == "11,600"


@pytest.mark.parametrize(("gib", "lang", "shown"), [(139.8, "en", "139.8"), (11.0, "en", "11.0"), (114.66, "zh", "114.7"),
                                                    (1234.5, "en", "1,234.5"), (0.049, "en", "0.049"), (0.0, "en", "0"),
                                                    (None, "en", "—")])
def test_fmt_gib_writes_a_tenth_of_a_gib(gib, lang, shown):
    from trainsizer.numbers import fmt_gib

    assert fmt_gib(gib, lang) == shown


@pytest.mark.parametrize(("x", "en", "zh"), [(1e12, "1T", "1万亿"), (1e8, "100M", "1亿"), (1e-6, "0.000001", "0.000001"),
                                             (123456789.5, "123.4567895M", "1.234567895亿"), (2048, "2,048", "2,048"),
                                             (-6.075798597676019e307, "-6.07579859767602E307", "-6.07579859767602E307")])
def test_a_number_quoted_in_a_sentence_is_the_tables_numbers_unrounded(x, en, zh):
    """messages.Number (a value the user typed, a field's bounds): 1万亿 on a Chinese page, never 1000000000000.0
    nor 1e+12; past the largest unit (and where Babel's rounding overflows) scientific."""
    from trainsizer.messages import Number

    n = Number(x)
    assert n == en and n.tr("zh") == zh
    assert stored({"key": n.key, "params": n.params}).tr("zh") == zh and pickle.loads(pickle.dumps(n)).tr("zh") == zh
