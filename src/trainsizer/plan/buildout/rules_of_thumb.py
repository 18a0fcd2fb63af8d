"""The `rules_of_thumb` block: the guides' rule beside trainsizer's derived figure, and why they differ."""

from __future__ import annotations

from typing import Any

from trainsizer.messages import msg
from trainsizer.plan.buildout import rules
from trainsizer.plan.buildout.common import Block
from trainsizer.plan.buildout.facility import COOLING_KEYS
from trainsizer.plan.buildout.inputs import BuildInput
from trainsizer.plan.texts import MessageRef, listed


class Thumb(Block):
    topic: str
    topic_msg: MessageRef | None = None
    guide: str
    guide_msg: MessageRef | None = None  # the guide's rule in the reader's language (quoted in Chinese, translated)
    guide_value: str
    ours: str
    ours_msg: MessageRef | None = None
    agrees: bool
    why: str
    why_msg: MessageRef | None = None
    source: str


def _host(parts: dict[str, float]) -> Any:
    """'os_reserved 4, training_processes 32, ...' as one message (named in the reader's language)."""
    return listed([msg("host_part", name=msg(f"host_{k}"), value=f"{v:g}") for k, v in parts.items() if v])


# The guides' host rules are floors ("应达到 1.5-2 倍", "至少 8~16 个"): a server above the range agrees with them.
def _range(v) -> tuple[float, float]:
    return (float(v[0]), float(v[1])) if isinstance(v, list) else (float(v), float("inf"))


def _tray(b: BuildInput) -> bool:
    """A node that is one compute tray of a rack-scale server (NVL72): its CPUs and memory are the tray's."""
    return b.server is not None and b.nvl72 and b.server.gpus > b.per_node


def _server_figures(b: BuildInput, node: Any) -> tuple[Any, float | None, int | None]:
    """(server, its RAM, its cores) per node when the plan's server is known and covers what the job needs:
    that is what the plan proposes to buy, so the guides' rules are read against it; otherwise the derived
    minimum. An NVL72 node is one compute tray: the node block's tray share of the rack (2 Grace CPUs and
    their LPDDR5X per tray), not the whole rack, nor nothing."""
    srv = b.server
    if srv is None or (srv.gpus != b.per_node and not _tray(b)):
        return None, None, None
    ram = node.server_ram_gib if node.server_ram_gib and node.enough.get("ram_gib") else None
    cores = node.server_cpu_cores if node.server_cpu_cores and node.enough.get("cpu_cores") else None
    return srv, ram, cores


def _server_label(b: BuildInput, srv: Any) -> Any:
    return msg("thumb_server_tray", server=srv.id, gpus=b.per_node) if _tray(b) else srv.id


def _ram_thumb(b: BuildInput, node: Any, gpu_mem: float) -> Thumb:
    r = rules.rule("rules_of_thumb", "ram_x_gpu_memory")
    lo, hi = _range(r.value)
    need = node.ram_gib.value
    ratio = need / gpu_mem if gpu_mem else 0.0
    srv, srv_ram, _ = _server_figures(b, node)
    why = msg("thumb_why_ram", parts=_host(node.ram_breakdown_gib))
    if srv_ram is None:
        return Thumb(topic=msg("thumb_topic_ram"), guide=r.note, guide_value=f"{lo:g}-{hi:g} x {gpu_mem:g} GiB",
                     ours=msg("thumb_ours_ram", gib=f"{need:g}", ratio=f"{ratio:.2f}"),
                     agrees=lo <= ratio, why=why, source=r.source)
    buy = srv_ram / gpu_mem
    if buy < lo:  # the guide's multiple of HBM against what the host really holds
        # a tray's memory is what its Grace CPUs carry (soldered LPDDR5X): nothing to add at order time
        rule = dict(derived=why, lo_gib=f"{lo * gpu_mem:g}", hi_gib=f"{hi * gpu_mem:g}", need=f"{need:g}")
        why = (msg("thumb_why_ram_tray", **rule, server_gib=f"{srv_ram:g}") if _tray(b)
               else msg("thumb_why_ram_rule", **rule))
    return Thumb(topic=msg("thumb_topic_ram"), guide=r.note, guide_value=f"{lo:g}-{hi:g} x {gpu_mem:g} GiB",
                 ours=msg("thumb_ours_ram_server", server=_server_label(b, srv), server_gib=f"{srv_ram:g}",
                          server_ratio=f"{buy:.2f}", gib=f"{need:g}", ratio=f"{ratio:.2f}"),
                 agrees=lo <= buy, why=why, source=r.source)


def _cores_thumb(b: BuildInput, node: Any) -> Thumb:
    r = rules.rule("rules_of_thumb", "cores_per_gpu")
    lo, hi = _range(r.value)
    need = node.cpu_cores.value
    per_gpu = need / b.per_node
    srv, _, srv_cores = _server_figures(b, node)
    why = msg("thumb_why_cores", parts=_host(node.cpu_cores_breakdown))
    if srv_cores is None:
        return Thumb(topic=msg("thumb_topic_cores"), guide=r.note, guide_value=f"{lo:g}-{hi:g}",
                     ours=msg("thumb_ours_cores", cores=need, per_gpu=f"{per_gpu:.1f}"),
                     agrees=lo <= per_gpu, why=why, source=r.source)
    buy = srv_cores / b.per_node
    return Thumb(topic=msg("thumb_topic_cores"), guide=r.note, guide_value=f"{lo:g}-{hi:g}",
                 ours=msg("thumb_ours_cores_server", server=_server_label(b, srv), server_cores=srv_cores,
                          server_per_gpu=f"{buy:.1f}", cores=need, per_gpu=f"{per_gpu:.1f}"),
                 agrees=lo <= buy, why=why, source=r.source)


def thumbs(b: BuildInput, blocks: dict) -> list[Thumb]:
    """The guides' rules beside the plan: host RAM and cores read against the server the plan proposes when
    it covers the job's derived need (what a buyer orders), else against the derived minimum."""
    node, fac = blocks["node"], blocks["facility"]
    gpu_mem = b.per_node * b.accelerator.memory_gib
    out = [_ram_thumb(b, node, gpu_mem), _cores_thumb(b, node)]
    r = rules.rule("rules_of_thumb", "air_rack_kw")
    lo, hi = _range(r.value)
    if fac.racks:  # a workstation or a rented cluster has no rack of its own to cool
        out.append(Thumb(topic=msg("thumb_topic_air_rack"), guide=r.note, guide_value=f"{lo:g}-{hi:g} kW",
                         ours=msg("thumb_ours_air_rack", kw=f"{fac.rack_kw_max:.1f}",
                                  cooling=msg(COOLING_KEYS[fac.cooling.value])),
                         agrees=fac.rack_kw_max <= hi, why=fac.cooling.rule, why_msg=fac.cooling.rule_msg,
                         source=r.source))
    r = rules.rule("rules_of_thumb", "nvme_write_gb_s_min")
    st = blocks["storage"]
    per_node = st.write_gb_s_sync.value / b.nodes
    out.append(Thumb(topic=msg("thumb_topic_ckpt_write"), guide=r.note, guide_value=f"> {r.value:g} GB/s",
                     ours=msg("thumb_ours_ckpt_write", gb_s=f"{per_node:.3g}"), agrees=per_node <= r.value,
                     why=msg("thumb_why_ckpt_write", share=f"{st.stall_share_target.value:.0%}"), source=r.source))
    return out
