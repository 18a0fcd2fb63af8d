"""Checks on the shipped catalog data: coverage, provenance, units and sanity of the figures."""

from __future__ import annotations

import json
import re

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.catalog.catalog import build_catalog

REQUIRED_ACCELERATORS = [
    "a100-sxm-80gb", "a100-sxm-40gb", "h100-sxm-80gb", "h100-pcie-80gb", "h200-sxm-141gb", "h800-sxm-80gb",
    "a800-sxm-80gb", "b200", "b300", "gb200", "h20", "l20", "l40s", "rtx-4090", "rtx-5090", "mi300x",
    "mi325x", "mi355x", "ascend-910b", "gaudi3", "v100-sxm-32gb",
]
# ids used in /work/shared/reference/hardware/gpus.yaml (compiled 2026-11-30)
REFERENCE_IDS = {
    "v100-sxm2-32gb": "v100-sxm-32gb", "a100-sxm4-40gb": "a100-sxm-40gb", "a100-sxm4-80gb": "a100-sxm-80gb",
    "a100-pcie-40gb": "a100-pcie-40gb", "a100-pcie-80gb": "a100-pcie-80gb", "a800-sxm4-80gb": "a800-sxm-80gb",
    "a10g": "a10g", "h100-sxm5-80gb": "h100-sxm-80gb", "h100-pcie-80gb": "h100-pcie-80gb",
    "h100-nvl-94gb": "h100-nvl-94gb", "h200-sxm-141gb": "h200-sxm-141gb", "h200-nvl-141gb": "h200-nvl-141gb",
    "h800-sxm5-80gb": "h800-sxm-80gb", "h20-96gb": "h20", "l40s": "l40s", "l40": "l40", "l20": "l20",
    "rtx-6000-ada": "rtx-6000-ada", "rtx-4090": "rtx-4090", "rtx-5090": "rtx-5090", "rtx-a6000": "rtx-a6000",
    "b100": "b100", "b200-hgx": "b200", "gb200-per-gpu": "gb200", "b300-hgx": "b300", "mi300x": "mi300x",
    "mi325x": "mi325x", "mi355x": "mi355x", "gaudi3": "gaudi3", "ascend-910b": "ascend-910b",
}
REQUIRED_NETWORKS = {
    "ib-hdr200": "ib", "ib-ndr200": "ib", "ib-ndr400": "ib", "ib-xdr800": "ib",
    "roce-25": "roce", "roce-100": "roce", "roce-200": "roce", "roce-400": "roce", "roce-800": "roce",
    "efa-v2": "efa",
}
ID_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
DATE_RE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def test_accelerator_count_and_required_ids(cat):
    assert len(cat.accelerators) >= 25
    missing = [a for a in REQUIRED_ACCELERATORS if a not in cat.accelerators]
    assert not missing


@pytest.mark.parametrize("ref_id,canonical", sorted(REFERENCE_IDS.items()))
def test_reference_ids_resolve(cat, ref_id, canonical):
    assert cat.accelerator(ref_id).id == canonical
    assert cat.accelerator(ref_id.upper()).id == canonical


def test_aliases_do_not_collide(cat):
    seen: dict[str, str] = {}
    for acc in cat.accelerators.values():
        for alias in acc.aliases:
            assert alias not in cat.accelerators, alias
            assert alias not in seen, (alias, seen.get(alias), acc.id)
            seen[alias] = acc.id


def test_every_record_has_sources_date_confidence(cat):
    n = 0
    for section, rec in cat.records():
        n += 1
        assert rec.sources, (section, rec.id)
        assert DATE_RE.match(rec.date), (section, rec.id, rec.date)
        assert rec.confidence in ("high", "medium", "low", "very_low")
    assert n > 150


def test_every_source_id_resolves_to_registry(cat):
    for section, rec in cat.records():
        for sid in rec.source_ids():
            assert sid in cat.sources, (section, rec.id, sid)
    for src in cat.sources.values():
        assert src.title
        assert src.date is None or DATE_RE.match(src.date)


def test_no_unused_sources(cat):
    from trainsizer.catalog import scale
    from trainsizer.plan.buildout import rules  # the plan's rules cite catalog sources too

    used = set()
    for _, rec in cat.records():
        used |= rec.source_ids()
    used |= {r.source for _, r in rules.all_rules()}
    used |= {p["source"] for key in ("phases", "rent_phases") for p in rules.raw("phases")[key]}
    used |= scale.source_ids()  # the documented cluster sizes (catalog/evidence/scale.yaml)
    assert set(cat.sources) - used == set()


def test_ids_lowercase_hyphen(cat):
    for section, rec in cat.records():
        assert ID_RE.match(rec.id), (section, rec.id)
    for acc in cat.accelerators.values():
        for alias in acc.aliases:
            assert ID_RE.match(alias), alias


def test_dense_below_sparse_headline(cat):
    checked = 0
    for acc in cat.accelerators.values():
        for prec, sparse in acc.tflops_sparse_headline.items():
            dense = acc.tflops_dense.get(prec)
            if dense is None:
                continue  # e.g. GeForce fp16_fp16acc: a different accumulate mode
            checked += 1
            assert dense < sparse, (acc.id, prec, dense, sparse)
            ratio = sparse / dense
            assert ratio <= 2.05, (acc.id, prec, ratio)
            if ratio < 1.9:  # not the usual 2:4 factor: must be flagged as a doubt
                assert any("sparse" in u for u in acc.unsure), (acc.id, prec, ratio)
    assert checked > 40


def test_tensor_rates_grow_as_precision_shrinks(cat):
    for acc in cat.accelerators.values():
        t = acc.tflops_dense
        chain = [t[k] for k in ("tf32", "bf16", "fp8", "fp4") if t[k] is not None]
        assert chain == sorted(chain), acc.id


def test_h100_headline_figures(cat):
    h100 = cat.accelerator("h100-sxm-80gb")
    assert h100.tflops_dense["bf16"] == pytest.approx(989.4)
    assert h100.tflops_sparse_headline["bf16"] == pytest.approx(1979)
    assert h100.scaleup_gb_s_per_dir == 450
    assert h100.nvls and h100.scaleup_domain == 8
    assert h100.pcie_gb_s == pytest.approx(63.0)
    assert cat.accelerator("gb200").scaleup_domain == 72
    assert not cat.accelerator("a100-sxm-80gb").nvls
    assert cat.accelerator("h800").scaleup_bw_bidir_gb_s == 400


def test_memory_gib_derivation(cat):
    for acc in cat.accelerators.values():
        driver = acc.memory_driver_gib
        shown = acc.memory_usable_gb if acc.memory_usable_gb is not None else acc.memory_gb
        if driver is not None:
            assert acc.memory_gib == pytest.approx(driver, abs=1e-3)
            assert acc.memory_gib_basis.startswith("driver-visible")
        elif acc.memory_label_unit == "gib":
            assert acc.memory_gib == shown
        else:
            assert acc.memory_gib == pytest.approx(shown * 1e9 / 2**30, rel=1e-4)
        assert acc.memory_gib <= acc.memory_label_gib
        assert acc.memory_gib_basis


def test_usable_vs_label_memory_is_consistent(cat, tmp_path):
    """The Blackwell parts carry the label (installed HBM) and the vendor's usable figure; fit uses the driver
    reading, below both (known-gaps 42: B200 178.35 GiB to CUDA against the HGX table's 180, GB200 184.31 against
    186, B300 267.69 against ~270, GB300 276.50 against ~279). Without a reading the usable figure is used."""
    expected = {"b200": (192, 180, 178.35), "gb200": (192, 186, 184.31), "b300": (288, 270, 267.69),
                "gb300": (288, 279, 276.5)}
    for acc_id, (label, usable, cuda) in expected.items():
        acc = cat.accelerator(acc_id)
        assert (acc.memory_gb, acc.memory_usable_gb, acc.memory_gib) == (label, usable, cuda), acc_id
        assert acc.memory_gib < acc.memory_usable_gb < acc.memory_label_gib == label
        assert acc.memory_gib_basis.startswith("driver-visible")
    overlay = tmp_path / "usable.yaml"
    overlay.write_text("accelerators:\n  gb300: {memory_usable_gb: 278}\n")
    gb300 = build_catalog([overlay]).accelerator("gb300")  # a new usable figure drops the old reading
    assert gb300.memory_driver is None and gb300.memory_gib == 278 and "usable" in gb300.memory_gib_basis


def test_every_part_says_what_the_driver_shows(cat):
    """Every accelerator carries memory_driver: a sourced reading, or a note that none was found (known-gaps 42)."""
    for acc in cat.accelerators.values():
        d = acc.memory_driver
        assert d is not None, acc.id
        if d.usable_gib is None:
            assert d.note and "label is used" in d.note, acc.id
            continue
        assert d.sources and d.date, acc.id
        assert set(d.sources) <= set(cat.sources), acc.id
        assert 0.9 * acc.memory_label_gib <= d.usable_gib <= acc.memory_label_gib, acc.id
        if d.cuda_total_gib and d.smi_total_mib:
            assert d.cuda_total_gib <= d.smi_total_mib / 1024, acc.id


def test_driver_visible_totals_of_the_common_parts(cat):
    """What a process gets, not the label: CUDA's total where read (deviceQuery / PyTorch's "total capacity"),
    below nvidia-smi's total, below the label (thamada/nvidia-smi gls @c4c8a463 and the issues in sources.yaml)."""
    got = {a: cat.accelerator(a).memory_gib for a in ("h100-sxm-80gb", "a100-sxm-80gb", "rtx-4090", "rtx-5090",
                                                        "l40s", "mi300x")}
    assert got == {"h100-sxm-80gb": 79.205, "a100-sxm-80gb": 79.256, "rtx-4090": 23.643, "rtx-5090": 31.36,
                   "l40s": 44.521, "mi300x": 191.984}
    h100 = cat.accelerator("h100-sxm-80gb").memory_driver
    assert h100.smi_total_mib == 81559 and h100.tool == "nvidia-smi"
    assert cat.accelerator("l40s").memory_driver.ecc is True  # in-band ECC on GDDR6: a sixteenth less


def test_pcie_only_cards_use_pcie_scaleup(cat):
    for acc_id in ("l40s", "rtx-4090", "rtx-5090", "l20"):
        acc = cat.accelerator(acc_id)
        assert acc.scaleup_tech == "pcie"
        assert acc.scaleup_gb_s_per_dir == pytest.approx(acc.pcie_gb_s)


def test_market_tags(cat):
    for acc_id in ("h20", "h800-sxm-80gb", "a800-sxm-80gb", "l20"):
        assert cat.accelerator(acc_id).china_market_sku
    assert cat.accelerator("ascend-910b").domestic_china
    assert cat.accelerator("h100-sxm-80gb").china_export_restricted is True


def test_required_networks(cat):
    for net_id, kind in REQUIRED_NETWORKS.items():
        net = cat.network(net_id)
        assert net.kind == kind
        assert 0 < net.efficiency_planning <= 1
        assert net.nic
    ndr = cat.network("ib-ndr400")
    assert ndr.gbps_per_nic == 400
    assert 46 <= ndr.payload_gb_s_per_nic <= 48
    assert cat.switch(ndr.switch).radix(400) == 64
    assert cat.switch("quantum-x800-q3400").radix(800) == 144


def test_servers(cat):
    assert len(cat.servers) >= 10
    for srv in cat.servers.values():
        acc = cat.accelerators[srv.accelerator]
        # nameplate power can never be below the accelerators' own TDP
        assert srv.power_max_w >= srv.gpus * acc.tdp_w, srv.id
        assert srv.nics.count >= 1 and srv.rack_units > 0
    eight = {s.accelerator for s in cat.servers.values() if s.gpus == 8}
    for acc_id in ("h100-sxm-80gb", "h200-sxm-141gb", "b200", "a100-sxm-80gb", "mi300x", "l40s", "h20"):
        assert acc_id in eight, acc_id
    dgx = cat.server("dgx-h100")
    assert (dgx.cpu_cores, dgx.ram_gib, dgx.nvme_tb, dgx.power_max_w, dgx.rack_units) == (112, 2048, 30.72, 10200, 8)
    assert [s.id for s in cat.servers_for("h100-sxm5-80gb")][:2] == ["dgx-h100", "hgx-h100-8gpu"]


def test_storage_tiers(cat):
    kinds = {t.kind for t in cat.storage_tiers.values()}
    assert {"node_local", "nfs", "parallel_fs"} <= kinds
    best = cat.storage_tier("pfs-superpod-best")
    assert (best.read_gb_s_per_node.low, best.write_gb_s_per_node.low) == (40, 20)
    assert cat.pcie_generations["gen5"].x16_gb_s_per_dir == 63.0


def test_prices(cat):
    keys = set()
    for p in cat.prices.values():
        assert p.id == f"{p.kind}-{p.currency.lower()}-{p.subject}" + (f"-{p.term}" if p.term else "")
        key = (p.kind, p.currency, p.subject, p.term)
        assert key not in keys
        keys.add(key)
        assert p.low <= p.mid <= p.high
    h100 = cat.rent_usd_per_gpu_hour("h100-sxm-80gb")
    assert h100.currency == "USD" and h100.unit == "per_gpu_hour" and h100.low < h100.high
    assert cat.rent_per_gpu_hour("h20", currency="cny").currency == "CNY"
    assert cat.purchase_cny("hgx-h20-8gpu").low == 1_200_000
    assert cat.purchase_usd("dgx-h100").unit == "per_server"
    assert cat.purchase_usd("gb200-nvl72").unit == "per_rack"
    assert cat.purchase_usd("quantum-2-qm9700").unit == "per_switch"
    assert cat.purchase_usd("v100-sxm2-32gb") is None


def test_a_typical_price_at_an_end_of_its_range_says_why(cat):
    """typical is the source's central figure; one equal to low or high (a list price is a ceiling, not a
    centre) must be explained in the notes, else the record gives no typical and mid is the mean."""
    for p in cat.prices.values():
        if p.typical is not None and p.low < p.high and p.typical in (p.low, p.high):
            assert "typical" in (p.notes or ""), p.id
    gaudi3 = cat.purchase_usd("gaudi3")
    assert gaudi3.low < gaudi3.mid < gaudi3.high


def test_facility_and_reliability(cat):
    f = cat.facility
    assert f.electricity_usd_per_kwh.unit == "USD/kWh"
    assert f.electricity_per_kwh("cny").unit == "CNY/kWh"
    assert 1.0 < f.pue.low <= f.pue.high < 2.0
    assert f.rack_kw_air.high < f.rack_kw_liquid.low
    assert f.colocation_usd_per_kw_month.mid > 0
    rel = cat.reliability
    assert rel.node_failures_per_1000_node_days.typical == 4.0
    llama = rel.datasets["llama3-405b-pretrain"]
    assert llama.job_mtbf_hours == pytest.approx(llama.days * 24 / llama.unplanned, rel=0.01)
    assert llama.failures_per_1000_node_days == pytest.approx(
        llama.unplanned / (llama.nodes * llama.days) * 1000, rel=0.01)
    counts = llama.details["breakdown_unplanned_counts"]
    assert sum(counts.values()) == llama.unplanned
    assert rel.job_mtbf_hours(llama.nodes, llama.failures_per_1000_node_days) == pytest.approx(3.09, rel=0.01)


def test_catalog_is_json_ready(cat):
    out = json.loads(json.dumps(cat.to_dict()))
    assert out["accelerators"]["h100-sxm-80gb"]["sources"]
    assert out["prices"]["rent-usd-h100-sxm-80gb"]["date"]


def test_default_catalog_is_cached():
    assert load_catalog() is load_catalog()


def test_alt_values_and_field_sources_name_real_fields(cat):
    def resolve(d, dotted):
        for part in dotted.split("."):
            if not isinstance(d, dict) or part not in d:
                return False
            d = d[part]
        return True

    n = 0
    for section, rec in cat.records():
        data = rec.to_dict()
        for key in rec.alt_values:
            n += 1
            assert resolve(data, key), (section, rec.id, key)
    assert n >= 20


def test_geforce_blackwell_halves_only_the_16_bit_fp32_accumulate_rate(cat):
    # RTX 5090 (sm_120): BF16 with FP32 accumulate at half the FP16-accumulate rate (170 SMs x 512 FLOP/clk at the
    # 2,407 MHz boost), FP8 at the full rate (cuBLASLt FP8 on sm_120, blackwall_5060ti / cudalibsamples_283); the
    # 4090 keeps the Ada table's halved FP8. The measured 236 TFLOPS torch.matmul is kept beside the rated peak.
    r5090, r4090 = cat.accelerator("rtx-5090").tflops_dense, cat.accelerator("rtx-4090").tflops_dense
    assert r5090["bf16"] == pytest.approx(170 * 512 * 2.407e9 / 1e12, rel=0.005)
    assert r5090["fp8"] / r5090["bf16"] == pytest.approx(4, rel=0.01)
    assert r5090["fp4"] / r5090["fp8"] == pytest.approx(2, rel=0.01)
    assert r4090["fp8"] / r4090["bf16"] == pytest.approx(2, rel=0.01)
    measured = cat.accelerator("rtx-5090").alt_values["tflops_dense.bf16"][0]
    assert measured.value > r5090["bf16"] and "zzc0721_5090" in measured.sources
    assert cat.accelerator("rtx-5090").alt_values["tflops_dense.fp8"][0].value == 419


def test_disagreeing_sources_are_recorded(cat):
    """Doubts found when checking the references are kept as data, not silently resolved."""
    assert {a.value for a in cat.accelerator("gaudi3").alt_values["tflops_dense.bf16"]} == {1677}
    assert cat.server("dgx-h100").alt_values["power_max_w"][0].value == 11300
    llama = cat.reliability.datasets["llama3-405b-pretrain"]
    assert llama.details["unplanned_gpu_related_pct_printed"] == 58.7
    assert llama.details["unplanned_gpu_related_pct_by_counts"] == 64.0
    assert any("30.1%" in u for u in llama.unsure)
    assert any("one direction" in u for u in cat.switch("quantum-x800-q3400").unsure)


def test_every_vendor_has_a_name_in_the_catalog(cat):
    """One place names the vendors (accelerators.yaml `vendors`): every built-in accelerator's vendor code has
    a record there; a code it does not list (an overlay's own vendor) is shown as written."""
    codes = {a.vendor for a in cat.accelerators.values()}
    assert codes <= set(cat.vendors), sorted(codes - set(cat.vendors))
    assert cat.vendor_name("nvidia") == "NVIDIA" and cat.vendor_name("huawei", "zh") == "华为"
    assert cat.vendor_name("amd", "zh") == "AMD"  # no Chinese name recorded: the English one
    assert cat.vendor_name("acme") == "acme"


@pytest.mark.parametrize("sku, parent", [("rtx-4090d", "rtx-4090"), ("rtx-5090d-v2", "rtx-5090")])
def test_china_geforce_skus_sit_under_the_tpp_line(cat, sku, parent):
    # US ECCN 3A090 (Oct-2023): TPP = dense rate x bit length, the highest over precisions, must stay under 4,800.
    # The parent cards are over it (GeForce FP8 / FP4 with FP16 accumulate = 2x the catalog's FP32-accumulate
    # rate on Ada); their China SKUs are under it, and keep the parent's market tags reversed.
    def tpp(acc):
        t = cat.accelerator(acc).tflops_dense
        fp8_fp16acc = 2 * t["fp8"] if acc.startswith("rtx-4090") else t["fp8"]
        return max(fp8_fp16acc * 8, (t["fp4"] or 0) * 4)

    assert tpp(parent) > 4800 > tpp(sku) > 4600
    a, p = cat.accelerator(sku), cat.accelerator(parent)
    assert a.china_market_sku and not a.china_export_restricted and p.china_export_restricted
    assert a.memory_gb == 24 and a.tflops_dense["bf16"] <= p.tflops_dense["bf16"]
    assert cat.price("purchase", sku, "CNY").low > 10000


def test_the_l4_and_a10_are_found_by_their_short_names(cat):
    """Users write "l4" / "a10"; the ids name the form factor (perf_constants.yaml family keys match id prefixes, and
    "l4" / "a10" would be prefixes of the L40, L40S, A10G and A100 ids)."""
    assert cat.accelerator("l4").id == "l4-pcie-24gb" and cat.accelerator("a10").id == "a10-pcie-24gb"
    assert cat.accelerator("l4").tdp_w == 72 and cat.accelerator("a10").tdp_w == 150
    assert cat.accelerator("a10g").id == "a10g"  # the AWS part stays its own



def test_ga102_geforce_halves_fp32_accumulate_and_the_workstation_card_does_not(cat):
    """RTX 3090 and RTX A5000 (GA102 whitepaper Appendix A; A5000 datasheet): the GeForce card's BF16 / FP16 with FP32
    accumulate is half its FP16-accumulate rate (82 SMs x 512 FLOP/clk at 1,695 MHz), the pro card's is the full rate
    (64 SMs x 1,024); both pair over a 2-way NVLink bridge; GeForce has no ECC and no PCIe peer-to-peer."""
    r3090, a5000 = cat.accelerator("rtx-3090"), cat.accelerator("rtx-a5000")
    assert r3090.tflops_dense["bf16"] == pytest.approx(82 * 512 * 1.695e9 / 1e12, rel=0.005)
    assert r3090.tflops_sparse_headline["fp16_fp16acc"] == pytest.approx(4 * r3090.tflops_dense["bf16"], rel=0.005)
    assert a5000.tflops_dense["bf16"] == pytest.approx(64 * 1024 * 1.695e9 / 1e12, rel=0.005)
    assert a5000.tflops_sparse_headline["fp16"] == pytest.approx(2 * a5000.tflops_dense["bf16"], rel=0.005)
    for acc in (r3090, a5000):
        assert acc.scaleup_tech == "nvlink-bridge" and acc.scaleup_domain == 2 and acc.scaleup_bw_bidir_gb_s == 112.5
        assert acc.memory_gb == 24 and acc.pcie_gen == 4 and not acc.nvls
    assert (r3090.ecc, a5000.ecc) == (False, True) and (r3090.tdp_w, a5000.tdp_w) == (350, 230)
    assert r3090.host_staged_gb_s_per_dir == cat.accelerator("rtx-4090").host_staged_gb_s_per_dir
    assert a5000.host_staged_gb_s_per_dir is None  # pro cards keep PCIe peer-to-peer
    assert r3090.memory_gib == 23.70 < r3090.memory_driver.smi_total_mib / 1024  # what a process gets
    assert cat.accelerator("a5000").id == "rtx-a5000"
    assert cat.rent_per_gpu_hour("rtx-3090", "USD").low < cat.rent_per_gpu_hour("rtx-4090", "USD").low
