"""Held-out rows added 2026-12-06, twenty-ninth batch (benchmarks/perf_heldout55.py; nothing fitted on them): XTuner's
Megatron MoE benchmark of Qwen3-235B-A22B on 256 H800 and the same author's Qwen3-30B-A3B runs on 16 H800
(Pai-Megatron-Patch issue 643). Bounds = the figures measured when the rows were added, with a margin: they guard
against a regression, not an accuracy claim (docs/known-gaps.md 209)."""

from __future__ import annotations

import pytest

import perf_heldout55 as p55

SOURCES = {"xtuner_": "https://github.com/InternLM/xtuner/blob/253c42c9e/docs/zh_cn/benchmark/megatron_moe_benchmark.md",
           "paiissue643_": "https://github.com/alibaba/Pai-Megatron-Patch/issues/643"}
MAPE_BOUND = 25.0  # 19.2 at landing (209 (a)-(d))


def _source(row_id: str) -> str:
    return next(url for prefix, url in SOURCES.items() if row_id.startswith(prefix))


def test_every_row_names_its_source_code_and_assumptions():
    rows = p55.rows()
    assert len(rows) == len({r["id"] for r in rows}) == 18
    for r in rows:
        assert _source(r["id"]) in r["source"], r["id"]
        assert "2b201af" in r["source_locator"] and "2b201af" in r["assumed"], r["id"]
        assert r["date"].startswith("2025-") and r["accelerator"] == "h800-sxm-80gb", r["id"]


def test_the_tokens_rate_is_the_step_time_of_the_stated_batch():
    """tokens/s a GPU = GBS x sequence / TimePerIter / GPUs, as both sources print it (to their rounding)."""
    for r in p55.rows():
        rate = int(r["global_batch_seqs"]) * int(r["seq_len"]) / float(r["step_time_s"]) / int(r["gpu_count"])
        assert rate == pytest.approx(float(r["tokens_per_sec_per_gpu"]), rel=2e-3), r["id"]


def test_the_doc_tflops_give_megatrons_flops_a_token_of_the_model_zoo_rows():
    """The doc's TFlops/GPU over its tokens/s is the 148.04 GFLOPs a token perf_heldout45 scores the same model with."""
    for r in p55.rows():
        if r["model_tflops_per_gpu"]:
            gf = float(r["model_tflops_per_gpu"]) * 1e3 / float(r["tokens_per_sec_per_gpu"])
            assert gf == pytest.approx(p55.p45.QWEN3_235B_GFLOPS_4096, rel=1e-3), r["id"]


def test_the_jobs_state_what_the_script_runs():
    by = {r["id"]: p55.job(r) for r in p55.rows()}
    for rid, job in by.items():
        s = job["strategy"]
        assert job["hardware"]["accelerator"] == "h800-sxm-80gb" and s["framework"] == "megatron-core", rid
        assert (s["attention_kernel"], s["moe_router_fusion"]) == ("fa2", False), rid
        assert s["tp_comm_overlap"] is ("zero_tp_overlap" in rid), rid
        assert s["pipeline_embedding_layer"] is ("qwen3-235b" in rid), rid
    full = by[p55.XT + "tp1_ep8_pp32_vpp3_mbs4_full"]["strategy"]
    assert (full["recompute"], full["recompute_modules"], full["micro_batch"]) == ("full", None, 4)
    assert by[p55.XT + "tp2_ep8_pp8_select"]["strategy"]["grad_reduce_overlap"] is False
    assert by[p55.XT + "tp2_ep32_deepep_pp8_vpp4_select"]["strategy"]["moe_dispatcher"] == "flex"


def test_only_the_capacity_runs_above_one_are_refused():
    refused = [rid for rid, _ in p55.refused_rows(p55.rows())]
    assert sorted(refused) == [p55.XT + f"tp4_ep8_deepep_pp8_vpp4_capacity{c}" for c in (2, 3, 5)]


# PAI's Qwen3-30B-A3B at PP 2 x EP 8 on two H800 hosts comes out 77 MiB over the card since its communicators are
# charged as NCCL allocates them (the EP 8 all-to-all's seven NVLink peers at 16 channels each, 1.31 GiB; NCCL issue
# 892's H800 log): the run fit, so something else the estimate holds for it is over by as much (docs/known-gaps.md
# 299 (f)). Held to that near miss: any growth, or any other row, fails.
NEAR_MISS = "paiissue643_2025-08_h800_qwen3-30b-a3b_16gpu_tp1_pp2_ep8"


def test_every_scored_row_is_estimated_within_its_bound_and_fits():
    errs = p55.errors()
    assert len(errs) == 15 and 100 * abs(errs).mean() <= MAPE_BOUND
    fits = p55.fits()
    assert [f.row_id for f in fits if not f.fits] == [NEAR_MISS]
    (near,) = [f for f in fits if f.row_id == NEAR_MISS]
    assert 0 < near.predicted_gib - near.usable_gib < 100 / 1024


NOUS_URL = "https://github.com/NousResearch/torchtitan/pull/19"
TITAN_TIME_BOUND, TITAN_MEMORY_BOUND = 10.0, 8.0  # 31.0 / 60.4 at landing (209 (h), (i)), 6.6 with the blocks
# stated eager (345 (a)); memory 3.1 with 282 (a)


def test_the_titan_rows_keep_the_pretrain_columns_and_the_readmes_config():
    header = open(p55.ph.ROWS, encoding="utf-8").readline().strip().split(",")
    models = p55.ph.model_data(p55.ph.MODELS)
    rows = p55.titan_rows()
    assert len(rows) == len({r["id"] for r in rows}) == 13
    for r in rows:
        assert list(r) == header and NOUS_URL in r["source"] and "366776ace" in r["source_locator"] + r["assumed"]
        job = p55.ph.job_of(r, models)
        s = job["strategy"]
        assert (s["framework"], s["recompute"], s["ep"], s["fsdp"], job["moe_routing"]) == (
            "torchtitan", "full", 8, "full", "round-robin"), r["id"]
        assert s.get("moe_dispatcher") == ("flex" if "_deepep_" in r["id"] else None), r["id"]
        assert (s["torch_compile"], s["compile_loss"]) == (False, True), r["id"]  # 345 (a)
        assert int(r["global_batch_seqs"]) == int(r["micro_batch"]) * int(r["gpu_count"]), r["id"]


def test_the_titan_rows_are_estimated_within_their_bounds_and_fit():
    run = p55.titan_run()
    assert not [c.row_id for c, _, _ in run if c.skipped]
    time = [abs(c.err) for c, _, _ in run if c.metric == "tokens_per_s_per_gpu"]
    memory = [abs(c.err) for c, _, _ in run if c.metric == "peak_memory_gib"]
    assert (len(time), len(memory)) == (7, 6)
    assert 100 * sum(time) / len(time) <= TITAN_TIME_BOUND and 100 * sum(memory) / len(memory) <= TITAN_MEMORY_BOUND
    assert all(res["memory"]["fits"] for _, res, _ in run)


def test_the_forks_moe_blocks_ran_eager_under_full_ac_and_that_is_the_time_the_rows_lacked():
    """345 (a): the fork's base (torchtitan 7b96efc8e) compiles each checkpoint-wrapped MoE block whole and shards the
    routed experts apart under EP 8; the graph break at their FSDP hooks inside the checkpointed region sends the whole
    block to eager (torchtitan PR 1895, 2a7a14841, after the base). Stated eager, the DeepEP rows sit within 6%; read
    as compiled (what the config asks for) the same rows come out 20-35% fast, as they did before 345."""
    rows = [r for r in p55.titan_rows() if r["metric"] == "tokens_per_s_per_gpu"]
    models = p55.ph.model_data(p55.ph.MODELS)
    for r in rows:
        assert "2a7a14841" in r["assumed"] and "7b96efc8e" in r["assumed"], r["id"]
        if "_deepep_" not in r["id"]:
            continue
        eager, _ = p55.ph.estimate_row(r, models, {}, p55.ph.predicted_metric)
        compiled = dict(r, strategy_extra=r["strategy_extra"].replace("torch_compile=false", "torch_compile=true"))
        fused, _ = p55.ph.estimate_row(compiled, models, {}, p55.ph.predicted_metric)
        assert abs(eager.err) < 0.06 and 0.20 < fused.err < 0.35, (r["id"], eager.err, fused.err)


def test_what_shards_falls_alike_and_what_grows_with_the_batch_is_charged():
    """From 8 to 128 GPUs the measured and predicted reserved peaks fall alike (the FSDP-sharded states); what the
    estimate lacked at every scale, one figure growing with the local batch (209 (i)), was the re-run graphs the fork's
    DeepEP manager holds through its kept router output (moe_router_output_held, 282 (a)): each row within 6%, and
    the rise from local batch 8 to 10 within 10%."""
    mem = {c.row_id: c for c, _, _ in p55.titan_run() if c.metric == "peak_memory_gib"}
    one, all16, lbs10 = (mem[p55.NOUS + f"deepep_ep8_{k}gpu_peak_memory"] for k in ("lbs8_8", "lbs8_128", "lbs10_128"))
    assert (one.measured - all16.measured) == pytest.approx(one.predicted - all16.predicted, rel=0.15)
    assert all(abs(c.predicted / c.measured - 1.0) < 0.06 for c in mem.values())
    assert lbs10.predicted - all16.predicted == pytest.approx(lbs10.measured - all16.measured, rel=0.1)


def test_capacity_1_leaves_no_rank_above_the_balanced_share():
    """209 (a) / 217 (a): Megatron-Core drops per source rank before the dispatch (topk_softmax_with_capacity at
    Megatron-LM 6a6cd478), so at factor 1 the busiest EP rank receives the balanced share and at 2 twice it."""
    r = next(r for r in p55.rows() if r["id"].endswith("_capacity1"))
    tokens, cap, busiest, balanced = p55.capacity_bound(r)
    assert (tokens, cap) == (1024, 64)  # 4,096 tokens over TP 4 under sequence parallelism; 1,024 x 8 / 128
    assert busiest == balanced == 8192
    two = next(r for r in p55.rows() if r["id"].endswith("_capacity2"))
    assert p55.capacity_bound(two)[2] == 2 * balanced


def test_the_predicted_deepep_gain_splits_into_comm_and_the_host_figure():
    import re

    line = p55.dispatcher_split_lines(p55.cases())[1]
    measured, predicted, comm, host = (float(v) for v in re.findall(
        r"measured ([\d.]+), predicted ([\d.]+) = comm ([\d.]+) x host figure ([\d.]+)", line)[0])
    assert measured == pytest.approx(644.92 / 923.53, abs=1e-3)
    assert comm * host == pytest.approx(predicted, abs=2e-3)
    assert 1.0 < comm < predicted and host > 1.0  # one copy a rank and the Grace-derived flex figure both gain


def test_the_layer_floor_is_read_on_intra_host_alltoall_rows_only():
    """217 (c): layer_floor takes the all-to-all at the link's full rate only where it is NCCL's inside one host."""
    by = {r["id"]: r for r in p55.rows()}
    assert p55.layer_floor(by[p55.XT + "tp2_ep32_pp8_vpp4_select"]) is None  # four hosts
    assert p55.layer_floor(by[p55.XT + "tp4_ep8_deepep_pp8_vpp4_capacity1"]) is None  # DeepEP
    measured, left, predicted = p55.layer_floor(by[p55.XT + "tp1_ep8_pp32_vpp3_mbs8_full"])
    assert 0.0 < left < measured and predicted > 0.0
    assert len(p55.layer_floor_lines()) == 12  # 10 XTuner rows + the two issue-643 rows
