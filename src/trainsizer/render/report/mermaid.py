"""The deployment architecture as Mermaid flowchart text (for Markdown viewers that draw Mermaid)."""

from __future__ import annotations

from collections.abc import Mapping

from trainsizer.render.report.diagram import TIER_RANK, domain_text, group_nodes, rack_groups, title
from trainsizer.render.report.facts import as_dict
from trainsizer.render.report.fmt import Fmt
from trainsizer.render.report.i18n import has, t
from trainsizer.render.report.topology import Topology, topology


def _q(text: str) -> str:
    """A Mermaid node label: double quotes and brackets are written as entities."""
    return '"' + text.replace('"', "#quot;").replace("[", "#91;").replace("]", "#93;") + '"'


def _link(topo: Topology, a: str, b: str, f: Fmt) -> str:
    for ln in topo.links:
        if {ln.src, ln.dst} == {a, b}:
            return f"{f.num(ln.count)} × {f.num(ln.gbps)} Gb/s" if ln.gbps else f.num(ln.count)
    return ""


def _rack_lines(topo: Topology, f: Fmt) -> list[str]:
    L = f.lang
    per, real, shown = rack_groups(topo)
    dom = domain_text(topo, f) if topo.nvlink_domain_gpus else ""
    lines = []
    for g in shown:
        if g is None:
            key = "dg.more_racks" if real else "dg.more"
            left = -(-topo.nodes // per) - 3
            lines.append(f"    more[{_q('… ' + t(key, L, groups=f.num(left), nodes=f.num(per * left)))}]")
            continue
        nodes = group_nodes(topo, g, per)[1]
        head = t("dg.rack" if real else "dg.group", L, n=f.num(g + 1))
        body = t("mm.trays" if topo.domain_size_gpus else "mm.nodes", L, nodes=f.num(nodes),
                 gpus=f.num(topo.gpus_per_node), accelerator=topo.accelerator)
        lines.append(f"    r{g + 1}[{_q(f'{head}: {body}' + (f' · {dom}' if dom else ''))}]")
    return lines


def render_mermaid(plan: Mapping, lang: str) -> str:
    f = Fmt(lang)
    topo = topology(as_dict(plan, lang, keep=True), lang)
    if topo is None:
        return f"flowchart TB\n  none[{_q(t('dg.none', lang))}]\n"
    out = ["flowchart TB"]
    head = title(topo, f)
    tiers = sorted(topo.tiers, key=lambda s: TIER_RANK.get(s.name, 1.5))
    for tier in tiers:
        name = t(f"dg.tier.{tier.name}", lang) if has(f"dg.tier.{tier.name}") else tier.name
        extra = " · ".join(x for x in (tier.model, f"{f.num(tier.radix)} × {f.num(tier.gbps)} Gb/s"
                                       if tier.radix and tier.gbps else "") if x)
        out.append(f"  {tier.name.replace('-', '_')}[{_q(f'{name} × {f.num(tier.count)}' + (f' · {extra}' if extra else ''))}]")
    for upper, lower in zip(tiers, tiers[1:], strict=False):
        label = _link(topo, upper.name, lower.name, f)
        out.append(f"  {upper.name.replace('-', '_')} ---|{_q(label)}| {lower.name.replace('-', '_')}" if label else
                   f"  {upper.name.replace('-', '_')} --- {lower.name.replace('-', '_')}")
    out.append(f"  subgraph racks[{_q(head)}]")
    out.extend(_rack_lines(topo, f))
    out.append("  end")
    if tiers:
        leaf = tiers[-1].name.replace("-", "_")
        label = _link(topo, "node", tiers[-1].name, f)
        out.append(f"  {leaf} ---|{_q(label)}| racks" if label else f"  {leaf} --- racks")
    elif topo.nodes > 1:
        none = t("dg.provider_switches" if topo.provided else "dg.no_switches", lang)
        out.append(f"  fabric[{_q((topo.fabric or '—') + ' · ' + none)}] --- racks")
    out.append(f"  storage[({_q(t('dg.storage', lang) + ': ' + (topo.storage or t('dg.not_in_plan', lang)))})] -.- racks")
    out.append(f"  mgmt[{_q(t('dg.management', lang) + ': ' + (topo.management or t('dg.not_in_plan', lang)))}] -.- racks")
    return "\n".join(out) + "\n"
