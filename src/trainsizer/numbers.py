"""Numbers for people, per language, with Babel (CLDR locale data): grouping, decimals, and large numbers
in the reader's units -- 万 / 亿 in Chinese, K / M / B in English -- so one table never mixes "2.79e+07",
"874.666" and "12,442". JSON output keeps the raw numbers.

Shared by every layer (beside `messages`): the plan's sentences write amounts with the same `money` as the
report's headline and tables, so one page never says "$372.75" and "373 USD" of the same figure."""

from __future__ import annotations

import math
from typing import Any

from babel.numbers import (
    format_compact_currency,
    format_compact_decimal,
    format_currency,
    format_decimal,
    format_percent,
    get_currency_symbol,
)

LOCALES = {"en": "en_US", "zh": "zh_Hans_CN"}
# From here on a number is written compactly (1.23万 / 1.23M): in Chinese from 1万 on, the unit Chinese counts
# and prices are read in; in English from a million. The one threshold of the CLI tables, the reports' counts
# and money (`money`, `render.report.fmt.Fmt.num`); an English report writes its counts in full digits.
COMPACT_FROM = {"en": 1e6, "zh": 1e4}
# Below this a number is written in scientific notation; above it as a plain decimal to `digits` significant
# figures (0.00053 GB/s, not 5.3E-4, in a buyer's table).
SCIENTIFIC_BELOW = 1e-6
# Chinese sums of money read in 万 from 1万 on (¥1.23万), as prices are quoted: the same threshold.
COMPACT_MONEY_ZH_FROM = COMPACT_FROM["zh"]


def fmt_num(value: Any, lang: str, *, digits: int = 3, compact: bool = True) -> str:
    """`value` rounded to about `digits` significant figures in the reader's convention ("—" for none).
    `compact=False`: grouped digits however large (a catalog's figures as its file gives them: a price row's
    8,000 beside 15,000, not 8,000 beside 1.5万)."""
    if value is None:
        return "—"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    v = float(value)
    if not math.isfinite(v):
        return "∞" if v > 0 else ("-∞" if v < 0 else "—")
    loc = LOCALES.get(lang, "en_US")
    if v == 0:
        return "0"
    if compact and abs(v) >= COMPACT_FROM.get(lang, 1e6):
        # `digits` significant figures in the unit's count too (a catalog price 15,312 -> 1.531万 at 4)
        whole = len(format_compact_decimal(abs(v), locale=loc, fraction_digits=0).lstrip("-").split(".")[0]
                    .rstrip("万亿兆KMBT"))
        return format_compact_decimal(v, locale=loc, fraction_digits=max(2, digits - whole))
    if abs(v) < SCIENTIFIC_BELOW:  # a figure this small has no plain reading left: 1.2E-7
        return format_decimal(v, format="0.##E0", locale=loc)
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(v))))
    pattern = "#,##0" + ("." + "#" * decimals if decimals else "")
    return format_decimal(v, format=pattern, locale=loc)


# Significant digits a double keeps through decimal text (IEEE 754: 15): a number quoted back is never rounded.
EXACT_DIGITS = 15


# From here on a quoted number is written in scientific notation: past the largest compact unit either language
# has (T / 万亿) the units would pile up digits, and 15 significant digits of a 1e300 overflow Babel's rounding.
EXACT_SCIENTIFIC_FROM = 1e15


def fmt_exact(value: Any, lang: str) -> str:
    """A number quoted in a sentence (a value the user typed, a field's bounds): `fmt_num`'s convention (万 / 亿 in
    Chinese, K / M / B / T in English), unrounded."""
    if isinstance(value, int | float) and not isinstance(value, bool) and abs(value) >= EXACT_SCIENTIFIC_FROM \
            and math.isfinite(value):
        return format_decimal(value, format="0." + "#" * (EXACT_DIGITS - 1) + "E0", locale=LOCALES.get(lang, "en_US"))
    return fmt_num(value, lang, digits=EXACT_DIGITS)


def fmt_count(value: Any, lang: str) -> str:
    """A count of things a buyer orders or racks (GPUs, nodes, NICs, cables), written exactly in either language
    (16,384, never 1.64万, which no purchase order can use); a fractional quantity (GPU-hours, TB-months) as
    `fmt_num` writes it."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) \
            and float(value).is_integer():
        return format_decimal(int(value), locale=LOCALES.get(lang, "en_US"))
    return fmt_num(value, lang)


def fmt_gib(value: Any, lang: str) -> str:
    """A GiB figure of one GPU's memory to 0.1 GiB, as the capacity sentence ("139.8 GiB") and the plan's
    GiB/GPU column write it, so a table's total, capacity and headroom add up as printed (114.7 + 25.1 = 139.8,
    where three significant figures read 115 + 25.1 = 140); a figure under 0.1 GiB to two significant ones."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or abs(value) < 0.1:
        return fmt_num(value, lang, digits=2)
    return format_decimal(round(float(value), 1), format="#,##0.0", locale=LOCALES.get(lang, "en_US"))


def significant(x: float, figures: int = 2) -> str:
    """`x` to `figures` significant figures as a plain decimal, for a number inside a sentence: 0.000027, 4.1,
    1234 (never 2.7e-05, nor 0.0000 for a small figure)."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    decimals = max(0, figures - 1 - math.floor(math.log10(abs(x))))
    return f"{round(x, decimals):.{decimals}f}"


def fmt_share(fraction: float | None, lang: str) -> str:
    """A fraction as a percentage with one decimal (0.353 -> 35.3%)."""
    if fraction is None or not math.isfinite(fraction):
        return "—"
    return format_percent(fraction, format="#,##0.0%", locale=LOCALES.get(lang, "en_US"))


def fmt_params(n: float, lang: str = "en") -> str:
    """A parameter count: 8.03e9 -> '8.03B' (English), '80.3亿' (Chinese)."""
    if lang == "en":
        for div, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
            if abs(n) >= div:
                # 3 significant figures, one decimal from 100 on, never a trailing ".0" ('671B', '405.9B')
                return (f"{n / div:.3g}" if n / div < 100 else f"{n / div:.1f}".removesuffix(".0")) + unit
        return str(int(n))
    return format_compact_decimal(n, locale=LOCALES.get(lang, "en_US"), fraction_digits=2)


# The primitives the report's `Fmt` (render/report/fmt.py) is built on: every Babel call of trainsizer is in
# this module, so the CLI tables and the reports write numbers by the same CLDR rules.
def locale_of(lang: str) -> str:
    return LOCALES.get(lang, "en_US")


def decimal(x: float | int, lang: str, pattern: str | None = None) -> str:
    """`x` by a CLDR pattern ('#,##0.0'; None: the locale's default grouping)."""
    return format_decimal(x, format=pattern, locale=locale_of(lang))


def compact(x: float | int, lang: str, fraction_digits: int = 2) -> str:
    """1.23万 / 2.85亿 in Chinese, 1.23M in English."""
    return format_compact_decimal(x, locale=locale_of(lang), fraction_digits=fraction_digits)


# Money: whole units from here on (cents of a $9,198 job are noise), the currency's minor units below, so a
# $3.97 job is neither "$4" nor tied with a "$4" one.
MONEY_WHOLE_FROM = 100.0


def money(amount: float, currency: str, lang: str, *, like: float | None = None) -> str:
    """An amount in its own currency (never converted), by one rule everywhere: $3.97 below 100, whole units
    from 100 ($373, $9,198), and in Chinese large sums in 万 / 亿 (¥229万) from 10,000 on.

    `like`: the figure whose size sets the form, so the ends of a range read like its typical value
    ("US$9,000（US$7,000 – US$10,000）", "US$1.2万（US$0.72万 – US$1.5万）", never "US$7,000 – US$1万")."""
    loc = locale_of(lang)
    scale = abs(like) if like is not None and math.isfinite(like) else abs(amount)
    if lang == "zh" and scale >= COMPACT_MONEY_ZH_FROM:
        if abs(amount) >= COMPACT_MONEY_ZH_FROM:
            return format_compact_currency(amount, currency, locale=loc, fraction_digits=2)
        # CLDR has no 万 form below 1万 (it would write "US$8000"): the figure in 万 by hand
        return f"{get_currency_symbol(currency, locale=loc)}{format_decimal(amount / 1e4, format='0.##', locale=loc)}万"
    if scale >= MONEY_WHOLE_FROM:
        return format_currency(round(amount), currency, locale=loc, format="¤#,##0", currency_digits=False)
    return format_currency(amount, currency, locale=loc)


def currency_symbol(currency: str, lang: str) -> str:
    return get_currency_symbol(currency, locale=locale_of(lang))
