"""Held-out rows added 2026-12-05, eleventh batch (benchmarks/perf_heldout37.py; nothing fitted on them): LitGPT's
resource tables (LoRA / QLoRA on one A100 40GB, Lit-GPT 8641822) and its config hub table (LoRA / QLoRA / full on one
A10G, 2024). Bounds = the figures measured when the rows were added, with a margin: they guard against a regression,
not an accuracy claim (docs/known-gaps.md 100)."""

from __future__ import annotations

import pytest

import finetune_heldout as fh
import perf_heldout37 as p37
from harness import mape

from .heldout_rows import check_columns_and_ids, run_fixture

# metric -> MAPE bound (%); reached at landing in the comment
# 116.5 at landing, 74.4 since 104, 70.9 since 104 (d), 22.1 since the 2024 rows take Alpaca2k's own lengths and
# count fit()'s validations and generated tokens (127; median +17.0%); memory 8.5 since 103 (h), 7.2 since 104 (d)
BOUNDS = {"samples_s": 27.0, "peak_gib": 11.0}


cases = run_fixture(p37.cases, "cases")


def test_every_row_is_sourced_and_states_its_settings():
    rs = p37.rows()
    check_columns_and_ids(rs, fh.DATA, 62, more=True)  # finetune_heldout.job reads these columns
    archs = p37.models()
    for r in rs:
        assert "github.com/Lightning-AI/litgpt/blob/" in r["url"] and r["locator"], r["id"]
        assert r["date"] in ("2023-10-20", "2024-03-27", "2024-09-27") and r["confidence"] == "medium" and r["assumed"], r["id"]
        assert r["peak_mem_unit"] == "GB-allocated", r["id"]  # torch.cuda.max_memory_allocated() / 1e9
        assert r["peak_mem"] == "OOM" or float(r["peak_mem"]) > 0, r["id"]
        assert r["peak_mem"] == "OOM" or float(r["minutes"]) > 0 and int(r["samples_timed"]) > 0, r["id"]
        assert r["model"] in archs or r["model"] in fh.MODELS or r["model"].startswith(("llama-", "mistral-")), r["id"]


def test_published_gb_read_as_allocated_gib():
    r = next(r for r in p37.rows() if r["id"] == "litgpt23_llama2-7b_lora_mb1")
    m = p37.memory_row(r)
    assert m["peak_mem_unit"] == "GiB-active" and abs(float(m["peak_mem"]) - 21.30e9 / 2**30) < 1e-4
    assert m["avg_tokens"] == m["length_sigma"] == m["max_tokens"] == ""  # the peak holds the longest sample
    with pytest.raises(ValueError, match="GB-allocated"):
        p37.memory_row(dict(r, peak_mem_unit="GiB"))


def test_only_the_rows_refused_in_the_data_are_refused(cases):
    refused = {c.row_id for c in cases if c.skipped}
    assert refused == {r["id"] for r in p37.rows() if r["refused"]}
    # 3 full rows whose published peak is below the weights, gradients and AdamW states their config must hold (the 5
    # NF4 rows without double quantisation are scored since strategy.nf4_double_quant, known-gaps 190)
    assert len(refused) == 3


def test_each_figure_within_its_bound_and_every_run_scored_twice(cases):
    for metric, bound in BOUNDS.items():
        got = [c for c in cases if c.metric == metric and not c.skipped]
        assert len(got) == 50, metric
        assert mape(got) <= bound, (metric, mape(got))
    # since Fabric's fp32 logits (loss_impl upcast-held), bitsandbytes' kept inputs and Lightning's 4-bit head are
    # counted (known-gaps 103) and the rows state the LoRA dropout their code sets (104 (d)): every LoRA and full peak
    # within 20% (the small all-linear A10G LoRA rows, TinyLlama, Phi-2, Gemma 2B, 16-18% too large), no QLoRA peak
    # more than 25% too small (the all-linear ones were 33-37% before the dropout was stated)
    method = {r["id"]: r["method"] for r in p37.rows()}
    peaks = [c for c in cases if c.metric == "peak_gib" and not c.skipped]
    assert all(abs(c.err) < 0.20 for c in peaks if method[c.row_id] != "qlora")
    assert all(-0.25 < c.err < 0.20 for c in peaks)
    # every time predicted too fast (known-gaps 100 (a)); the 2023 A100 LoRA rows less so since Lit-GPT's per-forward
    # index build is charged (lora.impl litgpt-2023, known-gaps 104), the 2024 rows since they take Alpaca2k's lengths
    # and fit()'s validations and generations (127): Phi-3 within +4..+6%, Gemma still +24..+57%; StableLM-Alpha's
    # micro-batch 4 at +30% since the rows state the quarter of each head its RoPE rotates (133 (e): a smaller charge)
    times = [c for c in cases if c.metric == "samples_s"]
    assert all(c.err > 0.0 for c in times)
    lora23 = [c for c in times if c.row_id.startswith("litgpt23_") and method[c.row_id] == "lora"]
    assert len(lora23) == 9 and all(c.err < 0.32 for c in lora23)


def test_oom_rows_are_checked_not_scored(cases):
    fits = {c.row_id: c for c in cases if c.metric == "fits"}
    assert set(fits) == {r["id"] for r in p37.rows() if r["peak_mem"] == "OOM" and not r["refused"]}
    assert all(c.measured == 0.0 for c in fits.values())
    # all 9 agree (Falcon 40B NF4-DQ since its 4-bit linears' kept inputs are counted: 103, and its NF4 twin since it
    # is scored: 190; Llama 2 7B at micro-batch 4 since its LoRA dropout's masks and dropped copies are: 104 (d))
    assert all(c.predicted == 0.0 for c in fits.values()) and len(fits) == 9


def test_qlora_rows_state_lightning_bitsandbytes_options():
    """Lightning's BitsandbytesPrecision on bitsandbytes 0.41.1 / 0.42.0 (LitGPT pins 0.42.0 at 84a73fd0 and 00af8b0d):
    4-bit linears keep their inputs (< 0.43.2) and the LM head is quantised, called on every 128 positions; the LoRA / full
    rows state none of it."""
    for r in p37.rows():
        q = r["method"] == "qlora"
        assert (r["nf4_saves_input"], r["nf4_lm_head"], r["lm_head_chunk"]) == (
            ("true", "true", "128") if q else ("", "", "")), r["id"]  # LitGPT's lm_head_chunk_size=128


def test_lora_rows_state_the_dropout_their_code_sets():
    """lora_dropout: 0.05 in Lit-GPT's finetune/lora.py at 8641822 (the 2023 table) and in the config hub's lora.yaml /
    qlora.yaml at 84a73fd0 / 00af8b0d, 0.1 in the Gemma and Gemma 2 ones; full rows none. finetune_heldout.job puts it
    in the job's lora block."""
    rs = p37.rows()
    for r in rs:
        want = "" if r["method"] == "full" else "0.1" if "gemma" in r["model"] else "0.05"
        assert r["lora_dropout"] == want, r["id"]
    r = next(r for r in rs if r["id"] == "litgpt24_gemma-7b_qlora_a100")
    assert fh.job(r, p37.models())["lora"]["dropout"] == 0.1
    assert "dropout" not in fh.job(dict(r, lora_dropout=""), p37.models())["lora"]  # blank: the job's default 0


def test_larger_micro_batches_cost_memory_as_the_table_does(cases):
    peak = {c.row_id: (c.measured, c.predicted) for c in cases if c.metric == "peak_gib"}
    for model in ("phi", "stablelm3b"):
        got = [peak[f"litgpt23_{model}_lora_mb{mb}"] for mb in (1, 2, 4)]
        assert [m for m, _ in got] == sorted(m for m, _ in got)
        assert [p for _, p in got] == sorted(p for _, p in got)


def test_gemma2_rows_run_litgpts_eager_softcapped_attention():
    """LitGPT at 00af8b0d skips SDPA when attention_logit_softcapping is set (Gemma 2): those rows state
    flash_attention false, no SDPA kernel, and every other row leaves it unset."""
    for r in p37.rows():
        gemma2 = r["model"].startswith("litgpt-gemma-2-")
        assert r.get("flash_attention", "") == ("false" if gemma2 else ""), r["id"]
        assert fh.job(r, p37.models()).get("flash_attention") is (False if gemma2 else None), r["id"]
        assert not gemma2 or r["attention_kernel"] == "", r["id"]


def test_config_hub_rows_take_alpaca2ks_own_lengths():
    """The 2024 rows trained on Alpaca2k (config hub yamls: litgpt.data.Alpaca2k), whose histogram LitGPT publishes
    (alpaca-2k.jpg: median 168 Llama 2 tokens against the 52K Alpaca's 110): each states the lognormal that
    benchmarks/alpaca2k_lengths.py fits to it, scaled by the row's tokenizer as the 2023 rows are; the 2023 rows keep
    the 52K Alpaca's (mean 125 Llama 2 tokens, sigma 0.51)."""
    import alpaca2k_lengths as a2k

    mean, sigma = a2k.lognormal_fit(*a2k.histogram())
    for r in p37.rows():
        if r["id"].startswith("litgpt23_"):
            assert r["length_sigma"] == "0.51" and "alpaca-2k.jpg" not in r["assumed"], r["id"]
            continue
        scale = float(r["assumed"].split("scaled by ")[1].split(" ")[0])
        assert float(r["length_sigma"]) == sigma and int(r["avg_tokens"]) == round(mean * scale), r["id"]
        assert "alpaca-2k.jpg, 71ba9932" in r["assumed"] and r["max_tokens"] == r["seq_len"] == "512", r["id"]


def test_fit_s_validation_passes_are_counted_where_the_row_states_its_interval():
    """fit() validates the whole validation set every eval.interval optimizer steps, then generates 100 tokens, and
    validates two batches (max_iters 2) before the loop; the 2023 table's minutes cover 1,000 training iterations (no
    interval stated: none counted)."""
    rs = {r["id"]: r for r in p37.rows()}
    gemma = rs["litgpt24_gemma-2b_lora_a10g"]  # 3,846 samples / 6 = 641 steps, every 25: 25 x ceil(77 / 2) + 2
    assert p37.eval_forward_batches(gemma) == 25 * 39 + 2
    assert p37.eval_forward_batches(rs["litgpt24_falcon-7b_lora_a10g"]) == 9 * 100 + 2  # 950 steps, every 100
    assert p37.eval_forward_batches(rs["litgpt23_llama2-7b_lora_mb1"]) == 0
    with pytest.raises(ValueError, match="eval.max_iters"):
        p37.eval_forward_batches(dict(gemma, val_samples="300"))
    assert p37.evals(gemma) == 25 and p37.evals(rs["litgpt23_llama2-7b_lora_mb1"]) == 0
    cat, archs = p37.load_catalog(), p37.models()
    with_eval = p37.predicted_samples_s(gemma, cat, archs)
    train_only = p37.predicted_samples_s(dict(gemma, eval_interval=""), cat, archs)
    # a fifth to a third of Gemma 2B's fit() validates and generates (25 x 39 forwards, 25 x 100 decoded tokens)
    assert 0.6 * train_only < with_eval < 0.9 * train_only


def test_length_convexity_shows_short_micro_batches_on_a_floor():
    """The diagnostic (not in the score, known-gaps 127 (e)): at micro-batch 1 a 7B LoRA step on the A10G costs more
    averaged over Alpaca2k's lengths than at their mean (short samples sit on the weight-read floor); at micro-batch 4
    the padded maxima are long and alike, and the two agree."""
    rs = {r["id"]: r for r in p37.rows()}
    cat, archs = p37.load_catalog(), p37.models()
    assert p37.length_convexity(rs["litgpt24_falcon-7b_lora_a10g"], cat, archs) > 1.04
    assert p37.length_convexity(rs["litgpt24_phi-2_lora_a10g"], cat, archs) == pytest.approx(1.0, abs=0.01)
    # sigma 0: every micro-batch at the mean, nothing to average
    assert p37.length_convexity(dict(rs["litgpt24_falcon-7b_lora_a10g"], length_sigma="0"), cat, archs, 4) == \
        pytest.approx(1.0, abs=1e-9)
