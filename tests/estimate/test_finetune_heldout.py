"""Held-out fine-tuning rows (benchmarks/finetune_heldout.py: torchtune README tables, Unsloth's longest-context
table (HF + FA2), LLaMA-Factory wiki, Megatron-Bridge 26.06 SFT / LoRA). Nothing is fitted on them; the bounds
are today's figures with a margin, so a change that makes them worse fails here."""

from __future__ import annotations

import pytest

import finetune_heldout as fh
from harness import mape


def test_every_row_is_scored_or_refused_with_a_reason():
    cs = fh.cases()
    ids = {c.row_id for c in cs}
    assert len(ids) == 42
    refused = [c.row_id for c in cs if c.metric in ("refused", "fits")]
    assert refused == []  # every row ran: paged optimizers, FSDP CPU offload, Megatron-Bridge bf16 gradients and FP8 weights


def test_held_out_fine_tuning_figures():
    cs = [c for c in fh.cases() if not c.skipped]

    def m(source: str, metric: str) -> float:
        return mape([c for c in cs if c.source.startswith(source) and c.metric == metric])

    # reached: 3.8% with GB200's MAMF-derived GEMM share (6.0% with 0.62; LoRA on linear_qkv, as the scripts set)
    assert m("Megatron-Bridge", "tokens_s") <= 6.0
    # reached: 10.2% with the 2024-09 rows read as torchtune's allocator figures, without the CUDA context and
    # NCCL buffers (10.6% against the estimate's total; 11.1% with the 405B row in 10**9 bytes; 10.5% with QLoRA's AdamW states paged off the GPU; 11.2% with eager layer saves under compile and the 16-bit compiled loss on the unchunked rows;
    # 20.1% adding the loss phase, the recompute working set and one micro-batch's gradients, with the eager chunked
    # loss's backward; 62.8% with fp32 master + fp32 Adam states; 27.4% with FSDP CPU offload's gradients on the GPU)
    # 5.5% with the two RTX A6000 rows run without activation checkpointing, as their own peaks say (10.2% with
    # their configs' full recompute: -46% / -41%)
    # 6.6% with torchtune's FSDP2 root unit held gathered and the 70B full row's own head unit (70B LoRA and 405B
    # QLoRA the wrong way, +13% / +32%: docs/known-gaps.md 14)
    # 5.0% with the 405B QLoRA row at its config's batch size 1 (+28.4% -> +6.2%: at the README note's 2 its peak is
    # out of reach, docs/known-gaps.md 31)
    assert m("torchtune", "peak_gib") <= 6.0
    # reached: 13.5% (14.2% with eager element-wise traffic at a flat 2.2x; 15.8% with the default GEMM efficiency 0.62 on the RTX 4090 / A6000 instead of the 0.80 / 0.66
    # derived from measured matmul rates; 17.9% without the 3B full rows' foreach AdamW stated; 20.2% without LoRA adapter costs: 3B
    # LoRA / QLoRA +28% -> +4%; 70B full with fsdp_cpu_offload -30% -> +11%, the host step at 14 of CPU-Adam's 30 B)
    # 12.5% with torchtune's next-fit packs (the padding each pack ends in is not training tokens), the sources'
    # counting (2024-09: every position; 2024-11: labelled tokens, BOS / EOS masked) and Alpaca's 135 positions
    # per sample (the Llama 3 chat tokens counted)
    # 10.1% with the RTX A6000 rows without activation checkpointing (their peaks; -42% / -58% -> -25% / -39%;
    # 12.1% with their configs' full recompute)
    # 12.0% with the 3B full rows' AdamW fused (10.5% as foreach: their measured peaks, 24.9 / 25.5 GiB, sit under
    # the 29.9 GiB that foreach's step alone holds, and 105 of torchtune's 107 configs naming torch.optim.AdamW set
    # fused: docs/known-gaps.md 128, (a')); the rows run +4..+8% too fast, as the same table's LoRA / QLoRA / 8-bit rows
    # 11.0% with the RTX 4090's GEMM share like for like, 0.95 (known-gaps 135): its LoRA row -16.1% -> -2.9%, its full
    # and QLoRA rows -5.7 / -6.9% -> +5.9 / +5.5%
    assert m("torchtune", "tokens_s") <= 12.5
    # reached: 12.7% with FA2 at its measured A100 rate and length curve (17.4% at the 0.45 tuned on Triton rows; 19.0%
    # with eager traffic at a flat 2.2x; 27.5% without LoRA adapter costs)
    assert m("LLaMA-Factory", "tokens_s") <= 14.0
    # reached: 12.5% with the loss phase and a re-run layer apart, every row -10.5..-15.6% (known-gaps 203; 7.3% summed,
    # 8.9% with QLoRA's AdamW states paged off the GPU; kbit_upcast false: no PEFT fp32 upcast)
    assert m("LLaMA-Factory", "peak_gib") <= 13.0
    # reached: 4.0% with the 16-bit cast of the fp32 LM head autocast saves (7.7% without: the 12 GB card +31% ->
    # -13.5%, the 70B -6%; 9.8% with QLoRA's adamw_8bit states paged off the GPU) with transformers 4.46-4.47's loss
    # (loss_impl upcast-shift); 21.4% with upcast's 12 B per logit,
    # 41.5% with the residual stream counted 16-bit
    assert m("Unsloth", "max_seq") <= 5.0


def test_gb300_gb200_pair_without_attention():
    """The Megatron-Bridge 26.06 LoRA FP8 rows differ only in the GPU (Llama 3 70B, 8 GPUs, PP 2 x VPP 20, packed
    samples of about 250 tokens). Measured GB300 / GB200 1.205 with attention under 1% of the FLOPs, so Blackwell
    Ultra's doubled SFU softmax rate gives nothing here: the model's ratio comes from the GEMM shares, GB300's from
    its cuBLAS rate at 1,400 W and GB200's from its MAMF (gemm.efficiency_max 0.673 / 0.564; 1.07 with GB300 at the
    default 0.62; docs/known-gaps.md 33), diluted by the rest of the step, which runs alike on both."""
    from trainsizer.estimate.calibration import load_constants

    k = load_constants()
    pairs = fh.generation_pairs(fh.cases())
    assert [rid for rid, _, _ in pairs] == ["mb26.06_70b_lora_gb300_fp8"]
    _, measured, predicted = pairs[0]
    assert abs(measured - 7481 / 6206) < 1e-9
    shares = k.gemm_efficiency("gb300") / k.gemm_efficiency("gb200")
    assert 1.0 < predicted < shares  # the GEMM ratio, diluted by the parts that run alike
    assert predicted == pytest.approx(shares, rel=0.06)
    assert abs(predicted / measured - 1.0) < 0.06  # reached: 1.138 against 1.205 (1.073 with GB300 at 0.62)


def test_unpacked_alpaca_row_runs_padded_micro_batches():
    """torchtune's unpacked Baseline (Alpaca, batch 2, cutoff 4096): each micro-batch padded to its longer sample
    and only real tokens counted. Reached -24.8% (mean length 125 derived, not published), -20.2% with a foreach
    AdamW step, +17.5% with the fused one its peak memory says it ran (docs/known-gaps.md 128, (a')); +231% with every
    sample at the cutoff, as before unpacked samples were modelled."""
    c = next(c for c in fh.cases() if c.row_id == "tt24.11_3b_baseline" and c.metric == "tokens_s")
    assert abs(c.err) <= 0.30
    spread = [pred / meas - 1 for rid, _, meas, pred in fh.spread_sensitivity() if rid == "tt24.11_3b_baseline"]
    # 2 samples per micro-batch: little padding (2.7 points over sigma 0-1; 1.3 while the foreach step was charged)
    assert len(spread) == 3 and max(spread) - min(spread) < 0.035


def test_no_length_distribution_gives_llama_factorys_rise_to_16k():
    """docs/known-gaps.md 19: the LLaMA-Factory wiki's long-context rows (dataset not stated) measure tokens/s rising
    from 4K to 16K at batch 1 (8K -> 16K: 3,128 -> 3,542, x1.13); with their samples unpacked at any of the what-if
    lengths the 16K row stays more than 15% too slow (20% before FA2's A100 rate was its measured one, 2026-12-03)
    and the rise from 8K to 16K is not reproduced (the predicted ratio at least 10% under the measured one), so no
    length distribution explains it (printed, not scored, not fitted)."""
    grid = fh.lf_length_whatif()
    assert len(grid) == len(fh.LF_WHATIF)
    for _, _, errs in grid:
        assert len(errs) == 6 and errs[4] < -0.15
        assert (1.0 + errs[4]) / (1.0 + errs[3]) < 0.90


def test_a6000_rows_ran_without_activation_checkpointing():
    """The torchtune README's RTX A6000 rows (2024-09) peak at 37.4 / 30.3 GiB where their configs' activation
    checkpointing would hold about 20 / 18 GiB: with recompute none the estimate lands within 5%, and the A6000 - RTX
    4090 difference of the same config (18.5 / 14.1 GiB measured) is every layer's activations."""
    cs = {(c.row_id, c.metric): c for c in fh.cases()}
    for method in ("full", "lora"):
        a6000, rtx4090 = cs[(f"tt24.09_8b_{method}_a6000", "peak_gib")], cs[(f"tt24.09_8b_{method}_4090", "peak_gib")]
        assert abs(a6000.err) < 0.05
        measured, predicted = a6000.measured - rtx4090.measured, a6000.predicted - rtx4090.predicted
        assert predicted == pytest.approx(measured, rel=0.05)


def test_a6000_lora_row_needs_more_than_the_card_runs():
    """Without recompute the A6000 LoRA row's 4,699 tokens/s need about 144 TFLOP/s, 0.93 of the rated 154.8 and
    above the card's measured torch.matmul BF16 rate (123.3, 0.80 of the peak): its time cannot be the card's, so
    no mechanism closes its -39%. The other single-GPU BF16 rows need less than the 4090 LoRA row's 0.84."""
    shares = {rid: share for rid, _, share in fh.needed_rates()}
    assert shares["tt24.09_8b_lora_a6000"] > 123.3 / 154.8
    assert max(v for k, v in shares.items() if k != "tt24.09_8b_lora_a6000") < 0.85


def test_megatron_sft_rows_state_the_configs_deferred_head_wgrad():
    """Megatron-Bridge's 70B SFT configs (llama3_llm_finetune.py at 63b08b397) and NeMo 2's full-SFT performance
    optimizations (dgxc v25.04) set wgrad_deferral_limit 22; their LoRA configs set none (the head is frozen)."""
    import csv

    for path in (fh.DATA, fh.DATA.parent / "heldout_2026i_dgxc_finetune.csv"):
        for r in csv.DictReader(path.open(encoding="utf-8")):
            s = fh.job(r)["strategy"]
            sft = r["stack"] == "megatron-core" and r["method"] == "full" and r["model"] == "llama-3.1-70b"
            assert r["wgrad_deferral_limit"] == ("22" if sft else ""), r["id"]
            assert (s.get("defer_embedding_wgrad"), s.get("wgrad_deferral_limit")) == ((True, 22) if sft else (None, None))
            assert not sft or int(r["pp"]) > 1, r["id"]


def test_a_batch_reads_its_files_models_and_refused_column(tmp_path):
    """finetune_heldout.Batch (docs/known-gaps.md 249 (c)): files in order, inline architectures then the models
    files', a row whose `refused` column says why is one 'refused' case after the estimated rows' cases."""
    import csv

    rs = fh.rows()[:2]
    header = list(rs[0]) + ["refused"]
    path = tmp_path / "batch.csv"
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, header, extrasaction="ignore")
        w.writeheader()
        w.writerows([rs[1] | {"refused": "a figure of another kind"}, rs[0] | {"refused": ""}])
    batch = fh.Batch((path, path), inline={"x-model": {"layers": 2}})
    assert [r["id"] for r in batch.rows()] == [rs[1]["id"], rs[0]["id"]] * 2
    assert batch.models() == {"x-model": {"layers": 2}}
    cs = batch.cases()
    assert [c.row_id for c in cs if c.metric == "refused"] == [rs[1]["id"]] * 2
    assert cs[-1].metric == "refused" and cs[-1].skipped == "a figure of another kind"
    assert {c.row_id for c in cs if c.metric != "refused"} == {rs[0]["id"]}
    assert batch.job(rs[0]) == fh.job(rs[0])


def test_the_closing_lines_say_each_refused_and_unfit_row():
    cs = [fh.Case("a", "s", "refused", 0.0, skipped="why a"), fh.Case("b", "s", "fits", 0.0, skipped="b" * 200),
          fh.Case("c", "s", "tokens_s", 1.0, 1.0)]
    assert fh.said_lines(cs) == ("\nrefused rows: 1\n  a: why a\nrows that ran, said not to fit by the memory "
                                 f"estimate: 1\n  b: {'b' * 200}")
    assert fh.said_together(cs) == f"\nrefused or said not to fit: 2\n  a: why a\n  b: {'b' * 110}"
