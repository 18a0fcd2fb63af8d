"""Documented cluster sizes (catalog/evidence/scale.yaml): every figure sourced and dated, every accelerator
placed or named as undocumented, and the standing of a size judged as the module says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from trainsizer.catalog import load_catalog, scale
from trainsizer.errors import SpecError

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


# ------------------------------------------------------------------------------------- overlays (--catalog)
ACME = """accelerators:
  acme-x1: {sources: [our_quote], memory_gb: 96, memory_bw_tb_s: 4.0, tflops_dense: {bf16: 800}, scaleup_tech: pcie,
            scaleup_bw_bidir_gb_s: 128, scaleup_domain: 8, pcie_gb_s: 63, tdp_w: 600}
sources:
  our_quote: {title: "Vendor quote (internal)", date: 2026-11-20}
"""


def _overlay(tmp_path, text: str):
    path = tmp_path / "overlay.yaml"
    path.write_text(ACME + text, encoding="utf-8")
    return load_catalog([path])


def test_an_overlay_card_has_no_platform_until_the_overlay_gives_it_one(tmp_path):
    bare = _overlay(tmp_path, "")
    assert scale.platform_of("acme-x1", bare) is None and scale.standing("acme-x1", 64, 8, bare).level == "beyond"
    joined = _overlay(tmp_path, "scale_platforms:\n  hgx-hopper: {members: [acme-x1]}\n")
    hopper = scale.platform_of("acme-x1", joined)
    assert hopper.id == "hgx-hopper" and "h100-sxm-80gb" in hopper.members  # joined; the catalog's stay
    assert scale.standing("acme-x1", 1024, 8, joined).level == "demonstrated"
    assert "overlay_overlay" in hopper.field_sources["members"]
    assert scale.platform_of("acme-x1") is None  # the built-in catalog is untouched


def test_an_overlay_adds_a_platform_or_changes_evidence_with_registered_sources(tmp_path):
    cat = _overlay(tmp_path, """scale_platforms:
  acme-pods:
    name: Acme pods
    members: [acme-x1]
    demonstrated: {gpus: 512, kind: training_run, what: our run, sources: [our_quote], date: 2026-10}
  gaudi3-hls:
    demonstrated: {gpus: 1024, kind: training_run, what: our Gaudi 3 run, sources: [our_quote], date: 2026-11}
""")
    st = scale.standing("acme-x1", 512, 8, cat)
    assert (st.level, st.platform, st.evidence.what) == ("demonstrated", "acme-pods", "our run")
    assert scale.standing("acme-x1", 1024, 8, cat).doublings == 1
    assert scale.standing("gaudi3", 1024, 8, cat).level == "demonstrated"
    assert scale.standing("gaudi3", 1024, 8).level == "beyond"  # built-in: a 128-card design only
    with pytest.raises(SpecError, match=r"scale_platforms\.acme-pods.*unknown source id"):
        _overlay(tmp_path, """scale_platforms:
  acme-pods: {name: p, members: [acme-x1], designed: {gpus: 64, kind: reference_design, what: w, sources: [nope],
              date: 2026}}
""")


@pytest.mark.parametrize(("text", "problem"), [
    ("scale_platforms:\n  hgx-hopper: {members: [acme-x1]}\n  gaudi3-hls: {members: [acme-x1]}\n",
     "already a member of platform hgx-hopper"),
    ("scale_platforms:\n  hgx-hopper: {members: [acme-x9]}\n", "unknown accelerator"),
    ("scale_platforms:\n  p: {name: p, members: [acme-x1], designed: {gpus: 0, what: w, sources: [our_quote], "
     "date: 2026}}\n", "a designed size needs gpus >= 1"),
])
def test_bad_platform_overlays_are_refused_by_name(tmp_path, text, problem):
    with pytest.raises(SpecError, match=re.escape(problem)):
        _overlay(tmp_path, text)
