"""GPU-to-GPU bandwidth inside a host without NVLink: PCIe peer-to-peer, host-staged copies where the driver
disables peer-to-peer (GeForce), and NVLink bridges that join only pairs of an 8-card host."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.scenario import build_system


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def test_geforce_copies_are_host_staged(cat):
    acc = cat.accelerator("rtx-4090")
    system = build_system(acc, 2, 2, None)
    assert system.intra_node_gb_s == acc.host_staged_gb_s_per_dir < acc.pcie_gb_s / 2
    assert system.domain_gpus == 2  # the PCIe host is the comm domain


def test_pcie_peer_to_peer_at_the_link_rate(cat):
    acc = cat.accelerator("rtx-pro-6000")
    assert acc.host_staged_gb_s_per_dir is None
    assert build_system(acc, 8, 8, None).intra_node_gb_s == acc.pcie_gb_s


def test_an_nvlink_bridge_serves_its_pair_only(cat):
    acc = cat.accelerator("h100-nvl-94gb")
    assert acc.scaleup_tech == "nvlink-bridge" and acc.scaleup_domain == 2
    assert build_system(acc, 2, 2, None).intra_node_gb_s == acc.scaleup_gb_s_per_dir
    assert build_system(acc, 8, 8, None).intra_node_gb_s == acc.pcie_gb_s  # a ring of 8 crosses PCIe


def test_grace_superchips_reach_host_memory_over_nvlink_c2c(cat):
    """GB200 / GB300: the host link (activation and optimizer offloading) is NVLink-C2C to the Grace CPU, not
    the PCIe generation; parts without C2C keep their PCIe figure."""
    for acc_id in ("gb200", "gb300"):
        acc = cat.accelerator(acc_id)
        assert acc.c2c_gb_s_per_dir and acc.c2c_gb_s_per_dir > acc.pcie_gb_s
        assert build_system(acc, 4, 4, None).pcie_gb_s == acc.c2c_gb_s_per_dir
    b200 = cat.accelerator("b200")
    assert b200.c2c_gb_s_per_dir is None and build_system(b200, 8, 8, None).pcie_gb_s == b200.pcie_gb_s
