"""An NVL72 plan buys what it times (known-gaps 55 (f)): the racks of the BOM, the facility, the NVLink block, the
acceptance path and Slurm's topology blocks are the domains the estimate places the job in (scenario.domain_shares)."""

from __future__ import annotations

import pytest

from trainsizer.errors import SpecError
from trainsizer.plan.buildout.slurm_files import parse_conf
from trainsizer.scenario import domain_shares


def _nvl72(blocks, acc: str, gpus: int):
    return blocks(hardware={"accelerator": acc, "count": gpus, "per_node": 4, "network": "ib-ndr400"},
                  constraints={"cooling": "liquid"}, global_batch={"sequences": gpus},
                  strategy={"tp": 4, "pp": 1, "fsdp": "none", "zero": 1, "micro_batch": 1, "recompute": "full"})


@pytest.mark.parametrize("acc", ["gb200", "gb300"])
@pytest.mark.parametrize("gpus, racks", [(128, 2), (144, 2), (200, 3), (256, 4), (576, 8)])
def test_every_block_counts_the_racks_the_job_is_placed_in(blocks, acc, gpus, racks):
    out = _nvl72(blocks, acc, gpus)
    shares = domain_shares(72, 4, gpus)
    assert len(shares) == racks  # 200: 72 + 64 + 64 in 3 racks, not 5 domains of 40 beside 3 racks bought
    nv = out.network.nvlink
    assert (nv.domains, nv.job_gpus_by_domain, nv.job_gpus_per_domain) == (racks, list(shares), min(shares))
    assert nv.nvlink_switch_trays == 9 * racks
    assert out.facility.node_racks == racks
    rack_lines = [ln for ln in out.bom.lines if str(ln.unit) == "per_rack" and ln.part]
    assert rack_lines and all(ln.quantity == racks for ln in rack_lines)
    blocks_conf = [e for e in parse_conf(out.software.files["topology.conf"]) if "BlockName" in e]
    assert len(blocks_conf) == racks
    assert f"{racks} NVLink domains (racks)" in str(out.acceptance.busbw_inter_gb_s_min.all_reduce.source)


def test_200_gb200_draws_and_says_the_racks_it_buys():
    """The build row and the diagram's legend name each rack's share where they differ (en / zh)."""
    from trainsizer.render.build_view import _domain_row

    nv = {"domain_size_gpus": 72, "gpus_per_domain": 72, "job_gpus_per_domain": 64, "domains": 3,
          "job_gpus_by_domain": [72, 64, 64]}
    assert _domain_row(nv, "NVLink", "en") == "NVLink: 3 x 72-GPU domain, the job's GPUs 72 + 64 + 64 (timed at 64 a domain)"
    assert "72 + 64 + 64" in _domain_row(nv, "NVLink", "zh")
    assert _domain_row({**nv, "job_gpus_by_domain": [64, 64], "domains": 2}, "NVLink", "en").endswith(
        "64 GPUs of the job in each")


def _priced(build, acc: str, gpus: int, procurement: str):
    b = build(hardware={"accelerator": acc, "count": gpus, "per_node": 4, "network": "ib-ndr400"},
              constraints={"cooling": "liquid"}, global_batch={"sequences": gpus},
              goal={"deadline_days": 365, "procurement": procurement},
              strategy={"tp": 4, "pp": 1, "fsdp": "none", "zero": 1, "micro_batch": 1, "recompute": "full"})
    return b, b.evaluation["cost"]


@pytest.mark.parametrize("acc", ["gb200", "gb300"])
@pytest.mark.parametrize("gpus", [64, 128, 144, 200, 576])
def test_the_ranking_buys_the_racks_the_bom_orders(build, acc, gpus):
    """55 (l): the ranking's purchase (evaluate.job_cost, the buy block's quantity) pays for the GPUs of every rack
    the BOM orders, not the job's GPUs: 128 GB200 buy 2 racks = 144 GPUs' worth."""
    from trainsizer.plan.buildout import build_blocks

    b, cost = _priced(build, acc, gpus, "buy")
    racks = [ln for ln in build_blocks(b).bom.lines if str(ln.unit) == "per_rack" and ln.part][0].quantity
    assert cost["buy"]["quantity"] == racks * 72 >= gpus
    assert cost["buy"]["capex_total"] == pytest.approx(cost["buy"]["unit_price"]["mid"] * racks * 72)


@pytest.mark.parametrize("gpus, racks", [(128, 2), (144, 2), (200, 3)])
def test_rented_gb200_bills_its_whole_racks(build, gpus, racks):
    """CoreWeave deploys GB200 NVL72 instances only as full racks (prices.yaml billed_whole_domains): a job larger than
    one rack rents every rack it is placed in, in the ranking and in the BOM's rent line alike."""
    from trainsizer.plan.buildout import build_blocks

    b, cost = _priced(build, "gb200", gpus, "rent")
    hours = b.train_days * 24.0
    assert cost["rent"]["quantity"] == pytest.approx(racks * 72 * hours)
    line = [ln for ln in build_blocks(b).bom.lines if str(ln.unit) == "per_gpu_hour"][0]
    assert line.quantity == pytest.approx(cost["rent"]["quantity"], abs=1e-3)
    assert line.total["typical"] == pytest.approx(cost["rent"]["mid"], rel=1e-4)


def test_a_job_inside_one_rack_rents_by_the_superchip(build):
    """Inside one rack the price's own unit holds (Spheron: a superchip of 2 GPUs): 64 GB200 pay for 64."""
    b, cost = _priced(build, "gb200", 64, "rent")
    assert cost["rent"]["quantity"] == pytest.approx(64 * b.train_days * 24.0)


def test_hgx_parts_buy_their_own_gpus(build):
    """No multi-host domain, no racks: 16 H100 buy 16."""
    b = build()
    assert b.evaluation["cost"]["buy"]["quantity"] == 16


@pytest.mark.parametrize("gpus, full", [(72, 1), (128, 0), (144, 2), (200, 1), (576, 8)])
def test_racks_filled_on_every_tray_are_flagged_without_spares(blocks, gpus, full):
    """55 (l): a rack the job fills on all 18 trays keeps no spare (a tray of another rack is outside its NVLink
    domain): the risks say so with the failures expected there; racks placed 64 of 72 keep 2 trays as spares."""
    out = _nvl72(blocks, "gb200", gpus)
    risk = next((r for r in out.risks if r.id == "nvl72_no_spare_trays"), None)
    assert (risk is not None) == bool(full)
    if risk is not None:
        assert f"{full} of the {len(domain_shares(72, 4, gpus))} NVL72 racks" in str(risk.evidence)
        assert "16 of each rack's 18 trays" in str(risk.mitigation)


@pytest.mark.parametrize("gpus, words", [(128, "the 2 trays left free in each rack are its spares"),
                                         (144, "no rack keeps a spare tray")])
def test_the_placement_note_says_what_spares_the_racks_keep(gpus, words):
    from trainsizer.catalog import load_catalog
    from trainsizer.scenario import resolve_job

    from .conftest import make_job

    job = make_job(hardware={"accelerator": "gb200", "count": gpus, "per_node": 4, "network": "ib-ndr400"},
                   constraints={"cooling": "liquid"}, global_batch={"sequences": gpus},
                   strategy={"tp": 4, "pp": 1, "fsdp": "none", "zero": 1, "micro_batch": 1, "recompute": "full"})
    notes = " ".join(str(n) for n in resolve_job(job, load_catalog()).notes)
    assert words in notes


def _partial(blocks, gpus: int, per_node: int, procurement: str = "buy"):
    return blocks(hardware={"accelerator": "gb200", "count": gpus, "per_node": per_node, "network": "ib-ndr400"},
                  constraints={"cooling": "liquid"},
                  global_batch={"sequences": gpus}, goal={"deadline_days": 365, "procurement": procurement},
                  strategy={"tp": 1, "pp": 1, "fsdp": "none", "zero": 1, "micro_batch": 1,
                            "recompute": "full"})


@pytest.mark.parametrize("gpus, per_node, shares", [
    (72, 2, (36, 36)),  # was one 72-GPU domain of 36 trays, no network
    (144, 3, (48, 48, 48)),  # was 2 domains of 72 of 24 trays each; a rack holds 18 x 3 = 54
    (36, 2, (36,)), (128, 2, (32, 32, 32, 32))])
def test_a_job_using_part_of_each_tray_is_placed_on_the_racks_trays(blocks, gpus, per_node, shares):
    """43 (r): a tray is the host, bought and racked whole (18 trays a rack). A job of `per_node` GPUs a tray holds
    18 x per_node GPUs a rack: every block counts those racks and every tray in them, and buys 72 GPUs a rack."""
    from trainsizer.catalog import load_catalog
    from trainsizer.scenario import domain_job_gpus

    assert domain_job_gpus(load_catalog().accelerator("gb200"), per_node) == 18 * per_node
    assert domain_shares(18 * per_node, per_node, gpus) == shares
    out = _partial(blocks, gpus, per_node)
    racks = len(shares)
    nv = out.network.nvlink
    assert (nv.domains, nv.job_gpus_by_domain, nv.job_gpus_per_domain) == (racks, list(shares), min(shares))
    assert out.facility.node_racks == racks and out.facility.nodes_per_rack == 18
    assert [ln.quantity for ln in out.bom.lines if str(ln.unit) == "per_rack" and ln.part][0] == racks
    assert racks == 1 or out.network.compute is not None


def test_a_job_using_part_of_each_tray_needs_a_network_beyond_one_racks_share(build):
    """72 GB200 at 2 a tray take 36 trays, 2 racks: the scale-out network is asked for (the job was timed as one
    NVLink domain with none), the estimate times 36 GPUs a domain, and the note says why (en / zh)."""
    from trainsizer.catalog import load_catalog
    from trainsizer.messages import tr
    from trainsizer.scenario import resolve_job

    from .conftest import make_job

    job = make_job(hardware={"accelerator": "gb200", "count": 72, "per_node": 2}, global_batch={"sequences": 72},
                   strategy={"tp": 2, "pp": 1, "fsdp": "none", "zero": 1, "micro_batch": 1})
    job["hardware"].pop("network")
    with pytest.raises(SpecError, match="hardware.network"):
        resolve_job(job, load_catalog())
    sc = resolve_job({**job, "hardware": {**job["hardware"], "network": "ib-ndr400"}}, load_catalog())
    assert sc.system.scaleup_domain == 36
    note = next(n for n in sc.notes if "of each compute tray's 4 GPUs" in tr(n, "en"))
    assert "holds 36 of its GPUs" in tr(note, "en") and "36 张卡" in tr(note, "zh")
    b = build(hardware={"accelerator": "gb200", "count": 72, "per_node": 2, "network": "ib-ndr400"},
              global_batch={"sequences": 72}, goal={"deadline_days": 365, "procurement": "buy"},
              strategy={"tp": 2, "pp": 1, "fsdp": "none", "zero": 1, "micro_batch": 1})
    assert b.evaluation["cost"]["buy"]["quantity"] == 144  # 2 racks of 72 GPUs, the unused half of each tray paid


def test_racks_full_at_part_of_each_tray_are_flagged_without_spares(blocks):
    """72 GB200 at 2 a tray fill 2 racks on all 18 trays: no rack keeps a spare tray, as at 4 a tray (the risk read
    a rack as full only at 72 job GPUs)."""
    out = _partial(blocks, 72, 2)
    risk = next((r for r in out.risks if r.id == "nvl72_no_spare_trays"), None)
    assert risk is not None and "2 of the 2 NVL72 racks" in str(risk.evidence)
    assert "16 of each rack's 18 trays" in str(risk.mitigation)


def _rented_partial(build, gpus: int, per_node: int):
    b = build(hardware={"accelerator": "gb200", "count": gpus, "per_node": per_node, "network": "ib-ndr400"},
              constraints={"cooling": "liquid"}, global_batch={"sequences": gpus},
              goal={"deadline_days": 365, "procurement": "rent"},
              strategy={"tp": 1, "pp": 1, "fsdp": "none", "zero": 1, "micro_batch": 1, "recompute": "full"})
    return b, b.evaluation["cost"]


@pytest.mark.parametrize("gpus, per_node, rented", [(54, 3, 72), (48, 3, 64), (36, 2, 36), (18, 1, 36)])
def test_a_job_inside_one_rack_at_part_of_each_tray_rents_whole_superchips(build, gpus, per_node, rented):
    """43 (w): the rack's rent unit (Spheron: a superchip of 2 GPUs, prices.yaml billed_gpus) is rented on each tray
    the job uses, never across trays: 3 GPUs a tray rent both superchips (4), 1 a tray rents one (2); the ranking and
    the BOM's rent line bill the same GPU-hours, and both say why (en / zh)."""
    from trainsizer.messages import tr
    from trainsizer.plan.buildout import build_blocks
    from trainsizer.plan.texts import say

    b, cost = _rented_partial(build, gpus, per_node)
    hours = b.train_days * 24.0
    assert cost["rent"]["quantity"] == pytest.approx(rented * hours, rel=1e-6)
    line = [ln for ln in build_blocks(b).bom.lines if str(ln.unit) == "per_gpu_hour"][0]
    assert line.quantity == pytest.approx(cost["rent"]["quantity"], abs=1e-3)
    said = [n for n in b.evaluation["notes"] if "never spans hosts" in tr(n, "en")]
    if rented > gpus:
        assert len(said) == 1 and f"rent {rented}" in tr(said[0], "en") and "不跨主机" in tr(said[0], "zh")
        assert f"{rented} GPUs are billed" in line.note and "不跨主机" in say(line.note_msg.model_dump(), "zh")
    else:
        assert not said


def test_host_units_are_taken_on_each_host():
    """estimate.cost.host_unit_gpus: a unit never spans hosts; a rest on one more host."""
    from trainsizer.estimate.cost import host_unit_gpus

    assert host_unit_gpus(54, 3, 2) == 72
    assert host_unit_gpus(16, 4, 8) == 32
    assert host_unit_gpus(3, 8, 8) == 8
    assert host_unit_gpus(9, 4, 2) == 10  # 4 + 4 + a rest of 1 on a third host
    assert host_unit_gpus(16, 8, None) == 16
