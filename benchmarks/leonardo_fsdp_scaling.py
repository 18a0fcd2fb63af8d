"""Diagnostic, not scored and nothing fitted into the estimate (docs/known-gaps.md 322): what shape of cost the
Leonardo FULL_SHARD drop of perf_heldout76 (320 (c)) has, tried through the estimate itself.

The rows (benchmarks/data/heldout_2027x_modalities.csv, Modalities README at 2029c649): PyTorch FSDP1 on CINECA's
Leonardo Booster, four A100 64GB a node, 4 x HDR100 a node. FULL_SHARD holds to 64 GPUs and falls at 128 / 256
(2.7B, micro-batch 2: 9,352 -> 6,591 -> 4,851 tokens/s a GPU); MareNostrum 5's H100 FULL_SHARD rows stay flat to 256.
Each candidate re-runs every Leonardo row (and MareNostrum 5's FULL_SHARD rows at micro-batch 2) with one input moved:
- `nic_share`: the per-GPU NIC rate of the row's inline network times a share (Leonardo's rows: 100 Gb/s a port, x 0.5
  = CINECA's earlier hpc-system page: "a maximum bandwidth of 200Gbit/s between each pair of nodes"). A cost per
  byte: it moves every collective in proportion to its bytes, so the 6.7B model's 2.6x larger layers pay 2.6x.
- `ring_step_us`: the estimate's ring latency a step (comm.py: a ring all-gather / reduce-scatter over n ranks pays
  (n - 1) x System.inter_node_latency_s once it leaves the node; 5 us by default). A cost per collective that grows
  with the ranks and not with the bytes: both models (32 layers each) pay the same per collective. A sensitivity
  sweep, no source gives these values for Leonardo.
NCCL's own ring cost model is printed beside it (nccl_ring_latency_us): src/graph/tuning.cc at NVIDIA/nccl 01afd20a
charges a ring all-gather / reduce-scatter baseLat + (nRanks - nNodes) x intra-node step + (nNodes - 1) x network
step (Ring / Simple: 8.4, NVLink 3.4, network 9.6 us).

Run: python benchmarks/leonardo_fsdp_scaling.py
"""

from __future__ import annotations

import dataclasses
from typing import Any

import perf_heldout as ph
import perf_heldout76 as p76
from trainsizer.evaluate import evaluate
from trainsizer.scenario import resolve_job

# NVIDIA/nccl src/graph/tuning.cc at 01afd20a: baseLat / hwLat of Ring with the Simple protocol (the large-message
# protocol), in microseconds
NCCL_RING_SIMPLE_US = {"base": 8.4, "nvlink": 3.4, "net": 9.6}
NIC_SHARE = (1.0, 0.5, 0.35, 0.25)
RING_STEP_US = (5.0, 20.0, 40.0, 50.0)


def nccl_ring_latency_us(ranks: int, nodes: int) -> float:
    """NCCL's modelled latency of one ring all-gather / reduce-scatter (tuning.cc at 01afd20a, nInterSteps)."""
    steps, inter = ranks - 1, max(nodes - 1, 0)
    hw = NCCL_RING_SIMPLE_US
    return hw["base"] + (steps - inter) * hw["nvlink"] + inter * hw["net"]


def estimate_ring_latency_us(ranks: int, per_node: int, inter_us: float = 5.0) -> float:
    """The estimate's latency of the same collective (comm.reduce_scatter_time's (n - 1) alpha term)."""
    return (ranks - 1) * inter_us if ranks > per_node else 0.0


def rows() -> list[dict[str, str]]:
    """Every Leonardo row, and MareNostrum 5's FULL_SHARD rows at micro-batch 2 and 4,096 tokens."""
    return [r for r in p76.rows() if "leonardo" in r["id"] or ("_fsdp_mbs2_s4096_" in r["id"] and "mn5" in r["id"])]


def _predict(r: dict[str, str], models: dict[str, Any], catalogs: dict[str, Any], nic_share: float = 1.0,
             ring_step_us: float | None = None) -> float:
    row = dict(r)
    row["network"] = ";".join(f"gbps_per_nic={float(kv.split('=')[1]) * nic_share:g}" if kv.startswith("gbps_per_nic=")
                              else kv for kv in r["network"].split(";"))
    if r["overlay"] not in catalogs:
        catalogs[r["overlay"]] = ph.load_catalog([ph.DATA / r["overlay"]])
    catalog = catalogs[r["overlay"]]
    scenario = resolve_job(ph.job_of(row, models), catalog)
    if ring_step_us is not None:
        scenario = dataclasses.replace(scenario, system=dataclasses.replace(
            scenario.system, inter_node_latency_s=ring_step_us * 1e-6))
    return ph.predicted_metric(row, evaluate(scenario, catalog), scenario.model)


def sweep() -> list[tuple[dict[str, str], dict[str, float]]]:
    """(row, {candidate: signed error %}) for every row of `rows()`; candidates 'nic<share>' and 'step<us>'."""
    models, catalogs, out = p76.models(), {}, []
    for r in rows():
        meas, errs = float(r["value"]), {}
        for share in NIC_SHARE:
            errs[f"nic{share:g}"] = 100.0 * (_predict(r, models, catalogs, nic_share=share) / meas - 1.0)
        for us in RING_STEP_US[1:]:
            errs[f"step{us:g}"] = 100.0 * (_predict(r, models, catalogs, ring_step_us=us) / meas - 1.0)
        out.append((r, errs))
    return out


def main() -> None:
    result = sweep()
    keys = list(result[0][1])
    print("Signed error % (+ = predicted too fast); nic<s>: the rows' per-GPU NIC rate x s (1 = as stated);"
          " step<us>: the ring latency a step")
    print(f"{'row':52s} {'tok/s':>6s} " + " ".join(f"{k:>8s}" for k in keys))
    for r, errs in result:
        print(f"{r['id'].replace('heldout_2027x_modalities_', ''):52s} {float(r['value']):6.0f} "
              + " ".join(f"{errs[k]:+8.1f}" for k in keys))
    print("\nRing all-gather latency a collective (us): ranks, nodes, NCCL tuning.cc at 01afd20a, the estimate")
    for ranks in (64, 128, 256):
        print(f"  {ranks:4d} {ranks // 4:3d} {nccl_ring_latency_us(ranks, ranks // 4):8.0f}"
              f" {estimate_ring_latency_us(ranks, 4):8.0f}")


if __name__ == "__main__":
    main()
