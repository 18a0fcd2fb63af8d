from __future__ import annotations

import pytest
from pydantic import ValidationError

from trainsizer.catalog import load_catalog
from trainsizer.estimate.calibration import Calibration, load_constants, rates
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time
from trainsizer.scenario import build_system

from .test_perf_common import a100_cluster, b200_cluster, h100_cluster, llama8b


def test_constants_file_loads_and_is_sane():
    k = load_constants()
    assert 0.3 < k.gemm_efficiency("a100-sxm-80gb") < 0.95
    assert k.gemm_efficiency("h100-sxm") < k.gemm_efficiency("a100-sxm-80gb")
    assert k.gemm_efficiency("unknown-accelerator") == k.gemm_efficiency_max["default"]
    assert 0 < k.hbm_efficiency <= 1 and 0 < k.intra_busbw_fraction <= 1
    # the goodput model's failure rate is the catalog's figure (one source): Llama 3's 419 in 54 days on 16,384
    from trainsizer.estimate.reliability import failure_figures

    assert failure_figures().failures_per_gpu_day == pytest.approx(419 / (16384 * 54), rel=0.01)


def test_consumer_card_gemm_efficiency_follows_its_measured_matmul_rate():
    # derived, not fitted (perf_constants.yaml gemm.efficiency_max): the large-shape torch.matmul BF16 rate people
    # measured on the card (RTX 4090) or its die (GA102 in the A40 for the RTX A6000) as a share of the catalog
    # peak, x the A100's tuned efficiency over its measured MAMF share
    k = load_constants()
    a100_ratio = k.gemm_efficiency("a100-sxm-80gb") / (271.8 / 312)
    rtx_5090_shares = sorted(sum(r) / 3 / 209.5 for r in ((183.71, 236.03, 235.27), (181.17, 234.89, 240.05),
                                                          (182.19, 234.66, 236.99), (134.08, 174.68, 178.86)))
    for acc, measured_share in (("rtx-5090", (rtx_5090_shares[1] + rtx_5090_shares[2]) / 2),
                                ("rtx-a6000", (115.2 + 110.6 + 122.3) / 3 / 149.7),
                                ("a10g", (62.48 + 66.59 + 69.47) / 3 / 70.0),
                                ("l20", (111.82 + 114.14 + 107.95) / 3 / 119.5),
                                ("l4-pcie-24gb", (54.91 + 59.40 + 56.90) / 3 / 121.0)):
        assert k.gemm_efficiency(acc) == pytest.approx(measured_share * a100_ratio, abs=0.01)
        assert k.gemm_efficiency(acc) < measured_share  # a training run's shapes never beat the square benchmark
    # the 4090 holds clocks above its rated boost (0.95 of its FP32-accumulate peak measured); H100 throttles
    assert k.gemm_efficiency("rtx-4090") > k.gemm_efficiency("h100-sxm-80gb")


def test_rtx_4090_gemm_share_is_its_matmul_rate_over_the_a100s_sustained_one_like_for_like():
    """known-gaps 135: the A100's tuned share equals its own sustained simple torch.matmul (230 of 312 over >= 3 s in
    mli/transformers-benchmarks), so a card's simple-benchmark share takes that ratio (1.00), not the A100's tuned
    share over its best-shape MAMF (0.85). The 4090 loses nothing over a run (158.6 at 8192^2 sustained, 160.2 at
    8192^2 over 30 iterations), so its mean of three sizes is its rate."""
    k = load_constants()
    like_for_like = k.gemm_efficiency("a100-sxm-80gb") / (230.0 / 312.0)
    measured_share = (151.5 + 160.2 + 158.5) / 3 / 165.2
    assert like_for_like == pytest.approx(1.0, abs=0.01)
    assert 158.6 / 160.2 == pytest.approx(1.0, abs=0.015)  # sustained over short at one size: no loss over a run
    assert k.gemm_efficiency("rtx-4090") == pytest.approx(measured_share * like_for_like, abs=0.01)
    assert k.gemm_efficiency("rtx-4090") > measured_share * k.gemm_efficiency("a100-sxm-80gb") / (271.8 / 312) + 0.1


def test_v100_gemm_share_follows_its_measured_fp16_matmul_rate():
    """V100 (no BF16: FP16 tensor cores with FP32 accumulate) takes the consumer cards' rule, not the default: the
    mean torch.matmul FP16 rate at 4096^2 / 8192^2 / 10240^2 on a V100-SXM2 (zzc0721/torch-performance-test-data
    issue #140) over the 125 TFLOPS peak, x the A100's run factor. Checked held out only (perf_papers' ZeRO++ rows)."""
    k = load_constants()
    run_factor = k.gemm_efficiency("a100-sxm-80gb") / (271.8 / 312)
    measured_share = (95.73 + 97.36 + 89.37) / 3 / 125.0
    assert k.gemm_efficiency("v100-sxm-32gb") == pytest.approx(measured_share * run_factor, abs=0.01)
    assert k.gemm_efficiency("v100-sxm2-32gb") == k.gemm_efficiency("v100-sxm-32gb")  # the catalog alias
    assert k.gemm_efficiency("v100-sxm-32gb") != k.gemm_efficiency_max["default"]


def test_grace_blackwell_gemm_shares_follow_their_measured_matmul_rates():
    # derived, not fitted (perf_constants.yaml gemm.efficiency_max; docs/known-gaps.md 33): B200's share x each part's
    # measured BF16 matmul rate over B200's (MAMF 1,745), over the rated-peak ratio (2,500 / 2,250). GB200: its MAMF
    # 1,822; GB300: cuBLAS at its 1,400 W limit, up to 2,174 TFLOPS. Both parts are rated 2,500 dense, so their GEMM
    # rates differ by what each sustains at its power limit, not by the catalog peak.
    k = load_constants()
    b200 = k.gemm_efficiency("b200")
    for acc, measured in (("gb200", 1822.0), ("gb300", 2174.0)):
        assert k.gemm_efficiency(acc) == pytest.approx(b200 * (measured / 1745.0) / (2500.0 / 2250.0), abs=0.001)
    assert k.gemm_efficiency("gb300") / k.gemm_efficiency("gb200") == pytest.approx(2174.0 / 1822.0, rel=0.005)


def test_the_rtx_6000_ada_takes_its_training_rate_against_the_4090_and_the_l40s_its_matmul_run():
    """RTX 6000 Ada (AD102, full-rate tensor cores, 300 W, blower): no matmul run published; in Lambda's same-code
    training benchmark it trains BERT-large at 79 seq/s against the RTX 4090's 93, its streamed work at ~0.95 of the
    4090's (960 vs 1,008 GB/s), so its GEMMs run at most 0.85x the 4090's sustained rate (known-gaps 135 (c)). The L40S
    keeps its short matmul's best x the same die's mean / best x the A100's run factor (the default)."""
    k = load_constants()
    run_factor = k.gemm_efficiency("a100-sxm-80gb") / (271.8 / 312)
    mean_over_best = (151.5 + 160.2 + 158.5) / 3 / 160.2
    l40s = 269.15 / 362.0 * mean_over_best * run_factor
    assert k.gemm_efficiency("l40s") == pytest.approx(l40s, abs=0.01)
    training_ratio = 79.0 / 93.0
    assert training_ratio < 960.0 / 1008.0  # below the streamed work's ratio: an upper bound on the GEMM ratio
    rtx_4090_tflops = k.gemm_efficiency("rtx-4090") * 165.2
    assert k.gemm_efficiency("rtx-6000-ada") == pytest.approx(rtx_4090_tflops * training_ratio / 364.2, abs=0.01)
    assert k.gemm_efficiency("rtx-6000-ada") * 364.2 < rtx_4090_tflops  # 2.2x the peak, a slower GEMM in training

def test_the_h20_share_follows_its_measured_matmul_and_the_h200_keeps_its_own():
    """The H20 (GH100, tensor rate cut per SM, 148 dense BF16 at 400 W): torch.matmul BF16 at best 141.86 / 142.25 TFLOPS
    on two cards (zzc0721 database.md), x the A100's run factor, less up to 3% for a mean over sizes (not published):
    the 0.80 it keeps; above the power-bound H100's share. The 'h20' key never reaches the H200 (docs/known-gaps.md
    269 (b))."""
    k = load_constants()
    run_factor = k.gemm_efficiency("a100-sxm-80gb") / (271.8 / 312)
    best = (141.86 + 142.25) / 2 / 148.0
    assert best * run_factor * 0.97 <= k.gemm_efficiency("h20") <= best * run_factor
    assert k.gemm_efficiency("h20-141gb") == k.gemm_efficiency("h20") > k.gemm_efficiency("h100-sxm-80gb")
    assert k.gemm_efficiency("h200-sxm-141gb") == k.gemm_efficiency_max["h200"]


def test_the_h20_fp8_gemms_run_at_their_measured_share_and_other_parts_keep_the_recipe_ratio():
    """H20: cuBLAS block-scaled FP8 GEMMs at 282.0-282.8 TFLOPS of 296 (vLLM PR 49932) over its BF16 matmul's 0.960 of
    148: every FP8-peak recipe at 0.995 of the bf16 share, ~2x its BF16 GEMM rate; the H200 (an 'h20' prefix), H100 and
    H800 keep the recipes' ratios (docs/known-gaps.md 269 (d))."""
    k, cat = load_constants(), load_catalog()
    assert k.raw["fp8"]["gemm_ratio_by_family"]["h20"] == pytest.approx(282.4 / 296 / ((141.86 + 142.25) / 2 / 148),
                                                                       abs=0.005)
    blockwise = k.fp8_recipes["tensorwise"]["gemm_efficiency_ratio"] * k.fp8_recipes["blockwise"][
        "gemm_rate_over_tensorwise"]
    for part, ratio in (("h20", 0.995), ("h20-141gb", 0.995), ("h200-sxm-141gb", blockwise),
                        ("h100-sxm-80gb", blockwise), ("h800-sxm-80gb", blockwise)):
        system = build_system(cat.accelerator(part), 8, 1, None)
        fp8, bf16 = rates(system, "fp8", fp8_recipe="blockwise"), rates(system, "bf16")
        peaks = system.peak("fp8") / system.peak("bf16")
        assert fp8.gemm_flops / bf16.gemm_flops == pytest.approx(peaks * ratio, rel=1e-6), part


def test_the_a10_takes_its_power_bound_run_and_its_id_keeps_other_families_apart():
    """The A10 (GA102, full rate, 150 W) measures 56 TFLOPS at best, x the A40's mean / best as for the RTX A6000;
    the L4 and A10 ids name their form factor, so the L40 / L40S, the A10G and the A100s keep their own figures."""
    k = load_constants()
    run_factor = k.gemm_efficiency("a100-sxm-80gb") / (271.8 / 312)
    a40_mean_over_best = (115.16 + 110.64 + 122.29) / 3 / 122.29
    assert k.gemm_efficiency("a10-pcie-24gb") == pytest.approx(56 / 125 * a40_mean_over_best * run_factor, abs=0.01)
    assert k.gemm_efficiency("a10g") == pytest.approx(0.80) and k.gemm_efficiency("a100-pcie-40gb") == \
        k.gemm_efficiency("a100-sxm-80gb")
    assert k.gemm_efficiency("l4-pcie-24gb") < k.gemm_efficiency("l40s") == k.gemm_efficiency("l40")


def test_the_ga102_geforce_and_workstation_parts_take_their_die_s_measured_rates():
    """RTX 3090 (half rate, 71.2 dense): its best-size matmul BF16 on three cards (76.34 / 76.58 / 76.68, zzc0721) x the
    A10G's mean / best (the same die on the same half-rate path) x the A100's run factor. RTX A5000 (full rate, 111.1
    dense, 230 W, no run found): power-bound at the A40's measured TFLOPS per watt. Neither is fitted on a row
    (docs/known-gaps.md 142)."""
    from dataclasses import replace

    from trainsizer.estimate.calibration import power_clock_factor
    from trainsizer.estimate.inputs import System

    k = load_constants()
    run_factor = k.gemm_efficiency("a100-sxm-80gb") / (271.8 / 312)
    a10g_mean_over_best = (62.48 + 66.59 + 69.47) / 3 / 69.47
    best_3090 = (76.34 + 76.58 + 76.68) / 3
    assert k.gemm_efficiency("rtx-3090") == pytest.approx(best_3090 / 71.2 * a10g_mean_over_best * run_factor,
                                                          abs=0.01)
    a40_per_watt = (115.16 + 110.64 + 122.29) / 3 / 300
    assert k.gemm_efficiency("rtx-a5000") == pytest.approx(a40_per_watt * 230 / 111.1 * run_factor, abs=0.01)
    # the A5000 (64 SMs at 230 W) runs GEMMs slower per peak FLOP than the A6000 (84 SMs at 300 W): both power-bound
    assert k.gemm_efficiency("rtx-a5000") * 111.1 < k.gemm_efficiency("rtx-a6000") * 154.8
    # a cap: the full-rate A5000 in proportion to its power, the half-rate 3090 by the cube root (clock-bound at TDP)
    base = System(accelerator="rtx-a5000", gpus=1, gpus_per_node=1, memory_gib=24.0, peak_tflops={"bf16": 111.1},
                  hbm_gb_s=768.0, intra_node_gb_s=10.0, tdp_w=230.0, power_limit_w=115.0)
    assert power_clock_factor(base) == pytest.approx(0.5)
    geforce = replace(base, accelerator="rtx-3090", peak_tflops={"bf16": 71.2}, tdp_w=350.0, power_limit_w=280.0)
    assert power_clock_factor(geforce) == pytest.approx(0.8 ** (1 / 3))


def test_power_cap_on_full_rate_gddr_parts_is_linear_and_half_rate_parts_keep_the_cube_root():
    """One die's matmul rate per watt is flat across its power (GA102: A10 at 150 W 0.373 TFLOPS/W, A40 at 300 W
    0.387; AD10x: L4 at 72 W 0.793, L40S at 350 W 0.769), so a full-rate GDDR part capped below its TDP runs GEMMs in
    proportion to the cap. The A10G (half rate) holds its clock at 300 W and keeps the cube-root law."""
    from dataclasses import replace

    from trainsizer.estimate.calibration import power_clock_factor
    from trainsizer.estimate.inputs import System

    for per_watt in ((56 / 150, 116.03 / 300), (57.07 / 72, 269.15 / 350)):
        assert per_watt[0] == pytest.approx(per_watt[1], rel=0.05)
    l40s = System(accelerator="l40s", gpus=1, gpus_per_node=1, memory_gib=44.5, peak_tflops={"bf16": 362.0},
                  hbm_gb_s=864.0, intra_node_gb_s=25.0, tdp_w=350.0)
    assert power_clock_factor(replace(l40s, power_limit_w=175.0)) == pytest.approx(0.5)
    assert power_clock_factor(replace(l40s, accelerator="rtx-6000-ada", tdp_w=300.0, power_limit_w=225.0)) == \
        pytest.approx(0.75)
    assert power_clock_factor(replace(l40s, power_limit_w=400.0)) == 1.0
    assert power_clock_factor(replace(l40s, accelerator="l4-pcie-24gb", tdp_w=72.0, power_limit_w=36.0)) == \
        pytest.approx(0.5)
    assert power_clock_factor(replace(l40s, accelerator="l40", tdp_w=300.0, power_limit_w=150.0)) == \
        pytest.approx(0.5 ** (1 / 3))  # half rate: the L4's family key does not reach it
    a10g = replace(l40s, accelerator="a10g", tdp_w=300.0, power_limit_w=150.0)
    assert power_clock_factor(a10g) == pytest.approx(0.5 ** (1 / 3))
    r0, r1 = rates(l40s, "bf16"), rates(replace(l40s, power_limit_w=175.0), "bf16")
    assert r1.gemm_flops / r0.gemm_flops == pytest.approx(0.5) and r1.hbm_bytes_s == r0.hbm_bytes_s


def test_rates_follow_system_and_calibration():
    r = rates(a100_cluster(), "bf16")
    assert r.gemm_peak_flops == 312e12
    # System.inter_node_gb_s is already the achieved payload: no second efficiency factor (issue 13)
    assert r.inter_nic == pytest.approx(25e9)
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


def test_power_cap_lowers_tensor_rates_by_the_cube_root():
    """A part capped below its TDP (Grand Teton H100 at 500 of 700 W) runs GEMMs and attention at
    (cap/TDP)^(1/3) of the clock; HBM and links are unchanged. No cap, or a cap at/above TDP: no change."""
    from dataclasses import replace

    from trainsizer.estimate.calibration import power_clock_factor, rates
    from trainsizer.estimate.inputs import System

    base = System(accelerator="h100-sxm", gpus=8, gpus_per_node=8, memory_gib=96.0, peak_tflops={"bf16": 989.0},
                  hbm_gb_s=3350.0, intra_node_gb_s=450.0, tdp_w=700.0)
    capped = replace(base, power_limit_w=500.0)
    assert power_clock_factor(base) == 1.0
    assert power_clock_factor(replace(base, power_limit_w=800.0)) == 1.0
    assert power_clock_factor(capped) == pytest.approx((5 / 7) ** (1 / 3))
    r0, r1 = rates(base, "bf16"), rates(capped, "bf16")
    assert r1.gemm_flops / r0.gemm_flops == pytest.approx((5 / 7) ** (1 / 3))
    assert r1.flash_flops / r0.flash_flops == pytest.approx((5 / 7) ** (1 / 3))
    assert r1.hbm_bytes_s == r0.hbm_bytes_s and r1.gemm_peak_flops == r0.gemm_peak_flops


def test_power_cap_on_blackwell_follows_the_measured_linear_power_rate_line():
    """A Blackwell part capped below its TDP runs GEMMs at (cap/TDP - share) / (1 - share) of its rate: the line
    through a GB300's measured cuBLAS rates (617 TFLOPS at 500 W, 2,174 at 1,400 W), which also gives GB200's
    measured MAMF (1,822) at 1,200 W. Steeper than the cube-root law Hopper keeps; a cap at or below the static
    floor is an error, not a zero rate."""
    from dataclasses import replace

    from trainsizer.errors import SpecError
    from trainsizer.estimate.calibration import load_constants, power_clock_factor, rates
    from trainsizer.estimate.inputs import System

    share = load_constants().raw["gemm"]["power_cap_static_share"]["gb300"]
    gb300 = System(accelerator="gb300", gpus=4, gpus_per_node=4, memory_gib=279.0, peak_tflops={"bf16": 2500.0},
                   hbm_gb_s=8000.0, intra_node_gb_s=900.0, tdp_w=1400.0)
    assert power_clock_factor(replace(gb300, power_limit_w=500.0)) == pytest.approx(617 / 2174, rel=0.01)
    assert 2174 * power_clock_factor(replace(gb300, power_limit_w=1200.0)) == pytest.approx(1822, rel=0.01)
    b200 = replace(gb300, accelerator="b200", tdp_w=1000.0, power_limit_w=750.0)
    assert power_clock_factor(b200) == pytest.approx((0.75 - share) / (1 - share))
    assert power_clock_factor(b200) < 0.75 ** (1 / 3)
    r0, r1 = rates(replace(b200, power_limit_w=0.0), "bf16"), rates(b200, "bf16")
    assert r1.gemm_flops / r0.gemm_flops == pytest.approx(power_clock_factor(b200))
    assert r1.hbm_bytes_s == r0.hbm_bytes_s
    with pytest.raises(SpecError) as err:
        power_clock_factor(replace(b200, power_limit_w=50.0))
    # the message names the floor and where it comes from, not a bare number
    assert err.value.where.endswith("accelerators.b200.power_limit_w")
    assert f"{share * 1000:.0f} W" in err.value.problem and f"static floor of {share:g}" in err.value.problem


def test_blackwell_ultra_sfu_speeds_up_the_attention_forward_more_than_the_backward():
    """GB300 / B300 compute softmax exponentials twice as fast as GB200: the BF16 forward gains 1 / (1 - s/2) with the
    exponential share s = 0.378 derived from NVIDIA's cuDNN SDPA on both parts (1.23x), the backward only the same
    exponential time once; on top of the base rates, which differ as the parts' sustained matmul rates do (the
    attention section's flash_efficiency_native); GEMMs differ only by gemm.efficiency_max."""
    import dataclasses

    k = load_constants()
    base = dataclasses.replace(h100_cluster(72, intra_gb_s=900.0), peak_tflops={"bf16": 2500.0, "fp8": 5000.0},
                               hbm_gb_s=8000.0, scaleup_domain=72, gpus_per_node=4)
    gb200 = rates(dataclasses.replace(base, accelerator="gb200"), "bf16", attention_kernel="native")
    gb300 = rates(dataclasses.replace(base, accelerator="gb300"), "bf16", attention_kernel="native")
    base = k.flash_fraction("gb300", "native") / k.flash_fraction("gb200", "native")
    assert gb300.flash_flops / gb200.flash_flops == pytest.approx(base / (1.0 - 0.378 / 2.0), rel=1e-3)
    fwd200, fwd300 = 1.0 / gb200.flash_flops, base / gb300.flash_flops  # GB300's at GB200's base rate
    bwd200 = fwd200 * (gb200.flash_bwd_over_fwd or k.flash_bwd_over_fwd)
    bwd300 = fwd300 * gb300.flash_bwd_over_fwd
    assert bwd200 - bwd300 == pytest.approx(fwd200 - fwd300, rel=1e-9)  # the same exponentials, saved once
    assert gb300.gemm_flops / gb200.gemm_flops == pytest.approx(k.gemm_efficiency("gb300") / k.gemm_efficiency("gb200"))
    assert k.attention_sfu("h100-sxm") == (1.0, k.flash_bwd_over_fwd)


def test_native_attention_backward_ratio_where_the_family_has_one():
    """cuDNN / FA3 on Hopper: backward / forward time from their own measured rates (attention section,
    flash_bwd_over_fwd_native, by family); FlashAttention-2, and `native` on a family without a measured ratio
    (Blackwell, whose derived constants assume FA2's), keep the FA2 ratio."""
    import dataclasses

    k = load_constants()
    hopper = k.flash_bwd_over_fwd_native["h100"]
    assert hopper != k.flash_bwd_over_fwd
    h100 = h100_cluster(8)
    assert rates(h100, "bf16", attention_kernel="native").flash_bwd_over_fwd == hopper
    assert rates(h100, "bf16", attention_kernel="fa2").flash_bwd_over_fwd == k.flash_bwd_over_fwd
    b200 = dataclasses.replace(h100, accelerator="b200")
    assert rates(b200, "bf16", attention_kernel="native").flash_bwd_over_fwd == k.flash_bwd_over_fwd



@pytest.mark.parametrize("recipe, free", [("delayed", 1.0), ("tensorwise", 1.0), ("mxfp8", 0.0), ("nvfp4", 0.0)])
def test_transformer_engine_casts_write_no_fp8_transpose_on_blackwell(recipe, free):
    """TE >= 2.0 makes no FP8 transpose under per-tensor scaling where FP8 GEMMs take every layout (Blackwell,
    memory_constants.yaml fp8.non_tn_fp8_gemm_families): its casts write 1 B less per element; MXFP8 / NVFP4 keep
    their column-wise copies; Hopper and torchao casts keep the transpose."""
    from trainsizer.estimate.calibration import fp8_transpose_free

    k = load_constants()
    assert fp8_transpose_free("b200", k, recipe) == free and fp8_transpose_free("gb300", k, recipe) == free
    assert fp8_transpose_free("h100-sxm", k, recipe if recipe != "nvfp4" else "delayed") == 0.0
    te = rates(b200_cluster(), "fp8", fp8_recipe=recipe, te_quantizer=True)
    other = rates(b200_cluster(), "fp8", fp8_recipe=recipe)
    assert other.fp8_cast_bytes - te.fp8_cast_bytes == pytest.approx(free)
    assert (other.fp8_weight_cast_bytes, te.fp8_weight_cast_bytes) == (4.0, 4.0 - free)
    hopper = rates(h100_cluster(), "fp8", fp8_recipe="tensorwise", te_quantizer=True)
    assert hopper.fp8_cast_bytes == rates(h100_cluster(), "fp8", fp8_recipe="tensorwise").fp8_cast_bytes
    assert rates(b200_cluster(), "bf16", te_quantizer=True).fp8_cast_bytes == 0.0


def test_a_te_style_fp8_step_on_blackwell_is_shorter_by_the_transposes_alone():
    import dataclasses

    from trainsizer.estimate.step_time import perf_style

    m, s = llama8b(), b200_cluster()
    tr = Training(seq_len=8192, global_batch_seqs=64, precision="fp8", fp8_recipe="tensorwise")
    st = Strategy(tp=1, dp=8, micro_batch=2, framework="megatron-core", distributed_optimizer=True)
    te = perf_style("megatron-core")
    assert te.fp8_te_quantizer and not perf_style("torchtitan").fp8_te_quantizer
    with_te = estimate_time(m, tr, s, st, framework_style=te).step_s
    without = estimate_time(m, tr, s, st, framework_style=dataclasses.replace(te, fp8_te_quantizer=False)).step_s
    assert 0.0 < without - with_te < 0.02 * without  # casts are a few percent of an 8B FP8 step
    hopper = h100_cluster(8)
    assert estimate_time(m, tr, hopper, st, framework_style=te).step_s == pytest.approx(
        estimate_time(m, tr, hopper, st, framework_style=dataclasses.replace(te, fp8_te_quantizer=False)).step_s)
