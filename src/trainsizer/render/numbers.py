"""The number formats of `trainsizer.numbers` (moved below the layers so the plan's sentences share them),
under the name the renderers import."""

from trainsizer.numbers import (
    COMPACT_FROM,
    LOCALES,
    compact,
    currency_symbol,
    decimal,
    fmt_count,
    fmt_gib,
    fmt_num,
    fmt_params,
    fmt_share,
    locale_of,
    money,
)

__all__ = ["COMPACT_FROM", "LOCALES", "compact", "currency_symbol", "decimal", "fmt_count", "fmt_gib", "fmt_num", "fmt_params",
           "fmt_share", "locale_of", "money"]
