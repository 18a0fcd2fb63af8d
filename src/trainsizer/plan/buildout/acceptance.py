"""The `acceptance` block: thresholds for this exact hardware in the criteria schema `trainsizer accept` reads
(`trainsizer.accept.criteria.AcceptanceCriteria`). The platform reference table gives the per-GPU figures
(GEMM, HBM, NVLink all-reduce by algorithm); the plan sets what it sized: GPUs, NICs, CPU cores and RAM per
node, software floors, the cross-node ring busbw on the planned NICs, RDMA line rate, and storage and
checkpoint figures per node (the node's share of the aggregate the storage block sized)."""

from __future__ import annotations

import re

from trainsizer.accept import criteria as crit_mod
from trainsizer.accept import platforms
from trainsizer.accept.criteria import AcceptanceCriteria, CollectiveLimits, Limit
from trainsizer.plan.buildout.inputs import BuildInput
from trainsizer.plan.buildout.network import NetworkBlock
from trainsizer.plan.buildout.node import NodeBlock
from trainsizer.plan.buildout.software import SoftwareBlock
from trainsizer.plan.buildout.storage import StorageBlock


def platform_for(acc) -> str | None:
    """The platform table id for a catalog accelerator (same id, else by its name), or None."""
    if acc.id in platforms.platform_ids():
        return acc.id
    return platforms.detect(acc.name)


def _version(text: str) -> str | None:
    m = re.search(r"\d+\.\d+(\.\d+)*", text or "")
    return m.group(0) if m else None


def _plan(value, why: str) -> Limit:
    return Limit(value=value, source=f"plan: {why}")


def acceptance_block(b: BuildInput, node: NodeBlock, net: NetworkBlock, storage: StorageBlock,
                     sw: SoftwareBlock) -> AcceptanceCriteria:
    pid = platform_for(b.accelerator)
    out = crit_mod.from_platform(pid, gpus_per_node=b.per_node) if pid else crit_mod.generic()
    d = platforms.defaults()
    out.platform = pid
    out.source = f"trainsizer plan for {b.scenario.name}" + (f" (platform table {pid})" if pid else "")
    out.gpu_count = _plan(b.per_node, f"{b.per_node} GPUs per node")
    if out.gpu_model is None:
        out.gpu_model = _plan(b.accelerator.name, "catalog accelerator name")
    if out.gpu_memory_gib_min is None:
        ratio = d["memory_min_ratio"]["value"]
        out.gpu_memory_gib_min = _plan(round(b.accelerator.memory_gib * ratio, 1),
                                       f"{ratio} x {b.accelerator.memory_gib} GiB ({crit_mod.suite_check(1)})")
    out.cpu_cores_min = _plan(node.cpu_cores.value, f"node block: {node.cpu_cores.rule}")
    out.ram_gib_min = _plan(node.ram_gib.value, f"node block: {node.ram_gib.rule}")
    if sw.vendor == "nvidia":
        for field, text in (("driver_version_min", sw.driver), ("cuda_version_min", sw.toolkit),
                            ("nccl_version_min", sw.collectives_version)):
            v = _version(text)
            if v:
                setattr(out, field, _plan(v, f"software block ({sw.source}): {text}"))
    _intra(b, out, d)
    _fabric(b, out, net, d)
    _storage(b, out, storage)
    return out


def _intra(b: BuildInput, out: AcceptanceCriteria, d: dict) -> None:
    """No platform row: ring busbw inside the node >= the ring ratio x the scale-up link per direction."""
    if out.busbw_intra_gb_s_min.all_reduce is not None or b.per_node < 2:
        return
    acc = b.accelerator
    link = acc.scaleup_gb_s_per_dir if acc.scaleup_tech not in ("pcie",) else acc.pcie_gb_s
    ratio = d["ring_min_ratio"]["value"]
    ring = _plan(round(ratio * link, 1), f"ring busbw >= {ratio} x {link:g} GB/s {acc.scaleup_tech} per direction "
                 f"({platforms.source_text(d['ring_min_ratio']['source'])}; link from catalog {acc.id})")
    out.busbw_intra_gb_s_min = CollectiveLimits(all_reduce=ring, all_gather=ring, reduce_scatter=ring)


def _fabric(b: BuildInput, out: AcceptanceCriteria, net: NetworkBlock, d: dict) -> None:
    if b.nodes <= 1 or net.compute is None:
        return
    nics, gbps = b.nics_per_node, b.gbps_per_nic
    out.nic_count_min = _plan(nics, f"{nics} compute NICs per node ({net.compute.topology})")
    out.nic_speed_gbps_min = _plan(gbps, f"{gbps:g} Gb/s per NIC")
    ratio = d["inter_ring_min_ratio"]["value"]
    agg = nics * gbps / 8
    ring = _plan(round(ratio * agg, 1), f"ring busbw (NCCL_ALGO=Ring) >= {ratio} x {nics} x {gbps:g} Gb/s / 8 = "
                 f"{agg:g} GB/s ({platforms.source_text(d['inter_ring_min_ratio']['source'])})")
    out.busbw_inter_gb_s_min = CollectiveLimits(all_reduce=ring, all_gather=ring, reduce_scatter=ring)
    rr = d["rdma_min_ratio"]["value"]
    out.rdma_gbps_min = _plan(round(rr * gbps, 1), f"ib_write_bw with GPUDirect >= {rr} x {gbps:g} Gb/s "
                              f"({platforms.source_text(d['rdma_min_ratio']['source'])})")


def _storage(b: BuildInput, out: AcceptanceCriteria, st: StorageBlock) -> None:
    n = b.nodes
    share = st.checkpoint_gb / n
    out.storage_read_gb_s_min = _plan(round(st.loader_read_gb_s.value / n, 4),
                                      f"loader read {st.loader_read_gb_s.value:g} GB/s over {n} nodes")
    out.storage_write_gb_s_min = _plan(round(st.write_gb_s_sync.value / n, 4),
                                       f"checkpoint write {st.write_gb_s_sync.value:.3g} GB/s over {n} nodes "
                                       f"(stall <= {st.stall_share_target.value:g} at the Young/Daly interval)")
    out.checkpoint_size_gb = round(share, 3)
    out.checkpoint_save_s_max = _plan(round(st.write_budget_s.value, 1),
                                      f"write budget {st.write_budget_s.rule}; each node saves its share in parallel")
    out.checkpoint_restore_s_max = _plan(round(max(st.restore_s.value, 1.0), 1),
                                         f"restore {share:.3g} GB per node at the tier's read bandwidth "
                                         f"({st.read_gb_s_tier:g} GB/s over {n} nodes), at least 1 s")
