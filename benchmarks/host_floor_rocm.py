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

Run: python benchmarks/host_floor_rocm.py
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import perf_heldout30 as p30
from harness import model_data
from trainsizer.catalog import load_catalog
from trainsizer.estimate import compute
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.host_sync import drained_run_s, host_figure

MODELS = Path(__file__).resolve().parent / "data" / "heldout_models.yaml"
FLOOR_ROWS = ("primus_2025-12_mi355x_dsv2lite_mbs1_baseline_8gpu", "primus_2025-12_mi355x_dsv2_base_1f1b_32gpu")
SERIES = FLOOR_ROWS[:1] + tuple(f"primus_2025-12_mi355x_dsv2lite_mbs{m}_baseline_8gpu" for m in (2, 4, 8, 12))
PASSES = 3.0  # forward 1 + backward 2 layer passes, no recompute (the rows' RECOMPUTE_LAYERS 0)
SYNCS_PER_MOE_FORWARD = 1.0  # the alltoall dispatcher's one stream sync (module docstring)
EXPERT_FWD_GEMMS = 2.0  # fc1 and fc2 per local expert, issued after the forward's sync


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


def rows_table() -> dict[str, tuple[float, float]]:
    """Prints each Primus row's floor analysis; returns {row id: (measured s a layer, local experts)}."""
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
        syncs = sync_round_trips_s(row, shape)
        out[row["id"]] = (t_meas / layers, local)
        print(f"  {row['id']:52s} measured {t_meas / layers * 1e3:5.1f} ms a layer, predicted "
              f"{t_pred / layers * 1e3:5.1f}; host charged {(dense + experts) * 1e3:4.1f} (dense {dense * 1e3:.1f} + "
              f"{local:.0f} experts {experts * 1e3:.1f}); syncs add {syncs * 1e3:5.2f} ms a slot = "
              f"{syncs / (t_meas - t_pred):5.1%} of the gap")
    return out


def floor_line(per_layer: dict[str, tuple[float, float]]) -> tuple[float, float]:
    """(intercept s, slope s per local expert) of the line through the two floor rows, if both are host-bound."""
    (t1, e1), (t2, e2) = (per_layer[r] for r in FLOOR_ROWS)
    slope = (t2 - t1) / (e2 - e1)
    return t1 - slope * e1, slope


def main() -> None:
    vendor_table()
    per_layer = rows_table()
    a, b = floor_line(per_layer)
    dense, per_expert = host_per_layer_s(1.0)
    print("lead, not applied (two held-out rows; docs/known-gaps.md 73):")
    print(f"  floors as dense + per local expert: {a * 1e3:.2f} ms + {b * 1e3:.2f} ms x experts a layer "
          f"(the estimate: {dense * 1e3:.2f} + {per_expert * 1e3:.3f}); "
          f"{b / compute.KERNELS['moe_expert_gemms'] * 1e6:.0f} us per expert GEMM against the CUDA-tuned "
          f"{load_constants().moe_host_s_per_expert_kernel['alltoall'] * 1e6:.0f}")
    heur, call = host_figure("blas_heuristic_s", "amd"), host_figure("blas_matmul_s", "amd")
    per_gemm = b / compute.KERNELS["moe_expert_gemms"]
    print(f"  a candidate: hipBLASLt choosing an algorithm on every call ({heur * 1e6:.0f} us) plus the call "
          f"({call * 1e6:.0f} us) = {(heur + call) * 1e6:.0f} us, {(heur + call) / per_gemm:.0%} of the lead's "
          f"{per_gemm * 1e6:.0f} us (whether the grouped_gemm package's ROCm port queries per call was not read)")


if __name__ == "__main__":
    main()
