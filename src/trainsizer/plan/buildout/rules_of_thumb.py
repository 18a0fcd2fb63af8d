"""The `rules_of_thumb` block: the guides' rule beside trainsizer's derived figure, and why they differ."""

from __future__ import annotations

from trainsizer.plan.buildout import rules
from trainsizer.plan.buildout.common import Block
from trainsizer.plan.buildout.inputs import BuildInput


class Thumb(Block):
    topic: str
    guide: str
    guide_value: str
    ours: str
    agrees: bool
    why: str
    source: str


def _range(v) -> tuple[float, float]:
    return (float(v[0]), float(v[1])) if isinstance(v, list) else (float(v), float("inf"))


def thumbs(b: BuildInput, blocks: dict) -> list[Thumb]:
    node, fac = blocks["node"], blocks["facility"]
    gpu_mem = b.per_node * b.accelerator.memory_gib
    out = []
    r = rules.rule("rules_of_thumb", "ram_x_gpu_memory")
    lo, hi = _range(r.value)
    ratio = node.ram_gib.value / gpu_mem if gpu_mem else 0.0
    out.append(Thumb(topic="host RAM", guide=r.note, guide_value=f"{lo:g}-{hi:g} x {gpu_mem:g} GiB",
                     ours=f"{node.ram_gib.value:g} GiB ({ratio:.2f} x GPU memory)", agrees=lo <= ratio <= hi,
                     why="derived from what the job keeps on the host: " + ", ".join(
                         f"{k} {v:g}" for k, v in node.ram_breakdown_gib.items() if v),
                     source=r.source))
    r = rules.rule("rules_of_thumb", "cores_per_gpu")
    lo, hi = _range(r.value)
    per_gpu = node.cpu_cores.value / b.per_node
    out.append(Thumb(topic="CPU cores per GPU", guide=r.note, guide_value=f"{lo:g}-{hi:g}",
                     ours=f"{node.cpu_cores.value} cores ({per_gpu:.1f} per GPU)", agrees=lo <= per_gpu <= hi,
                     why="derived: " + ", ".join(f"{k} {v:g}" for k, v in node.cpu_cores_breakdown.items() if v)
                     + "; text tokenisation needs little CPU, image/video decoding needs far more",
                     source=r.source))
    r = rules.rule("rules_of_thumb", "air_rack_kw")
    lo, hi = _range(r.value)
    out.append(Thumb(topic="air-cooled rack power", guide=r.note, guide_value=f"{lo:g}-{hi:g} kW",
                     ours=f"{fac.rack_kw_max:.1f} kW per rack, {fac.cooling.value}", agrees=fac.rack_kw_max <= hi,
                     why=fac.cooling.rule, source=r.source))
    r = rules.rule("rules_of_thumb", "nvme_write_gb_s_min")
    st = blocks["storage"]
    per_node = st.write_gb_s_sync.value / b.nodes
    out.append(Thumb(topic="checkpoint write per node", guide=r.note, guide_value=f"> {r.value:g} GB/s",
                     ours=f"{per_node:.3g} GB/s per node needed", agrees=per_node <= r.value,
                     why=f"sized so blocking saves stay under {st.stall_share_target.value:.0%} at the Young/Daly "
                         "interval", source=r.source))
    return out
