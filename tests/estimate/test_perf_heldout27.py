"""Held-out rows added 2026-12-02, second batch (benchmarks/perf_heldout27.py; nothing fitted on them): the
Megatron-Bridge 26.02.01, 26.04.01 and 26.06.01 pre-training tables, each row stated from the workload base config its
release loads. Bounds = the figures measured when the rows were added (13.3% over 66 rows; GPT-OSS 120B +10..+75% too
fast, the other 54 rows 6.8%, worst -20.1%) with a margin; and 25 MLPerf v5.1 runs of other submitters on NVIDIA's code
and 14 v5.0 / v4.1-code runs (6.7% over the 39; NVFP4 8 B200 -11.6..-12.9%, as perf_mlperf's Lenovo rows, until NVFP4 ran
at its measured ratio over per-tensor FP8, 2026-12-03: 5.4% over the 39): docs/known-gaps.md says what is left."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import perf_heldout27 as ph

# the release branch state each table's rows are read from (benchmarks/perf_heldout27.py)
# (25.11: the GPT-OSS lines, the 8K ones from a developer branch of r0.2.0, the others from the v0.2.0 tag)
RECIPE_AT = {"26.02.01": ("r0.3.0@904597bd3",), "26.04.01": ("r0.4.0@c5d4ab462",), "26.06.01": ("v0.5.1",),
             "25.11": ("gaod/r0.2.0_test@4a82e1651", "v0.2.0")}
RECIPE_DTYPE = {"BF16": "_BF16_", "FP8-CS": "_FP8_CS_", "FP8-MX": "_FP8_MX_", "NVFP4": "_NVFP4_"}


def test_every_row_names_its_source_recipe_and_date():
    rs = ph.rows()
    assert len({r["id"] for r in rs}) == len(rs)
    for r in rs:
        assert r["source"] and "067f987d" in r["source_locator"] and r["date"], r["id"]
        assert r["release"] in RECIPE_AT and f"_{r['release']}_" in r["id"], r["id"]
        name = r["recipe_config"]  # the config the row was read from: its system and precision are the row's
        assert f"_{r['system']}_" in name and RECIPE_DTYPE[r["precision"]] in name, r["id"]
        assert any(name.endswith(f"({at})") for at in RECIPE_AT[r["release"]]), r["id"]
        assert int(r["gpu_count"]) % (int(r["tp"]) * int(r["pp"]) * int(r["cp"])) == 0, r["id"]


def test_table_flops_per_token_agree_within_a_release_and_model():
    """The table's two figures of a line share one FLOP count per token for a model, release and sequence length (a
    transposed or mistyped cell breaks it): model TFLOP/s over tokens/s agrees within 4% across each (release, model,
    length) group (the 26.04.01 tokens/s are all multiples of 8, most of 32, so rounded: up to 1.2% on H100's 328;
    reached 3.1%; 25.11's GPT-OSS 8K lines carry 13% more attention FLOPs a token than its 4K ones)."""
    groups = defaultdict(list)
    for r in ph.rows():
        groups[(r["release"], r["model"], r["seq_len"])].append(float(r["model_tflops_per_gpu"]) / float(r["tokens_per_sec_per_gpu"]))
    for key, ratios in groups.items():
        assert max(ratios) / min(ratios) < 1.04, key


def test_every_row_runs_end_to_end_within_the_measured_bounds():
    cs = ph.cases()
    assert len(cs) == 70
    err = {rid: (p - m) / m for rid, _, m, p in cs}
    assert 100 * np.mean(np.abs(list(err.values()))) <= 15.5  # reached: 13.3%
    rest = [abs(e) for rid, e in err.items() if "gpt_oss" not in rid]
    assert len(rest) == 54 and 100 * np.mean(rest) <= 8.5  # reached: 6.8%
    # reached: -20.1% (26.04.01 GB200 Llama 3.1 405B NVFP4); +28.4% (26.02.01 H100 Qwen3-235B-A22B, TP 2) since the MoE
    # rows state their recipes' expert TP 1 (+15.3% at Megatron-Core's default etp = tp; known-gaps 45 (c))
    assert max(rest) < 0.31
    # known gap (docs/known-gaps.md 17 (a)): GPT-OSS 120B on Megatron-Core predicted too fast, +13..+75%; the 25.11
    # lines (added 2026-12-03, docs/known-gaps.md 41 (9)) reached +29.3 / +22.0 / +16.1 / +6.6% (GB300, GB200, B200, H100)
    assert all(abs(e) < 0.85 for rid, e in err.items() if "gpt_oss" in rid and "_26.06.01_" not in rid)
    # the two 26.06.01 lines run the CuTe DSL grouped MLP (stated) and carry the table's own footnote, the
    # cudnn-frontend issue 256 dGLU regression, not modelled (docs/known-gaps.md 41 (6)): reached +98.9 / +98.4%
    regressed = [e for rid, e in err.items() if "gpt_oss" in rid and "_26.06.01_" in rid]
    assert len(regressed) == 2 and all(0.5 < e < 1.1 for e in regressed)


def test_regressed_gpt_oss_lines_are_the_26_06_jobs():
    """The 26.06.01 GPT-OSS lines ran the 26.06 lines' config (GPT_OSS_120B_PRETRAIN_CONFIG_*_FP8_MX_V2 unchanged
    from v0.5.0 to v0.5.1): the same job, the same prediction; the measured ratio (0.61 / 0.63) is the release's
    regression alone."""
    import perf_mbridge26 as mb

    new = {r["system"]: r for r in ph.rows() if r["release"] == "26.06.01" and "gpt_oss" in r["id"]}
    old = {r["system"]: r for r in mb.rows() if r["release"] == "26.06" and "gpt_oss" in r["id"] and r["system"] in new}
    assert set(new) == set(old) == {"GB300", "GB200"}
    for s in new:  # perf_heldout27 builds its rows with perf_mbridge26.job
        assert mb.job(new[s]) == mb.job(old[s]), s


def test_no_measured_run_is_refused_or_predicted_not_to_fit():
    refused = {f.row_id for f in ph.fits() if not f.fits}
    assert not refused, refused


def test_mlperf_rows_name_their_logs_and_state_the_step_they_measure():
    rs = ph.mlperf_rows()
    assert len({r["id"] for r in rs}) == len(rs) == 39
    for r in rs:
        v = r["id"].removeprefix("mlperf")[:3]  # the round: its repository commit and publication date
        commit, date = {"5.1": ("441d65f4", "2025-11-12"), "5.0": ("0fdc28f", "2025-06-04")}[v]
        assert f"training_results_v{v} commit {commit}" in r["source_locator"] and "result_*.txt" in r["source_locator"], r["id"]
        assert r["source"].startswith(f"MLCommons MLPerf Training v{v}") and r["date"] == date, r["id"]
        gpus, gbs = int(r["gpu_count"]), int(r["global_batch_seqs"])
        assert f"_{gpus}gpu" in r["id"] and (r["fp8_recipe"] == "nvfp4") == ("_nvfp4_" in r["id"]), r["id"]
        # the throughput is the one step time over the run's batch and GPUs, and the batch splits over the layout
        tps = gbs * int(r["seq_len"]) / float(r["step_s"]) / gpus
        assert abs(tps - float(r["tokens_per_sec_per_gpu"])) < 0.2, r["id"]
        dp = gpus // (int(r["tp"]) * int(r["cp"]))
        assert gbs % (dp * int(r["micro_batch"])) == 0, r["id"]


def test_mlperf_rows_run_end_to_end_within_the_measured_bounds():
    cs = ph.mlperf_cases()
    err = {rid: (p - m) / m for rid, _, m, p in cs}
    # reached: 5.8%; 7.2% since the LoRA runs' CP 4 / 8 is Transformer Engine's all-to-all (cp_comm_type a2a: exposed
    # all-to-alls and reorders; LoRA 4.2 -> 7.1%, every CP row slower), University of Florida's B200 LoRA per-GPU rate
    # at 32 / 128 GPUs closer to the measured (0.947 / 0.869 -> 0.901 / 0.814 against 0.869 / 0.783)
    assert 100 * np.mean(np.abs(list(err.values()))) <= 8.5
    nvfp4 = [abs(e) for rid, e in err.items() if "_nvfp4_" in rid]
    # reached: -8.0% (Nebius's 8 B300); the 8 B200 rows -12.5..-13.7% until NVFP4 ran at its measured ratio over
    # per-tensor FP8 (2026-12-03, docs/known-gaps.md 30), now -2.6..+3.5%
    assert len(nvfp4) == 8 and max(nvfp4) < 0.11
    assert max(abs(e) for rid, e in err.items() if "_nvfp4_" not in rid) < 0.15  # reached: -13.0% (72 GB200 / GB300 LoRA)


def test_scale_series_lose_per_gpu_rate_as_measured():
    """Along each submitter's scale the per-GPU rate falls, measured and predicted (the v5.1 series: the estimate
    keeps more of it, a known gap, docs/known-gaps.md 17 (e)): predicted within 0.12 of measured (reached: 0.085, Oracle's 72
    GB200 LoRA over its 4)."""
    ratios = ph.scale_ratios(ph.mlperf_cases())
    assert len(ratios) == 14
    for name, rid, meas, pred in ratios:
        assert 0.7 < meas < 1.01 and abs(pred - meas) < 0.12, (name, rid, meas, pred)


def test_gpt_oss_host_free_diagnostic_splits_the_host_terms_from_the_gpu_side():
    """perf_mbridge26.host_free_errors (docs/known-gaps.md 88): with the host floor and Megatron-Core's per-expert host
    launches set to zero a row can only get faster, strictly where the estimate charges them (the eager rows, no
    full-iteration graph) and not at all under a full-iteration graph (the 26.06.01 MXFP8 rows). The finding it
    prints: the H100 rows' fit rests on those host terms; on the GPU side they miss as the Blackwell rows do (reached
    2026-12-05: H100 +33.1..+37.2% against +6.6..+9.6% as predicted; Blackwell eager BF16 +17.2..+56.0%)."""
    from harness import row_cases
    from perf_mbridge26 import host_free_errors
    from perf_mbridge26 import job as mbridge_job

    rs = [r for r in ph.rows() if r["model"] == "GPT OSS 120B"]
    by = {r["id"]: r for r in rs}
    out = host_free_errors(row_cases(rs, mbridge_job), by)
    assert len(out) == 16
    for rid, err, free in out:
        if by[rid]["cuda_graphs"] == "full_iteration":
            assert free == err, rid
        else:
            assert free > err, rid
    h100 = [free - err for rid, err, free in out if by[rid]["system"] == "H100"]
    assert len(h100) == 3 and all(d > 0.2 for d in h100)


def test_26_06_01_gpt_oss_lines_lose_more_than_the_dglu_kernels_measured_regression():
    """docs/known-gaps.md 124 (a): the 26.06.01 GPT-OSS lines run the 26.06 config on an image with cudnn-frontend 1.24.0
    and CUTLASS DSL 4.5.0; measured, they take 8.7 / 9.1 ms more a decoder layer and micro-batch than their 26.06 twins,
    and the dGLU-dbias kernel's own slowdown (cudnn-frontend PR 322's ratio on the estimate's time for its GEMM)
    explains 3.3 / 3.8 ms of it: about 40%, so the regression is not that ratio on that kernel alone."""
    out = {rid: (extra, charge) for rid, extra, charge in ph.dglu_regression()}
    assert set(out) == {"mbridge_26.06.01_gb300_gpt_oss_120b_fp8-mx_64gpu",
                        "mbridge_26.06.01_gb200_gpt_oss_120b_fp8-mx_64gpu"}
    for extra, charge in out.values():
        assert 8e-3 < extra < 10e-3  # reached 8.71 / 9.14 ms
        assert 0.3 * extra < charge < 0.5 * extra  # reached 0.37 / 0.42


def test_pr3561_dispatcher_pairs_hold_and_the_mxfp8_gain_is_over_credited():
    """docs/known-gaps.md 208 (b), 218 (b): Megatron-Bridge PR 3561's A/B on the 26.04.01 GB200 GPT-OSS layout. The
    estimate gives the dispatcher what the runs measured (alltoall over HybridEP 1.042 / 1.017 measured, 1.050 / 1.018
    predicted: under MXFP8 only the alltoall path pays TEGroupedMLP's padding copies, 1.048 before they were charged)
    and MXFP8 over BF16 more than they measured (1.035 / 1.060 measured, 1.100 / 1.134 predicted)."""
    rs = ph.dispatcher_pair_rows()
    assert len(rs) == 4 and all("3561" in r["source"] and r["date"] == "2026-04-28" for r in rs)
    assert {r["base_row"] for r in rs} <= {r["id"] for r in ph.rows()}
    out = {name: (meas, pred) for name, meas, pred in ph.dispatcher_pairs()}
    assert len(out) == 4
    meas, pred = out["BF16 alltoall / hybridep"]
    assert 1.0 < meas < 1.05 and abs(pred - meas) < 0.02  # reached 0.008
    meas, pred = out["MXFP8 alltoall / hybridep"]
    assert 1.0 < meas < 1.05 and abs(pred - meas) < 0.01  # reached 0.001 (0.031 without the padding copies)
    for name in ("alltoall MXFP8 / BF16", "hybridep MXFP8 / BF16"):
        meas, pred = out[name]
        assert 1.0 < meas < 1.07 and 0.03 < pred - meas < 0.15, name  # reached +0.065 / +0.074


def test_mxfp8_saving_terms_add_up_and_the_padding_is_the_alltoall_rest():
    """The predicted MXFP8 saving a layer and micro-batch is its terms' sum; the GEMMs' gain is the same under both
    dispatchers, the rest (the padding copies) is alltoall's alone, and the runs saved less than predicted under both
    (docs/known-gaps.md 218 (a))."""
    a2a, flex = ph.mxfp8_saving_terms("alltoall"), ph.mxfp8_saving_terms("flex")
    for t in (a2a, flex):
        parts = t["gemms"] + t["casts"] + t["host"] + t["rest"]
        assert abs(parts - t["predicted"]) < 1e-9
        assert t["gemms"] > 0 > t["casts"] and t["host"] < 0 and 0 < t["measured"] < t["predicted"]
    # the same gain but for the soft maximum's share: alltoall's MoE layer issues more host calls than flex's
    # (docs/known-gaps.md 297 (a)), which takes a little of it
    assert abs(a2a["gemms"] - flex["gemms"]) < 1e-3 * abs(flex["gemms"])
    assert abs(flex["rest"]) < 0.02 and -0.6 < a2a["rest"] < -0.4  # reached 0.001 / -0.487 ms


def test_mxfp8_closing_needs_a_gemm_ratio_or_cast_cost_far_from_the_measured_kernels():
    """What alone would close each pair: the MXFP8 GEMMs at 0.66-0.68 of the FP8 peak share over BF16's (shipped 0.81)
    or the casts at 1.9-2.2x their charge (docs/known-gaps.md 218 (a))."""
    for dispatcher in ("alltoall", "flex"):
        ratio, casts = ph.mxfp8_closing(dispatcher)
        assert 0.6 < ratio < 0.75 and 1.5 < casts < 2.6, dispatcher


def test_expected_max_normal_matches_known_values():
    assert ph.expected_max_normal(1) == 0.0
    assert abs(ph.expected_max_normal(2) - 1.0 / np.sqrt(np.pi)) < 1e-6
    assert abs(ph.expected_max_normal(3) - 1.5 / np.sqrt(np.pi)) < 1e-6


def test_forced_balance_load_matches_a_simulated_random_router():
    """The busiest EP rank's load under uniform random top-k routing (the forced balance's RandomSTE logits), against
    a Monte Carlo of the router: each token's top-k of standard normal logits, the ranks' received slots counted."""
    rng = np.random.default_rng(0)
    tokens, topk, experts, ep, trials = 256, 4, 32, 8, 400
    local = experts // ep
    busiest = []
    for _ in range(trials):
        logits = rng.standard_normal((ep * tokens, experts))
        chosen = np.argpartition(-logits, topk, axis=1)[:, :topk]
        per_rank = np.bincount((chosen // local).ravel(), minlength=ep)
        busiest.append(per_rank.max() / (tokens * topk))
    simulated = float(np.mean(busiest)) - 1.0
    modelled = ph.forced_balance_load(tokens, topk, experts, ep) - 1.0
    assert simulated > 0 and abs(modelled - simulated) < 0.15 * simulated


@given(tokens=st.integers(256, 65536), topk=st.sampled_from([1, 2, 4, 8]), ep_log2=st.integers(1, 5))
@settings(max_examples=40, deadline=None)
def test_forced_balance_load_falls_with_tokens_and_grows_with_ep(tokens, topk, ep_log2):
    ep, experts = 2 ** ep_log2, 128
    load = ph.forced_balance_load(tokens, topk, experts, ep)
    assert ph.forced_balance_load(tokens, topk, experts, 1) == 1.0
    assert 1.0 < load < 1.0 + 4.0 / np.sqrt(tokens * topk)
    assert ph.forced_balance_load(2 * tokens, topk, experts, ep) < load
    assert ph.forced_balance_load(tokens, topk, experts, 2 * ep) > load


def test_the_lines_forced_balance_leaves_under_two_percent_on_the_busiest_rank():
    """docs/known-gaps.md 208 (a): at the lines' tokens a rank (4,096-16,384) random top-k routing puts at most 1.6% more
    slots on the busiest EP rank than its share (H100 Qwen3 235B-A22B, TP 2, EP 32), 0.9% on GPT-OSS 120B at EP 64."""
    loads = ph.forced_balance_loads()
    assert len(loads) >= 40
    assert all(1.0 < v < 1.02 for _, _, v in loads)


def test_hybridep_link_shares_are_the_measured_kernels_falling_with_the_ranks():
    """NVIDIA's GB200 table, 32 SMs, kernels alone: 8-36 ranks, each share of NVLink 5 per direction the dispatch and
    combine rates' harmonic mean x (n - 1) / n over 900 GB/s (docs/known-gaps.md 232 (b))."""
    ranks, shares = ph.hybridep_link_shares()
    assert ranks == [8.0, 16.0, 24.0, 32.0, 36.0]
    assert all(0.6 < s < 0.75 for s in shares) and shares == sorted(shares, reverse=True)
    assert abs(shares[0] - 2.0 / (900.0 / (764.03 * 7 / 8) + 900.0 / (737.13 * 7 / 8))) < 1e-9


def _mixtral_step(dispatcher: str, ep: int):
    from trainsizer.estimate import step_time
    from trainsizer.estimate.inputs import Strategy, Training

    from .test_perf_common import b200_cluster, mixtral

    training = Training(seq_len=4096, global_batch_seqs=8, precision="bf16")
    strategy = Strategy(dp=8, ep=ep, micro_batch=1, framework="megatron-core", moe_dispatcher=dispatcher)
    return step_time._step(mixtral(), training, b200_cluster(8), strategy, None, None, None)


def test_code_copy_delta_counts_each_dispatchers_copies_against_the_generic_charge():
    """Mixtral's 8 experts at EP 4 (2 local): alltoall sorts and unsorts, two forward copies more than charged; at EP 8
    (one local) and under flex, two backward copies fewer. Each copy a read and a write of a 16-bit hidden-wide row a
    routed slot."""
    from trainsizer.estimate.calibration import load_constants

    from .test_perf_common import b200_cluster, mixtral

    k, m = load_constants(), mixtral()
    hbm = b200_cluster().hbm_gb_s * 1e9 * k.hbm_efficiency

    def copies_s(n: float) -> float:
        return 2.0 * n * 4096 * m.experts_per_token * m.hidden * 2.0 / hbm + n * k.kernel_fixed_s

    for dispatcher, ep, n in (("alltoall", 4, 2.0), ("alltoall", 8, -2.0), ("flex", 4, -2.0), ("flex", 8, -2.0)):
        got = float(np.asarray(ph._code_copy_delta(_mixtral_step(dispatcher, ep))).reshape(-1)[0])
        assert abs(got - copies_s(n)) < 1e-9 * abs(copies_s(n)), (dispatcher, ep)


def test_the_code_copy_count_moves_pr3561_against_the_measurement_and_hybridep_rates_half_restore_it():
    """docs/known-gaps.md 232: with each dispatcher's own copies alltoall over HybridEP falls below the measured 1.042 /
    1.017 (shipped 1.051 / 1.020; reached 1.024 / 0.992), HybridEP's measured kernel rates bring it part way back
    (1.032 / 1.000); the context restores the shipped estimate."""
    out = ph.dispatcher_counterfactual_pairs()
    assert [n for n, *_ in out] == ["BF16 alltoall / hybridep", "MXFP8 alltoall / hybridep"]
    for _, meas, shipped, copies, both in out:
        assert copies < meas < shipped and copies < both < meas
    assert {n: p for n, _, p in ph.dispatcher_pairs()}["BF16 alltoall / hybridep"] == out[0][2]


def test_the_rates_counterfactual_times_megatron_deepep_at_its_kernels_and_leaves_alltoall():
    """On one 8-GPU host Megatron-Core's flex is DeepEP: under the counterfactual's rates its EP time scales by the
    collectives' NVLink rate over DeepEP's measured one (comm.deepep_normal_kernels), the latency apart; the alltoall
    dispatcher's is left as charged; outside the context the shipped charge is back."""
    from trainsizer.estimate import step_time
    from trainsizer.estimate.calibration import load_constants

    def ep(dispatcher: str) -> float:
        x = _mixtral_step(dispatcher, 8)
        return float(np.asarray(step_time._ep_comm(x, np.zeros(1))).reshape(-1)[0])

    x = _mixtral_step("flex", 8)
    ratio = x.r.intra_busbw / (x.system.intra_node_gb_s * 1e9
                               * load_constants().raw["comm"]["deepep_normal_kernels"]["nvlink_fraction_of_link"])
    flex, a2a = ep("flex"), ep("alltoall")
    with ph.dispatcher_counterfactual(rates=True):
        flex_k, a2a_k = ep("flex"), ep("alltoall")
    assert ratio > 1.05 and 0.97 * ratio < flex_k / flex <= ratio and a2a_k == a2a
    assert ep("flex") == flex
