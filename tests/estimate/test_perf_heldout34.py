"""Held-out rows added 2026-12-05, ninth batch (benchmarks/perf_heldout34.py; nothing fitted on them): NVIDIA's
dgxc-benchmarking v25.05.05 tables of Llama 4 Maverick (128-512 GB200, 512 H100), Grok-1 314B (128-512 GB200, 512 H100)
and Nemotron-H 56B (32-2,048 H100) on NeMo 25.04, and MLPerf Training v6.0 Krai Llama 2 70B LoRA on 8-32 GH200 over
Slingshot 11 (a network written inline). Bounds = the figures measured when the rows were added, with a margin: they
guard against a regression, not an accuracy claim (docs/known-gaps.md 92)."""

from __future__ import annotations

import numpy as np

import perf_heldout as ph
import perf_heldout34 as p34

from .heldout_rows import check_rows_sourced, check_run

# source -> time MAPE bound (%); reached at landing in the comment
BOUNDS = {
    "dgxc-benchmarking v25.05 Llama 4 Maverick, NeMo 25.04 (GB200)": 20.0,  # 17.6: +12.7..+23.5%
    "dgxc-benchmarking v25.05 Llama 4 Maverick, NeMo 25.04 (H100)": 17.0,  # 14.5: +6.4 / +22.5%
    "dgxc-benchmarking v25.05 Grok-1 314B, NeMo 25.04 (GB200)": 6.0,  # 3.6: -1.3..+7.5%
    "dgxc-benchmarking v25.05 Grok-1 314B, NeMo 25.04 (H100)": 13.0,  # 10.2: -11.0 / +9.4%
    "dgxc-benchmarking v25.05 Nemotron-H 56B, NeMo 25.04 (H100 FP8)": 8.0,  # 6.0
}


def test_dgxc_rows_state_the_release_layout_and_the_rate_from_the_step():
    rs = p34.dgxc_rows()
    check_rows_sourced(rs, list(ph.rows()[0]), ph.MODELS, 23, ("tokens_per_s_per_gpu",))
    for r in rs:
        assert "commit c5c765f (release v25.05.05, 2025-10-22)" in r["source_locator"], r["id"]
        assert r["framework"] == "megatron-core" and r["seq_len"] == "8192", r["id"]
        # tokens/s a GPU = 8,192 x global batch / the table's step time / GPUs
        step = float(r["source_locator"].split("(step ")[1].split(" s")[0])
        rate = 8192 * int(r["global_batch_seqs"]) / step / int(r["gpu_count"])
        assert abs(rate / float(r["value"]) - 1) < 1e-3, r["id"]
        extra = ph._extra(r["strategy_extra"])
        assert extra["grad_reduce_in_fp32"] is False and extra["loss_impl"] == "te", r["id"]
        assert (r["fp8_recipe"] == "delayed") == (r["precision"] == "fp8"), r["id"]
        # NeMo's token drop pads every expert to capacity: the alltoall dispatcher waits for no host copy (87 (a))
        assert extra.get("moe_pad_to_capacity") is ("_nemotronh_" not in r["id"] or None), r["id"]
    # weak scaling: 8 (Llama 4), 2 (Grok-1), 3 (Nemotron-H) sequences a GPU, except Llama 4's H100 run (GBS 1,024)
    per_gpu = {"llama4": 8, "grok1": 2, "nemotronh": 3}
    for r in rs:
        if "_h100_llama4_" not in r["id"]:
            n = next(v for k, v in per_gpu.items() if f"_{k}_" in r["id"])
            assert int(r["global_batch_seqs"]) == n * int(r["gpu_count"]), r["id"]


def test_dgxc_rows_are_estimated_and_each_source_within_its_bound():
    run = p34.dgxc_run()
    check_run(run, BOUNDS)
    err = {c.row_id: c.predicted / c.measured - 1 for c, _, _ in run}
    assert 100 * np.mean(np.abs(list(err.values()))) <= 11.0  # reached: 9.5%
    # every Llama 4 Maverick row predicted too fast (+3.0..+23.5%: known-gaps 92 (a); the H100 rows' expert-TP pair
    # exposed since 284 (a)); FP8 more than BF16 at one layout
    assert all(0.02 < e < 0.27 for rid, e in err.items() if "_llama4_" in rid)
    for n in (128, 256, 512):
        assert err[f"dgxc25.05_gb200_llama4_maverick_fp8_{n}gpu"] > err[f"dgxc25.05_gb200_llama4_maverick_bf16_{n}gpu"]
    # Grok-1 on H100: the FP8 / BF16 gain overestimated (measured 1.19, predicted 1.46: known-gaps 92 (b))
    pairs = {rid: (m, p) for rid, _, m, p in ph.precision_pairs([(c, "", r) for c, _, r in run])}
    m, p = pairs["dgxc25.05_h100_grok1_314b_fp8_512gpu"]
    assert 1.1 < m < 1.3 and 1.35 < p < 1.6


def test_krai_rows_state_an_inline_network_and_are_estimated():
    rs = p34.krai_rows()
    assert len({r["id"] for r in rs}) == len(rs) == 4
    for r in rs:
        assert ph._extra(r["network"]) == {"nics_per_node": 4, "gbps_per_nic": 200, "kind": "ethernet"}, r["id"]
        assert "Richardyu114/training_results_v6.0 commit eabf23a0" in r["source_locator"], r["id"]
    done = [r for r in rs if not r["refused"]]
    for r in done:  # global batch 8 x 8,192 / step / GPUs
        assert abs(8 * 8192 / float(r["step_s"]) / int(r["gpu_count"]) / float(r["tokens_per_sec_per_gpu"]) - 1) < 1e-3
    assert [rid for rid, _ in p34.krai_refused()] == ["mlperf6.0_krai_gh200_llama2_70b_lora_64gpu"]
    assert all(f.fits for f in p34.fits())
    err = {rid: p / m - 1 for rid, _, m, p in p34.krai_cases()}
    assert len(err) == 3 and 100 * np.mean(np.abs(list(err.values()))) <= 23.0  # reached: 20.0%
    # reached +17.3 / +19.5 / +23.2%: the one-node row's +17% (the 660 W module cap) and a 5% loss across nodes
    assert all(0.14 < e < 0.27 for e in err.values())



def test_krai_step_line_shows_a_cost_paid_once_a_step():
    """Krai's one layout at 4 / 2 / 1 micro-batches a step: step = a m + b through the three runs, measured b 79 ms
    (the once-a-step cost of NVIDIA's LoRA code the v4.1 rows show too, 64-81 ms), the estimate's 2 ms (known-gaps 105)."""
    import perf_mlperf as pm

    rows = [r for r in p34.krai_rows() if not r["refused"]]
    assert sorted(pm.micro_batches(r) for r in rows) == [1, 2, 4]
    ((name, n, (am, bm), (ap, bp)),) = pm.step_lines(rows, {rid: (m, p) for rid, _, m, p in p34.krai_cases()})
    assert name == "mlperf6.0_krai_gh200_llama2_70b_lora" and n == 3
    assert 1.05 < am < 1.15 and 0.06 < bm < 0.10  # reached 1.107 s / 0.079 s
    assert bp < 0.01 and ap < am  # the estimate's b: the adapters' DP gradient only (2 ms)

def test_scale_series_compare_each_run_with_its_smallest():
    cs = [("x_8gpu", "", 100.0, 200.0), ("x_32gpu", "", 90.0, 200.0), ("y_4gpu", "", 10.0, 10.0)]
    assert p34.scale_series(cs) == [("x_32gpu", 0.9, 1.0)]


def test_v50_partner_rows_repeat_the_makers_config_and_get_its_figure():
    """Source (3): each MLPerf v5.0 partner run's columns are the maker's row's (the configs are identical), so the
    estimate gives it the maker's row's figure; the measured ratio is the vendor spread."""
    amd, nvidia = p34.v50_amd_rows(), p34.v50_nvidia_rows()
    assert len(amd) == 5 and len(nvidia) == 5
    for r in amd + nvidia:
        assert "training_results_v5.0 commit 0fdc28f" in r["source_locator"] and r["date"] == "2025-06-04", r["id"]
        assert r["gpu_count"] == "8" and r["global_batch_seqs"] == "8", r["id"]
    for r in amd:  # samples/s x 8,192 / 8 GPUs
        assert abs(float(r["samples_per_s"]) * 1024 / float(r["tokens_per_sec_per_gpu"]) - 1) < 1e-3, r["id"]
    ratios = p34.v50_against_own()
    assert len(ratios) == 10 and all(abs(p - 1) < 1e-9 for _, _, p in ratios)
    # reached 0.984 (Oracle MI300X, QCT MI325X) .. 1.040 (Supermicro's liquid-cooled MI325X)
    assert all(0.95 < m < 1.06 for _, m, _ in ratios)
    err = [abs(p - m) / m for _, _, m, p in p34.v50_cases()]
    assert 100 * np.mean(err) <= 4.0  # reached: 2.3%
