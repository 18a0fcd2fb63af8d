"""Megatron-LM MoE on ROCm (perf_heldout30's Primus rows): is the per-micro-batch floor a platform host cost?

AMD's Primus MoE package (AMD-AGI/Primus examples/moe_package/README.md at b3699abf7) measured DeepSeek-V2-Lite on 8
MI355X at 0.382 s a micro-batch at micro-batch 1 and 0.390 s at 2 (a floor), and names the cause: "CPU device-to-host
(D2H) synchronizations in MoE layers induce large kernel launch latencies". The estimate's host constants come from
CUDA stacks (perf_constants.yaml gemm.host_s_per_layer_pass, gemm.moe_host_s_per_expert_kernel.alltoall). This
script puts the published per-vendor host figures (perf_constants.yaml host_sync) against that floor. Nothing is
fitted; nothing here changes the estimate (docs/known-gaps.md 73).

What the code runs (read, not measured; known-gaps 73 names the files and commits):
- Megatron-Core's alltoall dispatcher syncs once per MoE layer forward (the D2H copies of the token counts on a side
  stream, one stream sync at cuda_sync_point: before_ep_alltoall with EP > 1, before_permutation_2 without
  moe_permute_fusion); the backward reuses the host splits and the grouped GEMM's host batch sizes: no sync.
- The grouped_gemm package's gmm takes batch_sizes on the host (TORCH_CHECK(batch_sizes.is_cpu())) and issues one
  BLAS GEMM per local expert: fc1 and fc2 forward, dgrad and wgrad (6 a layer and expert; the ROCm port spreads them
  over 4 streams).

Printed:
1. The vendor figures: a launch-bound eager op (torch.mm 64^3), the launch + synchronize round trip, and how many
   such ops the CUDA-tuned host_s_per_layer_pass stands for on each vendor.
2. Per Primus row: the measured time a micro-batch takes per layer, the estimate's host time a layer (dense floor +
   routed experts' launches), the syncs a micro-batch makes and what their round trips add (drained-queue model,
   estimate/host_sync.py, the expert GEMMs issued after the sync at the AMD op cost against their GPU time at the
   part's dense GEMM rate), against the gap between measured and predicted.
3. A lead, not applied: the line through the two measured floors (8 and 20 local experts), read as a dense floor plus
   a cost per local expert, against what the estimate charges per expert, and how much of it a BLAS algorithm choice
   on every call would be (hipBLASLt's API overhead). Fitting it would fit the held-out rows.
4. The DeepSeek-V2-Lite micro-batch series split (analysis of the measured rows, not a fit of the estimator): per layer
   and micro-batch, the line a + b x sequences through the rows past the floor (micro-batch 4 / 8 / 12, where the time
   grows with the tokens), the floor F the rows at micro-batch 1 / 2 sit on, and the same split of the estimate's
   predictions. The floor is hidden once the line passes it (max, not sum): work concurrent with the GPU's, the host's
   issue time; a fixed GPU-side cost would be in a. Then the grouped_gemm package's expert GEMMs at their warm-loop
   period (perf_constants.yaml host_sync.gmm_gemm_period_s) against the floor's excess over the estimate's dense host
   floor (docs/known-gaps.md 76).
5. The same package on the same part one release later (docs/known-gaps.md 308 (c)): Primus pull request 1011's
   Qwen3-30B-A3B rows (perf_heldout70) run the legacy grouped GEMM on 8 MI355X too. The host issues a micro-batch's
   layers within their wall time (one Python thread), so a row's measured time a layer and micro-batch, less the
   estimate's dense host floor, over its gmm GEMM calls bounds the host time one call can take on that row's release;
   the floor rows, read as host-bound (76), need that much a call. Measured figures and the estimate's host constants
   only: nothing is fitted and no estimate runs.

Run: python benchmarks/host_floor_rocm.py
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import perf_heldout30 as p30
import perf_heldout70 as p70
from harness import model_data
from trainsizer.catalog import load_catalog
from trainsizer.estimate import compute
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.host_sync import drained_run_s, host_figure
from trainsizer.models.shipped import load_preset

MODELS = Path(__file__).resolve().parent / "data" / "heldout_models.yaml"
FLOOR_ROWS = ("primus_2025-12_mi355x_dsv2lite_mbs1_baseline_8gpu", "primus_2025-12_mi355x_dsv2_base_1f1b_32gpu")
SERIES = FLOOR_ROWS[:1] + tuple(f"primus_2025-12_mi355x_dsv2lite_mbs{m}_baseline_8gpu" for m in (2, 4, 8, 12))
PASSES = 3.0  # forward 1 + backward 2 layer passes, no recompute (the rows' RECOMPUTE_LAYERS 0)
SYNCS_PER_MOE_FORWARD = 1.0  # the alltoall dispatcher's one stream sync (module docstring)
EXPERT_FWD_GEMMS = 2.0  # fc1 and fc2 per local expert, issued after the forward's sync
PAST_FLOOR_MBS = (4, 8, 12)  # the Lite series' rows whose time a micro-batch grows with its tokens (1 -> 2: +2%)
# Section 5: the rows that run the legacy grouped_gemm package on gfx950, by the release each ran (the rows' csv
# `assumed` / source columns): the floor rows rocm/megatron-lm:v25.10, ROCm 7.1.0 (the README's endnotes; Primus's
# docs/01-getting-started/release-notes.md at fd1eeabb gives rocm/primus:v26.1, ROCm 7.1.0, the same PyTorch
# 2.10.0.dev20251112+rocm7.1); Primus PR 1011's shipped configs "published ref" (the v26.3 release's number as the rows
# read it; rocm/primus:v26.3 is ROCm 7.2.1 by the same notes; the PR states no image for them), its tuned ones
# primus_the_rock_rocm7.15_20260728 (the PR's image)
RELEASES = {"primus_2025-12_": "v25.10, ROCm 7.1.0", "_shipped_": "v26.3 ref, ROCm 7.2.1 (read)",
            "_tuned_": "TheRock ROCm 7.15 (2026-07-28)"}
LATER_ROWS = tuple(f"primus_megatron_2026-08_mi355x_qwen3_30b_a3b_{p}_{c}_8gpu"
                   for p in ("bf16", "fp8") for c in ("shipped", "tuned"))


def model_shapes() -> dict[str, dict[str, Any]]:
    return {name: d["model"] for name, d in model_data(MODELS).items()}


def slot_time_s(row: dict[str, str], tokens_per_s_per_gpu: float, layers: int) -> tuple[float, int]:
    """(seconds a micro-batch slot takes, layers a slot runs): the step over 1F1B's slots (micro-batches + PP - 1)."""
    gpus, pp, ep = int(row["gpu_count"]), int(row["pp"]), int(row["ep"])
    seq, gbs, mbs = int(row["seq_len"]), int(row["global_batch_seqs"]), int(row["micro_batch"])
    step = gbs * seq / (tokens_per_s_per_gpu * gpus)
    micro = gbs // (mbs * gpus // (pp * int(row["tp"]) * int(row["cp"])))
    del ep  # EP shares the data-parallel ranks of the dense part: it sets no slot count
    return step / (micro + pp - 1), layers // pp


def host_per_layer_s(local_experts: float) -> tuple[float, float]:
    """(dense floor, routed experts' launches) the estimate charges a layer per micro-batch (step_time._host_excess,
    BF16, alltoall, no recompute)."""
    k = load_constants()
    per_expert = k.moe_host_s_per_expert_kernel["alltoall"] * compute.KERNELS["moe_expert_gemms"]
    return k.host_s_per_layer_pass * PASSES, local_experts * per_expert


def unfused_host_s(row: dict[str, str], shape: dict[str, Any]) -> float:
    """Host calls a MoE layer's forward adds where the row states the router / permutation unfused (strategy_extra
    moe_router_fusion / moe_permute_fusion false; step_time._moe_unfused_host, perf_constants.yaml kernels:
    moe_*_unfused_host_fwd) and Primus's forced-balance map where it routes round-robin (moe_router_round_robin_host_fwd,
    fused or not; docs/known-gaps.md 338 (b)), at AMD's launch-bound op, over the MoE layers' share; the syncs' round
    trips are in the syncs column."""
    extra, k = row["strategy_extra"], compute.KERNELS
    calls = 0.0
    if "moe_router_fusion=false" in extra:
        calls += k["moe_router_unfused_host_fwd"]
        calls += k["moe_router_unfused_grouped_host_fwd"] if shape.get("expert_groups", 1) > 1 else 0.0
    if "moe_permute_fusion=false" in extra:
        calls += k["moe_permute_unfused_host_fwd"]
    if "moe_routing=round-robin" in extra:
        calls += k["moe_router_round_robin_host_fwd"]
    share = (shape["layers"] - shape["dense_layers"]) / shape["layers"]
    return share * calls * host_figure("launch_bound_op_s", "amd")


def sync_round_trips_s(row: dict[str, str], shape: dict[str, Any]) -> float:
    """What the forward syncs of one micro-batch slot add, by the drained-queue model: per MoE layer the round trip
    and the expert GEMMs issued after it at the AMD launch-bound op cost, against their GPU time at the part's dense
    GEMM rate (local tokens x top-k, balanced), minus that GPU time."""
    k, cat = load_constants(), load_catalog()
    acc = cat.accelerators[row["accelerator"]]
    rate = acc.tflops_dense["bf16"] * 1e12 * k.gemm_efficiency(row["accelerator"])
    ep, mbs, seq = int(row["ep"]), int(row["micro_batch"]), int(row["seq_len"])
    local = shape["experts"] / ep
    tokens = mbs * seq * shape["experts_per_token"]  # routed to this rank, balanced
    gpu = 2.0 * tokens * shape["hidden"] * 3.0 * shape["expert_ffn"] / rate  # fc1 (gate + up) and fc2, forward
    h, r = host_figure("launch_bound_op_s", "amd"), host_figure("round_trip_s", "amd")
    excess = float(drained_run_s(EXPERT_FWD_GEMMS * local, h, gpu, r)) - gpu
    moe_layers = (shape["layers"] - shape["dense_layers"]) / int(row["pp"])
    return moe_layers * SYNCS_PER_MOE_FORWARD * excess


def vendor_table() -> None:
    k = load_constants()
    print("host figures (perf_constants.yaml host_sync):")
    for vendor in ("nvidia", "amd"):
        op, rt = host_figure("launch_bound_op_s", vendor), host_figure("round_trip_s", vendor)
        rt_text = f"{rt * 1e6:5.1f} us" if rt is not None else " none read"
        print(f"  {vendor:7s} launch-bound op {op * 1e6:5.1f} us  round trip {rt_text}  "
              f"host_s_per_layer_pass {k.host_s_per_layer_pass * 1e3:.1f} ms = {k.host_s_per_layer_pass / op:4.0f} ops")


def rows_table() -> dict[str, tuple[float, float, float]]:
    """Prints each Primus row's floor analysis; returns {row id: (measured s a layer, predicted s a layer, local
    experts)}."""
    shapes = {r["id"]: r for r in p30.rows()}
    models, out = model_shapes(), {}
    print("per micro-batch slot and layer (measured / the estimate's host charge / the forward syncs' round trips):")
    for case, result, row in p30.run_all():
        if row["id"] not in SERIES + FLOOR_ROWS[1:] or not result:
            continue
        shape = models[row["model"]]
        t_meas, layers = slot_time_s(shapes[row["id"]], case.measured, shape["layers"])
        t_pred, _ = slot_time_s(shapes[row["id"]], case.predicted, shape["layers"])
        local = shape["experts"] / int(row["ep"])
        dense, experts = host_per_layer_s(local)
        unfused = unfused_host_s(row, shape)
        syncs = sync_round_trips_s(row, shape)
        out[row["id"]] = (t_meas / layers, t_pred / layers, local)
        print(f"  {row['id']:52s} measured {t_meas / layers * 1e3:5.1f} ms a layer, predicted "
              f"{t_pred / layers * 1e3:5.1f}; host charged {(dense + experts + unfused) * 1e3:4.1f} (dense "
              f"{dense * 1e3:.1f} + {local:.0f} experts {experts * 1e3:.1f} + router / permutation ops "
              f"{unfused * 1e3:.1f}); syncs add {syncs * 1e3:5.2f} ms a slot = "
              f"{syncs / (t_meas - t_pred):5.1%} of the gap")
    return out


def floor_line(per_layer: dict[str, tuple[float, float, float]]) -> tuple[float, float]:
    """(intercept s, slope s per local expert) of the line through the two floor rows, if both are host-bound."""
    (t1, _, e1), (t2, _, e2) = (per_layer[r] for r in FLOOR_ROWS)
    slope = (t2 - t1) / (e2 - e1)
    return t1 - slope * e1, slope


def series_split(times_s: dict[int, float]) -> tuple[float, float, float]:
    """(a, b, F) of a micro-batch series {micro-batch: seconds a layer}: the least-squares line a + b x micro-batch
    through the rows past the floor (PAST_FLOOR_MBS) and the floor F, the micro-batch-1 time, that the line stays
    under at micro-batch 1 and 2. Analysis of rows, fitting nothing in the estimator."""
    x = np.array(PAST_FLOOR_MBS, float)
    y = np.array([times_s[int(m)] for m in x])
    b, a = np.polyfit(x, y, 1)
    return float(a), float(b), times_s[1]


def print_split(per_layer: dict[str, tuple[float, float, float]]) -> None:
    """Section 4 of the module docstring: the Lite series split, measured and predicted, and the gmm GEMMs' ceiling."""
    series = {int(r.split("_mbs")[1].split("_")[0]): per_layer[r] for r in SERIES}
    dense, _ = host_per_layer_s(1.0)
    print("DeepSeek-V2-Lite series per layer and micro-batch (a + b x sequences past the floor; F at micro-batch 1):")
    for label, k in (("measured", 0), ("predicted", 1)):
        times = {m: v[k] for m, v in series.items()}
        a, b, floor = series_split(times)
        at = "  ".join(f"{m}: {times[m] * 1e3:5.1f} / {(a + b * m) * 1e3:5.1f}" for m in sorted(times))
        print(f"  {label:9s} a {a * 1e3:5.2f} ms + b {b * 1e3:5.2f} ms a sequence; F {floor * 1e3:5.1f} ms "
              f"(time / line at each micro-batch, ms: {at})")
    a, b, floor = series_split({m: v[0] for m, v in series.items()})
    print(f"  the floor plus the line at micro-batch 4 would be {(floor + a + 4 * b) * 1e3:.1f} ms against "
          f"{series[4][0] * 1e3:.1f} measured: the floor is hidden under the GPU's work (a max), host issue time")
    period = host_figure("gmm_gemm_period_s", "amd")
    gemms = compute.KERNELS["moe_expert_gemms"]
    for row in FLOOR_ROWS:
        t_meas, _, local = per_layer[row]
        ceiling = period * gemms * local
        print(f"  {row:52s} floor over the dense host floor {(t_meas - dense) * 1e3:5.1f} ms a layer; "
              f"{gemms * local:4.0f} gmm GEMMs at the warm-loop period {period * 1e6:.1f} us <= {ceiling * 1e3:4.1f} ms "
              f"({ceiling / (t_meas - dense):.0%})")


def blas_call_shares(per_gemm_s: float) -> dict[str, tuple[float, float]]:
    """Host seconds a legacy gmm GEMM spends in rocBLAS's hipBLASLt path (the heuristic query plus the matmul call,
    perf_constants.yaml host_sync) at each published heuristic figure, and its share of `per_gemm_s`; and the bound
    Primus-Turbo PR 284's back-to-back gmm loop puts on the whole call (host_sync.gmm_gemm_period_s)."""
    call = host_figure("blas_matmul_s", "amd")
    out = {}
    for label, kind in (("heuristic as hipBLASLt's 2025-03 client measured it", "blas_heuristic_s"),
                        ("heuristic on a cached shape (2025-12 client)", "blas_heuristic_cached_s")):
        per_call = host_figure(kind, "amd") + call
        out[label] = (per_call, per_call / per_gemm_s)
    period = host_figure("gmm_gemm_period_s", "amd")
    out["at most the warm gmm loop's period (PR 284, 2026-04)"] = (period, period / per_gemm_s)
    return out


def legacy_gmm_calls(local_experts: float, moe_share: float, full_share: float) -> float:
    """The legacy gmm's BLAS calls a layer and micro-batch: per local expert fc1 and fc2 forward, dgrad and wgrad
    (`kernels:` moe_expert_gemms, one hipblasGemmEx each: grouped_gemm csrc/grouped_gemm.cu, docs/known-gaps.md
    159 (b)), the forward's two again on a fully recomputed layer (`full_share` of the layers), over the MoE layers'
    share."""
    per_expert = compute.KERNELS["moe_expert_gemms"] + EXPERT_FWD_GEMMS * full_share
    return moe_share * local_experts * per_expert


def per_call_s(layer_s: float, local_experts: float, moe_share: float, full_share: float,
               other_host_s: float = 0.0) -> float:
    """Host seconds a legacy gmm call can take in a run whose layer and micro-batch takes `layer_s`: the host issues
    the layer within that time, so the calls (legacy_gmm_calls) x this + the estimate's dense host floor
    (host_s_per_layer_pass a pass, the recompute's forward pass on `full_share` of the layers) + `other_host_s` (what
    else the layer issues) <= layer_s. An upper bound on any row; the figure a host-bound row needs (76)."""
    dense = load_constants().host_s_per_layer_pass * (PASSES + full_share)
    return (layer_s - dense - other_host_s) / legacy_gmm_calls(local_experts, moe_share, full_share)


def recomputed_share(row: dict[str, str], layers: int) -> float:
    """Share of the layers a row recomputes in full (recompute full; strategy_extra recompute_num_layers, else all)."""
    if row["recompute"] != "full":
        return 0.0
    extra = dict(kv.split("=", 1) for kv in row["strategy_extra"].split(";") if "=" in kv)
    return min(float(extra.get("recompute_num_layers", layers)), layers) / layers


def release_of(row_id: str) -> str:
    return next(label for key, label in RELEASES.items() if key in row_id)


def release_table(per_layer: dict[str, tuple[float, float, float]]) -> list[tuple[str, float, str]]:
    """Section 5 of the module docstring: (row id, host seconds a gmm call, 'needs' / 'at most') for the floor rows
    (host-bound: what their floor needs a call, less the unfused router / permutation they also issue) and for the
    later release's Qwen3-30B-A3B rows (the bound their measured time puts on a call)."""
    out = []
    shapes, by_id = model_shapes(), {r["id"]: r for r in p30.rows()}
    for rid in FLOOR_ROWS + SERIES[1:2]:
        row, shape = by_id[rid], shapes[by_id[rid]["model"]]
        share = (shape["layers"] - shape["dense_layers"]) / shape["layers"]
        t_meas, _, local = per_layer[rid]
        out.append((rid, per_call_s(t_meas, local, share, 0.0, unfused_host_s(row, shape)), "needs"))
    for row in (r for r in p70.rows() if r["id"] in LATER_ROWS):
        model = load_preset(row["model"])
        t, layers = slot_time_s(row, float(row["value"]), model.layers)
        local = model.experts / int(row["ep"])
        share = model.moe_layer_count / model.layers
        out.append((row["id"], per_call_s(t / layers, local, share, recomputed_share(row, model.layers)),
                    "at most"))
    return out


def print_releases(per_layer: dict[str, tuple[float, float, float]]) -> None:
    print("the legacy gmm's host time a GEMM call on gfx950 by release (docs/known-gaps.md 308 (c)): the floor rows read "
          "as host-bound need it; a later release's rows bound it (their measured time a layer, less the dense host "
          "floor, over their calls):")
    for rid, per_call, kind in release_table(per_layer):
        print(f"  {rid:62s} {release_of(rid):30s} {kind:7s} {per_call * 1e6:5.0f} us a call")


def main() -> None:
    vendor_table()
    per_layer = rows_table()
    print_split(per_layer)
    a, b = floor_line(per_layer)
    dense, per_expert = host_per_layer_s(1.0)
    print("lead, not applied (two held-out rows; docs/known-gaps.md 73):")
    print(f"  floors as dense + per local expert: {a * 1e3:.2f} ms + {b * 1e3:.2f} ms x experts a layer "
          f"(the estimate: {dense * 1e3:.2f} + {per_expert * 1e3:.3f}); "
          f"{b / compute.KERNELS['moe_expert_gemms'] * 1e6:.0f} us per expert GEMM against the CUDA-tuned "
          f"{load_constants().moe_host_s_per_expert_kernel['alltoall'] * 1e6:.0f}")
    per_gemm = b / compute.KERNELS["moe_expert_gemms"]
    print("  read (docs/known-gaps.md 207): on gfx950 rocBLAS >= 5.0 runs the gmm's 16-bit gemm_ex through hipBLASLt and "
          "asks its heuristic on every call; with the call, against the lead's "
          f"{per_gemm * 1e6:.0f} us a GEMM:")
    for label, (per_call, share) in blas_call_shares(per_gemm).items():
        print(f"    {label:58s} {per_call * 1e6:5.1f} us a call = {share:4.0%}")
    print_releases(per_layer)


if __name__ == "__main__":
    main()
