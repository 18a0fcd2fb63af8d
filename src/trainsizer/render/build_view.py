"""Tables for the plan's build-out blocks (bom, node, network, storage, facility, software, risks, acceptance,
phases, rules of thumb), drawn from the same dict that `--json` prints."""

from __future__ import annotations

import textwrap
from typing import Any

from rich.console import Console
from rich.table import Table

from trainsizer.messages import LIST_SEPARATORS
from trainsizer.plan.buildout.facility import COOLING_KEYS
from trainsizer.plan.texts import localise
from trainsizer.render.i18n import t
from trainsizer.render.numbers import fmt_count, fmt_num, money
from trainsizer.render.report.blocks import limits_table
from trainsizer.render.report.fmt import Fmt
from trainsizer.render.report.i18n import has as report_has
from trainsizer.render.report.i18n import t as report_t


def _table(title: str, headers: list[str], rows: list[list[Any]], L: str) -> Table:
    table = Table(title=title)
    for i, h in enumerate(headers):
        table.add_column(h, justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*[v if isinstance(v, str) else fmt_num(v, L) for v in row])
    return table


def _kv(title: str, rows: list[tuple[str, Any]], L: str) -> Table:
    return _table(title, [t("item", L), t("value", L)], [[k, v] for k, v in rows], L)


def _included(ln: dict) -> bool:
    """A line whose price is in the server's (read before the plan's texts are localised)."""
    stored = ln.get("note_msg")
    return stored["key"] == "bom_note_included" if stored else str(ln.get("note", "")).startswith("included")


def bom_table(bom: dict, L: str, included: list[bool] | None = None) -> Table:
    """The bill of materials in its currency, as the report writes money ($13,550, US$1.36万); the totals row
    gives low / typical / high in the Total column (the typical was printed under Unit price, the high under
    Total)."""
    rows, cur = [], bom["currency"]
    for i, ln in enumerate(bom["lines"]):
        p = ln["unit_price"]
        price = "—" if p is None else money(p["typical"], cur, L) + (
            t("paren", L).format(text=t("b_converted", L)) if p.get("converted") else "")
        unit = ln.get("unit")
        if p is not None and unit not in (None, "per_unit") and report_has(f"v.{unit}"):
            # what the price is of, as the report's Unit column says ('$2.95 (per GPU-hour)', a quantity in hours)
            price += t("paren", L).format(text=report_t(f"v.{unit}", L))
        if (included or [])[i:i + 1] == [True] or (included is None and _included(ln)):
            price = t("b_included", L)
        total = "—" if ln["total"] is None else money(ln["total"]["typical"], cur, L)
        rows.append([ln["item"], fmt_count(ln["quantity"], L), price, total])
    tot = bom["totals"]
    rows.append([t("b_totals", L), "", "", " / ".join(money(tot[k], cur, L) for k in ("low", "typical", "high"))])
    return _table(t("b_bom_title", L), [t("item", L), t("b_qty", L), t("b_unit_price", L), t("b_line_total", L)], rows, L)


def rent_rows(bom: dict, L: str) -> list[tuple[str, Any]]:
    bvr = bom.get("buy_vs_rent") or {}
    cur = bom["currency"]
    reserved = bvr.get("rent_per_month_on_demand") is not None  # the month is at a reserved rate: both shown
    return [(t("b_rent_month_reserved" if reserved else "b_rent_month", L), _money(bvr.get("rent_per_month"), cur, L)),
            *([(t("b_rent_month_on_demand", L), _money(bvr["rent_per_month_on_demand"], cur, L))] if reserved else []),
            (t("b_rent_job", L), _money(bvr.get("rent_for_job"), cur, L)),
            (t("b_break_even", L), bvr.get("break_even_month"))]


def _money(v: float | None, cur: str, L: str) -> str:
    return "—" if v is None else money(v, cur, L)


def node_table(node: dict, L: str) -> Table:
    yes = {True: t("b_yes", L), False: t("b_no", L), None: "—"}
    rows = [[t("b_cpu_cores", L), node["cpu_cores"]["value"], node["server_cpu_cores"], yes[node["enough"]["cpu_cores"]]],
            [t("b_ram_gib", L), node["ram_gib"]["value"], node["server_ram_gib"], yes[node["enough"]["ram_gib"]]],
            [t("b_nvme_tb", L), node["nvme_tb"]["value"], node["server_nvme_tb"], yes[node["enough"]["nvme_tb"]]]]
    title = t("b_node_title", L) + (f" — {node['server']}" if node["server"] else "")
    table = _table(title, [t("item", L), t("b_derived", L), t("b_server", L), t("b_enough", L)], rows, L)
    # what the server column rests on (a workstation sized from the job, a share of a rack tray, a box no catalog
    # server holds): under the table, as the report writes it
    table.caption, table.caption_justify = "\n".join(str(n) for n in node.get("notes") or []) or None, "left"
    return table


def network_table(net: dict, L: str) -> Table:
    rows = []
    for key in ("compute", "storage", "inband", "oob"):
        f = net.get(key)
        if f:
            rows.append([t("fabric_" + f["purpose"], L) + t("paren", L).format(text=t("fabric_kind_" + f["kind"], L)),
                         f["topology"],
                         f["switch"] or "—",
                         "—" if f.get("provided") else f"{f['leaves']} / {f['spines']} / {f['cores']}", f"{f['ports_per_node']} × {f['gbps_per_port']:g}"])
    nv = net["nvlink"]
    tech = report_t(f"v.{nv['tech']}", L) if report_has(f"v.{nv['tech']}") else nv["tech"]  # 'pcie' -> 'PCIe'
    rows.append([t("b_nvlink", L), _domain_row(nv, tech, L),
                 _nvls_cell(nv, L), "", _scaleup_rate(nv, L)])
    return _table(t("b_network_title", L), [t("b_fabric", L), t("b_topology", L), t("b_switch", L),
                                            t("b_leaf_spine_core", L), t("b_ports", L)], rows, L)


def _scaleup_rate(nv: dict, L: str) -> str:
    """The link's rate, and where the driver stages GPU-to-GPU copies through host memory (GeForce), that rate: the
    one the estimate times."""
    rate = f"{nv['gb_s_per_gpu_bidir']:g} GB/s"
    staged = nv.get("host_staged_gb_s_per_dir")  # plans saved before the field have none
    return t("scaleup_host_staged", L).format(link=rate, staged=f"{staged:g}") if staged else rate


def _domain_row(nv: dict, tech: str, L: str) -> str:
    """'NVLink: 2 x 72-GPU domain', and the job's share of each where it uses part of one (64 of 72 on 128 GB200;
    a plan before schema 1.6 has no share)."""
    size, used = nv.get("domain_size_gpus") or nv["gpus_per_domain"], nv.get("job_gpus_per_domain")
    shares = nv.get("job_gpus_by_domain") or []  # schema 1.7: each rack's share where they differ (72 + 64 + 64)
    row = t("nvlink_domain_row", L).format(tech=tech, gpus=size, domains=nv["domains"])
    if len(set(shares)) > 1:
        return row + t("nvlink_domain_shares", L).format(shares=" + ".join(str(g) for g in shares), used=used)
    return row + (t("nvlink_domain_used", L).format(used=used) if used and used < size else "")


def _nvls_cell(nv: dict, L: str) -> str:
    """NVLink SHARP is an NVSwitch feature: a switchless domain (AMD's xGMI mesh, PCIe) has no such cell."""
    if not str(nv["tech"]).startswith("nvlink"):
        return "—"
    return t("nvls_row", L).format(yes=t("b_yes", L) if nv["nvls"] else t("b_no", L))


def storage_rows(st: dict, L: str) -> list[tuple[str, Any]]:
    """The tier, then usable capacity, its protection (8+2 erasure code, RAID 6, none) and the raw TB the drives
    must hold, before the bandwidth rows."""
    rows = [(t("b_tier", L), st["tier"]), (t("b_capacity_tb", L), st["capacity_tb"]["value"])]
    if st.get("protection") is not None:  # plans saved before the block carried them
        rows += [(t("b_protection", L), _scheme(st, L)),
                 (t("b_capacity_raw_tb", L), st["capacity_raw_tb"]["value"])]
    return rows + [
            (t("b_checkpoint_gb", L), st["checkpoint_gb"]), (t("b_interval_min", L), st["checkpoint_interval_min"]["value"]),
            (t("b_write_sync", L), st["write_gb_s_sync"]["value"]), (t("b_write_async", L), st["write_gb_s_async_drain"]["value"]),
            (t("b_read_loader", L), st["loader_read_gb_s"]["value"]), (t("b_restore_s", L), st["restore_s"]["value"])]


def _scheme(st: dict, L: str) -> str:
    """'d+p' as the scheme it is: erasure code on a parallel file system, RAID 6 (p = 2) on one file server,
    with its usable share; 'none' (a workstation's own NVMe) in the reader's language."""
    value = st["protection"]["value"]
    if value == "none":
        return t("b_protection_none", L)
    d, p = (int(x) for x in value.split("+"))
    key = "b_protection_ec" if st.get("kind") == "parallel_fs" else \
        "b_protection_raid6" if p == 2 else "b_protection_scheme"
    return t(key, L).format(scheme=value, share=round(100 * d / (d + p)))


def _cooling(value: str, L: str) -> str:
    return t(COOLING_KEYS[value], L) if value in COOLING_KEYS else value


def facility_rows(f: dict, L: str) -> list[tuple[str, Any]]:
    """The facility rows that apply to the plan's site: racks, PDUs and a rack budget where the plan has racks of
    its own (a cluster, one rack server), a wall circuit for a workstation, the provider's for a rented plan (its
    power and energy are what owning the servers would draw, for buy vs rent)."""
    site = f.get("site", "cluster")
    power = "b_rack_system_kw" if f.get("power_unit") == "rack" else "b_node_kw"  # NVL72: the rack is the unit
    rows: list[tuple[str, Any]] = [(t("b_site", L), t(f"b_site_{site}", L)),
                                   (t(power, L), f"{f['node_kw_max']:.2f} / {f['node_kw_typical']['value']:.2f}")]
    if f.get("rack_kw_budget") is not None:
        rows += [(t("b_rack_budget", L), f["rack_kw_budget"]["value"]),
                 (t("b_racks", L), f"{f['racks']}" + t("paren", L).format(
                     text=f"{f['node_racks']} / {f['network_racks']} / {f['storage_racks']}"))]
    if f.get("circuit_kw_budget") is not None:
        rows.append((t("b_circuit_budget", L), f["circuit_kw_budget"]["value"]))
    rows += [(t("b_cooling", L), _cooling(f["cooling"]["value"], L)),
             (t("b_it_kw", L), f"{f['it_kw_max']:.1f} / {f['it_kw_typical']:.1f}")]
    if site in ("cluster", "node"):
        rows.append((t("b_pdu_ups", L), f"{f['pdus']} / {f['ups_modules']}" + t("paren", L).format(
            text=f["ups_redundancy"]["value"])))
    elif site == "workstation":
        rows.append((t("b_ups", L), f["ups_redundancy"]["rule"]))  # a standalone UPS of its kVA, optional
    if f.get("water_supply_c"):
        rows.append((t("b_water", L), t("b_water_value", L).format(
            c=f"{f['water_supply_c']['value']:g}", flow=f"{f['water_flow_l_min_per_rack']['value']:g}")))
    if site != "rented":
        rows.append((t("b_floor", L), f["floor_m2"]["value"]))
    owned = "_owned" if site == "rented" else ""
    return rows + [(t("b_energy_year" + owned, L), f["annual_kwh"]),
                   (t("b_energy_cost" + owned, L) + t("paren", L).format(text=f["currency"]),
                    f["annual_energy_cost"]["typical"])]


def software_rows(sw: dict, L: str) -> list[tuple[str, Any]]:
    """The stack; a rented plan's scheduler is the provider's, so the row after it says what to ask them for."""
    ask = ([(t("b_scheduler_ask", L), sw["scheduler"]["rule"])]
           if sw["scheduler"].get("source") == "cloud_managed_schedulers" else [])
    return [(t("b_driver", L), sw["driver"]), (t("b_toolkit", L), sw["toolkit"]),
            (t("b_collectives", L), f"{sw['collectives']} {sw['collectives_version']}"), ("PyTorch", sw["pytorch"]),
            (t("b_framework", L), sw["framework"]["value"]), (t("b_scheduler", L), sw["scheduler"]["value"]),
            *ask, (t("b_files", L), LIST_SEPARATORS[L].join(sw["files"]) or "—")]


def _short(text: str, width: int = 90) -> str:
    """A source cut at a word boundary (a cut word reads as a typo)."""
    return textwrap.shorten(str(text), width, placeholder=" …")


def acceptance_rows(acc: dict, L: str) -> list[list[Any]]:
    """The report's acceptance rows (labels in the reader's language, values with their units), sources cut."""
    return [[name, value, _short(source)] for name, value, source in limits_table("", acc, Fmt(L)).rows]


def print_build(out: dict[str, Any], lang: str, console: Console | None = None) -> None:
    con, L = console or Console(soft_wrap=False), lang
    included = [_included(ln) for ln in out["bom"]["lines"]]
    out = localise(out, lang, keep=False)
    con.print(bom_table(out["bom"], L, included))
    con.print(_kv(t("b_break_even", L), rent_rows(out["bom"], L), L))
    con.print(node_table(out["node"], L))
    net_table = network_table(out["network"], L)
    compute = out["network"].get("compute") or {}
    if compute.get("zone_nodes") is not None:  # sized for the job's oversubscribed fabric: what it saved, or why not
        net_table.caption, net_table.caption_justify = "\n".join(compute.get("notes") or []) or None, "left"
    con.print(net_table)
    con.print(_kv(t("b_storage_title", L), storage_rows(out["storage"], L), L))
    con.print(_kv(t("b_facility_title", L), facility_rows(out["facility"], L), L))
    con.print(_kv(t("b_software_title", L), software_rows(out["software"], L), L))
    risks = out["risks"]
    con.print(_table(t("b_risks_title", L), [t("item", L), t("b_severity", L), t("b_evidence", L), t("b_mitigation", L)],
                     [[t(f"b_risk_{r['id']}", L), t(f"b_sev_{r['severity']}", L), r["evidence"], r["mitigation"]]
                      for r in risks] or [[t("b_no_risks", L), "", "", ""]], L))
    con.print(_table(t("b_acceptance_title", L), [t("item", L), t("b_threshold", L), t("source", L)],
                     acceptance_rows(out["acceptance"], L), L))
    ph = out["phases"]
    phases = _table(t("b_phases_title", L), [t("item", L), t("b_weeks", L), t("source", L)],
                    [[t(f"b_phase_{p['id']}", L), (f"{p['weeks_low']:g}-{p['weeks_high']:g}" if p['weeks_high'] else "—"),
                      p["source"]] for p in ph["rollout"]], L)
    phases.caption = f"{t('b_scale_out', L)}{t('colon', L)}{ph['scale_out']['recabling']}"
    phases.caption_justify = "left"
    con.print(phases)
    thumbs = _table(t("b_thumbs_title", L), [t("item", L), t("b_guide", L), t("b_ours", L), t("b_agrees", L)],
                    [[x["topic"], x["guide_value"], x["ours"], t("b_yes", L) if x["agrees"] else t("b_no", L)]
                     for x in out["rules_of_thumb"]], L)
    # a departure from a guide says why, under the table (a column would be too narrow to read)
    colon = "：" if L == "zh" else ": "
    thumbs.caption = "\n".join(f"{t('b_why', L)} · {x['topic']}{colon}{x['why']}" for x in out["rules_of_thumb"]
                                if not x["agrees"]) or None
    thumbs.caption_justify = "left"
    con.print(thumbs)
