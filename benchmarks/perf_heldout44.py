"""Held-out check on published runs added 2026-12-05 (eighteenth batch: fine-tuning, Axolotl's example READMEs;
nothing is fitted on them):

(1) Axolotl's Llama 4 examples (axolotl-ai-cloud/axolotl examples/llama-4/README.md and configs at 682a9cf79,
2025-04-16, transformers 4.51.2): Llama 4 Scout 17B-16E QLoRA (NF4 on the attention, shared-expert and linearized
routed-expert linears; LoRA r 32 on q / k / v / o and the shared expert) in packs of 4,096, on one H100 (compiled,
CPU-offloaded checkpointing, Cut Cross Entropy; 64.5 GB at 519 tokens/s) and under FSDP2 on 4 H100 (batch 2,
checkpointing, the model's own loss; 62.8 GB a GPU at 280 tokens/s a GPU). Time and memory, as the README rounds them
off its WandB runs.
(2) Axolotl's Olmo 3 example (examples/olmo3 at 006f22627, 2025-11-24): Olmo-3-7B QLoRA r 32 on every linear layer,
packs of 2,048, batch 2, "about 11.3 GiB VRAM".
(3) Axolotl's GLM-4.5-Air example (examples/glm45 at 753906cfc, 2026-03-05): QLoRA with the routed experts quantised
too (quantize_moe_experts), LoRA r 16 on q / k / v / o, packs of 2,048, batch 2, "1x80GB @ ~63.4GiB/GPU".
(4) Axolotl's Magistral and Devstral examples (examples/magistral at eac4a61f5, 2025-06-12; examples/devstral at
8c6a6ea6e, 2025-07-08): QLoRA r 32 on every linear layer of Magistral-Small-2506 / Devstral-Small-2505 (Mistral Small
3.1's shapes: heldout_models.yaml mistral-small-3.1-24b), packs of 2,048, batch 2; Magistral with the model's own loss,
Devstral with Cut Cross Entropy: "about 24GB" / "about 21GB".
The Olmo and GLM figures are one of the three allocator statistics Axolotl logs at those commits (max active, max
allocated, device reserved; the README does not say which): scored as GiB-allocator. The Llama 4, Magistral and
Devstral figures' kind is not stated (Axolotl's log then printed allocated, cache and misc GB, 1024^3 bytes each):
scored against the estimate's total, GB read as GiB.

Not rows (read, said in docs/known-gaps.md 152): the Qwen3 30B-A3B NVFP4 MoE-LoRA figures (examples/qwen3, a
frozen NVFP4 base and SonicMoE kernels: no job field holds a 4-bit floating-point frozen base), Ministral 8B (no
preset and no citable config.json in the stored sources) and Mistral Small 3.1's vision example (an image dataset),
the Qwen3.5 / Qwen3-Next / GLM-4.7-Flash tables (Gated DeltaNet or MLA shapes without a preset) and Liger-Kernel's
README benchmarks (figures only in charts).

Data: benchmarks/data/heldout_2026r_axolotl_examples.csv (finetune_heldout's columns with perf_heldout40's fsdp /
checkpoint_impl, a `network` and a `refused` column; every setting the sources do not state is named in the row's
`assumed`, with the code's default as read).

Printed: each row (published, predicted, error), MAPE and median per source and metric, and a probe, not scored: the
Llama 4 rows as if only the routed experts ran (experts_implementation grouped_mm). Scored, the rows run every routed
expert on every token, the hf style's default for Llama 4 (strategy.experts_implementation dense_all: transformers'
Llama4TextMoe repeats each token over the 16 experts and scales the input by a router score that is zero off the chosen
one; docs/known-gaps.md 154).

Sign: (predicted - published) / published; + = predicted too fast (time) or too large (memory).

Run: python benchmarks/perf_heldout44.py
"""

from __future__ import annotations

from pathlib import Path

import finetune_heldout as fh
import perf_heldout43 as p43
from harness import Case, print_case_rows, scored
from trainsizer.catalog import load_catalog

DATA = Path(__file__).resolve().parent / "data"
AXOLOTL_EXAMPLES = DATA / "heldout_2026r_axolotl_examples.csv"
MODELS = DATA / "heldout_models.yaml"  # mistral-small-3.1-24b (no preset): Magistral's and Devstral's shapes
SOURCES = (AXOLOTL_EXAMPLES,)
BATCH = fh.Batch(SOURCES, (MODELS,))
rows, models, job, cases = BATCH.rows, BATCH.models, BATCH.job, BATCH.cases
# rows whose MoE blocks run every routed expert on every token (transformers 4.51 Llama4TextMoe.forward:
# hidden_states.repeat(num_experts, 1) scaled by the router scores; Axolotl's linearized Llama4TextExperts at 682a9cf79
# loops over the experts on that repeated input): the estimate's default for them (experts_implementation dense_all)
DENSE_EXPERT_ROWS = ("axol4_scout_qlora_1xh100", "axol4_scout_qlora_fsdp2_4xh100")


def routed_only_cases() -> list[Case]:
    """DENSE_EXPERT_ROWS with the routed experts alone running (experts_implementation grouped_mm): what the default
    dense_all does to the rows (a probe of the mechanism, not a score)."""
    cat, archs = load_catalog(), models()
    out: list[Case] = []
    for r in rows():
        if r["id"] in DENSE_EXPERT_ROWS:
            out += fh.row_cases(r, cat, archs, strategy_extra={"experts_implementation": "grouped_mm"})
    return out


def probe_lines(cs: list[Case], probe: list[Case]) -> list[str]:
    """Each probed figure: measured, predicted as scored (every expert on every token), predicted with the routed
    experts alone."""
    was = {(c.row_id, c.metric): c for c in cs}
    out = []
    for c in probe:
        if c.skipped or (c.row_id, c.metric) not in was:
            continue
        w = was[(c.row_id, c.metric)]
        out.append(f"  {c.row_id:32s} {c.metric:9s} measured {c.measured:8.1f} predicted {w.predicted:8.1f} "
                   f"({100 * w.err:+.1f}%), routed experts only {c.predicted:8.1f} ({100 * c.err:+.1f}%)")
    return out


def main() -> None:
    cs = cases()
    print("Axolotl's example READMEs: (1) Llama 4 Scout QLoRA on 1 / 4 H100 (tokens/s, memory), (2) Olmo 3 7B, "
          "(3) GLM-4.5-Air and (4) Magistral / Devstral 24B QLoRA (memory) (held out, nothing fitted):")
    print_case_rows([c for c in cs if c.metric in ("tokens_s", "peak_gib")], 32, "9.1f")
    print("\nper source:")
    print("\n".join(p43.source_lines(cs)))
    print("\nprobe, not scored: scored with every routed expert on every token (dense_all, transformers' "
          "Llama4TextMoe), and with the routed experts alone (grouped_mm):")
    print("\n".join(probe_lines(cs, routed_only_cases())))
    print(fh.said_lines(cs))
    print("\n" + p43.summary("perf_heldout44", cs))
    print(f"scored figures: {len(scored(cs, 'tokens_s')) + len(scored(cs, 'peak_gib'))}")


if __name__ == "__main__":
    main()
