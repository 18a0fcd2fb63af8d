from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from trainsizer.render.report.diagram import render_svg
from trainsizer.render.report.mermaid import render_mermaid

from .conftest import large_plan, load_fixture, single_node_plan

NS = "{http://www.w3.org/2000/svg}"


def _texts(svg: str) -> list[str]:
    root = ET.fromstring(svg)
    return ["".join(el.itertext()) for el in root.iter(f"{NS}text")]


def _node_boxes(svg: str) -> int:
    return sum(1 for s in _texts(svg) if s.startswith("#") and s[1:].isdigit())


def test_small_cluster_draws_every_node_rack_and_link():
    plan = load_fixture()
    svg = render_svg(plan, "en")
    texts = _texts(svg)
    assert _node_boxes(svg) == plan["options"][0]["hardware"]["nodes"] == 4
    assert "Rack 1" in texts and "Rack 2" in texts
    assert "32 × 400 Gb/s" in texts                 # the node-to-leaf link bundle
    assert any("Leaf switches × 1" in s for s in texts)
    assert any("NVLink domain (8 GPUs)" in s for s in texts)
    gpus = sum(1 for el in ET.fromstring(svg).iter(f"{NS}rect") if el.get("fill") == "#76b900")
    assert gpus == 32 + 1                           # every GPU, plus the legend swatch


@pytest.mark.parametrize("nodes", [64, 2000])
def test_large_cluster_is_grouped_and_stays_legible(nodes):
    svg = render_svg(large_plan(nodes), "en")
    texts = _texts(svg)
    assert _node_boxes(svg) == 12                   # racks 1, 2 and the last, 4 nodes each
    assert any(f"{nodes - 12:,} nodes" in s for s in texts)   # the ellipsis says what it stands for
    assert any(s.startswith("Core switches ×") for s in texts)
    assert f"{nodes * 8:,} × 400 Gb/s" in texts
    width = float(ET.fromstring(svg).get("width"))
    assert width == 1280 and float(ET.fromstring(svg).get("height")) < 900


def test_one_node_needs_no_fabric_and_says_what_is_missing():
    texts = _texts(render_svg(single_node_plan(), "zh"))
    assert any("单节点" in s for s in texts)
    assert any("本方案未包含" in s for s in texts)


def test_mermaid_has_tiers_links_and_grouped_racks():
    text = render_mermaid(large_plan(2000), "en")
    assert text.startswith("flowchart TB\n")
    assert 'core ---|"' in text and 'spine ---|"' in text and 'leaf ---|"16,000 × 400 Gb/s"| racks' in text
    assert "r1[" in text and "r500[" in text and "more[" in text
    assert "r3[" not in text


@pytest.mark.parametrize(("tech", "name"), [("xgmi", "xGMI"), ("nvlink", "NVLink"), ("hccs", "HCCS")])
def test_an_amd_or_ascend_node_draws_its_scale_up_domain_under_its_own_name(tech, name):
    """An 8-GPU xGMI mesh is the node's scale-up domain: the diagram drew none and its legend said 'NVLink
    domain: not in this plan' beside a table that gave the domain 8 GPUs."""
    from trainsizer.render.report.topology import topology

    from .conftest import load_buildout

    plan = load_buildout()
    nvlink = plan["build"]["network"]["nvlink"]
    nvlink.update(tech=tech, gpus_per_domain=8)
    topo = topology(plan, "en")
    assert topo.nvlink_domain_gpus == 8 and topo.scaleup_tech == tech
    svg = render_svg(plan, "en")
    assert f"{name} domain (8 GPUs)" in svg and "Scale-up domain: not in this plan" not in svg


def test_two_nvl72_racks_are_drawn_as_two_racks_bought_or_rented():
    """36 trays in 2 bought NVL72 racks read '… -1 more racks, -18 nodes' (the short form needs four groups); a
    rented 32-tray job was drawn as 8 groups of 4 trays each labelled a 72-GPU NVLink domain. Both now draw their
    racks: 2 racks, every tray, no ellipsis."""
    from trainsizer.catalog import load_catalog
    from trainsizer.plan.core import make_plan

    job = {"name": "nvl72", "model": "llama-3.1-8b", "method": "full", "data": {"tokens": 1.0e9}, "seq_len": 4096,
           "global_batch": {"sequences": 144}, "constraints": {"cooling": "liquid"},
           "hardware": {"accelerator": "gb200", "count": 144, "network": "ib-ndr400"}}
    for procurement, trays in (("buy", 36), ("rent", 36)):
        plan = make_plan({**job, "goal": {"deadline_days": 30, "procurement": procurement}}, load_catalog())
        data = plan.model_dump(mode="json", by_alias=True)
        svg, mm = render_svg(data, "en"), render_mermaid(data, "en")
        texts = _texts(svg)
        assert "Rack 1" in texts and "Rack 2" in texts and "Rack 3" not in texts, procurement
        assert _node_boxes(svg) == trays and not any("more" in s for s in texts)
        assert "Rack 2: 18 trays" in mm and "more" not in mm  # trays, as the title says


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_one_nvl72_rack_without_a_network_is_drawn_on_nvlink_alone(lang):
    """72 GB200 written without hardware.network (known-gaps 43): no compute fabric; the title and the fabric box
    say the trays meet on NVLink alone, not a bare dash."""
    from trainsizer.catalog import load_catalog
    from trainsizer.plan.core import make_plan

    job = {"name": "nvl72", "model": "llama-3.1-8b", "method": "full", "data": {"tokens": 1.0e9}, "seq_len": 4096,
           "global_batch": {"sequences": 72}, "constraints": {"cooling": "liquid"},
           "goal": {"deadline_days": 30, "procurement": "rent"}, "hardware": {"accelerator": "gb200", "count": 72}}
    data = make_plan(job, load_catalog()).model_dump(mode="json", by_alias=True)
    assert data["build"]["network"]["compute"] is None
    texts = _texts(render_svg(data, lang))
    word = "NVLink only" if lang == "en" else "仅 NVLink"
    assert word in texts[0] and any(s.startswith(word) for s in texts[1:]) and not texts[0].endswith("—")
    assert word in render_mermaid(data, lang)


def _connector_reach(svg: str) -> tuple[set, list, list]:
    """Points the storage / management connectors reach from a rack group's right edge, the group boxes and
    the side boxes (x, top, bottom)."""
    root = ET.fromstring(svg)
    rects = list(root.iter(f"{NS}rect"))
    groups = [r for r in rects if r.get("fill") == "white" and r.get("stroke")]
    side = [r for r in rects if r.get("fill") in ("#fff8e6", "#eef7ee")]
    segs = [tuple(round(float(v), 1) for v in re.findall(r"-?[\d.]+", ln.get("d")))   # drawsvg: "Mx,y Lx,y"
            for ln in root.iter(f"{NS}path") if ln.get("stroke") == "#886"]
    starts = {(x, y) for g in groups for s in segs for x, y in (s[:2], s[2:])
              if abs(x - round(float(g.get("x")) + float(g.get("width")), 1)) < 0.2
              and float(g.get("y")) <= y <= float(g.get("y")) + float(g.get("height"))}
    reached, grew = set(starts), True
    while grew:                                  # segments sharing an end point are one connector
        new = {p for s in segs if s[:2] in reached or s[2:] in reached for p in (s[:2], s[2:])} - reached
        reached |= new
        grew = bool(new)
    boxes = [(float(r.get("x")), float(r.get("y")), float(r.get("y")) + float(r.get("height"))) for r in side]
    return reached, groups, boxes


@pytest.mark.parametrize("plan", ["single", "fixture", "large"])
def test_storage_and_management_connectors_reach_the_racks(plan):
    """A small plan's racks end far left of the side boxes: the connectors must still join them, not dangle."""
    made = {"single": single_node_plan, "fixture": load_fixture, "large": lambda: large_plan(64)}[plan]()
    reached, groups, boxes = _connector_reach(render_svg(made, "en"))
    assert groups and len(boxes) == 2
    for x, top, bottom in boxes:
        assert any(abs(px - x) < 0.2 and top <= py <= bottom for px, py in reached), (plan, x, top, reached)


def test_one_node_title_names_one_node_and_no_fabric():
    texts = _texts(render_svg(single_node_plan(), "en"))
    assert any(s.startswith("1 node · 8 × ") for s in texts)
    assert not any("1 nodes" in s or s.endswith("· —") for s in texts)


@pytest.mark.parametrize(("gpus", "legend", "legend_zh"), [
    (128, "NVLink domain (64 of 72 GPUs used)", "NVLink 域（72 张卡，本作业用 64 张）"),
    (64, "NVLink domain (64 of 72 GPUs used)", "NVLink 域（72 张卡，本作业用 64 张）"),
    (144, "NVLink domain (72 GPUs)", "NVLink 域（72 张卡）"),
])
def test_an_nvl72_legend_says_what_the_job_uses_of_each_domain(gpus, legend, legend_zh):
    """128 GB200 are placed 64 in each of 2 NVL72 racks (scenario.job_domain_gpus); the legend read 'NVLink domain
    (72 GPUs)' beside 16 trays a rack, and a 64-GPU job's read '(64 GPUs)' for a 72-GPU domain. The title counts
    trays, and the build table gives the job's share of each domain."""
    from trainsizer.catalog import load_catalog
    from trainsizer.plan.core import make_plan
    from trainsizer.render.build_view import _domain_row

    job = {"name": "nvl72", "model": "llama-3.1-8b", "method": "full", "data": {"tokens": 1.0e9}, "seq_len": 4096,
           "global_batch": {"sequences": 576}, "constraints": {"cooling": "liquid"},
           "goal": {"deadline_days": 30, "procurement": "rent"},
           "hardware": {"accelerator": "gb200", "count": gpus, "network": "ib-ndr400"}}
    data = make_plan(job, load_catalog()).model_dump(mode="json", by_alias=True)
    nvlink = data["build"]["network"]["nvlink"]
    assert nvlink["domain_size_gpus"] == 72 and nvlink["job_gpus_per_domain"] == min(gpus, 64 if gpus == 128 else 72)
    texts = _texts(render_svg(data, "en"))
    assert legend in texts and texts[0].startswith(f"{gpus // 4} trays")
    assert legend_zh in _texts(render_svg(data, "zh"))
    assert legend in render_mermaid(data, "en")
    row = _domain_row(nvlink, "NVLink", "en")
    assert row.startswith("NVLink: ") and row.endswith(", 64 GPUs of the job in each") == (gpus != 144)
