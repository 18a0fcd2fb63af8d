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
    assert ram.agrees == (1.5 <= ratio)  # the guides' host rules are floors: more memory agrees with them
    assert ("guide's multiple of GPU memory" in ram.why) == (not ram.agrees)
    assert f"{node.server_cpu_cores} cores in {node.server}" in cores.ours
    assert cores.agrees == (8 <= node.server_cpu_cores / node.gpus_per_node)  # "at least 8~16 cores per GPU"


def test_an_nvl72_tray_is_read_as_the_server_a_buyer_gets(blocks, catalog):
    """An NVL72 node is one 4-GPU compute tray: the guides' host rules are read against the tray's 2 Grace CPUs
    and their LPDDR5X (its share of the rack record), not left at the derived minimum as if no server were known;
    a tray below the guide's multiple of GPU memory says its memory is fixed, not DIMMs to add."""
    out = blocks(hardware={"accelerator": "gb200", "count": 128, "per_node": 4, "network": "ib-ndr400"},
                 constraints={"cooling": "liquid"}, global_batch={"sequences": 128})
    rack = catalog.server("gb200-nvl72")
    tray_gib, tray_cores = rack.ram_gib * 4 / rack.gpus, rack.cpu_cores * 4 // rack.gpus
    thumbs = {t.topic: t for t in out.rules_of_thumb}
    ram, cores = thumbs["host RAM"], thumbs["CPU cores per GPU"]
    assert f"{tray_gib:g} GiB in one 4-GPU compute tray of gb200-nvl72" in ram.ours
    assert f"{tray_cores} cores in one 4-GPU compute tray" in cores.ours
    gpu_gib = 4 * catalog.accelerator("gb200").memory_gib
    assert ram.agrees == (tray_gib >= 1.5 * gpu_gib) and cores.agrees == (tray_cores / 4 >= 8)
    assert (ram.why_msg.key if ram.why_msg else "") != "thumb_why_ram_rule"
    if not ram.agrees:
        assert "LPDDR5X" in ram.why and "not DIMMs" in ram.why


def test_the_guides_rules_read_in_the_readers_language(blocks):
    """The guides are Chinese; an English report gives their rule in English, a Chinese one quotes it."""
    from trainsizer.plan.texts import localise

    out = blocks().model_dump(mode="json")
    for thumb in out["rules_of_thumb"]:
        assert thumb["guide_msg"], thumb["topic"]
        en, zh = localise(thumb, "en")["guide"], localise(thumb, "zh")["guide"]
        assert not any("\u4e00" <= ch <= "\u9fff" for ch in en), en
        assert any("\u4e00" <= ch <= "\u9fff" for ch in zh), zh
