"""Held-out check on published runs added 2026-12-05 (twenty-sixth batch: fine-tuning on AMD Instinct MI300X under
Axolotl; nothing is fitted on them), one source no benchmark held:

(1) Shisa.AI's shisa-v2 repository (shisa-ai/shisa-v2 train/v2.1): the '1 x MI300 Runs' table of
5090-numerics/README.md at 7ad6a87 (2025-11-11) -- Llama 3.2 1B fully fine-tuned by Axolotl on one MI300X, 8,192-
position packs padded to the full length, the Liger plugin (RoPE, RMSNorm, SwiGLU, fused linear cross-entropy), five
runs across the optimizer (torchao 8-bit AdamW / AdamW), DeepSpeed ZeRO-3 on the one GPU, micro-batch 64 x 1 or 8 x 8
and gradient checkpointing on or off, each with its Axolotl config beside the table -- and the 'Observed dense runs'
table of PLAN-train-estimates.md at 0acbd28 (2025-11-20): Phi-4 14B fully fine-tuned on 8 MI300X under ZeRO-3 (run
149, config at ec0a4e7).
Scored: peak memory (the table's 'mem', one of Axolotl's allocator figures; the Phi-4 row a percentage of the card).
Time is not scored: Axolotl's tokens_per_second_per_gpu counts the labelled (assistant) tokens only, whose share of
the packs is not published; the runs of one packing geometry (the same packs, so the same labelled tokens a step) are
compared with each other instead (speed_ratios), and the labelled rate is kept in the data (trainable_tokens_per_s).
Printed beside, a counterfactual, not a score: the checkpointed rows with the loss items and a re-run layer's working
set summed (strategy.live_at_rerun loss, the hf style's count before docs/known-gaps.md 203), where the estimate takes
the larger of the two phases (summed_peaks; known-gaps 188 (a)).

Data: benchmarks/data/heldout_2026z_shisa_mi300x.csv (perf_heldout50's columns with norm_kernel, activation_kernel,
rope_kernel (the Liger kernels the configs switch on) and trainable_tokens_per_s; every setting a source does not
state is in the row's `assumed`); model beside the presets: heldout_models.yaml phi-4-14b (llama-3.2-1b is
finetune_heldout's).

Not rows (read, said in docs/known-gaps.md 188): the same repository's 8 x MI300X Llama 3.2 3B SFT and the DPO runs
(tokens/s of the labelled tokens only, no memory figure), its Qwen3-30B-A3B and Llama 3.3 70B wall times (crashed or
in-progress runs, estimates); Primus's pipeline blog (Llama 2 7B PP 8 on MI300X: its batch and its TFLOP/s accounting
not stated); ROCm's MI300X FSDP fine-tuning blog (figures in images only); ROCm TransformerEngine issues 72 / 76 / 78 /
79 (preliminary TFLOP/s of a custom TE model from a script not read whole).

Sign: (predicted - published) / published; + = predicted too fast (time) or too large (memory).

Run: python benchmarks/perf_heldout52.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import finetune_heldout as fh
import perf_heldout as ph
import perf_heldout43 as p43
import perf_heldout47 as p47
from harness import kept_rows, num, print_case_rows
from trainsizer.estimate.step_time import step_time_arrays

DATA = Path(__file__).resolve().parent / "data"
SHISA = DATA / "heldout_2026z_shisa_mi300x.csv"
SOURCES = (SHISA,)
BATCH = fh.Batch(SOURCES, (ph.MODELS,), overlays=True)  # perf_heldout50's models and catalogs
rows, models, job, cases = BATCH.rows, BATCH.models, BATCH.job, BATCH.cases




def _scenario(r: dict[str, str]):
    return fh._scenario(r, p47.catalog(r["overlay"]), models())


def step_s(r: dict[str, str]) -> float:
    """The estimate's step time of the row's job (s)."""
    sc = _scenario(r)
    return float(np.asarray(step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)["step_s"]).reshape(-1)[0])


def speed_ratios() -> list[tuple[str, str, float, float]]:
    """(row, base row, measured, predicted) labelled tokens/s of each run over the first run of its packing geometry
    (same model, GPUs, micro-batch and accumulation: the same packs, so the same labelled tokens a step): measured from
    trainable_tokens_per_s, predicted as the base's step time over the run's."""
    groups: dict[tuple, list[dict[str, str]]] = {}
    for r in kept_rows(rows()):
        if r["trainable_tokens_per_s"]:
            groups.setdefault((r["model"], r["gpu_count"], r["micro_batch"], r["global_batch_seqs"]), []).append(r)
    out = []
    for base, *others in groups.values():
        for r in others:
            out.append((r["id"], base["id"], num(r["trainable_tokens_per_s"]) / num(base["trainable_tokens_per_s"]),
                        step_s(base) / step_s(r)))
    return out


def summed_peaks() -> list[tuple[str, float, float, float]]:
    """A counterfactual, not a score: (row, measured, predicted, predicted with strategy.live_at_rerun "loss") GiB of
    each checkpointed row. Axolotl trains through transformers' Trainer, which frees the model's outputs before the
    backward, and Liger's fused linear cross-entropy makes its gradient in the forward, so the loss phase and a
    re-run layer are apart (the hf style's live_at_rerun none, memory._backward_phases); "loss" is the sum the hf
    style counted before (docs/known-gaps.md 188 (a), 203)."""
    out = []
    cat = p47.catalog("")
    for r in kept_rows(rows()):
        if r["recompute"] != "full" or not r["peak_mem"]:
            continue
        c, s = (next(x for x in fh.row_cases(r, cat, models(), extra) if x.metric == "peak_gib")
                for extra in (None, {"live_at_rerun": "loss"}))
        out.append((r["id"], c.measured, c.predicted, s.predicted))
    return out


def main() -> None:
    cs = cases()
    print("(1) Shisa.AI shisa-v2: Llama 3.2 1B full SFT under Axolotl on one MI300X (5 runs) and Phi-4 14B on 8 MI300X "
          "under ZeRO-3 (peak memory; held out, nothing fitted):")
    print_case_rows([c for c in cs if c.metric in ("tokens_s", "peak_gib")], 50, "9.1f")
    print("\nper source:\n" + "\n".join(p43.source_lines(cs)))
    print("\neach run over the first run of its packing geometry (labelled tokens/s; measured vs predicted):")
    print("\n".join(f"  {rid:50s} / {base[-24:]:24s} measured {m:.3f} predicted {p:.3f}"
                    for rid, base, m, p in speed_ratios()))
    print("\nthe checkpointed rows with the loss phase and a re-run layer's working set summed (live_at_rerun loss), GiB:")
    print("\n".join(f"  {rid:50s} measured {m:6.1f} predicted {p:6.1f}, summed {q:6.1f} ({100 * (q / m - 1):+.1f}%)"
                    for rid, m, p, q in summed_peaks()))
    print(fh.said_together(cs))
    print("\n" + p43.summary("perf_heldout52", cs))


if __name__ == "__main__":
    main()
