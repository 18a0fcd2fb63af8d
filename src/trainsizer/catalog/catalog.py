"""The Catalog object: validated records, cross-reference checks, lookups and price/facility accessors."""

from __future__ import annotations

import datetime as _dt
import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainsizer.catalog import records as r
from trainsizer.catalog.age import STALE_AFTER_DAYS, PriceAge, price_age
from trainsizer.catalog.loader import DATA_DIR, RawEntry, load_raw, validate_entry
from trainsizer.errors import KIND_KEYS, SpecError, unknown_name
from trainsizer.messages import msg

CURRENCIES = ("USD", "CNY")  # as records.PriceRange.currency allows


@dataclass(frozen=True)
class Facility:
    """Facility figures (electricity, PUE, colocation, rack power), id -> Figure."""

    figures: dict[str, r.Figure]

    def figure(self, figure_id: str) -> r.Figure:
        if figure_id not in self.figures:
            raise unknown_name("facility", "facility figure", figure_id, self.figures)
        return self.figures[figure_id]

    @property
    def electricity_usd_per_kwh(self) -> r.Figure:
        return self.figure("electricity-usd-per-kwh")

    @property
    def electricity_cny_per_kwh(self) -> r.Figure:
        return self.figure("electricity-cny-per-kwh")

    @property
    def pue(self) -> r.Figure:
        return self.figure("pue")

    @property
    def rack_kw_air(self) -> r.Figure:
        return self.figure("rack-kw-air")

    @property
    def rack_kw_liquid(self) -> r.Figure:
        return self.figure("rack-kw-liquid")

    @property
    def colocation_usd_per_kw_month(self) -> r.Figure:
        return self.figure("colocation-usd-per-kw-month")

    def electricity_per_kwh(self, currency: str = "USD") -> r.Figure:
        return self.figure(f"electricity-{_currency(currency).lower()}-per-kwh")

    def to_dict(self) -> dict[str, Any]:
        return {k: v.to_dict() for k, v in self.figures.items()}


@dataclass(frozen=True)
class Reliability:
    """Failure-rate planning figures, the datasets behind them, and checkpoint formulas (text)."""

    figures: dict[str, r.Figure]
    datasets: dict[str, r.ReliabilityDataset]
    formulas: dict[str, r.Formula]

    def figure(self, figure_id: str) -> r.Figure:
        if figure_id not in self.figures:
            raise unknown_name("reliability", "reliability figure", figure_id, self.figures)
        return self.figures[figure_id]

    @property
    def node_failures_per_1000_node_days(self) -> r.Figure:
        return self.figure("node-failures-per-1000-node-days")

    @property
    def per_gpu_mtbf_hours(self) -> r.Figure:
        return self.figure("per-gpu-mtbf-hours")

    @property
    def restart_overhead_minutes(self) -> r.Figure:
        return self.figure("restart-overhead-minutes")

    @property
    def checkpoint_bytes_per_param(self) -> r.Figure:
        return self.figure("checkpoint-bytes-per-param")

    @property
    def hot_spare_fraction(self) -> r.Figure:
        return self.figure("hot-spare-fraction")

    def job_mtbf_hours(self, nodes: int, failures_per_1000_node_days: float | None = None) -> float:
        """Job MTBF with nodes in series: 24 h / (N_nodes * r_f) (Kokolis et al. 2024, arXiv:2410.21680)."""
        if nodes < 1:
            raise SpecError("nodes", msg("spec_ge", limit=1), value=nodes, allowed=">= 1")
        rate = (
            self.node_failures_per_1000_node_days.mid
            if failures_per_1000_node_days is None
            else failures_per_1000_node_days
        )
        if rate <= 0:
            raise SpecError("failures_per_1000_node_days", msg("spec_gt", limit=0), value=rate, allowed="> 0")
        return 24.0 * 1000.0 / (nodes * rate)

    def to_dict(self) -> dict[str, Any]:
        return {
            "figures": {k: v.to_dict() for k, v in self.figures.items()},
            "datasets": {k: v.to_dict() for k, v in self.datasets.items()},
            "formulas": {k: v.to_dict() for k, v in self.formulas.items()},
        }


class Catalog:
    """All catalog records. Build with `load_catalog()`."""

    def __init__(self, built: dict[str, dict[str, Any]], overlays: tuple[Path, ...],
                 origins: dict[tuple[str, str], RawEntry]):
        self.overlays = overlays
        self.sources: dict[str, r.Source] = built["sources"]
        self.vendors: dict[str, r.Vendor] = built["vendors"]
        self.accelerators: dict[str, r.Accelerator] = built["accelerators"]
        self.servers: dict[str, r.Server] = built["servers"]
        self.networks: dict[str, r.Network] = built["networks"]
        self.switches: dict[str, r.Switch] = built["switches"]
        self.storage_tiers: dict[str, r.StorageTier] = built["storage_tiers"]
        self.pcie_generations: dict[str, r.PcieGeneration] = built["pcie_generations"]
        self.prices: dict[str, r.PriceRange] = built["prices"]
        self.price_points: dict[str, r.PricePoint] = built["price_points"]
        self.facility = Facility(built["facility"])
        self.reliability = Reliability(
            built["reliability_figures"], built["reliability_datasets"], built["reliability_formulas"]
        )
        self.collectives: dict[str, r.CollectiveMeasurement] = built["collectives"]
        self.network_formulas: dict[str, r.Formula] = built["network_formulas"]
        self.parts: dict[str, r.Part] = built["parts"]
        self.scale_platforms: dict[str, r.ScalePlatform] = built["scale_platforms"]
        self._origins = origins
        self._alias: dict[str, str] = {}
        for acc in self.accelerators.values():
            for alias in acc.aliases:
                self._alias[alias] = acc.id

    # ------------------------------------------------------------------------------------------ lookups
    def accelerator_ids(self) -> list[str]:
        """Canonical ids and aliases."""
        return sorted([*self.accelerators, *self._alias])

    def resolve_accelerator_id(self, id_or_alias: str) -> str:
        key = str(id_or_alias).strip().lower()
        if key in self.accelerators:
            return key
        if key in self._alias:
            return self._alias[key]
        raise unknown_name(msg("kind_accelerator"), "accelerator", id_or_alias, self.accelerator_ids(),
                           aliases=self._alias, describe=self._accelerator_choice)

    def _accelerator_choice(self, acc_id: str) -> object:
        """An accelerator as an ambiguous name lists it: what tells 'h100-sxm-80gb' from 'h100-pcie-80gb'."""
        acc = self.accelerators[acc_id]
        return msg("accelerator_choice", id=acc.id, memory=f"{acc.memory_gb:g}",
                   link=msg(f"accelerator_link.{acc.scaleup_tech}"))

    def accelerator(self, id_or_alias: str) -> r.Accelerator:
        return self.accelerators[self.resolve_accelerator_id(id_or_alias)]

    def vendor_name(self, code: str, lang: str = "en") -> str:
        """The name people read for a vendor code ('nvidia' -> 'NVIDIA', zh 'NVIDIA（英伟达）') from the `vendors`
        section; a code it does not list (an overlay's own vendor, 'not given') is shown as written."""
        vendor = self.vendors.get(str(code).strip().lower())
        if vendor is None:
            return str(code)
        return (vendor.name_zh or vendor.name) if lang == "zh" else vendor.name

    def server(self, server_id: str) -> r.Server:
        return _get(self.servers, server_id, "server")

    def network(self, network_id: str) -> r.Network:
        return _get(self.networks, network_id, "network")

    def switch(self, switch_id: str) -> r.Switch:
        return _get(self.switches, switch_id, "switch")

    def storage_tier(self, tier_id: str) -> r.StorageTier:
        return _get(self.storage_tiers, tier_id, "storage tier")

    def price_record(self, price_id: str) -> r.PriceRange:
        """A planning price by id (`<kind>-<currency>-<subject>`)."""
        return _get(self.prices, price_id, "price")

    def part(self, part_id: str) -> r.Part:
        return _get(self.parts, part_id, "part")

    def parts_of(self, kind: str) -> list[r.Part]:
        """Parts of one kind (cable, transceiver, rack, ...), in catalog order."""
        return [p for p in self.parts.values() if p.kind == kind]

    def scale_platform_of(self, accelerator_id: str) -> r.ScalePlatform | None:
        """The platform whose documented scale an accelerator shares (None: no documented deployment)."""
        return next((p for p in self.scale_platforms.values() if accelerator_id in p.members), None)

    def source(self, source_id: str) -> r.Source:
        return _get(self.sources, source_id, "source")

    def servers_for(self, accelerator: str, *, include_announced: bool = True) -> list[r.Server]:
        """Servers built around an accelerator (id or alias), in catalog order."""
        acc_id = self.resolve_accelerator_id(accelerator)
        return [s for s in self.servers.values()
                if s.accelerator == acc_id and (include_announced or s.plannable_by_default)]

    def plannable_accelerators(self, named: Iterable[str] = ()) -> list[r.Accelerator]:
        """Accelerators a plan may consider: all but those announced and not shipping, plus any `named`
        explicitly (a job that asks for an announced part gets it)."""
        wanted = {self.resolve_accelerator_id(n) for n in named}
        return [a for a in self.accelerators.values() if a.plannable_by_default or a.id in wanted]

    def coverage_gaps(self) -> list[str]:
        """Accelerators that lack a server, a USD price or (China-market / domestic parts) a CNY price without
        saying so in `none_known`, and `none_known` entries the catalog contradicts. Empty when complete."""
        gaps: list[str] = []
        for acc in self.accelerators.values():
            have = {
                "server": bool(self.servers_for(acc.id)),
                "price_usd": any(self.price(k, acc.id, "USD") for k in ("rent", "purchase")),
                "price_cny": any(self.price(k, acc.id, "CNY") for k in ("rent", "purchase")),
            }
            need = ["server", "price_usd"] + (["price_cny"] if acc.china_market_sku or acc.domestic_china else [])
            gaps += [f"{acc.id}: no {k} record and no none_known.{k} reason" for k in need
                     if not have[k] and k not in acc.none_known]
            gaps += [f"{acc.id}: none_known.{k} but the catalog has one" for k in acc.none_known if have[k]]
            for srv in self.servers_for(acc.id):
                if srv.plannable_by_default and not acc.plannable_by_default:
                    gaps.append(f"{srv.id}: status {srv.status} but its accelerator {acc.id} is {acc.status}")
        return gaps

    # ------------------------------------------------------------------------------------------- prices
    def _subject_id(self, subject: str) -> str:
        key = str(subject).strip().lower()
        if key in self.accelerators or key in self._alias:
            return self.resolve_accelerator_id(key)
        if key in self.servers or key in self.switches:
            return key
        choices = [*self.accelerator_ids(), *self.servers, *self.switches]
        raise unknown_name("price subject", "accelerator, server or switch", subject, choices)

    def price(self, kind: str, subject: str, currency: str = "USD", term: str | None = None) -> r.PriceRange | None:
        """Planning price range for (kind, subject, currency); None when the catalog has none. `term` None: the
        price a job pays (on demand, or the only contract listed); "reserved": the committed-term rental rate.

        An overlay's record wins over a built-in one for the same subject (the last one loaded).
        """
        if kind not in ("purchase", "rent"):
            raise SpecError("price kind", msg("error_unknown_name", kind=msg("kind_price_kind")), value=kind,
                             allowed=["purchase", "rent"])
        cur = _currency(currency)
        sid = self._subject_id(subject)
        found = None
        for rec in self.prices.values():
            if rec.kind == kind and rec.currency == cur and rec.subject == sid and rec.term == term:
                found = rec
        return found

    def rent_reserved_per_gpu_hour(self, accelerator: str, currency: str = "USD") -> r.PriceRange | None:
        """The committed-term (reserved) rental rate per GPU-hour, when the catalog lists one."""
        return self.price("rent", self.resolve_accelerator_id(accelerator), currency, term="reserved")

    def rent_per_gpu_hour(self, accelerator: str, currency: str = "USD") -> r.PriceRange | None:
        return self.price("rent", self.resolve_accelerator_id(accelerator), currency)

    def rent_instance_ram(self, rent: r.PriceRange) -> tuple[list[r.PricePoint], bool]:
        """(the listings behind a rent price that state their instance's host RAM, whether every listing of its
        basis does): what a rented layout keeping states in host RAM can be held to (evaluate._rent_host_ram)."""
        points = [self.price_points[b] for b in rent.basis if b in self.price_points]
        known = [p for p in points if p.ram_gib_per_gpu is not None]
        return known, bool(points) and len(known) == len(points)

    def rent_usd_per_gpu_hour(self, accelerator: str) -> r.PriceRange | None:
        return self.rent_per_gpu_hour(accelerator, "USD")

    def rent_cny_per_gpu_hour(self, accelerator: str) -> r.PriceRange | None:
        return self.rent_per_gpu_hour(accelerator, "CNY")

    def purchase(self, subject: str, currency: str = "USD") -> r.PriceRange | None:
        """Purchase price of an accelerator (per GPU), server (per server / rack) or switch."""
        return self.price("purchase", subject, currency)

    def purchase_usd(self, subject: str) -> r.PriceRange | None:
        return self.purchase(subject, "USD")

    def purchase_cny(self, subject: str) -> r.PriceRange | None:
        return self.purchase(subject, "CNY")

    def price_age(self, price: r.PriceRange | r.PricePoint | str, today: _dt.date | None = None,
                  stale_after_days: int = STALE_AFTER_DAYS) -> PriceAge:
        """Age of a price (record or price id) on `today` (default: the local date); `stale` past a year."""
        rec = self.price_record(price) if isinstance(price, str) else price
        return price_age(rec.date, today, projection=rec.projection, stale_after_days=stale_after_days)

    def stale_prices(self, today: _dt.date | None = None,
                     stale_after_days: int = STALE_AFTER_DAYS) -> dict[str, PriceAge]:
        """Planning prices older than `stale_after_days` on `today`, by price id."""
        ages = {pid: self.price_age(p, today, stale_after_days) for pid, p in self.prices.items()}
        return {pid: age for pid, age in ages.items() if age.stale}

    # ------------------------------------------------------------------------------------------- output
    def records(self) -> Iterable[tuple[str, r.Record]]:
        """(section, record) for every record with sources (all but the source registry)."""
        sections = {
            "vendors": self.vendors,
            "accelerators": self.accelerators,
            "servers": self.servers,
            "networks": self.networks,
            "switches": self.switches,
            "storage_tiers": self.storage_tiers,
            "pcie_generations": self.pcie_generations,
            "prices": self.prices,
            "price_points": self.price_points,
            "facility": self.facility.figures,
            "reliability_figures": self.reliability.figures,
            "reliability_datasets": self.reliability.datasets,
            "reliability_formulas": self.reliability.formulas,
            "collectives": self.collectives,
            "network_formulas": self.network_formulas,
            "parts": self.parts,
            "scale_platforms": self.scale_platforms,
        }
        for name, body in sections.items():
            for rec in body.values():
                yield name, rec

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"overlays": [str(p) for p in self.overlays]}
        out["sources"] = {k: v.to_dict() for k, v in self.sources.items()}
        for name, rec in self.records():
            out.setdefault(name, {})[rec.id] = rec.to_dict()
        return out


def _currency(currency: str) -> str:
    """'usd' -> 'USD'; the catalog prices in USD and CNY only."""
    cur = str(currency).upper()
    if cur not in CURRENCIES:
        raise SpecError("currency", msg("error_unknown_name", kind=msg("kind_currency")), value=currency,
                        allowed=CURRENCIES)
    return cur


def _get(table: dict[str, Any], key: str, kind: str) -> Any:
    k = str(key).strip().lower()
    if k not in table:
        where = msg(KIND_KEYS[kind]) if kind in KIND_KEYS else kind  # the kind as the place, in the reader's words
        raise unknown_name(where, kind, key, table)
    return table[k]


# -------------------------------------------------------------------------------------------- building
def _inject_pcie(raw: dict[str, dict[str, RawEntry]], gens: dict[str, r.PcieGeneration]) -> None:
    by_gen = {g.gen: g for g in gens.values()}
    for acc_id, entry in raw["accelerators"].items():
        data = entry.data
        if data.get("pcie_gb_s") is not None:
            continue
        gen = data.get("pcie_gen")
        if isinstance(gen, int) and gen in by_gen:
            entry.data = {**data, "pcie_gb_s": by_gen[gen].x16_gb_s_per_dir}
        elif gen is not None:
            file = entry.field_files.get("pcie_gen", entry.file)
            raise SpecError(f"{file}: accelerators.{acc_id}.pcie_gen", msg("cat_no_pcie_figure"),
                            value=gen, allowed=sorted(by_gen))


def _check_refs(cat: Catalog) -> None:
    def where(section: str, rid: str, fld: str) -> str:
        entry = cat._origins.get((section, rid))  # the file that set this field: an overlay, or the built-in one
        return f"{entry.field_files.get(fld, entry.file) if entry else '?'}: {section}.{rid}.{fld}"

    for section, rec in cat.records():
        for sid in sorted(rec.source_ids()):
            if sid not in cat.sources:
                raise unknown_name(where(section, rec.id, "sources"), "source id", sid, cat.sources)
    seen: dict[str, str] = {}
    for acc in cat.accelerators.values():
        for alias in acc.aliases:
            if alias in cat.accelerators or alias in seen:
                other = alias if alias in cat.accelerators else seen[alias]
                raise SpecError(where("accelerators", acc.id, "aliases"), msg("cat_alias_taken", other=other),
                                value=alias, allowed=msg("cat_allowed_free_alias"))
            seen[alias] = acc.id
    acc_names = [*cat.accelerators, *seen]

    def canon(value: str | None, where_: str) -> str | None:
        # references may use an alias; records store the canonical id
        if value is None or value in cat.accelerators:
            return value
        if value in seen:
            return seen[value]
        raise unknown_name(where_, "accelerator", value, acc_names)

    for table, section in ((cat.servers, "servers"), (cat.collectives, "collectives"),
                           (cat.reliability.datasets, "reliability_datasets")):
        for rid, rec in list(table.items()):
            fixed = canon(rec.accelerator, where(section, rid, "accelerator"))
            if fixed != rec.accelerator:
                table[rid] = rec.model_copy(update={"accelerator": fixed})
    _check_platform_members(cat, canon, where)
    for net in cat.networks.values():
        if net.switch is not None and net.switch not in cat.switches:
            raise unknown_name(where("networks", net.id, "switch"), "switch", net.switch, cat.switches)
    for meas in cat.collectives.values():
        if meas.network is not None and meas.network not in cat.networks:
            raise unknown_name(where("collectives", meas.id, "network"), "network", meas.network, cat.networks)
    subjects = [*cat.accelerators, *cat.servers, *cat.switches]
    for pid, price in list(cat.prices.items()):
        subject = seen.get(price.subject, price.subject)
        if subject not in subjects:
            raise unknown_name(where("prices", pid, "subject"), "price subject (accelerator, server or switch)",
                               price.subject, [*subjects, *seen])
        if subject != price.subject:
            cat.prices[pid] = price.model_copy(update={"subject": subject})
        for pp in price.basis:
            if pp not in cat.price_points:
                raise unknown_name(where("prices", pid, "basis"), "price point", pp, cat.price_points)


def _check_platform_members(cat: Catalog, canon: Any, where: Any) -> None:
    """Platform members are catalog accelerators (aliases become ids), each in one platform at most."""
    owner: dict[str, str] = {}
    for pid, plat in list(cat.scale_platforms.items()):
        members = tuple(canon(m, where("scale_platforms", pid, "members")) for m in plat.members)
        for m in members:
            if owner.setdefault(m, pid) != pid:
                raise SpecError(where("scale_platforms", pid, "members"), msg("cat_platform_taken", other=owner[m]),
                                value=m, allowed=msg("cat_allowed_one_platform"))
        if members != plat.members:
            cat.scale_platforms[pid] = plat.model_copy(update={"members": members})


def build_catalog(overlays: Sequence[Path] = (), data_dir: Path = DATA_DIR) -> Catalog:
    raw = load_raw(overlays, data_dir)
    built: dict[str, dict[str, Any]] = {}
    origins: dict[tuple[str, str], RawEntry] = {}
    order = ["sources", "pcie_generations", *[s for s in raw if s not in ("sources", "pcie_generations")]]
    for section in order:
        if section == "accelerators":
            _inject_pcie(raw, built["pcie_generations"])
        built[section] = {}
        for entry_id, entry in raw[section].items():
            built[section][entry_id] = validate_entry(section, entry_id, entry)
            origins[(section, entry_id)] = entry
    cat = Catalog(built, tuple(Path(p) for p in overlays), origins)
    _check_refs(cat)
    return cat


@functools.lru_cache(maxsize=1)
def _default_catalog() -> Catalog:
    return build_catalog(())


def load_catalog(overlays: Sequence[Path | str] = ()) -> Catalog:
    """The built-in catalog, with user overlay files applied in order. No overlays -> cached instance."""
    paths = tuple(Path(p) for p in overlays)
    if not paths:
        return _default_catalog()
    return build_catalog(paths)
