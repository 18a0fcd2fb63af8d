"""Held-out rows added 2026-12-03, third batch (benchmarks/perf_heldout28.py; nothing fitted on them): torchtitan with
TorchAO's Float8 / MXFP8 on B200 and GB200, torchtitan's DeepSeek-V3 with DeepEP on 512 H100, and torchtitan's 2026-05
default configs (Llama 3 8B, Qwen3 32B, GPT-OSS 20B) on 4 GB200, and TorchAO's float8 tables on 8 H100 / 8 MI300X. Bounds = the figures measured when the rows were added, with a margin; the
rows come out far too fast (docs/known-gaps.md 57), so the bounds guard against a regression, not an accuracy claim.
What the rows do show (the FP8 / BF16 and DeepEP / all-to-all gains at one layout) is held tighter."""

from __future__ import annotations

import re

import perf_heldout as ph
import perf_heldout28 as p28

from .heldout_rows import BENCH, check_rows_sourced, check_run, run_fixture

# source -> MAPE bound (%); reached at landing in the comment
BOUNDS = {
    "TorchAO MX README (8 B200, power limited)": 68.0,  # 63.1: +54..+78%, too fast (known-gaps 57); 83.0 before the
    # Blackwell power-cap law (perf_constants.yaml gemm.power_cap_static_share); 53.3 while the rowwise row ran at the
    # 0.45 GEMM ratio tuned on torchtitan's TP rowwise rows (+28%, now +78% as the other recipes: known-gaps 60)
    "torchtitan MXFP8 docs (GB200 Llama 4 Scout)": 45.0,  # 37.1: +37%, too fast
    "TorchAO MX README peak memory (8 B200)": 5.0,  # 0.6: -0.8..+0.7% since torchtitan's LM head its own FSDP2
    # unit at 6fc499f6 (known-gaps 275 (b)); 14.6 (+14..+16%) at landing; 20.9 before compiled per-op SAC kept no w2
    # output (known-gaps 63)
    "torchtitan DeepEP PR (512 H100 DeepSeek-V3)": 66.0,  # 58.6: +57 / +60%, too fast
    "torchtitan DeepEP PR (512 H100 DeepSeek-V3) peak memory": 12.0,  # 7.0: +9.2 / +4.8%
    "torchtitan FSDP symm-mem PR (4 GB200)": 30.0,  # 22.9: dense 2.9-7.0%, GPT-OSS 20B +45 / +75% (FlexAttention)
    "TorchAO float8 README (8 H100)": 8.0,  # 4.9: bf16 +5.9, tensorwise +4.1, rowwise +4.9% (-19.4% at the 0.45 ratio)
    "TorchAO float8 README (8 MI300X)": 15.0,  # 12.1: bf16 +6.9, tensorwise +15.2, rowwise +14.1% since PyTorch
    # SDPA's ROCm kernels (attention.flash_efficiency_sdpa, known-gaps 59) and rowwise's GEMMs at the tensorwise rate
    # (known-gaps 60; 11.3 with rowwise -11.9% at the 0.45); 46.8 before (+47.9 / +75.2 / +17.5%)
    "TorchAO float8 README (8 H100) peak memory": 5.0,  # 1.8: -1.6..-1.9% with the loss eager (compile_loss false:
    # torchtitan compiled no loss from 2024-12-18 to 2025-04-02), -14.6% before with it compiled (known-gaps 63)
    "TorchAO float8 README (8 MI300X) peak memory": 10.0,  # 8.7: -8.5..-9.1%, too small, since torchtitan's LM head
    # its own FSDP2 unit at 2c8b5947 (known-gaps 275 (b): the embedding and a layer fewer in the loss phase); 1.3
    # before; 4.1 before compiled per-op SAC kept no w2 output
}


run = run_fixture(p28.run_all)


def test_every_row_names_its_source_url_date_and_assumptions():
    rs = p28.rows()
    check_rows_sourced(rs, list(ph.rows()[0]), ph.MODELS, 34, ("tokens_per_s_per_gpu", "peak_memory_gib"))
    for r in rs:
        assert re.search(r"pytorch/(ao|torchtitan) ", r["source"]), r["id"]  # the repository the table is in
        # power limit / GPU count not stated (TorchAO, Scout); the DeepEP and 4-GB200 rows state their layout in full
        stated = "_dsv3_" in r["id"] or "_2026-05_" in r["id"] or "_mi300x_" in r["id"]
        assert r["confidence"] == ("medium" if stated else "low"), r["id"]
        assert not r["overlay"] or (BENCH / "data" / r["overlay"]).exists(), r["id"]


def test_every_row_is_estimated_none_refused_each_fits_and_each_source_within_its_bound(run):
    check_run(run, BOUNDS)


def test_fp8_gain_over_bf16_at_one_layout(run):
    """The recipe's gain over bf16 is what these rows measure best (the absolute rate can hang on an unstated power
    limit): on NVIDIA parts tensorwise and MXFP8 within 6% of the measured 1.20-1.25x (reached 0.3-4.0%); the B200
    RCEIL row within 8% (reached 6.5%: the MXFP8 job with the scale rounded up, 3.3% slower measured, which no job
    setting states). Since the Blackwell power-cap law (2026-12-04) the capped GEMMs are slower and the HBM-bound casts
    are not, so each B200 recipe's modelled gain rose 1.3-3 points. Rowwise, its GEMMs at the tensorwise rate as torchao
    dispatches them (known-gaps 60): H100 1.091 against 1.100 measured, MI300X 1.169 against 1.096; B200 1.198 against
    1.040 (known-gaps 57 and 60), bounded so it cannot grow unseen; MI300X tensorwise +7.7% (+18.4% before SDPA's ROCm
    attention rate: the attention both precisions share). Llama 4 Scout's MXFP8 row on 256 GB200 within 8% (reached 6.0%):
    since torch._grouped_mm's rate (gemm.grouped_mm_over_dense, known-gaps 61) its routed experts run at 0.453 of the
    dense rate in bf16 and in MXFP8 alike, so the gain 1.204 -> 1.272 against 1.200 measured; at Scout's expert shapes
    the model's MXFP8 / bf16 grouped speedup (1.55) is below TorchAO's measured 1.64-1.81, so the excess is not the
    experts' kernel ratio (benchmarks/grouped_mm.py)."""
    pairs = {rid: (meas, pred) for rid, _, meas, pred in ph.precision_pairs([(c, "", r) for c, _, r in run])}
    assert len(pairs) == 9
    for rid, (meas, pred) in pairs.items():
        off = pred / meas - 1.0
        bound = 0.20 if "_b200_" in rid and "rowwise" in rid else 0.10 if "_mi300x_" in rid else \
            0.08 if "rceil" in rid or "scout_mxfp8" in rid else 0.06
        assert abs(off) < bound, (rid, off)


def test_deepep_gain_over_the_all_to_all_at_one_layout(run):
    """DeepSeek-V3 on 512 H100: DeepEP over torchtitan's all-to-all measured 1.673x, predicted 1.794x (+7.2%): since
    NCCL's all-to-all rates (known-gaps 95) the all-to-all row is closer (+47.2 -> +42.1%) while the DeepEP row (+52.4%)
    does not move, so the gain over-shoots by what the DeepEP row is off (1.641x, -1.9%, before 98 and 95)."""
    pairs = p28.option_pairs(run, "moe_dispatcher", "flex", "alltoall")
    assert len(pairs) == 1
    (_, meas, pred), = pairs
    assert abs(pred / meas - 1.0) < 0.08


def test_dense_torchtitan_on_gb200_within_the_development_bound(run):
    """torchtitan's 2026-05 default configs on 4 GB200, dense models: Llama 3 8B and Qwen3 32B, compiled and eager,
    within 10% (reached +2.9 / -3.3 / -4.4 / +7.0%): the issue's held-out criterion met on a 2026 PyTorch stack.
    GPT-OSS 20B on the same tray: +12.0 / -1.3% (compiled / eager) since the eager run's expert biases pay their
    index_add_ (docs/known-gaps.md 196; +12.0 / +22.3% before, +45 / +75% before FlexAttention's measured rate, 52)."""
    errs = {c.row_id: c.err for c, _, _ in run if "_2026-05_gb200_" in c.row_id}
    assert len(errs) == 6
    dense = [e for rid, e in errs.items() if "gpt_oss" not in rid]
    assert len(dense) == 4 and max(abs(e) for e in dense) < 0.10
    assert all(abs(e) < 0.15 for rid, e in errs.items() if "gpt_oss" in rid)
