"""Held-out check on published runs added 2026-12-06 (thirty-third batch: fine-tuning peak memory as torchtune stated
it in April 2024; nothing is fitted on them), two sources no benchmark held:

(1) torchtune's tutorials of April 2024 (pytorch/torchtune docs/source/tutorials, at the commits that wrote each
figure): the LoRA tutorial's peak-memory table (Llama2-7B, lora_finetune_single_device with llama2/7B_lora_single_device:
LoRA on q / v or on every linear and the output projection, rank 8 or 64), the QLoRA tutorial's reserved peak in
training (llama2/7B_qlora_single_device) and the Llama3 tutorial's peak (llama3/8B_lora_single_device). Every run: one
GPU, bf16 weights and adapters, activation checkpointing, micro-batch 2 of alpaca-cleaned truncated at 512 tokens,
the upcast loss; figures from torchtune's utils.memory_stats_log (GB of 1e9 bytes), reserved where the tutorial says
so (GB-reserved: torch.cuda.max_memory_reserved with the caching allocator's growth), of unstated kind where it does
not (GB-allocator).
(2) torchtune's README memory table as it stood at 20747cd8 (2024-04-18), before the May table (tt24.05's rows)
replaced it: Llama2-7B QLoRA and LoRA on one RTX 4090, LoRA under FSDP on two (no checkpointing), the low-memory full
fine-tune (PagedAdamW stepped in the backward) on one and the FSDP full fine-tune on four; micro-batch 2 of Alpaca at
512 tokens; 'Peak Memory per GPU' of unstated kind (GB-allocator).

Not rows (read, said in docs/known-gaps.md 229): the tutorials' model-init figures (no training step in them), the
E2E tutorial's '~16GB' (approximate), and the QLoRA tutorial's iterations a second (the card is not named).

Data: benchmarks/data/heldout_2027g_torchtune_tutorials.csv and heldout_2027g_torchtune_readme_2024_04.csv
(finetune_heldout's columns with `lora_dropout`,
`checkpoint_impl`, `epoch_samples`, `expandable_segments` and `nf4_quantize_unchunked` (torchtune 0.1's QLoRA init,
estimate.nf4_init); every setting the source does not state is in the row's
`assumed`, with the default read at the row's commit).

Printed: each row (published, predicted, error), per source, and what the adapters add: the LoRA table's rows against
its Q and V rank-8 row, measured and predicted.

Sign: (predicted - published) / published; + = predicted too large (memory).

Run: python benchmarks/perf_heldout59.py
"""

from __future__ import annotations

from pathlib import Path

import finetune_heldout as fh
import perf_heldout43 as p43
from harness import Case, print_case_rows, scored

DATA = Path(__file__).resolve().parent / "data"
TUTORIALS = DATA / "heldout_2027g_torchtune_tutorials.csv"
README_0424 = DATA / "heldout_2027g_torchtune_readme_2024_04.csv"
SOURCES = (TUTORIALS, README_0424)
BATCH = fh.Batch(SOURCES)
rows, job, cases = BATCH.rows, BATCH.job, BATCH.cases
LORA_BASE = "tttut24.04_llama2-7b_lora_qv_r8"  # the LoRA table's lightest row: the config as shipped


def adapter_deltas(cs: list[Case]) -> list[tuple[str, float, float]]:
    """(row, measured, predicted GiB above the LoRA table's Q and V rank-8 row) for the table's other rows."""
    got = {c.row_id: c for c in scored(cs, "peak_gib") if c.row_id.startswith("tttut24.04_llama2-7b_lora_")}
    base = got[LORA_BASE]
    return [(rid, c.measured - base.measured, c.predicted - base.predicted) for rid, c in got.items() if rid != LORA_BASE]


def main() -> None:
    cs = cases()
    print("(1) torchtune tutorials, April 2024: Llama2-7B LoRA / QLoRA and Llama3-8B LoRA on one GPU, "
          "lora_finetune_single_device, alpaca-cleaned at 512 tokens, batch 2, checkpointed (peak GB as logged); "
          "(2) torchtune's April 2024 README memory table: Llama2-7B on 1 / 2 / 4 RTX 4090 (held out, nothing fitted):")
    print_case_rows([c for c in cs if c.metric in ("tokens_s", "peak_gib")], 44, "9.2f")
    print("\nper source:")
    print("\n".join(p43.source_lines(cs)))
    print("\nGiB the LoRA table's rows add above its Q and V rank-8 row (measured vs predicted):")
    print("\n".join(f"  {rid.rsplit('_lora_', 1)[1]:8s} measured {m:5.2f} predicted {p:5.2f}"
                    for rid, m, p in adapter_deltas(cs)))
    print(fh.said_lines(cs))
    print("\n" + p43.summary("perf_heldout59", cs))


if __name__ == "__main__":
    main()
