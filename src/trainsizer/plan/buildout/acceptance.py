"""The `acceptance` block: thresholds for this exact hardware in the criteria schema `trainsizer accept` reads
(`trainsizer.accept.criteria.AcceptanceCriteria`). The platform reference table gives the per-GPU figures
(GEMM, HBM, NVLink all-reduce by algorithm); the plan sets what it sized: GPUs, NICs, CPU cores and RAM per
node, software floors, the cross-node ring busbw on the planned NICs, RDMA line rate, and storage and
checkpoint figures per node (the node's share of the aggregate the storage block sized)."""

from __future__ import annotations

import math
import re
from typing import Any

from trainsizer.accept import criteria as crit_mod
from trainsizer.accept import platforms
from trainsizer.accept.criteria import OPS, AcceptanceCriteria, CollectiveLimits, Limit
from trainsizer.messages import msg
from trainsizer.plan.buildout.inputs import BuildInput
from trainsizer.plan.buildout.network import NetworkBlock
from trainsizer.plan.buildout.node import NodeBlock
from trainsizer.plan.buildout.software import SoftwareBlock
from trainsizer.plan.buildout.storage import StorageBlock
from trainsizer.plan.texts import as_msg, ref
from trainsizer.scenario import bridge_smaller_than_host

# the software block's versions a plan sets as floors, by vendor: NVIDIA's driver, CUDA and NCCL; on AMD the ROCm
# release (its amdgpu comes with it: the block names no amdgpu version, so no driver floor) and RCCL, whose version
# follows the NCCL API it implements (inventory.rccl_version reads it)
SOFTWARE_FLOORS = {
    "nvidia": (("driver_version_min", "driver"), ("cuda_version_min", "toolkit"),
               ("nccl_version_min", "collectives_version")),
    "amd": (("rocm_version_min", "toolkit"), ("nccl_version_min", "collectives_version")),
}


def rule_of(figure: Any) -> Any:
    """A derived figure's rule as a message when it has one (so it translates), else its text."""
    return as_msg(figure.rule_msg) if figure.rule_msg is not None else figure.rule


def platform_for(acc) -> str | None:
    """The platform table id for a catalog accelerator: its own row, else the row its name matches when the part
    has that row's NVLink switch (NVLS or not), else None. GB200 reads B200's row (same NVLink 5 switch, GEMM and
    HBM floors that a 1,200 W part clears); H200 NVL (NVLink bridges, no switch) reads no H200 SXM row."""
    if acc.id in platforms.platform_ids():
        return acc.id
    pid = platforms.detect(acc.name)
    if pid is None or bool(platforms.get(pid).get("nvls")) != bool(acc.nvls):
        return None
    return pid


def _version(text: str) -> str | None:
    m = re.search(r"\d+\.\d+(\.\d+)*", text or "")
    return m.group(0) if m else None


def _plan(value, why: Any) -> Limit:
    text = msg("acc_plan", why=why)
    stored = ref(text)
    return Limit(value=value, source=text, source_msg=stored.model_dump() if stored else None)


def acceptance_block(b: BuildInput, node: NodeBlock, net: NetworkBlock, storage: StorageBlock,
                     sw: SoftwareBlock) -> AcceptanceCriteria:
    pid = platform_for(b.accelerator)
    out = crit_mod.from_platform(pid, gpus_per_node=b.per_node) if pid else crit_mod.generic()
    d = platforms.defaults()
    out.platform = pid
    out.source = f"trainsizer plan for {b.scenario.name}" + (f" (platform table {pid})" if pid else "")
    if sw.vendor != "nvidia":  # an Xid is the NVIDIA driver's error report (NVRM: Xid): no such list elsewhere
        out.critical_xids = out.critical_xids_source = None
    if sw.vendor != "amd":  # amdgpu's RAS / reset lines: the AMD driver's report in the place of Xid
        out.critical_amdgpu_events = out.critical_amdgpu_events_source = None
    out.gpu_count = _plan(b.per_node, msg(_one("acc_gpus_per_node", b.per_node), n=b.per_node))
    if out.gpu_model is None:
        out.gpu_model = _plan(b.accelerator.name, msg("acc_catalog_name"))
    # the part's own memory: what the driver shows where the catalog has a reading of it (catalog memory_driver):
    # the plan's fit check rests on it, so a delivered card that shows less (another driver, ECC turned on, a
    # different SKU) gives a process less than the plan assumed; else the label (a row read for another part,
    # GB200 on B200's, carries that part's label)
    drv = b.accelerator.memory_driver
    if drv is not None and drv.smi_total_mib:
        shown = drv.smi_total_mib / 1024.0
        out.gpu_memory_gib_min = _plan(math.floor(shown * 10) / 10,
                                       msg("acc_memory_driver", tool=drv.tool, mib=f"{drv.smi_total_mib:,.0f}",
                                           gib=f"{shown:.2f}", sources=", ".join(drv.sources), date=drv.date,
                                           check=crit_mod.suite_check(1)))
    elif out.gpu_memory_gib_min is None or platforms.get(pid)["memory_label_gib"] != b.accelerator.memory_gib:
        ratio = d["memory_min_ratio"]["value"]
        out.gpu_memory_gib_min = _plan(round(b.accelerator.memory_gib * ratio, 1),
                                       msg("acc_memory", ratio=ratio, gib=b.accelerator.memory_gib,
                                           check=crit_mod.suite_check(1)))
    _host_nics(b, out, d)
    out.cpu_cores_min = _plan(node.cpu_cores.value, msg("acc_node_block", rule=rule_of(node.cpu_cores)))
    out.ram_gib_min = _plan(node.ram_gib.value, msg("acc_node_block", rule=rule_of(node.ram_gib)))
    for field, key in SOFTWARE_FLOORS.get(sw.vendor, ()):
        text, stored = getattr(sw, key), getattr(sw, f"{key}_msg")
        v = _version(text)
        if v:
            said = as_msg(stored) if stored is not None else text
            setattr(out, field, _plan(v, msg("acc_software", source=sw.source, text=said)))
    _xgmi_links(b, out)
    _intra(b, out, d)
    _fabric(b, out, net, d)  # reads the in-node floors before they carry their path
    out.busbw_intra_gb_s_min = _on_path(out.busbw_intra_gb_s_min, _intra_path(b))
    _storage(b, out, storage)
    return out


def _xgmi_links(b: BuildInput, out: AcceptanceCriteria) -> None:
    """A switchless xGMI mesh: every GPU's links to its peers (catalog scaleup_mesh_links), where no row says."""
    links = getattr(b.accelerator, "scaleup_mesh_links", None)
    if b.accelerator.scaleup_tech == "xgmi" and links and out.xgmi_links_per_gpu is None:
        out.xgmi_links_per_gpu = _plan(int(links), msg("acc_xgmi_links", links=int(links), acc=b.accelerator.id))


def _host_nics(b: BuildInput, out: AcceptanceCriteria, d: dict) -> None:
    """The compute NICs one host of the plan's catalog server carries, where the platform row read for it says
    otherwise (a row read for another part: GB200 NVL72 trays on the DGX B200 row hold 4 ConnectX-7, one per GPU,
    not the DGX's 8; servers.yaml gb200-nvl72 nics). A compute network the plan sizes sets them again (_fabric)."""
    srv = b.server
    if srv is None or srv.nics is None or not srv.gpus or out.nic_count_min is None:
        return
    nics = max(1, round(srv.nics.count * b.per_node / srv.gpus))
    gbps = float(srv.nics.gbps)
    if out.nic_count_min.value == nics and out.nic_speed_gbps_min is not None and out.nic_speed_gbps_min.value == gbps:
        return
    out.nic_count_min = _plan(nics, msg("acc_nics_server", nics=nics, server=srv.id, per_node=b.per_node))
    out.nic_speed_gbps_min = _plan(gbps, msg("acc_nic_speed", gbps=f"{gbps:g}"))
    rr = d["rdma_min_ratio"]["value"]
    out.rdma_gbps_min = _plan(round(rr * gbps, 1), msg("acc_rdma", ratio=rr, gbps=f"{gbps:g}",
                                                       source=platforms.source_text(d["rdma_min_ratio"]["source"])))


def _intra(b: BuildInput, out: AcceptanceCriteria, d: dict) -> None:
    """No platform row: ring busbw inside the node >= the ring ratio x the link the node's ring crosses (the estimate's
    intra-node rate: the scale-up link, or the host link where there is none or a bridge joins fewer GPUs than the node
    holds); the all-reduce on an NVSwitch with NVLS, at NCCL's NVLS node size or above, >= the NVLS ratio x that link.
    A bridge smaller than the node gets its own floors, a ring inside each bridged group at the bridge's rate."""
    if out.busbw_intra_gb_s_min.all_reduce is not None or b.per_node < 2:
        return
    acc = b.accelerator
    bridged = bridge_smaller_than_host(acc, b.per_node)
    on_host = bridged or acc.scaleup_tech == "pcie"
    tech = msg("scaleup_host_staged") if on_host and acc.host_staged_gb_s_per_dir else \
        msg("scaleup_pcie") if on_host else scaleup_name(acc)
    ring = _ring_intra(acc, float(b.system.intra_node_gb_s), d, tech, mesh=not on_host)
    ar, nvls = ring, d["nvls_min_gpus"]
    if acc.nvls and b.per_node >= nvls["value"]:
        ratio, link = d["nvls_min_ratio"]["value"], acc.scaleup_gb_s_per_dir
        ar = _plan(round(ratio * link, 1), msg("acc_nvls_intra", ratio=ratio, link=f"{link:g}", gpus=b.per_node,
                                               min_gpus=nvls["value"], source=platforms.source_text(nvls["source"]),
                                               acc=acc.id))
    out.busbw_intra_gb_s_min = CollectiveLimits(all_reduce=ar, all_gather=ring, reduce_scatter=ring)
    if bridged:
        bridge = _ring_intra(acc, acc.scaleup_gb_s_per_dir, d, scaleup_name(acc))
        out.scaleup_domain_gpus = int(acc.scaleup_domain)
        out.busbw_domain_gb_s_min = _on_path(CollectiveLimits(all_reduce=bridge, all_gather=bridge,
                                                              reduce_scatter=bridge),
                                             msg("acc_path_bridge", domain=int(acc.scaleup_domain),
                                                 tech=scaleup_name(acc), groups=b.per_node // int(acc.scaleup_domain)))


def _ring_intra(acc, link: float, d: dict, tech: Any, mesh: bool = True) -> Limit:
    # a switchless full mesh (AMD xGMI, a 4-way NVLink bridge) rings at a lower share of its aggregate link rate than
    # a switch; a ring over the host's PCIe (`mesh` False) crosses no mesh
    key = "ring_min_ratio_mesh" if mesh and getattr(acc, "scaleup_mesh_links", None) else "ring_min_ratio"
    ratio = d[key]["value"]
    return _plan(round(ratio * link, 1), msg("acc_ring_intra", ratio=ratio, link=f"{link:g}", tech=tech,
                                             source=platforms.source_text(d[key]["source"]), acc=acc.id))


def _on_path(limits: CollectiveLimits, path: Any) -> CollectiveLimits:
    """Each floor with the path its test runs over ahead of its source (NVLink inside a domain, the NICs across)."""
    def one(limit: Limit | None) -> Limit | None:
        if limit is None:
            return None
        source = as_msg(limit.source_msg) if limit.source_msg is not None else limit.source
        return Limit.said(limit.value, msg("acc_on_path", path=path, source=source))
    return CollectiveLimits(**{op: one(getattr(limits, op)) for op in OPS})


def _intra_path(b: BuildInput) -> Any:
    """The path of the in-node floors: the node's scale-up link; on NVL72 one tray of the rack's NVLink domain; all
    GPUs of a node whose bridges join fewer of them, over the host link its ring crosses."""
    acc = b.accelerator
    if b.nvl72:
        return msg("acc_path_tray", domain=int(acc.scaleup_domain))
    if bridge_smaller_than_host(acc, b.per_node):
        return msg("acc_path_node_host", gpus=b.per_node, domain=int(acc.scaleup_domain), tech=scaleup_name(acc))
    return msg("acc_path_node", tech=scaleup_name(acc))


def scaleup_name(acc: Any) -> Any:
    """The accelerator's scale-up technology as words ('NVLink', 'xGMI (Infinity Fabric)'), not its catalog code."""
    return msg(f"scaleup_{acc.scaleup_tech}")


def _fabric(b: BuildInput, out: AcceptanceCriteria, net: NetworkBlock, d: dict) -> None:
    """Across-node floors on the path the test crosses: trays of one NVL72 rack meet over NVLink (multi-node
    NVLink), so their floor is the NVLink one; nodes in different NVLink domains meet over the compute NICs."""
    if b.nodes <= 1:
        return
    if net.compute is None:  # no compute network: a job inside one rack-scale NVLink domain (no NIC floors)
        if b.nvl72:
            out.busbw_inter_gb_s_min = _on_path(out.busbw_intra_gb_s_min, msg(
                "acc_path_domain", trays=b.nodes, domain=int(b.accelerator.scaleup_domain)))
        return
    nics, gbps = b.nics_per_node, b.gbps_per_nic
    topology = as_msg(net.compute.topology_msg) if net.compute.topology_msg else net.compute.topology
    out.nic_count_min = _plan(nics, msg("acc_nics", nics=nics, topology=topology))
    out.nic_speed_gbps_min = _plan(gbps, msg("acc_nic_speed", gbps=f"{gbps:g}"))
    domains = b.racks if b.nvl72 else b.nodes
    if b.nvl72 and domains == 1:  # every tray in one rack: the across-node test never reaches the NICs
        out.busbw_inter_gb_s_min = _on_path(out.busbw_intra_gb_s_min, msg(
            "acc_path_domain", trays=b.nodes, domain=int(b.accelerator.scaleup_domain)))
    else:
        ratio = d["inter_ring_min_ratio"]["value"]
        agg = nics * gbps / 8
        ring = _plan(round(ratio * agg, 1), msg("acc_ring_inter", ratio=ratio, nics=nics, gbps=f"{gbps:g}",
                                                agg=f"{agg:g}",
                                                source=platforms.source_text(d["inter_ring_min_ratio"]["source"])))
        path = msg("acc_path_racks", racks=domains) if b.nvl72 else msg("acc_path_nics")
        out.busbw_inter_gb_s_min = _on_path(CollectiveLimits(all_reduce=ring, all_gather=ring, reduce_scatter=ring),
                                            path)
    rr = d["rdma_min_ratio"]["value"]
    out.rdma_gbps_min = _plan(round(rr * gbps, 1), msg("acc_rdma", ratio=rr, gbps=f"{gbps:g}",
                                                       source=platforms.source_text(d["rdma_min_ratio"]["source"])))


def _one(key: str, n: int) -> str:
    """The sentence for a count of one ('1 GPU per node', 'on the one node', never '1 GPUs', 'over 1 nodes')."""
    return f"{key}_one" if n == 1 else key


def _storage(b: BuildInput, out: AcceptanceCriteria, st: StorageBlock) -> None:
    n = b.nodes
    share = st.checkpoint_gb / n
    out.storage_read_gb_s_min = _plan(round(st.loader_read_gb_s.value / n, 4),
                                      msg(_one("acc_read", n), gb_s=f"{st.loader_read_gb_s.value:g}", n=n))
    out.storage_write_gb_s_min = _plan(round(st.write_gb_s_sync.value / n, 4),
                                       msg(_one("acc_write", n), gb_s=f"{st.write_gb_s_sync.value:.3g}", n=n,
                                           stall=f"{st.stall_share_target.value:g}"))
    out.checkpoint_size_gb = round(share, 3)
    out.checkpoint_save_s_max = _plan(round(st.write_budget_s.value, 1),
                                      msg("acc_save", rule=rule_of(st.write_budget_s)))
    out.checkpoint_restore_s_max = _plan(round(max(st.restore_s.value, 1.0), 1),
                                         msg(_one("acc_restore", n), gb=f"{share:.3g}", gb_s=f"{st.read_gb_s_tier:g}", n=n))
