"""`trainsizer catalog show`: one catalog entry as a readable card -- its figures, then each source with its
title, URL and date, then the doubts and alternative values recorded for it."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from trainsizer.catalog.loader import AS_GIVEN, NOT_GIVEN
from trainsizer.catalog.market_notes import market_note
from trainsizer.messages import tr
from trainsizer.render.cost_basis import price_age
from trainsizer.render.i18n import t
from trainsizer.render.numbers import fmt_num

WORDS = {**{("confidence", c): f"card_value_{c}" for c in ("high", "medium", "low", "very_low")},
         **{("status", c): f"card_value_{c}" for c in ("shipping", "announced", "discontinued")},
         **{("memory_label_unit", c): f"card_value_unit_{c}" for c in ("gib", "gb")},
         **{("scaleup_tech", c): f"card_value_tech_{c}"
            for c in ("nvlink", "nvlink-bridge", "pcie", "xgmi", "hccs", "roce", "other")},
         **{("kind", c): f"card_value_kind_{c}" for c in ("ib", "roce", "efa", "ethernet", "nvlink", "node_local",
                                                         "nfs", "parallel_fs", "object", "purchase", "rent")},
         **{("unit", c): f"price_unit_{c}" for c in ("per_gpu", "per_gpu_hour", "per_rack", "per_server",
                                                      "per_switch")},
         ("term", "reserved"): "card_value_term_reserved",
         **{("role", c): f"card_value_role_{c.replace(' ', '_')}"
            for c in ("in-band management", "out-of-band management")}}
# the keys of a figure given as a range or a NIC block ("low 4 · high 4", "count 2 · gbps 400 · model ...")
SUBKEYS = ("low", "typical", "high", "count", "gbps", "model")
# records.py Accelerator._derive_memory_gib: how memory_gib was derived (the two forms it writes)
BASIS_PREFIXES = {"label": "card_value_basis_label", "usable (vendor platform table)": "card_value_basis_usable"}
# Provenance fields: printed in their own sections below the figures.
PROVENANCE = ("id", "name", "aliases", "sources", "alt_values", "field_sources", "none_known", "unsure", "notes",
              "age")


def _value(v: Any, lang: str, key: str = "") -> str | None:
    """A field value for people; None for empty values (not printed)."""
    if v is None or v == "" or v == [] or v == {} or v == ():
        return None
    if isinstance(v, bool):
        return t("yes" if v else "no", lang)
    if key.endswith("_year"):
        return str(v)  # a year, not a quantity: no grouping ("2,022")
    if isinstance(v, str) and (key, v) in WORDS:  # enumerations in the reader's words
        return t(WORDS[(key, v)], lang)
    if isinstance(v, str) and key == "memory_gib_basis":
        return _basis(v, lang)
    if isinstance(v, str) and v in (NOT_GIVEN, AS_GIVEN):  # what the overlay loader writes
        return t("card_value_not_given" if v == NOT_GIVEN else "card_value_as_given", lang)
    if isinstance(v, int | float):
        return fmt_num(v, lang, digits=4, compact=False)
    if isinstance(v, dict):
        parts = [f"{t('card_sub_' + k, lang) if k in SUBKEYS else k} {_value(x, lang)}" for k, x in v.items()
                 if _value(x, lang) is not None]
        return " · ".join(parts) or None
    if isinstance(v, list | tuple):
        return ", ".join(str(_value(x, lang)) for x in v)
    return str(v)


def _basis(v: str, lang: str) -> str:
    """memory_gib_basis in the reader's words: "label, binary: ..." / "usable (...), decimal: ..."."""
    if v.startswith("driver-visible: the total CUDA"):  # records.py: from memory_driver.cuda_total_gib
        return t("card_value_basis_driver_cuda", lang)
    if v.startswith("driver-visible: "):  # from memory_driver.smi_total_mib: "driver-visible: <tool> total ..."
        return t("card_value_basis_driver_tool", lang).format(tool=v.split()[1])
    what, _, rest = v.partition(", ")
    kind = "binary" if rest.startswith("binary") else "decimal" if rest.startswith("decimal") else None
    if what not in BASIS_PREFIXES or kind is None:
        return t("card_value_basis_given", lang) if v == "given" else v
    return t(BASIS_PREFIXES[what], lang) + t("list_sep", lang) + t(f"card_value_basis_{kind}", lang)


def card_rows(record: dict[str, Any], lang: str) -> list[tuple[str, str]]:
    """(label, value) of every non-empty figure of a record, provenance left out; labels from
    render/data/i18n.yaml (`card_<field>`; tests/render/test_catalog_card.py names a field without one)."""
    rows = []
    for key in sorted(record):
        if key in PROVENANCE:
            continue
        shown = tr(market_note(record[key]), lang) if key == "market_note" and record[key] else \
            _value(record[key], lang, key)
        if shown is not None:
            rows.append((field_label(key, lang), shown))
    return rows


def field_label(key: str, lang: str) -> str:
    try:
        return t(f"card_{key}", lang)
    except KeyError:
        return key


def source_rows(catalog: Any, ids: list[str], lang: str) -> list[tuple[str, str, str, str]]:
    """(id, title, url, date) of each source id, from the catalog's source registry."""
    rows = []
    for sid in ids:
        src = catalog.sources.get(sid)
        if src is None:  # an overlay file as source
            rows.append((sid, sid, "", ""))
            continue
        rows.append((sid, _generated(src.title, lang), src.url or src.ref or "", src.date or src.retrieved or ""))
    return rows


def print_card(catalog: Any, record: dict[str, Any], kind_label: str, lang: str,
               console: Console | None = None) -> None:
    con = console or Console(soft_wrap=False)
    L = lang
    if isinstance(record.get("vendor"), str) and hasattr(catalog, "vendor_name"):  # the vendor's name, not its code
        record = {**record, "vendor": catalog.vendor_name(record["vendor"], L)}
    name = record.get("name")
    title = f"{kind_label}{t('colon', L)}{record.get('id', '')}" + (f" — {name}" if name else "")
    table = Table(title=title)
    table.add_column(t("item", L))
    table.add_column(t("value", L), overflow="fold", max_width=80)
    for key, value in card_rows(record, L):
        table.add_row(key, value)
    age = record.get("age")
    if isinstance(age, dict) and record.get("typical") is None and "low" in record and "high" in record:
        # the figure the estimates use when the sources give no central one (catalog PriceRange.mid)
        mean = fmt_num((record["low"] + record["high"]) / 2, L, digits=4, compact=False)
        table.add_row(t("card_typical", L), mean + t("paren", L).format(text=t("card_typical_mean", L)))
    if isinstance(age, dict) and age.get("date"):  # a price: how old, and a warning past a year
        table.add_row(t("price_date", L), price_age(age["date"], age.get("age_days", "?"), bool(age.get("stale")),
                                                    bool(age.get("projection")), L))
    con.print(table)
    if record.get("aliases"):
        con.print(f"{t('aliases', L)}{t('colon', L)}{', '.join(record['aliases'])}")
    ids = list(dict.fromkeys([*record.get("sources", ()),
                              *(s for srcs in (record.get("field_sources") or {}).values() for s in srcs),
                              *(s for alts in (record.get("alt_values") or {}).values() for a in alts
                                for s in a.get("sources", ()))]))
    if ids:
        src = Table(title=t("sources_title", L))
        for col in ("id", "source_title", "url", "date"):
            src.add_column(t(col, L), overflow="fold")
        for row in source_rows(catalog, ids, L):
            src.add_row(*row)
        con.print(src)
    if record.get("notes"):
        con.print(f"{t('notes', L)}{t('colon', L)}{record['notes']}")
    for doubt in record.get("unsure") or ():
        con.print(f"{t('doubt', L)}{t('colon', L)}{_generated(doubt, L)}")
    for field, alts in (record.get("alt_values") or {}).items():
        for alt in alts:
            con.print(f"{t('alt_value', L)}{t('colon', L)}{field} = {alt.get('value')} "
                      f"({', '.join(alt.get('sources', ()))}){' — ' + alt['note'] if alt.get('note') else ''}")


def _generated(text: str, lang: str) -> str:
    """Catalog text as recorded (prose, English), except what the overlay loader writes itself: a doubt
    naming the defaulted fields, the title of an overlay without one."""
    from trainsizer.messages import catalogue, render

    for key, param in (("cat_defaulted", "fields"), ("cat_overlay_title", "file")):
        prefix = catalogue()[key]["en"].split("{", 1)[0]
        if text.startswith(prefix):
            return render(key, lang, {param: text[len(prefix):]})
    return text
