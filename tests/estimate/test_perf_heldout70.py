"""Held-out rows added 2026-12-07, forty-fourth batch (benchmarks/perf_heldout70.py; nothing fitted on them): AMD's Primus
on Instinct GPUs, its TorchTitan backend (DeepSeek-V3 16B BF16 on 8 MI325X and 8 MI355X: tokens/s a GPU and a reserved
peak; the out-of-box MI355X run listed as refused) and its Megatron-LM backend (Mixtral 8x7B / 8x22B on 4 nodes, the old
and new example configs of pull request 55: Megatron's TFLOP/s a GPU; Qwen3-30B-A3B BF16 / FP8 on 8 MI355X, the shipped and
tuned configs of pull request 1011: tokens/s a GPU). Bounds = the figures measured when the rows were
added, with a margin: they guard against a regression, not an accuracy claim (docs/known-gaps.md 276)."""

from __future__ import annotations

import re

import pytest

import perf_heldout as ph
import perf_heldout70 as p70
from harness import mape
from trainsizer.estimate import flops as F

from .heldout_rows import check_columns_and_ids, check_source_bounds, run_fixture

run = run_fixture(p70.run_all)
MI325 = "Primus TorchTitan DeepSeek-V3-16B (8 MI325X)"
MI355 = "Primus TorchTitan DeepSeek-V3-16B (8 MI355X)"
MIX7, MIX22 = "Primus Megatron Mixtral 8x7B (4 nodes)", "Primus Megatron Mixtral 8x22B (4 nodes)"
QWEN = "Primus Megatron Qwen3-30B-A3B (8 MI355X)"


def test_every_row_names_its_pull_request_commit_date_and_assumptions():
    rs = p70.rows()
    check_columns_and_ids(rs, ph.ROWS, 12, more=True)  # perf_heldout.job_of reads these columns
    for r in rs:
        assert r["source"].startswith("AMD-AGI/Primus (AMD's training framework)"), r["id"]
        assert re.search(r"https://github.com/AMD-AGI/Primus/pull/(1022|935|55|1011)\b", r["source"]), r["id"]
        assert r["source_locator"].startswith("PR ") and re.search(r"\b[0-9a-f]{8,9}\b", r["source_locator"]), r["id"]
        assert r["assumed"] and r["confidence"] in ("medium", "low"), r["id"]
    assert set(p70.models()) >= {"mixtral-8x22b", "deepseek-v2-lite"}


def test_one_row_is_refused_and_says_why():
    """The MI355X out-of-box run (forced balance silently off under torchtitan v0.2.2) is listed, not estimated."""
    refused = {r["id"]: r["refused"] for r in p70.rows() if r["refused"]}
    assert list(refused) == ["primus_titan_2026-07_mi355x_dsv3_16b_bf16_out_of_box_8gpu"]
    assert "moe_force_load_balance" in next(iter(refused.values()))


def test_the_rows_are_the_configs():
    """TorchTitan rows: FSDP2 over 8 GPUs with EP 8, no recompute, compiled model and loss, round-robin forced balance,
    local batch 8 (MI325X) / 9 (MI355X) of 4,096; Mixtral rows: the old / new files' TP x PP x EP, micro and global batch,
    sequence and recompute on 32 GPUs, round-robin forced balance; Qwen3-30B-A3B rows: EP 8 on 8, the shipped configs'
    block recompute of 5 layers and the tuned configs' none, Turbo DeepEP, bf16 gradients and moments, a learned router."""
    expected = {"primus_titan_2026-08_mi325x_dsv3_16b_bf16_lbs8_8gpu": (8, 1, 1, 8, 8, 64, 4096, "none"),
                "primus_titan_2026-07_mi355x_dsv3_16b_bf16_lbs9_8gpu": (8, 1, 1, 8, 9, 72, 4096, "none"),
                "primus_titan_2026-07_mi355x_dsv3_16b_bf16_lbs9_8gpu_mem": (8, 1, 1, 8, 9, 72, 4096, "none"),
                "primus_megatron_2025-05_mixtral_8x7b_old_tp2_pp1_ep4_32gpu": (32, 2, 1, 4, 6, 768, 4096, "none"),
                "primus_megatron_2025-05_mixtral_8x7b_new_tp1_pp1_ep8_32gpu": (32, 1, 1, 8, 2, 128, 4096, "none"),
                "primus_megatron_2025-05_mixtral_8x22b_old_tp2_pp4_ep4_32gpu": (32, 2, 4, 4, 2, 256, 4096, "none"),
                "primus_megatron_2025-05_mixtral_8x22b_new_tp1_pp4_ep4_32gpu": (32, 1, 4, 4, 2, 128, 8192, "full"),
                "primus_megatron_2026-08_mi355x_qwen3_30b_a3b_bf16_shipped_8gpu": (8, 1, 1, 8, 8, 512, 4096, "full"),
                "primus_megatron_2026-08_mi355x_qwen3_30b_a3b_bf16_tuned_8gpu": (8, 1, 1, 8, 8, 512, 4096, "none"),
                "primus_megatron_2026-08_mi355x_qwen3_30b_a3b_fp8_shipped_8gpu": (8, 1, 1, 8, 6, 48, 4096, "full"),
                "primus_megatron_2026-08_mi355x_qwen3_30b_a3b_fp8_tuned_8gpu": (8, 1, 1, 8, 8, 512, 4096, "none")}
    jobs = {r["id"]: p70.job(r) for r in p70.rows() if not r["refused"]}
    assert set(jobs) == set(expected)
    for row_id, job in jobs.items():
        s = job["strategy"]
        assert (job["hardware"]["count"], s["tp"], s["pp"], s["ep"], s["micro_batch"], job["global_batch"]["sequences"],
                job["seq_len"], s["recompute"]) == expected[row_id], row_id
        if "qwen3" in row_id:
            assert "moe_routing" not in job and job["precision"] == ("fp8" if "_fp8_" in row_id else "bf16"), row_id
            assert (s["moe_dispatcher"], s["optimizer_precision"], s["grad_reduce_in_fp32"]) == ("flex", "bf16-moments",
                                                                                                False), row_id
            assert s.get("recompute_num_layers") == (5 if "_shipped_" in row_id else None), row_id
            continue
        assert job["moe_routing"] == "round-robin" and job["precision"] == "bf16", row_id
        if row_id.startswith("primus_titan_"):
            assert (s["framework"], s["fsdp"], s["torch_compile"]) == ("torchtitan", "full", True), row_id
        else:
            assert (s["framework"], s["distributed_optimizer"], s["moe_dispatcher"]) == ("megatron-core", True,
                                                                                          "alltoall"), row_id
            assert s.get("sequence_parallel", False) == (s["tp"] > 1), row_id


def test_megatron_moe_flops_is_primus_transformer_flops():
    """Primus's transformer_flops at ef66f643 for Mixtral 8x7B (every layer MoE, top-2 of 14,336-wide experts, no shared
    expert, GQA 8 of 32 heads, vocabulary 32,000) at b 128 x s 4,096: 12 b s L h^2 ((1 + g/a + s/h) + 1.5 k f / h +
    V / (2 L h)), written out, equals megatron_moe_flops."""
    model = ph.estimate_row(next(r for r in p70.rows() if "8x7b_new" in r["id"]), p70.models(), {}, p70.predict)
    b, s, L, h, g, a, k, f, v = 128, 4096, 32, 4096, 8, 32, 2, 14336, 32000
    primus = 12 * b * s * L * h * h * ((1 + g / a + s / h) + 1.5 * k * f / h + v / (2 * L * h))
    from trainsizer.models import load_model

    arch = load_model("mixtral-8x7b")
    assert p70.megatron_moe_flops(b, s, arch) == pytest.approx(primus, rel=1e-12)
    assert F.nemo_llama_flops(b, s, L, h, g, a, k * f, v) == pytest.approx(primus, rel=1e-12)
    c, res = model
    assert c.predicted == pytest.approx(primus / res["time"]["step_s"] / 32 / 1e12, rel=1e-9)


def test_source_bounds(run):
    cases = [c for c, _, _ in run]
    check_source_bounds(cases, {
        (MI325, "tokens_per_s_per_gpu"): (1, 5.0),  # -0.9 at landing
        (MI355, "tokens_per_s_per_gpu"): (1, 14.0),  # +8.8 at landing
        (f"{MI355} memory", "peak_memory_gib"): (1, 24.0),  # +17.0 at landing
        (MIX7, "primus_megatron_tflops_per_gpu"): (2, 26.0),  # 20.2 (44.5 at landing; 284 (a))
        (MIX22, "primus_megatron_tflops_per_gpu"): (2, 25.0),  # 19.2 (42.7 at landing; 284 (a))
        (QWEN, "tokens_per_s_per_gpu"): (4, 16.0),  # 10.3 at landing (276 (d))
    })
    timed = [c for c, _, _ in p70.timed(run) if not c.skipped]
    assert len(timed) == 10 and mape(timed) < 17.0  # 13.0 (22.5 at landing; 284 (a))


def test_the_old_tp2_configs_state_primus_defaults():
    """The TP 2 rows run as Primus's configs read: no TE userbuffers TP overlap (language_model.yaml tp_comm_overlap
    false at ef66f643 / a89ad3c4) and the router in fp32 (the example configs' moe_router_dtype fp32); docs/known-gaps.md
    284 (a)."""
    for r in p70.rows():
        if "_mixtral_" in r["id"]:
            job = p70.job(r)
            assert job["strategy"]["tp_comm_overlap"] is False, r["id"]
            assert job["model"]["router_fp32"] is True, r["id"]


def test_the_old_tp2_configs_gain_as_measured_for_8x7b(run):
    """Pull request 55's old Mixtral configs (TP 2 with sequence parallel and EP 4) were predicted +67% / +79% too fast
    (276 (b)); with Primus's TP settings stated and the dispatcher's expert-TP collectives exposed and in the router's
    dtype (284 (a)) they are +18% / +32%, the new TP 1 configs +22% / -6%: 8x7B's measured gain of the new config (1.50x)
    is predicted 1.55x; 8x22B's (1.32x) 0.94x, its new config's -6% the outlier (284 (b)). A guard that fails when the
    estimate moves, either way."""
    errs = {r["id"].split("_mixtral_")[1]: c.err for c, _, r in run if "_mixtral_" in r["id"]}
    assert 0.12 < errs["8x7b_old_tp2_pp1_ep4_32gpu"] < 0.25 and 0.25 < errs["8x22b_old_tp2_pp4_ep4_32gpu"] < 0.4
    assert all(-0.15 < e < 0.35 for k, e in errs.items() if "_new_" in k)
    ratios = {k.split("_mixtral_")[1]: (m, p) for k, m, p in p70.config_ratios(run) if "mixtral" in k}
    assert 1.4 < ratios["8x7b"][1] < 1.7 and 0.85 < ratios["8x22b"][1] < 1.05


def test_the_tuned_qwen3_configs_gain_less_than_measured(run):
    """Pull request 1011's tuned Qwen3-30B-A3B configs are measured 1.19x / 1.18x the shipped ones (BF16 / FP8) and
    predicted 1.03x / 1.11x (at landing): the shipped figures are another release's published numbers, the tuned ones
    the PR's image (docs/known-gaps.md 276 (d)). Both tuned rows are predicted slow, -13..-16%."""
    ratios = {k.split("_a3b_")[1]: (m, p) for k, m, p in p70.config_ratios(run) if "qwen3" in k}
    assert set(ratios) == {"bf16", "fp8"}
    assert all(1.15 < m < 1.2 and 0.95 < p < 1.15 for m, p in ratios.values())
    tuned = [c.err for c, _, r in run if "qwen3" in r["id"] and "_tuned_" in r["id"]]
    assert len(tuned) == 2 and all(-0.22 < e < -0.08 for e in tuned)


def test_every_run_is_said_to_fit():
    assert all(f.fits for f in p70.fits())
