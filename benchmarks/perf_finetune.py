"""Held-out check on fine-tuning time: NeMo 24.07 SFT and LoRA on DGX-H100 (FP8, SQuAD packed to 4096 tokens;
NVIDIA/NeMo docs/source/performance/performance_summary.md, "Finetuning" table). No constant fitted on them.

Rows: benchmarks/data/nemo_finetune_perf.csv. Each goes through the job path: framework megatron-core, FP8
delayed scaling, the row's TP / PP / VPP (the NeMo-Framework-Launcher H100 PEFT examples the table was
measured with: examples/peft/llama/h100/*.sh; 13B SFT runs PP 4 x VPP 10, 70B SFT PP 4 x VPP 20),
micro-batch 1, packed sequences (SQuAD-v1.1 samples attend within themselves; their mean length is not stated on the page: ~250 tokens assumed, question + context + answer
with the Llama 2 tokenizer), LoRA on every linear (NeMo 2 default target_modules linear_qkv, linear_proj,
linear_fc1, linear_fc2) with rank 32 (NeMo 2 default dim), no recompute.

Run: python benchmarks/perf_finetune.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from trainsizer.catalog import load_catalog
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.scenario import resolve_job

DATA = Path(__file__).resolve().parent / "data" / "nemo_finetune_perf.csv"
MODELS = {"LLAMA2-7B": "llama-2-7b", "LLAMA2-13B": "llama-2-13b", "LLAMA2-70B": "llama-2-70b"}
SQUAD_AVG_TOKENS = 250  # assumed (see module docstring)


def job(r: dict[str, str], packed: bool = True) -> dict:
    lora = r["task"] == "LoRA"
    out = {
        "model": MODELS[r["model"]], "method": "lora" if lora else "full", "seq_len": int(r["seq_len"]),
        # the unpacked comparison keeps rows of seq_len full of tokens (data as a token count): only the attention
        # span differs from the packed rows; data as samples without packing would pad each to its own length
        "data": {"samples": 1e5, "avg_tokens": SQUAD_AVG_TOKENS} if packed else {"tokens": 1e5 * SQUAD_AVG_TOKENS},
        "packing": packed,
        "global_batch": {"sequences": int(r["global_batch_seqs"])}, "precision": "fp8", "fp8_recipe": "delayed",
        "hardware": {"accelerator": "h100-sxm-80gb", "count": int(r["gpu_count"]), "network": "ib-ndr400"},
        "strategy": {"tp": int(r["tp"]), "pp": int(r["pp"]), "vpp": int(r["vpp"]),
                     "micro_batch": int(r["micro_batch"]),
                     "recompute": "none", "distributed_optimizer": True, "framework": "megatron-core"},
    }
    if lora:
        # NeMo 24.07 LoRA (the launcher's conf/peft/llama/sft.yaml lora_tuning sets adapter_dim 32 and no
        # target_modules): nemo/collections/nlp/parts/peft_config.py get_target_modules defaults to
        # ["attention_qkv"], one adapter on the fused QKV projection
        out["lora"] = {"rank": 32, "targets": ["qkv_proj"]}
    return out


def cases(packed: bool = True) -> list[tuple[str, float, float]]:
    cat = load_catalog()
    out = []
    for r in csv.DictReader(DATA.open(encoding="utf-8")):
        sc = resolve_job(job(r, packed), cat)
        o = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
        step = float(np.asarray(o["step_s"]).reshape(-1)[0])
        out.append((r["id"], float(r["tokens_per_sec_per_gpu"]),
                    sc.training.tokens_per_step / step / sc.system.gpus))
    return out


def main() -> None:
    for packed in (True, False):
        cs = cases(packed)
        print(f"\n{'packed' if packed else 'unpacked (attention over the whole 4096 row)'}:")
        for rid, m, p in cs:
            print(f"  {rid:40s} measured {m:7.0f} predicted {p:7.0f} ({100 * (p - m) / m:+.1f}%)")
        print(f"  MAPE {100 * np.mean([abs(p - m) / m for _, m, p in cs]):.1f}% over {len(cs)} rows")


if __name__ == "__main__":
    main()
