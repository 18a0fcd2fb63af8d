"""The estimator's expert-parallel dispatch / combine against DeepEP's measured normal kernels.

Rows: benchmarks/data/deepep_normal_kernels.csv, DeepSeek's own tables (deepseek-ai/DeepEP/docs/legacy.md for V1 on
H800 + CX7, README.md for V2), each a dispatch (FP8: hidden bytes + one fp32 scale per 128 channels) or a combine
(BF16) of `tokens` per rank, top-k of the experts, the tokens routed to at most `topk_nodes` nodes (DeepEP's
tests: the top nodes by score, then the top-k experts among theirs), in DeepEP's logical bandwidth: the bytes of
every token copy to a node (internode, RDMA) or to a rank (intranode, NVLink), the local one included, over the
kernel's time.

The estimate is the one step_time._ep_comm charges under `moe_dispatcher: flex` on a PyTorch-native style (DeepEP):
copies counted as there (step_time.group_limited_units_per_token, the nodes as the routing's groups), timed by
comm.forwarded_all_to_all_time / all_to_all_time at step_time.deepep_rates (perf_constants.yaml
comm.deepep_normal_kernels, read off the V1 table's EP 8 / 32 / 64 rows, not fitted on any training row). The EP 16
rows and the V2 rows are checks the rates were not read from, the SM100 CX7 EP 8 x 2 pair (B200 across two nodes,
90 / 91 GB/s) among them.

Second table, not scored into the MAPE: HybridEP (benchmarks/data/hybridep_kernels.csv, NVIDIA's tables in DeepEP's
hybrid-ep branch: 8-36 ranks inside one GB200 NVL72 domain, 8 B200 ranks), the backend Megatron-Core's `flex`
dispatcher runs inside a multi-host NVLink domain (step_time.moe_alltoall "auto"; Megatron-Bridge's and Megatron-LM's
GB200 recipes). Megatron-Core's flex is timed at the collectives' own rates (step_time._ep_comm: deepep_rates only for
the PyTorch-native stacks), so the estimate column is that charge; the table says how it stands against HybridEP's
measured rates by rank count, through its Python API (what Megatron-Core calls) and its kernels alone
(docs/known-gaps.md 112).

Run: python benchmarks/ep_dispatch.py
"""

from __future__ import annotations

import csv
from pathlib import Path

from harness import Case, gpus_system, mape
from trainsizer.catalog import load_catalog
from trainsizer.estimate import comm
from trainsizer.estimate.calibration import load_constants, rates
from trainsizer.estimate.step_time import deepep_rates, group_limited_units_per_token

ROWS = Path(__file__).resolve().parent / "data" / "deepep_normal_kernels.csv"
HYBRIDEP_ROWS = Path(__file__).resolve().parent / "data" / "hybridep_kernels.csv"
SCALE_BLOCK = 128  # FP8 dispatch: one fp32 scale per 128 channels (DeepEP tests per_token_cast_to_fp8)


def token_bytes(row: dict[str, str]) -> float:
    hidden = int(row["hidden"])
    return hidden + hidden / SCALE_BLOCK * 4.0 if row["dtype"] == "fp8" else 2.0 * hidden


def system_of(row: dict[str, str], catalog):
    """The row's GPUs through the public job path."""
    return gpus_system(int(row["ep"]), row["accelerator"], row["network"], catalog)


def estimate_gb_s(row: dict[str, str], catalog, deepep: bool = True) -> float:
    """The estimate's logical bandwidth of the row's dispatch or combine, in GB/s (`deepep` False: at the NCCL
    collectives' rates, as the estimate times every other dispatcher)."""
    system = system_of(row, catalog)
    r = rates(system, "bf16")
    r = deepep_rates(r, system, load_constants()) if deepep else r
    ep, k = int(row["ep"]), int(row["gpus_per_node"])
    nodes = max(ep // k, 1)
    allowed = min(nodes, int(row["topk_nodes"]))
    experts, topk = int(row["experts"]), int(row["topk"])
    ranks = float(group_limited_units_per_token(experts, topk, nodes, allowed, ep))
    per_copy = int(row["tokens"]) * token_bytes(row)
    if nodes == 1:
        t = float(comm.all_to_all_time(per_copy * ranks, ep, k, r, system))
        return per_copy * ranks / t / 1e9
    hit = float(group_limited_units_per_token(experts, topk, nodes, allowed, nodes))
    t = float(comm.forwarded_all_to_all_time(per_copy * hit * (nodes - 1) / nodes, per_copy * ranks * (k - 1) / k,
                                             ep, k, r, system))
    return per_copy * hit / t / 1e9


def cases() -> list[Case]:
    catalog = load_catalog()
    out = []
    for row in csv.DictReader(ROWS.open(encoding="utf-8")):
        case = Case(row["id"], f"DeepEP {row['version']} ({row['link']})", "logical_gb_s", float(row["logical_gb_s"]))
        case.predicted = estimate_gb_s(row, catalog)
        out.append(case)
    return out


def hybridep_cases() -> list[Case]:
    """HybridEP's published rates (source "HybridEP <accelerator> <api>") against the charge of Megatron-Core's flex
    dispatcher inside one NVLink domain: the collectives' rates (estimate_gb_s at deepep False)."""
    catalog = load_catalog()
    out = []
    for row in csv.DictReader(HYBRIDEP_ROWS.open(encoding="utf-8")):
        case = Case(row["id"], f"HybridEP {row['accelerator']} {row['api']}", "logical_gb_s", float(row["logical_gb_s"]))
        case.predicted = estimate_gb_s(row, catalog, deepep=False)
        out.append(case)
    return out


def rank_trend(cs: list[Case], rows: list[dict[str, str]]) -> list[tuple[str, int, float, float]]:
    """(series, ranks, measured rate over the series' 8-rank rate, charged alike) per GB200 row: whether the rate
    falls with the EP group's size faster than the charge does (a series: one pass, API and SM count)."""
    base = {}
    for c, r in zip(cs, rows, strict=True):
        if r["ep"] == "8":
            base[(r["accelerator"], r["pass"], r["api"], r["sms"])] = c
    out = []
    for c, r in zip(cs, rows, strict=True):
        b = base[(r["accelerator"], r["pass"], r["api"], r["sms"])]
        if r["accelerator"] == "gb200":
            out.append((f"{r['pass']} {r['api']} {r['sms']} SMs", int(r["ep"]), c.measured / b.measured,
                        c.predicted / b.predicted))
    return out


def print_hybridep() -> None:
    cs = hybridep_cases()
    rows = list(csv.DictReader(HYBRIDEP_ROWS.open(encoding="utf-8")))
    print(f"\n{'HybridEP row':40s} {'measured':>9s} {'charged':>9s} {'charged / measured':>19s}   (GB/s; Megatron-Core "
          "flex inside one NVLink domain)")
    for c in cs:
        print(f"{c.row_id:40s} {c.measured:9.0f} {c.predicted:9.0f} {c.predicted / c.measured:19.2f}")
    for source in sorted({c.source for c in cs}):
        ratios = [c.predicted / c.measured for c in cs if c.source == source]
        print(f"  {source:24s} n={len(ratios):2d} charged / measured {min(ratios):.2f}-{max(ratios):.2f}")
    print("GB200 rate at n ranks over its 8-rank rate (measured / charged):")
    for series in sorted({t[0] for t in rank_trend(cs, rows)}):
        pts = [t for t in rank_trend(cs, rows) if t[0] == series]
        print(f"  {series:24s} " + "  ".join(f"{n:2d}: {m:.2f} / {p:.2f}" for _, n, m, p in pts))


def main() -> None:
    cs = cases()
    catalog = load_catalog()
    nccl = [estimate_gb_s(row, catalog, deepep=False) for row in csv.DictReader(ROWS.open(encoding="utf-8"))]
    print(f"{'row':28s} {'measured':>9s} {'estimate':>9s} {'error':>7s}   at NCCL rates   (GB/s, DeepEP's logical "
          "bandwidth)")
    for c, n in zip(cs, nccl, strict=True):
        print(f"{c.row_id:28s} {c.measured:9.0f} {c.predicted:9.0f} {c.err * 100:+6.1f}%   {n:6.0f} "
              f"{(n / c.measured - 1) * 100:+6.1f}%")
    for source in sorted({c.source for c in cs}):
        group = [c for c in cs if c.source == source]
        print(f"  {source:22s} n={len(group):2d} MAPE {mape(group):5.1f}%")
    print(f"  all                    n={len(cs):2d} MAPE {mape(cs):5.1f}%")
    at_nccl = [Case(c.row_id, c.source, c.metric, c.measured, n) for c, n in zip(cs, nccl, strict=True)]
    print(f"  all at the NCCL rates  n={len(cs):2d} MAPE {mape(at_nccl):5.1f}%")
    print_hybridep()


if __name__ == "__main__":
    main()
