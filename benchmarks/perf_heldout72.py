"""Held-out check on published runs added 2026-12-07 (forty-sixth batch: Megatron-Bridge fine-tuning on H100, full SFT and
LoRA of dense, MoE and hybrid models; nothing fitted on them), one source no benchmark held for these runs:

(1) Megatron-Bridge's model-verification cards (NVIDIA-NeMo/Megatron-Bridge examples/model_verification_cards/<model>/
card.yaml, read at 067f987df, 2026-08-22): their `sft`, `peft` and `sft_long_context` training items on H100, each naming
its recipe, the command's overrides, the Bridge commit it ran at and the mean of its last ten steps. perf_heldout60 / 63
took the same cards' pre-training items; these fine-tuning items (Tulu 3 SFT data offline-packed into 2,048 / 8,192 /
32,768-token rows, assistant-only loss) were not taken (docs/known-gaps.md 230, its item (c) of what is left). Models
with a preset: Qwen3-8B, Qwen3-30B-A3B, GPT-OSS 20B / 120B, Moonlight-16B-A3B, Nemotron 3 Nano 4B.

Data: benchmarks/data/heldout_2027t_mbridge_card_finetune.csv in heldout_pretrain.csv's columns plus `method` (full,
lora) and `refused` (why the data does not score a row); perf_heldout.job_of builds each job (packed rows through
`packed_avg_tokens`), every setting the card does not state is in the row's `assumed` column with the recipe and commit
it was read from. The figure is the card's last_10_steps_step_time_ms_avg (metric step_time_s). The six long-context
items (context parallelism over THD-packed rows) are listed, not scored: each runs several times the estimate's step
(printed below the scored rows with its estimate; docs/known-gaps.md 285 (c)).

Printed: each row (published, predicted step, error, the estimate's step terms), memory fits, the long-context items'
measured over predicted step, each model's LoRA over full-SFT step ratio, the MoE rows' excess per micro-batch and MoE
layer with the busiest EP rank's load their step would take (docs/known-gaps.md 288 (c)), the batch's time figures.

Sign: (predicted - published) / published of the step: - = predicted too fast (the accuracy bands' throughput sign is
the opposite: published / predicted - 1).

Run: python benchmarks/perf_heldout72.py
"""

from __future__ import annotations

from pathlib import Path

import perf_heldout as ph
from harness import print_fits
from perf_heldout69 import row_line, timed
from trainsizer.models import load_model

DATA = Path(__file__).resolve().parent / "data"
CARD_ROWS = DATA / "heldout_2027t_mbridge_card_finetune.csv"
TITLE = "(1) Megatron-Bridge model-card fine-tuning items on H100 (2026-07 / 08)"

BATCH = ph.Batch((CARD_ROWS,))
rows, models, job = BATCH.rows, BATCH.models, BATCH.job
run_all, fits = BATCH.run_listed, BATCH.fits_listed  # a row the data does not score (its `refused` column) is listed


def unscored() -> ph.Run:
    """The rows the data lists without scoring them (the long-context items), estimated as written: (case, result,
    row), the case's prediction the estimate's step."""
    return BATCH.estimate([r for r in rows() if r["refused"]])


def lora_over_full(run: ph.Run) -> list[tuple[str, float, float]]:
    """(model, measured, predicted) LoRA step over full-SFT step a GPU-second for the models both items of which are
    scored: each step times its GPUs, over the tokens a step (the items differ in GPUs and batch)."""
    got = {(r["model"], r["method"]): (c, r) for c, _, r in run if not c.skipped}
    out = []
    for (model, method), (c, r) in got.items():
        if method != "lora" or (model, "full") not in got:
            continue
        f, fr = got[(model, "full")]

        def cost(x: float, row: dict[str, str]) -> float:
            return x * int(row["gpu_count"]) / (int(row["global_batch_seqs"]) * int(row["seq_len"]))

        out.append((model, cost(c.measured, r) / cost(f.measured, fr), cost(c.predicted, r) / cost(f.predicted, fr)))
    return out


def _step_at(r: dict[str, str], extra: str) -> float:
    """The row's predicted step (s) with `extra` appended to its strategy_extra (a job-level key such as
    moe_capacity_factor, which perf_heldout.job_of moves to the job)."""
    c, _, _ = BATCH.estimate([{**r, "strategy_extra": f"{r['strategy_extra']};{extra}"}])[0]
    return c.predicted


def implied_load(r: dict[str, str], hi: float = 8.0, steps: int = 14) -> float | None:
    """The busiest EP rank's load (moe_capacity_factor) at which the estimate meets the row's step (bisection on
    [1, hi]), or None where the balanced estimate is already at or above it or `hi` does not reach it: a diagnostic,
    the cards state no load (docs/known-gaps.md 288 (c))."""
    measured = float(r["value"])
    if _step_at(r, "moe_capacity_factor=1.0") >= measured or _step_at(r, f"moe_capacity_factor={hi}") < measured:
        return None
    lo = 1.0
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _step_at(r, f"moe_capacity_factor={mid}") < measured else (lo, mid)
    return 0.5 * (lo + hi)


def moe_excess(run: ph.Run) -> list[tuple[str, int, float, float, float]]:
    """(row id, EP, measured less predicted step per micro-batch a rank runs (s), the same per MoE layer a stage
    holds (s), the step's measured over predicted) of every scored MoE row."""
    out = []
    for c, res, r in run:
        if c.skipped or not res:
            continue
        arch = load_model(r["model"])
        if not arch.is_moe:
            continue
        per_mb = (c.measured - c.predicted) / float(res["time"]["micro_batches"])
        out.append((c.row_id, int(r["ep"]), per_mb, per_mb / (arch.moe_layer_count / int(r["pp"])),
                    c.measured / c.predicted))
    return out


def layer_by_local_experts(run: ph.Run) -> list[tuple[str, int, float, float, float]]:
    """(row id, EP, local experts, measured step, predicted step) of every scored MoE row, each step over the
    micro-batches a rank runs and the MoE layers a stage holds (s): the measured layer against the experts a rank
    holds, which the estimate's per-expert host term follows (docs/known-gaps.md 305 (c))."""
    out = []
    for c, res, r in run:
        arch = load_model(r["model"])
        if c.skipped or not res or not arch.is_moe:
            continue
        per = float(res["time"]["micro_batches"]) * arch.moe_layer_count / int(r["pp"])
        out.append((c.row_id, int(r["ep"]), arch.experts / int(r["ep"]), c.measured / per, c.predicted / per))
    return out


def main() -> None:
    run = run_all()
    print(f"{TITLE}: published, predicted step (s), error (held out, nothing fitted):")
    print("\n".join(row_line(*t) for t in run))
    print_fits(fits(), "perf_heldout72")
    print("\nlong-context items (listed, not scored): published, predicted step (s), published over predicted")
    for c, res, r in unscored():
        print(f"  {c.row_id:58s} {c.measured:8.4g} {c.predicted:8.4g}  x{c.measured / c.predicted:5.2f}  (CP {r['cp']}, "
              f"{'fits' if res['memory']['fits'] else 'DOES NOT FIT'} {res['memory']['per_gpu_gib']:.0f} GiB)")
    print("\nLoRA over full SFT, step GPU-seconds a token (measured, predicted):")
    print("\n".join(f"  {m:24s} {a:.3f} {b:.3f}" for m, a, b in lora_over_full(run)))
    print("\nMoE rows: measured less predicted step per micro-batch a rank runs and per MoE layer a stage holds (ms), "
          "and the busiest EP rank's load the measured step would take (a diagnostic; the cards state no load):")
    by_id = {r["id"]: r for r in rows()}
    for rid, ep, per_mb, per_layer, ratio in moe_excess(run):
        load = implied_load(by_id[rid]) if ep > 1 else None
        said = "one GPU runs every expert: no rank waits" if ep == 1 else \
            f"moe_capacity_factor {load:.2f}" if load else "no load reaches it (<= 8)"
        print(f"  {rid:58s} EP {ep:2d}  {per_mb * 1e3:6.0f} {per_layer * 1e3:6.2f}  x{ratio:4.2f}  {said}")
    print("\nMoE rows: measured and predicted step a MoE layer and micro-batch (ms) against the local experts a rank "
          "holds (docs/known-gaps.md 305 (c)):")
    for rid, ep, local, meas, pred in layer_by_local_experts(run):
        print(f"  {rid:58s} EP {ep:2d}  local {local:3.0f}  measured {meas * 1e3:5.1f}  predicted {pred * 1e3:5.1f}")
    print(ph.time_summary("perf_heldout72", timed(run)))


if __name__ == "__main__":
    main()
