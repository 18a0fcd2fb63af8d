from __future__ import annotations

from trainsizer.accept import health, inventory, xid
from trainsizer.accept.telemetry_smi import NvidiaSmiTelemetry

from .conftest import fixture_text, recorded
from .test_telemetry import smi_runner


def by_name(results):
    return {r.name: r for r in results}


def test_healthy_recorded_node_passes(h100_ctx):
    r = by_name(health.run(h100_ctx))
    assert {k: v.status for k, v in r.items()} == {
        "health.ecc_uncorrectable": "pass", "health.ecc_corrected": "pass", "health.remapped_rows": "pass",
        "health.retired_pages": "pass", "health.xid": "pass", "health.throttle": "pass"}
    assert "azure" in r["health.xid"].source.lower()


def test_faults_from_recorded_nvidia_smi(h100_ctx, monkeypatch):
    monkeypatch.setattr(xid, "read_kernel_log", lambda: (fixture_text("kernel/dmesg-xid.txt"), "dmesg"))
    h100_ctx.telemetry = NvidiaSmiTelemetry(run=smi_runner)
    r = by_name(health.run(h100_ctx))
    assert r["health.ecc_uncorrectable"].status == "fail" and "GPU 2" in r["health.ecc_uncorrectable"].why
    assert r["health.ecc_corrected"].status == "pass" and r["health.ecc_corrected"].measured == 12
    assert r["health.remapped_rows"].status == "fail" and "remap pending" in r["health.remapped_rows"].why
    assert r["health.retired_pages"].status == "pass"
    assert r["health.xid"].status == "fail" and r["health.xid"].measured == 1  # 79 is critical; 13 and 94 are not
    assert "79" in r["health.xid"].why
    assert r["health.throttle"].status == "fail" and "hw_thermal" in r["health.throttle"].why


def test_unreadable_kernel_log_is_skipped(h100_ctx, monkeypatch):
    monkeypatch.setattr(xid, "read_kernel_log", lambda: (None, "not permitted"))
    h100_ctx.telemetry = NvidiaSmiTelemetry(run=smi_runner)
    assert by_name(health.run(h100_ctx))["health.xid"].status == "skipped"


def test_no_telemetry_skips_everything(cpu_ctx):
    assert all(r.status == "skipped" for r in health.run(cpu_ctx))


def test_an_amd_node_is_told_it_retires_pages_and_runs_no_cuda(h100_ctx):
    """On AMD the row-remap check and the CUDA version say why they do not apply (AMD retires HBM pages, ROCm has no
    CUDA), not NVIDIA's 'not reported' (known-gaps 43 (p))."""
    h100_ctx.telemetry = recorded("mi300a-burnin-ras.json")
    remap = by_name(health.run(h100_ctx))["health.remapped_rows"]
    assert remap.status == "skipped" and "health.retired_pages" in remap.why and "not reported" not in remap.why
    # the CUDA check's place is taken by the ROCm release's (known-gaps.md 68)
    checks = by_name(inventory.run(h100_ctx))
    assert "inventory.cuda_version" not in checks
    assert checks["inventory.rocm_version"].status == "skipped" and "ROCm" in checks["inventory.rocm_version"].why
