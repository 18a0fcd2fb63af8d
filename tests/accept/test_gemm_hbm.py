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
        if dtype == "fp8":
            raise RuntimeError("CUDA out of memory")
        return 800.0

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(gemm, "fp8_supported", lambda torch_, dev: True)
    monkeypatch.setattr(gemm, "measure_tflops", fake_measure)
    by = {r.name: r for r in gemm.run(h100_ctx)}
    assert by["gemm.bf16"].status == "pass" and by["gemm.bf16"].measured == 800.0
    assert by["gemm.fp8"].status == "error" and "out of memory" in by["gemm.fp8"].why
