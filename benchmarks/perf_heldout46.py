"""Held-out check on published runs added 2026-12-05 (twentieth batch: stacks thin in the data; nothing is fitted on
them):

(1) torchao's low-bit optimizer README (pytorch/ao torchao/prototype/low_bit_optim/README.md at 1e7f132e, #812,
2024-09-05): Llama-2-7B full fine-tuning in full BF16 (weights, gradients and AdamW moments bf16, no fp32 master) on
one A100 with torchtune 52d1b838, Alpaca unpacked in micro-batches of 2, under PyTorch's fused AdamW, bitsandbytes'
8-bit AdamW and torchao's 8-bit AdamW: tokens/s (torchtune's count: every position of the padded micro-batch) and
peak allocated memory. The torchao 4-bit AdamW row is refused (no 4-bit optimizer in the job).
(2) torchtune's README table of 2024-05-09 (pytorch/torchtune README.md at 0217d44c2, #955; replaced in 2024-09 by the
Llama 3.1 table finetune_heldout reads): Llama-2-7B at batch 4 x 2,048 on one RTX 4090, QLoRA (compiled), LoRA and full
fine-tuning with bitsandbytes' PagedAdamW stepped in the backward: tokens/s (every position) and peak memory (GB of a
caching-allocator statistic). Its four multi-GPU rows (2 / 4 RTX 4090, 8 A100 with Llama-2-70B) are refused: the
recipes log rank 0's own tokens, a per-GPU figure, which the 70B rows cannot be.

Not rows (read, said in docs/known-gaps.md 155): the README's ViT-H / ViT-giant tables (image models on an RTX 4070
Ti SUPER: no vision architecture in the catalog), AMD's torchtune Llama-3.1-70B figures in AMD-AIG-AIMA/
pytorch-training-benchmark (a private torchtune branch, unpacked WikiText at micro-batch 64 with "Average" and
"Unmasked" tokens/s/gpu of unstated definition), ROCm/MAD's training READMEs (commands, no figures), AMD's ROCm
performance-results page (its training tables are not in the stored pages) and the ROCm blog on MI355X training
with ROCm 7.0 (ROCm/rocm-blogs ROCm7-MI355X-training-performance, 2025-12-02: MI355X over B200 ratios only, the
figures in images).

Data: benchmarks/data/heldout_2026t_torchao_lowbit.csv and heldout_2026t_torchtune_2024_05.csv (finetune_heldout's columns with perf_heldout40's fsdp /
checkpoint_impl, a `network` and a `refused` column; every setting the source does not state is named in the row's
`assumed`, with the code's default as read).

Printed: each row (published, predicted, error), MAPE and median per source and metric, the 8-bit over fused
ratios (measured vs predicted), the GEMM share each measured step needs beside the estimate's optimizer step,
refused rows.

Sign: (predicted - published) / published; + = predicted too fast (time) or too large (memory).

Run: python benchmarks/perf_heldout46.py
"""

from __future__ import annotations

from pathlib import Path

import finetune_heldout as fh
import perf_heldout43 as p43
from harness import Case, kept_rows, print_case_rows, scored
from trainsizer.catalog import load_catalog
from trainsizer.estimate.step_time import step_time_arrays

DATA = Path(__file__).resolve().parent / "data"
TORCHAO_LOWBIT = DATA / "heldout_2026t_torchao_lowbit.csv"
TORCHTUNE_2024_05 = DATA / "heldout_2026t_torchtune_2024_05.csv"
SOURCES = (TORCHAO_LOWBIT, TORCHTUNE_2024_05)
BATCH = fh.Batch(SOURCES)
rows, job, cases = BATCH.rows, BATCH.job, BATCH.cases
# (row, over row): what the optimizer's state width changes on one run, measured and modelled
PAIRS = (("aolowbit_7b_full_bnb8bit_a100", "aolowbit_7b_full_adamw_fused_a100"),
         ("aolowbit_7b_full_ao8bit_a100", "aolowbit_7b_full_adamw_fused_a100"),
         ("aolowbit_7b_full_ao4bit_a100", "aolowbit_7b_full_adamw_fused_a100"))


def pair_lines(cs: list[Case]) -> list[str]:
    """Each PAIRS row over its partner, tokens/s and peak GiB: measured and predicted."""
    out = []
    for metric in ("tokens_s", "peak_gib"):
        got = {c.row_id: c for c in scored(cs, metric)}
        out += [f"  {a:34s} over {b:34s} {metric:9s} measured {got[a].measured / got[b].measured:.3f} "
                f"predicted {got[a].predicted / got[b].predicted:.3f}" for a, b in PAIRS if a in got and b in got]
    return out


def needed_shares() -> list[tuple[str, float, float]]:
    """(row, the estimate's optimizer step s, share of the A100's dense BF16 peak the rest of the measured step
    needs): the measured step (counted tokens over tokens/s) less the estimate's optimizer step, over the estimate's
    hardware FLOPs (recompute included). A share near 1 at micro-batches of ~320 positions says the run's batch or
    its checkpointing is not the config as read (known-gaps 155 (a))."""
    cat = load_catalog()
    out = []
    for r in kept_rows(rows()):
        sc = fh._scenario(r, cat)
        arrays = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
        flops, opt = (float(arrays[k].reshape(-1)[0]) for k in ("hardware_flops_per_step", "optimizer"))
        step = fh.counted_tokens(r, sc.training) / float(r["tokens_per_s"])
        out.append((r["id"], opt, flops / (step - opt) / 1e12 / sc.system.peak_tflops["bf16"]))
    return out


def main() -> None:
    cs = cases()
    print("(1) torchao's low-bit optimizer README: Llama-2-7B full BF16 fine-tuning on one A100 under torchtune, three "
          "AdamW implementations; (2) torchtune's May 2024 README: Llama-2-7B QLoRA / LoRA / full on one RTX 4090 "
          "(tokens/s, peak memory) (held out, nothing fitted):")
    print_case_rows([c for c in cs if c.metric in ("tokens_s", "peak_gib")], 34, "9.1f")
    print("\nper source:")
    print("\n".join(p43.source_lines(cs)))
    print("\n8-bit over fused AdamW (measured vs predicted):")
    print("\n".join(pair_lines(cs)))
    print("\nthe GEMM share the measured steps need beside the estimate's optimizer step (A100 BF16 dense peak):")
    print("\n".join(f"  {rid:34s} optimizer {1e3 * opt:5.1f} ms, the rest of the step at {share:.2f} of peak"
                    for rid, opt, share in needed_shares()))
    print(fh.said_lines(cs))
    print("\n" + p43.summary("perf_heldout46", cs))
    print(f"scored figures: {len(scored(cs, 'tokens_s')) + len(scored(cs, 'peak_gib'))}")


if __name__ == "__main__":
    main()
