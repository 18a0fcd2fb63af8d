"""Hardware options a job may use: catalog accelerator x the server it comes in x network x GPU count.

The job's constraints decide what is allowed: `include` / `exclude`, the market (export rules, domestic
accelerators), `cooling` and `rack_kw` (the server must fit one rack), `max_nodes` / `max_gpus`, and the
training precision (the accelerator needs a dense tensor peak for it). A pinned field (the job's `hardware`,
or a CLI flag) fixes that dimension. Every accelerator left out is named with the reason, so a plan can say
why a familiar card is missing.

Networks: a server's scale-out fabric is the catalog networks of its NIC line rate (InfiniBand or RoCE),
with the server's NIC count. Two fabrics that cost the same in the plan's cost model (accelerator prices
only) and differ only in efficiency and latency are not both searched: the one that is no faster in either
is dominated and dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from trainsizer.errors import SpecError
from trainsizer.estimate.calibration import load_constants
from trainsizer.messages import msg
from trainsizer.scenario import (
    NetworkView,
    Scenario,
    catalog_network_view,
    check_per_node,
    custom_network_view,
    network_view,
    spans_scaleout,
)
from trainsizer.search.config import SearchConfig, node_ladder
from trainsizer.spec import NetworkSpec

SCALE_OUT_KINDS = ("ib", "roce")  # fabrics a buyer or a neocloud offers for any server


@dataclass(frozen=True)
class Pins:
    """Dimensions of the hardware fixed by the job's `hardware` or by command-line flags (None: search)."""

    accelerator: str | None = None
    count: int | None = None
    per_node: int | None = None
    network: str | NetworkSpec | None = None
    fabric: Any = None  # the job's hardware.fabric (spec.FabricSpec): not searched, applied to every option

    @property
    def any(self) -> bool:
        return any(v is not None for v in (self.accelerator, self.count, self.per_node, self.network))


@dataclass(frozen=True)
class Reason:
    """Why an accelerator or server is not searched: a code and its fields (the plan words it, zh/en).

    Codes: pinned, exclude, include, announced (catalog status: not shipping yet), domestic (market
    china-domestic), export (export-restricted for the China market), china_only (a China-market part, market
    global), precision, host (a pinned per-node
    count its host does not hold), cooling, rack_kw."""

    code: str
    fields: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class HardwareOption:
    """One hardware configuration to search strategies on."""

    accelerator: Any  # catalog Accelerator
    server: Any | None  # catalog Server (None: no catalog server; a generic box of `per_node` cards)
    per_node: int
    count: int
    network: NetworkView | None
    fabric: Any = None  # spec.FabricSpec: the job's oversubscribed fabric (None: non-blocking)
    named_server: bool = False  # the key names the server: another server record gives the same accelerator x count

    @property
    def nodes(self) -> int:
        return max(1, -(-self.count // self.per_node))

    @property
    def key(self) -> str:
        net = f" {self.network.id}" if self.network is not None and self.nodes > 1 else ""
        server = f" {self.server.id}" if self.named_server and self.server is not None else ""
        return f"{self.accelerator.id} x{self.count}{net}{server}"


@dataclass
class Candidates:
    options: list[HardwareOption] = field(default_factory=list)
    excluded: dict[str, tuple[Reason, ...]] = field(default_factory=dict)  # accelerator id -> why not searched
    dominated_networks: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _precision_ok(acc: Any, precision: str, fp8_recipe: str = "auto") -> bool:
    """The accelerator has a dense tensor peak for the precision; an FP4-peak recipe (NVFP4) also needs the FP4
    tensor cores of a family that runs it (perf_constants.yaml fp8.fp4_recipes), and a recipe only some parts run
    (fp8.recipe_families: blockwise) one of those parts, as the estimate requires."""
    key = "tf32" if precision == "fp32" and acc.tflops_dense.get("tf32") else precision
    k = load_constants()
    families = k.fp4_recipes.get(fp8_recipe) if precision == "fp8" else None
    if families is not None and not (acc.tflops_dense.get("fp4") and acc.id.lower().startswith(tuple(families))):
        return False
    parts = k.fp8_recipe_families.get(fp8_recipe) if precision == "fp8" else None
    if parts is not None and not acc.id.lower().startswith(parts):
        return False
    return bool(acc.tflops_dense.get(key))


def _accelerator_reason(acc: Any, scenario: Scenario, listed: dict[str, set[str] | None], pins: Pins) -> Reason | None:
    """Why `acc` may not be used (None: it may)."""
    c = scenario.job.constraints
    if pins.accelerator is not None and acc.id != pins.accelerator:
        return Reason("pinned")
    if acc.id in (listed["exclude"] or set()):
        return Reason("exclude")
    include = listed["include"]
    if include is not None and acc.id not in include:
        return Reason("include")
    explicit = include is not None or pins.accelerator is not None
    if not getattr(acc, "plannable_by_default", True) and not explicit:  # catalog status 'announced'
        return Reason("announced")
    if c.market == "china-domestic" and not acc.domestic_china and not explicit:
        return Reason("domestic")
    if c.market in ("china", "china-domestic") and acc.china_export_restricted and not explicit:
        return Reason("export")
    if c.market == "global" and (acc.china_market_sku or acc.domestic_china) and not explicit:
        # H20 / H800 / A800 / L20 / RTX PRO 6000D are NVIDIA's China SKUs and Ascend is a Chinese domestic part
        # (catalog china_market_sku / domestic_china): not what a buyer outside China is offered
        return Reason("china_only")
    tr = scenario.training
    if not _precision_ok(acc, tr.precision, tr.fp8_recipe):
        k = load_constants()
        by_recipe = tr.precision == "fp8" and (tr.fp8_recipe in k.fp4_recipes or tr.fp8_recipe in k.fp8_recipe_families)
        return Reason("precision", (("precision", tr.fp8_recipe if by_recipe else tr.precision),))
    return _host_reason(acc, pins)


def _host_reason(acc: Any, pins: Pins) -> Reason | None:
    """A pinned `--per-node` larger than the accelerator's host (scenario.check_per_node): an error when the
    accelerator is pinned too, else the accelerator is left out with the reason (8 per node pins the HGX
    servers; a GB200 NVL72 tray holds 4)."""
    if pins.per_node is None:
        return None
    try:
        check_per_node(acc, pins.per_node, "--per-node")
    except SpecError:
        if pins.accelerator is not None:
            raise
        return Reason("host", (("host", str(acc.host_gpus_max)), ("per_node", str(pins.per_node))))
    return None


def _server_reason(server: Any, scenario: Scenario) -> Reason | None:
    c = scenario.job.constraints
    if c.cooling in ("air", "rear-door") and server.cooling_kind not in ("air", "air_or_liquid"):  # doors cool air
        return Reason("cooling", (("server", server.id), ("cooling", msg(f"server_cooling_{server.cooling_kind}")),
                                  ("asked", msg(f"job_cooling_{c.cooling}"))))
    if c.rack_kw is not None and server.power_max_w / 1000.0 > c.rack_kw:
        return Reason("rack_kw", (("server", server.id), ("kw", f"{server.power_max_w / 1000:.1f}"),
                                  ("rack_kw", f"{c.rack_kw:g}")))
    return None


def _pinned_network(spec: str | NetworkSpec, catalog: Any, per_node: int) -> NetworkView:
    """The job's network on nodes of `per_node` GPUs (a catalog network keeps its NICs per GPU, as `estimate`)."""
    if isinstance(spec, NetworkSpec):
        return custom_network_view(spec, catalog)
    return catalog_network_view(catalog.network(spec), per_node)


def _nic_kinds(server: Any) -> tuple[str, ...]:
    """RoCE only for servers whose NICs are Ethernet-only (Gaudi's on-die RoCE, Ascend's integrated ports)."""
    nic = (server.nics.model or "").lower()
    if "roce" in nic and not re.search(r"\bib\b|infiniband|vpi", nic):
        return ("roce",)
    return SCALE_OUT_KINDS


def _host_gpus(acc: Any, server: Any | None) -> int:
    """GPUs per node: the accelerator's host (GB200 NVL72: a 4-GPU compute tray), else the server's GPUs."""
    if getattr(acc, "host_gpus", None):
        return int(acc.host_gpus)
    return int(server.gpus) if server is not None else 8


def server_networks(server: Any, catalog: Any, dominated: list[str], per_node: int | None = None) -> list[NetworkView]:
    """Scale-out fabrics that suit `server` (its NIC line rate, its NICs per GPU), dominated ones dropped."""
    kinds = _nic_kinds(server)
    nics = max(1, round(server.nics.count * (per_node or server.gpus) / server.gpus))
    views = [network_view(n, nics) for n in catalog.networks.values()
             if n.kind in kinds and n.gbps_per_nic == server.nics.gbps]
    keep = []
    for v in views:
        beaten = any(o is not v and o.node_gb_s >= v.node_gb_s and o.latency_us <= v.latency_us
                     and (o.node_gb_s, -o.latency_us) != (v.node_gb_s, -v.latency_us) for o in views)
        if beaten:
            dominated.append(f"{server.id}: {v.id}")
        else:
            keep.append(v)
    return keep


def _counts(per_node: int, multi_node: bool, max_gpus: int, max_nodes: int | None, cfg: SearchConfig) -> list[int]:
    """GPU counts: powers of two inside one node, then whole nodes on the ladder."""
    counts = {n for n in (1, 2, 4, 8, 16, 32, 64) if n < per_node} | {per_node}
    if multi_node:
        top = max_gpus // per_node
        if max_nodes is not None:
            top = min(top, max_nodes)
        counts |= {n * per_node for n in node_ladder(top, cfg.node_ladder_steps_per_doubling)} if top >= 1 else set()
    return sorted(c for c in counts if c <= max_gpus)


def _servers_of(acc: Any, scenario: Scenario, catalog: Any, excluded: dict[str, str]) -> list[Any] | None:
    """The accelerator's distinct server shapes that meet the constraints; [] for no catalog server;
    None when every server is ruled out (reason recorded)."""
    servers = catalog.servers_for(acc.id)
    if not servers:
        return []
    ok, reasons, shapes = [], [], set()
    for s in servers:
        why = _server_reason(s, scenario)
        if why:
            reasons.append(why)
            continue
        shape = (s.gpus, s.nics.count, s.nics.gbps)  # DGX and HGX of one GPU are the same layout here
        if shape not in shapes:
            shapes.add(shape)
            ok.append(s)
    if not ok:
        excluded[acc.id] = tuple(reasons)
        return None
    return ok


def hardware_candidates(scenario: Scenario, catalog: Any, pins: Pins, listed: dict[str, set[str] | None],
                        cfg: SearchConfig) -> Candidates:
    """Every hardware option the job allows (see module docstring)."""
    c = scenario.job.constraints
    out = Candidates()
    max_gpus = c.max_gpus if c.max_gpus is not None else cfg.default_max_gpus
    if pins.count is not None:
        max_gpus = pins.count
    for acc in sorted(catalog.accelerators.values(), key=lambda a: a.id):
        why = _accelerator_reason(acc, scenario, listed, pins)
        if why:
            if why.code != "pinned":
                out.excluded[acc.id] = (why,)
            continue
        servers = _servers_of(acc, scenario, catalog, out.excluded)
        if servers is None:
            continue
        for server in servers or [None]:
            per_node = pins.per_node or _host_gpus(acc, server)
            if pins.network is not None:
                nets: list[NetworkView | None] = [_pinned_network(pins.network, catalog, per_node)]
            elif server is not None:
                nets = list(server_networks(server, catalog, out.dominated_networks, per_node)) or [None]
            else:
                nets = [None]
            for net in nets:
                counts = _counts(per_node, net is not None, max_gpus, c.max_nodes, cfg)
                if pins.count is not None:
                    counts = [pins.count] if (net is not None or not spans_scaleout(acc, pins.count, per_node)) else []
                for n in counts:
                    if n > per_node and n % per_node:
                        continue
                    out.options.append(HardwareOption(acc, server, min(per_node, n) if n <= per_node else per_node,
                                                      n, _option_network(acc, net, n, per_node, pins), pins.fabric))
    out.options = _named(_dedupe(out.options))
    return out


def _option_network(acc: Any, net: NetworkView | None, count: int, per_node: int, pins: Pins) -> NetworkView | None:
    """The compute network an option of `count` GPUs uses: none inside one host, nor inside one rack-scale NVLink
    domain (scenario.spans_scaleout: up to 72 GB200 / GB300 on the trays of one NVL72 rack reach each other over
    NVLink, so the option buys no compute fabric) unless the job pins one."""
    if pins.network is not None and count > per_node:
        return net
    return net if spans_scaleout(acc, count, per_node) else None


def _named(options: list[HardwareOption]) -> list[HardwareOption]:
    """Options whose 'accelerator xN network' would read the same (Ascend 910C across nodes of an Atlas 800T A3 and
    of a CloudMatrix 384) name their server too."""
    seen: dict[str, int] = {}
    for o in options:
        seen[o.key] = seen.get(o.key, 0) + 1
    return [replace(o, named_server=True) if seen[o.key] > 1 else o for o in options]


def _dedupe(options: list[HardwareOption]) -> list[HardwareOption]:
    """One option per physical layout: single-node options do not depend on the scale-out network, nor on which
    of the accelerator's server records holds the node (Ascend 910C on 8 processors is one Atlas 800T A3 node
    whether the catalog lists it as that server or as a CloudMatrix 384 supernode: the first record, the vendor's
    reference server, is kept; two options reading 'ascend-910c x8' were listed before)."""
    seen: set[tuple] = set()
    kept = []
    for o in options:
        single = o.count <= o.per_node
        key = (o.accelerator.id, None if single else (o.server.id if o.server else None), o.per_node, o.count,
               o.network.id if o.network else None)
        if key not in seen:
            seen.add(key)
            kept.append(o)
    return kept
