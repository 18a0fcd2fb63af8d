"""A time to train for a person (messages.duration): days from one day on, hours under a day, minutes under an hour,
never "0.00 days", in English and Chinese."""

from __future__ import annotations

import re

from hypothesis import example, given
from hypothesis import strategies as st

from trainsizer.messages import duration

UNITS = {"dur_days": 1.0, "dur_hours": 1.0 / 24.0, "dur_minutes": 1.0 / 1440.0}


@given(st.floats(min_value=1e-4, max_value=1e5))
@example(0.015625)  # 22.5 min, printed "22": a CI run drew it
def test_a_duration_reads_in_the_largest_whole_unit_and_says_the_same_time(days):
    d = duration(days)
    value = float(d.params["n"].replace(",", ""))
    assert value >= 1.0 or d.key == "dur_minutes"  # never "0.4 days" or "0.5 h"
    text = d.params["n"]
    last_digit = 10.0 ** -(len(text.split(".")[1]) if "." in text else 0)  # 22.5 min prints "22": off by half a minute
    assert abs(value * UNITS[d.key] - days) <= 0.5 * last_digit * UNITS[d.key] * (1 + 1e-9) + 1e-12
    en, zh = d.tr("en"), d.tr("zh")
    assert re.fullmatch(r"[\d,.]+ (days|h|min)", en) and re.fullmatch(r"[\d,.]+ (天|小时|分钟)", zh)


def test_short_jobs_in_hours_and_minutes():
    assert duration(0.34).tr("en") == "8.2 h" and duration(0.34).tr("zh") == "8.2 小时"
    assert duration(0.02329).tr("en") == "34 min" and duration(0.004).tr("zh") == "5.8 分钟"
    assert duration(12.25).tr("en") == "12.2 days" and duration(1234.5).tr("zh") == "1,234.5 天"
