"""Rows for `trainsizer catalog list KIND`: a table for people and the records for --json."""

from __future__ import annotations

from typing import Any

from trainsizer.render.i18n import t
from trainsizer.render.numbers import fmt_num


def _fmt(v: Any, lang: str) -> Any:
    """Numbers in the reader's convention (render.numbers); other values as they are."""
    if isinstance(v, int | float) and not isinstance(v, bool):
        return fmt_num(v, lang, digits=4, compact=False)
    return v


def catalog_rows(cat: Any, kind: str, lang: str) -> tuple[str, list[str], list[tuple], list[dict]]:
    """(title, columns, rows, json records) for one catalog section."""
    L = lang
    if kind == "accelerators":
        accs = sorted(cat.accelerators.values(), key=lambda a: (a.vendor, a.id))
        cols = [t("id", L), t("vendor", L), t("memory_label", L), t("memory_usable", L), t("bandwidth", L),
                t("bf16_tflops", L), t("fp8_tflops", L), t("scaleup", L), t("tdp", L), t("status", L)]
        rows = [(a.id, cat.vendor_name(a.vendor, L), _fmt(a.memory_gb, L), _fmt(a.memory_gib, L), _fmt(a.memory_bw_tb_s, L),
                 _fmt(a.tflops_dense.get("bf16"), L), _fmt(a.tflops_dense.get("fp8"), L), _fmt(a.scaleup_bw_bidir_gb_s, L),
                 _fmt(a.tdp_w, L), t(f"status_{a.status}", L)) for a in accs]
        return t("catalog_accelerators_title", L), cols, rows, [a.to_dict() for a in accs]
    if kind == "servers":
        srv = sorted(cat.servers.values(), key=lambda s: s.id)
        cols = [t("id", L), t("name", L), t("gpus", L), t("cpu_cores", L), t("ram", L), t("power", L), t("status", L)]
        rows = [(s.id, s.name, s.gpus, s.cpu_cores, _fmt(s.ram_gib, L), _fmt(s.power_max_w, L), t(f"status_{s.status}", L))
                for s in srv]
        return t("catalog_servers_title", L), cols, rows, [s.to_dict() for s in srv]
    if kind == "networks":
        nets = sorted(cat.networks.values(), key=lambda n: (n.kind, n.gbps_per_nic))
        cols = [t("id", L), t("kind", L), t("gbps_per_nic", L), t("nic", L), t("latency_us", L)]
        rows = [(n.id, t(f"card_value_kind_{n.kind}", L), _fmt(n.gbps_per_nic, L), n.nic, _fmt(n.latency_us, L))
                for n in nets]
        return t("catalog_networks_title", L), cols, rows, [n.to_dict() for n in nets]
    if kind in ("switches", "storage"):
        recs = cat.switches if kind == "switches" else cat.storage_tiers
        dicts = [r.to_dict() for r in recs.values()]
        cols = [t("id", L), t("name", L), t("source", L)]
        rows = [(d.get("id"), d.get("name", ""), ", ".join(map(str, d.get("sources", d.get("source", [])) or []))) for d in dicts]
        return t(f"catalog_{kind}_title", L), cols, rows, dicts
    return _price_rows(cat, L)


def _price_rows(cat: Any, L: str) -> tuple[str, list[str], list[tuple], list[dict]]:
    """Every planning price with its age; prices older than a year are marked stale, forecasts marked."""
    records = []
    rows = []
    for pr in sorted(cat.prices.values(), key=lambda p: (p.subject, p.kind, p.currency != "USD")):
        age = cat.price_age(pr)
        acc = pr.subject if pr.subject in cat.accelerators else None
        records.append({"accelerator": acc, **pr.to_dict(), "age": age.to_dict()})
        flags = [t("price_stale", L) if age.stale else "", t("price_projection", L) if pr.projection else "",
                 t("price_reserved", L) if pr.term == "reserved" else ""]
        rows.append((pr.subject, t(f"price_kind_{pr.kind}", L), pr.currency, _fmt(pr.low, L), _fmt(pr.typical, L),
                     _fmt(pr.high, L), t(f"price_unit_{pr.unit}", L),
                     pr.date, age.age_days, " ".join(f for f in flags if f)))
    cols = [t("id", L), t("kind", L), t("currency", L), t("price_low", L), t("price_typical", L),
            t("price_high", L), t("unit", L), t("date", L), t("price_age_days", L), t("price_flags", L)]
    return t("catalog_prices_title", L), cols, rows, records
