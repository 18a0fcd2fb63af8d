"""Held-out check on published runs added 2026-12-05 (twenty-fourth batch: fine-tuning on consumer and Blackwell
workstation cards beside Hopper and Ampere; nothing is fitted on them), two sources no benchmark held:

(1) Scicom's 'how-fast-5090' (Scicom-AI-Enterprise-Organization/small-ablation README.md at 0c7398b1, 2025-10-17):
Qwen3-1.7B-Base fully fine-tuned under the HF Trainer on one RTX 5090 and on one H100 SXM, the same job (81,920 packed
tokens a step, gradient checkpointing, torch.compile, Cut Cross-Entropy, bf16-loaded model), 96 and 47 minutes for
one epoch of 54.5M tokens.
(2) universal-llm-trainer's GPU test (ljm565/universal-llm-trainer docs/gpu_test.md at aefdc4a4; H100 table of
2025-03-21, RTX Pro 6000 and A100 tables of 2025-08-11): full and LoRA fine-tuning of Llama 3.1 8B, Llama 2 13B,
Gemma 7B and Phi-3-mini on one H100, one RTX PRO 6000 Blackwell and one A100, 2 x 8,192 filled positions a micro-batch,
pure bf16, gradient checkpointing: seconds a micro-batch and the allocator's reserved peak; and QLoRA of the same
models, whose 4-bit model the trainer loads in fp32 with no autocast (precision fp32 with 4-bit linears computing in
16 bit: the job path's QLoRA under fp32 training arguments).

Not rows (read, said in docs/known-gaps.md 176): the trainer's FSDP rows (two GPUs, FSDP1 with parameters and
gradients offloaded to the host and size-based wrapping, not read far enough to state), its Llama 3 8B rows (the
Llama 3.1 8B figures repeated), Gemma 2 9B (soft-capped attention under sdpa, which no attention kernel here holds)
and every OOM cell; NVIDIA's DGX Spark fine-tuning figures (developer.nvidia.com, 2025-10: a 3B full fine-tune at
82,739 tokens/s 'peak' is 1.6 PFLOP/s of training work, beyond the GB10's peak, and GB10 is not in the catalog);
Exxact's RTX PRO LoRA benchmark (2026-06) and Fixstars' RTX PRO 6000 Max-Q post (2025): the stored text stops before
their configurations and tables; AMD's ROCm 7 MI355X training blog (2025-12): ratios to B200 in figures only,
pre-training.

Data: benchmarks/data/heldout_2026x_scicom_5090.csv and heldout_2026x_ult_gpu_test.csv (perf_heldout47's columns:
finetune_heldout's with `overlay` and `refused`; every setting a source does not state is in the row's `assumed`);
models beside the presets: benchmarks/data/heldout_models.yaml qwen3-1.7b-base, gemma-7b, phi-3-mini-128k.

Printed: each row (published, predicted, error), per source, the card ratios (measured and predicted time of the
same job on one card over the H100's), which say whether a miss is the card's constants or the job's, a
counterfactual, not scored: the trainer's reserved peaks with the loss phase and a layer's re-run summed
(strategy.live_at_rerun loss, the hf style's count before known-gaps 203; the estimate takes their larger, 191 (a));
and a probe, the masked attention's share of each 16-bit trainer row's step and the factor on it the measured time
implies with everything else as estimated (known-gaps 191 (f), 202). The trainer's bf16
rows state its own loss, nn.CrossEntropyLoss on the model's bf16 logits
(loss_impl native; known-gaps 176 (d), 191). The
trainer's rows state explicit_attention_mask (its --gpu_test loop keeps the padded dataset's attention mask: SDPA's
memory-efficient backend over the whole square, known-gaps 180).
accuracy_bands counts every scored row, the trainer's time rows too (scored as found; known-gaps 176 (b), 180).

Sign: (predicted - published) / published; + = predicted too fast (time) or too large (memory).

Run: python benchmarks/perf_heldout50.py
"""

from __future__ import annotations

from pathlib import Path

import finetune_heldout as fh
import perf_heldout as ph
import perf_heldout43 as p43
import perf_heldout47 as p47
from harness import Case, kept_rows, print_case_rows, scored
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.memory import estimate_memory

DATA = Path(__file__).resolve().parent / "data"
SCICOM = DATA / "heldout_2026x_scicom_5090.csv"
ULT = DATA / "heldout_2026x_ult_gpu_test.csv"
SOURCES = (SCICOM, ULT)
BATCH = fh.Batch(SOURCES, (ph.MODELS,), overlays=True)
rows, models, job, cases = BATCH.rows, BATCH.models, BATCH.job, BATCH.cases
REFERENCE_GPU = "h100-sxm-80gb"


def card_ratios(cs: list[Case]) -> list[tuple[str, str, float, float]]:
    """(job, card, measured, predicted tokens/s on that card over the same job's on the H100): rows are the same job
    when their ids differ only in the card suffix."""
    by_row = {r["id"]: r for r in rows()}
    got = {c.row_id: c for c in scored(cs, "tokens_s")}
    jobs: dict[str, dict[str, Case]] = {}
    for rid, c in got.items():
        stem, _, _ = rid.rpartition("_")
        jobs.setdefault(stem, {})[by_row[rid]["gpu"]] = c
    return [(stem, gpu, c.measured / per[REFERENCE_GPU].measured, c.predicted / per[REFERENCE_GPU].predicted)
            for stem, per in jobs.items() if REFERENCE_GPU in per
            for gpu, c in per.items() if gpu != REFERENCE_GPU]


def summed_peaks() -> list[tuple[str, float, float, float]]:
    """A counterfactual, not a score: (row, measured, predicted, predicted with strategy.live_at_rerun "loss") reserved
    GiB of each universal-llm-trainer row whose peak is in the forward / backward. The trainer's loop frees its logits
    after the loss (`del output`) and its reentrant checkpointing re-runs a layer only after the loss backward, so the
    estimate takes the larger of the two phases (the hf style's live_at_rerun none, memory._backward_phases); "loss"
    is the sum the hf style counted before (docs/known-gaps.md 191 (a), 203)."""
    out = []
    for r in kept_rows(rows()):
        if not r["source"].startswith("universal-llm-trainer"):
            continue
        cat = p47.catalog(r["overlay"])
        sc = fh._scenario(r, cat, models())
        est = estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False)
        if est.peak_phase != "forward/backward":
            continue
        c, s = (next(x for x in fh.row_cases(r, cat, models(), extra) if x.metric == "peak_gib")
                for extra in (None, {"live_at_rerun": "loss"}))
        out.append((r["id"], c.measured, c.predicted, s.predicted))
    return out


def attention_implied(cs: list[Case]) -> list[tuple[str, float, float]]:
    """A probe, not a score: (row, the estimate's masked attention share of the step, the factor on that attention
    the measured time implies with everything else as estimated) for each 16-bit trainer row (SDPA's memory-efficient
    kernels under the dataset's mask). The attention's seconds are read by halving attention.mem_efficient_over_fa2
    and mem_efficient_k64_over_fa2 (the masked attention's time doubles, whichever kernel runs it, the 64x64 backward
    of the 99 KB parts included; nothing else moves); docs/known-gaps.md 191 (f), 202, 216."""
    k = load_constants()
    names = ("mem_efficient_over_fa2", "mem_efficient_k64_over_fa2")
    ratios = {n: getattr(k, n) for n in names}
    got = {c.row_id: c for c in scored(cs, "tokens_s")}
    keep = [r for r in kept_rows(rows()) if r["id"] in got and r["source"].startswith("universal-llm-trainer")
            and r["precision"] == "bf16"]
    for n in names:
        object.__setattr__(k, n, ratios[n] / 2)
    try:
        halved = {c.row_id: c for c in scored(BATCH.cases(keep), "tokens_s")}
    finally:
        for n in names:
            object.__setattr__(k, n, ratios[n])
    out = []
    for r in keep:
        c = got[r["id"]]
        step, slow, measured = 1.0 / c.predicted, 1.0 / halved[r["id"]].predicted, 1.0 / c.measured
        attention = slow - step
        out.append((r["id"], attention / step, (measured - step + attention) / attention))
    return out


def main() -> None:
    cs = cases()
    print("(1) Scicom how-fast-5090: Qwen3-1.7B full fine-tuning on one RTX 5090 and one H100 SXM; (2) "
          "universal-llm-trainer GPU test: full / LoRA fine-tuning at 2 x 8,192 positions on one H100, RTX PRO 6000 "
          "and A100 (tokens/s, reserved peak; held out, nothing fitted):")
    print_case_rows([c for c in cs if c.metric in ("tokens_s", "peak_gib")], 34, "9.1f")
    print("\nper source:\n" + "\n".join(p43.source_lines(cs)))
    print("\nthe same job on another card over the H100 (tokens/s; measured vs predicted):")
    print("\n".join(f"  {stem:30s} {gpu:14s} measured {m:.3f} predicted {p:.3f}" for stem, gpu, m, p in card_ratios(cs)))
    print("\nthe loss phase and a layer's re-run summed (live_at_rerun loss, the hf style's count before 203), GiB:")
    print("\n".join(f"  {rid:34s} measured {m:5.1f} predicted {p:5.1f}, summed {b:5.1f} ({100 * (b / m - 1):+.1f}%)"
                    for rid, m, p, b in summed_peaks()))
    print("\nprobe, the masked attention's share of the step and the factor on it the measured time implies (16-bit "
          "trainer rows; the LoRA rows carry 191 (d)'s extra too):")
    print("\n".join(f"  {rid:34s} share {share:4.0%} implied x{factor:.2f}" for rid, share, factor in attention_implied(cs)))
    print(fh.said_together(cs))
    print("\n" + p43.summary("perf_heldout50", cs))


if __name__ == "__main__":
    main()
