"""Held-out check on published runs added 2026-12-05 (twenty-second batch: pre-training on other hardware; nothing is
fitted on them), two sources no benchmark held. Lambda's torchtitan fork (LambdaLabsML/torchtitan), its engineers' own
write-ups of bf16 pre-training runs of MoE models under torchtitan's FSDP2 with expert parallelism off (every expert on
every rank, FSDP-sharded) on two Blackwell systems, (1) and (2); Together AI's run of NVIDIA's Megatron-Bridge recipe on
its own B200 cluster, (3):

(1) docs/bs_sweep_results.md (commit fa57a4fd; run on pytorch/torchtitan 1690e0ae, 2026-05-13): one host of 8 B200,
pure FSDP 8, bf16, torch.compile of the model and the loss, full activation checkpointing, ChunkedCELoss, 8,192 tokens:
GPT-OSS-20B (the upstream gpt_oss_20b config, FlexAttention) at local batch 10 / 14 / 20 and Qwen3-30B-A3B (a local
registry entry, SDPA) at 8 / 10 / 12: tokens/s a GPU and torchtitan's peak reserved memory on rank 0.
(2) gb300/ (README.md at 192b9bb0, README_120B.md at 5d5a159a, TUNING_RESULTS.md and TUNING_RESULTS_120B.md at 3956f1b7,
RESULTS_1K.md at 20244c3a; runs from 2026-09-06 on 16 hosts of 4 GB300, one 64-GPU NVLink fabric, torch 2.14): GPT-OSS-20B
and -120B at FSDP 64, EP 1, 8,192 tokens, stock (bs 1, full AC, eager) and tuned (no AC or per-op selective AC, whole-
block compile, larger batches, FSDP2 reshard-after-forward off, HSDP with a one-host shard group): per-GPU TFLOP/s
in torchtitan's own accounting, read as tokens/s through its FLOPs a token (titan_flops_per_token, which gives the
README's own tokens/s beside its TFLOP/s within 0.1%), and three logged peaks in GiB.
(3) togethercomputer/together-dgxc-benchmarking tests/b200/reports/Llama_70B_FP8_Scaling_Benchmark_Report.md (d275be99,
2026-04-08): Llama 3 70B FP8 (current scaling) under Megatron-FSDP with 5 layers' activations offloaded, TP 1, MBS 1,
2 sequences a GPU, on 64 / 128 / 256 / 512 / 592 B200 (8 a host, NDR InfiniBand that the team measured oversubscribed,
ratio not stated), container nemo 25.11.01: the average step time and rank 0's peak allocated memory, the recipe read
at Megatron-Bridge v0.2.1.
Data: benchmarks/data/heldout_2026v_lambda_titan.csv and heldout_2026v_together_b200.csv in heldout_pretrain.csv's
columns (perf_heldout.job_of builds each job; every setting the write-ups do not state is named in the row's `assumed`).

Not scored (each said where it is read): the Hub-streamed twin of the 20B bs 7 run (963.5 TFLOP/s, 0-1 dataloader
retries; the local-shard rerun, 987.8, is scored), the 20B bs 8 no-AC compiled run at 98.7% of memory (160.6: the
caching allocator thrashing, no model; its fit is checked), the 20B `compile_loss_only` arm (282.1: no job field for a
compiled loss over an eager model), RESULTS_1K.md's arms (its table gives bs 16 to job 56, which TUNING_RESULTS_120B.md
and the same memory figure put at bs 18: the batch is not readable; fp8 on the dense Linears alone, MXFP8 experts that
did not train), the 20B SAC bs 24 / 32 Hub-streamed runs that died (round 3), and the SAC runs whose save list was
given aten._grouped_mm (TUNING_RESULTS_SAC_GMM.md: no job field states that save list; docs/known-gaps.md 164 (c)).

Limits (heldout_2026v_lambda_titan_limits.csv): the batch probes and failed arms say which layouts ran out of memory and
which ran near the ceiling; each is a scored row's job with the batch (or reshard, EP) changed, and the memory
estimate's verdict is printed beside the outcome.

Printed: each row (published, predicted, error), per-source MAPE and the worst rows with the estimate's step; each GB300
run over its model's stock run (what the tuning bought, measured and modelled), reshard-never over default, each
B200 batch over the smallest, Together's step at each scale over its 64-GPU step; the limits; refused rows and runs
said not to fit.

Sign: (predicted - published) / published; for tokens/s + = predicted too fast, for a step time + = predicted too slow,
for memory + = predicted too large.

Run: python benchmarks/perf_heldout48.py
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import perf_heldout as ph
import perf_heldout28 as p28
from harness import Case, job_fits, mape

DATA = Path(__file__).resolve().parent / "data"
ROWS = DATA / "heldout_2026v_lambda_titan.csv"
TOGETHER = DATA / "heldout_2026v_together_b200.csv"
BATCH = ph.Batch((ROWS, TOGETHER))
rows, run_all = BATCH.rows, BATCH.run_all
LIMITS = DATA / "heldout_2026v_lambda_titan_limits.csv"
PRESETS = Path(__file__).resolve().parents[1] / "src" / "trainsizer" / "models" / "presets"


def _titan_layout(preset: str) -> tuple[dict[str, Any], float, float, float]:
    """(the preset's config, attention + norms + router parameters of one layer, one expert's parameters, the LM
    head's) in torchtitan's GptOss parameter layout: q, k, v, o with biases, the sinks, two norms, the router with its
    bias; an expert's mlp1 (gate and up) and mlp2 with their biases; the untied LM head."""
    c = json.loads((PRESETS / f"{preset}.json").read_text(encoding="utf-8"))
    d, inter, heads, kv, hd = (c[k] for k in ("hidden_size", "intermediate_size", "num_attention_heads",
                                              "num_key_value_heads", "head_dim"))
    attn = d * heads * hd + heads * hd + 2 * (d * kv * hd + kv * hd) + heads * hd * d + d + heads  # q, k, v, o, sinks
    expert = 2 * inter * d + 2 * inter + d * inter + d  # mlp1 (gate and up) and mlp2, with their biases
    return c, attn + 2 * d + c["num_local_experts"] * (d + 1), expert, d * c["vocab_size"]


def titan_flops_per_token(preset: str, seq_len: int) -> float:
    """torchtitan's FLOPs a token of a GPT-OSS model (torchtitan/models/utils.py get_moe_model_nparams_and_flops at
    1690e0ae): 6 x the active parameters less the embedding (experts scaled by top-k / experts; biases, sinks, norms,
    router and the untied LM head counted) + 6 x layers x heads x 2 x head_dim x seq_len (every layer charged full
    attention, the sliding-window ones too), from the preset's shapes and torchtitan's GptOss parameter layout."""
    c, dense, expert, head = _titan_layout(preset)
    layers, heads, hd = c["num_hidden_layers"], c["num_attention_heads"], c["head_dim"]
    matmul = layers * (dense + expert * c["num_experts_per_tok"]) + c["hidden_size"] + head  # final norm, LM head
    return 6.0 * matmul + 6.0 * layers * heads * 2 * hd * seq_len


def titan_params(preset: str) -> float:
    """A GPT-OSS model's parameters in torchtitan's layout, every expert and the embedding counted (20.9B for the 20B:
    docs/bs_sweep_results.md's '20.9B params total'; 116.8B for the 120B): what FSDP2 shards and gathers."""
    c, dense, expert, head = _titan_layout(preset)
    return c["num_hidden_layers"] * (dense + expert * c["num_local_experts"]) + c["hidden_size"] + 2 * head


def fsdp_bytes_per_gpu(r: dict[str, str]) -> float:
    """Bytes one GPU's FSDP2 collectives move a step under pure FSDP (EP 1), from the row's layout: every parameter
    all-gathered in bf16 once in the forward and again in the backward (reshard_after_forward, the default; once
    where it is off: fsdp_reshard backward), its gradient reduce-scattered in fp32 (torchtitan's mixed_precision_reduce default),
    each at the (n - 1) / n of the ring a rank sends (NCCL's all-gather / reduce-scatter volume)."""
    n = int(r["gpu_count"])
    gathers = 1 if "fsdp_reshard=backward" in r["strategy_extra"] else 2
    return titan_params(r["model"]) * (n - 1) / n * (2.0 * gathers + 4.0)


def fsdp_rate_lines() -> list[str]:
    """Each GB300 pure-FSDP run's FSDP2 bytes a GPU a step over its measured step: the per-GPU collective rate the
    step would need if the collectives alone set it (docs/known-gaps.md 179 (b)). The 120B's 376-391 GB/s say the
    fabric carries at least that; the 20B's stock 163-181 GB/s, under it, say its step is not set by bandwidth."""
    out = []
    for r in rows():
        if r["accelerator"] != "gb300" or r["metric"] != "tokens_per_s_per_gpu" or "hsdp" in r["id"]:
            continue
        step_s = int(r["micro_batch"]) * int(r["seq_len"]) / float(r["value"])
        moved = fsdp_bytes_per_gpu(r)
        out.append(f"  {r['id']:62s} step {step_s * 1e3:6.0f} ms  FSDP2 {moved / 1e9:6.1f} GB a GPU  "
                   f"{moved / step_s / 1e9:6.1f} GB/s")
    return out


def cases() -> list[Case]:
    return [c for c, _, _ in run_all()]


def timed(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> list[tuple[Case, dict[str, str]]]:
    return [(c, r) for c, res, r in run if res and c.metric not in ph.MEMORY_METRICS]


def over_base(run: list[tuple[Case, dict[str, Any], dict[str, str]]], is_base,
              key: tuple[str, ...] = ("source_key", "model", "gpu_count")) -> list[tuple[str, float, float]]:
    """(row, measured, predicted tokens/s, or step time, over the base run of its `key` group): what the changed
    settings (batch, recompute, compile, sharding, scale) bought, measured and modelled. `is_base(row)` picks the
    base."""
    done = timed(run)
    base = {tuple(r[k] for k in key): c for c, r in done if is_base(r)}
    out = []
    for c, r in done:
        b = base.get(tuple(r[k] for k in key))
        if b is not None and b is not c:
            out.append((r["id"], c.measured / b.measured, c.predicted / b.predicted))
    return out


def stock(r: dict[str, str]) -> bool:
    """The GB300 stock run (bs 1, full AC, eager, reshard after forward) of a model and GPU count."""
    return r["accelerator"] == "gb300" and r["micro_batch"] == "1" and "fsdp_reshard=forward" in r["strategy_extra"]


def smallest_batch(r: dict[str, str]) -> bool:
    return r["accelerator"] == "b200" and r["micro_batch"] in ("10", "8")


def together_64(r: dict[str, str]) -> bool:
    return r["source_key"].startswith("Together") and r["gpu_count"] == "64"


def print_ratios(title: str, out: list[tuple[str, float, float]]) -> None:
    print(title)
    for row_id, meas, pred in out:
        print(f"  {row_id:62s} measured {meas:.3f} predicted {pred:.3f}  {pred / meas - 1.0:+6.1%}")


def limit_rows() -> list[dict[str, str]]:
    return list(csv.DictReader(LIMITS.open(encoding="utf-8")))


def limit_job(limit: dict[str, str], by_id: dict[str, dict[str, str]]) -> dict[str, Any]:
    """The base row's job with the limit's micro-batch (global batch = micro-batch x GPUs: no accumulation), EP and
    strategy settings."""
    row = dict(by_id[limit["base"]])
    mb = int(limit["micro_batch"])
    row |= {"micro_batch": str(mb), "global_batch_seqs": str(mb * int(row["gpu_count"]))}
    if limit["ep"]:
        row["ep"] = limit["ep"]
    if limit["strategy_extra"]:
        changed = ph._extra(limit["strategy_extra"])
        kept = [s for s in row["strategy_extra"].split(";") if s.split("=")[0] not in changed]
        row["strategy_extra"] = ";".join([*kept, limit["strategy_extra"]])
    return ph.job_of(row, ph.model_data(ph.MODELS))


def limit_lines() -> list[str]:
    """Each measured limit (a run that ran out of memory, or ran near the ceiling) beside the memory estimate's
    verdict on the same job."""
    by_id = {r["id"]: r for r in rows()}
    lims = limit_rows()
    fits = job_fits((lim["id"], limit_job(lim, by_id)) for lim in lims)
    out = []
    for lim, f in zip(lims, fits, strict=True):
        agree = (lim["outcome"] == "fits") == f.fits
        out.append(f"  {lim['id']:64s} measured {lim['outcome']:4s} estimate {f.predicted_gib:6.1f} / "
                   f"{f.usable_gib:5.1f} GiB {'fits' if f.fits else 'oom '} {'agrees' if agree else 'DISAGREES'}")
    return out


def main() -> None:
    run = run_all()
    p28.print_rows(run)
    p28.print_summary(run, "Held-out runs, twenty-second batch (Lambda torchtitan, Together B200; nothing fitted)", 60)
    memory = [c for c, _, _ in run if c.metric in ph.MEMORY_METRICS]
    print(f"peak memory: n={sum(not c.skipped for c in memory)} MAPE {mape(memory):.1f}%")
    print_ratios("GB300: each run over its model's stock run (bs 1, full AC, eager) at the same GPU count:",
                 over_base(run, stock))
    print_ratios("B200: each batch over the smallest of its model (one host of 8):", over_base(run, smallest_batch))
    print_ratios("Together B200: the step at each scale over the 64-GPU step (weak scaling, 2 sequences a GPU):",
                 over_base(run, together_64, ("source_key", "model")))
    print_ratios("GB300: FSDP2 reshard-after-forward off over on at one layout:",
                 p28.option_pairs(run, "fsdp_reshard", "backward", "forward"))
    print("GB300 pure-FSDP runs: FSDP2 collective bytes a GPU a step over the measured step (nothing modelled):")
    print("\n".join(fsdp_rate_lines()))
    print("measured memory limits (batch probes, failed arms) and the memory estimate on the same job:")
    print("\n".join(limit_lines()))
    p28.print_pairs_and_refusals(run)


if __name__ == "__main__":
    main()
