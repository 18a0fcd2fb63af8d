"""Coverage, availability status, price age and network build (issue 14: the catalog for 2026 purchasing)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainsizer.catalog import STALE_AFTER_DAYS, load_catalog, price_age
from trainsizer.catalog.loader import DATA_DIR
from trainsizer.errors import SpecError

TODAY = dt.date(2026, 12, 1)


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def test_every_accelerator_has_server_power_and_price_or_says_why(cat):
    assert cat.coverage_gaps() == []
    for acc in cat.accelerators.values():
        servers = cat.servers_for(acc.id)
        assert servers or "server" in acc.none_known, acc.id
        for srv in servers:
            assert srv.power_max_w >= srv.gpus * acc.tdp_w, srv.id
        for key, why in acc.none_known.items():
            assert len(why) > 20, (acc.id, key)  # a reason, not a placeholder


def _copy_data(tmp_path: Path, name: str = "data") -> Path:
    data = tmp_path / name  # a fresh folder per build: built-in files are cached per folder
    data.mkdir()
    for f in DATA_DIR.glob("*.yaml"):
        (data / f.name).write_text(f.read_text(encoding="utf-8"), encoding="utf-8")
    return data


def test_a_new_accelerator_without_server_or_price_is_caught(tmp_path):
    from trainsizer.catalog.catalog import build_catalog

    data = _copy_data(tmp_path)
    extra = data / "zz_extra.yaml"
    extra.write_text(
        "accelerators:\n"
        "  test-xpu:\n"
        "    {name: Test XPU, vendor: test, arch: t, form_factor: OAM, launch_year: 2026, memory_gb: 96,\n"
        "     memory_type: HBM3e, memory_bw_tb_s: 4.0, tflops_dense: {bf16: 1000}, scaleup_tech: other,\n"
        "     scaleup_bw_bidir_gb_s: 400, scaleup_domain: 8, nvls: false, pcie_gen: 5, tdp_w: 700, ecc: true,\n"
        "     china_export_restricted: null, domestic_china: true, sources: [memory], date: '2026',\n"
        "     confidence: low}\n", encoding="utf-8")
    gaps = build_catalog((), data).coverage_gaps()
    assert gaps == [f"test-xpu: no {k} record and no none_known.{k} reason"
                    for k in ("server", "price_usd", "price_cny")]
    data2 = _copy_data(tmp_path, "data2")
    (data2 / "zz_extra.yaml").write_text(extra.read_text().replace("confidence: low}", "confidence: low,\n"
                                         "     none_known: {server: 'no chassis known yet', price_usd: 'none yet',\n"
                                         "                  price_cny: 'no price published yet'}}"), encoding="utf-8")
    assert build_catalog((), data2).coverage_gaps() == []


def test_none_known_rejects_unknown_keys_and_contradictions(tmp_path):
    from trainsizer.catalog.catalog import build_catalog

    overlay = tmp_path / "o.yaml"
    overlay.write_text("accelerators:\n  h100-sxm-80gb: {none_known: {switch: 'x'}}\n")
    with pytest.raises(SpecError, match="none_known"):
        build_catalog([overlay])
    overlay.write_text("accelerators:\n  h100-sxm-80gb: {none_known: {server: 'we have none, really'}}\n")
    assert build_catalog([overlay]).coverage_gaps() == ["h100-sxm-80gb: none_known.server but the catalog has one"]


def test_announced_parts_are_left_out_of_plans_by_default(cat):
    announced = [a for a in cat.accelerators.values() if a.status == "announced"]
    assert announced, "Vera Rubin class parts are listed as announced"
    plannable = {a.id for a in cat.plannable_accelerators()}
    for acc in announced:
        assert acc.id not in plannable and not acc.plannable_by_default
        assert acc.id in {a.id for a in cat.plannable_accelerators([acc.id])}  # a job may still name it
        assert all(not s.plannable_by_default for s in cat.servers_for(acc.id))
    assert "h100-sxm-80gb" in plannable
    assert cat.accelerator("v100-sxm-32gb").plannable_by_default


def test_status_values_are_checked(tmp_path):
    from trainsizer.catalog.catalog import build_catalog

    overlay = tmp_path / "o.yaml"
    overlay.write_text("accelerators:\n  b200: {status: rumoured}\n")
    with pytest.raises(SpecError) as info:
        build_catalog([overlay])
    assert "status" in str(info.value) and "announced" in str(info.value)


@pytest.mark.parametrize(("date", "days", "stale"), [
    ("2026-11-30", 1, False), ("2026", 334, False), ("2025-12", 365, False), ("2025-11-30", 366, True),
    ("2025", 699, True), ("2027-03", 0, False),
])
def test_price_age(date, days, stale):
    age = price_age(date, TODAY)
    assert (age.age_days, age.stale) == (days, stale)
    assert age.to_dict()["stale_after_days"] == STALE_AFTER_DAYS


def test_price_age_bad_dates():
    for bad in ("2026-13", "2026-02-30", "soon"):
        with pytest.raises(SpecError, match="not a calendar date"):
            price_age(bad, TODAY)


@given(st.dates(min_value=dt.date(2015, 1, 1), max_value=dt.date(2030, 12, 31)))
def test_coarser_dates_are_never_younger(day):
    full = price_age(day.isoformat(), TODAY).age_days
    month = price_age(day.strftime("%Y-%m"), TODAY).age_days
    year = price_age(str(day.year), TODAY).age_days
    assert year >= month >= full >= 0


def test_catalog_price_age_api(cat):
    h100 = cat.rent_usd_per_gpu_hour("h100-sxm-80gb")
    age = cat.price_age(h100, TODAY)
    assert not age.stale and age.age_days < 90
    assert cat.price_age(h100.id, TODAY) == age
    stale = cat.stale_prices(TODAY)
    assert "purchase-usd-dgx-a100-640gb" in stale  # 2020 list price
    assert all(a.age_days > STALE_AFTER_DAYS for a in stale.values())
    assert cat.stale_prices(TODAY, stale_after_days=10_000) == {}
    with pytest.raises(SpecError, match="Did you mean"):
        cat.price_age("rent-usd-h100-sxn-80gb", TODAY)  # a prefix of two ids is ambiguous


def test_projections_are_marked(cat):
    projected = [p for p in cat.prices.values() if p.projection]
    assert projected
    for p in projected:
        assert p.notes and ("project" in p.notes or "forecast" in p.notes or "estimate" in p.notes), p.id


def test_ethernet_800g_per_gpu_is_two_400g_planes(cat):
    net = cat.network("roce-800")
    assert (net.gbps_per_nic, net.ports_per_gpu, net.planes) == (400, 2, 2)
    assert net.gbps_per_gpu == 800
    assert net.nics_per_node_default * net.gbps_per_nic == 8 * 800  # node bandwidth unchanged
    assert cat.switch(net.switch).radix(400) == 128
    assert "ConnectX-8" in net.nic
    xdr = cat.network("ib-xdr800")
    assert (xdr.gbps_per_nic, xdr.ports_per_gpu, xdr.planes) == (800, 1, 1)


SYSTEMS_2026 = {  # accelerator -> servers a buyer is quoted in 2026 (issue 14)
    "gb300": ["gb300-nvl72"], "b300": ["dgx-b300", "hgx-b300-8gpu"], "mi350x": ["oam-8x-mi350x"],
    "mi355x": ["oam-8x-mi355x"], "ascend-910c": ["atlas-800t-a3", "cloudmatrix-384"],
    "h20-141gb": ["hgx-h20-141gb-8gpu"], "rtx-pro-6000": ["pcie-8x-rtx-pro-6000"],
    "rtx-pro-6000d": ["pcie-8x-rtx-pro-6000d"], "h200-sxm-141gb": ["dgx-h200", "hgx-h200-8gpu"],
}


@pytest.mark.parametrize("acc_id", sorted(SYSTEMS_2026))
def test_2026_systems_can_be_planned(cat, acc_id):
    acc = cat.accelerator(acc_id)
    assert acc.plannable_by_default
    servers = [s.id for s in cat.servers_for(acc_id, include_announced=False)]
    assert set(SYSTEMS_2026[acc_id]) <= set(servers)
    assert cat.rent_per_gpu_hour(acc_id, "USD") or cat.purchase(acc_id, "USD") or "price_usd" in acc.none_known
    if acc.china_market_sku or acc.domestic_china:
        assert any(cat.price(k, acc_id, "CNY") for k in ("rent", "purchase")) or "price_cny" in acc.none_known


def test_b300_servers_are_filled_in(cat):
    for sid in ("dgx-b300", "hgx-b300-8gpu"):
        srv = cat.server(sid)
        assert srv.cpu_cores and srv.ram_gib and srv.power_max_w >= 8 * cat.accelerator("b300").tdp_w
        assert srv.nics.count == 8 and srv.nics.gbps == 800
    assert cat.server("dgx-b300").nvme_tb


def test_rack_scale_systems(cat):
    gb300 = cat.accelerator("gb300")
    assert gb300.scaleup_domain == 72 and gb300.tdp_w == 1400
    assert cat.server("gb300-nvl72").gpus == 72 and cat.server("gb300-nvl72").cooling.startswith("direct liquid")
    cm = cat.server("cloudmatrix-384")
    a910c = cat.accelerator("ascend-910c")
    # one record per Ascend processor (die): frameworks see two 64 GB devices per 910C package
    assert cm.gpus == a910c.scaleup_domain == 2 * 384 and a910c.memory_gib == 64
    assert cat.server("atlas-800t-a3").gpus == a910c.gpus_per_host == 16
    assert cm.power_max_w == 559_000


def test_mi350x_is_the_air_cooled_mi355x(cat):
    a, b = cat.accelerator("mi350x"), cat.accelerator("mi355x")
    assert a.memory_gb == b.memory_gb and a.tdp_w == 1000 < b.tdp_w
    assert a.peak_tflops("bf16") == pytest.approx(b.peak_tflops("bf16") * 2200 / 2400, rel=1e-3)


def test_estimate_reports_price_age_and_warns_when_stale(run_cli, tmp_path):
    import json

    job = Path(__file__).parents[2] / "examples" / "sft-70b-16gpu.yaml"
    code, out, err = run_cli("estimate", str(job), "--json")
    assert code == 0, err
    rent = json.loads(out)["cost"]["rent"]
    assert rent["age_days"] >= 0 and isinstance(rent["stale"], bool)  # the verdict depends on today's date
    old = tmp_path / "old_quote.yaml"
    old.write_text("prices:\n  rent-usd-h100-sxm-80gb: {low: 2.0, high: 3.0, date: '2024-06', projection: true}\n")
    code, out, err = run_cli("--catalog", str(old), "estimate", str(job), "--json")
    assert code == 0, err
    result = json.loads(out)
    rent = result["cost"]["rent"]
    assert rent["date"] == "2024-06" and rent["stale"] and rent["projection"] and rent["age_days"] > 365
    assert any("over a year" in n for n in result["notes"]) and any("projection" in n for n in result["notes"])
    code, out, _ = run_cli("--lang", "en", "--catalog", str(old), "estimate", str(job))
    assert "older than a year" in out and "2024-06" in out


def test_plan_search_leaves_announced_parts_out_unless_named(run_cli, tmp_path):
    """The plan's hardware search honours the catalog status field (issue 14 / the plan's search)."""
    import json

    job = Path(__file__).parents[2] / "examples" / "sft-70b-search.yaml"
    code, out, err = run_cli("--lang", "en", "plan", str(job), "--json")
    assert code == 0, err
    excluded = json.loads(out)["search"]["excluded_accelerators"]
    assert "announced" in excluded["rubin"] and "include" in excluded["rubin"]
    code, out, err = run_cli("--lang", "zh", "plan", str(job), "--json")
    assert code == 0, err
    assert "尚未" in json.loads(out)["search"]["excluded_accelerators"]["rubin"]
