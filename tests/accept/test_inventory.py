from __future__ import annotations

from trainsizer.accept import host, inventory
from trainsizer.accept.criteria import Limit
from trainsizer.accept.telemetry_smi import NvidiaSmiTelemetry

from .conftest import FIXTURES
from .test_telemetry import smi_runner


def by_name(results):
    return {r.name: r for r in results}


def test_host_probe_on_recorded_sysfs():
    info = host.probe(FIXTURES / "sysfs-h100")
    assert info.cpu_count == 112
    assert info.ram_bytes == 2113639424 * 1024
    assert info.disks == [f"nvme{i}n1" for i in range(8)]
    rdma = [n for n in info.nics if n.kind == "rdma"]
    assert len(rdma) == 8 and rdma[0].speed_gbps == 400.0 and rdma[6].speed_gbps == 200.0 and not rdma[7].up
    assert [n.name for n in info.nics if n.kind == "ethernet"] == ["eth0"]  # lo has no device


def test_inventory_against_h100_platform(h100_ctx):
    r = by_name(inventory.run(h100_ctx))
    assert r["inventory.gpu_count"].status == "pass" and r["inventory.gpu_count"].measured == 8
    assert r["inventory.gpu_model"].status == "pass"
    assert r["inventory.gpu_memory"].status == "pass" and r["inventory.gpu_memory"].measured == 79.6
    assert r["inventory.nvlink_up"].status == "pass"
    assert r["inventory.ecc_mode"].status == "pass"
    # one port down and one port at HDR rate: both fail against 8 x 400 Gb/s
    assert r["inventory.nics"].status == "fail" and r["inventory.nics"].measured == 7
    assert r["inventory.nic_speed"].status == "fail" and r["inventory.nic_speed"].measured == 200.0
    assert "superpod" in r["inventory.nic_speed"].source.lower()
    # no minimum in platform criteria: reported, never passed
    assert r["inventory.driver_version"].status == "skipped" and r["inventory.driver_version"].measured == "550.54.15"
    assert r["inventory.cpu_cores"].status == "skipped" and r["inventory.cpu_cores"].measured == 112


def test_inventory_plan_minimums(h100_ctx):
    c = h100_ctx.criteria
    c.driver_version_min = Limit(value="560.0", source="plan: driver for CUDA 12.6")
    c.cpu_cores_min = Limit(value=64, source="plan")
    c.ram_gib_min = Limit(value=4096, source="plan: 2 x GPU memory")
    c.disks_min = Limit(value=8, source="plan")
    r = by_name(inventory.run(h100_ctx))
    assert r["inventory.driver_version"].status == "fail"
    assert r["inventory.cpu_cores"].status == "pass"
    assert r["inventory.ram"].status == "fail" and r["inventory.ram"].unit == "GiB"
    assert r["inventory.disks"].status == "pass"


def test_inactive_nvlink_fails(h100_ctx):
    h100_ctx.telemetry = NvidiaSmiTelemetry(run=smi_runner)
    r = by_name(inventory.run(h100_ctx))
    assert r["inventory.nvlink_up"].status == "fail" and r["inventory.nvlink_up"].measured == 16


def test_inventory_without_gpu_is_skipped_not_passed(cpu_ctx):
    res = inventory.run(cpu_ctx)
    gpu = [r for r in res if r.name in ("inventory.gpu_count", "inventory.gpu_model", "inventory.nvlink_up")]
    assert gpu and all(r.status == "skipped" and "no GPU telemetry" in r.why for r in gpu)
    assert not any(r.status == "pass" for r in res)


def test_wrong_gpu_model_and_count(h100_ctx):
    h100_ctx.criteria.gpu_model = Limit(value="H200", source="plan")
    h100_ctx.criteria.gpu_count = Limit(value=4, source="plan")
    r = by_name(inventory.run(h100_ctx))
    assert r["inventory.gpu_model"].status == "fail" and r["inventory.gpu_count"].status == "fail"


def test_ecc_disabled_fails(h100_ctx):
    data = h100_ctx.telemetry.data
    data["gpus"][4]["ecc_enabled"] = False
    r = by_name(inventory.run(h100_ctx))
    assert r["inventory.ecc_mode"].status == "fail" and "[4]" in r["inventory.ecc_mode"].why
