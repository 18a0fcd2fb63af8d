"""The GEMM-shape experiment's kernel mechanisms (benchmarks/gemm_shape.py) behave as their mechanics say.

Only the variant functions are called here; the benchmark's `use()`, which swaps them into the estimator, is not
(it would leak into other tests)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import gemm_shape as gs  # noqa: E402
from trainsizer.estimate import compute, step_time  # noqa: E402
from trainsizer.estimate.calibration import load_constants  # noqa: E402

from .test_perf_common import a100_cluster, h100_cluster  # noqa: E402


def _r(system=None):
    return gs._rates_with_sms(system or h100_cluster(), "bf16", load_constants())


def test_importing_the_experiment_leaves_the_estimator_as_shipped():
    assert compute.gemm_time is gs.SHIPPED_GEMM
    assert step_time.rates is gs.SHIPPED_RATES


def test_sm_counts_by_part():
    assert _r().sm_count == 132
    assert _r(a100_cluster()).sm_count == 108
    assert gs._sm_count("rtx-4090") == 0  # not listed: no wave quantisation


def test_whole_waves_of_whole_tiles_match_the_soft_roofline():
    r = _r()
    m, n, k = 132 * 128, 256, 4096  # one full wave of 128 x 256 tiles on 132 SMs
    assert float(gs.gemm_waves(m, n, k, r)) == pytest.approx(float(gs.SHIPPED_GEMM(m, n, k, r)))


def test_a_partial_wave_costs_a_whole_one():
    r = _r()
    k = 16384  # a long k loop: the math, not the loads, sets the time
    full = float(gs.gemm_waves(11 * 128, 12 * 256, k, r)) - r.kernel_fixed_s  # 132 tiles: one wave
    one_more_row = float(gs.gemm_waves(11 * 128 + 1, 12 * 256, k, r)) - r.kernel_fixed_s  # 144 tiles: two
    assert one_more_row > 1.9 * full


def test_tile_overhead_weighs_most_on_a_short_k_loop():
    r = _r()
    short = float(gs.gemm_tile_overhead(16384, 1536, 768, r)) / float(gs.SHIPPED_GEMM(16384, 1536, 768, r))
    long = float(gs.gemm_tile_overhead(16384, 1536, 8192, r)) / float(gs.SHIPPED_GEMM(16384, 1536, 8192, r))
    assert short > long > 1.0


def test_serial_store_is_never_faster_and_adds_at_most_the_c_write():
    r = _r()
    for m, n, k in ((8192, 4096, 4096), (49152, 1536, 1536), (2048, 512, 4096)):
        ship, serial = float(gs.SHIPPED_GEMM(m, n, k, r)), float(gs.gemm_store_serial(m, n, k, r))
        assert ship <= serial <= ship + r.act_bytes * m * n / r.hbm_bytes_s


def test_a_narrow_layers_wgrad_fills_few_waves(monkeypatch):
    # 760M-wide layer on H100: forward 49,152 x 1,536 (384 x 6 tiles), its wgrad 1,536 x 1,536 (12 x 6 = 72 tiles
    # on 132 SMs, over a 49,152-long k loop)
    monkeypatch.setattr(compute, "gemm_time", gs.gemm_waves)
    fwd, bwd = compute.linear_gemms(49152, 1536, 1536, _r())
    assert float(bwd) > 2.5 * float(fwd)
