"""Held-out check on published runs added 2026-12-06 (thirty-first batch: nanotron's pre-training scaling benchmarks on
H100, 1 to 64 nodes; nothing is fitted on them), one source no benchmark held:

(1) huggingface/nanotron docs/benchmark_summary.svg (added c2528430, 2025-03-10; the figure dated 2025-02-13), the
README's 'Benchmarks': 'the best configurations we discovered for each model size and node count in nanotron v0.5,
highlighting optimal MFU (Model FLOPS Utilization) and memory usage', the Ultra-Scale Playbook's runs. Two heat maps,
model size (1.34B, 3.57B, 8.86B, 80B Llama-style models with full multi-head attention and a 131,072 vocabulary) by
node count (1, 2, 4, ..., 64 nodes of 8 H100): each cell's MFU (%) and a memory figure (GB), and its layout (DP, TP,
PP, micro-batches a step, micro-batch, ZeRO-0 / 1). Every cell trains 256 sequences of 4,096 a step (1M tokens).
The figure's cells are text in the SVG (matplotlib writes each label as a comment before its glyphs, at the cell's
position): the rows read them as found.

What the figure does not state is taken from the benchmark's own scripts (scripts/scaling_benchmarks.py, e24d2483,
2025-02-19, 'used in https://huggingface.co/spaces/nanotron/ultrascale-playbook', and its base config on the
benchmark branch, 67c5ebb6) and nanotron's code at the playbook merge (0e0a27ea): bf16, fp32 gradient accumulation,
fused AdamW, 1F1B, sequence parallel with async TP linears, no recompute, flash-attn varlen, eager SwiGLU, fp32
sharded cross-entropy; ZeRO-0 runs torch DDP with an fp32 comm hook, ZeRO-1 (with fp32 accumulation) no DDP: one
fp32 all-reduce of the whole gradient buffer after the backward (grad_reduce_overlap false). Each row's `assumed`
names them. The cluster: Hugging Face's 'hopper-prod' (AWS p5, EFA), as perf_heldout's SmolLM3 row.

(2) InternLM/InternLM doc/en/train_performance.md (2023-07-06, figures fixed 2023-07-08 at c18bec9), 'FLOPS Testing':
InternLM's 7B trained by its own 2023 code on A100 SXM4 80GB hosts joined by 4 x 100 Gb RoCE, TP 1, ZeRO-1 over the 8
GPUs of a node, 8 to 1,024 GPUs, with and without activation checkpointing, micro-batches of 2-8 x 2,048 tokens, 1-4 a
step: tokens a GPU a second (TGS). The settings the table does not state are InternLM's code at that commit (the
hybrid ZeRO optimizer all-reduces bf16 gradient buckets of 512M elements over all of DP in the last micro-batch's
backward; eager SwiGLU, apex RMSNorm, flash-attn's fused cross-entropy; ZeRO-1 stated as zero 1, over all of DP),
named in each row's `assumed`. Data:
benchmarks/data/heldout_2027e_internlm_2023.csv, model benchmarks/data/heldout_2027e_internlm_models.yaml.

Data: benchmarks/data/heldout_2027e_nanotron_playbook.csv (heldout_pretrain.csv's columns and `figure_memory_gb`);
models: benchmarks/data/heldout_2027e_nanotron_models.yaml (scaling_benchmarks.py's model_configs).

Scored: MFU (`nanotron_mfu_pct`): nanotron's logged model TFLOP/s a GPU (its get_flops: the sum flops.nemo_llama_flops
holds, attention non-causal) over H100's 989.4 dense BF16 TFLOP/s; the estimate's step gives the same quantity, so the
error is the throughput's. Not scored: the memory figure (GB = 2^30 B of rank 0; nanotron writes both
max_memory_allocated and max_memory_reserved, the figure does not say which): printed beside both estimates.

Sign: (predicted - published) / published; + = predicted too fast.

Run: python benchmarks/perf_heldout57.py
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import perf_heldout as ph
from harness import Case, mape
from trainsizer.catalog import load_catalog

DATA = Path(__file__).resolve().parent / "data"
ROWS = DATA / "heldout_2027e_nanotron_playbook.csv"
MODELS = DATA / "heldout_2027e_nanotron_models.yaml"
INTERNLM = DATA / "heldout_2027e_internlm_2023.csv"
INTERNLM_MODELS = DATA / "heldout_2027e_internlm_models.yaml"
MFU = "nanotron_mfu_pct"


def nanotron_split(layers: int, hidden: int, heads: int, ffn: int, vocab: int, pp: int) -> list[int]:
    """Decoder layers on each pipeline rank as nanotron assigns them (models/base.py build_model at 0e0a27ea): blocks
    in order (embedding, layers, final norm, LM head, fp32 cast, loss) with LlamaForTraining.get_block_compute_costs
    (a layer 4 a d_qk h + 3 ffn h, the head V h, the rest 0); a block goes to the current rank, which moves on once
    the running cost passes total x (rank + 1) / pp. Uneven where the head's cost does not divide out."""
    layer = 4 * heads * (hidden // heads) * hidden + 3 * ffn * hidden
    costs = [0] + [layer] * layers + [0, vocab * hidden, 0, 0]
    total, running, rank, counts = sum(costs), 0, 0, [0] * pp
    for i, cost in enumerate(costs):
        running += cost
        counts[rank] += 1 if 1 <= i <= layers else 0
        if running > total * (rank + 1) / pp:
            rank += 1
    return counts


def _peak_tflops(accelerator: str) -> float:
    """The part's dense BF16 TFLOP/s (the catalog's: 989.4 for H100 SXM), MFU's denominator."""
    return float(load_catalog().accelerators[accelerator].tflops_dense["bf16"])


def predicted(row: dict[str, str], result: dict[str, Any], model: Any) -> float:
    """The estimate in the row's metric: MFU from the estimated step through nanotron's model FLOPs (= NeMo's
    Llama formula, perf_heldout's nemo_tflops_per_gpu) over the part's dense BF16 peak; other metrics as perf_heldout."""
    if row["metric"] != MFU:
        return ph.predicted_metric(row, result, model)
    tflops = ph.predicted_metric(dict(row, metric="nemo_tflops_per_gpu"), result, model)
    return 100.0 * tflops / _peak_tflops(row["accelerator"])


BATCH = ph.Batch((ROWS,), (MODELS,), predicted)
INTERNLM_BATCH = ph.Batch((INTERNLM,), (INTERNLM_MODELS,), predicted)  # source (2): tokens a GPU a second
rows, models, run_all = BATCH.rows, BATCH.models, BATCH.run_all
internlm_rows, internlm_models, internlm_run = INTERNLM_BATCH.rows, INTERNLM_BATCH.models, INTERNLM_BATCH.run_all


def internlm_lines(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> list[str]:
    """Each InternLM row: TGS measured / predicted, the estimated step and its DP and optimizer terms."""
    out = []
    for c, res, _ in run:
        if c.skipped:
            out.append(f"  {c.row_id:48s} {c.skipped}")
            continue
        b = res["time"]["breakdown_s"]
        out.append(f"  {c.row_id:48s} TGS measured {c.measured:6.0f} predicted {c.predicted:6.0f} ({100 * c.err:+6.1f}%)"
                   f"  step {res['time']['step_s']:6.3f} s (dp {b['dp_comm']:.3f}, optimizer {b['optimizer']:.3f})")
    return out


# InternLM's ZeRO-1 as the rows state it (zero1 8: the group inside a node, the gradients all-reduced over all of DP)
ZERO1_GROUP = "zero=1;shard_group=8;zero1_grad_allreduce=true;"


def internlm_readings(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> list[tuple[str, float, float, float]]:
    """(row, error as stated, error with ZeRO-1 over all of DP, error with zero 0) of each InternLM row (known-gaps
    228): the rows state InternLM's hybrid ZeRO (hybrid_zero_optim.py at c18bec9): the states sharded and the step
    run over a node's 8 GPUs (shard_group 8), the bf16 gradients all-reduced over all of DP (zero1_grad_allreduce),
    each updated shard broadcast inside the node. ZeRO-1 over all of DP (the rows' statement before the group had a
    field) reduce-scatters and all-gathers over all of DP, the all-gather across hosts after the step, and steps on
    1 / DP of the states; zero 0 all-reduces as the run but keeps and steps on every state on every GPU."""
    archs, catalogs = internlm_models(), {}
    out = []
    for c, _, r in run:
        if c.skipped:
            continue
        assert r["strategy_extra"].startswith(ZERO1_GROUP), r["id"]
        rest = r["strategy_extra"][len(ZERO1_GROUP):]
        whole, _ = ph.estimate_row(dict(r, strategy_extra="zero=1;" + rest), archs, catalogs, predicted)
        z0, _ = ph.estimate_row(dict(r, strategy_extra="zero=0;" + rest), archs, catalogs, predicted)
        out.append((c.row_id, c.err, whole.err, z0.err))
    return out


def memory_lines(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> list[str]:
    """Each run's memory figure beside the estimate's allocated and reserved peaks (perf_heldout's peak_allocated_gib
    / peak_memory_gib readings of one result) and its fit: not scored, the figure names neither."""
    out = []
    for c, res, r in run:
        if not res:
            continue
        alloc, reserved = (ph.predicted_metric(dict(r, metric=m), res, None)
                           for m in ("peak_allocated_gib", "peak_memory_gib"))
        out.append(f"  {c.row_id:52s} figure {float(r['figure_memory_gb']):5.1f}  allocated {alloc:5.1f}  "
                   f"reserved {reserved:5.1f}  {'fits' if res['memory']['fits'] else 'DOES NOT FIT'}")
    return out


def measured_step(c: Case, res: dict[str, Any]) -> float:
    """The step a row's figure implies: the estimate's step times predicted / measured (MFU and TGS are each the
    step's fixed work over its time, so their ratio is the steps' inverse ratio)."""
    return float(res["time"]["step_s"]) * c.predicted / c.measured


def slot_lines(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> list[str]:
    """Each row with PP >= 4 in seconds a 1F1B slot (known-gaps 237): the step less the estimate's DP and optimizer
    terms over the m + p - 1 slots the estimate schedules (fill and drain at the slowest rank's pace), measured beside
    predicted, and over the decoder layers of the most loaded rank (the row's pp_stage_layers); the p2p the estimate
    charges a step beside them."""
    archs, out = models(), []
    for c, res, r in run:
        p = int(r["pp"])
        if p < 4 or not res:
            continue
        s = ph.job_of(r, archs)["strategy"]
        m = int(r["global_batch_seqs"]) // (int(r["gpu_count"]) // (int(r["tp"]) * p) * int(r["micro_batch"]))
        b = res["time"]["breakdown_s"]
        outside = b["dp_comm"] + b["optimizer"]
        meas, pred = ((step - outside) / (m + p - 1) for step in (measured_step(c, res), res["time"]["step_s"]))
        pace = max(s["pp_stage_layers"])
        out.append(f"  {c.row_id:46s} m {m:3d} pace {pace:2d} layers: a slot {1e3 * meas:6.1f} ms measured, "
                   f"{1e3 * pred:6.1f} predicted (x{meas / pred:.2f}); a layer {1e3 * meas / pace:5.1f} / "
                   f"{1e3 * pred / pace:5.1f} ms; p2p {b['pp_comm']:.3f} s a step")
    return out


# InternLM rows that differ by one quantity of work at one GPU count and recompute setting (known-gaps 237): (what
# grows, row with less, row with more, units in each)
INTERNLM_PAIRS = (
    ("micro-batch (2 x 2,048, no recompute, 512 GPUs)", "internlm_2023-07_a100_7b_noac_512gpu_mbs2_mn2",
     "internlm_2023-07_a100_7b_noac_512gpu_mbs2_mn4", 2, 4),
    ("sequence (recompute full, one micro-batch, 512 GPUs)", "internlm_2023-07_a100_7b_ac_512gpu_mbs4_mn1",
     "internlm_2023-07_a100_7b_ac_512gpu_mbs8_mn1", 4, 8),
)
# one-host rows (no traffic between hosts) read against the pair of the same recompute setting: (row, pair, units)
INTERNLM_ONE_HOST = (("internlm_2023-07_a100_7b_noac_8gpu_mbs2_mn4", 0, 4),
                     ("internlm_2023-07_a100_7b_ac_8gpu_mbs8_mn1", 1, 8))


def internlm_pair_lines(run: list[tuple[Case, dict[str, Any], dict[str, str]]]) -> list[str]:
    """Seconds a unit of work (the pair's slope) and beyond it (its intercept), measured and predicted, and what the
    one-host rows leave beyond their units at that slope: the step's own cost where no collective leaves the host."""
    steps = {c.row_id: (measured_step(c, res), float(res["time"]["step_s"])) for c, res, _ in run if res}
    slopes, out = [], []
    for what, a, b, ua, ub in INTERNLM_PAIRS:
        slope = tuple((steps[b][i] - steps[a][i]) / (ub - ua) for i in (0, 1))
        slopes.append(slope)
        beyond = tuple(steps[a][i] - ua * slope[i] for i in (0, 1))
        out.append(f"  a {what}: {slope[0]:.3f} s measured, {slope[1]:.3f} predicted; beyond: {beyond[0]:.3f} / "
                   f"{beyond[1]:.3f} s")
    for rid, k, units in INTERNLM_ONE_HOST:
        left = tuple(steps[rid][i] - units * slopes[k][i] for i in (0, 1))
        out.append(f"  {rid:46s} {steps[rid][0]:.3f} s: {units} units at the pair's slope leave {left[0]:.3f} s "
                   f"measured, {left[1]:.3f} predicted")
    return out


def _median(cs: list[Case]) -> float:
    errs = sorted(c.err for c in cs)
    n = len(errs)
    return 100.0 * (errs[n // 2] if n % 2 else (errs[n // 2 - 1] + errs[n // 2]) / 2)


def group_lines(cs: list[Case], rs: dict[str, dict[str, str]], key: str) -> list[str]:
    """n, MAPE and median of the scored rows by one of the row's columns (model, gpu_count, tp, pp)."""
    groups: dict[str, list[Case]] = {}
    for c in cs:
        groups.setdefault(rs[c.row_id][key], []).append(c)
    return [f"  {key} {k:22s} n={len(g):2d} MAPE {mape(g):5.1f}% (median {_median(g):+.1f}%)"
            for k, g in sorted(groups.items(), key=lambda kv: (len(kv[0]), kv[0]))]


def zero_lines(cs: list[Case], rs: dict[str, dict[str, str]]) -> list[str]:
    """By ZeRO stage: ZeRO-1 runs reduce the whole fp32 gradient after the backward, ZeRO-0 ones overlap it."""
    tagged = {c.row_id: dict(rs[c.row_id], zero="ZeRO-1" if "zero=1" in rs[c.row_id]["strategy_extra"] else "ZeRO-0")
              for c in cs}
    return group_lines(cs, tagged, "zero")


def main() -> None:
    run = run_all()
    cs = [c for c, _, _ in run if not c.skipped]
    rs = {r["id"]: r for _, _, r in run}
    print("(1) nanotron's Ultra-Scale Playbook benchmarks: the best layout per model size and node count on H100, "
          "256 x 4,096 tokens a step (MFU %, held out, nothing fitted):")
    print("  (step s: the estimate's, and the measured one it implies: the same FLOPs at the measured MFU)")
    for c, res, _ in run:
        tail = c.skipped or (f"predicted {c.predicted:6.2f} ({100 * c.err:+6.1f}%)  step measured "
                             f"{measured_step(c, res):7.3f} predicted {res['time']['step_s']:7.3f}")
        print(f"  {c.row_id:50s} MFU measured {c.measured:6.2f} {tail}")
    for key in ("model", "gpu_count", "tp", "pp"):
        print(f"\nby {key}:")
        print("\n".join(group_lines(cs, rs, key)))
    print("\nby ZeRO stage:")
    print("\n".join(zero_lines(cs, rs)))
    print("\nthe pipelined rows a 1F1B slot (the step less DP and optimizer over m + p - 1 slots):")
    print("\n".join(slot_lines(run)))
    print("\nmemory figure (GB, allocated or reserved: not stated) beside the estimate (GiB):")
    print("\n".join(memory_lines(run)))
    refused = [c for c, _, _ in run if c.skipped]
    print(f"\nrefused rows: {len(refused)}" + "".join(f"\n  {c.row_id}: {c.skipped}" for c in refused))
    irun = internlm_run()
    ics = [c for c, _, _ in irun if not c.skipped]
    print("\n(2) InternLM's 2023 FLOPS tests: its 7B on A100 80GB, 4 x 100 Gb RoCE a host, TP 1, ZeRO-1 in a node, 8-1,024 "
          "GPUs (TGS, held out, nothing fitted):")
    print("\n".join(internlm_lines(irun)))
    print("  the ZeRO-1 group (as stated: zero 1 over a node's 8 GPUs, the gradients all-reduced over DP; ZeRO-1 over "
          "all of DP; zero 0), error:")
    print("\n".join(f"    {rid:48s} {100 * a:+6.1f}% {100 * b:+6.1f}% {100 * d:+6.1f}%"
                     for rid, a, b, d in internlm_readings(irun)))
    print("  work a step and beyond it, from the rows that differ by one quantity (known-gaps 237):")
    print("\n".join(internlm_pair_lines(irun)))
    for ac in ("full", "none"):
        sub = [c for c, _, r in irun if not c.skipped and r["recompute"] == ac]
        print(f"  recompute {ac:4s}: n={len(sub)} MAPE {mape(sub):.1f}% (median {_median(sub):+.1f}%)")
    both = cs + ics
    print(f"\nperf_heldout57 time: n={len(both)} MAPE {mape(both):.1f}% (median {_median(both):+.1f}%; nanotron "
          f"{mape(cs):.1f}%, InternLM {mape(ics):.1f}%); refused {len(refused) + len(irun) - len(ics)}")


if __name__ == "__main__":
    main()
