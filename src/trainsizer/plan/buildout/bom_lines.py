"""BOM lines from the other blocks (servers, fabrics, storage, facility) and the buy-vs-rent comparison."""

from __future__ import annotations

from collections import OrderedDict

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
from trainsizer.plan.buildout.inputs import BuildInput
from trainsizer.plan.buildout.network import NetworkBlock
from trainsizer.plan.buildout.storage import StorageBlock


def server_lines(b: BuildInput) -> list[BomLine]:
    cur, cat, srv = b.currency, b.catalog, b.server
    if srv is not None and srv.gpus > b.per_node and not b.nvl72:
        srv = None  # the job uses part of a bigger box: price the GPUs, not the chassis
    if srv is not None:
        units = -(-b.gpus // srv.gpus)
        price = catalog_price(cat, "purchase", srv.id, cur)
        out = [line(f"GPU server {srv.name}", srv.id, units, "per_rack" if b.nvl72 else "per_server", price,
                    "" if price else "no sourced server price")]
        if price is None:
            gpu = catalog_price(cat, "purchase", b.accelerator.id, cur)
            out.append(line(f"GPUs {b.accelerator.name} (server price missing)", b.accelerator.id, b.gpus, "per_gpu",
                            gpu, "chassis, CPUs, RAM and NVMe not priced"))
        inc = f"included in {srv.id}"
        out += [line(f"CPUs: {srv.cpu_model}", None, units, "per_server", None, inc),
                line(f"RAM {srv.ram_gib or '?'} GiB per server", None, units, "per_server", None, inc),
                line(f"NVMe {srv.nvme_tb or '?'} TB per server", None, units, "per_server", None, inc),
                line(f"NICs {srv.nics.count} x {srv.nics.gbps:g} Gb/s ({srv.nics.model or ''})", None,
                     units * srv.nics.count, "per_nic", None, inc)]
        return out
    gpu = catalog_price(cat, "purchase", b.accelerator.id, cur)
    return [line(f"GPUs {b.accelerator.name}", b.accelerator.id, b.gpus, "per_gpu", gpu,
                 "" if gpu else "no sourced GPU price"),
            line(f"host server for {b.per_node} GPUs (CPU, RAM, NVMe, NICs per the node block)", None, b.nodes,
                 "per_server", None, "no catalog server for this node size")]


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
                out.append(line(f"{fab.purpose} {tier} switch {sw.name}", sw.id, n, "per_switch", price))
        merged: OrderedDict[str, int] = OrderedDict()
        for p in fab.parts:
            if p.part is not None:
                merged[p.part] = merged.get(p.part, 0) + p.quantity
        for pid, qty in merged.items():
            part = cat.part(pid)
            out.append(line(f"{fab.purpose} {part.kind}: {part.name}", pid, qty, "per_unit", part_price(cat, pid, cur)))
    return out


def site_lines(b: BuildInput, storage: StorageBlock, fac: FacilityBlock) -> list[BomLine]:
    cat, cur = b.catalog, b.currency
    out = []
    if storage.appliance:
        out.append(line(f"storage: {cat.part(storage.appliance).name}", storage.appliance, storage.appliances,
                        "per_unit", part_price(cat, storage.appliance, cur), f"{storage.capacity_tb.value} TB usable"))
    if b.nvl72:
        out.append(line("NVLink switch trays", "nvlink-switch-tray-nvl72", net_trays(b), "per_unit", None,
                        "included in the NVL72 rack"))
    out.append(line("racks", "rack-42u", fac.racks, "per_unit", part_price(cat, "rack-42u", cur)))
    out.append(line("rack PDUs (A + B feeds)", "pdu-rack-3ph", fac.pdus, "per_unit", part_price(cat, "pdu-rack-3ph", cur),
                    f"{fac.pdu_kw_each:.1f} kW each"))
    out.append(line(f"UPS modules ({fac.ups_redundancy.value})", "ups-module", fac.ups_modules, "per_unit",
                    part_price(cat, "ups-module", cur), f"{fac.ups_kva:.0f} kVA in all"))
    return out


def net_trays(b: BuildInput) -> int:
    return rules.value("fabric", "nvl72_switch_trays") * -(-b.gpus // int(b.accelerator.scaleup_domain))


def buy_vs_rent(b: BuildInput, capex: dict[str, float], fac: FacilityBlock) -> tuple[dict | None, BuyVsRent]:
    cur, cat = b.currency, b.catalog
    rent = catalog_price(cat, "rent", b.accelerator.id, cur)
    hours = rules.value("bom", "hours_per_month")
    running = fac.annual_energy_cost["typical"] / 12.0
    job_months = b.train_days / (rules.value("facility", "hours_per_year") / 24.0 / 12.0)
    rent_block, per_month, for_job, even = None, None, None, None
    if rent is not None:
        per_month = b.gpus * hours * rent.typical
        for_job = b.gpus * b.train_days * 24.0 * rent.typical
        rent_block = {"per_gpu_hour": rent.model_dump(), "per_month": per_month, "for_job": for_job,
                      "job_days": b.train_days}
        if per_month > running and capex["typical"] > 0:
            even = capex["typical"] / (per_month - running)
    verdict = ("no rental price: compare with a quote" if per_month is None else
               "renting never costs more than running owned hardware here" if even is None else
               f"buying pays back after {even:.1f} months of full use; this job alone lasts {job_months:.1f}")
    return rent_block, BuyVsRent(capex=capex, running_per_month=running, rent_per_month=per_month,
                                 break_even_month=even, job_months=job_months, rent_for_job=for_job, verdict=verdict)


def bom_block(b: BuildInput, net: NetworkBlock, storage: StorageBlock, fac: FacilityBlock) -> BomBlock:
    lines = server_lines(b) + fabric_lines(b, net) + site_lines(b, storage, fac)
    tot, unpriced = totals(lines)
    rent, bvr = buy_vs_rent(b, tot, fac)
    notes = ["capex counts priced lines only; see `unpriced` for the parts to quote"]
    if any(ln.unit_price and ln.unit_price.converted for ln in lines):
        notes.append("some prices are USD converted at a labelled FX rate (no CNY range in the catalog)")
    return BomBlock(currency=b.currency, lines=lines, totals=tot, unpriced=unpriced, rent=rent, buy_vs_rent=bvr,
                    notes=notes)
