"""Held-out check on published runs added 2026-12-07 (forty-seventh batch: Megatron MoE on Blackwell from NVIDIA's NeMo
pages, a DeepSpeed ZeRO-3 run on H100 and BAAI FlagPerf's NVIDIA MoE and DeepSpeed cases; nothing fitted on them),
sources no benchmark held for these runs:

(1) The Mixtral lines of NeMo's 2025 performance pages (NVIDIA NeMo Framework user guide, Performance Summary): Mixtral
8x7B (64 GPUs, EP 8) and 8x22B (256 GPUs, 65,536 tokens: TP 2 x PP 4 x VP 14 x CP 8, EP 8) in FP8 on DGX-B200 (container
NeMo 25.02, delayed scaling) and DGX-GB200 (NeMo 25.04, per-tensor current scaling). perf_heldout took the same pages'
dense lines and left these out ("the `moe` work owns MoE time", 2026-12-01). Each run's settings beyond the table from
the release's NeMo tag (v2.2.0 / v2.3.0): its recommended_model_configs line (layout, CUDA graphs, recompute), its
performance script and the recipe's performance_mode (token drop at capacity 1.0, padded). Data:
benchmarks/data/heldout_2027u_nemo_mixtral.csv; Mixtral 8x22B in benchmarks/data/heldout_2027u_models.yaml.

(2) DeepSpeedExamples training/bf16_master_weight (deepspeedai/DeepSpeedExamples at a43031e5): a 6.86B GPT-style
model of plain PyTorch modules (nn.MultiheadAttention, post-norm) on DeepSpeed's engine, ZeRO-3 over 4 H100, one
512-token sequence a GPU with each block checkpointed: the README's step time, peak allocated and after-step allocated
memory for the fp32-master baseline and for DeepSpeed's bf16 master weights / optimizer states (optimizer_precision
bf16-master: docs/known-gaps.md 296 (b); refused before it, 293 (b)).
The first deepspeed-style rows on Hopper. Data: benchmarks/data/heldout_2027u_ds_bf16_master.csv; the model in
heldout_2027u_models.yaml.

(3) BAAI FlagPerf's NVIDIA cases that perf_heldout32 (docs/known-gaps.md 78) did not take (FlagOpen/FlagPerf, the
README table of each case at the commit that wrote it, the case's launch scripts and configs at that commit): Mixtral 8x7B
on Megatron-Core 0.6 over 32 H100 (TP 8 x PP 2, EP 1), a 24-layer 8-expert model on Pai-Megatron-Patch over 8 A800 (bf16
and fp16), Baichuan2-13B's remote code on DeepSpeed ZeRO-1 over 16 H800 at accumulation 8 and 64, ChatGLM3-6B's on
DeepSpeed ZeRO-3 over 8 H100 (2024-07) and 8 A800 (2024-02, the table the H100 one replaced). Data:
benchmarks/data/heldout_2027u_flagperf.csv; the three models in heldout_2027u_models.yaml.

Each file in heldout_pretrain.csv's columns plus `method` and `refused` (perf_heldout.job_of builds each job; every
setting a source does not state is in the row's `assumed` column with where it was read).

Printed: each row (published, predicted, error, the estimate's step terms), memory fits, per source and for the batch
time and memory MAPE; the DeepSpeed rows' step as the estimate times the same job on the hf style (both styles charge
the engine's per-module hooks on the host, the hf style over transformers' split projections: docs/known-gaps.md
296 (a)), printed, not scored; FlagPerf's
Baichuan2-13B pair (accumulation 8 and 64, one layout) split into a cost a micro-batch and a cost a step, measured and
predicted (293 (g)).

Sign: (predicted - published) / published; + = predicted too fast (a rate) or too slow (a step), too large (memory).

Run: python benchmarks/perf_heldout73.py
"""

from __future__ import annotations

from pathlib import Path

import perf_heldout as ph
from harness import print_fits
from perf_heldout69 import print_parts, summary_lines

DATA = Path(__file__).resolve().parent / "data"
# the batch's files: (1) NeMo's Mixtral lines, (2) the DeepSpeed example; its inline models
MIXTRAL_ROWS, DS_ROWS = DATA / "heldout_2027u_nemo_mixtral.csv", DATA / "heldout_2027u_ds_bf16_master.csv"
FLAGPERF_ROWS = DATA / "heldout_2027u_flagperf.csv"
MODELS = DATA / "heldout_2027u_models.yaml"
SOURCES = (("(1) NeMo 25.02 / 25.04 performance pages, Mixtral on DGX-B200 / GB200 (FP8, 2025)", "nemo_"),
           ("(2) DeepSpeedExamples bf16_master_weight on 4 H100 (ZeRO-3, 2025-12)", "dsx_"),
           ("(3) BAAI FlagPerf NVIDIA MoE and DeepSpeed cases on H100 / H800 / A800 (2024)", "flagperf_"))

BATCH = ph.Batch((MIXTRAL_ROWS, DS_ROWS, FLAGPERF_ROWS), (ph.MODELS, MODELS))
# FlagPerf's Baichuan2-13B rows at one layout, accumulation 8 and 64 (293 (g))
ACCUMULATION_PAIR = ("flagperf_2024-01_h800_baichuan2-13b_zero1_gas8_16gpu",
                     "flagperf_2024-01_h800_baichuan2-13b_zero1_gas64_16gpu")
rows, models, job = BATCH.rows, BATCH.models, BATCH.job
run_all, fits = BATCH.run_listed, BATCH.fits_listed  # a row the data does not score (its `refused` column) is listed


def ds_on_hf_style() -> list[tuple[str, float, float]]:
    """(row id, published step, the estimate's step under the hf style) for the DeepSpeed step rows: the same job on
    DeepSpeed's engine as the hf style times it, its per-module hook host cost (step_time._deepspeed_hook_excess)
    counted over transformers' modules (q / k / v and gate / up apart), where the deepspeed style counts the fused
    layer (docs/known-gaps.md 296 (a))."""
    timed_rows = [dict(r, framework="hf") for r in rows()
                  if r["id"].startswith("dsx_") and r["metric"] == "step_time_s" and not r["refused"]]
    return [(c.row_id, c.measured, c.predicted) for c, _, _ in BATCH.estimate(timed_rows)]


def step_split(run: ph.Run, pair: tuple[str, str] = ACCUMULATION_PAIR) -> dict[str, tuple[float, float]]:
    """{"measured" / "predicted": (seconds a micro-batch, seconds a step beside them)} from two tokens/s rows of one
    layout at two accumulation counts: each row's step = global batch x sequence / (tokens/s a GPU x GPUs), the step
    linear in the micro-batches a rank runs."""
    got = {c.row_id: (c, r) for c, _, r in run if c.row_id in pair and not c.skipped}
    out = {}
    for kind in ("measured", "predicted"):
        steps = []
        for rid in pair:
            c, r = got[rid]
            gpus = int(r["gpu_count"])
            steps.append((int(r["global_batch_seqs"]) // gpus // int(r["micro_batch"]),
                          int(r["global_batch_seqs"]) * int(r["seq_len"]) / (getattr(c, kind) * gpus)))
        (m0, s0), (m1, s1) = steps
        per = (s1 - s0) / (m1 - m0)
        out[kind] = (per, s0 - m0 * per)
    return out


def main() -> None:
    run = run_all()
    print_parts(run, SOURCES)
    print_fits(fits(), "perf_heldout73")
    print("\nDeepSpeed step rows timed on the hf style (the engine's hooks over transformers' modules), not scored:")
    for rid, published, step in ds_on_hf_style():
        print(f"  {rid:52s} {published:8.4g} {step:8.4g} ({100 * (step / published - 1):+6.1f}%)")
    print("\nFlagPerf Baichuan2-13B on 16 H800, accumulation 8 and 64: seconds a micro-batch, seconds a step beside them")
    for kind, (per, fixed) in step_split(run).items():
        print(f"  {kind:9s} {per:6.3f} s a micro-batch, {fixed:6.2f} s a step")
    print("\n".join(summary_lines(run, SOURCES, "perf_heldout73")))


if __name__ == "__main__":
    main()
