"""The `risks` block: the guides' pitfalls and more, each triggered by the plan's own numbers, with the
evidence, a mitigation and the source of the rule. Only triggered risks are listed."""

from __future__ import annotations

from collections.abc import Callable

from trainsizer.plan.buildout import rules
from trainsizer.plan.buildout.common import Block
from trainsizer.plan.buildout.inputs import BuildInput


class Risk(Block):
    id: str
    severity: str  # high | medium | low
    evidence: str
    mitigation: str
    source: str


class Ctx:
    """The blocks a risk rule reads."""

    def __init__(self, b: BuildInput, blocks: dict) -> None:
        self.b, self.blocks = b, blocks


def _tp_across_pcie(c: Ctx) -> Risk | None:
    s, acc = c.b.strategy, c.b.accelerator
    domain = c.blocks["network"].nvlink.gpus_per_domain
    if s.tp > 1 and (acc.scaleup_tech in ("pcie", "nvlink-bridge") or s.tp > domain):
        return Risk(id="tp_across_slow_links", severity="high",
                    evidence=f"tp {s.tp} over {acc.scaleup_tech} (NVLink domain {domain} GPUs)",
                    mitigation="keep TP inside one NVLink domain; use PP/FSDP across PCIe or nodes",
                    source="guide_000")
    return None


def _slow_network(c: Ctx) -> Risk | None:
    b = c.b
    need = rules.rule("risks", "min_node_gbps_multi_node")
    have = b.nics_per_node * b.gbps_per_nic
    if b.nodes > 1 and have < need.value:
        return Risk(id="multi_node_on_slow_network", severity="high",
                    evidence=f"{b.nodes} nodes with {b.nics_per_node} x {b.gbps_per_nic:g} Gb/s = {have:g} Gb/s per node",
                    mitigation=f"at least {need.value} Gb/s per node (e.g. 8x NDR400 or 4x 200G IB), or fewer nodes",
                    source=need.source)
    return None


def _checkpoint_stall(c: Ctx) -> Risk | None:
    st = c.blocks["storage"]
    if st.kind != "node_local":
        return None
    tier = c.b.catalog.storage_tier(st.tier_catalog_id)
    write = tier.write_gb_s_per_node.low * c.b.nodes
    stall = st.checkpoint_gb / write / (st.checkpoint_interval_min.value * 60)
    if stall > st.stall_share_target.value:
        return Risk(id="checkpoint_stall", severity="medium",
                    evidence=f"{st.checkpoint_gb:.0f} GB at {write:g} GB/s every {st.checkpoint_interval_min.value:.0f} min "
                             f"= {stall:.1%} of time",
                    mitigation="async checkpointing (DCP async_save / Megatron --async-save) or faster storage",
                    source="storage_rules_ref")
    return None


def _rack_power(c: Ctx) -> Risk | None:
    f = c.blocks["facility"]
    if f.over_rack_budget:
        return Risk(id="rack_power_over_site_limit", severity="high",
                    evidence=f"one node {f.node_kw_max:.1f} kW > rack budget {f.rack_kw_budget.value:g} kW",
                    mitigation="raise the rack budget (high-density or liquid-cooled racks) or choose smaller nodes",
                    source="guide_000")
    if f.rack_kw_max > rules.value("facility", "air_rack_kw_limit_guides") and f.cooling.value != "liquid":
        return Risk(id="air_cooling_limit", severity="medium",
                    evidence=f"{f.rack_kw_max:.1f} kW per rack, cooling: {f.cooling.value}",
                    mitigation="containment or rear-door heat exchangers; confirm with the site; or fewer nodes per rack",
                    source="guide_000")
    return None


def _consumer(c: Ctx) -> Risk | None:
    acc = c.b.accelerator
    if not acc.ecc or "consumer" in (acc.form_factor or "").lower():
        return Risk(id="consumer_cards_in_production", severity="high",
                    evidence=f"{acc.name}: ECC {acc.ecc}, {acc.form_factor}",
                    mitigation="data-center cards for production (ECC, P2P, NCCL support, data-center driver licence); "
                               "consumer cards for experiments only",
                    source="guide_003")
    return None


def _export(c: Ctx) -> Risk | None:
    acc, market = c.b.accelerator, c.b.job.constraints.market
    if acc.china_export_restricted and market in ("china", "china-domestic"):
        return Risk(id="export_control_availability", severity="high",
                    evidence=f"{acc.id} is export-restricted and constraints.market is {market}",
                    mitigation="China-market SKUs (H20, L20) or domestic accelerators (Ascend 910B); check current rules",
                    source="us_bis_3a090")
    return None


def _single_node(c: Ctx) -> Risk | None:
    b = c.b
    limit = rules.rule("risks", "single_node_gpus_max")
    goal = b.evaluation.get("goal", {})
    if b.nodes == 1 and b.per_node >= limit.value and goal.get("meets_deadline") is False:
        return Risk(id="single_node_ceiling", severity="high",
                    evidence=f"{b.per_node} GPUs in one node and the deadline is missed ({b.train_days:.1f} days)",
                    mitigation="scale out: several nodes on an RDMA fabric (see the network block)", source=limit.source)
    return None


def _loader(c: Ctx) -> Risk | None:
    st = c.blocks["storage"]
    if st.read_gb_s_tier < st.loader_read_gb_s.value:
        return Risk(id="storage_too_slow_for_loader", severity="high",
                    evidence=f"tier reads {st.read_gb_s_tier:g} GB/s, the loader needs {st.loader_read_gb_s.value:g}",
                    mitigation="more storage appliances or cache the dataset on local NVMe", source="superpod_h100_ra")
    return None


def _deadline(c: Ctx) -> Risk | None:
    b, goal = c.b, c.b.job.goal
    slack = rules.rule("risks", "deadline_slack")
    if goal.deadline_days is None:
        return None
    mtbf_h = c.blocks["storage"].job_mtbf_h
    failures = b.train_days * 24.0 / mtbf_h if mtbf_h > 0 else 0.0
    if b.train_days > slack.value * goal.deadline_days:
        return Risk(id="deadline_slack", severity="high" if b.train_days > goal.deadline_days else "medium",
                    evidence=f"{b.train_days:.1f} days incl. ~{failures:.1f} expected failures vs deadline "
                             f"{goal.deadline_days:g} days",
                    mitigation="more GPUs, hot spares, faster restart (in-memory checkpoints), or a later deadline",
                    source=slack.source)
    return None


def _memory(c: Ctx) -> Risk | None:
    mem = c.b.evaluation.get("memory", {})
    floor = rules.rule("risks", "memory_headroom_min")
    cap, used = mem.get("capacity_gib") or 0.0, mem.get("per_gpu_gib") or 0.0
    if cap and (not mem.get("fits", True) or (cap - used) / cap < floor.value):
        return Risk(id="gpu_memory_headroom", severity="high" if not mem.get("fits", True) else "medium",
                    evidence=f"{used:.1f} of {cap:.1f} GiB per GPU", source=floor.source,
                    mitigation="more recompute, a larger ZeRO stage / TP, or a smaller micro-batch")
    return None


def _unpriced(c: Ctx) -> Risk | None:
    bom = c.blocks.get("bom")
    if bom is not None and bom.unpriced:
        return Risk(id="budget_incomplete", severity="low", evidence=f"{len(bom.unpriced)} BOM lines have no sourced "
                    f"price: {', '.join(bom.unpriced[:4])}", mitigation="get quotes and add them with --catalog",
                    source="convention")
    return None


RULES: tuple[Callable[[Ctx], Risk | None], ...] = (
    _tp_across_pcie, _slow_network, _checkpoint_stall, _rack_power, _consumer, _export, _single_node, _loader,
    _deadline, _memory, _unpriced)


def risks_block(b: BuildInput, blocks: dict) -> list[Risk]:
    ctx = Ctx(b, blocks)
    return [r for r in (rule(ctx) for rule in RULES) if r is not None]
