"""Held-out rows added 2026-12-07, fifty-second batch (benchmarks/perf_heldout78.py; nothing fitted on them): NVIDIA's
dgxc-benchmarking v25.05 Nemotron-4 tables (NeMo 25.04): the 340B on 128-512 GB200, BF16 and FP8, weak scaling (global
batch GPUs / 4) and strong scaling (global batch 512), and the 15B / 340B on 16 / 256 H100; Together AI's 2026-04 runs
of dgxc's later Nemotron-4 recipes on its B200 cluster (the 15B in NeMo 26.02, the 340B in NeMo 25.07.01).
Bounds = the figures measured when the rows were added, with a margin: they guard against a regression, not an accuracy
claim (docs/known-gaps.md 336)."""

from __future__ import annotations

import re

import perf_heldout as ph
import perf_heldout78 as p78

from .heldout_rows import check_columns_and_ids, check_source_bounds, run_fixture

run = run_fixture(p78.run_all)
WEAK, STRONG, H100, TOGETHER = (p78.SOURCES[i][1] for i in range(4))
KEYS = {WEAK: "dgxc-benchmarking v25.05 Nemotron-4 340B, NeMo 25.04 (GB200, weak scaling)",
        STRONG: "dgxc-benchmarking v25.05 Nemotron-4 340B, NeMo 25.04 (GB200, strong scaling)",
        H100: "dgxc-benchmarking v25.05 Nemotron-4 15B / 340B, NeMo 25.04 (H100)",
        TOGETHER: "Together AI B200, dgxc-benchmarking Nemotron-4 recipes (2026-04)"}
# dgxc-benchmarking v25.05.05 nemotron/README.md, as printed: (system, scaling or size, precision) -> {GPUs: (step s,
# tokens/s)}; the GB200 tables' 'GB200 Performance' (weak: GBS GPUs / 4; strong: GBS 512), 'H100 Performance' (GBS 64)
README = {("gb200", "weak", "bf16"): {128: (2.189, 59877), 256: (2.19, 119700), 512: (2.229, 235212)},
          ("gb200", "weak", "fp8"): {128: (1.483, 88383), 256: (1.517, 172804), 512: (1.549, 338468)},
          ("gb200", "strong", "bf16"): {128: (32.66, 64211), 256: (16.58, 126486), 512: (8.468, 247656)},
          ("gb200", "strong", "fp8"): {128: (21.83, 96067), 256: (11.21, 187078), 512: (5.668, 369998)},
          ("h100", "15b", "bf16"): {16: (2.746, 95463)}, ("h100", "15b", "fp8"): {16: (1.988, 131863)},
          ("h100", "340b", "bf16"): {256: (4.606, 56913)}, ("h100", "340b", "fp8"): {256: (3.107, 84372)}}
# The README's 'Model flops utilization' line of each cell (its peaks: GB200 2.45 / 4.9 PFLOP/s, H100 989 / 1979
# TFLOP/s in BF16 / FP8), in README order
MFU_PCT = {("gb200", "weak", "bf16"): (40.2, 40.2, 39.4), ("gb200", "weak", "fp8"): (29.7, 28.9, 28.4),
           ("gb200", "strong", "bf16"): (43.0, 42.4, 41.5), ("gb200", "strong", "fp8"): (32.2, 31.4, 31.0),
           ("h100", "15b", "bf16"): (56.7,), ("h100", "15b", "fp8"): (39.1,),
           ("h100", "340b", "bf16"): (47.3,), ("h100", "340b", "fp8"): (35.0,)}
PEAK = {("gb200", "bf16"): 2.45e15, ("gb200", "fp8"): 4.9e15, ("h100", "bf16"): 989e12, ("h100", "fp8"): 1979e12}
GB_ID = re.compile(r"heldout_2027z_dgxc_gb200_(weak|strong)_nemotron4_340b_(bf16|fp8)_gbs(\d+)_(\d+)gpu")
H_ID = re.compile(r"heldout_2027z_dgxc_h100_nemotron4_(15b|340b)_(bf16|fp8)_(\d+)gpu")
# Together's files as printed: the 15B's (precision, TP, GBS, GPUs) -> (step s, TFLOP/s a GPU) (results.md, the BF16
# steps REPORT_BF16.md's means); the 340B's precision -> TFLOP/s a GPU (OFFICIAL_BASELINES.md, GBS 64 on 256 GPUs)
T15 = {("bf16", 1, 256, 64): (0.9302, 1570.4), ("bf16", 1, 1024, 256): (1.0149, 1439.4),
       ("fp8", 1, 256, 64): (0.763, 1916), ("fp8", 1, 512, 256): (0.457, 1594), ("fp8", 1, 1024, 256): (0.813, 1798),
       ("fp8", 1, 2048, 256): (1.535, 1904), ("fp8", 1, 2560, 256): (1.899, 1923),
       ("fp8", 2, 512, 256): (0.558, 1308), ("fp8", 2, 1024, 256): (1.063, 1375)}
T340 = {"bf16": 936.33, "fp8": 1101.1}
T_ID = re.compile(r"heldout_2027z_together_b200_nemotron4_(15b|340b)_(bf16|fp8)_(?:tp(\d)_)?gbs(\d+)_(\d+)gpu")


def _dgxc(rs: list[dict]) -> list[dict]:
    return [r for r in rs if not r["id"].startswith(TOGETHER)]


def _key(rid: str) -> tuple[tuple[str, str, str], int, int]:
    """(README table key, global batch, GPUs) of a row id."""
    if m := GB_ID.fullmatch(rid):
        scaling, precision, gbs, gpus = m.groups()
        return ("gb200", scaling, precision), int(gbs), int(gpus)
    size, precision, gpus = H_ID.fullmatch(rid).groups()
    return ("h100", size, precision), 64, int(gpus)


def test_every_row_names_its_source_locator_and_assumptions():
    rs = p78.rows()
    check_columns_and_ids(rs, ph.ROWS, 27, more=True)  # perf_heldout.job_of reads these columns, then method, refused
    for r in rs:
        assert r["source_key"] == KEYS[next(p for p in KEYS if r["id"].startswith(p))], r["id"]
        assert not r["refused"] and "not stated" in r["assumed"], r["id"]
        if r["id"].startswith(TOGETHER):
            assert r["source_locator"].startswith("togethercomputer/together-dgxc-benchmarking commit d275be99"), r["id"]
            assert r["date"] == "2026-04-13" and r["accelerator"] == "b200" and r["network"] == "ib-ndr400", r["id"]
            assert r["confidence"] == ("low" if "_tp2_" in r["id"] else "medium"), r["id"]
            continue
        assert r["source"] == "NVIDIA DGX Cloud benchmarking recipes (NVIDIA/dgxc-benchmarking)", r["id"]
        assert r["source_locator"].startswith("NVIDIA/dgxc-benchmarking commit c5c765f (release v25.05.05"), r["id"]
        assert "nemotron/README.md" in r["source_locator"] and r["date"] == "2025-10-22", r["id"]
        assert r["confidence"] == "high" and not r["refused"] and "not stated" in r["assumed"], r["id"]
        assert "NeMo b4148d21" in r["assumed"] and "nemo:25.04.00" in r["assumed"], r["id"]


def test_each_row_is_a_readme_figure_once():
    """Each row: the README's tokens/s over the GPUs, which is 4,096 x the global batch over its step; every table
    cell once."""
    seen = set()
    for r in _dgxc(p78.rows()):
        key, gbs, gpus = _key(r["id"])
        step, tokens_s = README[key][gpus]
        assert abs(float(r["value"]) * gpus / tokens_s - 1) < 1e-4, r["id"]
        assert abs(4096 * gbs / step / tokens_s - 1) < 2e-3, r["id"]
        assert f"step time {step} s, throughput {tokens_s} tokens/s" in r["source_locator"], r["id"]
        assert r["metric"] == "tokens_per_s_per_gpu" and int(r["global_batch_seqs"]) == gbs, r["id"]
        seen.add((key, gpus))
    assert len(seen) == 16 == sum(len(v) for v in README.values())


def test_the_models_shapes_give_the_readmes_mfu():
    """The README's model FLOPs (its Notes: s x (12 L h^2 (1 + g/a + s/h) + 12 L h ffn + 6 V h) a sequence) on the shape
    of heldout_models.yaml's nemotron-4-15b / -340b, over each cell's step and the README's peak, give the README's MFU
    line within 0.1 point (the README rounds some cells and cuts others: 43.10 printed 43.0, 40.19 printed 40.2):
    the rows' model is the run's."""
    models = p78.models()
    for r in _dgxc(p78.rows()):
        key, gbs, gpus = _key(r["id"])
        m = models[r["model"]]["model"]
        L, h, s = m["layers"], m["hidden"], int(r["seq_len"])
        flops = s * (12 * L * h * h * (1 + m["kv_heads"] / m["heads"] + s / h) + 12 * L * h * m["ffn"]
                     + 6 * m["vocab"] * h)
        step = README[key][gpus][0]
        mfu = 100 * gbs * flops / step / gpus / PEAK[(key[0], key[2])]
        assert abs(mfu - MFU_PCT[key][sorted(README[key]).index(gpus)]) < 0.1, (r["id"], mfu)


def test_the_gb200_rows_hold_the_launch_layout():
    """launch.sh at v25.05.05 (GPU_TYPE gb200, MODEL_SIZE 340b): TP 8, PP 4, CP 1, VP 12, MBS 1, GBS GPUs / 4 or 512
    under STRONG_SCALING, -fsdp 0, --cuda_graphs true (Megatron-Core per-layer graphs); NeMo b4148d21's 340B perf
    recipe: TP overlap, deferred embedding wgrad (limit 22), TE cross-entropy, gradients reduced in bf16; FP8 =
    delayed scaling with FP8 parameter gathers."""
    for r in _dgxc(p78.rows()):
        (system, scaling, precision), gbs, gpus = _key(r["id"])
        if system != "gb200":
            continue
        j = p78.job(r)
        s = j["strategy"]
        assert (s["tp"], s["pp"], s["vpp"], s["cp"], s["ep"], s["micro_batch"]) == (8, 4, 12, 1, 1, 1), r["id"]
        assert gbs == (gpus // 4 if scaling == "weak" else 512) and j["hardware"]["accelerator"] == "gb200", r["id"]
        assert (j["hardware"]["count"], j["seq_len"], s["framework"]) == (gpus, 4096, "megatron-core"), r["id"]
        assert s["cuda_graphs"] == "layer" and s["tp_comm_overlap"] is True and s["loss_impl"] == "te", r["id"]
        assert s["defer_embedding_wgrad"] is True and s["wgrad_deferral_limit"] == 22, r["id"]
        assert s["grad_reduce_in_fp32"] is False and s["recompute"] == "none", r["id"]
        assert j.get("fp8_recipe") == ("delayed" if precision == "fp8" else None), r["id"]
        assert s.get("fp8_param_allgather") is (True if precision == "fp8" else None), r["id"]


def test_the_h100_rows_hold_v25_04s_layouts():
    """launch.sh GPU_TYPE h100: the 15B at TP 2, MBS 2, no pipeline; the 340B at TP 8 x PP 8 x VP 12, MBS 1; global
    batch 64 on 16 / 256 GPUs, no CUDA graphs: the layouts of v25.04's rows (perf_heldout dgxc_v25.04_nemotron4_*)."""
    layouts = {"15b": (2, 1, 1, 2, 16), "340b": (8, 8, 12, 1, 256)}
    for r in _dgxc(p78.rows()):
        (system, size, _), gbs, gpus = _key(r["id"])
        if system != "h100":
            continue
        s = p78.job(r)["strategy"]
        assert (s["tp"], s["pp"], s["vpp"], s["micro_batch"], gpus) == layouts[size] and gbs == 64, r["id"]
        assert "cuda_graphs" not in s and r["model"] == f"nemotron-4-{size}", r["id"]
        assert r["accelerator"] == "h100-sxm-80gb" and "dgxc_v25.04_nemotron4_" in r["assumed"], r["id"]


def test_source_bounds(run):
    check_source_bounds([c for c, _, _ in run], {
        (KEYS[WEAK], "tokens_per_s_per_gpu"): (6, 13.0),  # 21.4 at landing (336 (b)), 10.2 from 340 (a)
        (KEYS[STRONG], "tokens_per_s_per_gpu"): (6, 10.0),  # 18.4 at landing (336 (b), (c)), 7.3 from 340 (a)
        (KEYS[H100], "tokens_per_s_per_gpu"): (4, 5.0),  # 2.8 at landing (336 (d))
        (KEYS[TOGETHER], "tokens_per_s_per_gpu"): (9, 20.0),  # 15.6 at landing (336 (e))
        (KEYS[TOGETHER], "nemo_nemotron_tflops_per_gpu"): (2, 10.0),  # 9.1 at landing (336 (e)), 7.3 from 340 (a)
    })


def test_every_row_sits_where_it_landed(run):
    """When the rows were added every GB200 row was predicted fast: weak scaling BF16 +17.6..+18.9%, FP8
    +23.5..+25.2%; strong scaling BF16 +15.4..+17.5%, FP8 +20.1..+21.1%; the H100 rows -1.8..+3.3%. With Transformer
    Engine's flash-attn backend timed for the 340B's head dim 192 on Blackwell (340 (a)): weak BF16 +8.7..+10.0%, FP8
    +10.1..+11.9%, strong BF16 +6.6..+8.7%, FP8 +6.4..+7.6%; the H100 rows -4.4..+2.3% (339, unchanged). A guard that
    fails when the estimate moves, either way (336)."""
    errs = {c.row_id: c.err for c, _, _ in run if not c.skipped and not c.row_id.startswith(TOGETHER)}
    assert len(errs) == 16
    bands = {("weak", "bf16"): (0.06, 0.13), ("weak", "fp8"): (0.07, 0.15),
             ("strong", "bf16"): (0.04, 0.12), ("strong", "fp8"): (0.03, 0.11)}
    for rid, err in errs.items():
        (system, scaling, precision), _, _ = _key(rid)
        lo, hi = bands[(scaling, precision)] if system == "gb200" else (-0.06, 0.06)
        assert lo < err < hi, (rid, err)


def _got(run) -> dict[str, tuple[float, float]]:
    return {c.row_id: (c.measured, c.predicted) for c, _, _ in run if not c.skipped}


def test_the_gb200_to_h100_ratio_is_overstated(run):
    """The 340B's tokens/s a GPU, 128 GB200 (GBS 32, PP 4) over 256 H100 (GBS 64, PP 8), both NeMo 25.04 at the same
    release: 2.10x measured in BF16 and FP8 alike, 2.42x / 2.51x predicted (336 (b)); 2.26x / 2.27x with the GB200
    attention at flash-attn's rate (340 (a)): the FP8 rows' extra excess gone, ~7% left in both."""
    got = _got(run)
    for precision in ("bf16", "fp8"):
        gb = got[f"heldout_2027z_dgxc_gb200_weak_nemotron4_340b_{precision}_gbs32_128gpu"]
        h = got[f"heldout_2027z_dgxc_h100_nemotron4_340b_{precision}_256gpu"]
        measured, predicted = gb[0] / h[0], gb[1] / h[1]
        assert 2.0 < measured < 2.2 and 1.04 < predicted / measured < 1.11, (precision, measured, predicted)


def test_the_strong_scaling_gain_is_understated(run):
    """GBS 512 over GBS 32 on 128 GB200 (128 against 8 micro-batches a pipeline at PP 4 x VP 12): 1.072x (BF16) /
    1.087x (FP8) measured in tokens/s a GPU, 1.04x / 1.06x predicted: the estimate's interleaved bubble at 8
    micro-batches is 3% of the step; the rest of the measured gain is not modelled (336 (c))."""
    got = _got(run)
    for precision in ("bf16", "fp8"):
        strong = got[f"heldout_2027z_dgxc_gb200_strong_nemotron4_340b_{precision}_gbs512_128gpu"]
        weak = got[f"heldout_2027z_dgxc_gb200_weak_nemotron4_340b_{precision}_gbs32_128gpu"]
        measured, predicted = strong[0] / weak[0], strong[1] / weak[1]
        assert 1.06 < measured < 1.10 and 1.02 < predicted < measured - 0.015, (precision, measured, predicted)


def test_the_together_rows_are_the_files_figures():
    """Each 15B row: 4,096 x its global batch over the printed step over the GPUs, and the printed TFLOP/s a GPU is
    NeMo 26.02's causal count of the model over that step (a check of the shape and the step together); each 340B
    row the printed TFLOP/s as is."""
    models = p78.models()
    seen = set()
    for r in p78.rows():
        if not r["id"].startswith(TOGETHER):
            continue
        size, precision, tp, gbs, gpus = T_ID.fullmatch(r["id"]).groups()
        gbs, gpus = int(gbs), int(gpus)
        if size == "340b":
            assert float(r["value"]) == T340[precision] and r["metric"] == p78.NEMOTRON_METRIC, r["id"]
            assert (gbs, gpus, r["tp"], r["pp"], r["vpp"]) == (64, 256, "8", "4", "12"), r["id"]
            seen.add((size, precision))
            continue
        step, tflops = T15[(precision, int(tp), gbs, gpus)]
        assert abs(float(r["value"]) * gpus * step / (4096 * gbs) - 1) < 1e-5, r["id"]
        assert f"{step}" in r["source_locator"] and r["tp"] == tp and r["micro_batch"] == "2", r["id"]
        m = models[r["model"]]["model"]
        L, h, s = m["layers"], m["hidden"], 4096
        causal = s * L * h * h * (12 + 12 * m["kv_heads"] / m["heads"] + 12 * m["ffn"] / h + 6 * s / h
                                  + 6 * m["vocab"] / (L * h))
        assert abs(gbs * causal / step / gpus / 1e12 / tflops - 1) < 0.01, (r["id"], gbs * causal / step / gpus / 1e12)
        seen.add((precision, int(tp), gbs, gpus))
    assert len(seen) == 11 == len(T15) + len(T340)


def test_the_together_rows_hold_their_settings():
    """B200, 8 a node, 400 Gb/s InfiniBand a GPU; the 15B at TP 1 (two rows TP 2, overlap off), MBS 2, no pipeline,
    CUDA graphs on in BF16 and off in FP8 (the runs' graph-replay bug), FP8 current scaling (tensorwise), the 26.02
    container's cuDNN stated (9.17's attention rate); the 340B at
    TP 8 x PP 4 x VP 12, MBS 1, per-layer graphs, TP overlap and deferred embedding wgrad."""
    for r in p78.rows():
        if not r["id"].startswith(TOGETHER):
            continue
        j = p78.job(r)
        s = j["strategy"]
        fp8 = j["precision"] == "fp8"
        assert j.get("fp8_recipe") == ("tensorwise" if fp8 else None) and j["seq_len"] == 4096, r["id"]
        assert s["grad_reduce_in_fp32"] is False and s["loss_impl"] == "te" and s["recompute"] == "none", r["id"]
        if "_340b_" in r["id"]:
            assert s["cuda_graphs"] == "layer" and s["tp_comm_overlap"] is True, r["id"]
            assert s["defer_embedding_wgrad"] is True and s["micro_batch"] == 1, r["id"]
            assert "cudnn_release" not in s, r["id"]  # NeMo 25.07.01: its cuDNN not read, the base rate
            continue
        # NeMo 26.02 ships cuDNN 9.18: the newest measured release's attention rate (known-gaps 341 (e))
        assert str(s["cudnn_release"]) == "9.17", r["id"]
        assert (s["pp"], s["vpp"], s["micro_batch"]) == (1, 1, 2), r["id"]
        assert s["cuda_graphs"] == ("none" if fp8 else "layer"), r["id"]
        assert s.get("tp_comm_overlap") is (False if s["tp"] == 2 else None), r["id"]


def test_the_together_rows_sit_where_they_landed(run):
    """When the rows were added: the 15B on B200 in NeMo 26.02 predicted slow, BF16 -29.0 / -22.8%, FP8 at TP 1
    -10.7..-19.6%; its TP 2 rows (overlap off) +5.6 / +5.7%; the 340B in NeMo 25.07.01 BF16 +0.3%, FP8 +17.9% (336 (e));
    the 340B -5.4 / +9.1% with its attention at flash-attn's rate on B200 (340 (a))."""
    errs = {c.row_id: c.err for c, _, _ in run if not c.skipped and c.row_id.startswith(TOGETHER)}
    assert len(errs) == 11
    for rid, err in errs.items():
        size, precision, tp, _, _ = T_ID.fullmatch(rid).groups()
        if size == "340b":
            lo, hi = (-0.09, -0.02) if precision == "bf16" else (0.05, 0.13)
        elif tp == "2":
            lo, hi = 0.02, 0.10
        else:
            lo, hi = (-0.34, -0.18) if precision == "bf16" else (-0.24, -0.07)
        assert lo < err < hi, (rid, err)


def test_every_run_is_said_to_fit():
    fits = p78.fits()
    assert len(fits) == 27 and all(f.fits for f in fits)


def test_the_summary_prints_no_empty_memory_line(capsys):
    """The batch has no memory rows: no 'memory: n=0 MAPE nan%' line (perf_heldout69.summary_lines says none was
    published), the time line once."""
    p78.main()
    out = capsys.readouterr().out
    assert "n=0" not in out and "nan" not in out and out.count("perf_heldout78 time: n=27 MAPE") == 1
    assert "perf_heldout78 memory: no published peak memory" in out
