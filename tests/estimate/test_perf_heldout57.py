"""Held-out rows added 2026-12-06, thirty-first batch (benchmarks/perf_heldout57.py; nothing fitted on them): nanotron's
Ultra-Scale Playbook scaling benchmarks on H100, 1.34B-80B models on 1-64 nodes, MFU of each cell's best layout.
Bounds = the figures measured when the rows were added, with a margin: they guard against a regression, not an
accuracy claim (docs/known-gaps.md 220)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import perf_heldout as ph
import perf_heldout57 as p57
from harness import mape

from .heldout_rows import check_columns_and_ids, run_fixture

ALL_BOUND = 40.0  # 35.6 at landing (220 (a)-(d)); 33.3 with the ZeRO-1 rows' all-reduce stated (224)
# 8.4 at landing, 8.9 with zero1_grad_allreduce (224): the eleven single-TP rows, the layouts the estimate's DP and PP
# terms alone carry
TP1_BOUND = 12.0


run = run_fixture(p57.run_all)


def test_every_row_names_the_figure_commit_cell_and_assumptions():
    rs = p57.rows()
    check_columns_and_ids(rs, ph.ROWS, 26, more=True)  # perf_heldout.job_of reads these columns
    for r in rs:
        assert "huggingface/nanotron/blob/c252843039cc167ff8d6894b87172af4637eb14b/" in r["source"], r["id"]
        assert r["source_locator"].startswith("left panel") and r["date"] == "2025-02-13" and r["assumed"], r["id"]
        assert 0 < float(r["value"]) < 100 and float(r["figure_memory_gb"]) > 0, r["id"]


def test_every_cell_trains_256_sequences_of_4096_on_whole_nodes():
    """The figure's DP x GAS x MBS is 256 in every cell (the script's 1M-token batch); DP x TP x PP fills the nodes."""
    for r in p57.rows():
        job = ph.job_of(r, p57.models())
        s = job["strategy"]
        assert (job["seq_len"], job["global_batch"]["sequences"], job["precision"]) == (4096, 256, "bf16"), r["id"]
        assert job["hardware"]["count"] % 8 == 0 and s["recompute"] == "none", r["id"]
        assert s.get("zero", 0) in (0, 1) and s["grad_reduce_in_fp32"], r["id"]
        assert (s.get("grad_reduce_overlap") is False) == (s.get("zero", 0) == 1), r["id"]


def test_two_stage_rows_state_nanotrons_compute_balanced_split():
    """PP 2 rows carry nanotron's own split (build_model over get_block_compute_costs); 1.34B: 11 / 5 layers."""
    archs = p57.models()
    for r in p57.rows():
        if r["pp"] != "2":
            continue
        m = archs[r["model"]]["model"]
        s = ph.job_of(r, archs)["strategy"]
        split = p57.nanotron_split(m["layers"], m["hidden"], m["heads"], m["ffn"], m["vocab"], 2)
        assert [s["pp_first_stage_layers"], s["pp_last_stage_layers"]] == split, r["id"]
    assert p57.nanotron_split(16, 2048, 32, 8192, 131072, 2) == [11, 5]


def test_deeper_pipelines_state_every_ranks_layers_as_nanotron_builds_them():
    """PP 4-32 rows carry nanotron's per-rank split in pp_stage_layers (its middle ranks uneven: 9 / 9 / 8 / 6 for
    the 8.86B at PP 4, 6 / 5 x 13 / 6 / 3 for the 80B at PP 16), as their `assumed` says."""
    archs = p57.models()
    deep = [r for r in p57.rows() if int(r["pp"]) > 2]
    assert len(deep) == 5
    for r in deep:
        m = archs[r["model"]]["model"]
        s = ph.job_of(r, archs)["strategy"]
        split = p57.nanotron_split(m["layers"], m["hidden"], m["heads"], m["ffn"], m["vocab"], int(r["pp"]))
        assert list(s["pp_stage_layers"]) == split, r["id"]
        assert " / ".join(map(str, split)) in r["assumed"] and "(stated: pp_stage_layers)" in r["assumed"], r["id"]
    assert p57.nanotron_split(32, 4096, 32, 14336, 131072, 4) == [9, 9, 8, 6]


@given(layers=st.integers(1, 96), pp=st.integers(1, 8), vocab=st.sampled_from([32000, 131072]))
def test_nanotrons_split_places_every_layer_once_in_order(layers, pp, vocab):
    counts = p57.nanotron_split(layers, 1024, 16, 4096, vocab, pp)
    assert len(counts) == pp and sum(counts) == layers and min(counts) >= 0


def test_mfu_is_the_estimated_step_over_nanotrons_flops(run):
    """nanotron's get_flops is NeMo's Llama sum; the predicted MFU is those FLOPs over the estimated step and H100's
    989.4 TFLOP/s: MFU x step is the same for every row of one model and GPU count (the work a GPU does a step)."""
    for c, res, r in run:
        step = res["time"]["step_s"]
        gpus = int(r["gpu_count"])
        flops = float(res["time"]["model_flops_per_step"])
        assert c.predicted == pytest.approx(100 * flops / step / gpus / 989.4e12, rel=0.02), r["id"]


def test_the_batch_stays_within_its_bounds(run):
    cs = [c for c, _, _ in run if not c.skipped]
    assert len(cs) == 26
    assert mape(cs) < ALL_BOUND
    tp1 = [c for c, _, r in run if r["tp"] == "1"]
    assert len(tp1) == 11 and mape(tp1) < TP1_BOUND


def test_zero1_rows_state_nanotrons_gradient_all_reduce():
    """nanotron's ZeRO-1 with fp32 accumulation all-reduces the whole fp32 gradient buffer (trainer.training_step
    reduce_scatter=False at 0e0a27ea): every ZeRO-1 row states it, no ZeRO-0 row does (torch DDP reduces there)."""
    for r in p57.rows():
        extra = r["strategy_extra"]
        assert ("zero1_grad_allreduce=true" in extra) == ("zero=1;" in extra), r["id"]


INTERNLM_BOUND = 16.0  # 8.5 at landing (220 (g), (h)); 13.x with the ZeRO-1 group stated (228)


internlm = run_fixture(p57.internlm_run, "internlm")


def test_internlm_rows_are_the_tables_cells():
    """22 rows of the doc's two FLOPS tables: tokens a step = GPUs x micro_bsz x micro_num x 2,048 as the table's
    Global Bsz prints it; TP 1, 2,048, bf16, recompute full exactly where Activation Ckpt is TRUE."""
    rs = p57.internlm_rows()
    assert len({r["id"] for r in rs}) == len(rs) == 22
    for r in rs:
        job = ph.job_of(r, p57.internlm_models())
        s = job["strategy"]
        printed = r["source_locator"].split(" | ")[8]
        tokens = job["global_batch"]["sequences"] * job["seq_len"]
        assert tokens / 2**20 == pytest.approx(float(printed[:-1])), r["id"]
        assert (job["seq_len"], s["tp"], job["precision"]) == (2048, 1, "bf16"), r["id"]
        assert s["recompute"] == ("full" if "| TRUE | TRUE |" in r["source_locator"] else "none"), r["id"]
        assert not s.get("grad_reduce_in_fp32") and s["grad_bucket_params"] == 512 * 1024 * 1024, r["id"]
        # zero1 8: ZeRO-1 over a node's 8 GPUs, the gradients all-reduced over all of DP (228)
        assert (s["zero"], s["shard_group"], s["zero1_grad_allreduce"]) == (1, 8, True), r["id"]
        assert "c18bec9361684189aadf6ffb724f9dfe48288eb0" in r["source"], r["id"]


def test_internlm_within_its_bound_fits_and_zero0_would_not(internlm):
    """Every run fits as stated (the states sharded over the node); each GPU steps on 1/8 of the states whatever the
    GPU count, and the parameters are gathered over NVLink: the stated reading is faster than zero 0 (a full step)
    and, beyond one node, than ZeRO-1 over all of DP (its all-gather across hosts) (220 (h), 228)."""
    cs = [c for c, _, _ in internlm if not c.skipped]
    assert len(cs) == 22 and mape(cs) < INTERNLM_BOUND
    assert all(res["memory"]["fits"] for _, res, _ in internlm)
    steps = {res["time"]["breakdown_s"]["optimizer"] for _, res, _ in internlm}
    assert max(steps) == pytest.approx(min(steps), rel=1e-9)
    rows = {r["id"]: r for _, _, r in internlm}
    for rid, stated, whole, zero0 in p57.internlm_readings(internlm):
        assert stated > zero0
        if int(rows[rid]["gpu_count"]) > 8:
            assert stated > whole, rid


def test_internlm_pairs_differ_by_one_quantity_of_work(internlm):
    """Each pair holds the GPU count and the recompute setting and grows one unit (micro-batches a step, or
    sequences in the one micro-batch); the one-host rows share their pair's recompute setting (known-gaps 237)."""
    rs = {r["id"]: r for r in p57.internlm_rows()}
    for _, a, b, ua, ub in p57.INTERNLM_PAIRS:
        ra, rb = rs[a], rs[b]
        assert (ra["gpu_count"], ra["recompute"]) == (rb["gpu_count"], rb["recompute"]) and ua < ub
        grows = [k for k in ("micro_batch", "global_batch_seqs") if ra[k] != rb[k]]
        assert grows and int(rb["global_batch_seqs"]) * ua == int(ra["global_batch_seqs"]) * ub, (a, b)
    for rid, k, _ in p57.INTERNLM_ONE_HOST:
        assert rs[rid]["gpu_count"] == "8" and rs[rid]["recompute"] == rs[p57.INTERNLM_PAIRS[k][1]]["recompute"]
    lines = p57.internlm_pair_lines(internlm)
    assert len(lines) == len(p57.INTERNLM_PAIRS) + len(p57.INTERNLM_ONE_HOST)


def test_every_deep_pipeline_is_read_a_slot(run):
    """slot_lines reads each PP >= 4 row: the step less DP and optimizer over m + p - 1 slots."""
    lines = p57.slot_lines(run)
    assert len(lines) == len([r for r in p57.rows() if int(r["pp"]) >= 4]) == 5
