"""Held-out MLPerf Training v5.0 / v5.1 NVIDIA rows (benchmarks/perf_mlperf.py): H100, B200, GB200 / GB300 NVL72,
Llama 3.1 405B / 8B pre-training and Llama 2 70B LoRA, FP8 and NVFP4; nothing fitted on these rows. The bounds are what the
estimator reached when the source was added, with a margin, not tuned."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import perf_mlperf as pm  # noqa: E402
from harness import mape  # noqa: E402


def test_nvidia_mlperf_rows():
    cs = pm.cases()
    # NVIDIA's 20 FP8 submissions of the three benchmarks and 13 of other submitters on its code, and 9 NVFP4 ones
    # (fp8_recipe nvfp4: NVIDIA's 405B and 8B, Lenovo's 8B); none refused
    assert len(cs) == 42 and not any(c.skipped for c in cs)
    # reached: NVFP4 4.8% over 9 rows (B200 / GB200 -9..+3%, B300 / GB300 -5..-10%) since NVFP4 runs at its measured
    # kernel ratio over per-tensor FP8 (docs/known-gaps.md 30; 12.9% at 0.586 of the rated FP4 peak, every B200 / GB200
    # row 13-19% too slow; 10.4% against the per-block times, whose 15-step blocks at 5,120 GPUs carry the pause before
    # each evaluation; 13.0% while FP8 attention was timed in BF16)
    assert mape([c for c in cs if "_nvfp4_" in c.row_id]) <= 8.0
    by_src = {}
    for c in cs:
        by_src.setdefault(c.source, []).append(c)
    # reached: 405B pre-training 2.1% (H100 -1.0..+2.9% from 512 to 8,192 GPUs, GB200 +5.1 / +5.5%)
    assert mape(by_src["MLPerf Training v5.0 NVIDIA (Llama 3.1 405B pretrain)"]) <= 4.0
    # reached: v5.0 LoRA 1.8% (2.9% with attention timed in BF16; 9.5% while a frozen base stored in FP8 was
    # re-cast every step); 4.3% since their CP 8 runs Transformer Engine's all-to-all (cp_comm_type a2a,
    # step_time._cp_te_a2a: exposed all-to-alls and reorders, where a hidden ring had cost nothing), 72 GPUs -8.8%
    assert mape(by_src["MLPerf Training v5.0 NVIDIA (Llama 2 70B LoRA)"]) <= 6.0
    # reached: v5.1 LoRA 7.4% (NVIDIA GB200 / GB300) and 9.4% (B200 / B300) with their FP8 attention, FP8 frozen
    # base and full-iteration CUDA graphs stated; 30.9% / 21.0% before; 11.8% / 10.6% with the all-to-all charged
    # (every CP 8 row too slow, GB300 72 GPUs -16.2%; the 8-GPU B200 / B300 rows without CP are -12..-13% too)
    assert mape(by_src["MLPerf Training v5.1 NVIDIA (Llama 2 70B LoRA)"]) <= 13.0
    assert mape(by_src["MLPerf Training v5.1 other submitters, NVIDIA's implementation (Llama 2 70B LoRA)"]) <= 12.0
    # reached: H200 405B (Nebius, 512 / 1,024 GPUs) -0.1 / +0.2%
    assert mape([c for c in cs if "_h200_" in c.row_id]) <= 3.0
    # reached: 6.8% over the 33 FP8 rows (10.2% before the v5.1 LoRA runs' FP8 attention, FP8 base and graphs were
    # stated; 44% before a LoRA job's frozen base stopped adding gradient buckets). Worst: the 8B on 512 GB200 /
    # GB300 +43 / +40% once their full-iteration graph removes the host floor, which had stood in for what bounds
    # their 0.09 s step (docs/known-gaps.md 4 (c)); +31 / +28% once TE's CP 4 ring pays its per-step
    # corrections and copies (step_time._cp_te_ring). 7.1% over the 33 FP8 rows with the LoRA all-to-all charged
    assert mape([c for c in cs if "_nvfp4_" not in c.row_id]) <= 9.0
    # the two 8B runs on 512 GB200 / GB300 (+45.3 / +42.6% since FP8 inputs gathered under sequence parallelism are cast
    # on their shard, +44.7 / +42.0% before; from 72 to 512 GPUs their per-GPU rate measured 0.48 / 0.43, the model
    # 0.68 / 0.65: docs/known-gaps.md 4 (c)) bounded apart; every other row within 45%
    far = ("mlperf5.1_gb200_llama31_8b_fp8_512gpu", "mlperf5.1_gb300_llama31_8b_fp8_512gpu")
    assert all(abs(c.err) < 0.45 for c in cs if c.row_id not in far)
    assert all(abs(c.err) < 0.47 for c in cs if c.row_id in far)


def test_every_run_fits():
    """Every row ran on real hardware: the 8-GPU LoRA runs fit once their FP8 base, FP8 attention and FP8 SwiGLU
    input are stated (v5.0 B200 / GB200 logged max_memory_usage 168.8 GB)."""
    assert all(f.fits for f in pm.fits())


def test_per_gpu_throughput_falls_with_scale_as_measured():
    """H100 405B from 512 to 8,192 GPUs: the per-GPU throughput falls (measured 0.887 of the 512-GPU figure at
    8,192, DP 64), and the estimate falls too."""
    ratios = {name: (meas, pred) for name, meas, pred in pm.scaling(pm.cases())}
    meas, pred = ratios["mlperf5.0_h100_llama31_405b_fp8 8192gpu / 512gpu"]
    assert meas < 0.9 and pred < 0.95


def test_step_lines_split_a_series_into_micro_batch_and_step_costs():
    """A series built from step = 0.2 m + 0.5 (measured) and 0.19 m + 0.3 (predicted) at three micro-batch counts
    gives back both lines; a layout run at one micro-batch count gives none."""
    def row(gpus: int, gb: int) -> dict[str, str]:
        return {"id": f"x_{gpus}gpu", "gpu_count": str(gpus), "global_batch_seqs": str(gb), "seq_len": "1000",
                "tp": "2", "pp": "2", "cp": "1", "vpp": "1", "micro_batch": "1"}

    rows = [row(8, 32), row(16, 32), row(32, 32)]  # data parallel 2, 4, 8 at TP 2 x PP 2: m = 16, 8, 4
    tokens = {r["id"]: int(r["global_batch_seqs"]) * 1000 / int(r["gpu_count"]) for r in rows}
    rate = {r["id"]: (tokens[r["id"]] / (0.2 * pm.micro_batches(r) + 0.5),
                      tokens[r["id"]] / (0.19 * pm.micro_batches(r) + 0.3)) for r in rows}
    [(name, n, (am, bm), (ap, bp))] = pm.step_lines(rows, rate)
    assert name == "x" and n == 3
    assert abs(am - 0.2) < 1e-9 and abs(bm - 0.5) < 1e-9 and abs(ap - 0.19) < 1e-9 and abs(bp - 0.3) < 1e-9
    assert pm.step_lines(rows[:1], rate) == []


def test_405b_series_per_micro_batch_time_as_measured():
    """H100 / H200 405B at several scales: the estimate's time a micro-batch within 3% of the measured line's
    (reached: 1.4% / 0.5%); its per-step cost is 0.14 / 0.09 s short with the interleaved schedule's fill and drain
    transfers (0.17 / 0.16 s without them; the rest a known gap, docs/known-gaps.md 17 (e)): a mechanism that closes
    it may reach the measured cost, not pass it by more than 50 ms."""
    cs = pm.cases()
    lines = {name: (meas, pred) for name, _, meas, pred in
             pm.step_lines(pm._rows(), {c.row_id: (c.measured, c.predicted) for c in cs})}
    for name in ("mlperf5.0_h100_llama31_405b_fp8", "mlperf5.1_h200_llama31_405b_fp8"):
        (am, bm), (ap, bp) = lines[name]
        assert abs(ap - am) / am < 0.03, name
        assert bm - 0.15 < bp < bm + 0.05, name


def test_step_terms_add_up_to_the_predicted_per_step_cost():
    """step_terms splits each series' predicted b by term; the terms add up to step_lines' predicted b, and the
    interleaved 405B series (PP 8, VPP 8) hold a bubble and the pipeline's fill and drain transfers."""
    cs = pm.cases()
    lines = {name: pred for name, _, _, pred in
             pm.step_lines(pm._rows(), {c.row_id: (c.measured, c.predicted) for c in cs})}
    terms = pm.step_terms(pm._rows())
    assert set(terms) == set(lines)
    for name, (_, bp) in lines.items():
        assert abs(sum(terms[name].values()) - bp) < 1e-6, name
    h100 = terms["mlperf5.0_h100_llama31_405b_fp8"]
    assert h100["bubble"] > 0.1 and h100["p2p"] > 0.02 and abs(h100["other"]) < 1e-6


def test_b200_8b_series_flat_to_128_gpus():
    """University of Florida's DGX B200 8B runs at one layout (CP 2, one micro-batch a GPU) on 32 to 256 GPUs: the
    per-GPU rate measured within 3% from 32 to 128 GPUs and the estimate moves as little; the drop at 256 (0.85 of
    the 32-GPU rate) is not modelled (docs/known-gaps.md 4 (c))."""
    ratios = {name: (meas, pred) for name, meas, pred in pm.scaling(pm.cases())}
    m32, p32 = ratios["mlperf5.1_b200_llama31_8b_fp8 32gpu / 8gpu"]
    m128, p128 = ratios["mlperf5.1_b200_llama31_8b_fp8 128gpu / 8gpu"]
    assert abs(m128 / m32 - 1.0) < 0.03 and abs(p128 / p32 - 1.0) < 0.03


def test_forward_only_against_logged_evaluation_steps():
    """The 8B rows' logged evaluation steps (a forward and the loss, no backward, no gradient collective) against the
    estimate's forward compute. Reached: +9..+18% (the estimate slower) where a GPU runs 4,096 tokens or more a
    micro-batch on FP8, NVFP4 -2..+17%. At 512 GB200 / GB300 (TP 2 x CP 4, 2,048 tokens, 16 heads a GPU) +9.0 / -2.1%
    against +11.8 / +13.7% at 72 since the attention grid is timed (step_time._attention_grid: a ring step's 64-128 CTAs
    on 152 SMs); -17.2 / -22.8% before, the 512-GPU forward then 29 / 37 points off its 72-GPU row, now 3 / 16."""
    fc = {rid: (fwd - ev) / ev for rid, ev, fwd, _, _ in pm.forward_check()}
    assert len(fc) == 15 and all(abs(e) < 0.30 for e in fc.values())
    for part in ("gb200", "gb300"):
        at_512, at_72 = (fc[f"mlperf5.1_{part}_llama31_8b_fp8_{n}gpu"] for n in (512, 72))
        assert abs(at_512 - at_72) < 0.18


def test_step_outside_the_layers_of_the_b200_8b_series():
    """What the B200 8B steps spend outside the layers (the step less the logged forward times the estimate's layer /
    forward ratio): about 48-54 ms from 32 to 128 GPUs, 82 ms at 256, 60 ms on two nodes against 42 on one at
    micro-batch 2; the estimate's DP and optimizer terms stay at 13-33 ms. Reached, not a bound to tune to: the
    test pins that the check runs on the full-iteration rows and that the 256-GPU jump is in this part."""
    rest = {rid: (m, p) for rid, _, _, m, p in pm.forward_check() if m is not None}
    assert len(rest) == 10
    m128, _ = rest["mlperf5.1_b200_llama31_8b_fp8_128gpu"]
    m256, p256 = rest["mlperf5.1_b200_llama31_8b_fp8_256gpu"]
    assert m256 - m128 > 0.02 and p256 < m256
