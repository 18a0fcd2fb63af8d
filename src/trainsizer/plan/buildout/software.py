"""The `software` block: a driver / toolkit / collectives / PyTorch stack known to work on the accelerator
(software.yaml, from the reference compatibility matrix), the framework that suits the strategy, and the
scheduler with its generated configuration (Slurm files, or a Kubeflow PyTorchJob manifest). A rented cluster's
scheduler is the provider's (managed Slurm or Kubernetes): the block says what to ask for and writes both layouts;
one rented instance needs none."""

from __future__ import annotations

from typing import Any

import yaml

from trainsizer.messages import catalogue, msg
from trainsizer.plan.buildout import rules, slurm_files
from trainsizer.plan.buildout.common import Block, Cited, cited
from trainsizer.plan.buildout.facility import site_scale
from trainsizer.plan.buildout.inputs import BuildInput, acquisition
from trainsizer.plan.buildout.network import NetworkBlock
from trainsizer.plan.buildout.node import server_share
from trainsizer.plan.texts import MessageRef


class SoftwareBlock(Block):
    family: str
    vendor: str
    driver: str
    driver_msg: MessageRef | None = None  # set for an accelerator without a stack row
    toolkit: str
    toolkit_msg: MessageRef | None = None
    collectives: str
    collectives_msg: MessageRef | None = None
    collectives_version: str
    collectives_version_msg: MessageRef | None = None
    pytorch: str
    pytorch_msg: MessageRef | None = None
    stack_notes: str
    stack_notes_msg: MessageRef | None = None
    framework: Cited
    scheduler: Cited
    files: dict[str, str]
    env: dict[str, str]
    source: str


def stack_for(acc: Any) -> tuple[str, dict]:
    """(family key, stack) whose match words appear in the accelerator's arch or vendor."""
    r = rules.rule("software", "stacks")
    text = f"{acc.arch} {acc.vendor} {acc.name}".lower()
    for key, stack in r.value.items():
        if any(word in text for word in stack["match"]):
            return key, stack
    # an architecture newer than the reference matrix (e.g. an announced part): say so, invent no versions
    unknown = msg("sw_unknown_stack")
    collectives = {"nvidia": "NCCL", "amd": "RCCL", "huawei": "HCCL"}.get(str(acc.vendor).lower(),
                                                                           msg("sw_vendor_library"))
    return "unknown", {"vendor": str(acc.vendor).lower(), "driver_min": unknown, "cuda": unknown, "nccl": unknown,
                       "pytorch": unknown, "collectives": collectives,
                       "notes": msg("sw_no_stack_row", arch=acc.arch)}


def framework_for(b: BuildInput, vendor: str) -> Cited:
    fw = rules.value("software", "frameworks")
    by_vendor = rules.rule("software", "megatron_by_vendor")  # the Megatron-style stack of each vendor's parts
    key, why, source = _framework_key(b, vendor, by_vendor.value)
    if vendor == "amd" and times_rocm_sdpa(b):
        from trainsizer.estimate.calibration import load_constants

        why = msg("sw_why_rocm_sdpa", why=why, **load_constants().sdpa_rate_words(b.system.accelerator))
    name = msg(f"framework_{key}")  # its English is the rule file's `frameworks` entry (a test checks)
    source = source or (by_vendor.source if key == by_vendor.value.get("amd") else "software_stack_ref")
    return cited(name if str(name) == fw[key] else fw[key], why, source)


def _framework_key(b: BuildInput, vendor: str, by_vendor: dict) -> tuple[str, Any, str | None]:
    """(key of `frameworks`, why, its own source or None): the stack the job names where the layout would misname it
    (software.yaml stated_<framework>: a torchtitan EP layout is not Megatron-Core), else the stack the layout and
    method suggest."""
    s = b.strategy
    stated = _stated_rule(s.framework)
    if stated is not None:
        return stated.value, msg("sw_why_stated", framework=s.framework), stated.source
    if not b.scenario.training.trains_base_weights:
        return "peft", msg("sw_why_peft", method=b.job.method), None
    if s.tp > 1 or s.pp > 1 or s.cp > 1 or s.ep > 1 or s.distributed_optimizer:
        return by_vendor.get(vendor, "megatron"), msg("sw_why_megatron", tp=s.tp, pp=s.pp, cp=s.cp, ep=s.ep), None
    if (s.offload if isinstance(s.offload, str) else "none") != "none":
        # the layout's own words for the mode ("optimizer and parameters offloaded"), not the job's token
        return "deepspeed", msg("sw_why_offload", offload=msg(f"layout_offload.{s.offload}")), None
    if (s.zero or 0) >= 3:
        return "fsdp", msg("sw_why_fsdp"), None
    return "ddp", msg("sw_why_ddp"), None


def _stated_rule(framework: str) -> Any:
    """software.yaml `stated_<framework>` where the plan names a stack the job states, else None."""
    name = f"stated_{framework}"
    return rules.rule("software", name) if name in rules.raw("software") else None


def times_rocm_sdpa(b: BuildInput) -> bool:
    """Whether the estimate timed attention as PyTorch SDPA's flash backend (attention_kernel sdpa: the torchtitan /
    torchtune styles, or the job's own choice) at a rate of its own on this part, AOTriton's on CDNA 3 and CDNA 4, a
    fraction of the vendor kernels' (perf_constants.yaml attention.flash_efficiency_sdpa): a figure the AMD plan should
    say it assumes. A part without that figure is timed at FlashAttention-2's."""
    from trainsizer.estimate.calibration import load_constants
    from trainsizer.estimate.step_time import attention_kernel_of

    stated = getattr(b.strategy, "attention_kernel", None)
    style = (b.evaluation.get("framework") or {}).get("perf_style")
    if (stated or (attention_kernel_of(b.strategy, b.scenario.model, style) if style else None)) != "sdpa":
        return False
    return load_constants().sdpa_own_rate(b.system.accelerator)


def pytorchjob(name: str, nodes: int, gpus: int, image: str, resource: str) -> str:
    """A Kubeflow Training Operator PyTorchJob (kubeflow.org/v1): 1 master + (nodes-1) workers."""
    def replica(count: int) -> dict:
        return {"replicas": count, "restartPolicy": "OnFailure", "template": {"spec": {"containers": [{
            "name": "pytorch", "image": image, "command": ["torchrun", "train.py"],
            "resources": {"limits": {resource: gpus}}}]}}}
    specs = {"Master": replica(1)}
    if nodes > 1:
        specs["Worker"] = replica(nodes - 1)
    doc = {"apiVersion": rules.value("software", "pytorchjob_api"), "kind": "PyTorchJob", "metadata": {"name": name},
           "spec": {"nprocPerNode": str(gpus), "pytorchReplicaSpecs": specs}}
    return yaml.safe_dump(doc, sort_keys=False)


def software_block(b: BuildInput, net: NetworkBlock, cores: int, ram_gib: float) -> SoftwareBlock:
    family, stack = stack_for(b.accelerator)
    vendor = stack["vendor"]
    gres_type = b.accelerator.id.split("-")[0]
    kube_kinds = rules.value("software", "kubernetes_when")
    files: dict[str, str] = {}
    kube, rented = b.network_kind in kube_kinds, acquisition(b) == "rent"
    slurm_min = rules.value("software", "slurm_min_version")
    provider = rules.rule("software", "rented_scheduler").source
    if rented and b.nodes == 1:  # one instance: nothing to schedule
        sched = cited(msg("sw_sched_rented_one"), msg("sw_why_rented_one"), provider)
    elif rented:  # the provider runs the scheduler: what to ask for; the files are the layout to hand over
        ask = msg("sw_ask_nvl72", imex=rules.value("software", "slurm_imex_version")) if b.nvl72 else ""
        sched = cited(msg("sw_sched_rented"), msg("sw_why_rented", slurm=slurm_min, nvl72=ask), provider)
    elif kube:
        sched = cited("Kubernetes + Kubeflow PyTorchJob", msg("sw_why_kubernetes", fabric=b.network_kind),
                      "kubeflow_pytorchjob")
    elif b.nodes == 1 and not b.nvl72:  # one bought box: torchrun starts the job; nothing to place across nodes
        workstation = site_scale(b) == "workstation"
        sched = cited(msg("sw_sched_one_node"), msg("sw_why_workstation" if workstation else "sw_why_one_node"),
                      rules.rule("software", "one_node_launcher").source)
    else:
        sched = cited(f"Slurm >= {slurm_min}", msg("sw_why_slurm_multi"), "slurm_ref")
    # Slurm files: a cluster's, or the optional one-node queue of a shared rack server; none for a workstation
    several = (not rented or b.nodes > 1) and not (b.nodes == 1 and not b.nvl72 and site_scale(b) == "workstation")
    if several and (kube or rented):
        resource = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu", "huawei": "huawei.com/Ascend910"}.get(vendor,
                                                                                                      "gpu")
        files["pytorchjob.yaml"] = pytorchjob("trainsizer-job", b.nodes, b.per_node, "REPLACE/with-your-image",
                                              resource)
    if several and (not kube or rented):
        topo = "block" if b.nvl72 else "tree"
        gres_name = "gpu" if vendor in ("nvidia", "amd") else "npu"
        # node lines describe the installed hardware (what `slurmd -C` reports), not the job's minimum
        # (an NVL72 node is a compute tray: its share of the rack record, 2 Grace = 144 cores, node.server_share)
        srv_cores = srv_ram = None
        if b.server is not None and (b.server.gpus == b.per_node or b.nvl72):
            srv_cores, srv_ram = server_share(b)[:2]
        hw_cores = srv_cores or cores
        hw_ram = srv_ram or ram_gib
        files["slurm.conf"] = slurm_files.slurm_conf("trainsizer", b.nodes, hw_cores, hw_ram, b.per_node,
                                                     gres_type, gres_name, topo, imex=b.nvl72)
        files["gres.conf"] = slurm_files.gres_conf(vendor, b.nodes, b.per_node, gres_type)
        if b.nvl72:
            files["topology.conf"] = slurm_files.topology_block([g // b.per_node for g in b.rack_shares])
        elif net.compute is not None and net.compute.tiers >= 1 and b.nodes > 1:
            su = net.compute.nodes_per_su or b.nodes
            files["topology.conf"] = slurm_files.topology_tree(b.nodes, min(su, b.nodes), net.compute.spines)
    env = _nccl_env(b, net, stack)
    return SoftwareBlock(family=family, vendor=vendor, driver=_said(family, "driver_min", stack),
                         toolkit=_said(family, "cuda", stack), collectives=stack["collectives"],
                         collectives_version=_said(family, "nccl", stack), pytorch=_said(family, "pytorch", stack),
                         stack_notes=_stack_notes(family, stack),
                         framework=framework_for(b, vendor), scheduler=sched, files=files, env=env,
                         source="software_stack_ref")


def _said(family: str, field: str, stack: dict, key: str | None = None) -> Any:
    """A stack's text (a version with words, its notes) as a catalogue message when the catalogue has it as
    the rule file writes it (`stack_<family>_<field>`); else the rule file's text (a bare version)."""
    text = stack.get(field, "")
    key = key or f"stack_{family}_{field}"
    if isinstance(text, str) and key in catalogue() and catalogue()[key]["en"] == text:
        return msg(key)
    return text


def _stack_notes(family: str, stack: dict) -> Any:
    return _said(family, "notes", stack, f"stack_notes_{family}")


def _nccl_env(b: BuildInput, net: NetworkBlock, stack: dict) -> dict[str, str]:
    if stack["collectives"] != "NCCL":
        return {}
    env = {}
    if b.accelerator.nvls:
        env["NCCL_NVLS_ENABLE"] = "2"
    if b.network_kind == "roce":
        env["NCCL_IB_TC"] = "105"
        env["NCCL_IB_ROCE_VERSION_NUM"] = "2"
    if collnet_helps(b, net):
        env["NCCL_COLLNET_ENABLE"] = "1"
    return env


def collnet_helps(b: BuildInput, net: NetworkBlock) -> bool:
    """IB SHARP (NCCL CollNet, off by default) only where the fabric has it and it pays: SHARP-capable switches,
    rail-aligned leaves (HPC-X: one aggregation flow per HCA rail), and a gradient all-reduce across at least
    `collnet_min_domains` NVLink domains (each NIC then sends S once instead of the ring's 2 (N-1)/N S)."""
    ar, fabric = net.allreduce, net.compute
    if not (net.sharp and b.network_kind == "ib" and ar is not None and fabric is not None):
        return False
    rail = fabric.topology_msg is not None and fabric.topology_msg.key == "net_topology_rail_fat_tree"
    domains = -(-ar.ranks // max(1, ar.ranks_per_domain))
    return (rail or b.nics_per_node <= 1) and domains >= rules.value("software", "collnet_min_domains")
