"""Held-out check on published runs added 2026-12-06 (thirty-fourth batch: Megatron-Bridge's model-verification cards,
pre-training throughput of 2026-07 / 08 on H100, GB200 and GB300; nothing is fitted on them), one source no benchmark
held:

(1) NVIDIA-NeMo/Megatron-Bridge examples/model_verification_cards/<model>/card.yaml (added by PR 4909, 2026-07-21;
rendered as docs/model-verification/models/<model>.md; read at 067f987df, 2026-08-22). Each card records, per training
item, the exact command, the recipe, the Bridge commit it ran at and the mean of the last ten steps' step time, model
TFLOP/s and tokens/s a GPU. Rows: Qwen3-30B-A3B's tuned H100 BF16 performance recipe (16 GPUs, EP 16, HybridEP), its
GB300 MXFP8 weak-scaling series (8, 32, 128, 256 GPUs: 'constant token slots per GPU per step', two trays to 3.6 NVL72
racks), DeepSeek-V3's tuned H100 BF16 recipe on 1,024 GPUs (TP 2 x PP 8 x VP 4 x EP 64, HybridEP), Qwen3-8B's
functional pre-training run (16 H100, data parallel), and four functional pre-training runs trained with the router's
NATURAL routing on RedPajama-2 from random initialisation (not forced balance): Qwen3-30B-A3B on 16 H100 BF16 and 8
GB200 MXFP8, GPT-OSS 120B on 64 H100 and GPT-OSS 20B on 16 H100 (BF16, TP 2 x PP 4, alltoall). The cards' other
performance items repeat the recipes of the performance-summary lines perf_heldout27 / 29 and perf_mbridge26 hold
(Qwen3-30B-A3B GB200 / GB300 8 GPUs, Qwen3-235B-A22B, DeepSeek-V3 GB200 / GB300, GPT-OSS 120B GB200 BF16 / GB300,
within 3% of those lines' figures): not added (docs/known-gaps.md 230).

Data: benchmarks/data/heldout_2027h_mbridge_cards.csv in heldout_pretrain.csv's columns (perf_heldout.job_of builds each
job; every setting the card does not state is in the row's `assumed` column with the recipe file and commit it was
read from, the megatron-core settings as perf_mbridge26.job states NVIDIA's own Megatron-Bridge rows).

Printed: each row (published, predicted, error, the estimate's step terms), MAPE by routing (forced / natural), the
weak-scaling series against its 8-GPU point (measured and predicted), the natural-routing rows against the tuned recipe
of the same model and part (measured and predicted ratio), and for each natural-routing row the busiest EP rank's routed
tokens over the balanced share (job field moe_capacity_factor, which the estimate charges on every expert of a GPU) at
which the estimate would meet the measured rate: a diagnostic of what the unstated imbalance would have to be, not an
estimate, with the bound the two Qwen3-30B-A3B rows put on each other (EP 16 and EP 8: ep_bound_line); memory fits.

Sign: (predicted - published) / published of tokens/s a GPU; + = predicted too fast.

Run: python benchmarks/perf_heldout60.py
"""

from __future__ import annotations

from pathlib import Path

import perf_heldout as ph
from harness import job_tokens_per_gpu, mape, print_fits

DATA = Path(__file__).resolve().parent / "data"
ROWS = DATA / "heldout_2027h_mbridge_cards.csv"
# the rows trained with the router's own routing (moe_router_force_load_balancing false in the card's command)
NATURAL = ("mbcard_2026-07_h100_qwen3_30b_a3b_bf16_16gpu_functional",
           "mbcard_2026-07_gb200_qwen3_30b_a3b_mxfp8_8gpu_functional",
           "mbcard_2026-08_h100_gpt_oss_120b_bf16_64gpu_functional",
           "mbcard_2026-08_h100_gpt_oss_20b_bf16_16gpu_functional")
# (natural-routing row, the tuned forced-balance run of the same model and part): the H100 pair shares layout, batch
# and precision (the perf recipe adds EP overlap and HybridEP permute fusion)
PAIRS = (("mbcard_2026-07_h100_qwen3_30b_a3b_bf16_16gpu_functional", "mbcard_2026-07_h100_qwen3_30b_a3b_bf16_16gpu_perf"),)
# the GB200 functional run's forced-balance twin: perf_heldout27's 26.06.01 line (heldout_2026c_mbridge.csv; the same
# layout, batch, MXFP8 and fused grouped MLP, with the full-iteration CUDA graph)
GB200_TWIN = ("mbcard_2026-07_gb200_qwen3_30b_a3b_mxfp8_8gpu_functional", "mbridge_26.06.01_gb200_qwen3_30b_a3b_fp8-mx_8gpu")
WEAK = tuple(f"mbcard_2026-08_gb300_qwen3_30b_a3b_mxfp8_{g}gpu_weak" for g in (8, 32, 128, 256))
BATCH = ph.Batch((ROWS,))
rows, models, run_all, job, fits = BATCH.rows, BATCH.models, BATCH.run_all, BATCH.job, BATCH.fits


def cases() -> list[tuple[str, str, float, float]]:
    """(row id, accelerator, measured, predicted tokens/s/GPU) of every scored row."""
    return [(c.row_id, r["accelerator"], c.measured, c.predicted) for c, _, r in run_all() if not c.skipped]


def _at_capacity(r: dict[str, str], factor: float) -> float:
    """The row's predicted tokens/s/GPU with every expert of the busiest EP rank taking `factor` x its balanced share of
    tokens (moe_capacity_factor: the rank's grouped GEMMs, copies and all-to-all receive scale with it)."""
    j = job(r) | {"moe_capacity_factor": factor}
    return job_tokens_per_gpu([(r["id"], j)])[0][1]


def implied_capacity(r: dict[str, str], hi: float = 8.0, steps: int = 30) -> float | None:
    """The moe_capacity_factor at which the estimate meets the row's measured rate (bisection on [1, hi]), or None
    when the balanced estimate is already at or below it (no imbalance explains the gap) or hi does not reach it."""
    measured = float(r["value"])
    if _at_capacity(r, 1.0) <= measured or _at_capacity(r, hi) > measured:
        return None
    lo = 1.0
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _at_capacity(r, mid) > measured else (lo, mid)
    return 0.5 * (lo + hi)


def weak_lines(cs: list[tuple[str, str, float, float]]) -> list[str]:
    """Each weak-scaling point's rate over the 8-GPU point's, measured and predicted."""
    by = {rid: (m, p) for rid, _, m, p in cs}
    base = by[WEAK[0]]
    return [f"  {rid.split('_')[-2]:>7s}: measured {by[rid][0]:8.0f} ({by[rid][0] / base[0]:.3f}), predicted "
            f"{by[rid][1]:8.0f} ({by[rid][1] / base[1]:.3f})" for rid in WEAK if rid in by]


def pair_lines(cs: list[tuple[str, str, float, float]]) -> list[str]:
    """Natural-routing row over its forced-balance twin: measured and predicted ratio."""
    by = {rid: (m, p) for rid, _, m, p in cs}
    return [f"  {a.removeprefix('mbcard_')} over {b.removeprefix('mbcard_')}: measured {by[a][0] / by[b][0]:.3f}, "
            f"predicted {by[a][1] / by[b][1]:.3f}" for a, b in PAIRS if a in by and b in by]


def graph_split_lines() -> list[str]:
    """The GB200 natural-routing row over its full-iteration, forced-balance twin (GB200_TWIN): measured and predicted,
    and the part of the predicted ratio the CUDA graphs carry (the row's job with cuda_graphs full_iteration): what is
    left of the measured ratio after the graphs is the routing's (and the TE graphs of the router the row ran)."""
    import perf_heldout27 as p27
    from perf_mbridge26 import job as mbridge_job

    mine, twin_id = GB200_TWIN
    r = next(x for x in rows() if x["id"] == mine)
    twin = next(x for x in p27.rows() if x["id"] == twin_id)
    graphs = job(r)
    graphs["strategy"] = graphs["strategy"] | {"cuda_graphs": "full_iteration"}
    (_, stated), (_, full), (_, twin_pred) = job_tokens_per_gpu([(mine, job(r)), ("graphs", graphs),
                                                                 (twin_id, mbridge_job(twin))])
    measured = float(r["value"]) / float(twin["tokens_per_sec_per_gpu"])
    return [f"  {mine.removeprefix('mbcard_')} over {twin_id}: measured {measured:.3f}, predicted "
            f"{stated / twin_pred:.3f}, of which the graphs {stated / full:.3f}; measured over the graphs' share "
            f"{measured / (stated / full):.3f}"]


def implied_by_row() -> dict[str, float | None]:
    """implied_capacity of each natural-routing row, by row id."""
    return {r["id"]: implied_capacity(r) for r in rows() if r["id"] in NATURAL}


def capacity_lines(implied: dict[str, float | None]) -> list[str]:
    """For each natural-routing row, the busiest EP rank's load over the balanced share that the measured rate would
    take in the estimate (implied_capacity)."""
    return [f"  {rid.removeprefix('mbcard_'):50s} " + (f"moe_capacity_factor {f:.2f}" if f else "none")
            for rid, f in implied.items()]


def rank_loads(expert_loads: list[float], ep: int) -> list[float]:
    """Each EP rank's routed tokens over the balanced share, from each expert's (Megatron-Core places experts
    contiguously: rank i holds experts i x E / ep .. (i + 1) x E / ep - 1)."""
    per = len(expert_loads) // ep
    return [sum(expert_loads[i * per:(i + 1) * per]) / per for i in range(ep)]


def ep_bound_line(implied: dict[str, float | None]) -> str:
    """The two Qwen3-30B-A3B natural-routing rows (same model, recipe, data and aux loss) at EP 16 (H100) and EP 8
    (GB200): an EP-8 rank holds two EP-16 ranks' experts, so at the same per-expert loads its load is the mean of
    two EP-16 ranks' and the busiest EP-8 rank carries at most what the busiest EP-16 rank does (rank_loads). An
    EP-8 figure above the EP-16 one is more than the routing: the rest of the GB200 row's residual is something else."""
    h100, gb200 = implied.get(NATURAL[0]), implied.get(NATURAL[1])
    if h100 is None or gb200 is None:
        return "  (no implied load for one of the Qwen3 rows)"
    verdict = "above the bound: not the routing alone" if gb200 > h100 else "within the bound"
    return (f"  Qwen3-30B-A3B EP 8 (GB200) {gb200:.2f} against EP 16 (H100) {h100:.2f}, at most {h100:.2f} for "
            f"the same expert loads: {verdict}")


def main() -> None:
    run = run_all()
    scored = ph.scored_refused(run)[0]
    print("(1) Megatron-Bridge model-verification cards (2026-07 / 08): pre-training tokens/s a GPU, the mean of the "
          "last ten steps (held out, nothing fitted):")
    print("\n".join(ph.step_line(c, res, 58) for c, res, _ in run))
    forced = [c for c in scored if c.row_id not in NATURAL]
    natural = [c for c in scored if c.row_id in NATURAL]
    print(f"\nforced balance / data parallel: n={len(forced)} MAPE {mape(forced):.1f}% (median {ph.median_pct(forced):+.1f}%)")
    print(f"natural routing: n={len(natural)} MAPE {mape(natural):.1f}% (median {ph.median_pct(natural):+.1f}%)")
    cs = [(c.row_id, "", c.measured, c.predicted) for c in scored]
    print("\nGB300 weak scaling (tokens/s a GPU; over the 8-GPU point):")
    print("\n".join(weak_lines(cs)))
    print("\nnatural routing over the forced-balance tuned recipe (same model, part, layout and batch):")
    print("\n".join(pair_lines(cs)))
    print("\n".join(graph_split_lines()))
    implied = implied_by_row()
    print("\nthe busiest EP rank's load the measured rate would take (a diagnostic; the cards state no imbalance):")
    print("\n".join(capacity_lines(implied)))
    print(ep_bound_line(implied))
    print_fits(fits(), "perf_heldout60")
    print(ph.time_summary("perf_heldout60", run))


if __name__ == "__main__":
    main()
