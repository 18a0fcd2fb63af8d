import pytest

from trainsizer.plan.buildout import rules


def test_every_rule_cites_a_catalog_source(catalog):
    found = rules.all_rules()
    assert len(found) > 40
    missing = [(block, r.name, r.source) for block, r in found if r.source not in catalog.sources]
    assert missing == []


def test_phase_sources_resolve(catalog):
    assert all(p["source"] in catalog.sources for p in rules.raw("phases")["phases"])


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
