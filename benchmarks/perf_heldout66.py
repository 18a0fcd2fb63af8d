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
assumed mean of 218 tokens a sample (alpaca_cleaned_mean_tokens: yahma/alpaca-cleaned's bytes a formatted row over the
52K Alpaca's, times the 125 Llama 2 tokens of LitGPT's histogram of the latter; docs/known-gaps.md 317 (a)) so the
estimate's real tokens a step compare with it; memory: nvidia-smi's peak
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
refused ScatterMoE rows; the refused ScatterMoE pair (padded and padding-free) split into a cost a position and a cost a
micro-batch beside the grouped path's.

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
# The rows' sample lengths (docs/known-gaps.md 317 (a)). LitGPT's Alpaca histogram (alpaca.jpg, 29de2828: median 110, a
# lognormal of mean 125 Llama 2 tokens with the prompt template, benchmarks/alpaca2k_lengths.py) counts tloen/alpaca-lora's
# alpaca_data_cleaned_archive.json, a file of the 52K Alpaca's size (125 tokens of its ~534 bytes is 4.3 bytes a Llama 2
# token; of alpaca-cleaned's ~932 it would be 7.5). fms-acceleration trains on yahma/alpaca-cleaned, whose rows are
# longer: bytes a row with the Stanford template, arrow's 4-byte offset a string column taken off.
# tatsu-lab/alpaca (the dataset card of disham993/alpaca-train-validation-test-split, the same 52,002 rows split three
# ways): 47,764,738 bytes in four string columns (instruction, input, output and `text`, the formatted prompt and
# response), so text bytes = content + template and 2 x content + template = 47,764,738 / 52,002 - 16
ALPACA_52K = {"bytes": 47_764_738, "rows": 52_002, "columns": 4}
# yahma/alpaca-cleaned: 40,283,906 bytes in its three text columns over 51,760 rows (the dataset card of
# alexrs/alpaca-cleaned-5-clusters, the same rows with an int32 column, 40,490,946 bytes less 4 x 51,760; as the torchao
# rows, benchmarks/data/heldout_2026u_torchao_fp8_finetune.csv)
ALPACA_CLEANED = {"bytes": 40_283_906, "rows": 51_760, "columns": 3}
# the Stanford Alpaca template's bytes a sample on average (its two prompts, 40% of samples with an input: the
# torchtune rows' figure, benchmarks/data/finetune_heldout.csv tt24.11_3b_baseline); LitGPT's histogram's mean (tokens)
ALPACA_TEMPLATE_BYTES, ALPACA_52K_MEAN_TOKENS = 166.0, 125.0


def formatted_bytes() -> tuple[float, float]:
    """(52K Alpaca, alpaca-cleaned): bytes of one sample formatted with the Stanford template, from the cards' counts."""
    per_row = {k: d["bytes"] / d["rows"] - 4 * d["columns"] for k, d in (("52k", ALPACA_52K), ("cleaned", ALPACA_CLEANED))}
    return (per_row["52k"] - ALPACA_TEMPLATE_BYTES) / 2 + ALPACA_TEMPLATE_BYTES, per_row["cleaned"] + ALPACA_TEMPLATE_BYTES


def alpaca_cleaned_mean_tokens() -> float:
    """alpaca-cleaned's mean tokens a formatted sample: LitGPT's 125 (52K-sized set) scaled by the bytes ratio (one
    tokenizer's bytes a token taken for both sets; the spread and the longest kept)."""
    short, cleaned = formatted_bytes()
    return ALPACA_52K_MEAN_TOKENS * cleaned / short


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


# the file's ScatterMoE ep1 pair on one A100 at 9122a76 (refused rows, read here only): each micro-batch padded to its
# longest sample, and padding-free (fms-acceleration's padding-free plugin: the 8 samples as one unpadded row)
SCATTER_PAIR = ("fmsmoe_v3_granite3b_moe-scattermoe-granite-ep1_1gpu",
                "fmsmoe_v3_granite3b_moe-scattermoe-granite-ep1-padding-free_1gpu")


def _line(t_a: float, x_a: float, t_b: float, x_b: float) -> tuple[float, float]:
    """(s a position, s a micro-batch) of the line through two (positions, s) points."""
    slope = (t_a - t_b) / (x_a - x_b)
    return slope, t_a - slope * x_a


def padding_split(rs: list[dict[str, str]]) -> dict[str, tuple[float, float]]:
    """docs/known-gaps.md 317 (b): a micro-batch's time as fixed + slope x positions. 'measured': through the file's
    padded and padding-free ScatterMoE ep1 rows (same release, GPU and samples; positions: the padded micro-batch's
    8 x E[max of 8 lengths] against the padding-free one's 8 x the mean); 'predicted': the estimate's grouped path
    (experts_implementation grouped_mm, the closest it can state) on the granite one-GPU row at two means. Each value is
    (s a position, s a micro-batch)."""
    from trainsizer.catalog import load_catalog
    from trainsizer.estimate.sample_lengths import padded_tokens

    by, cat = {r["id"]: r for r in rs}, load_catalog()
    padded, free = (by[rid] for rid in SCATTER_PAIR)
    mb, sigma, longest = whole(padded["micro_batch"]), num(padded["length_sigma"]), num(padded["max_tokens"])

    def positions(mean: float) -> float:
        return mb * float(padded_tokens(mean, sigma, longest, mb))

    def step_mb(mean: float) -> float:
        r = {**by["fmsmoe_v3_granite3b_none_1gpu"], "avg_tokens": str(mean)}
        tps = [c for c in fh.row_cases(r, cat, MODELS, {"experts_implementation": "grouped_mm"})
               if c.metric == "tokens_s"][0].predicted
        return mb * mean / tps

    mean = num(padded["avg_tokens"])
    measured = _line(mb / num(padded["samples_per_s"]), positions(mean), mb / num(free["samples_per_s"]), mb * mean)
    predicted = _line(step_mb(mean), positions(mean), step_mb(1.5 * mean), positions(1.5 * mean))
    return {"measured": measured, "predicted": predicted}


def main() -> None:
    cs = cases()
    print("fms-acceleration's MoE file (refs/a100_80gb_moe.csv at 5b35eae 2024-11, c959c6b 2025-02, 9122a76 2025-06): "
          "granite-3.0-3b-a800m full fine-tuning in bf16 on 1-4 A100-80GB (FSDP1 on 2 and 4) and Mixtral-8x7B on 8, "
          "unpacked alpaca-cleaned, HF Trainer (tokens/s = samples/s x 218; nvidia-smi GiB a GPU; held out, nothing "
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
    split = padding_split(rows())
    print("\nthe ScatterMoE ep1 pair (padded / padding-free, one A100, 9122a76; refused rows) against the estimate's grouped "
          "path: a micro-batch = fixed + slope x positions (docs/known-gaps.md 317 (b)):")
    layers = MODELS["granite-3.0-3b-a800m"]["layers"]
    print("\n".join(f"  {k:9s} slope {g * 1e6:6.1f} us a position  fixed {f:6.4f} s a micro-batch ({f / layers * 1e3:4.2f} "
                    "ms a layer)" for k, (g, f) in split.items()))
    print(fh.said_lines(cs))
    print("\n" + p43.summary("perf_heldout66", cs))


if __name__ == "__main__":
    main()
