"""Held-out check on published runs added 2026-12-06 (thirty-eighth batch: short-sample full fine-tuning without
padding under the HF Trainer and FSDP1; nothing is fitted on them), two files of a suite perf_heldout61 read but did not
take (docs/known-gaps.md 238 (g)):

(1) IBM's fms-acceleration scripts/benchmarks/refs_orca/a100_80gb_pf.csv at 3cf092a (2024-09-30; refs_orca/
requirements_pf.txt: torch 2.4.0, transformers 4.44.2, TRL 0.10.1, accelerate 0.33.0, flash-attn 2.6.3): Mistral-7B
full fine-tuning in fp16 on the first 8,000 orca-math word problems (about 289 tokens a sample), one epoch, one A100-80GB
or two under FSDP1, each micro-batch's samples flattened into one row (the attention-and-distributed-packing plugin's
padding-free path: transformers' position_ids route into FlashAttention-2's varlen kernel).

(2) The same suite's refs_orca/a100_80gb_mp.csv at 4224c66 (2024-08-23; transformers 4.43.3, torch 2.4.1): the same
job on the first 2,000 samples over 2, 4 and 8 GPUs (micro-batch 2-64 samples), padding-free alone and with the
plugin's multipack sampler (each rank's micro-batch filled to the same token budget: ranks balanced).

(3) InternLM/xtuner's speed benchmark (docs/zh_cn/acceleration/benchmark.rst at 7575f2c9, 2024-07-09; its configs at
43ef6ab99): full fine-tuning of Llama-2-7B, Yi-34B-200K and Llama-2-70B on Alpaca packed to 8K-1M tokens under
DeepSpeed ZeRO-3 with xtuner's sequence parallel (DeepSpeed-Ulysses all-to-all, SP 1-64), 8-64 A100-80GB, tokens a GPU
a second (TGS). Long-context fine-tuning, which no batch held; in perf_heldout's columns (perf_heldout.Batch,
docs/known-gaps.md 249 (a)), heldout_2027l_xtuner_longseq.csv with heldout_2027l_xtuner_models.yaml.

A flattened micro-batch is written as one packed row of micro-batch x the mean sample length, attention within each
sample (the row's `assumed` says how the mean is read). The padded rows of (1) (framework_config none: the
collator pads to the batch's longest sample; their spread of lengths is not published), its LoRA rows (the suite's own
bitsandbytes / GPTQ loaders and fused kernels) are not rows (docs/known-gaps.md 248).

Data: benchmarks/data/heldout_2027l_fms_orca.csv (finetune_heldout's columns, then the strategy settings the stack
fixes, as perf_heldout61's files) and (3)'s files.

Printed: each row (published, predicted, error), per source and figure, multipack over padding-free at one layout
(measured and predicted) and the same per-GPU work on more GPUs (the FSDP1 cost a step); (3)'s rows with the estimate's
step terms, the doc's TFLOPs against xtuner's own FLOP count over its TGS (a check of the reading, not a score) and SP
against no SP at the same tokens a GPU.

Sign: (predicted - published) / published; + = predicted too fast (tokens/s) or too large (memory).

Run: python benchmarks/perf_heldout64.py
"""

from __future__ import annotations

from pathlib import Path

import finetune_heldout as fh
import perf_heldout as ph
import perf_heldout43 as p43
from harness import Case, mape, num, print_case_rows, scored, whole

DATA = Path(__file__).resolve().parent / "data"
ORCA = DATA / "heldout_2027l_fms_orca.csv"
BATCH = fh.Batch((ORCA,))
rows, job, cases = BATCH.rows, BATCH.job, BATCH.cases
XTUNER = DATA / "heldout_2027l_xtuner_longseq.csv"
XTUNER_BATCH = ph.Batch((XTUNER,), (ph.MODELS, DATA / "heldout_2027l_xtuner_models.yaml"))
xtuner_rows, xtuner_models, xtuner_run, xtuner_job = (XTUNER_BATCH.rows, XTUNER_BATCH.models, XTUNER_BATCH.run_all,
                                                      XTUNER_BATCH.job)
# (3): the doc's TFLOPs column by row id (xtuner's ThroughputHook over the same iterations as its TGS)
XTUNER_TFLOPS = {"llama-2-7b_8gpu_8k_sp1": 185.3, "llama-2-7b_8gpu_32k_sp1": 193.0, "llama-2-7b_8gpu_128k_sp8": 180.3,
                 "llama-2-7b_8gpu_256k_sp8": 176.9, "llama-2-7b_32gpu_1m_sp16": 153.9,
                 "yi-34b-200k_32gpu_8k_sp1": 165.6, "yi-34b-200k_32gpu_32k_sp2": 209.1,
                 "yi-34b-200k_32gpu_128k_sp8": 191.8, "yi-34b-200k_32gpu_256k_sp8": 145.3,
                 "llama-2-70b_32gpu_8k_sp1": 144.7, "llama-2-70b_32gpu_32k_sp4": 239.6,
                 "llama-2-70b_32gpu_128k_sp8": 189.7, "llama-2-70b_32gpu_256k_sp16": 127.6,
                 "llama-2-70b_64gpu_1m_sp64": 133.5}


def multipack_ratios(cs: list[Case], metric: str) -> list[tuple[str, float, float]]:
    """(row, measured, predicted) ratio of each multipack row's figure over its padding-free twin (same GPUs and
    micro-batch)."""
    got = {c.row_id: c for c in scored(cs, metric)}
    out = []
    for rid, c in got.items():
        twin = got.get(rid.replace("_multipack_", "_pf_"))
        if "_multipack_" in rid and twin is not None:
            out.append((rid, c.measured / twin.measured, c.predicted / twin.predicted))
    return out


def sampler_lines(cs: list[Case]) -> list[str]:
    """(2)'s rows by sampler (padding-free alone, multipack): n and MAPE per figure."""
    out = []
    for metric in ("tokens_s", "peak_gib"):
        for kind in ("_pf_", "_multipack_"):
            sub = [c for c in scored(cs, metric) if c.row_id.startswith("fmsorca_mp_") and kind in c.row_id]
            out.append(f"  {kind.strip('_'):10s} {metric:9s} n={len(sub):2d} MAPE {mape(sub):5.1f}%")
    return out


def fsdp_step_extra(cs: list[Case]) -> list[tuple[str, float, float]]:
    """(row, measured, predicted) seconds a step that two GPUs under FSDP1 add over half the one-GPU step of the same
    per-GPU work ((1)'s micro-batch 2 / 4 on two GPUs against 4 / 8 on one: 238 (c)'s reading); a step is 2 micro-batches
    of micro-batch x the mean sample length a GPU."""
    by = {r["id"]: r for r in rows()}
    got = {c.row_id: c for c in scored(cs, "tokens_s")}
    out = []
    for rid, c in got.items():
        one = got.get(rid.replace("_2gpu_mb2", "_1gpu_mb4").replace("_2gpu_mb4", "_1gpu_mb8"))
        if not rid.startswith("fmsorca_pf_") or "_2gpu_" not in rid or one is None:
            continue
        tokens = 2 * num(by[rid]["seq_len"])  # two micro-batches of one flattened row a GPU
        step = [tokens / c.measured, tokens / c.predicted]
        half = [2 * tokens / one.measured / 2, 2 * tokens / one.predicted / 2]
        out.append((rid, step[0] - half[0], step[1] - half[1]))
    return out


def rank0_excess(cs: list[Case]) -> list[tuple[str, int, float, float]]:
    """(row, GPUs, measured less predicted peak GiB, (1 - 1/GPUs) x the fp16 weights GiB) of every FSDP row: the other
    ranks' part of one whole model's fp16 gradients, what the miss read as before the estimate held FSDP1's unsharded
    gradients under the Trainer's no_sync (docs/known-gaps.md 248 (c), 250 (a))."""
    from trainsizer.models import load_model

    weights_gib = 2 * load_model("mistral-7b").params_total / 2**30
    by = {r["id"]: r for r in rows()}
    out = []
    for c in scored(cs, "peak_gib"):
        n = whole(by[c.row_id]["gpu_count"])
        if n > 1:
            out.append((c.row_id, n, c.measured - c.predicted, (1 - 1 / n) * weights_gib))
    return out


def xtuner_flops_per_token(r: dict[str, str]) -> float:
    """FLOPs a token a GPU as xtuner's ThroughputHook counts them (xtuner/engine/hooks/throughput_hook.py at 43ef6ab99:
    8 s h^2 for q / k / v / o whatever the K / V heads, 4 s^2 h sp / 2 for causal attention, 4 x 1.5 ffn / h s h^2 for
    the gated MLP, all x 4 with recompute, a layer each, plus 6 s h V for the head; s the tokens a GPU = seq / sp)."""
    from trainsizer.models import load_model

    arch = xtuner_models()[r["model"]]["model"] if r["model"] in xtuner_models() else r["model"]
    m = load_model(arch) if isinstance(arch, str) else None
    layers, hidden, ffn, vocab = ((m.layers, m.hidden, m.ffn, m.vocab) if m is not None else
                                  (arch["layers"], arch["hidden"], arch["ffn"], arch["vocab"]))
    sp = whole(r["cp"], 1)
    s = whole(r["seq_len"]) / sp
    layer = 8 * s * hidden**2 + 4 * s**2 * hidden * sp / 2 + 4 * 1.5 * ffn / hidden * s * hidden**2
    return (4 * layer * layers + 6 * s * hidden * vocab) / s


def xtuner_lines(run: list) -> list[str]:
    """(3)'s rows: the step line, then the doc's TFLOPs over xtuner's count at the doc's TGS (1.000 = the row read as
    the doc ran it)."""
    out = []
    for c, res, r in run:
        out.append(ph.step_line(c, res, 52))
        key = r["id"].removeprefix("xtuner_2024-06_a100_")
        check = XTUNER_TFLOPS[key] * 1e12 / (xtuner_flops_per_token(r) * c.measured)
        out.append(f"  {'':52s} the doc's TFLOPs over xtuner's count at its TGS: {check:.3f}")
    return out


def sp_pairs(run: list) -> list[tuple[str, float, float]]:
    """(row, measured, predicted) TGS of an SP row over the no-SP row of its model and GPUs at the same tokens a GPU
    (32K at SP 4 against 8K at SP 1)."""
    done = [(c, r) for c, _, r in run if not c.skipped]

    def per_gpu(r: dict[str, str]) -> tuple[str, str, int]:
        return r["model"], r["gpu_count"], whole(r["seq_len"]) // whole(r["cp"], 1)

    return [(r["id"], c.measured / b.measured, c.predicted / b.predicted) for c, r in done for b, rb in done
            if r["cp"] != "1" and rb["cp"] == "1" and per_gpu(r) == per_gpu(rb)]


# the A100-SXM4 hosts of source (3) hold 8 GPUs: an SP group above 8 sends part of each all-to-all across hosts
GPUS_PER_HOST = 8


def cross_host_a2a(run: list) -> list[tuple[str, float, float]]:
    """(row, predicted, implied) seconds a step of the Ulysses all-to-alls (cp_comm) for the rows whose SP group spans
    hosts: implied = the measured step (the predicted step x predicted / measured TGS) less the rest of the predicted
    step, i.e. what the all-to-alls took if every other term is right (docs/known-gaps.md 253 (b))."""
    out = []
    for c, res, r in run:
        if c.skipped or whole(r["cp"], 1) <= GPUS_PER_HOST:
            continue
        step, a2a = res["time"]["step_s"], res["time"]["breakdown_s"]["cp_comm"]
        out.append((r["id"], a2a, step * c.predicted / c.measured - (step - a2a)))
    return out


def main() -> None:
    cs = cases()
    print("(1) fms-acceleration's orca-math padding-free file (3cf092a, 2024-09) and (2) its multipack file (4224c66, "
          "2024-08): Mistral-7B full fine-tuning in fp16, flattened micro-batches under FA2 varlen, reentrant "
          "checkpointing, 1 GPU or 2-8 under FSDP1 (tokens/s per GPU, peak allocated GiB; held out, nothing fitted):")
    print_case_rows([c for c in cs if c.metric in ("tokens_s", "peak_gib")], 44, "9.2f")
    print("\nper source:")
    print("\n".join(p43.source_lines(cs)))
    for metric, what in (("tokens_s", "tokens/s a GPU"), ("peak_gib", "peak GiB")):
        print(f"\nmultipack over padding-free, {what} (measured vs predicted):")
        print("\n".join(f"  {rid:44s} measured {m:5.3f} predicted {p:5.3f}" for rid, m, p in multipack_ratios(cs, metric)))
    print("\n(2) by sampler:")
    print("\n".join(sampler_lines(cs)))
    print("\ntwo GPUs under FSDP1 over half the one-GPU step of the same per-GPU work, seconds a step (measured vs "
          "predicted):")
    print("\n".join(f"  {rid:44s} measured {m:+6.3f} predicted {p:+6.3f}" for rid, m, p in fsdp_step_extra(cs)))
    print("\nFSDP rows' peak: measured less predicted GiB against (1 - 1/GPUs) x the fp16 weights (the other ranks' "
          "part of the gradients FSDP1's no_sync holds unsharded, now in the estimate: 250 (a)):")
    print("\n".join(f"  {rid:44s} {n} GPUs {d:+6.2f} GiB, (1 - 1/GPUs) x weights {w:5.2f}"
                     for rid, n, d, w in rank0_excess(cs)))
    print(fh.said_lines(cs))
    print("\n" + p43.summary("perf_heldout64", cs))
    run = xtuner_run()
    print("\n(3) xtuner's speed benchmark (7575f2c9, 2024-07): full fine-tuning on Alpaca packed to 8K-1M, DeepSpeed "
          "ZeRO-3, Ulysses sequence parallel, A100-80GB (tokens a GPU a second; held out, nothing fitted):")
    print("\n".join(xtuner_lines(run)))
    print("\nSP against no SP at the same tokens a GPU, TGS (measured vs predicted):")
    print("\n".join(f"  {rid:52s} measured {m:5.3f} predicted {p:5.3f}" for rid, m, p in sp_pairs(run)))
    print("\nthe all-to-alls of SP groups across hosts, seconds a step: predicted, implied by the measured step (the "
          "rest of the step as predicted), predicted / implied (docs/known-gaps.md 253 (b)):")
    print("\n".join(f"  {rid:52s} {p:8.1f} {i:8.1f}  {p / i:5.2f}" for rid, p, i in cross_host_a2a(run)))
    print(ph.time_summary("perf_heldout64 xtuner", run))


if __name__ == "__main__":
    main()
