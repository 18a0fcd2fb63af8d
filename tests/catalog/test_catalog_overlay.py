"""User overlay files: add entries, override fields with provenance, and clear errors for bad content."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from trainsizer.catalog import load_catalog, overlay_source_id
from trainsizer.errors import SpecError


def _write(tmp_path: Path, text: str, name: str = "my_prices.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_override_price_records_overlay_as_source(tmp_path):
    path = _write(tmp_path, """
        date: 2026-12-01
        prices:
          rent-usd-h100-sxm-80gb: {low: 2.10, high: 2.40, typical: 2.25}
    """)
    cat = load_catalog([path])
    src = overlay_source_id(path)
    assert src == "overlay_my_prices"
    price = cat.rent_usd_per_gpu_hour("h100-sxm-80gb")
    assert (price.low, price.high, price.mid) == (2.10, 2.40, 2.25)
    assert price.date == "2026-12-01"
    for field in ("low", "high", "typical"):
        assert price.field_sources[field] == (src,)
    assert "unit" not in price.field_sources  # untouched fields keep their provenance
    assert src in price.sources and "mercatus_cloud_pricing_2026_05" in price.sources
    reg = cat.source(src)
    assert reg.url == path.resolve().as_uri() and reg.date == "2026-12-01"
    # the built-in catalog is untouched
    assert load_catalog().rent_usd_per_gpu_hour("h100-sxm-80gb").low == 1.99
    assert price.to_dict()["field_sources"]["low"] == [src]


def test_override_nested_field_and_own_sources(tmp_path):
    path = _write(tmp_path, """
        sources:
          my_bench: {title: Our MAMF run on 8x H100, date: '2026-11'}
        accelerators:
          h100-sxm-80gb:
            tflops_dense: {bf16: 800}
            sources: [my_bench]
            date: '2026-11'
    """)
    acc = load_catalog([path]).accelerator("h100-sxm5-80gb")
    assert acc.tflops_dense["bf16"] == 800
    assert acc.tflops_dense["fp8"] == pytest.approx(1978.9)  # merged, not replaced
    assert acc.field_sources == {"tflops_dense.bf16": (overlay_source_id(path), "my_bench")}
    assert acc.date == "2026-11"
    assert acc.peak_tflops("bf16") == 800


def test_add_new_accelerator_and_server(tmp_path):
    path = _write(tmp_path, """
        accelerators:
          my-npu:
            name: In-house NPU
            vendor: acme
            arch: X1
            form_factor: PCIe
            launch_year: 2026
            aliases: [acme-x1]
            memory_gb: 80
            memory_label_unit: gb
            memory_type: HBM3
            memory_bw_tb_s: 2.0
            tflops_dense: {bf16: 500, fp8: 1000}
            scaleup_tech: pcie
            scaleup_bw_bidir_gb_s: 126
            scaleup_domain: 8
            nvls: false
            pcie_gen: 5
            tdp_w: 500
            ecc: true
            china_export_restricted: null
        servers:
          my-npu-box:
            name: 8x my-npu
            accelerator: acme-x1
            gpus: 8
            cpu_model: 2x EPYC
            nics: {count: 8, gbps: 400}
            power_max_w: 6000
            rack_units: 4
            cooling: air
    """, name="acme.yaml")
    cat = load_catalog([path])
    acc = cat.accelerator("acme-x1")
    assert acc.id == "my-npu"
    assert acc.memory_gib == pytest.approx(80e9 / 2**30, abs=1e-3)  # decimal label -> 74.5 GiB
    assert acc.pcie_gb_s == 63.0  # derived from pcie_gen
    assert acc.sources == ("overlay_acme",) and acc.confidence == "medium"
    assert cat.server("my-npu-box").accelerator == "my-npu"  # alias resolved
    assert [s.id for s in cat.servers_for("my-npu")] == ["my-npu-box"]
    assert len(cat.accelerators) == len(load_catalog().accelerators) + 1


def test_overlays_apply_in_order(tmp_path):
    a = _write(tmp_path, "prices:\n  purchase-usd-b200: {low: 31000, high: 31000}\n", "a.yaml")
    b = _write(tmp_path, "prices:\n  purchase-usd-b200: {low: 33000, high: 33000}\n", "b.yaml")
    price = load_catalog([a, b]).purchase_usd("b200")
    assert price.low == 33000 and price.field_sources["low"] == ("overlay_b",)


@pytest.mark.parametrize(
    "text,fragments",
    [
        ("accelerators:\n  h100-sxm-80gb: {memory_gb: lots}\n",
         ["bad.yaml", "accelerators.h100-sxm-80gb.memory_gb", "'lots'", "Allowed: a number"]),
        ("accelerators:\n  h100-sxm-80gb: {tdp: 700}\n",
         ["bad.yaml", "accelerators.h100-sxm-80gb.tdp", "unknown field", "Did you mean 'tdp_w'", "Allowed:"]),
        ("networks:\n  ib-ndr400: {kind: infiniband}\n",
         ["networks.ib-ndr400.kind", "'infiniband'", "'ib'", "'roce'"]),
        ("prices:\n  rent-usd-b200: {low: 9.0}\n",
         ["bad.yaml: prices.rent-usd-b200", "above high", "Allowed: low <= typical <= high"]),
        ("acelerators:\n  x: {}\n",
         ["bad.yaml", "unknown section", "'acelerators'", "Did you mean 'accelerators'"]),
        ("accelerators:\n  h100-sxm-80gb: {tdp_w: -5}\n",
         ["tdp_w", "-5", "Allowed: a number > 0"]),
        ("accelerators:\n  My_GPU: {name: x}\n",
         ["accelerators.My_GPU.id", "Allowed: lowercase"]),
        ("prices:\n  rent-usd-h100-sxm-80gb: {sources: [no_such_source]}\n",
         ["rent-usd-h100-sxm-80gb.sources", "unknown source id", "'no_such_source'"]),
        ("servers:\n  dgx-h100: {accelerator: h100-sxm-8gb}\n",
         ["servers.dgx-h100.accelerator", "unknown accelerator", "Did you mean 'h100-sxm-80gb'"]),
        ("accelerators:\n  h100-sxm-80gb: {pcie_gen: 4, pcie_gb_s: null}\n  b200: {pcie_gen: 9}\n",
         ["accelerators.b200.pcie_gen", "9"]),
        # a cross-reference error names the overlay that set the field, not the built-in file of the entry
        ("servers:\n  dgx-h100: {accelerator: h100-sxm-8gb}\n", ["bad.yaml: servers.dgx-h100.accelerator"]),
        ("accelerators:\n  h100-sxm-80gb: {aliases: [h200-sxm-141gb]}\n",
         ["bad.yaml: accelerators.h100-sxm-80gb.aliases", "alias already names h200-sxm-141gb"]),
        ("accelerators: [1, 2]\n", ["bad.yaml: accelerators", "mapping"]),
        ("accelerators:\n  h100-sxm-80gb: {field_sources: {}}\n", ["field_sources", "set by the loader"]),
        ("accelerators:\n  h100: {name: [unclosed\n", ["bad.yaml:", "not valid YAML"]),
    ],
)
def test_bad_overlay_errors_name_file_entry_field_value_allowed(tmp_path, text, fragments):
    path = _write(tmp_path, text, "bad.yaml")
    with pytest.raises(SpecError) as info:
        load_catalog([path])
    msg = str(info.value)
    for fragment in fragments:
        assert fragment in msg, (fragment, msg)


def test_missing_overlay_file(tmp_path):
    with pytest.raises(SpecError, match="catalog file not found"):
        load_catalog([tmp_path / "nope.yaml"])


def test_bad_tflops_key(tmp_path):
    path = _write(tmp_path, "accelerators:\n  h100-sxm-80gb:\n    tflops_dense: {bf17: 1}\n", "bad.yaml")
    with pytest.raises(SpecError) as info:
        load_catalog([path])
    msg = str(info.value)
    assert "bad.yaml: accelerators.h100-sxm-80gb.tflops_dense" in msg and "'bf17'" in msg and "bf16" in msg


def test_overlay_that_changes_the_label_drops_the_old_driver_reading(tmp_path):
    """torchtitan's H100s are 96 GB parts: an overlay that says so is not held to the 80 GB part's nvidia-smi reading
    (it would be 79.2 GiB of a 96 GiB card); with its own reading that one is used."""
    base = load_catalog().accelerator("h100-sxm-80gb")
    assert base.memory_gib == pytest.approx(79.205)
    label_only = load_catalog([_write(tmp_path, "accelerators:\n  h100-sxm-80gb: {memory_gb: 96}\n",
                                      name="h96.yaml")]).accelerator("h100-sxm-80gb")
    assert label_only.memory_gib == 96 and label_only.memory_driver is None
    own = load_catalog([_write(tmp_path, """
        sources:
          my_smi_log: {title: our nvidia-smi log of the 96 GB part, date: '2026-12'}
        accelerators:
          h100-sxm-80gb:
            memory_gb: 96
            memory_driver: {smi_total_mib: 97871, tool: nvidia-smi, sources: [my_smi_log], date: '2026-12'}
    """, name="h96r.yaml")]).accelerator("h100-sxm-80gb")
    assert own.memory_gib == pytest.approx(97871 / 1024, abs=1e-3)
    other = load_catalog([_write(tmp_path, "accelerators:\n  h100-sxm-80gb: {tdp_w: 500}\n",
                                 name="h500.yaml")]).accelerator("h100-sxm-80gb")
    assert other.memory_gib == base.memory_gib  # the memory itself not touched: the reading stays
