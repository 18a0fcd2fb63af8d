"""The 64 GB parts of perf_heldout76 as their overlays state them (docs/known-gaps.md 321): BSC's user guide names
MareNostrum 5's H100 64GB 'HBM2', and a 64 GB part holds four 16 GB stacks, one fewer than the 80 GB parts' five;
each overlay's bandwidth is four stacks at the per-stack rate of the catalog's own HBM2e part of that generation
(H100: h100-pcie-80gb, 2.0 TB/s over five; A100: a100-sxm-80gb, 2.039 TB/s over five). Derived, not read: these
tests keep the two overlays on the same arithmetic, so neither can drift to fit its rows alone."""

from __future__ import annotations

import pytest

import perf_heldout as ph

MN5 = ph.DATA / "marenostrum5_h100_64gb_overlay.yaml"
LEONARDO = ph.DATA / "leonardo_a100_64gb_overlay.yaml"
STACKS_64GB, STACKS_80GB = 4, 5


@pytest.mark.parametrize(("overlay", "part", "hbm2e_reference"), [
    (MN5, "h100-sxm-80gb", "h100-pcie-80gb"),
    (LEONARDO, "a100-sxm-80gb", "a100-sxm-80gb"),
])
def test_the_64gb_parts_are_four_stacks_at_their_generations_hbm2e_rate(overlay, part, hbm2e_reference):
    builtin = ph.load_catalog([])
    ref = builtin.accelerators[hbm2e_reference]
    assert ref.memory_type == "HBM2e" and ref.memory_gb == 80
    stated = ph.load_catalog([overlay]).accelerators[part]
    assert stated.memory_bw_tb_s == pytest.approx(ref.memory_bw_tb_s * STACKS_64GB / STACKS_80GB, abs=0.01)
    assert stated.memory_bw_tb_s < builtin.accelerators[part].memory_bw_tb_s


def test_marenostrum5_part_is_fitted_at_what_a_process_is_given():
    """The 64 GB label and torch's 63.1 GiB on the partition, not the 80 GB part's 79.2 GiB reading; HBM2 as BSC says."""
    acc = ph.load_catalog([MN5]).accelerators["h100-sxm-80gb"]
    assert (acc.memory_gb, acc.memory_gib, acc.memory_type) == (64, 63.1, "HBM2")
    assert acc.memory_driver_gib == pytest.approx(63.1)
