"""Documented cluster sizes (catalog/evidence/scale.yaml): every figure sourced and dated, every accelerator
placed or named as undocumented, and the standing of a size judged as the module says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from trainsizer.catalog import load_catalog, scale

EVIDENCE = Path(scale.__file__).parent / "evidence" / "scale.yaml"


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def test_every_figure_has_registered_sources_and_a_date(cat):
    for p in scale.platforms().values():
        assert p.demonstrated or p.designed, p.id
        for ev in (p.demonstrated, p.designed):
            if ev is None:
                continue
            assert ev.gpus >= 1 and ev.what and re.match(r"^\d{4}(-\d{2}(-\d{2})?)?$", ev.date), p.id
            assert ev.kind in ("training_run", "benchmark", "reference_design"), p.id
            assert ev.sources and all(s in cat.sources for s in ev.sources), (p.id, ev.sources)
        assert all(m in cat.accelerators for m in p.members), p.id


def test_every_accelerator_is_placed_or_named_undocumented(cat):
    """No silent default: an accelerator without a platform is listed in the file's closing comment."""
    closing = EVIDENCE.read_text(encoding="utf-8").split("# Not in any platform", 1)[1]
    for acc in cat.accelerators:
        assert scale.platform_of(acc) is not None or acc in closing, acc
    members = [m for p in scale.platforms().values() for m in p.members]
    assert len(members) == len(set(members))  # one platform per accelerator


def test_standing_levels():
    st = scale.standing("h100-sxm-80gb", 16384, 8)
    assert st.level == "demonstrated" and st.documented_gpus == 16384 and "Llama 3" in st.evidence.what
    assert scale.standing("h100-sxm-80gb", 32768, 8).doublings == 1
    assert scale.standing("mi355x", 8192, 8).level == "designed"
    assert scale.standing("mi355x", 1024, 8).level == "demonstrated"
    beyond = scale.standing("gaudi3", 8192, 8)
    assert beyond.level == "beyond" and beyond.documented_gpus == 128 and beyond.doublings == 6
    assert beyond.rank_key == 8


def test_one_server_is_always_documented_and_no_platform_is_beyond_it():
    assert scale.standing("rtx-4090", 8, 8).level == "demonstrated"
    st = scale.standing("rtx-4090", 16, 8)
    assert st.level == "beyond" and st.evidence is None and st.documented_gpus == 8 and st.doublings == 1
    assert scale.standing("gb200", 72, 72).level == "demonstrated"  # one NVL72 rack is the product


def test_rank_key_orders_levels():
    keys = [scale.standing("mi355x", n, 8).rank_key for n in (8, 1024, 8192, 16384, 65536)]
    assert keys == sorted(keys) and keys[0] == keys[1] == 0 and keys[2] == 1 and keys[3] < keys[4]


def test_pcie_only_cards_have_no_nvlink_domain(cat):
    """A PCIe card's NVLink domain is the card itself; the PCIe host is what its collectives share."""
    for acc in cat.accelerators.values():
        if acc.scaleup_tech == "pcie":
            assert acc.scaleup_domain == 1, acc.id


def test_gaudi3_software_notes_are_sourced(cat):
    plat = scale.platform_of("gaudi3")
    assert plat.software and all(s in cat.sources for e in plat.software for s in e.sources)
    assert any("scale out" in e.what for e in plat.software)
