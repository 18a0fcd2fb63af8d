"""Blackwell / MoE rows (benchmarks/perf_blackwell.py: Megatron-Bridge 25.11 tables; the three DGX-B200 MoE rows
set the alltoall dispatcher's per-expert host cost, the GB200 DeepSeek-V3 FP8-MX row shares the layout the flex
one is derived from, the rest are held out; the H100 Qwen3-30B-A3B row runs the 25.11 release recipe's layout, RECIPE_LAYOUT).
Bounds = today's figures with a margin; the known weak spots: Llama 3 8B at 8K slower than measured (GB300, H100, B200),
GB300 slower than measured."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import perf_blackwell as pb  # noqa: E402


def test_blackwell_and_moe_rows_end_to_end():
    cs = pb.cases()
    assert len(cs) == 27  # every row in the file runs through the job path (NVL72 trays, MXFP8, EP)
    err = {rid: abs(p - m) / m for rid, _, m, p in cs}
    dense = [e for rid, e in err.items() if "llama" in rid]
    moe = [e for rid, e in err.items() if "llama" not in rid]
    # reached: 9.5% with GB200's MAMF-derived GEMM share (gemm.efficiency_max gb200 0.564; 8.2% with 0.62, whose rated-
    # peak advantage over B200 hid the 25.11 kernels' gap the B200 / H100 Llama 3 8B rows show, -12..-14%)
    assert 100 * np.mean(dense) <= 10.5
    assert 100 * np.mean(moe) <= 8.0  # reached: 4.9% (5.6% with gb200 0.62; 8.5% with the H100 Qwen3 row's table layout, 22.8% before the host sync)
    held = [e for rid, e in err.items() if "llama" not in rid and rid not in pb.FITTED]
    assert 100 * np.mean(held) <= 9.0  # reached: 5.4% (6.3% with gb200 0.62; 10.1% with the table layout, 18.1% with the host sync on alltoall only)
    clean = [e for rid, e in err.items() if "llama" not in rid and rid not in pb.FITTED + pb.DERIVED]
    assert 100 * np.mean(clean) <= 9.5  # reached: 5.0% (6.6% with gb200 0.62; 10.8% with the table layout)
    assert 100 * np.mean(list(err.values())) <= 8.5  # reached: 7.5% (7.1% with gb200 0.62; 8.3% with the table layout)


def test_model_flops_agree_with_nvidias_table():
    """Every weight GEMM (routed and shared experts, DeepSeek's dense first layers, MLA) and the LM head counted as
    NVIDIA counts them: within 0.5% per token once attention is counted causal (the router, which NVIDIA leaves
    out, is 0.2-0.3% of an MoE model)."""
    checks = pb.flop_check()
    assert len(checks) == 6
    for name, _, nvidia, ours in checks:
        assert abs(ours / nvidia - 1) < 0.005, name


def test_most_measured_runs_are_predicted_to_fit():
    """Every run fits with what the recipes set: bf16 gradient buffers, FP8 primary weights, TE cross-entropy,
    embedding / loss pipeline slots (Llama 3.1 405B, Qwen3-235B-A22B), Megatron-Core's MoE layers (no expert
    output kept per routed token), the Llama 3 70B Megatron-FSDP recipes' activation offloading of 40 / 20 layers
    and the DeepSeek-V3 recipes' recompute_modules."""
    refused = {f.row_id for f in pb.fits() if not f.fits}
    assert not refused, refused


def test_gb300_gb200_pairs_are_the_same_layout_and_gb300_is_not_slower():
    """The GB300 / GB200 ratio is printed only for rows the page lists at the same layout (Llama 3 8B CS / MX, 70B,
    Qwen3-30B-A3B; the 405B, DeepSeek-V3 and Qwen3-235B rows differ in PP / EP / batch). Their rated BF16 / FP8
    peaks are equal; the model's ratio comes from the SFU softmax throughput and the GEMM shares (GB300's 0.673 from
    its cuBLAS rate at 1,400 W, GB200's 0.564 from its MAMF): above 1 and within 0.2 of what was measured (1.05-1.22;
    docs/known-gaps.md 33)."""
    pairs = pb.generation_pairs(pb.cases())
    assert sorted(name for name, _, _ in pairs) == ["llama3_70b_fp8-cs_64gpu", "llama3_8b_fp8-cs_8gpu",
                                                    "llama3_8b_fp8-mx_8gpu", "qwen3_30b_a3b_fp8-mx_8gpu"]
    for name, measured, predicted in pairs:
        assert 1.0 < predicted and abs(predicted - measured) < 0.2, name  # today 0.06-0.17 (0.04-0.18 with gb300 0.62)


def test_the_recipe_layout_row_is_printed_with_the_tables_layout_too():
    """RECIPE_LAYOUT rows run the release recipe's layout; the table's is computed beside them, and differs."""
    table = {rid: p for rid, _, _, p in pb.cases(table_layout=True)}
    assert set(table) == set(pb.RECIPE_LAYOUT)
    recipe = {rid: p for rid, _, _, p in pb.cases() if rid in pb.RECIPE_LAYOUT}
    for rid in table:
        assert table[rid] != recipe[rid]


def test_gb200_b200_pairs_are_the_same_layout():
    """GB200 / B200 at the same layout and stack: the Llama 3 8B FP8-CS / FP8-MX rows (the other models differ in
    layout or batch). Measured 1.03 / 1.01; the model gives 1.06: the rated peaks (2.5 vs 2.25 PF BF16) x
    gemm.efficiency_max (0.564 vs 0.60, GB200's derived from the measured MAMF, +4.4% BF16) and the SFU-free rest
    (1.12 with 0.62). The bound is today's gap with a margin."""
    pairs = pb.generation_pairs(pb.cases(), "gb200", "b200")
    assert sorted(name for name, _, _ in pairs) == ["llama3_8b_fp8-cs_8gpu", "llama3_8b_fp8-mx_8gpu"]
    for name, measured, predicted in pairs:
        assert abs(predicted - measured) <= 0.08, name  # today 0.03 / 0.05 (0.09 / 0.11 with gb200 0.62)


def test_b200_h100_pairs_at_one_release():
    """B200 / H100 per-GPU throughput where the Megatron-Bridge 25.11 page lists a model and FP8 recipe on both, each
    at its own layout (Llama 3 8B and 3.1 405B FP8-CS). Measured 2.12 / 2.26, the model 2.13 / 2.24: on a mature
    Blackwell release the model's B200 is as far ahead of its H100 as measured, unlike NeMo 25.02, the first
    Blackwell release (perf_heldout.py one_release_two_gpus: the same container on H100 fits, its B200 rows are
    12% too fast). The bound is today's agreement with a margin."""
    pairs = pb.gpu_pairs(pb.cases())
    assert sorted(name for name, _, _ in pairs) == ["LLAMA3.1_405B FP8-CS", "LLAMA3_8B FP8-CS"]
    for name, measured, predicted in pairs:
        assert 2.0 < measured < 2.4, name
        # loosened 0.05 -> 0.07 on 2026-12-03 (perstep): the CP 2 ring's per-call query-block work
        # (step_time._cp_ring_calls) brings the B200 405B row from +3.7 to +1.0%, and leaves the H100 one (+7.1%,
        # Hopper's c is small) as the pair's gap: 2.13 against 2.26 measured
        assert abs(predicted / measured - 1.0) < 0.07, name


def test_the_mxfp8_ratio_gives_the_pairs_it_was_fitted_on():
    """perf_constants.yaml fp8.recipes.mxfp8 gemm_efficiency_ratio (0.81) was fitted on the mean FP8-CS / FP8-MX
    throughput ratio of the four 25.11 pairs at one layout (measured 1.049): the model gives it within 0.5% (0.80:
    1.055, 0.79: 1.062), so a change to the casts or GEMMs that leaves the fit stale fails here."""
    cs = pb.cases()
    pairs = [(c, x) for c in cs for x in cs if "_fp8-cs_" in c[0] and x[0] == c[0].replace("_fp8-cs_", "_fp8-mx_")]
    assert len(pairs) == 4
    measured = np.mean([c[2] / x[2] for c, x in pairs])
    predicted = np.mean([c[3] / x[3] for c, x in pairs])
    assert abs(predicted / measured - 1) < 0.005, (measured, predicted)


def test_the_8b_rows_run_full_iteration_graphs_as_their_recipes_do():
    """The 25.11 recipes at the table's commit give the Llama 3 8B FP8 rows full-iteration CUDA graphs on GB300,
    GB200 and B200 alike (FULL_ITERATION_GRAPHS); the H100 8B and the other rows none."""
    rows = {r["id"]: r for r in pb.csv.DictReader(pb.DATA.open(encoding="utf-8"))}
    graphs = {rid: pb.job(r)["strategy"]["cuda_graphs"] for rid, r in rows.items()}
    assert graphs["mbridge_25.11_gb300_llama3_8b_fp8-cs_8gpu"] == "full_iteration"
    assert graphs["mbridge_25.11_gb200_llama3_8b_fp8-mx_8gpu"] == "full_iteration"
    assert graphs["mbridge_25.11_h100_llama3_8b_fp8-cs_8gpu"] == "none"
    assert graphs["mbridge_25.11_gb300_llama3_70b_fp8-cs_64gpu"] == "none"


def test_step_split_parts_are_positive_and_within_the_step():
    """Attention core and linear GEMMs (each the step less the step with that part at an unbounded rate) are
    positive and together less than the step; GB300's attention is faster than GB200's by its doubled SFU ex2, as
    cuDNN measures single kernels (1.09-1.12 forward + backward, not the 2x of the exponentials alone), times the
    sustained rate its 1,400 W holds in a step (2,174 / 1,822 = 1.19, as its GEMMs): 1.25-1.40, not more."""
    s1, a1, g1 = pb.step_split("mbridge_25.11_gb300_llama3_8b_fp8-cs_8gpu")
    s0, a0, g0 = pb.step_split("mbridge_25.11_gb200_llama3_8b_fp8-cs_8gpu")
    for s, a, g in ((s1, a1, g1), (s0, a0, g0)):
        assert 0 < a < s and 0 < g < s and a + g < s
    assert 1.25 < a0 / a1 < 1.4
    line = pb.pair_split("llama3_8b_fp8-cs_8gpu", 1.192)
    assert "needs the non-attention part at" in line
