"""How old a dated catalog figure is, and whether it is stale.

A record's `date` is `YYYY`, `YYYY-MM` or `YYYY-MM-DD`. A coarse date is read as its earliest day (1 January,
the 1st of the month), so the age is the most the figure can be: '2025' on 2026-12-01 is 699 days, not 335.
A price older than STALE_AFTER_DAYS is flagged stale: plans and reports show the age and warn.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any, Literal

from trainsizer.errors import SpecError
from trainsizer.messages import msg

# A year: buyers' quotes for accelerators moved by 20-40% within a year in 2023-2026 (see prices.yaml notes).
STALE_AFTER_DAYS = 365

Precision = Literal["year", "month", "day"]


@dataclass(frozen=True)
class PriceAge:
    """Age of one dated figure on a given day."""

    date: str  # the record's date as written
    earliest_day: _dt.date  # the earliest day that date can mean
    precision: Precision
    age_days: int  # days from earliest_day to `today` (0 when the date lies ahead, e.g. a projection)
    stale: bool  # age_days > STALE_AFTER_DAYS
    projection: bool = False
    stale_after_days: int = STALE_AFTER_DAYS

    @property
    def age_years(self) -> float:
        return self.age_days / 365.25

    def to_dict(self) -> dict[str, Any]:
        return {
            "date": self.date,
            "earliest_day": self.earliest_day.isoformat(),
            "precision": self.precision,
            "age_days": self.age_days,
            "stale": self.stale,
            "projection": self.projection,
            "stale_after_days": self.stale_after_days,
        }


def earliest_day(date: str) -> tuple[_dt.date, Precision]:
    """The earliest day a catalog date ('2025', '2025-06', '2025-06-30') can mean, and its precision."""
    parts = str(date).split("-")
    try:
        if len(parts) == 1:
            return _dt.date(int(parts[0]), 1, 1), "year"
        if len(parts) == 2:
            return _dt.date(int(parts[0]), int(parts[1]), 1), "month"
        if len(parts) == 3:
            return _dt.date(int(parts[0]), int(parts[1]), int(parts[2])), "day"
    except ValueError:
        pass
    raise SpecError("date", msg("cat_not_calendar_date"), value=date, allowed=msg("cat_allowed_date"))


def price_age(date: str, today: _dt.date | None = None, *, projection: bool = False,
              stale_after_days: int = STALE_AFTER_DAYS) -> PriceAge:
    """Age of a figure dated `date` on `today` (default: the local date)."""
    if stale_after_days < 0:
        raise SpecError("stale_after_days", msg("spec_ge", limit=0), value=stale_after_days, allowed=">= 0")
    day = today or _dt.date.today()
    first, precision = earliest_day(date)
    age = max(0, (day - first).days)
    return PriceAge(date=str(date), earliest_day=first, precision=precision, age_days=age,
                    stale=age > stale_after_days, projection=projection, stale_after_days=stale_after_days)
