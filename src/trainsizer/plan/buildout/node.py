"""The `node` block: host CPU cores, RAM and local NVMe per node derived from the job, beside the guides' rules
of thumb and the chosen server's own figures.

Cores = OS reserve + per GPU (main process + data-loader workers + checkpoint thread) + tokenisation processes
for the node's token stream + CPU-Adam cores when the optimizer is offloaded.
RAM = OS reserve + per GPU (process + pinned buffers) + async checkpoint staging (the node's share of one
checkpoint, PyTorch DCP async_save) + offloaded optimizer states (+ parameters) + page cache for the node's
dataset shard.
NVMe = container images + the node's dataset shard + staged checkpoint shards, with headroom.
"""

from __future__ import annotations

from typing import Any

from trainsizer.estimate import host_memory
from trainsizer.messages import msg
from trainsizer.plan.buildout import rules
from trainsizer.plan.buildout.common import Block, Cited, ceil_div, cited
from trainsizer.plan.buildout.inputs import BuildInput, acquisition
from trainsizer.plan.buildout.storage import checkpoint_bytes, dataset_bytes, local_tier_id
from trainsizer.plan.texts import MessageRef


class NodeBlock(Block):
    server: str | None
    gpus_per_node: int
    cpu_cores: Cited
    cpu_cores_breakdown: dict[str, float]
    ram_gib: Cited
    ram_breakdown_gib: dict[str, float]
    nvme_tb: Cited
    nvme_read_gb_s: Cited
    nvme_write_gb_s: Cited
    server_cpu_cores: int | None
    server_ram_gib: float | None
    server_nvme_tb: float | None
    enough: dict[str, bool | None]
    notes: list[str]
    notes_msg: list[MessageRef | None] | None = None


def offloaded_gib_per_node(b: BuildInput) -> float:
    """The optimizer / parameter states the layout keeps in host RAM, GiB a node: the memory estimate's figure
    (MemoryEstimate.host_bytes_per_node: ZeRO-Offload's fp32 master weights, Adam moments and fp32 gradients, + the
    16-bit weights under parameter offload, sharded as the strategy shards them), the one the plan prices
    (evaluate.host_ram_block)."""
    return float((b.evaluation.get("memory") or {}).get("host_gib_per_node") or 0.0)


def cores(b: BuildInput) -> tuple[int, dict[str, float]]:
    g = b.per_node
    per_gpu = (rules.value("node", "cores_per_rank_main") + rules.value("node", "loader_workers_per_gpu")
               + rules.value("node", "checkpoint_threads_per_gpu"))
    text_bytes_s = b.tokens_per_s / b.nodes * b.job.data.bytes_per_token
    tokenise = ceil_div(text_bytes_s, rules.value("node", "tokenizer_bytes_per_s_per_process"))
    adam = 0.0
    if offloaded_gib_per_node(b) > 0:
        step_s = float(b.evaluation["time"]["step_s"])
        params_node = float(b.scenario.model.params_total) / (b.strategy.tp * b.strategy.pp) * g / max(1, b.strategy.dp)
        adam = ceil_div(params_node / max(step_s, 1e-9), rules.value("node", "cpu_adam_params_per_s_per_core"))
    parts = {"os_reserved": rules.value("node", "os_reserved_cores"), "training_processes": g * per_gpu,
             "tokenisation": tokenise, "cpu_adam_offload": adam}
    return int(sum(parts.values())), parts


def ram(b: BuildInput) -> tuple[float, dict[str, float]]:
    """The node's host RAM need by part (estimate.host_memory.need_parts: the one definition the ranking's host-RAM
    price and the search's host verdict read too)."""
    parts = host_memory.need_parts(b.per_node, b.nodes, checkpoint_bytes(b), b.job.data.tokens_per_epoch,
                                   offloaded_gib_per_node(b))
    return sum(parts.values()), parts


def nvme_tb(b: BuildInput) -> float:
    tok, _ = dataset_bytes(b)
    need = (rules.value("node", "container_images_gb") * 1e9 + tok / b.nodes
            + rules.value("node", "checkpoints_staged_locally") * checkpoint_bytes(b) / b.nodes)
    return need * rules.value("node", "nvme_headroom") / 1e12


def server_share(b: BuildInput) -> tuple[float | None, float | None, float | None, list[Any]]:
    """The server's cores, RAM and NVMe that one node has. A rack-scale record (NVL72: 18 identical compute trays
    of 4 GPUs, each with its own 2 Grace CPUs and LPDDR5X) is shared out per tray; a node that uses part of an
    ordinary server still has the whole server's CPUs and memory."""
    srv = b.server
    if srv is None:
        return None, None, None, []
    if srv.gpus <= b.per_node:
        return srv.cpu_cores, srv.ram_gib, srv.nvme_tb, []
    if b.nvl72:
        k = b.per_node / srv.gpus
        cores, ram_gib, tb = (None if v is None else v * k for v in (srv.cpu_cores, srv.ram_gib, srv.nvme_tb))
        note = msg("node_note_rack_tray_sourced", used=b.per_node, gpus=srv.gpus, server=srv.id, sources=", ".join(srv.sources))
        return (None if cores is None else round(cores), ram_gib, tb, [note])
    return (srv.cpu_cores, srv.ram_gib, srv.nvme_tb,
            [msg("node_note_partial_server", used=b.per_node, gpus=srv.gpus, server=srv.id)])


def node_block(b: BuildInput) -> NodeBlock:
    n_cores, core_parts = cores(b)
    ram_gib, ram_parts = ram(b)
    tb = nvme_tb(b)
    tier = b.catalog.storage_tier(local_tier_id(b))
    srv = b.server
    s_cores, s_ram, s_nvme, notes = server_share(b)
    if b.server_set_aside is not None:
        held = b.catalog.server(b.server_set_aside).gpus
        notes = [*notes, msg("node_note_workstation_host", gpus=b.per_node, server=b.server_set_aside, held=held)]
    elif srv is None and b.per_node > 1:
        # the search's box for a card no catalog server holds (search.candidates._host_gpus): an assumption to state
        acc = b.accelerator
        key = "node_note_no_server_rented" if acquisition(b) == "rent" else "node_note_no_server"
        notes = [*notes, msg(key, acc=acc.id, gpus=b.per_node,
                             kw=f"{b.per_node * acc.tdp_w / 1000:.1f}", tdp=f"{acc.tdp_w:g}")]
    enough = {"cpu_cores": None if s_cores is None else s_cores >= n_cores,
              "ram_gib": None if s_ram is None else s_ram >= ram_gib,
              "nvme_tb": None if s_nvme is None else s_nvme >= tb}
    return NodeBlock(
        server=srv.id if srv is not None else None, gpus_per_node=b.per_node,
        cpu_cores=cited(n_cores, msg("node_rule_cores"), "megatron_args"),
        cpu_cores_breakdown=core_parts,
        ram_gib=cited(round(ram_gib, 1), msg("node_rule_ram"), "pytorch_dcp_async"),
        ram_breakdown_gib={k: round(v, 2) for k, v in ram_parts.items()},
        nvme_tb=cited(round(tb, 3), msg("node_rule_nvme"), "storage_rules_ref"),
        nvme_read_gb_s=cited(tier.read_gb_s_per_node.low, msg("node_rule_tier_low", tier=tier.name),
                             ", ".join(tier.sources)),
        nvme_write_gb_s=cited(tier.write_gb_s_per_node.low, msg("node_rule_tier_low", tier=tier.name),
                              ", ".join(tier.sources)),
        server_cpu_cores=s_cores, server_ram_gib=s_ram, server_nvme_tb=s_nvme, enough=enough, notes=notes)
