"""GEMM and HBM harnesses run for real on CPU tensors; the checks skip without a CUDA GPU."""

from __future__ import annotations

import pytest

from trainsizer.accept import gemm, hbm
from trainsizer.accept.criteria import Limit

torch = pytest.importorskip("torch", reason="torch not installed (pip install 'trainsizer[torch]')")


def test_gemm_flop_count():
    assert gemm.gemm_flops(8192, 8192, 8192) == 2 * 8192**3


def test_harnesses_measure_on_cpu():
    cpu = torch.device("cpu")
    assert gemm.measure_tflops(torch, cpu, torch.float32, 128, iters=3, warmup=1) > 0
    assert hbm.measure_copy_gb_s(torch, cpu, 2**20, iters=3, warmup=1) > 0


@pytest.mark.skipif(torch.cuda.is_available(), reason="this host has a GPU")
def test_no_gpu_is_skipped_never_passed(cpu_ctx):
    results = [*gemm.run(cpu_ctx), *hbm.run(cpu_ctx)]
    assert [r.name for r in results] == ["gemm.bf16", "gemm.fp8", "hbm.bandwidth"]
    assert all(r.status == "skipped" and "no CUDA GPU" in r.why for r in results)


def test_per_gpu_verdict_flags_a_straggler(h100_ctx):
    limit = Limit(value=700.0, source="test")
    ok = gemm.per_gpu_verdict(h100_ctx, "gemm.bf16", {0: 800.0, 1: 790.0, 2: 805.0}, limit, "TFLOP/s", "slowest")
    assert ok.status == "pass" and ok.measured == 790.0
    slow = gemm.per_gpu_verdict(h100_ctx, "gemm.bf16", {0: 1000.0, 1: 1000.0, 2: 720.0}, limit, "TFLOP/s", "x")
    assert slow.status == "fail" and "GPUs [2]" in slow.why  # above the floor, below 0.9 x median


def test_a_crashing_fp8_gemm_keeps_the_bf16_figure(h100_ctx, monkeypatch):
    """An fp8 kernel that raises (out of memory, an older torch) is an error of gemm.fp8 alone."""
    def fake_measure(torch_, dev, dtype, n):
        if dtype != torch.bfloat16:
            raise RuntimeError("CUDA out of memory")
        return 800.0

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(gemm, "fp8_dtype", lambda torch_, dev: torch.float8_e4m3fn)
    monkeypatch.setattr(gemm, "measure_tflops", fake_measure)
    by = {r.name: r for r in gemm.run(h100_ctx)}
    assert by["gemm.bf16"].status == "pass" and by["gemm.bf16"].measured == 800.0
    assert by["gemm.fp8"].status == "error" and "out of memory" in by["gemm.fp8"].why


def _rocm_torch(arch: str | None, capability=(9, 4)):
    """A stand-in for torch as a ROCm build (arch given) or a CUDA build (arch None) reports the device."""
    from types import SimpleNamespace

    props = SimpleNamespace(gcnArchName=arch or "")
    cuda = SimpleNamespace(get_device_properties=lambda dev: props, get_device_capability=lambda dev: capability)
    return SimpleNamespace(version=SimpleNamespace(hip="6.4.1" if arch else None), cuda=cuda,
                           float8_e4m3fn=torch.float8_e4m3fn, float8_e4m3fnuz=torch.float8_e4m3fnuz)


@pytest.mark.parametrize(("arch", "capability", "expected"), [
    ("gfx942:sramecc+:xnack-", (9, 4), "float8_e4m3fnuz"),  # MI300X / MI325X: the FNUZ variant
    ("gfx950:sramecc+:xnack-", (9, 5), "float8_e4m3fn"),  # MI350X / MI355X: OCP e4m3
    ("gfx90a:sramecc+:xnack-", (9, 0), None),  # MI250X: no fp8 matrix units, though its "capability" reads 9.0
    (None, (9, 0), "float8_e4m3fn"),  # H100
    (None, (8, 0), None),  # A100
])
def test_the_fp8_probe_takes_the_type_each_gpu_implements(arch, capability, expected):
    got = gemm.fp8_dtype(_rocm_torch(arch, capability), 0)
    assert got is (getattr(torch, expected) if expected else None)


def test_an_fp8_dtype_is_timed_as_a_scaled_matmul_on_cpu():
    """The probe takes the fp8 type fp8_dtype chose (CPU torch runs OCP e4m3 _scaled_mm, not the FNUZ variant)."""
    cpu = torch.device("cpu")
    assert gemm.measure_tflops(torch, cpu, torch.float8_e4m3fn, 32, iters=1, warmup=1) > 0
