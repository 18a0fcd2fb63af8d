from __future__ import annotations

import pytest
from pydantic import ValidationError

from trainsizer.estimate.calibration import Calibration, load_constants, rates
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time

from .test_perf_common import a100_cluster, h100_cluster, llama8b


def test_constants_file_loads_and_is_sane():
    k = load_constants()
    assert 0.3 < k.gemm_efficiency("a100-sxm-80gb") < 0.95
    assert k.gemm_efficiency("h100-sxm") < k.gemm_efficiency("a100-sxm-80gb")
    assert k.gemm_efficiency("unknown-accelerator") == k.gemm_efficiency_max["default"]
    assert 0 < k.hbm_efficiency <= 1 and 0 < k.intra_busbw_fraction <= 1 and 0 < k.inter_busbw_fraction <= 1
    assert k.raw["reliability"]["failures_per_gpu_day"] == pytest.approx(419 / (16384 * 54), rel=0.01)


def test_rates_follow_system_and_calibration():
    r = rates(a100_cluster(), "bf16")
    assert r.gemm_peak_flops == 312e12
    assert r.inter_nic == pytest.approx(25e9 * load_constants().inter_busbw_fraction)
    c = rates(a100_cluster(), "bf16", calibration=Calibration(hbm_gb_s=1500, storage_gb_s=100))
    assert c.hbm_bytes_s == 1500e9


def test_measured_figures_change_the_estimate():
    m, tr, s = llama8b(), Training(seq_len=4096, global_batch_seqs=256), h100_cluster()
    st = Strategy(tp=2, dp=32)
    base = estimate_time(m, tr, s, st)
    slow = estimate_time(m, tr, s, st, Calibration(gemm_tflops=300.0, flash_tflops=150.0))
    assert slow.step_s > 1.5 * base.step_s


def test_calibration_rejects_bad_values():
    with pytest.raises(ValidationError):
        Calibration(gemm_tflops=-1)
    with pytest.raises(ValidationError):
        Calibration(gemm_tflop=1.0)  # typo: extra fields forbidden
