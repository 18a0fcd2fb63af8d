"""Held-out check on published runs added 2026-12-08 (fifty-third batch; nothing fitted on them), from a source no
benchmark held: one author's matched-stack H200 / B200 comparison of Hugging Face + DeepSpeed training, the same job
on both parts with every version pinned, sequence length the axis:

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
Not rows: the H200 torch / CUDA sweep at 8K (113.8-140.4 TFLOPS from torch 2.10 to 2.13: a release the estimate does not
take), the step decomposition's attention / everything-else buckets (shares of one measured step, not runs), the
isolated FA3 / FA4 micro-benchmark (kernels, not training), the MAMF tables (matmul only).

Data: benchmarks/data/heldout_2028a_mleng_h200_b200.csv, finetune_heldout's columns plus the kernels and DeepSpeed
settings the scripts fix and the published TFLOPS (`published_tflops`); every setting the source does not state is in
the row's `assumed`. The time figure is tokens/s a GPU read back from the printed TFLOPS through the scripts' own
FLOP count (benchmark.py estimate_tflos: 6 N tokens plus causal attention 6 s^2 d_head n_heads L, recompute not
counted), so seq x TFLOPS / that count.

Printed: each row (published, predicted, error), per source, the B200 / H200 speedup at each sequence length (the
source's headline, measured against predicted), and what a thousand positions add to the sweep's reserved peak
(measured slope against predicted, 8K to 256K).

Sign: (predicted - published) / published; + = predicted too fast (tokens/s) or too large (memory).

Run: python benchmarks/perf_heldout79.py
"""

from __future__ import annotations

from pathlib import Path

import finetune_heldout as fh
import perf_heldout43 as p43
from harness import Case, print_case_rows, scored, twin_ratios

DATA = Path(__file__).resolve().parent / "data"
MLENG = DATA / "heldout_2028a_mleng_h200_b200.csv"
BATCH = fh.Batch((MLENG,))
rows, job, cases = BATCH.rows, BATCH.job, BATCH.cases
SWEEP = "_zero3_offload_ckpt_liger_"


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
    print("\n" + p43.summary("perf_heldout79", cs))


if __name__ == "__main__":
    main()
