"""Public API behaviour: lookups, errors with suggestions, peak_tflops, record invariants."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainsizer.catalog import Accelerator, PriceRange, load_catalog
from trainsizer.errors import SpecError


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def test_unknown_accelerator_suggests(cat):
    with pytest.raises(SpecError) as info:
        cat.accelerator("h100-sxm-80")
    msg = str(info.value)
    assert "unknown accelerator" in msg and "'h100-sxm-80'" in msg
    assert "Did you mean 'h100-sxm-80gb'" in msg
    assert "Allowed:" in msg


@pytest.mark.parametrize("getter,bad,good", [
    ("server", "dgx-h10", "dgx-h100"),
    ("network", "ib-ndr40", "ib-ndr400"),
    ("switch", "quantum-2-qm970", "quantum-2-qm9700"),
    ("storage_tier", "pfs-superpod-bets", "pfs-superpod-best"),
])
def test_unknown_ids_suggest(cat, getter, bad, good):
    with pytest.raises(SpecError, match=f"Did you mean '{good}'"):
        getattr(cat, getter)(bad)


def test_price_lookup_errors(cat):
    with pytest.raises(SpecError, match="Did you mean 'b200'"):
        cat.purchase_usd("b2000")
    with pytest.raises(SpecError, match="unknown currency"):
        cat.purchase("b200", currency="EUR")


def test_peak_tflops(cat):
    h100 = cat.accelerator("h100-sxm-80gb")
    assert h100.peak_tflops("bf16") == pytest.approx(989.4)
    assert h100.peak_tflops("FP8") == pytest.approx(1978.9)
    assert h100.peak_tflops("fp32") == pytest.approx(494.7)  # fp32 training runs on TF32 tensor cores
    assert cat.accelerator("mi300x").peak_tflops("fp32") == pytest.approx(653.7)
    assert cat.accelerator("mi355x").peak_tflops("fp32") == pytest.approx(157.3)  # no tf32 published
    v100 = cat.accelerator("v100-sxm-32gb")
    assert v100.peak_tflops("fp32") == pytest.approx(15.7)  # no tensor-core FP32 path on Volta
    with pytest.raises(SpecError) as info:
        v100.peak_tflops("bf16")
    assert "v100-sxm-32gb has no published dense bf16" in str(info.value)
    assert "Allowed: fp32, fp16" in str(info.value)
    with pytest.raises(SpecError, match="Did you mean 'bf16'"):
        h100.peak_tflops("bf61")


def test_record_is_frozen(cat):
    with pytest.raises(Exception):  # noqa: B017 - pydantic raises ValidationError on frozen assignment
        cat.accelerator("h100-sxm-80gb").tdp_w = 1


def _acc(**overrides):
    base = dict(
        id="test-gpu", sources=["memory"], date="2026", confidence="low", name="t", vendor="v", arch="a",
        form_factor="f", launch_year=2026, memory_gb=80, memory_type="HBM", memory_bw_tb_s=1.0,
        tflops_dense={"bf16": 100}, scaleup_tech="pcie", scaleup_bw_bidir_gb_s=64, scaleup_domain=8,
        nvls=False, pcie_gen=5, pcie_gb_s=63.0, tdp_w=300, ecc=True, china_export_restricted=None,
    )
    base.update(overrides)
    return Accelerator.model_validate(base)


@given(gb=st.floats(min_value=1, max_value=4096), unit=st.sampled_from(["gib", "gb"]))
def test_memory_gib_never_exceeds_label_and_units_are_consistent(gb, unit):
    acc = _acc(memory_gb=gb, memory_label_unit=unit)
    if unit == "gib":
        assert acc.memory_gib == gb
    else:
        assert acc.memory_gib < gb  # 10**9 < 2**30
        assert acc.memory_gib == pytest.approx(gb * 1e9 / 2**30, abs=1e-3)


@given(bidir=st.floats(min_value=0, max_value=1e5))
def test_scaleup_per_direction_is_half(bidir):
    assert _acc(scaleup_bw_bidir_gb_s=bidir).scaleup_gb_s_per_dir == pytest.approx(bidir / 2)


@given(low=st.floats(min_value=0, max_value=1e7), span=st.floats(min_value=0, max_value=1e7))
def test_price_mid_is_within_range(low, span):
    p = PriceRange.model_validate(dict(
        id="rent-usd-x", sources=["memory"], date="2026", confidence="low", subject="x", kind="rent",
        currency="usd", unit="per_gpu_hour", low=low, high=low + span))
    assert p.low <= p.mid <= p.high
    assert p.currency == "USD" and p.source == "memory"


def test_explicit_memory_gib_is_kept():
    acc = _acc(memory_gib=79.2)
    assert acc.memory_gib == 79.2 and acc.memory_gib_basis == "given"


def test_ambiguous_short_names_are_not_aliases(cat):
    # 'h100' could be SXM, PCIe or NVL: the user must say which (the error lists the candidates)
    for name in ("h100", "a100", "h200"):
        with pytest.raises(SpecError, match=f"ambiguous accelerator: matches {name}-"):
            cat.accelerator(name)


def test_driver_reading_is_the_fit_capacity():
    """memory_driver: CUDA's total wins over nvidia-smi's, which wins over the label (known-gaps 42)."""
    smi = _acc(memory_driver={"smi_total_mib": 81559, "tool": "nvidia-smi", "sources": ["memory"], "date": "2026"})
    assert smi.memory_gib == pytest.approx(79.647) and "nvidia-smi total 81,559 MiB" in smi.memory_gib_basis
    both = _acc(memory_driver={"smi_total_mib": 81559, "cuda_total_gib": 79.205, "tool": "nvidia-smi",
                               "sources": ["memory"], "date": "2026"})
    assert both.memory_gib == 79.205 and both.memory_driver_gib == 79.205
    none = _acc(memory_driver={"note": "no public reading found; the label is used"})
    assert none.memory_gib == 80 and none.memory_driver_gib is None
    assert "memory" in both.source_ids()


@pytest.mark.parametrize(("driver", "words"), [
    ({"smi_total_mib": 81559, "tool": "nvidia-smi"}, "its sources and a date"),  # a figure without its source
    ({"smi_total_mib": 81559, "sources": ["memory"], "date": "2026"}, "the tool that printed it"),
    ({}, "needs a note saying why"),  # neither a reading nor why not
    ({"smi_total_mib": 60000, "tool": "nvidia-smi", "sources": ["memory"], "date": "2026"}, "90%..100%"),
    ({"smi_total_mib": 90000, "tool": "nvidia-smi", "sources": ["memory"], "date": "2026"}, "90%..100%"),
    ({"smi_total_mib": 81000, "cuda_total_gib": 79.5, "tool": "nvidia-smi", "sources": ["memory"], "date": "2026"},
     "above the tool's total"),
])
def test_driver_reading_is_checked(driver, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        _acc(memory_driver=driver)
