"""Held-out rows added 2026-12-05, tenth batch (benchmarks/perf_heldout35.py; nothing fitted on them): ms-swift 1.5's
benchmark page, LoRA / QLoRA / full SFT of Qwen-1 1.8B-14B on one A100 80GB under HF Transformers + PEFT. Bounds = the
figures measured when the rows were added, with a margin: they guard against a regression, not an accuracy claim
(docs/known-gaps.md 94)."""

from __future__ import annotations

import finetune_heldout as fh
import perf_heldout35 as p35
from harness import mape

from .heldout_rows import check_columns_and_ids, run_fixture

# metric -> MAPE bound (%); reached at landing in the comment
# peak_gib on the reserved basis with the caching allocator's growth since known-gaps 198 (a): 28.4 -> 13.5%
BOUNDS = {"samples_s": 21.5, "peak_gib": 16.0}  # 19.5 (median -16.7%, known-gaps 118 (a)), 13.5 (median -4.3%)
# full 7B / 14B rows whose peak is torch's foreach AdamW step (known-gaps 128 (a)): weights, gradients, moments and the
# step's moment-sized temporary, at any sample length (measured 74.3-78.8 GiB; -12.4 / -11.6 / -16.9 / -11.4% without it)
STEP_PEAK_ROWS = ("swift_full_qwen-7b_2048", "swift_full_qwen-7b_4096", "swift_full_qwen-14b_2048",
                  "swift_full_qwen-14b_4096")


cases = run_fixture(p35.cases, "cases")


def test_every_row_is_sourced_and_states_its_settings():
    rs = p35.rows()
    check_columns_and_ids(rs, fh.DATA, 46, more=True)  # finetune_heldout.job reads these columns
    archs = p35.models()
    for r in rs:
        assert "/blob/97e4d198b/" in r["url"] and "Benchmark.md" in r["locator"], r["id"]
        assert r["date"] == "2024-01-02" and r["confidence"] == "medium" and r["assumed"], r["id"]
        assert float(r["samples_per_s"]) > 0 and float(r["peak_mem"]) > 0, r["id"]
        assert r["peak_mem_unit"] == "GiB-reserved", r["id"]  # torch.cuda.max_memory_reserved
        assert int(r["epoch_samples"]) == p35.epoch_samples(int(r["seq_len"])), r["id"]
        assert r["refused"] or r["model"] in archs, r["id"]


def test_adapter_rows_state_swifts_lora_dropout():
    """ms-swift at 97e4d198b: SftArguments.lora_dropout_p = 0.05 (swift/llm/utils/argument.py), which
    swift/llm/tuner.py passes as the LoRA config's lora_dropout; run_single.py sets it on no row."""
    for r in p35.rows():
        assert r["lora_dropout"] == ("0.05" if r["method"] in ("lora", "qlora") else ""), r["id"]
    r = next(r for r in p35.rows() if r["id"] == "swift_lora_qwen-7b_2048")
    assert fh.job(r, p35.models())["lora"]["dropout"] == 0.05


def test_kept_lengths_are_the_stated_statistics_cut_at_the_cutoff():
    for r in p35.rows():
        share, mean, spread = p35.kept_lengths(int(r["seq_len"]))
        assert r["max_tokens"] == r["seq_len"], r["id"]
        assert abs(float(r["avg_tokens"]) - mean) < 0.5 and abs(float(r["length_sigma"]) - spread) < 5e-4, r["id"]
        # a row is refused for the tail exactly when it keeps under MIN_KEPT of the samples
        assert ("'delete' keeps only" in r["refused"]) == (share < p35.MIN_KEPT and not _other_refusal(r)), r["id"]
    # the cut mean rises with the cutoff towards the stated mean
    means = [p35.kept_lengths(c)[1] for c in (1024, 2048, 4096, 8192, 10**6)]
    assert means == sorted(means) and abs(means[-1] / p35.DATASET_MEAN_TOKENS - 1) < 1e-3


def _other_refusal(r: dict[str, str]) -> bool:
    return any(k in r["refused"] for k in ("two A100s", "GPTQ", "eager attention", "tokenizer"))


def test_only_the_rows_refused_in_the_data_are_refused(cases):
    refused = {c.row_id for c in cases if c.skipped and c.metric == "refused"}
    assert refused == {r["id"] for r in p35.rows() if r["refused"]}
    assert len(refused) == 15
    # every run that ran is predicted to fit: full Qwen-14B at 8,192 on two A100s was 79.5 GiB on its head card against
    # 79.3 (measured 77.7 reserved; known-gaps 101 (a)) with the loss phase and a re-run layer summed, below the card
    # with the phases apart (known-gaps 203)
    assert not {c.row_id for c in cases if c.skipped and c.metric == "fits"}


def test_device_map_and_eager_rows_are_scored(cases):
    """The two-A100 rows run transformers' device_map auto (strategy.device_map) and the use_flash_attn false row
    SDPA's memory-efficient kernel over Qwen-1's explicit mask (explicit_attention_mask; materialised attention,
    flash_attention false, before known-gaps 181): each scored for time and memory (known-gaps 101)."""
    stated = {r["id"] for r in p35.rows() if not r["refused"] and (r["device_map"] == "auto"
                                                                     or r["explicit_attention_mask"] == "true")}
    assert stated == {"swift_lora_qwen-72b_2048", "swift_full_qwen-7b_8192", "swift_lora_qwen-7b_2048_nofa",
                      "swift_full_qwen-14b_2048", "swift_full_qwen-14b_4096", "swift_full_qwen-14b_8192"}
    for rid in stated:
        assert {c.metric for c in cases if c.row_id == rid and not c.skipped} == {"samples_s", "peak_gib"}, rid


def test_each_figure_within_its_bound_and_every_estimated_row_scored_twice(cases):
    for metric, bound in BOUNDS.items():
        got = [c for c in cases if c.metric == metric and not c.skipped]
        assert len(got) == 31, metric
        assert mape(got) <= bound, (metric, mape(got))
    # the rows peaking in the optimizer step within 5% (+1.7 / -0.0 / -3.6 / +0.1% at landing: the growth fills the
    # card's last GiB on the 4,096 ones)
    mem = {c.row_id: c for c in cases if c.metric == "peak_gib" and not c.skipped}
    assert all(abs(mem[rid].err) < 0.05 for rid in STEP_PEAK_ROWS)


def test_the_reserved_peak_grows_with_the_record_rows_as_measured(cases):
    """Known-gaps 198 (a): the figure is torch.cuda.max_memory_reserved of unpadded batch-1 samples of varying length,
    scored with the caching allocator's growth (estimate.allocator). It moves every LoRA row at 2,048-4,096 to within
    10% (from -18.6..-53.4%); the growth is the same for the rank / targets / accumulation variants (they share the
    lengths and the loss path), and rises with the cutoff, as measured; the 8,192 rows go over (+25..+31% LoRA:
    198 (b))."""
    mem = {c.row_id: c for c in cases if c.metric == "peak_gib" and not c.skipped}
    allocated = p35.allocated_peaks()
    growth = {rid: c.predicted - allocated[rid] for rid, c in mem.items()}
    for size in ("7b", "14b"):
        for cutoff in (2048, 4096):
            assert abs(mem[f"swift_lora_qwen-{size}_{cutoff}"].err) < 0.10, (size, cutoff)
        g = [growth[f"swift_lora_qwen-{size}_{c}"] for c in (2048, 4096, 8192)]
        assert g == sorted(g) and g[0] > 1.0, size
    base = growth["swift_lora_qwen-7b_2048"]
    for rid in ("swift_lora_qwen-7b_2048_r2", "swift_lora_qwen-7b_2048_r64", "swift_lora_qwen-7b_2048_ga1",
                "swift_lora_qwen-7b_2048_ga64"):
        assert abs(growth[rid] - base) < 0.05, rid
    assert all(mem[f"swift_lora_qwen-{s}_8192"].err > 0.2 for s in ("1_8b", "7b", "14b"))


def test_full_over_lora_at_one_cutoff_as_measured(cases):
    """A full and a LoRA row at one cutoff run the same kept samples, so their samples/s ratio leaves the length
    assumption out. The full rows load the model in bf16 (optimizer_precision bf16: no fp32 weights for autocast to
    cast, bf16 AdamW states; known-gaps 118 (a)): LoRA / full within 5% of the measured ratio on 7B and 14B (1.21-1.35
    measured; 1.40-1.64 predicted while the fp32-weight casts and the fp32 update were charged)."""
    sps = {c.row_id: c for c in cases if c.metric == "samples_s" and not c.skipped}
    for size in ("7b", "14b"):
        for cutoff in (2048, 4096, 8192):
            lora, full = sps[f"swift_lora_qwen-{size}_{cutoff}"], sps[f"swift_full_qwen-{size}_{cutoff}"]
            measured, predicted = lora.measured / full.measured, lora.predicted / full.predicted
            assert abs(predicted / measured - 1) < 0.05, (size, cutoff, measured, predicted)


def test_settings_move_the_estimate_the_way_the_table_moves(cases):
    ratios = {rid: (m, p) for rid, m, p in p35.series(cases, "swift_lora_qwen-7b_", "swift_lora_qwen-7b_2048")}
    # no recompute: faster, as measured (1.436 vs 1.415 at landing)
    m, p = ratios["swift_lora_qwen-7b_2048_nogc"]
    assert m > 1.3 and abs(p / m - 1) < 0.05
    # rank 2 and 64 on c_attn cost the same; LoRA on every linear costs more (measured 0.747, predicted 0.825)
    for rid in ("swift_lora_qwen-7b_2048_r2", "swift_lora_qwen-7b_2048_r64"):
        assert abs(ratios[rid][1] - 1) < 0.01
    assert ratios["swift_lora_qwen-7b_2048_r8_all"][1] < 0.9
    # larger micro-batches pad to the longest sample: fewer samples/s, measured and predicted
    bs = [ratios[f"swift_lora_qwen-7b_2048_bs{b}"] for b in (2, 4, 8)]
    assert [m for m, _ in bs] == sorted([m for m, _ in bs], reverse=True)
    assert [p for _, p in bs] == sorted([p for _, p in bs], reverse=True)


def test_the_memory_gap_splits_into_no_loss_path_bytes_and_the_allocators_reserve(cases):
    split = p35.gap_by_candidate(cases, samples=60)  # a short replay: the full one is the benchmark's (known-gaps 97)
    assert len(split) == 31  # the device_map rows: their last card, which holds the loss path
    for rid, gap, loss, e in split:
        # measured above the estimate, but on a full card and where the foreach step sets the peak (one shape)
        assert gap > 0 or rid == "swift_full_qwen-14b_8192" or (rid in STEP_PEAK_ROWS and gap > -4.0), rid
        assert abs(loss) < 0.05, rid  # the Qwen-1 loss path holds what the estimate charges (candidate 1: none)
        # a roomy card reserves past the allocated peak; a full one needs less than that reserve
        assert all(r >= n >= 0 for r, n in zip(e.reserved_gib, e.needed_gib, strict=True)), rid
        assert max(e.reserved_gib) > 1.0, rid
