"""Any plan block (a mapping or a list of records) as captioned tables of formatted strings.

The build-out blocks (bom, network, storage, ...) grow over time; rendering them generically keeps every
field visible in the report, labelled from the catalogue and formatted by the unit its name declares.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from trainsizer.render.report.fmt import SHARE_SUFFIXES, Fmt, unit_of
from trainsizer.render.report.i18n import field_label, has, t

PRICE_KEYS = ("low", "high")


@dataclass(frozen=True)
class Table:
    caption: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def is_scalar(v: object) -> bool:
    return v is None or isinstance(v, str | int | float | bool)


def is_price(v: object) -> bool:
    return isinstance(v, Mapping) and all(k in v for k in PRICE_KEYS) and ("mid" in v or "typical" in v)


def is_limit(v: object) -> bool:
    return isinstance(v, Mapping) and set(v) == {"value", "source"}


DERIVED_KEYS = {"value", "rule", "source", "formula", "unit"}


def is_derived(v: object) -> bool:
    """A derived figure: its value with the rule and source that set it (the plan's build-out blocks)."""
    return isinstance(v, Mapping) and "value" in v and set(v) <= DERIVED_KEYS and len(v) > 1


def basis(v: object) -> str:
    """'rule [source]' of a derived figure or limit ('' for a plain value)."""
    if not (is_derived(v) or is_limit(v)):
        return ""
    rule, source = str(v.get("rule") or v.get("formula") or ""), str(v.get("source") or "")
    return f"{rule} [{source}]" if rule and source else rule or source


def mid(price: Mapping) -> float | None:
    return price.get("typical", price.get("mid"))


# The BOM's rent and buy-vs-rent amounts (plan/buildout/bom_lines.py): plain numbers in the block's currency.
MONEY_FIELDS = frozenset({"per_month", "for_job", "running_per_month", "rent_per_month", "rent_for_job",
                          "rent_per_month_on_demand"})


def _vendor_name(code: str, lang: str) -> str:
    """A vendor code ('nvidia') as the built-in catalog names it ('NVIDIA'): one place for the names."""
    from trainsizer.catalog import load_catalog

    return load_catalog().vendor_name(code, lang)


# Fields of a scale-up domain that only an NVLink domain has: an xGMI / HCCS domain's row leaves them out (it read
# "NVLink SHARP (NVLS): no; NVLink switch trays: 0" for MI300X)
NVLINK_ONLY = ("nvls", "nvlink_switch_trays")


def _shown(v: Mapping, k: str) -> bool:
    return v[k] is not None and not (k in NVLINK_ONLY and "tech" in v and not str(v["tech"]).startswith("nvlink"))


def cell(key: str, v: object, f: Fmt, currency: str) -> str:
    """One value as text: prices as ranges in their currency, limits with their source, units by name."""
    if is_price(v):
        cur = v.get("currency", currency)
        return f.money_range(v["low"], mid(v), v["high"], cur) if cur else f"{mid(v)}"
    if is_limit(v) or is_derived(v):
        return cell(key, v["value"], f, currency)
    if isinstance(v, Mapping):
        # Children without a unit (or share) of their own take the parent's ("ram_breakdown_gib": {"os_reserved": 32}).
        return t("sep.fields", f.lang).join(
            f"{field_label(k, f.lang)}{t('sep.field', f.lang)}"
            f"{cell(k if unit_of(k) or k.endswith(SHARE_SUFFIXES) else key, x, f, currency)}"
            for k, x in v.items() if _shown(v, k))
    if key == "vendor" and isinstance(v, str):
        return _vendor_name(v, f.lang)
    if isinstance(v, str) and has(f"v.{v}"):
        return t(f"v.{v}", f.lang)
    if key in MONEY_FIELDS and currency and isinstance(v, int | float) and not isinstance(v, bool):
        return f.money(v, currency)
    return f.value(key, v)


def records_table(caption: str, records: Sequence[Mapping], f: Fmt, currency: str) -> Table:
    keys: list[str] = []
    for r in records:
        keys.extend(k for k in r if k not in keys)
    rows = tuple(tuple(cell(k, r.get(k), f, r.get("currency", currency)) for k in keys) for r in records)
    return Table(caption, tuple(field_label(k, f.lang) for k in keys), rows)


def block_tables(caption: str, block: object, f: Fmt, currency: str = "") -> list[Table]:
    """Tables for one block: its scalar fields as item/value rows, each list of records as its own table."""
    L = f.lang
    if isinstance(block, Sequence) and not isinstance(block, str):
        if all(isinstance(r, Mapping) for r in block):
            return [records_table(caption, block, f, currency)]
        return [Table(caption, (t("value", L),), tuple((cell("", v, f, currency),) for v in block))]
    if not isinstance(block, Mapping):
        return [Table(caption, (t("value", L),), ((cell("", block, f, currency),),))]
    currency = str(block.get("currency", currency) or "")
    kv: list[tuple[str, str, str]] = []
    tables: list[Table] = []
    for key, v in block.items():
        if key == "currency" or v is None or v == [] or v == {}:
            continue
        if isinstance(v, Sequence) and not isinstance(v, str) and v and all(isinstance(r, Mapping) for r in v):
            tables.append(records_table(field_label(key, L), v, f, currency))
        elif (isinstance(v, Mapping) and not is_price(v) and not is_limit(v) and not is_derived(v)
              and not all(is_scalar(x) for x in v.values())):
            tables.extend(block_tables(field_label(key, L), v, f, currency))
        else:
            kv.append((field_label(key, L), cell(key, v, f, currency), basis(v)))
    if kv and any(row[2] for row in kv):
        tables.insert(0, Table(caption, (t("item", L), t("value", L), t("basis", L)), tuple(kv)))
    elif kv:
        tables.insert(0, Table(caption, (t("item", L), t("value", L)), tuple(row[:2] for row in kv)))
    return tables


def _op_label(key: str, lang: str) -> str:
    """A threshold's collective or precision ('all-reduce', 'bf16'): `op.<key>` where the catalogue names it."""
    return t(f"op.{key}", lang) if has(f"op.{key}") else key


def limits_table(caption: str, criteria: Mapping, f: Fmt) -> Table:
    """Acceptance criteria (accept's schema): one row per threshold with the rule or source that sets it."""
    rows: list[tuple[str, str, str]] = []

    def walk(label: str, unit_key: str, node: Mapping) -> None:
        for key, v in node.items():
            name = label + t("paren", f.lang, text=_op_label(key, f.lang)) if label else field_label(key, f.lang)
            if is_limit(v):
                # accept's names end in _min / _max (a bound, not minutes): the unit sits before it.
                named = (unit_key or key).removesuffix("_min").removesuffix("_max")
                rows.append((name, f.value(named, v["value"]), str(v["source"])))
            elif isinstance(v, Mapping) and v:
                walk(field_label(key, f.lang), key, v)
            elif key.removesuffix("_source") in node and key.endswith("_source"):
                continue  # a plain figure's source (critical_xids_source): shown in that figure's row
            elif key not in ("schema_version", "source") and v not in (None, [], {}):
                rows.append((field_label(key, f.lang), cell(key, v, f, ""), str(node.get(f"{key}_source") or "")))

    walk("", "", criteria)
    return Table(caption, (t("criterion", f.lang), t("threshold", f.lang), t("source", f.lang)), tuple(rows))
