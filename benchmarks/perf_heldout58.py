"""Held-out check on published runs added 2026-12-06 (thirty-second batch: measured active and reserved peaks beside
time over a sequence-length sweep; nothing is fitted on them), the series of one source that perf_heldout56 left out
(docs/known-gaps.md 211 (g)):

(1) gpjt/fine-tune-2024-04 (Giles Thomas, 2024-08), sequence-length-memory-modeling-8B/: Llama 3 8B fully fine-tuned
by the HF Trainer under DeepSpeed (fp16 engine) on the 8-GPU 80 GB host of perf_heldout56, one sequence a GPU, padded to
N positions for N = 1, 101, ..., 2,001, in four series: ZeRO-3 without gradient checkpointing, without and with
PYTORCH_CUDA_ALLOC_CONF=expandable_segments (`noenv`, `exp`), and ZeRO-2 with the optimizer offloaded to the host
(DeepSpeedCPUAdam) under gradient checkpointing, without and with it (`offnoenv`, `offexp`). Each run writes its GPU's
torch.cuda.memory_stats peaks ('active_bytes.all.peak', 'reserved_bytes.all.peak', MiB) and its iterations a second.
Rows: each series' lengths nearest 500, 1,000, 1,500 and 2,000 (the rule set before scoring), GPU 0's line (as
perf_heldout56): an active row with tokens/s and a reserved row.

Not rows (read, said in docs/known-gaps.md 221): the same repository's Liger Kernel series and its 0.5B sweeps (as 211 (g)).

Data: benchmarks/data/heldout_2027f_gpjt_seqlen.csv (perf_heldout56's columns; every setting the source does not state
is in the row's `assumed`, with the default read).

Printed: each row (published, predicted, error), per source, what a thousand positions add to each series' active
and reserved peak (measured slope against predicted, from its shortest to its longest scored row), each reserved row's
reserved less active peak against the estimate's and the part DeepSpeed ZeRO's pools hold (perf_heldout56.
reserved_gaps, known-gaps 234), and each ZeRO-3 time row in seconds a step against the estimate and its serial sum
(perf_heldout56.step_seconds).

Sign: (predicted - published) / published; + = predicted too fast (time) or too large (memory).

Run: python benchmarks/perf_heldout58.py
"""

from __future__ import annotations

from pathlib import Path

import finetune_heldout as fh
import perf_heldout43 as p43
import perf_heldout56 as p56
from harness import Case, print_case_rows, scored

DATA = Path(__file__).resolve().parent / "data"
SEQLEN = DATA / "heldout_2027f_gpjt_seqlen.csv"
SOURCES = (SEQLEN,)
BATCH = fh.Batch(SOURCES)
rows, job, cases = BATCH.rows, BATCH.job, BATCH.cases
SERIES = ("noenv", "exp", "offnoenv", "offexp")


def series_of(row_id: str) -> tuple[str, int, bool]:
    """(series, sequence length, reserved row) of a row id 'gpjt24_llama3-8b_seq_<series>_s<N>[_reserved]'."""
    reserved = row_id.endswith("_reserved")
    series, n = row_id.removesuffix("_reserved").split("_seq_")[1].rsplit("_s", 1)
    return series, int(n), reserved


def slopes(cs: list[Case]) -> list[tuple[str, str, float, float]]:
    """(series, 'active' / 'reserved', measured, predicted GiB that 1,000 positions add) between each series' shortest
    and longest scored row."""
    got: dict[tuple[str, bool], list[tuple[int, Case]]] = {}
    for c in scored(cs, "peak_gib"):
        series, n, reserved = series_of(c.row_id)
        got.setdefault((series, reserved), []).append((n, c))
    out = []
    for (series, reserved), pts in got.items():
        (n0, lo), (n1, hi) = min(pts, key=lambda p: p[0]), max(pts, key=lambda p: p[0])
        k = 1000.0 / (n1 - n0)
        out.append((series, "reserved" if reserved else "active", (hi.measured - lo.measured) * k,
                    (hi.predicted - lo.predicted) * k))
    return out


def main() -> None:
    cs = cases()
    print("(1) gpjt/fine-tune-2024-04: Llama 3 8B full fine-tuning, HF Trainer + DeepSpeed fp16 on 8 x 80 GB, one "
          "sequence a GPU, sequence-length sweeps (ZeRO-3; ZeRO-2 + optimizer offload with checkpointing) (active / "
          "reserved peak, tokens/s) (held out, nothing fitted):")
    print_case_rows([c for c in cs if c.metric in ("tokens_s", "peak_gib")], 44, "9.1f")
    print("\nper source:")
    print("\n".join(p43.source_lines(cs)))
    print("\nGiB that 1,000 positions add to the peak (measured vs predicted):")
    print("\n".join(f"  {s:8s} {kind:8s} measured {m:5.2f} predicted {p:5.2f}" for s, kind, m, p in slopes(cs)))
    p56.print_reserved_gaps(cs, rows())
    p56.print_step_seconds(rows(), floors=True)
    print(fh.said_lines(cs))
    print("\n" + p43.summary("perf_heldout58", cs))


if __name__ == "__main__":
    main()
