"""The all-to-alls that cross hosts, on every held-out time row (docs/known-gaps.md 265 (a)).

Which scored runs send an all-to-all through the scale-out network (an MoE EP group or a Ulysses / TE a2a CP group
spanning scale-up domains), how much of each predicted step is the part of it that the NIC bounds, and what the row's
miss would say about that part if the whole miss were its. Nothing fitted; no row is written here: the rows and jobs
are the held-out benchmarks' own (accuracy_bands.collect).

The NIC-bound part is read from the estimate itself: how the row's exposed EP and a2a-CP seconds a step
(step_time_arrays ep_comm, cp_comm) grow with the time a byte takes on the network (its payload a GPU over 1.05, the
growth over 0.05). Where the all-to-all's off-domain share sets its time (comm.all_to_all_time: max(in-domain,
off-domain) + latency; DeepEP's forwarded dispatch alike) that is the off-domain term's exposed seconds; where NVLink's
share sets it, or compute hides it (Megatron-Core's combined 1F1B), less. The
implied factor: (NIC-bound seconds + the row's missing seconds) / NIC-bound seconds, the rate the all-to-all would
need across hosts for the row to land, as a multiple of the time charged (2 = half the charged rate); missing seconds
= predicted step x signed error (+ = predicted too fast, accuracy_bands.Row.err). It reads a network miss only where
nothing else misses: a row whose compute or host time is off carries that into its factor. Also: the RoCE rows' errors
were their network's NCCL all-to-all share lower (what-ifs, WHAT_IF_SHARES), and whether any development-set row
(perf_blackwell's MoE jobs) sends its all-to-all across a host.

Run: python benchmarks/a2a_cross_host.py
"""

from __future__ import annotations

import csv
import dataclasses
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

import accuracy_bands as ab
from trainsizer.errors import TrainsizerError
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.scenario import resolve_job

SHARE_BINS = (0.05, 0.15, 0.30)  # the NIC-bound all-to-all's share of the predicted step: where the summary splits
MIN_SHARE = 1e-3  # below this share of the step the row's all-to-all is taken as not crossing hosts
RATE_PROBE = 0.05  # the network's payload a GPU over 1 + this: the NIC-bound seconds' derivative
LATENCY_PROBE_S = 1e-6  # added to the network latency to count the all-to-alls a step that cross hosts
# a RoCE all-to-all share (networks.yaml alltoall_payload_share) tried on the RoCE rows: 1 as charged, 0.3 about what
# OCI's GB300 two-rack run moved (docs/known-gaps.md 95 (c)); what-ifs, not fitted
WHAT_IF_SHARES = (1.0, 0.6, 0.3)


@dataclass(frozen=True)
class Crossing:
    """One held-out time row whose all-to-all crosses hosts: the row, its network (catalog id and kind), the payload
    a GPU has off its host (GB/s, the network's NCCL ring payload x its all-to-all share), the predicted step (s), the
    exposed all-to-all seconds a step (EP + a2a CP) and the part of them the NIC bounds, the scale-up domains the EP
    group spans (0 = a CP all-to-all), the group's ranks and the all-to-alls a step that cross hosts (each charged
    one network latency, so the step's sensitivity to that latency counts them)."""

    row: Any
    network: str
    kind: str
    off_host_gb_s: float
    step_s: float
    a2a_s: float
    nic_s: float
    ep_domains: float
    ranks: float = 0.0
    calls: float = 0.0

    @property
    def share(self) -> float:
        """The NIC-bound all-to-all seconds over the predicted step."""
        return self.nic_s / self.step_s

    @property
    def peer_mb(self) -> float:
        """MB one rank sends one peer on another host in one all-to-all: the NIC-bound seconds at the off-host rate
        over the calls and the peers off the rank's domain (for DeepEP's forwarded dispatch, the copies per remote
        domain a rank sends, spread the same way)."""
        domains = max(self.ep_domains, 1.0) if self.ep_domains else 0.0
        remote = self.ranks * (1.0 - 1.0 / domains) if domains > 1 else self.ranks / 2.0
        if self.calls <= 0 or remote <= 0:
            return float("nan")
        return self.nic_s * self.off_host_gb_s * 1e3 / self.calls / remote

    @property
    def factor(self) -> float:
        return implied_factor(self.row.err, self.step_s, self.nic_s)


def implied_factor(err: float, step_s: float, nic_s: float) -> float:
    """The multiple of its charged time the NIC-bound all-to-all would take if it carried the whole miss: the
    measured step is step_s x (1 + err) for a rate and a duration alike (accuracy_bands.Row.err)."""
    return (nic_s + err * step_s) / nic_s


def a2a_seconds(out: dict[str, Any], cp_a2a: bool) -> float:
    """Exposed EP all-to-all seconds a step, plus the CP group's where its exchange is an all-to-all (cp_comm_type
    a2a: the ring's p2p and the all-gather are not all-to-alls)."""
    ep = float(np.asarray(out["ep_comm"]).reshape(-1)[0])
    cp = float(np.asarray(out["cp_comm"]).reshape(-1)[0])
    return ep + (cp if cp_a2a else 0.0)


def crossing(row: Any, catalog: Any) -> Crossing | None:
    """The row as a Crossing (nic_s 0 where its all-to-all stays inside the scale-up domain); None where its job does
    not resolve, the time model refuses it, it has no network or no all-to-all."""
    try:
        sc = resolve_job(row.job, catalog)
        if sc.network is None or sc.system is None or sc.system.inter_node_gb_s <= 0:
            return None
        cp_a2a = getattr(sc.strategy, "cp_comm_type", None) == "a2a"
        base = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
        slower = dataclasses.replace(sc.system, inter_node_gb_s=sc.system.inter_node_gb_s / (1.0 + RATE_PROBE))
        slow = step_time_arrays(sc.model, sc.training, slower, sc.strategy)
        late = dataclasses.replace(sc.system, inter_node_latency_s=sc.system.inter_node_latency_s + LATENCY_PROBE_S)
        later = step_time_arrays(sc.model, sc.training, late, sc.strategy)
    except (TrainsizerError, KeyError, TypeError, ValueError):
        return None
    step_s = float(np.asarray(base["step_s"]).reshape(-1)[0])
    a2a_s = a2a_seconds(base, cp_a2a)
    nic_s = (a2a_seconds(slow, cp_a2a) - a2a_s) / RATE_PROBE
    if a2a_s <= 0:
        return None
    nic_s = nic_s if nic_s > MIN_SHARE * step_s else 0.0
    ep_domains = float(np.asarray(base["ep_domains"]).reshape(-1)[0])
    ranks = float(getattr(sc.strategy, "ep", 1) or 1) if ep_domains else float(getattr(sc.strategy, "cp", 1) or 1)
    calls = (a2a_seconds(later, cp_a2a) - a2a_s) / LATENCY_PROBE_S if nic_s > 0 else 0.0
    return Crossing(row, sc.network.id, sc.network.kind,
                    sc.system.inter_node_gb_s * sc.system.inter_node_alltoall_share, step_s, a2a_s, nic_s,
                    ep_domains, ranks, calls)


def _catalog(overlay: str) -> Any:
    """accuracy_bands' catalog of the row (its overlay where it has one), each loaded once."""
    if overlay not in ab._CATALOGS:
        ab._CATALOGS[overlay] = ab.load_catalog([ab.DATA / overlay] if overlay else [])
    return ab._CATALOGS[overlay]


def a2a_rows(rows: list[Any]) -> list[Crossing]:
    """The time rows among `rows` that run an all-to-all (EP or a2a CP) on a multi-host network, smallest error
    first."""
    out = [c for r in rows if r.quantity == "time" and (c := crossing(r, _catalog(r.overlay))) is not None]
    return sorted(out, key=lambda c: c.row.err)


def slope(cs: list[Crossing]) -> tuple[float, float]:
    """Least squares of the signed error on the NIC-bound share, err = a + b x share: (a, b). If the all-to-all
    across hosts were charged at 1 / (1 + b) of what it takes on every row alike and nothing else differed, b would
    be that excess; a is what the rows miss beside it."""
    x = np.array([c.share for c in cs])
    y = np.array([c.row.err for c in cs])
    if len(cs) < 3 or np.ptp(x) <= 0:
        return float("nan"), float("nan")
    b, a = np.polyfit(x, y, 1)
    return float(a), float(b)


def line(c: Crossing) -> str:
    path = ab.row_facts(c.row)["dispatcher"] if c.ep_domains else "cp a2a"
    return (f"{100 * c.row.err:+7.1f}  {c.row.benchmark:16s} {c.row.row_id[:58]:58s} {c.kind:5s} "
            f"{c.off_host_gb_s:6.1f}  {path:9s} {c.ep_domains:4.0f}  {100 * c.a2a_s / c.step_s:5.1f}  "
            f"{100 * c.share:5.1f}  {c.factor:6.2f}  {c.calls:6.0f}  {c.peer_mb:7.2f}")


def summary(cs: list[Crossing], key) -> list[str]:
    groups: dict[str, list[Crossing]] = defaultdict(list)
    for c in cs:
        groups[key(c)].append(c)
    out = []
    for k, g in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        a, b = slope(g)
        fit = f"  err = {100 * a:+.1f}% + {b:+.2f} x share" if np.isfinite(b) else ""
        out.append(f"  {k:24s} n={len(g):3d}  median error {100 * np.median([c.row.err for c in g]):+6.1f}%  "
                   f"median share {100 * np.median([c.share for c in g]):5.1f}%  "
                   f"median factor {np.median([c.factor for c in g]):5.2f}{fit}")
    return out


def error_at_share(c: Crossing, share: float) -> float:
    """The row's signed error were its network's NCCL all-to-all share `share` (System.inter_node_alltoall_share: the
    rate off the host of the NCCL dispatchers and the a2a CP; the flex dispatcher's charge, DeepEP / HybridEP, does
    not read it): the measured step is the predicted one x (1 + err), for a rate and a duration alike."""
    sc = resolve_job(c.row.job, _catalog(c.row.overlay))
    system = dataclasses.replace(sc.system, inter_node_alltoall_share=share)
    step_s = float(np.asarray(step_time_arrays(sc.model, sc.training, system, sc.strategy)["step_s"]).reshape(-1)[0])
    return (1.0 + c.row.err) * c.step_s / step_s - 1.0


def what_if(cs: list[Crossing], kind: str = "roce") -> list[str]:
    """The `kind` rows' errors at each of WHAT_IF_SHARES, and their MAPE."""
    rows = [c for c in cs if c.kind == kind]
    errs = [[error_at_share(c, s) for s in WHAT_IF_SHARES] for c in rows]
    out = [f"  {c.row.row_id[:66]:66s} " + "  ".join(f"{100 * e:+7.1f}" for e in es) for c, es in zip(rows, errs,
                                                                                                      strict=True)]
    mapes = [100 * np.mean([abs(es[i]) for es in errs]) for i in range(len(WHAT_IF_SHARES))]
    return out + [f"  {'MAPE':66s} " + "  ".join(f"{m:7.1f}" for m in mapes)]


def development_rows() -> tuple[int, int]:
    """(rows with an all-to-all on a multi-host network, rows whose all-to-all crosses a host) among perf_blackwell's,
    the development set's only MoE jobs (perf_validation, perf_modern and perf_vtrain time dense models)."""
    import perf_blackwell as pb

    with pb.DATA.open(encoding="utf-8") as f:
        found = [crossing(ab.Row("perf_blackwell", r["id"], "tokens_per_s_per_gpu", 1.0, 1.0, pb.job(r)),
                          _catalog("")) for r in csv.DictReader(f)]
    found = [c for c in found if c is not None]
    return len(found), sum(c.nic_s > 0 for c in found)


def beside(every: list[Crossing]) -> list[str]:
    """Per network kind and benchmark with a row whose all-to-all crosses hosts: the median error of those rows and
    of the same benchmark's rows whose all-to-all stays inside one scale-up domain (what its source misses on the
    same kind of job where the network carries none of it)."""
    out = []
    for kind, bench in sorted({(c.kind, c.row.benchmark) for c in every if c.nic_s > 0}):
        same = [c for c in every if c.kind == kind and c.row.benchmark == bench]
        mine = [100 * c.row.err for c in same if c.nic_s > 0]
        rest = [100 * c.row.err for c in same if c.nic_s <= 0]
        other = f"{np.median(rest):+6.1f}% over {len(rest):3d}" if rest else "   none"
        out.append(f"  {kind:5s} {bench:18s} crossing {np.median(mine):+6.1f}% over {len(mine):3d}   "
                   f"inside a domain {other}")
    return out


def main() -> None:
    every = a2a_rows(ab.collect())
    cs = [c for c in every if c.nic_s > 0]
    print("held-out time rows whose all-to-all crosses hosts (signed error, + = predicted too fast); off-host "
          "GB/s a GPU as charged;\nEP domains (0 = CP); exposed all-to-all and its NIC-bound part, % of the predicted "
          "step; implied factor;\nall-to-alls a step across hosts and MB a rank sends a peer on another host in one "
          "(docs/known-gaps.md 265 (a))")
    print(f"{'err %':>7s}  {'benchmark':16s} {'row':58s} {'kind':5s} {'GB/s':>6s}  {'path':9s} {'dom':>4s}  "
          f"{'a2a%':>5s}  {'nic%':>5s}  {'factor':>6s}  {'calls':>6s}  {'MB/peer':>7s}")
    for c in cs:
        print(line(c))
    print("\nby network kind:")
    print("\n".join(summary(cs, lambda c: c.kind)))
    print("by network kind and NIC-bound share of the step:")
    print("\n".join(summary(cs, lambda c: f"{c.kind} {ab._bin(c.share, SHARE_BINS, '{:.0%}')}")))
    print("by network kind and path:")
    print("\n".join(summary(cs, lambda c: f"{c.kind} {ab.row_facts(c.row)['dispatcher'] if c.ep_domains else 'cp'}")))
    print("median error of the rows that cross hosts beside the same benchmark's all-to-all rows inside a domain:")
    print("\n".join(beside(every)))
    mb = np.array([c.peer_mb for c in cs if np.isfinite(c.peer_mb)])
    print(f"MB a peer on another host in one all-to-all: min {mb.min():.2f}, 10th percentile {np.percentile(mb, 10):.2f}, "
          f"median {np.median(mb):.2f}, max {mb.max():.1f}")
    print("the RoCE rows' errors were the network's NCCL all-to-all share " + " / ".join(map(str, WHAT_IF_SHARES))
          + " of its ring payload (what-ifs):")
    print("\n".join(what_if(cs)))
    n_a2a, n_cross = development_rows()
    print(f"development set: perf_blackwell's {n_a2a} rows with an all-to-all on a multi-host network, {n_cross} cross "
          "a host")
    print(f"a2a_cross_host: n={len(cs)} rows cross hosts; median error {100 * np.median([c.row.err for c in cs]):+.1f}%")


if __name__ == "__main__":
    main()
