"""BOM lines from the other blocks (servers, fabrics, storage, facility) and the buy-vs-rent comparison."""

from __future__ import annotations

from collections import OrderedDict

from trainsizer.estimate.cost import billed_gpu_hours, committed_terms
from trainsizer.evaluate import HOST_RAM_PART, host_ram_added_gib, rent_basis, rented_gpus
from trainsizer.messages import Money, duration, msg
from trainsizer.plan.buildout import rules
from trainsizer.plan.buildout.bom import (
    BomBlock,
    BomLine,
    BuyVsRent,
    catalog_price,
    line,
    part_price,
    totals,
)
from trainsizer.plan.buildout.facility import FacilityBlock
from trainsizer.plan.buildout.inputs import BuildInput, acquisition
from trainsizer.plan.buildout.network import NetworkBlock
from trainsizer.plan.buildout.node import offloaded_gib_per_node
from trainsizer.plan.buildout.node import ram as node_ram
from trainsizer.plan.buildout.part_text import described
from trainsizer.plan.buildout.storage import StorageBlock
from trainsizer.plan.texts import as_msg, listed
from trainsizer.scenario import module_part


def server_lines(b: BuildInput) -> list[BomLine]:
    cur, cat, srv = b.currency, b.catalog, b.server
    partial = srv is not None and srv.gpus > b.per_node and not b.nvl72
    if partial and not module_part(b.accelerator):
        srv = None  # the job uses part of a bigger box of PCIe cards: price the GPUs, not the chassis
    # a module part (SXM / OAM) comes in its server: the job on part of it still buys the whole (evaluate.bought_gpus)
    if srv is not None:
        units = b.racks if b.nvl72 else -(-b.gpus // srv.gpus)  # NVL72: the racks the job is placed in
        price = catalog_price(cat, "purchase", srv.id, cur)
        # an NVL72 record is the whole rack (18 trays and its NVLink switches): ordered as a rack system
        item = msg("bom_item_rack_system" if b.nvl72 else "bom_item_server", name=srv.name)
        used = msg("bom_note_server_part_used", gpus=b.gpus, server_gpus=srv.gpus) if partial else ""
        out = [line(item, srv.id, units, "per_rack" if b.nvl72 else "per_server",
                    price, used or ("" if price else msg("bom_note_no_server_price")))]
        if price is None:
            gpu = catalog_price(cat, "purchase", b.accelerator.id, cur)
            out.append(line(msg("bom_item_gpus_no_server_price", name=b.accelerator.name), b.accelerator.id,
                            units * srv.gpus if partial else b.gpus, "per_gpu", gpu, msg("bom_note_chassis_unpriced")))
        inc = msg("bom_note_included", server=srv.id)
        # an NVL72 rack is bought whole: its CPUs, memory and drives counted per rack, the memory also per tray
        per, rack = ("per_rack", "_rack") if b.nvl72 else ("per_server", "")
        trays = max(1, srv.gpus // b.accelerator.gpus_per_host)
        ram = {"gib": f"{srv.ram_gib:,g}"} if srv.ram_gib else {}
        if ram and rack:
            ram |= {"trays": trays, "tray_gib": f"{srv.ram_gib / trays:,g}"}
        out += [line(msg("bom_item_cpus", model=described("cpu", srv.cpu_model)), None, units, per, None, inc),
                line(msg(f"bom_item_ram{rack}", **ram) if ram else msg(f"bom_item_ram_unknown{rack}"),
                     None, units, per, None, inc),
                line(msg(f"bom_item_nvme{rack}", tb=f"{srv.nvme_tb:,g}") if srv.nvme_tb
                     else msg(f"bom_item_nvme_unknown{rack}"), None, units, per, None, inc),
                line(msg("bom_item_nics", count=srv.nics.count, gbps=f"{srv.nics.gbps:g}",
                         model=described("nic", srv.nics.model)),
                     None, units * srv.nics.count, "per_nic", None, inc)]
        return out
    gpu = catalog_price(cat, "purchase", b.accelerator.id, cur)
    return [line(msg("bom_item_gpus", name=b.accelerator.name), b.accelerator.id, b.gpus, "per_gpu", gpu,
                 "" if gpu else msg("bom_note_no_gpu_price")),
            line(msg("bom_item_host", gpus=b.per_node) if b.per_node > 1 else msg("bom_item_host_one"), None,
                 b.nodes, "per_server", None,
                 msg("bom_note_no_catalog_server")),
            *host_ram_lines(b)]


def host_ram_lines(b: BuildInput) -> list[BomLine]:
    """The host RAM an offloaded layout adds to a host the catalog does not describe, priced per GiB as the plan's
    ranking prices it (evaluate.host_ram_block: a host of known RAM holds the node's whole need, the node block's)."""
    states = offloaded_gib_per_node(b)
    base = sum(v for k, v in node_ram(b)[1].items() if k != "offloaded_states") if states > 0 else 0.0
    per_node = host_ram_added_gib(b.catalog, b.system, states, base)
    if not per_node:
        return []
    return [line(msg("bom_item_host_ram", gib=f"{per_node:,}"), HOST_RAM_PART, per_node * b.nodes, "per_gib",
                 part_price(b.catalog, HOST_RAM_PART, b.currency), msg("bom_note_host_ram"))]


def fabric_lines(b: BuildInput, net: NetworkBlock) -> list[BomLine]:
    cur, cat = b.currency, b.catalog
    out: list[BomLine] = []
    for fab in (net.compute, net.storage, net.inband, net.oob):
        if fab is None or fab.switch is None:
            continue
        sw = cat.switch(fab.switch)
        price = catalog_price(cat, "purchase", sw.id, cur)
        for tier, n in (("leaf", fab.leaves), ("spine", fab.spines), ("core", fab.cores)):
            if n:
                out.append(line(msg("bom_item_switch", purpose=msg(f"fabric_{fab.purpose}"),
                                    tier=msg(f"switch_tier_{tier}"), name=described("switch", sw.name)), sw.id, n,
                                "per_switch", price))
        merged: OrderedDict[str, int] = OrderedDict()
        for p in fab.parts:
            if p.part is not None:
                merged[p.part] = merged.get(p.part, 0) + p.quantity
        for pid, qty in merged.items():
            part = cat.part(pid)
            out.append(line(msg("bom_item_part", purpose=msg(f"fabric_{fab.purpose}"), kind=msg(f"part_kind_{part.kind}"),
                                name=described("part", part.name)), pid, qty, "per_unit",
                            part_price(cat, pid, cur)))
    return out


def site_lines(b: BuildInput, storage: StorageBlock, fac: FacilityBlock) -> list[BomLine]:
    """Storage, NVLink trays and what the site needs of its own: racks, PDUs, UPS (none for a workstation's
    rack or PDU; a standalone UPS for it, the site UPS share for one rack server, modules for a cluster)."""
    cat, cur = b.catalog, b.currency
    out = []
    if storage.appliance:
        out.append(line(msg("bom_item_storage", name=described("part", cat.part(storage.appliance).name)),
                        storage.appliance,
                        storage.appliances, "per_unit", part_price(cat, storage.appliance, cur),
                        msg("bom_note_usable", tb=storage.capacity_tb.value)))
    if b.nvl72:
        out.append(line(msg("bom_item_nvlink_trays"), "nvlink-switch-tray-nvl72", net_trays(b), "per_unit", None,
                        msg("bom_note_in_nvl72")))
    if fac.racks:
        out.append(line(msg("bom_item_racks"), "rack-42u", fac.racks, "per_unit", part_price(cat, "rack-42u", cur)))
    if fac.pdus:
        out.append(line(msg("bom_item_pdus"), "pdu-rack-3ph", fac.pdus, "per_unit",
                        part_price(cat, "pdu-rack-3ph", cur), msg("bom_note_pdu_kw", kw=f"{fac.pdu_kw_each:.1f}")))
    kva = msg("bom_note_kva", kva=f"{fac.ups_kva:.1f}" if fac.ups_kva < 10 else f"{fac.ups_kva:.0f}")
    if fac.ups_modules:
        out.append(line(msg("bom_item_ups", redundancy=fac.ups_redundancy.value), "ups-module", fac.ups_modules,
                        "per_unit", part_price(cat, "ups-module", cur), kva))
    elif fac.ups_kva:
        ups = fac.ups_redundancy
        redundancy = as_msg(ups.rule_msg) if ups.rule_msg is not None else ups.rule
        out.append(line(msg("bom_item_ups_capacity", redundancy=redundancy), "ups-module", 1, "per_unit",
                        part_price(cat, "ups-module", cur), kva))
    return out


def rent_lines(b: BuildInput, storage: StorageBlock) -> list[BomLine]:
    """What a rented plan rents (the GPUs by the hour, from a provider of the fabric's class) and what the
    renter still arranges and is quoted for: shared storage, egress of the last checkpoint, the scheduler (several
    nodes)."""
    cur, cat = b.currency, b.catalog
    hours = b.train_days * 24.0
    provider = (msg("bom_rent_provider_one") if b.nodes == 1 else
                msg("bom_rent_provider_domain") if b.scenario.network is None else
                msg("bom_rent_provider_fabric", fabric=b.network.name if b.network is not None else b.network_kind))
    rent = catalog_price(cat, "rent", b.accelerator.id, cur)
    billed, terms = rent_billing(b)
    reserved, n, term_hours, billed = rent_split(b, rent, billed)
    note = msg("bom_note_rent_hours", hours=f"{hours:.0f}", gpus=b.gpus)
    why = rent_reason(b)
    if why == "racks":  # the racks the job is placed in, rented whole (prices.yaml billed_whole_domains)
        note = msg("bom_note_rent_racks", used=note, racks=b.racks, rented=terms[0])
    elif why == "host_units":  # whole units on each host (prices.yaml billed_gpus; a unit never spans hosts)
        note = msg("bom_note_rent_host_units", used=note, rented=terms[0], per_node=b.per_node,
                   unit=_unit(b))
    elif billed > b.gpus * hours * (1 + 1e-9):  # whole rental units, the shortest term (prices.yaml)
        note = msg("bom_note_rent_billed", used=note, unit=terms[0], min_hours=f"{terms[1]:,g}")
    if b.nvl72:
        item = msg("bom_item_rent_nvl72", trays=b.nodes, per_node=b.per_node, racks=b.racks,
                   server=b.server.id if b.server is not None else b.accelerator.id, provider=provider)
    else:
        item = msg("bom_item_rent_gpus", nodes=b.nodes, per_node=b.per_node, name=b.accelerator.name,
                   provider=provider)
    gpus_lines = [line(item, b.accelerator.id, round(billed, 3), "per_gpu_hour", rent, note)] if billed > 0 else []
    if n:  # whole committed terms, priced at the catalog's reserved rate (evaluate prices the job the same way)
        gpus_lines.insert(0, line(msg("bom_item_rent_reserved", item=item, terms=n,
                                      months=f"{term_hours / rules.value('facility', 'hours_per_year') * 12:.0f}"),
                                  b.accelerator.id, round(_rented(b) * n * term_hours, 3), "per_gpu_hour", reserved,
                                  msg("bom_note_rent_reserved", left=f"{billed:,.0f}")))
    return gpus_lines + [
            line(_rent_storage_item(b, storage), None, storage.capacity_tb.value, "per_tb_month",
                 None, msg("bom_note_rent_storage", read=f"{storage.loader_read_gb_s.value:g}",
                           write=f"{storage.write_gb_s_sync.value:.3g}")),
            line(msg("bom_item_rent_egress"), None, round(storage.checkpoint_gb, 3), "per_gb", None,
                 msg("bom_note_rent_egress"))] + ([] if b.nodes == 1 else [
            line(msg("bom_item_rent_scheduler"), None, 1, "per_unit", None, msg("bom_note_rent_scheduler"))])


def _rent_storage_item(b: BuildInput, storage: StorageBlock):
    """One rented node keeps nothing shared, but its local NVMe goes with the instance: what it rents is a
    persistent volume for the data and the checkpoints, not the 'local NVMe + NFS' tier an owned node would build."""
    if b.nodes == 1:
        return msg("bom_item_rent_storage_one")
    return msg("bom_item_rent_storage", tier=as_msg(storage.tier_msg) if storage.tier_msg else storage.tier)


def rent_billing(b: BuildInput) -> tuple[float, tuple[int, float]]:
    """(GPU-hours the rental bills, (GPUs per rental unit, shortest term h)): whole units for at least the
    shortest term where the catalog's rental price says how its listings bill (prices.yaml billed_gpus /
    min_hours), as `evaluate` prices the job; else the GPUs for the job's hours."""
    hours = b.train_days * 24.0
    rec = b.catalog.rent_per_gpu_hour(b.accelerator.id, b.currency) or b.catalog.rent_per_gpu_hour(b.accelerator.id)
    gpus = _rented(b)
    if gpus > b.gpus:  # whole NVL72 racks or whole units on each host (evaluate.rent_basis), as `evaluate` prices it
        return max(b.gpus * hours, billed_gpu_hours(gpus, hours, rec.billed_gpus, rec.min_hours)), (gpus, rec.min_hours or 0.0)
    unit, least = (rec.billed_gpus or 1, rec.min_hours or 0.0) if rec is not None else (1, 0.0)
    return max(b.gpus * hours, billed_gpu_hours(b.gpus, hours, unit, least)), (unit, least)


def rent_reason(b: BuildInput) -> str:
    """Why the rental pays for more GPUs than the job's (evaluate.rent_basis: 'racks', 'host_units' or 'gpus')."""
    cat = b.catalog
    rec = cat.rent_per_gpu_hour(b.accelerator.id, b.currency) or cat.rent_per_gpu_hour(b.accelerator.id)
    return rent_basis(b.accelerator, b.gpus, b.per_node, rec)[1]


def _unit(b: BuildInput) -> int:
    """GPUs of the rental price's unit (prices.yaml billed_gpus; 1: per GPU)."""
    cat = b.catalog
    rec = cat.rent_per_gpu_hour(b.accelerator.id, b.currency) or cat.rent_per_gpu_hour(b.accelerator.id)
    return int(rec.billed_gpus or 1) if rec is not None else 1


def _rented(b: BuildInput) -> int:
    """GPUs the rental pays for (evaluate.rented_gpus: an NVL72 job's whole racks where the price rents them whole)."""
    cat = b.catalog
    rec = cat.rent_per_gpu_hour(b.accelerator.id, b.currency) or cat.rent_per_gpu_hour(b.accelerator.id)
    return rented_gpus(b.accelerator, b.gpus, b.per_node, rec)


def rent_split(b: BuildInput, rent, billed: float) -> tuple:
    """(the committed-term price, whole terms, term hours, GPU-hours left on demand): the split `evaluate` prices the
    job with (estimate.cost.committed_terms at the typical prices); no terms without a reserved price."""
    cur, cat = b.currency, b.catalog
    reserved = catalog_price(cat, "rent", b.accelerator.id, cur, term="reserved")
    rec = cat.rent_reserved_per_gpu_hour(b.accelerator.id, cur) or \
        cat.rent_reserved_per_gpu_hour(b.accelerator.id, "CNY" if cur == "USD" else "USD")
    if rent is None or reserved is None or rec is None or not rec.min_hours:
        return None, 0, 0.0, billed
    term_hours = float(rec.min_hours)
    n, left = committed_terms(_rented(b), b.train_days * 24.0, billed, rent.typical, reserved.typical, term_hours)
    return reserved, n, term_hours, left


def net_trays(b: BuildInput) -> int:
    return rules.value("fabric", "nvl72_switch_trays") * b.racks


def buy_vs_rent(b: BuildInput, capex: dict[str, float], fac: FacilityBlock,
                compute_unpriced: list[str] | None = None,
                unpriced: list | None = None) -> tuple[dict | None, BuyVsRent]:
    """Rent against buy; no break-even month when the GPUs or their servers have no purchase price
    (`compute_unpriced`): the priced lines alone (switches, cables) would pay back in days. Other purchase lines
    without a price (`unpriced`: a host, racks) leave the month a lower bound, and the verdict says so."""
    cur, cat = b.currency, b.catalog
    rent = catalog_price(cat, "rent", b.accelerator.id, cur)
    hours = rules.value("bom", "hours_per_month")
    running = fac.annual_energy_cost["typical"] / 12.0
    job_months = b.train_days / (rules.value("facility", "hours_per_year") / 24.0 / 12.0)
    rent_block, per_month, for_job, even = None, None, None, None
    on_demand, basis, even_od = None, None, None

    def pays_back(month: float) -> float | None:
        ok = month > running and capex["typical"] > 0 and not compute_unpriced
        return capex["typical"] / (month - running) if ok else None

    if rent is not None:
        # the job pays on demand (its hours); a purchase is weighed against a month of full use at the
        # committed-term rate where the catalog lists one (prices.yaml `term: reserved`), else on demand
        reserved = catalog_price(cat, "rent", b.accelerator.id, cur, term="reserved")
        on_demand = _rented(b) * hours * rent.typical
        per_month = _rented(b) * hours * (reserved or rent).typical
        res, n, term_hours, left = rent_split(b, rent, rent_billing(b)[0])
        for_job = left * rent.typical + (_rented(b) * n * term_hours * res.typical if n else 0.0)
        rent_block = {"per_gpu_hour": rent.model_dump(), "per_month": per_month, "for_job": for_job,
                      "job_days": b.train_days}
        even, even_od = pays_back(per_month), pays_back(on_demand)
        if reserved is not None:
            rent_block["reserved_per_gpu_hour"] = reserved.model_dump()
            rec = cat.rent_reserved_per_gpu_hour(b.accelerator.id, cur) or \
                cat.rent_reserved_per_gpu_hour(b.accelerator.id, "CNY" if cur == "USD" else "USD")
            basis = msg("bom_rent_basis_reserved", months=f"{(rec.min_hours or 0) / hours:.0f}",
                        rate=Money(reserved.typical, cur), on_demand=Money(rent.typical, cur))
        else:
            basis = msg("bom_rent_basis_on_demand", rate=Money(rent.typical, cur))
    verdict = (msg("bom_verdict_no_rent") if per_month is None else
               msg("bom_verdict_no_purchase_price", parts=", ".join(compute_unpriced)) if compute_unpriced else
               msg("bom_verdict_rent_cheaper") if even is None else
               msg("bom_verdict_break_even_reserved", months=f"{even:.1f}", job=duration(b.train_days),
                   on_demand=f"{even_od:.1f}") if on_demand != per_month and even_od is not None else
               msg("bom_verdict_break_even_job", months=f"{even:.1f}", job=duration(b.train_days)))
    if even is not None and unpriced:
        verdict = msg("bom_verdict_priced_only", verdict=verdict, n=len(unpriced), parts=listed(unpriced[:3]))
    return rent_block, BuyVsRent(capex=capex, running_per_month=running, rent_per_month=per_month,
                                 break_even_month=even, job_months=job_months, rent_for_job=for_job, verdict=verdict,
                                 rent_basis=basis,
                                 rent_per_month_on_demand=on_demand if on_demand != per_month else None)


def bom_block(b: BuildInput, net: NetworkBlock, storage: StorageBlock, fac: FacilityBlock) -> BomBlock:
    """A bought plan lists what to order; a rented one what it rents and what the renter still arranges (the
    purchase it would replace is priced for the buy-vs-rent comparison only)."""
    how = acquisition(b)
    compute = server_lines(b)
    lines = compute + fabric_lines(b, net) + site_lines(b, storage, fac)
    capex, unpriced = totals(lines)
    # the servers, or the GPUs when the server is unpriced: without them the purchase total is not a cluster's
    priced = any(ln.total is not None for ln in compute if ln.part is not None)
    missing = [] if priced else [ln.part for ln in compute if ln.part is not None]
    rent, bvr = buy_vs_rent(b, capex, fac, missing, unpriced)
    tot = capex
    if how == "rent":
        lines = rent_lines(b, storage)
        tot, unpriced = totals(lines)
    notes = [msg("bom_note_priced_only")] + ([msg("bom_note_rented")] if how == "rent" else [])
    if any(ln.unit_price and ln.unit_price.converted for ln in lines):
        notes.append(msg("bom_note_fx"))
    return BomBlock(acquisition=how, currency=b.currency, lines=lines, totals=tot, unpriced=unpriced, rent=rent,
                    buy_vs_rent=bvr, notes=notes)
