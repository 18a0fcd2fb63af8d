"""The drained queue after a host sync (estimate/host_sync.py) and the per-vendor host facts it reads."""

import numpy as np
import pytest

from trainsizer.estimate import host_sync as hs


def test_launch_bound_run_is_the_host_issue_time():
    # 10 kernels, the host 20 us each, the GPU 5 us each: the GPU waits on every launch
    t = hs.drained_run_s(10, 20e-6, 50e-6, 17e-6)
    assert t == pytest.approx(17e-6 + 10 * 20e-6 + 5e-6)


def test_gpu_bound_run_exposes_only_the_round_trip_and_first_launch():
    # the host (10 us) gets ahead of 1 ms kernels after the first launch
    n, h, gpu, r = 8, 10e-6, 8e-3, 17e-6
    assert hs.drain_excess_s(n, h, gpu, r) == pytest.approx(r + h)


def test_pipeline_against_a_step_by_step_simulation():
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(1, 40))
        h, g, r = rng.uniform(1e-6, 50e-6, 3)
        issued, done = r, 0.0
        for _ in range(n):
            issued += h
            done = max(done, issued) + g
        assert hs.drained_run_s(n, h, n * g, r) == pytest.approx(done)


def test_elementwise_and_zero_kernels():
    t = hs.drained_run_s(np.array([0, 1, 4]), 10e-6, np.array([0.0, 2e-6, 4e-3]), 5e-6)
    assert t == pytest.approx([5e-6, 5e-6 + 10e-6 + 2e-6, 5e-6 + 10e-6 + 4e-3])


def test_negative_input_is_refused():
    with pytest.raises(ValueError, match="non-negative"):
        hs.drained_run_s(-1, 1e-6, 1e-3, 0.0)


def test_vendor_facts_are_the_published_figures():
    # pytorch PR 196920 (MI308X rocBLAS torch.mm 64^3, 11.145 us), PR 194311 (cuBLAS, 14.807 us),
    # FBGEMM PR 6219 (MI325X bare metal launch + synchronize, 16.9 us)
    assert hs.host_figure("launch_bound_op_s", "amd") == pytest.approx(11.1e-6, rel=0.01)
    assert hs.host_figure("launch_bound_op_s", "nvidia") == pytest.approx(14.8e-6, rel=0.01)
    assert hs.host_figure("round_trip_s", "amd") == pytest.approx(16.9e-6, rel=0.01)
    assert hs.host_figure("round_trip_s", "nvidia") is None  # none read
    # ROCm/hipBLASLt PR 1754's api-overhead client: heuristic 114.7 us a call, hipblasLtMatmul 9.1 us
    assert hs.host_figure("blas_heuristic_s", "amd") == pytest.approx(114.7e-6, rel=0.01)
    assert hs.host_figure("blas_matmul_s", "amd") == pytest.approx(9.1e-6, rel=0.01)
    # ROCm/rocm-libraries PR 3103's client on a cached shape: hipblaslt_ext::algoGetHeuristic 7.79 us
    assert hs.host_figure("blas_heuristic_cached_s", "amd") == pytest.approx(7.79e-6, rel=0.01)
    # Primus-Turbo PR 284: gmm at 16 x 2,048 x 7,168 x 2,048 (BF16, MI355X) forward at 1,219 TFLOPS, per expert GEMM
    assert hs.host_figure("gmm_gemm_period_s", "amd") == pytest.approx(2 * 2048 * 7168 * 2048 / 1219e12, rel=0.01)
    assert hs.host_figure("gmm_gemm_period_s", "nvidia") is None  # none read
    with pytest.raises(KeyError, match="tables"):
        hs.host_figure("launch_s", "amd")


def _floor_script():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import host_floor_rocm

    return host_floor_rocm


def test_floor_script_slot_times_are_the_published_rates():
    # DeepSeek-V2-Lite mbs 1 on 8 MI355X: 4,096 tokens a GPU per micro-batch at 10,734.6 tokens/s a GPU; DeepSeek-V2 on
    # 32 (PP 4, DP 8, micro-batch 1, global batch 256): 32 micro-batches + 3 -> 35 slots of 15 layers
    hf = _floor_script()
    rows = {r["id"]: r for r in hf.p30.rows()}
    t, layers = hf.slot_time_s(rows[hf.FLOOR_ROWS[0]], 10734.6, 27)
    assert (t, layers) == (pytest.approx(4096 / 10734.6), 27)
    t, layers = hf.slot_time_s(rows[hf.FLOOR_ROWS[1]], 1987.6, 60)
    assert (t, layers) == (pytest.approx(256 * 4096 / (1987.6 * 32) / 35), 15)


def test_syncs_round_trips_are_small_against_the_floor():
    # the forward syncs' round trips (26 MoE layers, GPU-bound expert GEMMs at micro-batch 1) add the round trip and
    # one launch each: well under 1 ms a micro-batch against the measured 0.382 s
    hf = _floor_script()
    rows = {r["id"]: r for r in hf.p30.rows()}
    lite = hf.model_shapes()["deepseek-v2-lite"]
    added = hf.sync_round_trips_s(rows[hf.FLOOR_ROWS[0]], lite)
    per_sync = hs.host_figure("round_trip_s", "amd") + hs.host_figure("launch_bound_op_s", "amd")
    assert added == pytest.approx(26 * per_sync, rel=1e-6)


def test_series_split_separates_a_floor_from_the_line_past_it():
    # a host floor of 14 ms under a GPU line 2 + 5 x micro-batch: the line comes from micro-batch 4 / 8 / 12 alone
    hf = _floor_script()
    times = {m: max(14e-3, 2e-3 + 5e-3 * m) for m in (1, 2, 4, 8, 12)}
    a, b, floor = hf.series_split(times)
    assert (a, b, floor) == (pytest.approx(2e-3), pytest.approx(5e-3), pytest.approx(14e-3))


def test_series_split_of_the_published_lite_series():
    # measured per layer: 14.1 / 14.4 / 21.6 / 40.0 / 59.8 ms at micro-batch 1 / 2 / 4 / 8 / 12 (the rows' rates over
    # 96 / mbs micro-batches and 27 layers); the line past the floor is ~2.3 ms + 4.8 ms a sequence, under the floor
    # at micro-batch 1 and 2
    hf = _floor_script()
    per_layer = hf.rows_table()
    times = {m: per_layer[f"primus_2025-12_mi355x_dsv2lite_mbs{m}_baseline_8gpu"][0] for m in (1, 2, 4, 8, 12)}
    a, b, floor = hf.series_split(times)
    assert floor == pytest.approx(4096 / 10734.6 / 27, rel=1e-3)
    assert b == pytest.approx(4.77e-3, rel=0.02) and a == pytest.approx(2.29e-3, rel=0.05)
    assert a + 2 * b < times[2] < 1.05 * floor


def test_blas_call_shares_bracket_the_lead():
    # rocBLAS's hipBLASLt path on gfx950 (docs/known-gaps.md 207): the heuristic plus the call at the 2025-03 figure
    # (114.7 + 9.1 us) is half the lead's 240 us a GEMM; on a cached shape (7.79 + 9.1 us) under a tenth; PR 284's gmm
    # loop bounds the whole call at its 49.3 us period
    hf = _floor_script()
    shares = list(hf.blas_call_shares(240e-6).values())
    assert [s for _, s in shares] == pytest.approx([123.8 / 240, 16.9 / 240, 49.3 / 240], rel=0.01)
    assert shares[1][0] < shares[2][0] < shares[0][0]


def test_legacy_gmm_calls_count_six_an_expert_and_the_recomputed_forward():
    # fc1 / fc2 forward, dgrad, wgrad per local expert; a fully recomputed layer issues the forward's two again
    hf = _floor_script()
    assert hf.legacy_gmm_calls(8, 1.0, 0.0) == pytest.approx(48)
    assert hf.legacy_gmm_calls(16, 1.0, 0.5) == pytest.approx(16 * 7)
    assert hf.legacy_gmm_calls(8, 26 / 27, 0.0) == pytest.approx(48 * 26 / 27)


def test_per_call_is_what_the_layer_leaves_over_the_dense_floor():
    # a layer of 48 calls at 100 us each over the dense floor (3 passes of host_s_per_layer_pass) and 0.3 ms of
    # other host calls: 100 us a call back
    from trainsizer.estimate.calibration import load_constants

    hf = _floor_script()
    dense = 3 * load_constants().host_s_per_layer_pass
    assert hf.per_call_s(dense + 0.3e-3 + 48 * 100e-6, 8, 1.0, 0.0, 0.3e-3) == pytest.approx(100e-6)


def test_recomputed_share_reads_the_rows_recompute():
    # PR 1011's shipped configs recompute the first 5 of 48 layers in full; the tuned ones none
    hf = _floor_script()
    rows = {r["id"]: r for r in hf.p70.rows()}
    shipped, tuned = (rows[f"primus_megatron_2026-08_mi355x_qwen3_30b_a3b_fp8_{c}_8gpu"] for c in ("shipped", "tuned"))
    assert hf.recomputed_share(shipped, 48) == pytest.approx(5 / 48)
    assert hf.recomputed_share(tuned, 48) == 0.0


def test_a_later_release_bounds_the_call_below_what_the_floor_needs():
    # docs/known-gaps.md 308 (c): PR 1011's FP8 shipped Qwen3-30B-A3B row (one micro-batch of 6 x 4,096 tokens a GPU
    # at 25,489 tokens/s: 20.1 ms a layer, 16 local experts, 5 of 48 layers recomputed) leaves at most ~174 us a gmm
    # call, under the ~240 us the v25.10 floor rows need read as host-bound; even with no dense host floor at all the
    # bound stays under 205 us
    hf = _floor_script()
    got = {rid: (per_call, kind) for rid, per_call, kind in hf.release_table(hf.rows_table())}
    needs = [c for c, kind in got.values() if kind == "needs"]
    fp8_shipped = got["primus_megatron_2026-08_mi355x_qwen3_30b_a3b_fp8_shipped_8gpu"]
    assert fp8_shipped[1] == "at most" and fp8_shipped[0] == pytest.approx(174e-6, rel=0.03)
    assert min(needs) == pytest.approx(240e-6, rel=0.03) and fp8_shipped[0] < 0.8 * min(needs)
    layer = 48 * 4096 / 8 / 25489 / 48
    assert layer / hf.legacy_gmm_calls(16, 1.0, 5 / 48) < 205e-6
    assert {hf.release_of(rid) for rid in got} == set(hf.RELEASES.values())
