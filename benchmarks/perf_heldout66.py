"""Held-out check on published runs added 2026-12-06 (fortieth batch: MoE full fine-tuning under the HF Trainer and
FSDP1 on one to eight A100s; nothing is fitted on them), one file of a suite earlier batches read and left
(docs/known-gaps.md 248 (e)): hf/moe is the thinnest class of accuracy_bands.

IBM's fms-acceleration scripts/benchmarks/refs/a100_80gb_moe.csv, the same file as written at three commits:
5b35eae (2024-11-13; refs/requirements_moe.txt: torch 2.4.1, transformers 4.45.2, TRL 0.11.4), c959c6b (2025-02-24;
transformers 4.49.0) and 9122a76 (2025-06-16; torch 2.6.0, transformers 4.52.4, TRL 0.17.0). Scenario
accelerated-moe-full: full fine-tuning in bf16 (no master, bf16 AdamW moments) of ibm-granite/granite-3.0-3b-a800m
-instruct (40 experts top-8, inline architecture below) on alpaca-cleaned, unpacked micro-batches of 8 padded to their
longest sample, 100 steps of 128 samples, FlashAttention-2, reentrant checkpointing of every layer, one A100-80GB or two
and four under FSDP1 FULL_SHARD; and (5b35eae) Mixtral-8x7B on eight at micro-batch 1. transformers' GraniteMoe runs its
40 experts one at a time in a Python loop (experts_implementation eager), Mixtral's MixtralSparseMoeBlock likewise.

Figures: train_samples_per_second (the whole job: 12,800 samples over train_runtime), written as tokens/s at the rows'
assumed mean of 125 tokens a sample so the estimate's real tokens a step compare with it; memory: nvidia-smi's peak
memory.used a GPU (the suite's mem_nvidia_mem_reserved, MiB), compared with the estimate's whole device use. The rows of
the suite's own ScatterMoE kernels and expert parallel, and the models whose config.json is not stored
(ibm-research/moe-7b-1b-active-shared-experts, ibm-granite/granite-4.0-tiny-preview), are listed as refused with the
reason (the `refused` column).

Data: benchmarks/data/heldout_2027n_fms_moe.csv (finetune_heldout's columns, then the strategy settings the stack fixes,
the refusal and the file's raw figures: samples_per_s, train_runtime_s, published_tokens_per_s, mem_nvidia_mib).

Printed: each row (published, predicted, error), per source and figure, the positions a sample the file's
train_tokens_per_second implies (its count is the first micro-batch's padding times the steps, not the figure scored),
throughput a GPU from one GPU to two and four under FSDP1 (measured and predicted), the same job across the three
transformers releases and a probe, not scored: the granite rows with the experts as one grouped GEMM, beside the file's
refused ScatterMoE rows.

Sign: (predicted - published) / published; + = predicted too fast (tokens/s) or too large (memory).

Run: python benchmarks/perf_heldout66.py
"""

from __future__ import annotations

from pathlib import Path

import finetune_heldout as fh
import perf_heldout43 as p43
from harness import Case, num, print_case_rows, twin_ratios, whole

DATA = Path(__file__).resolve().parent / "data"
MOE = DATA / "heldout_2027n_fms_moe.csv"
# ibm-granite/granite-3.0-3b-a800m-instruct (GraniteMoeForCausalLM, no preset): the Granite 3.0 report's Table 1
# (ibm-granite/granite-3.0-language-models paper.pdf, 2024-10: embedding 1536, 32 layers, 24 heads, 8 KV heads, MLP 512
# SwiGLU, 40 experts, top-k 8), its 3.1 config.json fields as stored (vocab 49,155, tie_word_embeddings true); family:
# its model_type, granitemoe (experts as GraniteMoeParallelExperts: perf_constants.yaml split_expert_loop_families)
MODELS = {"granite-3.0-3b-a800m": {"family": "granitemoe", "layers": 32, "hidden": 1536, "heads": 24, "kv_heads": 8, "ffn": 512,
                                   "vocab": 49155, "tied_embeddings": True, "mlp": "swiglu", "norm": "rmsnorm",
                                   "position": "rope", "experts": 40, "experts_per_token": 8, "expert_ffn": 512}}
BATCH = fh.Batch((MOE,), inline=MODELS)
rows, job, cases = BATCH.rows, BATCH.job, BATCH.cases
RELEASES = {"v1": "transformers 4.45.2", "v2": "transformers 4.49.0", "v3": "transformers 4.52.4"}


def implied_positions(rs: list[dict[str, str]]) -> list[tuple[str, float]]:
    """(row, positions a sample) the file's train_tokens_per_second gives: its tokens/s x GPUs over samples/s. The
    Trainer's num_tokens counts the first batch's input_ids.numel() once per step, so every row of one commit gives
    one figure: the padded length of the first micro-batch, not the epoch's tokens."""
    return [(r["id"], num(r["published_tokens_per_s"]) * whole(r["gpu_count"]) / num(r["samples_per_s"]))
            for r in rs if not r["refused"]]


def _gpus(rid: str) -> int:
    """A row's GPU count, from its id's last part ("..._4gpu")."""
    return int(rid.rsplit("_", 1)[1].removesuffix("gpu"))


def _one_gpu_twin(rid: str) -> str | None:
    """The one-GPU row of a 2- or 4-GPU granite row's release."""
    return rid.rsplit("_", 1)[0] + "_1gpu" if "granite3b" in rid and _gpus(rid) in (2, 4) else None


def per_gpu_scaling(cs: list[Case]) -> list[tuple[str, float, float]]:
    """(row, measured, predicted) samples a GPU a second of each 2- and 4-GPU granite row over its release's one-GPU
    row (1.000 = no FSDP1 cost a GPU)."""
    return [(rid, m / _gpus(rid), p / _gpus(rid)) for rid, m, p in twin_ratios(cs, "tokens_s", _one_gpu_twin)]


def release_ratios(cs: list[Case], metric: str) -> list[tuple[str, float, float]]:
    """(row, measured, predicted) figure of each later release's granite row over the 4.45.2 file's row on the same
    GPUs: what the software changed, which the estimate (one job for all three) puts at 1.000."""
    def twin(rid: str) -> str | None:
        later = "granite3b" in rid and not rid.startswith("fmsmoe_v1_")
        return "fmsmoe_v1_" + rid.split("_", 2)[2] if later else None

    return twin_ratios(cs, metric, twin)


def grouped_probe(rs: list[dict[str, str]]) -> list[tuple[str, float, float, float]]:
    """(row, measured samples/s, predicted with the experts as one grouped GEMM a projection, the file's ScatterMoE
    ep1 row on the same release and GPU: measured samples/s, 0 where the file has none) of each granite row: the
    estimate's grouped path beside the measured grouped kernels (the ScatterMoE rows are refused: not scored)."""
    from trainsizer.catalog import load_catalog

    cat, by = load_catalog(), {r["id"]: r for r in rs}
    out = []
    for r in rs:
        if r["refused"] or "granite3b" not in r["id"]:
            continue
        tps = [c for c in fh.row_cases(r, cat, MODELS, {"experts_implementation": "grouped_mm"})
               if c.metric == "tokens_s"][0].predicted
        scatter = by.get(r["id"].replace("_none_", "_moe-scattermoe-granite-ep1_"))
        out.append((r["id"], num(r["samples_per_s"]), tps / num(r["avg_tokens"]),
                    num(scatter["samples_per_s"]) if scatter else 0.0))
    return out


def main() -> None:
    cs = cases()
    print("fms-acceleration's MoE file (refs/a100_80gb_moe.csv at 5b35eae 2024-11, c959c6b 2025-02, 9122a76 2025-06): "
          "granite-3.0-3b-a800m full fine-tuning in bf16 on 1-4 A100-80GB (FSDP1 on 2 and 4) and Mixtral-8x7B on 8, "
          "unpacked alpaca-cleaned, HF Trainer (tokens/s = samples/s x 125; nvidia-smi GiB a GPU; held out, nothing "
          "fitted):")
    print_case_rows([c for c in cs if c.metric in ("tokens_s", "peak_gib")], 34, "9.2f")
    print("\nper source:")
    print("\n".join(p43.source_lines(cs)))
    print("\npositions a sample implied by the file's train_tokens_per_second (first micro-batch's padding x steps):")
    print("\n".join(f"  {rid:34s} {p:6.1f}" for rid, p in implied_positions(rows())))
    print("\nsamples a GPU a second over the release's one-GPU row (measured vs predicted):")
    print("\n".join(f"  {rid:34s} measured {m:5.3f} predicted {p:5.3f}" for rid, m, p in per_gpu_scaling(cs)))
    for metric, what in (("tokens_s", "throughput"), ("peak_gib", "peak GiB")):
        print(f"\n{what} of the later releases over transformers 4.45.2 at the same GPUs (measured vs predicted):")
        print("\n".join(f"  {rid:34s} {RELEASES[rid.split('_')[1]]:20s} measured {m:5.3f} predicted {p:5.3f}"
                        for rid, m, p in release_ratios(cs, metric)))
    print("\nprobe, not scored: samples/s with the experts as one grouped GEMM a projection (experts_implementation "
          "grouped_mm) beside the file's ScatterMoE ep1 row (refused; 9122a76 only):")
    print("\n".join(f"  {rid:34s} measured {m:6.2f} (loop)  predicted grouped {p:6.2f}  ScatterMoE ep1 measured "
                    + (f"{s:6.2f}" if s else "     -") for rid, m, p, s in grouped_probe(rows())))
    print(fh.said_lines(cs))
    print("\n" + p43.summary("perf_heldout66", cs))


if __name__ == "__main__":
    main()
