"""The `risks` block: the guides' pitfalls and more, each triggered by the plan's own numbers, with the
evidence, a mitigation and the source of the rule. Only triggered risks are listed, and only where they can
happen: the rack power and air-cooling risks where the plan has racks of its own (a cluster, one rack server; the
facility block's rack figures are 0 on a rented or workstation site), the unpriced-budget risk on a purchase; a
rented plan's mitigations ask the provider instead of ordering parts."""

from __future__ import annotations

from collections.abc import Callable

from trainsizer.evaluate import capacity_note, host_ram_extensible, host_ram_fixed
from trainsizer.messages import msg
from trainsizer.plan.buildout import rules
from trainsizer.plan.buildout.common import Block
from trainsizer.plan.buildout.facility import COOLING_KEYS
from trainsizer.plan.buildout.inputs import BuildInput
from trainsizer.plan.buildout.phases import acquisition
from trainsizer.plan.texts import MessageRef, as_msg, listed
from trainsizer.scenario import SPARE_HOSTS_PER_DOMAIN, domain_job_gpus
from trainsizer.search.config import leaves_floor


class Risk(Block):
    id: str
    severity: str  # high | medium | low
    evidence: str
    evidence_msg: MessageRef | None = None  # the catalogue message of `evidence` (plan/texts.py)
    mitigation: str
    mitigation_msg: MessageRef | None = None
    source: str


def _by_site(b: BuildInput, key: str) -> str:
    """The mitigation's message for how the cluster is had: a rented one is changed by asking the provider (an
    instance type, a storage tier), not by ordering parts (`<key>_rented`)."""
    return f"{key}_rented" if acquisition(b) == "rent" else key


class Ctx:
    """The blocks a risk rule reads."""

    def __init__(self, b: BuildInput, blocks: dict) -> None:
        self.b, self.blocks = b, blocks


def _tp_across_pcie(c: Ctx) -> Risk | None:
    """TP beyond the GPUs' fast links. A PCIe card's node is drawn as its 'domain' (network.nvlink_domain), but
    its own link is none (pcie) or a bridged pair (nvlink-bridge): the evidence names that, not an NVLink domain
    of the node's size."""
    s, acc = c.b.strategy, c.b.accelerator
    domain = c.blocks["network"].nvlink.gpus_per_domain
    if s.tp > 1 and (acc.scaleup_tech in ("pcie", "nvlink-bridge") or s.tp > domain):
        if acc.scaleup_tech == "pcie":
            evidence = msg("risk_ev_tp_no_nvlink", tp=s.tp, acc=acc.id)
        else:
            linked = int(acc.scaleup_domain) if acc.scaleup_tech == "nvlink-bridge" else domain
            evidence = msg("risk_ev_tp_slow_links", tp=s.tp, tech=acc.scaleup_tech, domain=linked)
        return Risk(id="tp_across_slow_links", severity="high",
                    evidence=evidence,
                    mitigation=msg("risk_fix_tp_slow_links"),
                    source="guide_000")
    return None


def _slow_network(c: Ctx) -> Risk | None:
    b = c.b
    need = rules.rule("risks", "min_node_gbps_multi_node")
    have = b.nics_per_node * b.gbps_per_nic
    if b.nodes > 1 and have < need.value and b.scenario.network is not None:  # none: one NVLink domain
        return Risk(id="multi_node_on_slow_network", severity="high",
                    evidence=msg("risk_ev_slow_network", nodes=b.nodes, nics=b.nics_per_node,
                                 gbps=f"{b.gbps_per_nic:g}", have=f"{have:g}"),
                    mitigation=msg(_by_site(b, "risk_fix_slow_network"), need=need.value),
                    source=need.source)
    return None


def _server_nics(c: Ctx) -> Risk | None:
    """The catalog server's compute NICs run slower than the network the plan is built and timed on (a job that
    names ib-xdr800 for DGX B200s, whose ConnectX-7 run 400 Gb/s): the order must carry NICs of the fabric's rate,
    or the plan must run on the server's (the search pairs a server only with networks of its NIC rate; a network
    the job names is taken as given)."""
    b, srv = c.b, c.b.server
    if srv is None or b.nodes <= 1 or srv.nics is None or not srv.nics.gbps or srv.nics.gbps >= b.gbps_per_nic:
        return None
    kind = b.network_kind
    same_rate = sorted(n.id for n in b.catalog.networks.values()
                       if n.gbps_per_nic == srv.nics.gbps and n.kind == kind)
    return Risk(id="server_nics_slower_than_fabric", severity="high",
                evidence=msg("risk_ev_server_nics", server=srv.id, count=srv.nics.count, gbps=f"{srv.nics.gbps:g}",
                             model=srv.nics.model or "", network=b.network.id if b.network else kind,
                             need=f"{b.gbps_per_nic:g}"),
                mitigation=msg(_by_site(b, "risk_fix_server_nics"), need=f"{b.gbps_per_nic:g}",
                               nets=", ".join(same_rate) or "—"),
                source=srv.sources[0])


def _checkpoint_stall(c: Ctx) -> Risk | None:
    st = c.blocks["storage"]
    if st.kind != "node_local":
        return None
    tier = c.b.catalog.storage_tier(st.tier_catalog_id)
    write = tier.write_gb_s_per_node.low * c.b.nodes
    stall = st.checkpoint_gb / write / (st.checkpoint_interval_min.value * 60)
    if stall > st.stall_share_target.value:
        return Risk(id="checkpoint_stall", severity="medium",
                    evidence=msg("risk_ev_checkpoint_stall", gb=f"{st.checkpoint_gb:.0f}", write=f"{write:g}",
                                 minutes=f"{st.checkpoint_interval_min.value:.0f}", share=f"{stall:.1%}"),
                    mitigation=msg("risk_fix_checkpoint_stall"),
                    source="storage_rules_ref")
    return None


def _rack_power(c: Ctx) -> Risk | None:
    f = c.blocks["facility"]
    if f.over_rack_budget:
        return Risk(id="rack_power_over_site_limit", severity="high",
                    evidence=msg("risk_ev_rack_power", node_kw=f"{f.node_kw_max:.1f}",
                                 rack_kw=f"{f.rack_kw_budget.value:g}"),
                    mitigation=msg("risk_fix_rack_power"),
                    source="guide_000")
    if f.rack_kw_max > rules.value("facility", "air_rack_kw_limit_guides") and \
            f.cooling.value not in ("liquid", "rear-door heat exchanger"):  # rear doors carry it to their limit
        return Risk(id="air_cooling_limit", severity="medium",
                    evidence=msg("risk_ev_air_cooling", rack_kw=f"{f.rack_kw_max:.1f}",
                                 cooling=msg(COOLING_KEYS.get(f.cooling.value, "cooling_air"))),
                    mitigation=msg("risk_fix_air_cooling"),
                    source="guide_000")
    return None


# an overlay card may leave ECC unstated (None): flagged, but not called "no ECC"
_ECC_WORD = {True: "word_yes", False: "word_no", None: "word_unknown_in_catalog"}


def _consumer(c: Ctx) -> Risk | None:
    acc = c.b.accelerator
    if not acc.ecc or "consumer" in (acc.form_factor or "").lower():
        return Risk(id="consumer_cards_in_production", severity="high",
                    evidence=msg("risk_ev_consumer", name=acc.name, ecc=msg(_ECC_WORD[acc.ecc]),
                                 form=acc.form_factor),
                    mitigation=msg("risk_fix_consumer"),
                    source="guide_003")
    return None


def _export(c: Ctx) -> Risk | None:
    acc, market = c.b.accelerator, c.b.job.constraints.market
    if acc.china_export_restricted and market in ("china", "china-domestic"):
        return Risk(id="export_control_availability", severity="high",
                    evidence=msg("risk_ev_export", acc=acc.id, market=market),
                    mitigation=msg("risk_fix_export"),
                    source="us_bis_3a090")
    return None


def _fp8_moe_stack(c: Ctx) -> Risk | None:
    """FP8 training of an MoE model on a part outside the FP8 MoE kernels' targets (risks.yaml
    fp8_moe_kernel_parts: DeepGEMM / DeepEP run on NVIDIA SM90 / SM100): the estimate times its expert GEMMs and
    dispatch as if an equivalent stack ran there; AMD's parts have their vendor's own (risks.yaml
    fp8_moe_vendor_stack_parts), which the evidence names, unmeasured here all the same. A risk line only: the
    search and ranking do not weigh it (docs/known-gaps.md 43, item (e))."""
    b = c.b
    parts = rules.rule("risks", "fp8_moe_kernel_parts")
    acc = b.accelerator
    if b.job.precision != "fp8" or not b.scenario.model.experts or acc.id.startswith(tuple(parts.value)):
        return None
    vendor = rules.rule("risks", "fp8_moe_vendor_stack_parts")
    own = acc.id.startswith(tuple(vendor.value))  # AMD's own FP8 MoE operators (Primus-Turbo), not DeepGEMM / DeepEP
    return Risk(id="fp8_moe_stack_unproven", severity="medium",
                evidence=msg("risk_ev_fp8_moe_vendor_stack" if own else "risk_ev_fp8_moe_stack", acc=acc.id,
                             arch=acc.arch, experts=b.scenario.model.experts),
                mitigation=msg(_by_site(b, "risk_fix_fp8_moe_stack")), source=vendor.source if own else parts.source)


def _moe_routing(c: Ctx) -> Risk | None:
    """Expert parallelism timed at balanced routing (Job.moe_capacity_factor 1.0). Each MoE layer's all-to-all makes
    every EP rank wait on the busiest one, whose experts' share of the routed tokens the router sets; no job input
    predicts it (docs/known-gaps.md 236 (c)), so the risk names the assumption, quotes what it missed on runs
    trained with their own routing (risks.yaml moe_natural_routing_measured) and how to state a measured load. At EP 1
    one GPU runs every expert and no rank waits, and a job whose router is replaced by a balanced assignment
    (Job.moe_routing round-robin: torchtitan's debug force-balance; fake-balanced: NeMo AutoModel's fake_balanced_gate)
    runs the balance the estimate times: no risk. A risk line only: the search and ranking do not weigh it."""
    b = c.b
    experts, ep = int(b.scenario.model.experts or 0), int(b.strategy.ep)
    if experts <= 1 or ep <= 1 or b.job.moe_capacity_factor != 1.0:
        return None
    if b.job.moe_routing == "natural":
        return _moe_natural_load(ep, experts)
    if b.job.moe_routing != "random":
        return None
    seen = rules.rule("risks", "moe_natural_routing_measured")
    lo, hi = seen.value
    return Risk(id="moe_routing_unstated", severity="medium",
                evidence=msg("risk_ev_moe_routing", ep=ep, experts=experts, lo=f"{lo:.2f}", hi=f"{hi:.2f}"),
                mitigation=msg("risk_fix_moe_routing"), source=seen.source)


def _moe_natural_load(ep: int, experts: int) -> Risk:
    """Job.moe_routing natural at moe_capacity_factor 1.0: the step charges the busiest EP rank's expected load on
    real text (estimate.moe_load), read from pretrained checkpoints' expert popularity and the least its source gives
    for the attention kind. A micro-batch of a few packed fine-tuning samples routes as its samples do, and the
    Megatron-Bridge fine-tuning steps would take a load of 2.1-7.3 where it derives 1.05-1.22 (docs/known-gaps.md
    318 (a), (d)): the risk names that the charged load is a floor, and how to state a measured one."""
    seen = rules.rule("risks", "moe_natural_load_floor")
    lo, hi = seen.value
    return Risk(id="moe_routing_natural_floor", severity="medium",
                evidence=msg("risk_ev_moe_natural_floor", ep=ep, experts=experts, lo=f"{lo:.1f}", hi=f"{hi:.1f}"),
                mitigation=msg("risk_fix_moe_routing"), source=seen.source)


def _single_node(c: Ctx) -> Risk | None:
    b = c.b
    limit = rules.rule("risks", "single_node_gpus_max")
    goal = b.evaluation.get("goal", {})
    if b.nodes == 1 and b.per_node >= limit.value and goal.get("meets_deadline") is False:
        return Risk(id="single_node_ceiling", severity="high",
                    evidence=msg("risk_ev_single_node", gpus=b.per_node, days=f"{b.train_days:.1f}"),
                    mitigation=msg("risk_fix_single_node"), source=limit.source)
    return None


def _loader(c: Ctx) -> Risk | None:
    st = c.blocks["storage"]
    if st.read_gb_s_tier < st.loader_read_gb_s.value:
        return Risk(id="storage_too_slow_for_loader", severity="high",
                    evidence=msg("risk_ev_loader", have=f"{st.read_gb_s_tier:g}", need=f"{st.loader_read_gb_s.value:g}"),
                    mitigation=msg(_by_site(c.b, "risk_fix_loader")), source="superpod_h100_ra")
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
                    evidence=msg("risk_ev_deadline", days=f"{b.train_days:.1f}", failures=f"{failures:.1f}",
                                 deadline=f"{goal.deadline_days:g}"),
                    mitigation=msg("risk_fix_deadline"),
                    source=slack.source)
    return None


def _deadline_band(c: Ctx) -> Risk | None:
    """The estimate meets the deadline but the slow end of its class's held-out error band does not (evaluate.accuracy:
    held-out published runs of this stack, model kind, GPU family and scale ran that much slower than estimated)."""
    b, goal = c.b, c.b.job.goal
    band = (b.evaluation.get("accuracy") or {}).get("time") or {}
    if goal.deadline_days is None or band.get("matched") is None or b.train_days > goal.deadline_days:
        return None
    rule = rules.rule("risks", "deadline_accuracy_band")
    slower_pct = band[f"signed_p{rule.value}_pct"]
    slow_days = b.train_days * (1.0 + slower_pct / 100.0)
    if slow_days <= goal.deadline_days:
        return None
    return Risk(id="deadline_accuracy_band", severity="medium",
                evidence=msg("risk_ev_deadline_band", days=f"{b.train_days:.1f}", deadline=f"{goal.deadline_days:g}",
                             cls=band["matched"], n=band["n"], pct=rule.value, slower=f"{slower_pct:.1f}",
                             slow=f"{slow_days:.1f}"),
                mitigation=msg("risk_fix_deadline_band"), source=rule.source)


def _memory(c: Ctx) -> Risk | None:
    mem = c.b.evaluation.get("memory", {})
    cap, used = mem.get("capacity_gib") or 0.0, mem.get("per_gpu_gib") or 0.0
    # the search's floor test: one figure and one test for the choice and the risk
    if cap and (not mem.get("fits", True) or not leaves_floor(used, cap)):
        return Risk(id="gpu_memory_headroom", severity="high" if not mem.get("fits", True) else "medium",
                    evidence=msg("risk_ev_memory_basis", used=f"{used:.1f}", cap=f"{cap:.1f}", basis=basis)
                    if (basis := capacity_note(mem.get("capacity_basis"))) is not None else
                    msg("risk_ev_memory", used=f"{used:.1f}", cap=f"{cap:.1f}"), source="convention",
                    mitigation=msg("risk_fix_memory"))
    return None


_HOST_PARTS = (("cpu_cores", "cpu_cores", "server_cpu_cores", "g"), ("ram_gib", "ram_gib", "server_ram_gib", "g"),
               ("nvme_tb", "nvme_tb", "server_nvme_tb", "g"))


def _server_short(c: Ctx) -> Risk | None:
    """The catalog server carries less CPU, RAM or local NVMe than the job needs on each host (node block): the
    order must add it (more DIMMs or drives, other CPUs), or async checkpoint staging and the page cache fail."""
    node = c.blocks.get("node")
    if node is None:
        return None
    short = [msg(f"risk_short_{k}", need=f"{getattr(node, need).value:{f}}", have=f"{getattr(node, have):{f}}")
             for k, need, have, f in _HOST_PARTS if node.enough.get(k) is False]
    if not short:
        return None
    return Risk(id="server_short_of_host_needs", severity="medium" if node.enough.get("ram_gib") is False else "low",
                evidence=msg("risk_ev_server_short", server=node.server, parts=listed(short)),
                mitigation=msg(_short_fix(c.b, node)), source="convention")


def _short_fix(b: BuildInput, node: Block) -> str:
    """A bought host whose RAM is short and cannot be extended (evaluate.host_ram_fixed: soldered LPDDR5X) is not
    fixed by ordering DIMMs: the layout must need less host RAM."""
    bought_short = node.enough.get("ram_gib") is False and acquisition(b) != "rent"
    if bought_short and host_ram_fixed(b.catalog, b.system):
        return "risk_fix_server_short_fixed_ram"
    if bought_short and node.server is not None and host_ram_extensible(b.catalog, b.system) is None:
        return "risk_fix_server_short_unknown_ram"  # the catalog does not know whether DIMMs can be added: say so
    return _by_site(b, "risk_fix_server_short")


def _nvl72_spares(c: Ctx) -> Risk | None:
    """NVL72 racks the job fills, 18 of 18 trays, keep no spare: a TP / EP group cannot take a tray of another rack
    (outside its NVLink domain), so a failed tray stops the job until it is swapped in its rack (CoreWeave replaces
    NVL72 nodes in place and plans for 2 unavailable a rack; NVIDIA's Slurm segments of 16 of 18 trays leave 2), where
    the restart model counts minutes on a spare node. Racks the placement leaves trays free in keep those as spares."""
    b = c.b
    # the job's GPUs a rack holds on every tray (scenario.domain_job_gpus: 36 at 2 of a tray's 4 GPUs)
    per_node, held = b.per_node, domain_job_gpus(b.accelerator, b.per_node)
    full = sum(1 for s in b.rack_shares if s >= held)
    if not full:
        return None
    rel = b.catalog.reliability
    failures = full * held * b.train_days * 24.0 / rel.per_gpu_mtbf_hours.mid
    spare = SPARE_HOSTS_PER_DOMAIN
    trays = held // per_node
    alt = -(-b.gpus // per_node // (trays - spare))
    return Risk(id="nvl72_no_spare_trays", severity="medium",
                evidence=msg("risk_ev_nvl72_spares", full=full, racks=b.racks, trays=trays,
                             failures=f"{failures:.1f}", days=f"{b.train_days:.0f}",
                             mtbf=f"{rel.per_gpu_mtbf_hours.mid:,.0f}",
                             spare_low=f"{rel.hot_spare_fraction.low:.0%}", spare_high=f"{rel.hot_spare_fraction.high:.0%}"),
                mitigation=msg(_by_site(b, "risk_fix_nvl72_spares"), spare=spare, alt=alt,
                               used=trays - spare, trays=trays),
                source="coreweave_gb200_instances")


def _unpriced(c: Ctx) -> Risk | None:
    """A purchase whose bill of materials has parts without a price: its budget is incomplete. A rented cluster's
    cost is the rental (priced); its BOM is the purchase alternative, and the buy-vs-rent verdict says what it
    lacks."""
    bom = c.blocks.get("bom")
    if bom is not None and bom.unpriced and acquisition(c.b) == "buy":
        return Risk(id="budget_incomplete", severity="low",
                    evidence=msg("risk_ev_unpriced", n=len(bom.unpriced), parts=listed(
                        [as_msg(m) if m else p for p, m in zip(bom.unpriced, bom.unpriced_msg or [None] * len(bom.unpriced), strict=True)][:4])),
                    mitigation=msg("risk_fix_unpriced"),
                    source="convention")
    return None


RULES: tuple[Callable[[Ctx], Risk | None], ...] = (
    _tp_across_pcie, _slow_network, _server_nics, _checkpoint_stall, _rack_power, _consumer, _export, _fp8_moe_stack,
    _moe_routing, _single_node, _loader,
    _deadline, _deadline_band, _memory, _server_short, _nvl72_spares, _unpriced)


def risks_block(b: BuildInput, blocks: dict) -> list[Risk]:
    ctx = Ctx(b, blocks)
    return [r for r in (rule(ctx) for rule in RULES) if r is not None]
