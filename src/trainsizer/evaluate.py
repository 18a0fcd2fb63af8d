"""One configuration, fully evaluated: memory, time, cost, energy and the goal check.

This is what `trainsizer estimate` prints. It joins the pure estimators (`trainsizer.estimate`) with the
catalog's prices and facility figures, which the estimators take as plain arguments.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from trainsizer.catalog.age import price_age
from trainsizer.catalog.records import DRIVER_TOOL_RUNTIME
from trainsizer.errors import SpecError
from trainsizer.estimate import host_memory
from trainsizer.estimate.calibration import Calibration
from trainsizer.estimate.cost import (
    HOURS_PER_YEAR,
    billed_gpu_hours,
    buy_cost,
    committed_terms,
    host_unit_gpus,
    rent_cost,
)
from trainsizer.estimate.energy import default_pue, energy
from trainsizer.estimate.memory import GIB, estimate_memory
from trainsizer.estimate.reliability import failure_figures
from trainsizer.estimate.step_time import estimate_time, perf_style
from trainsizer.messages import msg
from trainsizer.scenario import (
    Scenario,
    domain_job_gpus,
    module_part,
    placed_domain_gpus,
    server_ram_per_node,
)

# the unit_price units of the cost blocks (the JSON keeps these English words; reports translate them)
UNIT_RENT = "per GPU-hour"
UNIT_BUY = "per GPU (accelerator only)"
UNIT_HOST_RAM = "per GiB of host RAM"

if TYPE_CHECKING:
    from trainsizer.catalog.catalog import Catalog
    from trainsizer.estimate.accuracy import JobClass

# the catalog part that prices host memory per GiB (catalog/data/parts.yaml, kind host_memory)
HOST_RAM_PART = "ram-ddr5-rdimm-gib"

# Straight-line amortisation period for bought GPU servers (typical 4-5 year depreciation of AI servers;
# SemiAnalysis / Epoch "cost of training" use 4 years).
AMORTISATION_YEARS = 4.0


def load_calibration(path: Path | str, precision: str) -> Calibration:
    """Measured figures from a `trainsizer accept` result file (its `calibration` section) or a file with
    the `Calibration` fields themselves.

    The acceptance suite measures the write bandwidth of one node to the planned path (the slowest node of a
    merged run); it is taken as the job's whole checkpoint bandwidth, which is conservative for multi-node
    jobs whose file system scales with clients. Give `storage_gb_s` explicitly to state the aggregate."""
    path = Path(path)
    if not path.exists():
        raise SpecError(str(path), msg("cal_file_not_found"))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise SpecError(f"{path}:{err.lineno}", msg("file_bad_json", detail=err.msg)) from None
    if not isinstance(data, Mapping):
        raise SpecError(str(path), msg("cal_expected_object"))
    section = data.get("calibration", data)
    if not isinstance(section, Mapping):
        raise SpecError(f"{path}: calibration", msg("cal_expected_figures"))
    gemm = section.get("gemm_tflops")
    if isinstance(gemm, Mapping):
        gemm = gemm.get(precision)
    fields: dict[str, Any] = {
        "gemm_tflops": gemm,
        "flash_tflops": section.get("flash_tflops"),
        "busbw_intra_gb_s": section.get("busbw_intra_gb_s"),
        "busbw_inter_gb_s": section.get("busbw_inter_gb_s"),
        "hbm_gb_s": section.get("hbm_gb_s"),
        # Checkpoints are writes: the write figure is the one that bounds checkpoint time.
        "storage_gb_s": section.get("storage_gb_s", section.get("storage_write_gb_s")),
    }
    known = set(fields) | {"gemm_tflops", "storage_read_gb_s", "storage_write_gb_s", "source"}
    unknown = sorted(set(section) - known)
    if unknown:
        raise SpecError(f"{path}: calibration.{unknown[0]}", msg("cal_unknown_figure"),
                        allowed=sorted(known))
    if all(v is None for v in fields.values()):  # nothing to calibrate with: said, not an uncalibrated estimate
        raise SpecError(f"{path}: calibration", msg("cal_no_figures", precision=precision),
                        allowed=sorted(fields))
    try:
        return Calibration(**{k: v for k, v in fields.items() if v is not None}, source=str(path))
    except ValueError as err:
        raise SpecError(f"{path}: calibration", str(err).splitlines()[0]) from None


def _currency(scenario: Scenario) -> str:
    return scenario.job.currency


def _price_block(price: Any, quantity: float, per: str) -> dict[str, Any]:
    age = price_age(price.date, projection=bool(getattr(price, "projection", False)))
    return {
        "unit_price": {"low": price.low, "mid": price.mid, "high": price.high, "unit": per},
        "source": price.source,
        "date": price.date,
        "age_days": age.age_days,  # from the earliest day the date can mean; stale past STALE_AFTER_DAYS
        "stale": age.stale,
        "projection": age.projection,
        "confidence": price.confidence,
        "quantity": quantity,
    }


def _note_stale(block: dict[str, Any], what: str, notes: list[str]) -> None:
    if block.get("stale"):
        notes.append(msg("note_price_stale", what=what, date=block["date"], days=block["age_days"]))
    if block.get("projection"):
        notes.append(msg("note_price_projection", what=what))


def _in_other_currency(lookup: Any, accelerator: str, currency: str) -> Any:
    """The catalog's price of `accelerator` in a currency other than the job's (USD / CNY), or None."""
    from trainsizer.catalog.catalog import CURRENCIES

    return next((p for c in CURRENCIES if c != currency
                 if (p := lookup(accelerator, currency=c)) is not None), None)


def host_ram_block(catalog: Catalog, system: Any, host_gib_per_node: float, currency: str,
                   notes: list[str], base_gib: float = 0.0) -> dict[str, Any] | None:
    """The host memory a purchase adds for a layout keeping states in host RAM (ZeRO-Offload / FSDP CPU offload,
    paged optimizers: the memory estimate's host bytes a node, `host_gib_per_node`), priced per GiB (catalog part
    HOST_RAM_PART); None when nothing is added. On a host of known RAM (`known_host_ram_gib`: a catalog server) the
    node's whole need is held to it: the states + `base_gib`, what the node needs without them (OS, processes,
    buffers, checkpoint staging, page cache: estimate.host_memory, the node block's one definition); on a host the
    plan sizes itself (a workstation, no catalog server) the base is that host's own memory and the states are added."""
    if host_gib_per_node <= 0:
        return None
    host = known_host_ram_gib(catalog, system)
    whole = host_gib_per_node + (base_gib if host > 0 else 0.0)
    need, extra = math.ceil(whole), _added_gib(whole, host)
    said = dict(gib=f"{math.ceil(host_gib_per_node):,}", host=f"{host:,.0f}", need=f"{need:,}",
                base=f"{base_gib:,.0f}")
    if extra == 0:
        notes.append(msg("note_host_ram_in_host", **said))
        return None
    if host_ram_fixed(catalog, system):  # soldered memory: no DIMMs to price, the layout needs another host
        notes.append(msg("note_host_ram_fixed", **said))
        return None
    gib = float(extra * system.nodes)
    price = catalog.part(HOST_RAM_PART).price.get(currency)
    if price is None:
        notes.append(msg("note_host_ram_unpriced", gib=f"{need:,}", total=f"{gib:,.0f}", currency=currency,
                         part=HOST_RAM_PART))
        return None
    if host > 0 and host_ram_extensible(catalog, system) is None:  # priced, but whether the server takes it is unknown
        notes.append(msg("note_host_ram_extensible_unknown", accelerator=system.accelerator, host=f"{host:,.0f}",
                         need=f"{need:,}"))
    notes.append(msg("note_host_ram_priced" if host <= 0 else "note_host_ram_priced_beyond", **said,
                     total=f"{gib:,.0f}", nodes=system.nodes, node_gib=f"{extra:,}",
                     rate=f"{price.mid:,.2f} {currency}", cost=f"{gib * price.mid:,.0f} {currency}",
                     source=", ".join(price.sources), date=price.date))
    return {"gib": gib, "quantity": gib, "gib_per_node": float(extra), "need_gib_per_node": round(whole, 2),
            "host_gib_per_node": host, "nodes": system.nodes, "part": HOST_RAM_PART,
            "unit_price": {"low": price.low, "mid": price.mid, "high": price.high, "unit": UNIT_HOST_RAM},
            "source": ", ".join(price.sources), "date": price.date, "currency": currency,
            **{k: gib * getattr(price, k) for k in ("low", "mid", "high")}}


def host_ram_added_gib(catalog: Catalog, system: Any, host_gib_per_node: float, base_gib: float = 0.0) -> int:
    """Whole GiB of host RAM a node's purchase adds for `host_gib_per_node` of offloaded states: on a host of known
    RAM, what the node's whole need (states + `base_gib`) needs beyond it; on a host the plan sizes, the states; 0
    when it holds them or none can be added (`host_ram_fixed`). The ranked price (`host_ram_block`) and the bill of
    materials (buildout.bom_lines.host_ram_lines) both read it."""
    if host_gib_per_node <= 0 or host_ram_fixed(catalog, system):
        return 0
    host = known_host_ram_gib(catalog, system)
    return _added_gib(host_gib_per_node + (base_gib if host > 0 else 0.0), host)


def node_base_for(catalog: Catalog, scenario: Scenario) -> Callable[[Any], float]:
    """A node's host RAM need besides offloaded states on any system of the job, for the search's host verdict
    (search.engine._host_fits): estimate.host_memory.base_need_gib at the system's GPUs a node and nodes where no
    RAM can be added to the host (`host_ram_fixed`: a GB200 tray), else 0: a host that takes more DIMMs, or may,
    keeps the layout and the ranking prices what the whole need exceeds it by (`host_ram_block`)."""
    ckpt = host_memory.checkpoint_bytes(catalog.reliability, scenario.model, scenario.training)
    tokens = scenario.job.data.tokens_per_epoch

    def base(system: Any) -> float:
        if not host_ram_fixed(catalog, system):
            return 0.0
        return host_memory.base_need_gib(system.gpus_per_node, system.nodes, ckpt, tokens)

    return base


def node_base_gib(catalog: Catalog, scenario: Scenario) -> float:
    """A node's host RAM need without offloaded states, GiB (estimate.host_memory.base_need_gib: OS, processes,
    pinned buffers, async checkpoint staging, the dataset shard's page cache), for the scenario's system."""
    system = scenario.system
    assert system is not None
    ckpt = host_memory.checkpoint_bytes(catalog.reliability, scenario.model, scenario.training)
    return host_memory.base_need_gib(system.gpus_per_node, system.nodes, ckpt, scenario.job.data.tokens_per_epoch)


def host_ram_fixed(catalog: Catalog, system: Any) -> bool:
    """True where no RAM can be added to the node's host: a module part whose every catalog server says its memory
    is not extensible (Server.ram_extensible False: Grace LPDDR5X on a GB200 tray's board; GB300's SOCAMM
    modules are replaceable, so unknown there). The price, the bill of
    materials and the node block's risk read this one test."""
    return host_ram_extensible(catalog, system) is False


def host_ram_extensible(catalog: Catalog, system: Any) -> bool | None:
    """Whether RAM can be added to the node's host: True where a catalog server of the part says so (a larger
    configuration read), False where every one says its memory is soldered (`host_ram_fixed`), None where the
    catalog does not know (servers.yaml ram_extensible null): the plan then says so rather than assume."""
    acc = catalog.accelerator(system.accelerator)
    servers = catalog.servers_for(acc.id) if module_part(acc) else []
    if any(s.ram_extensible is True for s in servers):
        return True
    if servers and all(s.ram_extensible is False for s in servers):
        return False
    return None


def _added_gib(host_gib_per_node: float, host_gib: float) -> int:
    return max(0, math.ceil(host_gib_per_node) - math.floor(host_gib))


def known_host_ram_gib(catalog: Catalog, system: Any) -> float:
    """RAM a node's host is known to have: the system's (the option's catalog server, search.engine.option_system),
    else, for a module part (bought in its server: `bought_gpus`), the least of its catalog servers' RAM a node; 0
    where no figure is known (a PCIe card's workstation or box)."""
    if system.host_ram_gib > 0:
        return float(system.host_ram_gib)
    acc = catalog.accelerator(system.accelerator)
    if not module_part(acc):
        return 0.0
    rams = (server_ram_per_node(acc, s, system.gpus_per_node) for s in catalog.servers_for(acc.id))
    return float(min((r for r in rams if r), default=0.0))


def _costs(scenario: Scenario, catalog: Catalog, gpu_hours: float, wall_hours: float, kwh: float,
           notes: list[str], host_gib_per_node: float = 0.0) -> dict[str, Any]:
    system = scenario.system
    assert system is not None
    currency = _currency(scenario)
    out: dict[str, Any] = {"currency": currency}
    procurement = scenario.job.goal.procurement

    rent = catalog.rent_per_gpu_hour(system.accelerator, currency=currency)
    if rent is None:  # the catalog's other currency, said and kept in it (the plan converts it to rank: plan.core)
        rent = _in_other_currency(catalog.rent_per_gpu_hour, system.accelerator, currency)
        if rent is not None:
            notes.append(msg("note_rent_in_other_currency", currency=currency, accelerator=system.accelerator,
                             other=rent.currency))
    wants_rent = procurement in ("rent", "either")
    if rent is not None and rent.max_gpus is not None and system.gpus > rent.max_gpus:
        # The listings behind the price are single servers: a larger job has no rental price, not a cheap one.
        if wants_rent:
            notes.append(msg("note_rent_max_gpus", accelerator=system.accelerator, max_gpus=rent.max_gpus,
                             gpus=system.gpus))
    elif rent is not None and wants_rent:
        billed = gpu_hours
        rented, why = rent_basis(scenario.accelerator, system.gpus, system.gpus_per_node, rent)
        if why == "racks":  # whole racks (prices.yaml billed_whole_domains), as the bill of materials rents
            billed = max(gpu_hours, billed_gpu_hours(rented, wall_hours, rent.billed_gpus, rent.min_hours))
            notes.append(msg("note_rent_whole_racks", accelerator=system.accelerator, gpus=system.gpus,
                             rented=rented, racks=rented // int(scenario.accelerator.scaleup_domain),
                             billed=f"{billed:,.0f}", used=f"{gpu_hours:,.0f}"))
        elif why == "host_units":  # whole units on each host the job uses (a unit never spans hosts)
            billed = max(gpu_hours, billed_gpu_hours(rented, wall_hours, rent.billed_gpus, rent.min_hours))
            per_node = min(system.gpus_per_node, system.gpus)
            notes.append(msg("note_rent_host_units", accelerator=system.accelerator, unit=rent.billed_gpus,
                             per_node=per_node, per_host=host_unit_gpus(per_node, per_node, rent.billed_gpus),
                             gpus=system.gpus, rented=rented, billed=f"{billed:,.0f}", used=f"{gpu_hours:,.0f}"))
        elif rent.billed_gpus or rent.min_hours:  # whole rental units, at least the shortest term (prices.yaml)
            billed = max(gpu_hours, billed_gpu_hours(system.gpus, wall_hours, rent.billed_gpus, rent.min_hours))
            if billed > gpu_hours * (1 + 1e-9):
                notes.append(msg("note_rent_billed", accelerator=system.accelerator, unit=rent.billed_gpus or 1,
                                 hours=f"{rent.min_hours or 1:,g}", billed=f"{billed:,.0f}", used=f"{gpu_hours:,.0f}"))
        term, terms, billed = _rent_term(catalog, system, rented, rent, billed, wall_hours, notes)
        block = _price_block(rent, billed, UNIT_RENT)  # the hours rented on demand
        reserved = _price_block(term, rented * terms * float(term.min_hours), UNIT_RENT) if terms else None
        for k in ("low", "mid", "high"):
            block[k] = rent_cost(billed, getattr(rent, k), rent.currency).total + (
                rent_cost(reserved["quantity"], getattr(term, k), term.currency).total if reserved else 0.0)
        block["currency"] = rent.currency
        if reserved is not None:  # whole committed terms (prices.yaml term: reserved), beside the on-demand hours
            reserved.update(terms=terms, term_hours=term.min_hours)
            block["reserved"] = reserved
        out["rent"] = block
        _note_stale(block, msg("what_rent_price", accelerator=system.accelerator), notes)
    elif rent is None and wants_rent:
        notes.append(msg("note_no_rent_price", accelerator=system.accelerator))
    if wants_rent and "rent" in out and host_gib_per_node > 0:
        _rent_host_ram(catalog, system, rent, host_gib_per_node, out, notes)

    if procurement in ("buy", "either"):
        per_gpu = catalog.purchase(system.accelerator, currency=currency)
        if per_gpu is None:
            per_gpu = _in_other_currency(catalog.purchase, system.accelerator, currency)
            if per_gpu is not None:
                notes.append(msg("note_buy_in_other_currency", currency=currency, accelerator=system.accelerator,
                                 other=per_gpu.currency))
        electricity = catalog.facility.electricity_per_kwh(per_gpu.currency if per_gpu else currency)
        if per_gpu is None:
            notes.append(msg("note_no_buy_price", accelerator=system.accelerator))
        else:
            bought, server = bought_gpus(catalog, system.accelerator, system.gpus, system.gpus_per_node)
            if server is not None:
                notes.append(msg("note_buy_whole_server", accelerator=system.accelerator, server=server.id,
                                 unit=server.gpus, gpus=system.gpus))
            elif bought > system.gpus:
                notes.append(msg("note_buy_whole_racks", accelerator=system.accelerator, gpus=system.gpus,
                                 bought=bought, racks=bought // int(scenario.accelerator.scaleup_domain)))
            block = _price_block(per_gpu, bought, UNIT_BUY)
            base = node_base_gib(catalog, scenario) if host_gib_per_node > 0 else 0.0
            ram = host_ram_block(catalog, system, host_gib_per_node, per_gpu.currency, notes, base)
            for k in ("low", "mid", "high"):
                capex = getattr(per_gpu, k) * bought + (ram[k] if ram else 0.0)
                kwh_price = electricity.mid if electricity is not None else 0.0
                c = buy_cost(wall_hours, capex, kwh, kwh_price, years=AMORTISATION_YEARS, currency=per_gpu.currency)
                block[k] = c.total
                if k == "mid":
                    block["capex_total"] = capex
                    block["amortised"] = c.compute
                    block["electricity"] = c.energy
            block["currency"] = per_gpu.currency
            block["amortisation_years"] = AMORTISATION_YEARS
            block["electricity_per_kwh"] = electricity.mid if electricity is not None else None
            if ram is not None:
                block["host_ram"] = ram
            out["buy"] = block
            _note_stale(block, msg("what_buy_price", accelerator=system.accelerator), notes)
            notes.append(msg("note_buy_scope"))
    return out


def _rent_term(catalog: Catalog, system: Any, rented: int, rent: Any, billed: float, wall_hours: float,
               notes: list[str]) -> tuple[Any, int, float]:
    """(the committed-term price, whole terms reserved, GPU-hours left on demand): the catalog's committed-term
    rate (prices.yaml `term: reserved`, a term of min_hours) for the whole terms that make the job cheaper than on
    demand (estimate.cost.committed_terms), else (None, 0, the on-demand hours). A job of a year or more without a
    committed-term price in the catalog says it is priced on demand (docs/known-gaps.md 34 (a)). `rented`: the GPUs the
    rental pays for (rented_gpus)."""
    term = catalog.rent_reserved_per_gpu_hour(system.accelerator, rent.currency)
    if term is not None and term.min_hours:
        n, left = committed_terms(rented, wall_hours, billed, rent.mid, term.mid, float(term.min_hours))
        if n:
            notes.append(msg("note_rent_reserved", accelerator=system.accelerator, terms=n,
                             months=f"{float(term.min_hours) / HOURS_PER_YEAR * 12:.0f}",
                             rate=f"{term.mid:,.2f} {term.currency}", on_demand=f"{rent.mid:,.2f} {rent.currency}",
                             days=f"{wall_hours / 24.0:,.0f}", left=f"{left:,.0f}"))
            return term, n, left
    elif wall_hours >= HOURS_PER_YEAR:
        notes.append(msg("note_rent_no_term", accelerator=system.accelerator, days=f"{wall_hours / 24.0:,.0f}"))
    return None, 0, billed


def _rent_host_ram(catalog: Catalog, system: Any, rent: Any, need_gib: float, out: dict[str, Any],
                   notes: list[str]) -> None:
    """A rented layout keeping `need_gib` a node of states in host RAM, held to the RAM of the instances behind the
    rent price where their listings state it (Catalog.rent_instance_ram; the states alone, a lower bound of what the
    host needs), whatever catalog server the search held the layout to (a rented instance is not one): every listing
    known and none holds them -> no rent price (dropped, said); some known listings too small -> which hold them;
    none known -> what to ask for, where the host the plan knows of is too small (the note before listings had RAM)."""
    known, every = catalog.rent_instance_ram(rent)
    if not known:  # no listing's RAM read: what to ask for, where the host the plan knows of is too small
        if need_gib > known_host_ram_gib(catalog, system):
            notes.append(msg("note_host_ram_rent", gib=f"{need_gib:,.0f}", accelerator=system.accelerator))
        return
    per_node = min(system.gpus_per_node, system.gpus)
    holds = [p for p in known if (p.ram_gib_per_gpu or 0.0) * per_node >= need_gib]
    listed = "; ".join(f"{p.item}: {p.instance_ram_gib:,.0f} GiB / {p.instance_gpus} GPU" for p in known)
    said = dict(gib=f"{need_gib:,.0f}", accelerator=system.accelerator, per_node=per_node, listed=listed)
    if every and not holds:
        del out["rent"]
        notes.append(msg("note_host_ram_rent_dropped", **said))
    elif not holds:
        notes.append(msg("note_host_ram_rent_none_listed", **said))
    elif len(holds) < len(known):
        notes.append(msg("note_host_ram_rent_listed", **said, fit="; ".join(p.item for p in holds)))


def bought_gpus(catalog: Catalog, accelerator: str, gpus: int, per_node: int) -> tuple[int, Any]:
    """(GPUs a purchase pays for, the server that makes it more than `gpus`, else None): a job on fewer modules
    than the smallest catalog server of a module part (an HGX / OAM baseboard of 8, an NVL72 rack) buys that
    server's modules: one H20 or Ascend 910B cannot be bought for a workstation. A job larger than one multi-host
    scale-up domain buys the whole racks it is placed in (scenario.placed_domain_gpus: 128 GB200 -> 2 racks = 144),
    as the bill of materials orders them. PCIe cards, and jobs that fill whole servers, buy their own GPUs."""
    acc = catalog.accelerator(accelerator)
    if (racks := _whole_domains_gpus(acc, gpus, per_node)) is not None:
        return racks, None
    servers = catalog.servers_for(acc.id) if module_part(acc) else []
    smallest = min(servers, key=lambda s: s.gpus, default=None)
    if smallest is None or gpus >= smallest.gpus:
        return gpus, None
    return smallest.gpus, smallest


def rented_gpus(acc: Any, gpus: int, per_node: int, rent: Any) -> int:
    """GPUs a rental pays for (rent_basis's first figure)."""
    return rent_basis(acc, gpus, per_node, rent)[0]


def rent_basis(acc: Any, gpus: int, per_node: int, rent: Any) -> tuple[int, str]:
    """(GPUs a rental pays for, why: 'racks', 'host_units' or 'gpus'). Where the rental price's listings rent whole
    scale-up domains (prices.yaml billed_whole_domains: CoreWeave deploys GB200 NVL72 instances as full racks of 18
    trays), a job larger than one domain rents the racks it is placed in (scenario.placed_domain_gpus). Else a price
    billed in units no larger than a host (prices.yaml billed_gpus: Spheron's GB200 superchip of 2, an 8-GPU node on
    contract) rents whole units on each host the job uses (estimate.cost.host_unit_gpus): 54 GB200 at 3 a tray on
    18 trays rent 72 (both superchips of each tray), 16 H100 at 4 a node on 8-GPU contracts rent 32 (known-gaps 43
    (w)). Larger units, and prices without one, bill the job's GPUs (estimate.cost.billed_gpu_hours rounds those)."""
    racks = _whole_domains_gpus(acc, gpus, per_node)
    if racks is not None and rent is not None and getattr(rent, "billed_whole_domains", False):
        return racks, "racks"
    unit = int(getattr(rent, "billed_gpus", None) or 1) if rent is not None else 1
    host = int(getattr(acc, "gpus_per_host", 0) or 0) or per_node
    if 1 < unit <= host:
        per_host = host_unit_gpus(gpus, per_node, unit)
        if per_host > -(-gpus // unit) * unit:
            return per_host, "host_units"
    return gpus, "gpus"


def _whole_domains_gpus(acc: Any, gpus: int, per_node: int) -> int | None:
    """GPUs of the whole multi-host scale-up domains a job larger than one is placed in (scenario.placed_domain_gpus),
    None where the domain is one host or the job fits in one: the one rule `bought_gpus` and `rented_gpus` read."""
    domain = int(getattr(acc, "scaleup_domain", 0) or 0)
    return placed_domain_gpus(acc, per_node, gpus) if domain > per_node and gpus > domain_job_gpus(acc, per_node) \
        else None


def job_cost(costs: dict[str, Any], currency: str) -> tuple[float | None, str | None]:
    """What the job costs in `currency` (typical prices) and how: rent = GPU-hours x price per GPU-hour; buy =
    the accelerators' purchase price + the host RAM an offloaded layout adds (`host_ram_block`) + the job's electricity (money spent to run this job by buying; what the
    hardware is worth afterwards is not credited, and `cost.buy.mid` holds the amortised share instead); the
    cheaper of the two when the procurement allows both. (None, None) without a price in `currency`."""
    found = []
    rent, buy = costs.get("rent"), costs.get("buy")
    if rent and rent.get("currency") == currency:
        found.append((float(rent["mid"]), "rent"))
    if buy and buy.get("currency") == currency and buy.get("capex_total") is not None:
        found.append((float(buy["capex_total"]) + float(buy.get("electricity") or 0.0), "buy"))
    return min(found) if found else (None, None)


def _goal(scenario: Scenario, train_days: float, costs: dict[str, Any]) -> dict[str, Any]:
    goal = scenario.job.goal
    out: dict[str, Any] = {}
    if goal.deadline_days is not None:
        out["deadline_days"] = goal.deadline_days
        out["meets_deadline"] = bool(train_days <= goal.deadline_days)
    if goal.budget is not None:
        # the budget is checked as `trainsizer plan` checks it: rent, or a purchase at its full price (job_cost),
        # not at the amortised share in cost.buy.mid
        out["budget"] = goal.budget.amount
        out["budget_currency"] = goal.budget.currency
        cost, basis = job_cost(costs, goal.budget.currency)
        if cost is None:  # no price in the budget's currency: not checked, and said (budget_not_checked_note)
            out["within_budget"] = None
            return out
        out["cost_mid"] = cost
        out["cost_basis"] = basis
        out["within_budget"] = bool(cost <= goal.budget.amount)
    return out


def budget_not_checked_note(scenario: Scenario, costs: dict[str, Any]) -> Any:
    """Why a budget was not checked (`_goal`: within_budget None): the part's price is in the catalog's other
    currency only, which `estimate` keeps as it is and `trainsizer plan` converts at its dated rate, or there is no
    price to the job's procurement at all."""
    from trainsizer.catalog.catalog import CURRENCIES
    from trainsizer.messages import Money

    budget, acc = scenario.job.goal.budget, scenario.system.accelerator
    for other in (c for c in CURRENCIES if c != budget.currency):
        cost, basis = job_cost(costs, other)
        if cost is not None:
            return msg("note_budget_other_currency", budget=Money(budget.amount, budget.currency), accelerator=acc,
                       other=other, cost=Money(cost, other), basis=msg(f"budget_basis_{basis}"))
    return msg("note_budget_no_price", budget=Money(budget.amount, budget.currency), accelerator=acc)


def run_costs(scenario: Scenario, catalog: Catalog, gpu_hours: float, wall_hours: float, kwh: float,
              host_gib_per_node: float = 0.0) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """(cost blocks, goal check, notes) of a run of known length: what `evaluate` reports, for the search.
    `host_gib_per_node`: the states the layout keeps in host RAM (MemoryEstimate.host_bytes_per_node in GiB)."""
    notes: list[str] = []
    costs = _costs(scenario, catalog, gpu_hours, wall_hours, kwh, notes, host_gib_per_node)
    return costs, _goal(scenario, wall_hours / 24.0, costs), notes


def require_configuration(scenario: Scenario) -> Scenario:
    """The scenario itself, if it names one configuration (hardware and strategy); else a clear error."""
    if scenario.system is None or scenario.strategy is None:
        hw = scenario.job.hardware
        missing = msg("job_missing_strategy" if scenario.system is not None else
                      "job_missing_accelerator" if hw is not None and hw.accelerator is None else
                      "job_missing_hardware_and_strategy")
        raise SpecError("job", msg("job_needs_configuration", missing=missing))
    return scenario


def framework_assumed(scenario: Scenario) -> dict[str, Any]:
    """The training stack the estimate assumed: the named framework, or what "auto" picked for this layout and
    why (`estimate.framework.resolve`), with what that stack assumes (docs/frameworks.md)."""
    from trainsizer.estimate import fsdp1_no_sync
    from trainsizer.estimate.framework import assumptions, resolve

    strategy = scenario.strategy
    out = resolve(strategy.framework, strategy, scenario.training.method in ("pretrain", "cpt"))
    out = out | {"assumes": assumptions(out["assumed"])}
    out = out | _moe_dispatcher(scenario, out["perf_style"]) | _experts_implementation(scenario, out["assumed"])
    return (out | _checkpoint_impl(scenario, out["perf_style"]) | _zero3_engine(scenario, out["perf_style"])
            | _zero3_expert_fetch(scenario, out) | _torch_compile(scenario, out["perf_style"])
            | _moe_fusion(scenario, out["perf_style"]) | _tf32(scenario, out["perf_style"]) | _kbit_upcast(scenario)
            | fsdp1_no_sync.assumed(strategy, out["assumed"], scenario.training.global_batch_seqs)
            | _lora_adapter(scenario))


def _kbit_upcast(scenario: Scenario) -> dict[str, Any]:
    """{"kbit_upcast": {"requested" (None = the framework's), "assumed", "residual_fp32", "reason"}} for a QLoRA job:
    whether PEFT's prepare_model_for_kbit_training left its norms, embeddings and LM head in fp32 (and the residual
    stream, unless DeepSpeed's 16-bit engine casts the module back), as both estimates resolve it
    (model_states.kbit_upcast); reason: the i18n key of the unstated default's origin
    (kbit_upcast_default_<hf | auto | torchtune | peft>: TRL >= 0.26 under hf / auto, docs/known-gaps.md 258 (a)),
    None where the job states it; {} for other methods."""
    from trainsizer.estimate.model_states import kbit_upcast, kbit_upcast_default

    if scenario.training.method != "qlora":
        return {}
    s = scenario.strategy
    name = str(s.framework)
    weights, residual = kbit_upcast(s, name)
    reason = None
    if s.kbit_upcast is None:
        reason = "kbit_upcast_default_" + (name if not kbit_upcast_default(name) else "peft")
    return {"kbit_upcast": {"requested": s.kbit_upcast, "assumed": weights, "residual_fp32": residual,
                            "reason": reason}}


def _lora_adapter(scenario: Scenario) -> dict[str, Any]:
    """{"lora_adapter": {"requested" (the job's lora.impl, None = the framework's), "assumed" (the resolved
    implementation, scenario.lora_impl), "adapters_16bit", "reason"}} for a QLoRA job: whether its adapters, their
    gradients and AdamW moments are 16-bit (TRL >= 0.26's bf16 cast under hf / auto, docs/known-gaps.md 268 (a)) or
    PEFT's fp32 (model_states.lora_adapters_16bit); reason: the i18n key of the unstated default's origin
    (model_states.lora_impl_default), None where the job states lora.impl; {} for other methods."""
    from trainsizer.estimate.model_states import lora_adapters_16bit, lora_impl_default

    if scenario.training.method != "qlora":
        return {}
    s, lora = scenario.strategy, scenario.job.lora
    name = str(s.framework) if s is not None else "auto"
    requested = lora.impl if lora is not None else None
    reason = None
    if requested is None:
        reason = lora_impl_default("qlora", name, s.kbit_upcast if s is not None else None)[1]
    impl = scenario.training.lora_impl
    return {"lora_adapter": {"requested": requested, "assumed": impl,
                             "adapters_16bit": lora_adapters_16bit(name, impl), "reason": reason}}


def _tf32(scenario: Scenario, style: str) -> dict[str, Any]:
    """{"tf32": {"requested" (None = the stack's), "assumed"}} for a precision fp32 job: whether its GEMMs were timed
    on the TF32 / XF32 tensor cores (strategy.tf32, else PerfStyle.fp32_matmul_tf32; calibration.rates); {} in other
    precisions, where the setting does nothing."""
    if scenario.training.precision != "fp32":
        return {}
    s = scenario.strategy
    return {"tf32": {"requested": s.tf32,
                     "assumed": bool(perf_style(style).fp32_matmul_tf32 if s.tf32 is None else s.tf32)}}


def _moe_fusion(scenario: Scenario, style: str) -> dict[str, Any]:
    """{"moe_fusion": {"permute": {"requested", "assumed"}, "router": {...}}} for an MoE job on Megatron-Core
    (validate.TE_GRAPH_FRAMEWORKS' style), whose router and token permutation run Transformer Engine's fused kernels or
    the unfused torch ops (strategy.moe_permute_fusion / moe_router_fusion; step_time._moe_unfused_time); unstated:
    the style's (PerfStyle.moe_permute_fused / moe_router_fused: fused, as NeMo / Megatron-Bridge set them); {}
    otherwise."""
    from trainsizer.estimate.validate import TE_GRAPH_FRAMEWORKS

    if not scenario.model.is_moe or style not in TE_GRAPH_FRAMEWORKS:
        return {}
    s, fw = scenario.strategy, perf_style(style)
    return {"moe_fusion": {
        "permute": {"requested": s.moe_permute_fusion,
                    "assumed": bool(fw.moe_permute_fused if s.moe_permute_fusion is None else s.moe_permute_fusion)},
        "router": {"requested": s.moe_router_fusion,
                   "assumed": bool(fw.moe_router_fused if s.moe_router_fusion is None else s.moe_router_fusion)}}}


def _torch_compile(scenario: Scenario, style: str) -> dict[str, Any]:
    """{"torch_compile": {"requested": None, "assumed": bool, "reason": i18n key}} where the job leaves
    strategy.torch_compile unstated: the timed stack's default (PerfStyle.compiles_by_default, as both estimates
    resolve it: framework.torch_compile_of) and why, "torch_compile_default_<style>" for a stack that runs eager
    unless asked, else "torch_compile_default_fused"; {} where the job states it."""
    if scenario.strategy.torch_compile is not None:
        return {}
    fused = bool(perf_style(style).compiles_by_default)
    reason = "torch_compile_default_fused" if fused else f"torch_compile_default_{style}"
    return {"torch_compile": {"requested": None, "assumed": fused, "reason": reason}}


def _zero3_engine(scenario: Scenario, style: str) -> dict[str, Any]:
    """{"zero3_engine": {"assumed": "deepspeed" | "fsdp"}} for a ZeRO-3 job on a stack that runs either engine
    (PerfStyle.zero3_runs_deepspeed: HF Trainer / accelerate): DeepSpeed's where the job writes zero: 3 without fsdp
    (step_time._deepspeed_engine_options), FSDP's where it writes fsdp; {} otherwise."""
    s = scenario.strategy
    if s.zero < 3 or not perf_style(style).zero3_runs_deepspeed:
        return {}
    if s.fsdp != "none":
        return {"zero3_engine": {"assumed": "fsdp"}}
    # the bucket sizes DeepSpeed's engine runs: the job's, or the stack's ("auto": the HF Trainer's fill)
    from trainsizer.estimate.framework import deepspeed_zero3_buckets

    mode = s.zero3_bucket_sizes or perf_style(style).zero3_bucket_sizes
    prefetch, persist, reduce = (float(v) for v in deepspeed_zero3_buckets(mode, scenario.model.hidden))
    return {"zero3_engine": {"assumed": "deepspeed", "bucket_sizes": {
        "requested": s.zero3_bucket_sizes, "assumed": mode, "prefetch_bucket_params": prefetch,
        "persistence_threshold_params": persist, "reduce_bucket_params": reduce}}}


def _checkpoint_impl(scenario: Scenario, style: str) -> dict[str, Any]:
    """{"checkpoint_impl": {"requested" (None = the stack's), "assumed"}} for a job whose ZeRO-3 / FSDP gathers it
    moves (parameters sharded, full recompute: step_time._reentrant_outer_exposed); {} otherwise."""
    s = scenario.strategy
    if s.zero < 3 or s.recompute != "full":
        return {}
    requested = s.checkpoint_impl
    return {"checkpoint_impl": {"requested": requested, "assumed": requested or perf_style(style).checkpoint_impl}}


def _moe_dispatcher(scenario: Scenario, style: str) -> dict[str, Any]:
    """{"moe_dispatcher": {"requested", "assumed"}} for an MoE job on a style whose token dispatcher matters
    (Megatron-Core: alltoall or flex, step_time.moe_alltoall); {} otherwise."""
    import numpy as np

    from trainsizer.estimate.step_time import moe_alltoall, perf_style

    s, system = scenario.strategy, scenario.system
    if not scenario.model.is_moe or system is None or not perf_style(style).moe_host_sync:
        return {}
    alltoall = bool(np.asarray(moe_alltoall(s.moe_dispatcher, system, s.ep, s.tp)).reshape(-1)[0])
    assumed = "alltoall" if alltoall else (s.moe_dispatcher if s.moe_dispatcher in ("hybridep", "deepep") else "flex")
    return {"moe_dispatcher": {"requested": s.moe_dispatcher, "assumed": assumed}}


def _experts_implementation(scenario: Scenario, assumed: str) -> dict[str, Any]:
    """{"experts_implementation": {"requested", "assumed"}} for an MoE job on a stack that runs transformers' MoE code
    (validate.EXPERTS_IMPLEMENTATION_FRAMEWORKS: its routed experts run as a loop with a host sync per expert, or as
    one grouped GEMM, or every expert on every token, framework.experts_implementation_of); {} otherwise. Unstated:
    dense_all for a family the stack runs so (hf: Llama 4), else the style's (hf: grouped_mm, transformers >= 5.0)."""
    from trainsizer.estimate.framework import experts_implementation_of
    from trainsizer.estimate.validate import EXPERTS_IMPLEMENTATION_FRAMEWORKS

    if not scenario.model.is_moe or assumed not in EXPERTS_IMPLEMENTATION_FRAMEWORKS:
        return {}
    requested = scenario.strategy.experts_implementation
    pretraining = scenario.training.method in ("pretrain", "cpt")
    impl = experts_implementation_of(scenario.strategy, scenario.model, pretraining)
    if impl is None:
        impl = "eager" if perf_style(assumed).moe_expert_loop else "grouped_mm"
    return {"experts_implementation": {"requested": requested, "assumed": impl}}


def _zero3_expert_fetch(scenario: Scenario, framework: dict[str, Any]) -> dict[str, Any]:
    """{"zero3_expert_fetch": {"requested", "assumed"}} for an MoE job under DeepSpeed ZeRO-3 (zero 3, no fsdp) on a
    stack whose routed experts DeepSpeed gathers module by module (PerfStyle.zero3_expert_fetch: per_expert, each
    expert linear its own all-gather, or block, one exposed gather a MoE block; step_time._deepspeed_expert_gathers);
    {} otherwise. Unstated: step_time.zero3_expert_fetch_default, with why ("leaf_default": the family's MoE block a
    ZeRO-3 leaf by DeepSpeed >= 0.18.0's default; "eager_experts": the 4.x eager loop; "packed_experts": v5's
    grouped_mm)."""
    from trainsizer.estimate.step_time import zero3_expert_fetch_default

    s = scenario.strategy
    style = perf_style(framework["perf_style"])
    if not scenario.model.is_moe or s.zero < 3 or s.fsdp != "none" or not style.zero3_expert_fetch:
        return {}
    requested = s.zero3_expert_fetch
    if requested is not None:
        return {"zero3_expert_fetch": {"requested": requested, "assumed": requested}}
    eager = framework.get("experts_implementation", {}).get("assumed") == "eager"
    fetch, why = zero3_expert_fetch_default(style.zero3_expert_fetch, eager, style.zero3_leaf_families,
                                            scenario.model.family)
    out = {"requested": None, "assumed": str(fetch)}
    return {"zero3_expert_fetch": out | ({"why": str(why)} if str(why) else {})}


class EstimateResult(TypedDict):
    """What `evaluate` returns (and `trainsizer estimate --json` prints); every section is JSON-ready."""

    job: dict[str, Any]  # Scenario.summary()
    framework: dict[str, Any]  # the stack assumed (framework_assumed)
    memory: dict[str, Any]  # MemoryEstimate.to_dict()
    time: dict[str, Any]  # TimeEstimate.to_dict() without its notes
    cost: dict[str, Any]  # currency, rent and/or buy blocks (low / mid / high)
    energy: dict[str, Any]  # Energy.to_dict() + pue, busy_fraction
    goal: dict[str, Any]  # deadline and budget checks
    calibration: dict[str, Any] | None  # the measured figures used, if any
    accuracy: dict[str, Any]  # the job's class and its held-out accuracy band (accuracy)
    notes: list[str]


class FitAnswers(TypedDict, total=False):
    """What `reverse_questions` returns: the job's name and one entry per question asked."""

    job: str
    # value, per_gpu_gib; when nothing fits (value 0) nothing_fits: {smallest, per_gpu_gib, capacity_gib,
    # breakdown_gib}, the memory the smallest value needs
    max_micro_batch: dict[str, Any]
    max_seq_len: dict[str, Any]  # as max_micro_batch
    max_model: dict[str, Any]  # layers, params_total, per_gpu_gib, how (and nothing_fits)


def capacity_basis(catalog: Catalog, accelerator: str, capacity_gib: float) -> dict[str, Any] | None:
    """Where the fit check's capacity comes from (catalog Accelerator.memory_gib): `driver` (what the runtime hands a
    process, or the driver tool's total, catalog memory_driver), `label` (no reading found: the label or the
    vendor's usable figure) or `given` (an overlay's memory_gib); None for a part not in the catalog."""
    try:
        acc = catalog.accelerator(accelerator)
    except SpecError:
        return None
    driver = acc.memory_driver
    kind = "given" if acc.memory_gib_basis in ("given", "as given in the overlay") else \
        "driver" if acc.memory_driver_gib is not None else "label"
    return {"kind": kind, "accelerator": acc.id, "name": acc.name, "capacity_gib": round(capacity_gib, 3),
            "label_gib": round(acc.memory_label_gib, 3), "label_gb": acc.memory_gb,
            "tool": driver.tool if driver else None,
            "smi_total_gib": round(driver.smi_total_gib, 3) if driver and driver.smi_total_gib else None,
            "cuda_total_gib": driver.cuda_total_gib if driver else None,
            "ecc": driver.ecc if driver else None}


def capacity_note(basis: Mapping[str, Any] | None) -> Any:
    """The sentence a reader gets beside the memory headroom: what the capacity is (en / zh)."""
    if not basis:
        return None
    common = {"cap": f"{basis['capacity_gib']:.1f}", "name": basis["accelerator"], "label": f"{basis['label_gb']:g}"}
    if basis["kind"] == "driver":
        if basis.get("smi_total_gib") and basis.get("cuda_total_gib"):
            return msg("mem_capacity_driver", **common, tool=basis["tool"], smi=f"{basis['smi_total_gib']:.1f}",
                       runtime=DRIVER_TOOL_RUNTIME.get(basis["tool"] or "nvidia-smi", "CUDA"))
        return msg("mem_capacity_driver_tool", **common, tool=basis["tool"] or "nvidia-smi")
    return msg("mem_capacity_given" if basis["kind"] == "given" else "mem_capacity_label", **common)


def capacity_notes(results: Any) -> list[Any]:
    """`capacity_note` once per accelerator of several results (a plan's options: what its GiB/GPU column and
    headroom are measured against)."""
    seen, out = set(), []
    for r in results or ():
        basis = (r.get("memory") or {}).get("capacity_basis")
        if basis and basis.get("accelerator") not in seen:
            seen.add(basis.get("accelerator"))
            out.append(capacity_note(basis))
    return out


def evaluate(scenario: Scenario, catalog: Catalog, calibration: Calibration | None = None) -> EstimateResult:
    """Memory, time, cost, energy and goal for a scenario with hardware and strategy."""
    require_configuration(scenario)
    model, training, system, strategy = scenario.model, scenario.training, scenario.system, scenario.strategy
    notes = list(scenario.notes)
    mem = estimate_memory(model, training, system, strategy)
    # memory's verdict is reported in its own section, so time adds only the strategy warnings
    tm = estimate_time(model, training, system, strategy, calibration, memory_note=False,
                       reliability_kwargs={"figures": failure_figures(catalog.reliability)})
    time_dict = tm.to_dict()
    notes.extend(time_dict.pop("notes"))
    wall_hours = tm.train_days * 24.0
    busy = time_dict["breakdown_s"]["compute"] / tm.step_s if tm.step_s > 0 else 1.0
    pue_range = catalog.facility.pue
    pue = pue_range.mid if pue_range else default_pue()
    en = energy(system.gpus, wall_hours, system.tdp_w, utilisation=busy, pue=pue)
    costs = _costs(scenario, catalog, tm.gpu_hours, wall_hours, en.kwh, notes, mem.host_bytes_per_node / GIB)
    energy_dict = en.to_dict() | {"pue": pue, "busy_fraction": busy}
    goal = _goal(scenario, tm.train_days, costs)
    if "budget" in goal and goal.get("within_budget") is None:
        notes.append(budget_not_checked_note(scenario, costs))
    return {
        "job": scenario.summary(),
        "framework": framework_assumed(scenario),
        "memory": mem.to_dict() | {"capacity_basis": capacity_basis(catalog, system.accelerator, system.memory_gib)},
        "time": time_dict,
        "cost": costs,
        "energy": energy_dict,
        "goal": goal,
        "calibration": calibration.model_dump() if calibration else None,
        "accuracy": accuracy(scenario, catalog, tm.tokens_per_s, tm.train_days, mem.per_gpu_bytes / GIB),
        "notes": notes,
    }


def job_class_of(scenario: Scenario, catalog: Catalog) -> JobClass:
    """The job's accuracy class (estimate.accuracy.job_class) on the part the catalog names: the one classifier the
    estimate and benchmarks/accuracy_bands.py share."""
    from trainsizer.estimate.accuracy import job_class

    arch = catalog.accelerator(scenario.system.accelerator).arch
    return job_class(scenario.model, scenario.training, scenario.system, scenario.strategy, arch)


def accuracy(scenario: Scenario, catalog: Catalog, tokens_per_s: float, train_days: float,
             per_gpu_gib: float) -> dict[str, Any]:
    """How far off the estimate is likely to be: the job's class and the held-out band of time and of peak memory
    (estimate/data/accuracy_bands.yaml), with the tokens/s, days and GiB the band's 10th..90th percentile imply."""
    from trainsizer.estimate.accuracy import band_for, memory_range, time_range

    cls = job_class_of(scenario, catalog)
    time, memory = band_for(cls, "time"), band_for(cls, "memory")
    time["range"] = time_range(time, tokens_per_s, train_days)
    memory["range"] = memory_range(memory, per_gpu_gib)
    return {"class": cls.keys()[0], "time": time, "memory": memory}


def reverse_questions(scenario: Scenario, questions: tuple[str, ...]) -> FitAnswers:
    """The largest micro-batch / sequence length / model depth that fit (memory limits, trainsizer fit)."""
    from trainsizer.estimate.fit import max_layers, max_micro_batch, max_seq_len

    sc = require_configuration(scenario)
    args = (sc.model, sc.training, sc.system, sc.strategy)

    def gib(r: Any) -> dict[str, Any]:
        out = {"per_gpu_gib": r.estimate.to_dict()["per_gpu_gib"] if r.estimate else None}
        if r.at_smallest is not None:  # nothing fits: what the smallest value needs says why
            mem = r.at_smallest.to_dict()
            out["nothing_fits"] = {"smallest": r.smallest, "per_gpu_gib": mem["per_gpu_gib"],
                                   "capacity_gib": mem["capacity_gib"], "breakdown_gib": mem["breakdown_gib"]}
        return out

    out: FitAnswers = {"job": sc.name}
    for q in questions:
        if q == "micro-batch":
            r = max_micro_batch(*args)
            out["max_micro_batch"] = {"value": r.value, **gib(r)}
        elif q == "seq-len":
            r = max_seq_len(*args)
            out["max_seq_len"] = {"value": r.value, **gib(r)}
        elif q == "model":
            r = max_layers(*args)
            out["max_model"] = {"layers": r.value,
                                "params_total": sc.model.with_(layers=r.value).params_total if r.value else 0,
                                **gib(r), "how": f"{sc.model.name} architecture scaled in depth"}
        else:
            raise SpecError("--what", msg("fit_unknown_question"), value=q, allowed=["micro-batch", "seq-len", "model"])
    return out
