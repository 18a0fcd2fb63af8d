"""Held-out check on published runs added 2026-12-06 (thirty-fifth batch: fine-tuning time and peak memory under the
HF Trainer / TRL / PEFT / bitsandbytes / FSDP1 stack of 2024-2025; nothing is fitted on them), three files of one suite no
benchmark held:

(1) IBM's fms-acceleration benchmark suite (foundation-model-stack/fms-acceleration scripts/benchmarks/refs/
a100_80gb.csv as written at 24bdadb, 2025-02-07, with its refs/requirements.txt: torch 2.4.1, transformers 4.48.1,
TRL 0.13.0, PEFT 0.13.2, accelerate 1.0.1, flash-attn 2.7.3, bitsandbytes 0.43.3, fms-hf-tuning 2.5.0): fms-hf-tuning's
SFTTrainer on alpaca-cleaned packed to 4,096 tokens, FlashAttention-2, reentrant checkpointing of every layer, 100 steps
of an effective batch of 4 or 8 sequences on one A100-80GB or two under FSDP1 FULL_SHARD. The plain-stack rows only
(framework_config none: full fine-tuning and LoRA r 16 on q / k / v / o; baseline-peft-bnb: NF4 QLoRA through PEFT and
bitsandbytes); Mistral-7B, Mixtral-8x7B and Llama-2-70B. The rows of the suite's own kernels (foak, accelerated-peft,
GPTQ), the gpt_bigcode rows (no preset) and the runs that ran out of memory (no figure) are not rows.

(2) The same suite's refs/a100_80gb_granite.csv at 426a4a5 (2024-09-28; refs/requirements_granite.txt: torch 2.4.1,
transformers 4.45.0, TRL at 9af473417, PEFT 0.12.0, accelerate at 4305033f, bitsandbytes 0.43.3): IBM's PowerLM-3b
(GraniteForCausalLM, inline architecture below) full fine-tuning, LoRA and QLoRA in the same three plain scenarios, here
with bf16 True (the Trainer's autocast; under FSDP accelerate then holds the trainable flat parameters in fp32).

(3) The same file as (1) at 4e81c64 (2024-09-16; transformers 4.44.2, TRL 0.10.1, PEFT 0.12.0, accelerate 0.33.0):
the full fine-tuning and LoRA runs of Mistral-7B and Mixtral-8x7B with bf16 True, which 9239802 took out of those two
scenarios: the Trainer's autocast, and under FSDP accelerate's fp32 flat parameters. Twins of (1)'s rows with the one
flag flipped (printed: the flag's effect, measured and predicted).

Data: benchmarks/data/heldout_2027i_fms_acceleration.csv, heldout_2027i_fms_acceleration_granite.csv and
heldout_2027i_fms_acceleration_bf16.csv (finetune_heldout's columns, then the strategy settings the stack fixes; every
setting the source does not state is in the row's `assumed`, read at the pinned versions).

Printed: each row (published, predicted, error), per source and figure, the per-GPU throughput of the QLoRA and LoRA
rows against their LoRA / full twins (same model, GPUs and micro-batch), and (3)'s rows against (1)'s: measured and
predicted.

Sign: (predicted - published) / published; + = predicted too fast (tokens/s) or too large (memory).

Run: python benchmarks/perf_heldout61.py
"""

from __future__ import annotations

from pathlib import Path

import finetune_heldout as fh
import perf_heldout43 as p43
from harness import Case, print_case_rows, scored

DATA = Path(__file__).resolve().parent / "data"
FMS = DATA / "heldout_2027i_fms_acceleration.csv"
GRANITE = DATA / "heldout_2027i_fms_acceleration_granite.csv"
BF16 = DATA / "heldout_2027i_fms_acceleration_bf16.csv"
SOURCES = (FMS, GRANITE, BF16)
# ibm/PowerLM-3b (no preset): arXiv:2408.13359 Table 4 (embedding 2304, 40 layers, 36 heads and 36 KV heads of 64, MLP
# 9216 SwiGLU, 3.5B parameters); vocabulary 49,152 with tied embeddings: the count that gives its 3.5B (the layers hold
# 3.40B, one embedding 0.11B; its config.json is not stored here)
MODELS = {"powerlm-3b": {"layers": 40, "hidden": 2304, "ffn": 9216, "heads": 36, "kv_heads": 36, "vocab": 49152,
                         "tied_embeddings": True, "mlp": "swiglu", "norm": "rmsnorm", "position": "rope"}}
BATCH = fh.Batch(SOURCES, inline=MODELS)
rows, job, cases = BATCH.rows, BATCH.job, BATCH.cases


def method_ratios(cs: list[Case], method: str, base: str) -> list[tuple[str, float, float]]:
    """(twin, measured, predicted tokens/s ratio) of each `method` row over its `base` twin (same model, GPUs and
    micro-batch: the row id with the method swapped)."""
    got = {c.row_id: c for c in scored(cs, "tokens_s")}
    out = []
    for rid, c in got.items():
        twin = got.get(rid.replace(f"_{method}_", f"_{base}_"))
        if f"_{method}_" in rid and twin is not None:
            out.append((rid, c.measured / twin.measured, c.predicted / twin.predicted))
    return out


def bf16_flag(cs: list[Case], metric: str) -> list[tuple[str, float, float]]:
    """(row, measured, predicted) ratio of each (3) row's figure (bf16 True) over its (1) twin (no bf16 flag: same
    model, method, GPUs and micro-batch)."""
    got = {c.row_id: c for c in scored(cs, metric)}
    out = []
    for rid, c in got.items():
        twin = got.get(rid.replace("fmsacc2409_", "fmsacc25_"))
        if rid.startswith("fmsacc2409_") and twin is not None:
            out.append((rid, c.measured / twin.measured, c.predicted / twin.predicted))
    return out


def main() -> None:
    cs = cases()
    print("(1) fms-acceleration's A100-80GB benchmarks (24bdadb, 2025-02) and (2) its PowerLM-3b file (426a4a5, 2024-09): "
          "fms-hf-tuning SFTTrainer, alpaca-cleaned packed to 4,096, FA2, reentrant checkpointing, 1 GPU or 2 under "
          "FSDP1; (3) the 2024-09 version of (1)'s file with bf16 True; full / LoRA / bnb QLoRA (tokens/s per GPU, "
          "peak allocated GiB; held out, nothing fitted):")
    print_case_rows([c for c in cs if c.metric in ("tokens_s", "peak_gib")], 36, "9.2f")
    print("\nper source:")
    print("\n".join(p43.source_lines(cs)))
    for method, base in (("qlora", "lora"), ("lora", "full")):
        print(f"\n{method} over {base}, tokens/s a GPU (measured vs predicted):")
        print("\n".join(f"  {rid:36s} measured {m:5.3f} predicted {p:5.3f}" for rid, m, p in method_ratios(cs, method, base)))
    for metric, what in (("tokens_s", "tokens/s a GPU"), ("peak_gib", "peak GiB")):
        print(f"\nbf16 True (2024-09) over no bf16 flag (2025-02), {what} (measured vs predicted):")
        print("\n".join(f"  {rid:36s} measured {m:5.3f} predicted {p:5.3f}" for rid, m, p in bf16_flag(cs, metric)))
    print(fh.said_lines(cs))
    print("\n" + p43.summary("perf_heldout61", cs))


if __name__ == "__main__":
    main()
