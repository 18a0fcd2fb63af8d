"""Numbers, units and money as a reader of each language expects them (CLDR rules through Babel, called in
one place: `trainsizer.render.numbers`, which the CLI tables use too).

Chinese groups large numbers in 万 (10^4) and 亿 (10^8) and writes ¥ for yuan; English uses thousands
separators. Binary and decimal units are never converted into each other: a `_gib` figure is printed as GiB,
a `_gb` figure as GB (docs/CONVENTIONS.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from trainsizer.messages import duration
from trainsizer.render import numbers
from trainsizer.render.report.i18n import has, t

# Field-name suffix -> unit printed after the number (CONVENTIONS.md's unit names).
UNIT_SUFFIXES: tuple[tuple[str, str], ...] = (
    ("_per_s", "/s"), ("_gib", "GiB"), ("_gb_s", "GB/s"), ("_gbps", "Gb/s"), ("_tb", "TB"), ("_gb", "GB"), ("_tflops", "TFLOP/s"),
    ("_kwh", "kWh"), ("_kw", "kW"), ("_w", "W"), ("_kva", "kVA"), ("_m2", "m²"), ("_ms", "ms"), ("_s", "s"),
    ("_s_per_step", "s"),
    ("_min", "min"), ("_h", "h"), ("_days", "d"), ("_weeks", "wk"), ("_months", "mo"), ("_c", "°C"),
)


# Fields that hold a fraction, printed as a percentage.
SHARE_SUFFIXES = ("_share", "_fraction", "_share_of_step", "mfu", "hfu", "goodput", "efficiency")

# Fields that count what a buyer orders or racks (a BOM line's quantity, the build-out's node, rack, switch and PDU
# counts): written exactly, never in 万 (plan/buildout blocks)
COUNT_FIELDS = frozenset({"quantity", "count", "nodes", "gpus", "racks", "node_racks", "network_racks",
                          "storage_racks", "pdus", "ups_modules", "appliances", "nodes_per_rack", "leaves", "spines",
                          "cores", "cables", "switches"})

# Fields that hold a (low, high) pair (plan/buildout/phases.py PhasesBlock.total_weeks).
RANGE_FIELDS = frozenset({"total_weeks"})

# Units also recognised inside a name ("gbps_per_nic", "node_kw_max"): none of them is an ordinary word.
INNER_UNITS = ("_gib", "_gb_s", "_gbps", "_tb", "_gb", "_tflops", "_kwh", "_kw", "_kva", "_m2")


def unit_of(key: str) -> str:
    """The unit a field name declares by its suffix, or by an unambiguous unit token inside it ('' if none)."""
    for suffix, unit in UNIT_SUFFIXES:
        if key.endswith(suffix):
            return unit
    padded = f"_{key}_"
    for suffix, unit in UNIT_SUFFIXES:
        if suffix in INNER_UNITS and f"{suffix}_" in padded:
            return unit
    return ""


def _joined(items: list[str], lang: str) -> str:
    """A list in the reader's punctuation: ', ' in English; in Chinese '、' between names, '；' between clauses
    that carry their own punctuation (a BOM's notes), never the English comma."""
    if lang != "zh":
        return ", ".join(items)
    return ("；" if any(c in item for item in items for c in "，；：。") else "、").join(items)


@dataclass(frozen=True)
class Fmt:
    """Formatting for one language."""

    lang: str

    @property
    def locale(self) -> str:
        return numbers.locale_of(self.lang)

    def num(self, x: float | int | None, digits: int = 1) -> str:
        """A count or measure: 万/亿 from `numbers.COMPACT_FROM` (1万) on in Chinese, as the CLI tables write
        them; thousands separators in English."""
        if x is None or (isinstance(x, float) and not math.isfinite(x)):
            return "—"
        if isinstance(x, bool):
            return str(x)
        if self.lang == "zh" and abs(x) >= numbers.COMPACT_FROM["zh"]:
            return numbers.compact(x, self.lang)
        if isinstance(x, int) or float(x).is_integer() or abs(x) >= numbers.COMPACT_FROM["zh"]:
            # whole units from 10,000 on: a tenth of a kWh in 2,103,500.3 kWh a year is noise
            return numbers.decimal(int(round(x)), self.lang)
        pattern = "#,##0." + "0" * digits if digits > 0 else "#,##0"
        if 0 < abs(x) < 10 ** -digits:  # two significant figures, never E notation a reader must decode
            return numbers.decimal(x, self.lang, "0." + "0" * (1 - math.floor(math.log10(abs(x)))))
        return numbers.decimal(x, self.lang, pattern)

    def count(self, x: float | int | None) -> str:
        """A count a buyer orders or racks (GPUs, nodes, NICs, cables), exactly: 16,384 in Chinese too."""
        return "—" if x is None else numbers.fmt_count(x, self.lang)

    def qty(self, x: float | int | None, unit: str, digits: int = 1) -> str:
        """A number with its unit (units are never converted; a time unit in the reader's word, `unit.<u>`)."""
        word = t(f"unit.{unit}", self.lang) if has(f"unit.{unit}") else unit
        if unit == "GiB" and digits == 1 and isinstance(x, float) and not x.is_integer() and abs(x) < 10_000:
            # a GPU's GiB to a tenth as the capacity sentence writes it (numbers.fmt_gib): 178.35 is 178.3 in both
            return f"{numbers.fmt_gib(x, self.lang)} {word}"
        return self.num(x, digits) if not unit else f"{self.num(x, digits)} {word}"

    def pct(self, x: float | None, digits: int = 1) -> str:
        if x is None:
            return "—"
        return numbers.decimal(100 * x, self.lang, "#,##0." + "0" * digits) + "%"

    def money(self, amount: float | None, currency: str, like: float | None = None) -> str:
        """An amount in its own currency (never converted), by the one rule of `numbers.money` (`like`: the
        figure whose size sets the form, for the ends of a range)."""
        if amount is None or not math.isfinite(amount):
            return "—"
        return numbers.money(amount, currency, self.lang, like=like)

    def money_range(self, low: float | None, mid: float | None, high: float | None, currency: str) -> str:
        """typical (low – high), all three in the typical value's form; one figure when the range is one price."""
        if low is not None and low == high:
            return self.money(mid if mid is not None else low, currency)
        like = mid if mid is not None else high
        span = f"{self.money(low, currency, like)} – {self.money(high, currency, like)}"
        typical = self.money(mid, currency, like)
        return f"{typical}（{span}）" if self.lang == "zh" else f"{typical} ({span})"

    def days(self, x: float | None) -> str:
        if x is None:
            return "—"
        if 0 < x < 1:  # hours, or minutes under an hour (messages.duration), never "0.00 days"
            return duration(x).tr(self.lang)
        unit = "天" if self.lang == "zh" else ("day" if x == 1 else "days")
        return f"{self.num(x, 0 if x >= 100 else 1)} {unit}"

    def value(self, key: str, x: object) -> str:
        """A plan field's value, formatted by its type and the unit its name declares."""
        if x is None:
            return "—"
        if isinstance(x, bool):
            return ("是" if x else "否") if self.lang == "zh" else ("yes" if x else "no")
        if isinstance(x, int | float):
            if key.endswith(SHARE_SUFFIXES):
                return self.pct(float(x))
            if key in COUNT_FIELDS:
                return self.count(x)
            return self.qty(x, unit_of(key), 2 if abs(x) < 10 else 1)
        if isinstance(x, list | tuple):
            if key in RANGE_FIELDS and len(x) == 2 and all(isinstance(v, int | float) for v in x):
                return f"{self.num(x[0])} – {self.value(key, x[1])}"   # (low, high): '2 – 12 wk', not '2 wk, 12 wk'
            items = [self.value(key, v) for v in x]
            return _joined(items, self.lang)
        return str(x)
