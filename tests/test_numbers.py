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
