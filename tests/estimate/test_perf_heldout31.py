"""Held-out rows added 2026-12-04, sixth batch (benchmarks/perf_heldout31.py; nothing fitted on them): DeepSpeed's
DeepCompile benchmark (HF Llama-3-70B and Mixtral-8x7B on 32 H100 through accelerate: DeepSpeed ZeRO-3 and FSDP1,
2025-04) and IBM / PyTorch FMS-FSDP (Llama 2 7B / 34B / 70B on 128 A100 and 96 H100, 2024). Bounds = the figures
measured when the rows were added, with a margin: the HF rows on 32 H100 come out far too fast (docs/known-gaps.md 69),
so their bounds guard against a regression, not an accuracy claim; FMS-FSDP's are held at the development bound."""

from __future__ import annotations

import pytest

import perf_heldout as ph
import perf_heldout31 as p31

from .heldout_rows import check_rows_sourced, check_run, run_fixture

# source -> MAPE bound (%); reached at landing in the comment
BOUNDS = {
    # DeepSpeed's ZeRO-3 step passes, the script's foreach AdamW and the micro-batch edges (known-gaps 91): 40.9 -> 37.4,
    # +14.7..+48.6%; the reduce stream's gradient copies (known-gaps 114): 23.2, +13.3..+31.4%
    "DeepCompile benchmark, ZeRO-3 (32 H100, HF Llama-3-70B)": 30.0,
    # checkpoint_impl reentrant_outer (known-gaps 70): 56.9 -> 15.6 -> 14.1 (foreach AdamW, 91) -> 10.3 (FSDP1's
    # gradient pre-divide, 114), +5.7..+13.6%
    "DeepCompile benchmark, FSDP (32 H100, HF Llama-3-70B)": 20.0,
    # DeepSpeed's engine (known-gaps 74) and its per-expert module gathers (strategy.zero3_expert_fetch per_expert,
    # known-gaps 75): 149.5 -> 109.9 -> 60.8 -> 55.8 (91) -> 35.4 (the gradient copies, 114), +34.4..+36.4%; with the
    # micro-batch 2 / 4 rows 39.2%, +33.7..+55.7% (known-gaps 150 (b): at 4-8K tokens the estimate hides what is not);
    # the pads routed to one pair of experts (pad_share, known-gaps 161): 33.7%, +32.8..+37.3%
    # with the accumulation sweep's 2-16-step bars (known-gaps 206 (d)): 32.1% over 13 rows, +18.7..+44.2%; the hooks on
    # the experts' own modules timed between the eager loop's syncs (known-gaps 283 (b)): 23.3 -> 12.1%, +7.8..+21.8%;
    # the pad-routed light experts' passes at their own tokens (283 (d)): 11.0%, +1.1..+23.0%
    "DeepCompile benchmark, ZeRO-3 (32 H100, HF Mixtral-8x7B)": 20.0,
    # 114.2 -> 46.9 -> 43.8 -> 36.4: +33..+42% (69 (b), 71, 91, 114); with the micro-batch 2 / 4 rows (known-gaps 150)
    # 36.3 -> 22.7, +17.9..+25.7%: the eager expert loop's host syncs leave FSDP1 no run-ahead to prefetch with;
    # 19.2%, +15.4..+23.6% at the padded rows' expert token counts (known-gaps 161); the queue's refill after each
    # expert's sync (known-gaps 283 (a)): 9.6 -> 8.3%, +2.3..+13.3%; the pre-backward hook after the recompute's last
    # sync (283 (e)): 7.9%, +2.1..+12.7%
    "DeepCompile benchmark, FSDP (32 H100, HF Mixtral-8x7B)": 15.0,
    "FMS-FSDP blog (128 A100, eager)": 10.0,  # 9.1: -9.5..+13.7%
    "FMS-FSDP blog (96 H100, eager)": 10.0,  # 8.9: -1.0..+24.5%
    "FMS-FSDP README (compiled)": 10.0,  # 9.1: +3.9 / +14.3%
}


run = run_fixture(p31.run_all)


def test_every_row_names_its_source_url_date_and_assumptions():
    check_rows_sourced(p31.rows(), list(ph.rows()[0]), ph.MODELS, 50, ("tokens_per_s_per_gpu",))


def test_every_row_is_estimated_none_refused_every_run_fits_and_each_source_within_its_bound(run):
    check_run(run, BOUNDS)


def test_zero3_over_fsdp_at_one_layout(run):
    """The Llama-3-70B runs measure DeepSpeed ZeRO-3 4.7-7.9% faster than accelerate's FSDP1 at every layout. The FSDP
    rows' reentrant checkpoint around each unit (checkpoint_impl reentrant_outer) exposes the backward's gathers, which
    DeepSpeed's traced prefetch keeps hidden in the estimate; DeepSpeed's reduce stream copies every gradient three
    times before its reduce-scatter and FSDP1 divides each unit's gradient once in place (known-gaps 114); DeepSpeed
    issues about five gathers a layer where FSDP1 issues one, and each waits behind the running GEMM on a chain the
    compute cannot hide (known-gaps 144): predicted 0.99-1.14x (1.10-1.25 before 144, 1.13-1.35 before 114), ZeRO-3
    now a little slow at the smallest sizes (docs/known-gaps.md 70 (c), 114, 144). Mixtral's ZeRO-3 runs are 7-20% slower than FSDP's (69 (b));
    DeepSpeed's 24 expert gathers a layer, each behind only the previous expert linear's compute (known-gaps 75), and
    the copies bring the predicted ratio from 1.41-1.52 to 0.82-0.90 (with DeepSpeed's engine, 74: 0.90-0.99). FSDP1's
    gathers lose the CPU's run-ahead behind the eager loop's host syncs (known-gaps 150): 0.86-1.01 at 512-2,048 tokens
    a GPU (measured 0.80-0.93), and ZeRO-3 the faster from 4,096 tokens on (1.20-1.31), where the two measure the same
    (0.99-1.00): what hides DeepSpeed's gathers there in the estimate is not what the runs show (known-gaps 150 (b)).
    The rows' padding routes to one pair of experts, whose GEMMs hide only their own share of the one-linear-ahead
    chain (known-gaps 161): 1.10-1.16 there, 0.88-1.07 at 512-2,048 tokens (0.875-1.04 before the rows stated the
    padded batch's mask, whose full-square attention is a larger share of FSDP1's shorter step: known-gaps 181); the
    rest is 161 (a). FSDP1's weight-gradient cat on the compute stream (known-gaps 192) slows FSDP1 alone: 0.92-1.11
    at 512-2,048 tokens, 1.13-1.20 above, Llama 1.04-1.17; the gap is now ZeRO-3's (192 (c) (a)). DeepSpeed's hooks on
    the host (262) hold ZeRO-3's short micro-batches: 0.84-1.04 at 512-2,048 tokens a GPU (mbs 1). With the hooks on
    the experts' modules between the loop's syncs (283 (b)) and the pad-routed light experts' host-bound passes timed
    at their own tokens (283 (d)): 0.81-0.97 at 512-2,048 tokens (measured 0.80-0.93) and 0.97-0.98 from 4,096 on
    (measured 0.99-1.00): 150 (b)'s gap closed."""
    pairs = p31.zero3_over_fsdp(run)
    assert len(pairs) == 17
    llama = [(meas, pred) for rid, meas, pred in pairs if "llama3" in rid]
    assert all(1.04 < meas < 1.09 and 0.95 < pred < 1.2 for meas, pred in llama)
    mixtral = {rid: (meas, pred) for rid, meas, pred in pairs if "mixtral" in rid}
    assert len(mixtral) == 9 and all(0.79 < meas < 1.01 for meas, _ in mixtral.values())
    small = [pred for rid, (_, pred) in mixtral.items() if "mbs1" in rid]  # 512-2,048 tokens a GPU
    assert all(0.8 < pred < 1.12 for pred in small) and small == sorted(small)  # ZeRO-3 gains on FSDP as tokens grow
    large = {rid: v for rid, v in mixtral.items() if "s2048" in rid and "mbs1" not in rid or "mbs4_s1024" in rid}
    assert len(large) == 3  # 4-8K tokens a GPU (1.20-1.31 before 161, 1.0-1.2 before 283 (d))
    assert all(abs(pred - meas) < 0.05 for meas, pred in large.values())


def test_mixtral_zero3_accumulation_sweep_pays_its_cost_every_micro_batch(run):
    """The Mixtral-8x7B ZeRO-3 accumulation sweep (1,024 tokens, 1-16 micro-batches a step; known-gaps 206) measures
    2.13 s a micro-batch at one step and 2.02 s at 16: a step's own share is about 0.12 s, so what the estimate misses
    at one step (about 0.53 s) is paid every micro-batch, not once a step. The estimate's per-step share agrees, and
    its miss a micro-batch stays within 0.1 s from 1 to 16 micro-batches (the 2-step bar, low for all three engines
    of the chart, aside)."""
    def per_mb(acc: int) -> tuple[float, float]:
        rid = f"dc_2025-04_h100_mixtral-8x7b_zero-3_mbs1_s1024_acc{acc}"
        case = next(c for c, res, r in run if r["id"] == rid and res)
        return 1024.0 / case.measured, 1024.0 / case.predicted

    (m1, p1), (m16, p16) = per_mb(1), per_mb(16)
    assert 0.0 < m1 - m16 < 0.15 and 0.0 < p1 - p16 < 0.15
    assert abs((m16 - p16) - (m1 - p1)) < 0.1
    for acc in (4, 8):
        m, p = per_mb(acc)
        assert abs((m - p) - (m1 - p1)) < 0.1


def test_mixtral_zero3_miss_in_seconds_is_flat_in_the_tokens(run):
    """Read in seconds a micro-batch (benchmarks/perf_heldout31.seconds_per_micro_batch), what the estimate missed on
    the nine Mixtral-8x7B ZeRO-3 layouts (512 to 8,192 tokens a GPU) sat within 0.05 s of 0.55 s while its compute
    grows ninefold, and FSDP1's within 0.1 s: a cost paid every micro-batch and flat in the tokens (docs/known-gaps.md
    215). With DeepSpeed's hooks counted on the host (262: 1.44 s a micro-batch, blended with the GPU's time) and the
    hooks on the experts' own modules timed between the loop's syncs, outside the blend (docs/known-gaps.md 283 (b)),
    and the pad-routed light experts' passes timed at their own tokens (283 (d)), the six layouts up to 2,048 tokens a
    GPU miss 0.2-0.3 s, the three at 4,096-8,192 tokens 0.0-0.1 s, each within 0.12 s of FSDP1's miss at the same
    layout: a cost common to both engines (262 (b)). FSDP1's 0.05-0.19 s, within 0.15 s of each other, the
    8,192-token layout's the least since the loop's whole-input gradients and its glue beyond the permutation, which
    grow with the tokens, are charged (docs/known-gaps.md 273 (a), 317 (d); within 0.13 s before the glue). ZeRO-3 less FSDP1 in seconds (zero3_minus_fsdp_s) agrees in sign with
    the rate ratio at every layout."""
    sec = {rid: (meas, pred) for rid, meas, pred in p31.seconds_per_micro_batch(run)}
    for row_id, (meas, pred) in sec.items():
        case = next(c for c, res, r in run if r["id"] == row_id)
        tokens = meas * case.measured
        assert tokens == pytest.approx(pred * case.predicted)
    fsdp = {rid: meas - pred for rid, (meas, pred) in sec.items()
            if "mixtral-8x7b_fsdp_" in rid and rid.endswith("_acc1")}
    assert len(fsdp) == 9 and max(fsdp.values()) - min(fsdp.values()) < 0.15
    zero3 = {rid: meas - pred for rid, (meas, pred) in sec.items()
             if "mixtral-8x7b_zero-3_" in rid and rid.endswith("_acc1")}
    assert len(zero3) == 9
    large = {"mbs2_s2048", "mbs4_s1024", "mbs4_s2048"}  # 4,096-8,192 tokens a GPU
    for rid, d in zero3.items():
        assert (0.0 < d < 0.1 if any(k in rid for k in large) else 0.2 < d < 0.3)
        assert abs(d - fsdp[rid.replace("_zero-3_", "_fsdp_")]) < 0.12
    ratios = {rid: (meas, pred) for rid, meas, pred in p31.zero3_over_fsdp(run)}
    diffs = p31.zero3_minus_fsdp_s(run)
    assert len(diffs) == len(ratios) == 17
    for rid, dmeas, dpred in diffs:
        rmeas, rpred = ratios[rid]
        assert (dmeas > 0) == (rmeas < 1.0) or abs(dmeas) < 1e-3
        assert (dpred > 0) == (rpred < 1.0) or abs(dpred) < 1e-3


def test_zero3_rows_against_the_estimates_serial_sum(run):
    """Against the estimate's serial sum (perf_heldout31.serial_seconds: a micro-batch with none of ZeRO-3's chain
    hidden behind compute), the Llama-3-70B ZeRO-3 rows run 0.18-1.06 s faster (their overlap is real). The
    Mixtral-8x7B rows (nine layouts and the accumulation sweep) ran 0.19-0.73 s slower than the sum before the hooks on
    the experts' own modules were timed between the loop's syncs (docs/known-gaps.md 226, 262 (a)); those segments are
    serial by construction and now in the sum (docs/known-gaps.md 283 (b), (d)), and the rows sit within -0.33..+0.15 s
    of it: the eager loop's syncs, not a floor apart from it, were what the rows implied. The host time
    the estimate counts for DeepSpeed's hooks and the layers' own issue (262: 1.44 s a Mixtral micro-batch, 1.15 s a
    Llama one) is under every Llama row's sum (no floor binds there)."""
    serial = p31.serial_seconds(p31.rows())
    assert len(serial) == 25
    sec = {rid: meas for rid, meas, _ in p31.seconds_per_micro_batch(run)}
    llama = [sec[rid] - s for rid, (s, _) in serial.items() if "llama3-70b" in rid]
    mixtral = {rid: sec[rid] - s for rid, (s, _) in serial.items() if "mixtral" in rid}
    assert all(h < s for rid, (s, h) in serial.items() if "llama3-70b" in rid)
    assert len(llama) == 12 and all(-1.1 < d < -0.15 for d in llama)
    assert len(mixtral) == 13 and all(-0.35 < d < 0.16 for d in mixtral.values())
