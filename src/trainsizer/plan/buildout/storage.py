"""The `storage` block: tier, capacity, the loader's read bandwidth, the checkpoint write bandwidth that keeps
blocking saves under a target share of time at the Young/Daly interval, and the restore time.

- Checkpoint bytes = bytes/param x parameters (14 B: bf16 weights + fp32 master + Adam m, v; storage_rules.md s2);
  LoRA saves the adapters and their optimizer states only.
- Job MTBF M and the Daly (2006) interval tau = sqrt(2 delta M) - delta from `estimate.reliability`.
- Stall share delta / tau <= s with tau ~ sqrt(2 delta M)  =>  delta <= 2 M s^2 (write-time budget), so the
  aggregate write bandwidth >= checkpoint bytes / (2 M s^2) (derived from Young 1974 / Daly 2006).
- Async save (DCP async_save, Megatron --async-save) blocks only for the GPU->host copy, over the GPU's host
  link (catalog `host_link_gb_s_per_dir`: NVLink-C2C on Grace superchips, else PCIe); the drain then needs
  checkpoint bytes / tau.
- Loader read = tokens/s x stored bytes per token, floored at the RA-11333 "Good" tier per node.
- Restore = checkpoint bytes / aggregate read bandwidth of the tier.
- Raw capacity = usable / (d / (d + p)) at the tier's protection (storage.yaml pfs_protection, nfs_protection; a
  workstation's own NVMe has none). Parallel-FS appliances = max(bandwidth need, raw capacity / appliance raw TB,
  the family's minimum).
"""

from __future__ import annotations

from trainsizer.estimate import host_memory
from trainsizer.messages import msg
from trainsizer.numbers import significant
from trainsizer.plan.buildout import rules
from trainsizer.plan.buildout.common import Block, Cited, ceil_div, cited, from_rule
from trainsizer.plan.buildout.inputs import BuildInput
from trainsizer.plan.texts import MessageRef


class StorageBlock(Block):
    tier: str
    tier_msg: MessageRef | None = None
    tier_catalog_id: str
    kind: str
    checkpoint_gb: float
    checkpoints_retained: Cited
    dataset_tokenised_gb: float
    dataset_raw_gb: float
    capacity_tb: Cited
    protection: Cited  # erasure code / RAID scheme (value "d+p", or "none")
    capacity_raw_tb: Cited  # capacity_tb before protection: what the drives must hold
    loader_read_gb_s: Cited
    job_mtbf_h: float
    checkpoint_interval_min: Cited
    write_budget_s: Cited
    write_gb_s_sync: Cited
    write_gb_s_async_drain: Cited
    async_block_s: float
    stall_share_target: Cited
    read_gb_s_tier: float
    restore_s: Cited
    appliances: int
    appliance: str | None
    notes: list[str]
    notes_msg: list[MessageRef | None] | None = None


def checkpoint_bytes(b: BuildInput) -> float:
    """Bytes of one full training checkpoint, at the bytes/param the estimator's goodput model uses (one rule with
    the host RAM need: estimate.host_memory.checkpoint_bytes)."""
    return host_memory.checkpoint_bytes(b.catalog.reliability, b.scenario.model, b.scenario.training)


def dataset_bytes(b: BuildInput) -> tuple[float, float]:
    """(tokenised bytes, raw text bytes) of one epoch."""
    data = b.job.data
    per_epoch = data.tokens_per_epoch
    return host_memory.dataset_stored_bytes(per_epoch), per_epoch * data.bytes_per_token


def storage_block(b: BuildInput) -> StorageBlock:
    from trainsizer.estimate.reliability import failure_figures, job_mtbf_s, optimal_checkpoint_interval_s

    ckpt = checkpoint_bytes(b)
    tok_b, raw_b = dataset_bytes(b)
    keep = rules.rule("storage", "checkpoints_retained")
    headroom = rules.value("storage", "capacity_headroom")
    logs = rules.value("storage", "logs_gb_per_node") * 1e9 * b.nodes
    cap_tb = (keep.value * ckpt + tok_b + raw_b + logs) * headroom / 1e12
    capacity = cited(round(cap_tb, 2), msg("storage_rule_capacity", keep=keep.value, headroom=headroom),
                     "storage_rules_ref")
    read = _read_need(b)
    mtbf = float(job_mtbf_s(b.gpus, failure_figures(b.catalog.reliability).failures_per_gpu_day))
    s_rule = rules.rule("storage", "checkpoint_stall_target")
    budget = 2.0 * mtbf * s_rule.value ** 2
    tau = float(optimal_checkpoint_interval_s(budget, mtbf))
    cap = rules.value("storage", "max_checkpoint_interval_min") * 60.0
    if tau > cap:  # rare failures: a capped interval, and the stall share applied to it
        tau, budget = cap, s_rule.value * cap
    write_sync = ckpt / budget / 1e9
    drain = ckpt / tau / 1e9
    # the copy crosses the GPU's host link: NVLink-C2C on GB200 / GB300, PCIe elsewhere
    g2h = float(b.accelerator.host_link_gb_s_per_dir or rules.value("storage", "gpu_to_host_gb_s"))
    tier, tier_id, kind, app, n_app, tier_read, notes, prot = _tier(b, write_sync, read.value, cap_tb)
    raw_tb = cap_tb / _efficiency(prot.value)
    restore = ckpt / (tier_read * 1e9)
    return StorageBlock(
        tier=tier, tier_catalog_id=tier_id, kind=kind, checkpoint_gb=ckpt / 1e9, checkpoints_retained=from_rule(keep),
        dataset_tokenised_gb=tok_b / 1e9, dataset_raw_gb=raw_b / 1e9, capacity_tb=capacity, protection=prot,
        capacity_raw_tb=cited(round(raw_tb, 2), msg("storage_rule_raw", usable=f"{cap_tb:.3g}", scheme=prot.value),
                              prot.source),
        loader_read_gb_s=read,
        job_mtbf_h=mtbf / 3600.0,
        checkpoint_interval_min=cited(tau / 60.0, msg("storage_rule_interval", cap=f"{cap / 60:g}"), "daly_2006"),
        write_budget_s=cited(budget, msg("storage_rule_budget", s=s_rule.value), "young_1974"),
        write_gb_s_sync=cited(write_sync, msg("storage_rule_sync"), "storage_rules_ref"),
        write_gb_s_async_drain=cited(drain, msg("storage_rule_drain"), "pytorch_dcp_async"),
        async_block_s=ckpt / (g2h * 1e9 * b.gpus), stall_share_target=from_rule(s_rule),
        read_gb_s_tier=tier_read,
        restore_s=cited(restore, msg("storage_rule_restore"), "storage_rules_ref"),
        appliances=n_app, appliance=app, notes=notes)


def _read_need(b: BuildInput) -> Cited:
    """Loader read bandwidth: the job's token stream, floored at the RA tier (RA-11333 Table 6): the per-SU
    aggregate for each started 32-node SU, but no more than every node reading at the tier's single-node figure
    (2 nodes: 2 x 4 GB/s, not a whole SU's 15 GB/s, which asked each node for more than the tier's own single-node
    read), and never below one node's."""
    tier = b.catalog.storage_tier(rules.value("storage", "read_tier_for_text"))
    sus = ceil_div(b.nodes, rules.value("storage", "su_nodes"))
    single = tier.read_gb_s_per_node.low
    floor = max(single, min(b.nodes * single, sus * tier.read_gb_s_per_su.low))
    need = host_memory.dataset_stored_bytes(b.tokens_per_s) / 1e9
    return cited(round(max(need, floor), 4), msg("storage_rule_read", need=significant(need), floor=f"{floor:g}",
                                                 tier=tier.id), "superpod_h100_ra")


def _protection(name: str) -> Cited:
    r = rules.rule("storage", name)
    return cited(f"{r.value['data']}+{r.value['parity']}", r.note, r.source)


def _efficiency(scheme: str) -> float:
    """Usable share of raw capacity of a 'd+p' scheme (1 for 'none')."""
    if scheme == "none":
        return 1.0
    d, p = (int(x) for x in scheme.split("+"))
    return d / (d + p)


def local_tier_id(b: BuildInput) -> str:
    """The catalog tier of a node's own NVMe: a workstation's one drive, else a rack server's local array."""
    from trainsizer.plan.buildout.facility import site_scale

    return rules.value("storage", "workstation_local_tier" if site_scale(b) == "workstation" else "local_tier")


def _tier(b: BuildInput, write_gb_s: float, read_gb_s: float, capacity_tb: float) -> tuple:
    """(name, catalog tier id, kind, appliance part, count, aggregate read GB/s, notes, protection)."""
    from trainsizer.plan.buildout.facility import site_scale

    cat = b.catalog
    if b.nodes < rules.value("storage", "pfs_min_nodes"):
        nvme = cat.storage_tier(local_tier_id(b))
        if site_scale(b) == "workstation":  # its own NVMe holds data and checkpoints: no file server
            return (msg("storage_tier_nvme_only"), nvme.id, nvme.kind, None, 0, nvme.read_gb_s_per_node.low,
                    [msg("storage_note_workstation")], cited("none", msg("storage_protection_none"), "convention"))
        nfs = cat.part("nfs-server-nvme")
        notes = [msg("storage_note_local")]
        return (msg("storage_tier_local"), nvme.id, nvme.kind, nfs.id, 1, nvme.read_gb_s_per_node.low, notes,
                _protection("nfs_protection"))
    app = cat.part("pfs-appliance-ai400x2")
    prot = _protection("pfs_protection")
    raw_tb = capacity_tb / _efficiency(prot.value)
    by_bw = ceil_div(max(write_gb_s / app.write_gb_s, read_gb_s / app.read_gb_s), 1)
    by_cap = ceil_div(raw_tb, app.capacity_tb) if app.capacity_tb else 1
    least = rules.value("storage", "pfs_min_appliances")
    count = max(by_bw, by_cap, least)
    notes = [msg("storage_note_sized", count=count, name=app.name, write=f"{write_gb_s:.1f}", app_write=f"{app.write_gb_s:g}",
                 read=f"{read_gb_s:.1f}", app_read=f"{app.read_gb_s:g}"),
             msg("storage_note_capacity", raw=f"{raw_tb:.3g}", app_tb=f"{app.capacity_tb:g}", by_cap=by_cap,
                 by_bw=by_bw, least=least),
             msg("storage_note_any_pfs")]
    return (msg("storage_tier_pfs"), "lustre-ddn", "parallel_fs",
            app.id, count, count * app.read_gb_s, notes, prot)
