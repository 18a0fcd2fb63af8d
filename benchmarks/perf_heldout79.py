"""Held-out check on published runs added 2026-12-08 (fifty-third batch; nothing fitted on them), from two sources no
benchmark held: one author's matched-stack H200 / B200 comparison of Hugging Face + DeepSpeed training, the same job
on both parts with every version pinned, sequence length the axis; and a torchtitan parallelism sweep on 8 GB200.

stas00/ml-engineering insights/when-to-upgrade-gpus/README.md ('When Is It Worth Upgrading GPUs?', Stas Bekman, at
2943345, 2026-08-07; its tables as first written on 2026-07-20), with the scripts that produced every number
(benchmark.py at 380e078, bench_decompose.py at c8f3691): meta-llama/Llama-3.1-8B, real weights, bf16 under DeepSpeed
0.19.2, 8 GPUs of one host, one dense sequence a GPU, no accumulation, PyTorch 2.13.0 / CUDA 13.0, transformers 5.14.1,
attention as transformers picks it per part (FlashAttention-3 on H200, FlashAttention-4 4.0.0b22 on B200):
(1) the sequence sweep, 8K to 256K positions, one config on both parts: ZeRO-3, activation checkpointing of every
    layer, DeepSpeed's CPU AdamW offload, Liger-Kernel (fused RMSNorm / RoPE / SwiGLU / linear cross-entropy); the
    figures are the README's steady-state TFLOPS a GPU and the worst rank's torch.cuda.max_memory_reserved;
(2) the 'right-sized' 8K run of its step decomposition: ZeRO-2, no checkpointing, no offload, no Liger (TFLOPS a GPU,
    the reserved peak 99 GiB on both parts), and the same run with Liger on, whose peak (80 GiB on both) is printed
    but whose time is only said to be within 1.5% (memory-only rows).
(3) Dipankar Baisya's 'Scaling LLM Pre-Training with TorchTitan' (daddyofadoggy/blog posts/torchtitan/3d.md at db07f840e,
    dated 2026-01-05): torchtitan on 8 GB200, Llama 3.1 8B (Table 1: FSDP, HSDP 2 x 4, PP 4 x FSDP 2, TP 2 x FSDP 4,
    FSDP 2 x TP 2 x CP 2, FSDP 2 x TP 2 x PP 2; local batch 8-512, 2K-16K positions, compile on / off) and Qwen3-32B
    (Table 4: FSDP 8, HSDP 2 x 4, TP 2 x FSDP 4), tokens/s a GPU and the logged memory share (max reserved, whole per
    cent of the 184.31 GiB device); torchtitan's release is not stated (late 2025 taken, every unstated setting in the
    row's `assumed`); the two TP + HSDP rows name 16 GPUs' degrees on 8 and are listed as refused.
Not rows: the H200 torch / CUDA sweep at 8K (113.8-140.4 TFLOPS from torch 2.10 to 2.13: a release the estimate does not
take), the step decomposition's attention / everything-else buckets (shares of one measured step, not runs), the
isolated FA3 / FA4 micro-benchmark (kernels, not training), the MAMF tables (matmul only).

Data: (1)-(2) benchmarks/data/heldout_2028a_mleng_h200_b200.csv, finetune_heldout's columns plus the kernels and DeepSpeed
settings the scripts fix and the published TFLOPS (`published_tflops`); every setting the source does not state is in
the row's `assumed`. The time figure is tokens/s a GPU read back from the printed TFLOPS through the scripts' own
FLOP count (benchmark.py estimate_tflos: 6 N tokens plus causal attention 6 s^2 d_head n_heads L, recompute not
counted), so seq x TFLOPS / that count. (3) benchmarks/data/heldout_2028a_titan_gb200_blog.csv in heldout_pretrain.csv's
columns plus `method` and `refused` (perf_heldout.job_of builds each job; qwen3-32b from heldout_models.yaml), a time
row and a peak_memory_gib twin for each table row.

Printed: each row (published, predicted, error), per source, the B200 / H200 speedup at each sequence length (the
source's headline, measured against predicted), and what a thousand positions add to the sweep's reserved peak
(measured slope against predicted, 8K to 256K); (3)'s rows by table, the runs said not to fit, and the batch's lines.

Sign: (predicted - published) / published; + = predicted too fast (tokens/s) or too large (memory).

Run: python benchmarks/perf_heldout79.py
"""

from __future__ import annotations

from pathlib import Path

import finetune_heldout as fh
import perf_heldout as ph
import perf_heldout43 as p43
from harness import Case, mape, print_case_rows, print_fits, scored, twin_ratios
from perf_heldout69 import peaks, print_parts, summary_lines, timed

DATA = Path(__file__).resolve().parent / "data"
MLENG = DATA / "heldout_2028a_mleng_h200_b200.csv"
BATCH = fh.Batch((MLENG,))
rows, job, cases = BATCH.rows, BATCH.job, BATCH.cases
SWEEP = "_zero3_offload_ckpt_liger_"
TITAN_ROWS = DATA / "heldout_2028a_titan_gb200_blog.csv"
TITAN_SOURCES = (("(3) torchtitan blog, Llama 3.1 8B on 8 GB200 (Table 1: FSDP / HSDP / PP / TP / CP / 3D)",
                  "heldout_2028a_titan_gb200_llama31_8b_"),
                 ("(3) torchtitan blog, Qwen3-32B on 8 GB200 (Table 4: FSDP / HSDP / TP + FSDP)",
                  "heldout_2028a_titan_gb200_qwen3_32b_"))
TITAN = ph.Batch((TITAN_ROWS,), (ph.MODELS,))
titan_rows, titan_models, titan_job = TITAN.rows, TITAN.models, TITAN.job
titan_run, titan_fits = TITAN.run_listed, TITAN.fits_listed  # the `refused` column's rows listed with the reason


def h200_twin(row_id: str) -> str | None:
    """The H200 row of a B200 row's job (None for an H200 row)."""
    return row_id.replace("_b200_", "_h200_") if "_b200_" in row_id else None


def speedups(cs: list[Case]) -> list[tuple[str, float, float]]:
    """(B200 row, measured, predicted) B200 over H200 tokens/s: the README's speedup column and its 8K ZeRO-2 total."""
    return twin_ratios(cs, "tokens_s", h200_twin)


def sweep_slopes(cs: list[Case]) -> list[tuple[str, float, float]]:
    """(part, measured, predicted) GiB of reserved peak that 1,000 positions add across the sweep, 8K to 256K."""
    out = []
    for part in ("h200", "b200"):
        got = {c.row_id.rsplit("_", 1)[1]: c for c in scored(cs, "peak_gib") if f"_{part}_" in c.row_id and SWEEP in c.row_id}
        lo, hi = got["8k"], got["256k"]
        k = 1000.0 / ((256 - 8) * 1024)
        out.append((part, (hi.measured - lo.measured) * k, (hi.predicted - lo.predicted) * k))
    return out


def batch_lines(cs: list[Case], run: ph.Run) -> list[str]:
    """The batch's time and memory n, MAPE and median over both files (the fine-tune cases and the torchtitan run)."""
    out = []
    for label, got in (("time", scored(cs, "tokens_s") + ph.scored_refused(timed(run))[0]),
                       ("peak memory", scored(cs, "peak_gib") + ph.scored_refused(peaks(run))[0])):
        out.append(f"perf_heldout79 {label}: n={len(got)} MAPE {mape(got):.1f}% (median {ph.median_pct(got):+.1f}%)")
    refused = sum(c.metric == "refused" for c in cs) + len(ph.scored_refused(run)[1])
    return out + [f"perf_heldout79 refused {refused}"]


def main() -> None:
    cs = cases()
    print("ml-engineering when-to-upgrade-gpus: Llama-3.1-8B under HF + DeepSpeed bf16 on 8 H200 / 8 B200, one sequence "
          "a GPU, (1) ZeRO-3 + CPU offload + checkpointing + Liger from 8K to 256K positions, (2) ZeRO-2 at 8K (tokens/s "
          "a GPU, reserved peak GiB) (held out, nothing fitted):")
    print_case_rows([c for c in cs if c.metric in ("tokens_s", "peak_gib")], 62, "9.1f")
    print("\nper source:")
    print("\n".join(p43.source_lines(cs)))
    print("\nB200 over H200 tokens/s, the same job (measured vs predicted):")
    print("\n".join(f"  {rid:62s} measured {m:5.2f}x predicted {p:5.2f}x" for rid, m, p in speedups(cs)))
    print("\nGiB that 1,000 positions add to the sweep's reserved peak, 8K to 256K (measured vs predicted):")
    print("\n".join(f"  {part}  measured {m:6.3f} predicted {p:6.3f}" for part, m, p in sweep_slopes(cs)))
    print(fh.said_lines(cs))
    print("\n" + p43.summary("perf_heldout79 (1)-(2)", cs) + "\n")
    run = titan_run()
    print_parts(run, TITAN_SOURCES)
    print_fits([f for f in titan_fits() if not f.row_id.endswith("_peak_memory")], "perf_heldout79 (3)")  # a run once
    print("\n".join(summary_lines(run, TITAN_SOURCES, "perf_heldout79 (3)")))
    print("\n" + "\n".join(batch_lines(cs, run)))


if __name__ == "__main__":
    main()
