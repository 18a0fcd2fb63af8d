"""Held-out rows added 2026-12-02 (benchmarks/perf_heldout26.py; nothing fitted on them): the Megatron-Bridge 26.02
pre-training table, each row stated from the v0.3.0 workload base config it ran with, and NeMo AutoModel's LoRA table
(H100, FSDP2). Bounds = the figures measured when the rows were added (15.5% over 33 rows; GPT-OSS 120B +19..+91% too
fast, the other 28 rows 8.6%; AutoModel LoRA 16.9% over 6, all too slow, Nemotron 3 Nano -16.1%; MLPerf MangoBoost on AMD
11.1% over 7, the 4-node row +40.6%; MLPerf IBM+CoreWeave 405B on GB200
6.0% over 5, +4.6..+7.5%; Oracle H200 LoRA -7.5% on 8 GPUs, +81.3% on 512;
Dell H200 SXM / NVL 2.7% over 4;
Cisco H200 5.0% over 2; SCITIX H100 +17.6%) with a margin: docs/known-gaps.md 17 says what is left."""

from __future__ import annotations

import numpy as np

import perf_heldout26 as ph


def test_every_row_names_its_source_recipe_and_date():
    for r in ph.rows():
        assert r["source"] and r["source_locator"] and r["date"], r["id"]
        assert r["recipe_config"].endswith("(v0.3.0)"), r["id"]
        assert float(r["tokens_per_sec_per_gpu"]) > 0, r["id"]
    for r in ph.automodel_rows():
        assert r["source"] and "config" in r["source_locator"] and r["date"] and r["assumed"], r["id"]
        assert r["method"] in ("lora", "pretrain") and float(r["value"]) > 0, r["id"]


def test_every_row_runs_end_to_end_within_the_measured_bounds():
    cs = ph.cases()
    assert len(cs) == 33
    err = {rid: (p - m) / m for rid, _, m, p in cs}
    assert 100 * np.mean(np.abs(list(err.values()))) <= 18.0  # reached: 15.5%
    rest = [abs(e) for rid, e in err.items() if "gpt_oss" not in rid]
    assert 100 * np.mean(rest) <= 10.0  # reached: 8.6%


def test_mlperf_rows_name_their_logs_and_config():
    for r in ph.mlperf_rows():
        assert "result_" in r["source_locator"] and "config_" in r["source_locator"], r["id"]
        gpus = int(r["gpu_count"])
        assert abs(float(r["samples_per_s"]) * int(r["seq_len"]) / gpus - float(r["tokens_per_sec_per_gpu"])) < 0.1
        assert (gpus > 8) == bool(r["network"]), r["id"]  # a network where the run spans nodes


def test_mlperf_rows_run_end_to_end_within_the_measured_bounds():
    cs = ph.mlperf_cases()
    assert len(cs) == 7
    err = {rid: abs(p - m) / m for rid, _, m, p in cs}
    assert 100 * np.mean(list(err.values())) <= 13.0  # reached: 11.1%
    assert max(e for rid, e in err.items() if "32gpu" not in rid) < 0.14  # reached: 11.8%


def test_mlperf_nvidia_rows_run_end_to_end_within_the_measured_bounds():
    cs = ph.mlperf_nvidia_cases()
    assert len(cs) == 14
    err = {rid: (p - m) / m for rid, _, m, p in cs}
    ibm = [abs(e) for rid, e in err.items() if "_ibm_" in rid]
    assert len(ibm) == 5 and 100 * np.mean(ibm) <= 8.5 and max(ibm) < 0.10  # reached: 6.7%, +8.3% at 2,496 GPUs
    dell = [abs(e) for rid, e in err.items() if "_dell_" in rid]
    # reached: 3.2% (H200 NVL, 4 GPUs); loosened 0.06 -> 0.075 on 2026-12-03 (perstep): the H200 NVL runs' CP 2 ring
    # pays its calls' query-block work (step_time._cp_ring_calls, Hopper's c of 2.7 / 3.3 tiles), -5.6 -> -6.9%
    assert len(dell) == 4 and max(dell) < 0.075
    cisco = [abs(e) for rid, e in err.items() if "_cisco_" in rid]
    assert len(cisco) == 2 and max(cisco) < 0.09  # reached: +6.3% (2 H200 nodes, TP 2)
    assert abs(err["mlperf5.0_oracle_h200_llama2_70b_lora_fp8_8gpu"]) < 0.10  # reached: -7.5%
    # known gap (docs/known-gaps.md 17 (f)): 64 H200 nodes, one micro-batch a GPU per 0.79 s step, predicted +81%
    assert err["mlperf5.0_oracle_h200_llama2_70b_lora_fp8_512gpu"] < 0.95
    # the same layout on 8 H100 nodes with per-layer CUDA graphs (SCITIX): reached +17.6%
    assert abs(err["mlperf5.0_scitix_h100_llama2_70b_lora_fp8_64gpu"]) < 0.21
    for r in ph.mlperf_nvidia_rows():  # the throughput is the one step time over the run's batch and GPUs
        tps = int(r["global_batch_seqs"]) * int(r["seq_len"]) / float(r["step_s"]) / int(r["gpu_count"])
        assert abs(tps - float(r["tokens_per_sec_per_gpu"])) < 0.2, r["id"]


def test_automodel_rows_run_end_to_end_within_the_measured_bounds():
    cs = ph.automodel_cases()
    assert len(cs) == 7
    err = {rid: abs(p - m) / m for rid, _, m, p in cs}
    assert 100 * np.mean([e for rid, e in err.items() if "_lora_" in rid]) <= 12.5  # reached: 11.1%
    # reached: -19.0%, eager as it ran (no compile section: AutoModel compiles only when asked; -14.8% timed compiled)
    assert err["automodel_nemotron3_nano_30b_a3b_bf16_8gpu"] < 0.20


# every measured run fits (the 1-GPU AutoModel LoRA rows since they state Liger's fused RMSNorm / SwiGLU)
KNOWN_NOT_FITTING: set[str] = set()


def test_no_measured_run_is_refused_or_predicted_not_to_fit():
    refused = {f.row_id for f in ph.fits() if not f.fits}
    assert refused <= KNOWN_NOT_FITTING, refused - KNOWN_NOT_FITTING


def test_the_dispatcher_pair_is_one_layout_under_two_dispatchers():
    """perf_heldout26.DISPATCHER_PAIR (docs/known-gaps.md 89) compares the 25.11 development row, run at its recipe's
    layout, with the 26.02 row: the two jobs must agree on every parallel degree, the micro-batch and the a2a overlap,
    and differ in the dispatcher (25.11: the style's auto = alltoall inside one 8-GPU node; 26.02: flex)."""
    import csv

    old_id, new_id = ph.DISPATCHER_PAIR
    old = next(r for r in csv.DictReader(ph.BLACKWELL_ROWS.open(encoding="utf-8")) if r["id"] == old_id)
    new = next(r for r in ph.rows() if r["id"] == new_id)
    a, b = ph.blackwell_job(old)["strategy"], ph.mbridge_job(new)["strategy"]
    for key in ("tp", "pp", "vpp", "cp", "ep", "micro_batch"):
        assert a[key] == b[key], key
    assert a["moe_a2a_overlap"] is True and b["moe_a2a_overlap"] is True
    assert a.get("moe_dispatcher", "auto") == "auto" and b["moe_dispatcher"] == "flex"
