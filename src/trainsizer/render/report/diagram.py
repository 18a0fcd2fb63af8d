"""The deployment architecture as SVG (drawsvg), drawn from the plan's topology.

Top to bottom: switch tiers (core, spine, leaf) with counts, models and link bundles; racks of nodes, each
node with its GPUs, NVLink domain and NICs coloured by rail; storage and management networks beside.
Large clusters are drawn grouped (first racks, an ellipsis naming what is left out, the last rack) so the
drawing stays legible at thousands of nodes.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping

import drawsvg as dw

from trainsizer.render.report.charts import PALETTE
from trainsizer.render.report.facts import as_dict
from trainsizer.render.report.fmt import Fmt
from trainsizer.render.report.i18n import has, t
from trainsizer.render.report.topology import SCALEUP_DOMAINS, Tier, Topology, topology

W = 1280
LEFT, RIGHT = 20, 1000          # racks and switches; storage/management to the right
FONT = "Noto Sans CJK SC, Noto Sans, DejaVu Sans, sans-serif"
TIER_RANK = {"core": 0, "super-spine": 0, "spine": 1, "leaf": 2}
MAX_NODES_DRAWN = 32
SWITCHES_DRAWN = 12
GPU, NODE_H, TIER_H = 10, 36, 78


def _text(x: float, y: float, s: str, size: int = 12, anchor: str = "start", **kw) -> dw.Text:
    return dw.Text(s, size, x, y, text_anchor=anchor, font_family=FONT, fill=kw.pop("fill", "#222"), **kw)


def rack_groups(topo: Topology) -> tuple[int, bool, list[int | None]]:
    """(nodes per group, groups are real racks, shown group indices with None for the ellipsis)."""
    # Racks for nodes, when the plan counts them, say how many nodes share a rack; else its nodes_per_rack. An NVL72
    # plan's racks hold the job's trays as it is placed (72 + 64 + 64 GPUs: 18, 16 and 16 trays)
    trays = _trays_by_rack(topo)
    per = max(trays) if trays else -(-topo.nodes // topo.racks) if topo.racks else \
        topo.nodes_per_rack or min(topo.nodes, 4)
    groups = -(-topo.nodes // per)
    # three groups or fewer are drawn whole: the short form (first two, an ellipsis, the last) needs four
    if groups <= 3 or (topo.nodes <= MAX_NODES_DRAWN and groups <= 8):
        return per, bool(topo.racks or topo.nodes_per_rack), list(range(groups))
    return per, bool(topo.racks or topo.nodes_per_rack), [0, 1, None, groups - 1]


def _trays_by_rack(topo: Topology) -> list[int]:
    """The job's hosts in each rack where the plan places it rack by rack (NVL72), else []."""
    shares = topo.job_gpus_by_domain
    if not shares or (topo.racks and len(shares) != topo.racks) or sum(shares) != topo.nodes * topo.gpus_per_node:
        return []
    return [g // topo.gpus_per_node for g in shares]


def group_nodes(topo: Topology, g: int, per: int) -> tuple[int, int]:
    """(first node, nodes) of drawing group `g`: the rack's own trays where the plan places the job rack by rack."""
    trays = _trays_by_rack(topo)
    if trays:
        return sum(trays[:g]), trays[g]
    return g * per, min(per, topo.nodes - g * per)


def _draw_node(d: dw.Drawing, x: float, y: float, w: float, topo: Topology, node: int, nic_xy: list) -> None:
    d.append(dw.Rectangle(x, y, w, NODE_H - 4, fill="#f4f6fa", stroke="#556", stroke_width=1, rx=3))
    d.append(_text(x + 3, y + 11, f"#{node + 1}", 8, fill="#556"))
    n = topo.gpus_per_node
    per_row = min(n, 8)
    for g in range(n):
        gx, gy = x + 34 + (g % per_row) * (GPU + 2), y + 3 + (g // per_row) * (GPU + 2)
        d.append(dw.Rectangle(gx, gy, GPU, GPU, fill="#76b900", stroke="#3d6000", stroke_width=0.5))
    dom = topo.nvlink_domain_gpus
    if dom and dom <= n:
        rows = -(-n // per_row)
        d.append(dw.Rectangle(x + 31, y + 1, per_row * (GPU + 2) + 4, rows * (GPU + 2) + 2, fill="none",
                              stroke="#2ca02c", stroke_dasharray="3,2", stroke_width=1.2))
    for r in range(topo.nics_per_node or 0):
        cx = x + 8 + r * min(10, (w - 16) / max(1, topo.nics_per_node))
        d.append(dw.Circle(cx, y + NODE_H - 8, 3, fill=PALETTE[r % len(PALETTE)], stroke="none"))
        nic_xy.append((cx, y + NODE_H - 8, r))


def _draw_racks(d: dw.Drawing, topo: Topology, y0: float, f: Fmt) -> tuple[float, float, list]:
    """Racks (or drawing groups) of nodes; returns the bottom y, the right edge of the last group and NIC
    positions (x, y, rail)."""
    L = f.lang
    per, real, shown = rack_groups(topo)
    rw = min(190.0, (RIGHT - LEFT - 10 * len(shown)) / len(shown))
    nic_xy: list = []
    height = 26 + per * NODE_H
    for k, g in enumerate(shown):
        x = LEFT + k * (rw + 10)
        if g is None:
            left_out = -(-topo.nodes // per) - 3      # groups 0, 1 and the last are drawn
            nodes_out = per * left_out
            d.append(dw.Rectangle(x, y0, rw, height, fill="#fafafa", stroke="#999", stroke_dasharray="6,4"))
            d.append(_text(x + rw / 2, y0 + height / 2, "…", 28, "middle", fill="#666"))
            d.append(_text(x + rw / 2, y0 + height / 2 + 22, t("dg.more_racks" if real else "dg.more", L, groups=f.num(left_out),
                                                                    nodes=f.num(nodes_out)), 11, "middle"))
            continue
        first, count = group_nodes(topo, g, per)
        d.append(dw.Rectangle(x, y0, rw, height, fill="white", stroke="#333" if real else "#999",
                              stroke_width=1.5, stroke_dasharray=None if real else "5,3", rx=4))
        label = t("dg.rack" if real else "dg.group", L, n=f.num(g + 1))
        d.append(_text(x + 4, y0 + 15, label, 11))
        for i in range(count):
            _draw_node(d, x + 5, y0 + 22 + i * NODE_H, rw - 10, topo, first + i, nic_xy)
        dom = topo.nvlink_domain_gpus
        if dom and dom > topo.gpus_per_node:
            span = min(count, dom // topo.gpus_per_node)
            d.append(dw.Rectangle(x + 2, y0 + 19, rw - 4, span * NODE_H + 2, fill="none", stroke="#2ca02c",
                                  stroke_dasharray="4,2", stroke_width=1.5))
    return y0 + height, LEFT + len(shown) * (rw + 10) - 10, nic_xy


def _switch_row(d: dw.Drawing, tier: Tier, y: float, f: Fmt, rails: int | None) -> list[tuple[float, float, int]]:
    """One tier of switches; returns their centres and the switch index each box stands for."""
    shown = list(range(tier.count)) if tier.count <= SWITCHES_DRAWN else [0, 1, 2, 3, None, tier.count - 1]
    bw = min(80.0, (RIGHT - LEFT - 300) / len(shown) - 8)
    boxes = []
    for k, s in enumerate(shown):
        x = LEFT + 300 + k * (bw + 8)
        if s is None:
            d.append(_text(x + bw / 2, y + 18, "…", 20, "middle", fill="#666"))
            continue
        color = PALETTE[s % rails % len(PALETTE)] if rails and tier.name == "leaf" and tier.count % rails == 0 else "#dde3ec"
        d.append(dw.Rectangle(x, y, bw, 26, fill=color, fill_opacity=0.35, stroke="#334", rx=3))
        d.append(_text(x + bw / 2, y + 17, f"{tier.name[:1].upper()}{s + 1}", 10, "middle"))
        boxes.append((x + bw / 2, y + 26, s))
    speed = f"{f.num(tier.radix)} × {f.num(tier.gbps)} Gb/s" if tier.radix and tier.gbps else ""
    label = t("dg.tier", f.lang, tier=t(f"dg.tier.{tier.name}", f.lang) if _has_tier(tier.name) else tier.name,
              count=f.num(tier.count))
    d.append(_text(LEFT, y + 12, label, 12, font_weight="bold"))
    d.append(_text(LEFT, y + 27, " · ".join(x for x in (tier.model, speed) if x), 10, fill="#444"))
    return boxes


def _has_tier(name: str) -> bool:
    return has(f"dg.tier.{name}")


def _link_label(topo: Topology, src: str, dst: str, f: Fmt) -> str:
    for ln in topo.links:
        if {ln.src, ln.dst} == {src, dst}:
            return f"{f.num(ln.count)} × {f.num(ln.gbps)} Gb/s" if ln.gbps else f.num(ln.count)
    return ""


def _fabric(d: dw.Drawing, topo: Topology, y: float, nic_xy: list, f: Fmt, racks_y: float) -> float:
    """Switch tiers top-down, links between them, and rails from NICs to the lowest tier."""
    L = f.lang
    tiers = sorted(topo.tiers, key=lambda s: TIER_RANK.get(s.name, 1.5))
    if not tiers:
        label = topo.fabric or "—"
        if topo.nics_per_node and topo.nic_gbps:
            label += f" · {t('dg.per_node', L, n=f.num(topo.nics_per_node), gbps=f.num(topo.nic_gbps))}"
        d.append(dw.Rectangle(LEFT + 300, y, 400, 30, fill="#eef", stroke="#334", rx=4))
        d.append(_text(LEFT + 500, y + 19, label, 12, "middle"))
        d.append(_text(LEFT, y + 19, t("dg.provider_switches" if topo.provided else "dg.no_switches", L), 11,
                       fill="#335" if topo.provided else "#a33"))
        for x, ny, r in nic_xy:
            d.append(dw.Line(x, ny, LEFT + 500, y + 30, stroke=PALETTE[r % len(PALETTE)], stroke_width=0.6,
                             stroke_opacity=0.6))
        return y + 30
    rows = []
    for i, tier in enumerate(tiers):
        rows.append((tier, _switch_row(d, tier, y + i * TIER_H, f, topo.rails)))
    for (upper, ub), (lower, lb) in zip(rows, rows[1:], strict=False):
        for ux, uy, _ in ub:
            for lx, _, _ in lb:
                d.append(dw.Line(ux, uy, lx, uy + TIER_H - 26, stroke="#889", stroke_width=0.6))
        d.append(_text(RIGHT - 10, uy + 30, _link_label(topo, lower.name, upper.name, f), 11, "end", fill="#335"))
    leaf, leaf_boxes = rows[-1]
    for x, ny, r in nic_xy:
        target = next((b for b in leaf_boxes if topo.rails and b[2] % topo.rails == r % topo.rails), None)
        target = target or leaf_boxes[r % len(leaf_boxes)]
        d.append(dw.Line(x, ny, target[0], target[1], stroke=PALETTE[r % len(PALETTE)], stroke_width=0.7,
                         stroke_opacity=0.7))
    bottom = y + (len(tiers) - 1) * TIER_H + 26
    d.append(_text(RIGHT - 10, (bottom + racks_y) / 2 + 4, _link_label(topo, "node", leaf.name, f), 11, "end",
                   fill="#335"))
    return bottom


def domain_text(topo: Topology, f: Fmt) -> str:
    """The scale-up domain's legend: its size, and what the job uses of it where that is less (a buyer of 128 GB200
    reads 'NVLink domain (64 of 72 GPUs used)', not a 72-GPU domain the job fills)."""
    tech = SCALEUP_DOMAINS[topo.scaleup_tech]
    size, used = topo.domain_size_gpus or topo.nvlink_domain_gpus, topo.job_gpus_per_domain
    gpus = topo.nodes * topo.gpus_per_node
    if not used or used >= (size or 0):
        return t("dg.nvlink", f.lang, n=f.num(size), tech=tech)
    shares = topo.job_gpus_by_domain
    if gpus <= used or (len(set(shares)) == 1 if shares else gpus % used == 0):
        return t("dg.nvlink_part", f.lang, n=f.num(size), used=f.num(used), tech=tech)
    return t("dg.nvlink_spread", f.lang, n=f.num(size), used=f.num(used), tech=tech, gpus=f.num(gpus),
             shares=" + ".join(f.num(g) for g in shares) if shares else f.num(used))


def title(topo: Topology, f: Fmt) -> str:
    """The drawing's title: nodes (trays of a rack-scale domain), GPUs and the compute fabric (none named inside one
    node)."""
    key = ("dg.title_trays" if topo.domain_size_gpus else "dg.title") if topo.nodes > 1 else "dg.title_one_node"
    return t(key, f.lang, nodes=f.num(topo.nodes), gpus=f.num(topo.nodes * topo.gpus_per_node),
             accelerator=topo.accelerator, fabric=topo.fabric or "—")


def _side(d: dw.Drawing, topo: Topology, y: float, h: float, f: Fmt, racks_right: float) -> None:
    """Storage and management networks, beside the racks, each joined to the racks: a line from the racks'
    right edge to a bus at RIGHT, and from the bus to each box (small plans leave a gap before RIGHT)."""
    L = f.lang
    x = RIGHT + 30
    tops = [y + i * (h / 2 + 5) for i in range(2)]
    dashed = {"stroke": "#886", "stroke_dasharray": "4,3"}
    d.append(dw.Line(racks_right, y + 30, RIGHT, y + 30, **dashed))
    d.append(dw.Line(RIGHT, y + 30, RIGHT, tops[-1] + 30, **dashed))
    for i, (key, label) in enumerate((("dg.storage", topo.storage), ("dg.management", topo.management))):
        top = tops[i]
        d.append(dw.Rectangle(x, top, W - x - 20, h / 2 - 10, fill="#fff8e6" if i == 0 else "#eef7ee",
                              stroke="#886", rx=6))
        d.append(_text(x + 8, top + 18, t(key, L), 12, font_weight="bold"))
        lines = _wrap(label, 40) if label else [t("dg.not_in_plan", L)]
        if i == 0 and topo.storage_gbps_per_node:
            lines.append(t("dg.per_node_gbps", L, gbps=f.num(topo.storage_gbps_per_node)))
        room = max(1, int((h / 2 - 40) // 13))
        for k, line in enumerate(lines[:room]):
            d.append(_text(x + 8, top + 34 + 13 * k, line if k < room - 1 or len(lines) <= room else line + " …", 10,
                           fill="#444" if label else "#a33"))
        d.append(dw.Line(RIGHT, top + 30, x, top + 30, **dashed))


def _wrap(text: str, width: int) -> list[str]:
    """Lines of at most `width` characters, broken at the label's own separators first."""
    out: list[str] = []
    for part in text.replace(" | ", " · ").split(" · "):
        out.extend(textwrap.wrap(part, width) or [""])
    return out


def render_svg(plan: Mapping, lang: str) -> str:
    """The recommended option's deployment architecture as an SVG document (a note when nothing is recommended)."""
    f = Fmt(lang)
    topo = topology(as_dict(plan, lang, keep=True), lang)
    if topo is None:
        d = dw.Drawing(W, 60)
        d.append(_text(20, 35, t("dg.none", lang), 14))
        return d.as_svg()
    per, _, shown = rack_groups(topo)
    n_tiers = max(1, len(topo.tiers))
    racks_y = 70 + n_tiers * TIER_H + 20
    rack_h = 26 + per * NODE_H
    lines = max(len(_wrap(topo.storage or "", 40)) + 1, len(_wrap(topo.management or "", 40)))
    side_h = max(rack_h, 2 * (44 + 13 * lines))
    legend_y = racks_y + side_h + 20
    d = dw.Drawing(W, legend_y + 60)
    d.append(dw.Rectangle(0, 0, W, legend_y + 60, fill="white"))
    d.append(_text(LEFT, 26, title(topo, f), 15, font_weight="bold"))
    bottom, racks_right, nic_xy = _draw_racks(d, topo, racks_y, f)
    if topo.nodes > 1:
        _fabric(d, topo, 50, nic_xy, f, racks_y)
    else:
        d.append(_text(LEFT, 60, t("dg.single_node", lang), 12))
    _side(d, topo, racks_y, side_h, f, racks_right)
    _legend(d, topo, legend_y, f)
    return d.as_svg()


def _legend(d: dw.Drawing, topo: Topology, y: float, f: Fmt) -> None:
    L = f.lang
    d.append(dw.Rectangle(LEFT, y, GPU, GPU, fill="#76b900"))
    d.append(_text(LEFT + 14, y + 9, t("dg.gpu", L, accelerator=topo.accelerator), 11))
    d.append(dw.Rectangle(LEFT + 260, y, 16, GPU, fill="none", stroke="#2ca02c", stroke_dasharray="3,2"))
    d.append(_text(LEFT + 282, y + 9, domain_text(topo, f) if topo.nvlink_domain_gpus else t("dg.nvlink_unknown", L),
                   11))
    for r in range(min(topo.rails or topo.nics_per_node or 0, 8)):
        d.append(dw.Circle(LEFT + 560 + r * 10, y + 5, 3, fill=PALETTE[r % len(PALETTE)]))
    if topo.nics_per_node:
        rails = t("dg.rails", L, n=f.num(topo.rails)) if topo.rails else t("dg.nics", L, n=f.num(topo.nics_per_node))
        d.append(_text(LEFT + 650, y + 9, rails, 11))
    per, real, shown = rack_groups(topo)
    if not real:
        d.append(_text(LEFT, y + 30, t("dg.no_racks", L, n=f.num(per)), 11, fill="#a33"))
