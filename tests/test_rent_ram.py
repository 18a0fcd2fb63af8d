"""A rented layout that keeps states in host RAM is held to the RAM of the instances behind the rent price where their
listings state it (prices.yaml price points instance_ram_gib / instance_gpus, Catalog.rent_instance_ram;
evaluate._rent_host_ram; known-gaps 65 (l)): what to rent is named, and with every listing known and none big enough
the layout has no rent price (en / zh)."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.evaluate import _rent_host_ram
from trainsizer.messages import tr
from trainsizer.scenario import resolve_job

CAT = load_catalog()


def _system(acc: str = "h100-sxm-80gb"):
    job = {"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": 4096, "global_batch": {"sequences": 64},
           "hardware": {"accelerator": acc, "count": 8}}
    return resolve_job(job, CAT).system


def test_listed_instances_state_their_ram_with_a_source():
    known, every = CAT.rent_instance_ram(CAT.rent_per_gpu_hour("h100-sxm-80gb"))
    per_gpu = {p.provider: p.ram_gib_per_gpu for p in known}
    assert per_gpu == {"AWS": 2048 / 8, "Lambda": 1800 / 8} and not every  # the market indexes state none
    assert all(p.instance_ram_sources for p in known)


def _said(need_gib: float, rent=None):
    out, notes = {"rent": {"mid": 1.0}}, []
    _rent_host_ram(CAT, _system(), rent or CAT.rent_per_gpu_hour("h100-sxm-80gb"), need_gib, out, notes)
    return out, notes


@pytest.mark.parametrize("need, key", [(1000.0, None), (1900.0, "note_host_ram_rent_listed"),
                                       (3000.0, "note_host_ram_rent_none_listed")])
def test_what_the_listed_instances_hold(need, key):
    """8 H100 a node: Lambda's 1,800 GiB and AWS p5's 2,048 GiB hold 1,000 GiB of states; 1,900 only AWS; 3,000 none
    of them, but the price also rests on listings of unknown RAM, so it stays, with what to rent."""
    out, notes = _said(need)
    assert "rent" in out
    assert [n.key for n in notes] == ([key] if key else [])
    if key == "note_host_ram_rent_listed":
        assert "only these hold it: AWS p5.48xlarge" in tr(notes[0], "en") and "Lambda" not in tr(notes[0], "en").split(
            "only these hold it:")[1]
        assert "p5.48xlarge" in tr(notes[0], "zh")


def test_every_listing_known_and_none_holding_drops_the_rent_price():
    rent = CAT.rent_per_gpu_hour("h100-sxm-80gb")
    only_known = rent.model_copy(update={"basis": ("pp-aws-p5-2026", "pp-lambda-h100-2026")})
    out, notes = _said(3000.0, only_known)
    assert "rent" not in out and [n.key for n in notes] == ["note_host_ram_rent_dropped"]
    assert "no rent price" in tr(notes[0], "en") and "没有租赁价格" in tr(notes[0], "zh")


def test_a_price_without_listed_ram_keeps_the_old_note():
    out, notes = {"rent": {"mid": 1.0}}, []
    rent = CAT.rent_per_gpu_hour("h100-sxm-80gb").model_copy(update={"basis": ("pp-h100-index-2026",)})
    _rent_host_ram(CAT, _system(), rent, 3000.0, out, notes)
    assert "rent" in out and [n.key for n in notes] == ["note_host_ram_rent"]
