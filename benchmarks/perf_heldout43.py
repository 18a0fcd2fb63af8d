"""Held-out check on published runs added 2026-12-05 (seventeenth batch: fine-tuning stacks, second pass; nothing is
fitted on them):

(1) PEFT's accelerate guides (huggingface/peft docs/source/accelerate/fsdp.md and deepspeed.md: the LoRA sections
added in #1489 at aa2ca83ca, 2024-02-26, the QLoRA sections in #1550 at 6008f272a, 2024-03-13), running PEFT's
examples/sft/train.py through TRL's SFTTrainer on Llama-2-70B, ultrachat-10k packed to 2,048: LoRA rank 8 on every
linear layer over 8 H100 80GB under accelerate's FSDP1 and DeepSpeed ZeRO-3 (batch 8 a GPU, gradient checkpointing),
and NF4 QLoRA over 2 GPUs under FSDP1 with and without CPU offload and under ZeRO-3 (batch 2 a GPU). Peak memory a
GPU as the guides state it (the LoRA figures read off a usage chart: device memory in use, scored against the
estimate's total; the FSDP LoRA figure is a stated range, 72-80 GB, scored at its middle).
(2) accelerate's FSDP2 + torchao float8 example (huggingface/accelerate examples/fsdp2 at d2e6b031, 2025-06-10):
Llama 3.1 8B on 8 H100, batch 1 x 8,192 a GPU, regional compile, no checkpointing; bf16 and float8 tensorwise with
float8 all-gathers: tokens/s a GPU as the README rounds them off its chart.
(3) Axolotl's gpt-oss examples (axolotl-ai-cloud/axolotl examples/gpt-oss/README.md and configs at 50f2b94d5,
2025-08-08): gpt-oss-20b LoRA on one 48 GB card, full fine-tuning under FSDP2 on 8 x 48 GB and 4 x 80 GB, FSDP2 with
parameter offload on 2 x 24 GB, and gpt-oss-120b FSDP2 with offload on 8 x 80 GB; packs of 4,096, gradient
checkpointing with activation offloading, Cut Cross Entropy. Peak memory a GPU as the README states it (the logs'
device_mem_reserved, rounded); the GPUs are named by their memory only.
(4) Refused in the data: the Hugging Face blog post "Fine-tuning Llama 2 70B using PyTorch FSDP" (huggingface/blog
ram-efficient-pytorch-fsdp.md, 2023-09-13): full fine-tuning of Llama-2-70B on 2 nodes of 8 A100 80GB over Elastic
Fabric Adapter, 500 steps of 16 x 2,048 packed tokens in "~13.5 hours". The wall-clock holds five evaluations and
three checkpoint saves besides the steps: not a step time; the estimate is printed beside it, not scored.

Data: benchmarks/data/heldout_2026q_peft_accelerate.csv and heldout_2026q_axolotl_gptoss.csv (finetune_heldout's
columns with perf_heldout40's fsdp / checkpoint_impl, a `network` and a `refused` column; every setting the sources do
not state is named in the row's `assumed`, with the code's default as read).

Printed: each row (published, predicted, error), MAPE and median per metric, the FSDP / ZeRO-3 and offload ratios of
the memory rows (measured vs predicted), refused rows and rows said not to fit.

Sign: (predicted - published) / published; + = predicted too fast (time) or too large (memory).

Run: python benchmarks/perf_heldout43.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import finetune_heldout as fh
from harness import Case, mape, print_case_rows, scored
from trainsizer.catalog import load_catalog

DATA = Path(__file__).resolve().parent / "data"
PEFT_ACCELERATE = DATA / "heldout_2026q_peft_accelerate.csv"
AXOLOTL_GPTOSS = DATA / "heldout_2026q_axolotl_gptoss.csv"
SOURCES = (PEFT_ACCELERATE, AXOLOTL_GPTOSS)
BATCH = fh.Batch(SOURCES)
rows, job, cases = BATCH.rows, BATCH.job, BATCH.cases
# (row, over row): what one setting changes on one model, measured and modelled
PAIRS = (("peftdoc_70b_lora_zero3_8xh100", "peftdoc_70b_lora_fsdp_8xh100"),
         ("peftdoc_70b_qlora_zero3_2gpu", "peftdoc_70b_qlora_fsdp_2gpu"),
         ("peftdoc_70b_qlora_fsdp_offload_2gpu", "peftdoc_70b_qlora_fsdp_2gpu"),
         ("axogptoss_20b_fft_fsdp2_4x80gb", "axogptoss_20b_fft_fsdp2_8x48gb"))


def refused_rows() -> list[dict[str, str]]:
    return [r for r in rows() if r["refused"]]


def refused_estimates() -> list[str]:
    """What the estimate says for each row refused in the data, beside the source's figure (printed, not scored)."""
    cat = load_catalog()
    out = []
    for r in refused_rows():
        (c,) = [c for c in fh.row_cases(r, cat) if c.metric == "tokens_s"]
        out.append(f"  {r['id']:38s} source {c.measured:9.1f} tokens/s, estimate {c.predicted:9.1f} "
                   f"(the source's figure over the estimate's {c.measured / c.predicted:.3f})")
    return out


def _median(cs: list[Case]) -> float:
    return 100 * float(np.median([c.err for c in cs]))


def pair_lines(cs: list[Case]) -> list[str]:
    """Measured and predicted peak GiB of each PAIRS row over its partner (one setting changed)."""
    mem = {c.row_id: c for c in scored(cs, "peak_gib")}
    return [f"  {a:38s} over {b:32s} measured {mem[a].measured / mem[b].measured:.3f} "
            f"predicted {mem[a].predicted / mem[b].predicted:.3f}"
            for a, b in PAIRS if a in mem and b in mem]


def source_lines(cs: list[Case]) -> list[str]:
    """Each source's n, MAPE and median per metric."""
    out = []
    for metric in ("tokens_s", "peak_gib"):
        got = scored(cs, metric)
        for src in dict.fromkeys(c.source for c in got):
            sub = [c for c in got if c.source == src]
            out.append(f"  {src:52s} {metric:9s} n={len(sub):2d} MAPE {mape(sub):5.1f}% (median {_median(sub):+.1f}%)")
    return out


def summary(name: str, cs: list[Case]) -> str:
    """One line: each metric's n, MAPE and median, refused and not-fitting counts."""
    parts = []
    for metric, label in (("tokens_s", "time"), ("peak_gib", "peak memory")):
        got = scored(cs, metric)
        if got:
            parts.append(f"{label}: n={len(got)} MAPE {mape(got):.1f}% (median {_median(got):+.1f}%)")
    refused = sum(c.metric == "refused" for c in cs)
    unfit = sum(c.metric == "fits" for c in cs)
    return f"{name} " + "; ".join(parts) + f"; refused {refused}, said not to fit {unfit}"


def main() -> None:
    cs = cases()
    print("(1) PEFT accelerate guides (Llama-2-70B LoRA / QLoRA peak memory a GPU), (2) accelerate's FSDP2 + float8 "
          "example (tokens/s a GPU) and (3) Axolotl's gpt-oss examples (reserved memory a GPU) (held out, nothing "
          "fitted):")
    print_case_rows([c for c in cs if c.metric in ("tokens_s", "peak_gib")], 38, "9.1f")
    print("\nper source:")
    print("\n".join(source_lines(cs)))
    print("\nZeRO-3 over FSDP, CPU offload over none, 4 over 8 GPUs (peak GiB, measured vs predicted):")
    print("\n".join(pair_lines(cs)))
    refused = [c for c in cs if c.metric == "refused"]
    unfit = [c for c in cs if c.metric == "fits"]
    print(f"\nrefused rows: {len(refused)}" + "".join(f"\n  {c.row_id}: {c.skipped}" for c in refused))
    print("the estimate beside the figures refused in the data (not scored):")
    print("\n".join(refused_estimates()))
    print(f"rows that ran, said not to fit by the memory estimate: {len(unfit)}"
          + "".join(f"\n  {c.row_id}: {c.skipped}" for c in unfit))
    print("\n" + summary("perf_heldout43", cs))


if __name__ == "__main__":
    main()
