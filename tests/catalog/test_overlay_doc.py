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
    for field in ("vendor", "scaleup_tech", "pcie_gb_s", "tdp_w"):
        assert field in text
    assert "name" not in text.split("missing:")[1] and "launch_year" not in text


def test_overlay_with_a_duplicate_key_names_the_line(tmp_path):
    path = tmp_path / "o.yaml"
    path.write_text("prices:\n  rent-usd-h100-sxm-80gb: {low: 2.0, high: 2.5}\n  rent-usd-h100-sxm-80gb: {low: 1.0, high: 1.5}\n")
    with pytest.raises(SpecError, match=r"o.yaml:3: key 'rent-usd-h100-sxm-80gb' is given twice \(first on line 2\)"):
        load_catalog(overlays=[path])
