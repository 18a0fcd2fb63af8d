"""The overlay documentation's complete example loads; missing fields are reported all at once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError

DOC = Path(__file__).resolve().parents[2] / "docs" / "catalog-overlay.md"


def _example(tmp_path) -> Path:
    block = re.search(r"## A complete example\s+```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert block, "docs/catalog-overlay.md lost its example"
    path = tmp_path / "overlay.yaml"
    path.write_text(block.group(1), encoding="utf-8")
    return path


def test_documented_example_loads(tmp_path):
    cat = load_catalog(overlays=[_example(tmp_path)])
    acc = cat.accelerator("acme-x1")
    assert acc.memory_gib == 96 and acc.name == "acme-x1" and any("defaulted" in u for u in acc.unsure)
    assert cat.rent_per_gpu_hour("h100-sxm-80gb").low == pytest.approx(1.90)


def test_every_missing_field_is_reported_at_once(tmp_path):
    path = tmp_path / "o.yaml"
    path.write_text("accelerators:\n  my-gpu: {memory_gb: 96, memory_bw_tb_s: 4.0, tflops_dense: {bf16: 800}}\n")
    with pytest.raises(SpecError) as err:
        load_catalog(overlays=[path])
    text = str(err.value)
    for field in ("scaleup_tech", "scaleup_bw_bidir_gb_s", "scaleup_domain", "nvls", "pcie_gb_s | pcie_gen", "tdp_w"):
        assert field in text
    listed = text.split("missing:")[1]
    for defaulted in ("name", "launch_year", "vendor", "ecc", "china_export_restricted", "arch", "form_factor"):
        assert defaulted not in listed


def test_fields_no_estimate_reads_are_defaulted_and_marked(tmp_path):
    """A PCIe card with only the figures the estimates read: vendor, ECC, export status unknown (None, not a
    guess), PCIe generation not needed beside pcie_gb_s, no NVLS without NVLink; the record says so."""
    path = tmp_path / "o.yaml"
    path.write_text("accelerators:\n  my-gpu: {memory_gb: 48, memory_bw_tb_s: 0.9, tflops_dense: {bf16: 180},\n"
                    "    scaleup_tech: pcie, scaleup_bw_bidir_gb_s: 64, scaleup_domain: 8, pcie_gb_s: 32, tdp_w: 300}\n")
    acc = load_catalog(overlays=[path]).accelerator("my-gpu")
    assert acc.ecc is None and acc.china_export_restricted is None and acc.pcie_gen is None
    assert acc.nvls is False and acc.vendor == "not given" and acc.pcie_gb_s == 32
    doubt = " ".join(acc.unsure)
    for field in ("vendor", "ecc", "china_export_restricted", "nvls"):
        assert field in doubt


def test_an_nvlink_card_must_say_whether_it_has_nvls(tmp_path):
    path = tmp_path / "o.yaml"
    path.write_text("accelerators:\n  my-gpu: {memory_gb: 48, memory_bw_tb_s: 0.9, tflops_dense: {bf16: 180},\n"
                    "    scaleup_tech: nvlink, scaleup_bw_bidir_gb_s: 900, scaleup_domain: 8, pcie_gen: 5, tdp_w: 300}\n")
    with pytest.raises(SpecError, match="nvls"):
        load_catalog(overlays=[path])


def test_overlay_with_a_duplicate_key_names_the_line(tmp_path):
    path = tmp_path / "o.yaml"
    path.write_text("prices:\n  rent-usd-h100-sxm-80gb: {low: 2.0, high: 2.5}\n  rent-usd-h100-sxm-80gb: {low: 1.0, high: 1.5}\n")
    with pytest.raises(SpecError, match=r"o.yaml:3: key 'rent-usd-h100-sxm-80gb' is given twice \(first on line 2\)"):
        load_catalog(overlays=[path])


def test_documented_scale_example_places_the_card(tmp_path):
    from trainsizer.catalog import scale

    block = re.search(r"## Documented scale.*?```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert block, "docs/catalog-overlay.md lost its scale_platforms example"
    path = tmp_path / "scale.yaml"
    path.write_text(block.group(1), encoding="utf-8")
    cat = load_catalog(overlays=[_example(tmp_path), path])
    st = scale.standing("acme-x1", 256, 8, cat)
    assert st.level == "demonstrated" and st.platform is not None and st.evidence.sources == ("our_quote_2026_11",)


def test_an_overlay_names_a_new_vendor(tmp_path):
    path = tmp_path / "o.yaml"
    path.write_text("vendors:\n  acme: {name: ACME, name_zh: 艾克米}\n", encoding="utf-8")
    cat = load_catalog(overlays=[path])
    assert (cat.vendor_name("acme"), cat.vendor_name("acme", "zh")) == ("ACME", "艾克米")
    assert cat.vendor_name("nvidia") == "NVIDIA"
