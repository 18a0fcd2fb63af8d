import pytest

from trainsizer.plan.buildout import rules


def test_every_rule_cites_a_catalog_source(catalog):
    found = rules.all_rules()
    assert len(found) > 40
    missing = [(block, r.name, r.source) for block, r in found if r.source not in catalog.sources]
    assert missing == []


def test_phase_sources_resolve(catalog):
    raw = rules.raw("phases")
    assert all(p["source"] in catalog.sources for p in raw["phases"] + raw["workstation_phases"])


def test_unknown_rule_is_a_clear_error():
    from trainsizer.errors import SpecError

    with pytest.raises(SpecError, match="unknown rule"):
        rules.rule("fabric", "no_such_rule")


def test_guides_beside_derived_figures(blocks):
    thumbs = {t.topic: t for t in blocks().rules_of_thumb}
    ram = thumbs["host RAM"]
    assert "1.5-2" in ram.guide_value and ram.source == "guide_001"
    assert ram.why.startswith("derived")
    cores = thumbs["CPU cores per GPU"]
    assert cores.source == "guide_004" and isinstance(cores.agrees, bool)
    assert {"air-cooled rack power", "checkpoint write per node"} <= set(thumbs)


def test_guides_read_against_the_server_the_plan_buys(blocks):
    """Host RAM and cores are what the plan's server carries when it covers the job (what a buyer orders), with
    the derived minimum beside it; a departure from the guide says why."""
    out = blocks()
    node, thumbs = out.node, {t.topic: t for t in out.rules_of_thumb}
    assert node.server is not None and node.enough["ram_gib"] and node.enough["cpu_cores"]
    ram, cores = thumbs["host RAM"], thumbs["CPU cores per GPU"]
    assert f"{node.server_ram_gib:g} GiB in {node.server}" in ram.ours and f"{node.ram_gib.value:g} GiB" in ram.ours
    ratio = node.server_ram_gib / (node.gpus_per_node * 80)
    assert ram.agrees == (1.5 <= ratio <= 2.0)
    assert ("guide's multiple of GPU memory" in ram.why) == (not ram.agrees)
    assert f"{node.server_cpu_cores} cores in {node.server}" in cores.ours
    assert cores.agrees == (8 <= node.server_cpu_cores / node.gpus_per_node <= 16)
