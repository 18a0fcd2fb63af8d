"""The dense time rows across hosts against the network payload they are charged (docs/known-gaps.md 280 (a)).

Why megatron/dense/ampere/multi (median +10.6%) and deepspeed/dense/ampere/multi (+8.3%) read too fast while their
Hopper twins are near 0: each held-out dense time row that runs on more than one host (accuracy_bands' class scale
`multi`), the network it is charged (catalog id or a hand-described one, its kind, the payload a GPU in GB/s: line
rate x efficiency, scenario.NetworkView), the part of its predicted step the network bounds, and what its miss
implies for that part. Nothing fitted, no row written here: the rows and jobs are the held-out benchmarks' own
(accuracy_bands.collect).

The network-bound seconds are read from the estimate itself: how the predicted step grows with the time a byte takes
on the network (the payload a GPU over 1.05, the growth over 0.05): the exposed DP / PP / TP / CP collectives that
cross hosts, and the overlapped ones only where their hiding window is short or through their interference charge.
The implied factor: (network-bound seconds + the row's missing seconds) / network-bound seconds, the multiple of its
charged time the network part would need to take for the row to land; missing seconds = predicted step x signed
error (+ = predicted too fast, accuracy_bands.Row.err). It reads a network miss only where nothing else misses.

Also printed:
- each class's and each (GPU family, network kind)'s median error were every network's payload a GPU SCALES of what
  it is charged (what-ifs, not fitted);
- beside each A100 release with rows across hosts, the same release's rows on one host (the offset its source shows
  where the network carries nothing);
- the development set's sources (perf_validation: Selene's HDR InfiniBand, Jean Zay's Omni-Path, the H100 runs) at
  the same what-ifs: what a network change would do to the bound every change must keep.

Run: python benchmarks/network_payload.py
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass
from typing import Any
from unittest import mock

import numpy as np

import accuracy_bands as ab
from trainsizer.errors import TrainsizerError
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.scenario import resolve_job

RATE_PROBE = 0.05  # the network's payload a GPU over 1 + this: the network-bound seconds' derivative
SCALES = (1.0, 0.75, 0.5)  # what-ifs: every network's payload a GPU at these multiples of what it is charged
SHARE_BINS = (0.02, 0.06, 0.12)  # the network-bound share of the predicted step: where the summary splits
FOCUS = ("megatron/dense/ampere/multi", "deepspeed/dense/ampere/multi")  # the classes this listing is about
# the same per-pipeline work on two clusters: GPT 530B at TP 8 x PP 35, 280 micro-batches of one 2,048-token sequence
# a pipeline, 2022-2023 Megatron-LM without flash attention; Selene (Korthikanti et al. 2022 Table 5, HDR InfiniBand,
# one pipeline, no interleaving: the development set) and MegaScale's Megatron-LM baseline (Jiang et al. 2024 Figure 9,
# RoCE, DP 8, three interleaved stages: held out)
TWIN = ("korthikanti22_530B_sp_selective", "megascale_megatron_530b_2240gpu")


@dataclass(frozen=True)
class Crossing:
    """One held-out time row on more than one host: the row, its finest class, its network (id, kind), the payload a
    GPU has off its host (GB/s, as charged), the predicted step (s) and its network-bound seconds."""

    row: Any
    cls: str
    network: str
    kind: str
    payload_gb_s: float
    step_s: float
    nic_s: float

    @property
    def share(self) -> float:
        """The network-bound seconds over the predicted step."""
        return self.nic_s / self.step_s

    @property
    def factor(self) -> float:
        return implied_factor(self.row.err, self.step_s, self.nic_s)

    @property
    def gpu(self) -> str:
        """The class's GPU family (its third field)."""
        return self.cls.split("/")[2]


def implied_factor(err: float, step_s: float, nic_s: float) -> float:
    """The multiple of its charged time the network-bound part would take if it carried the whole miss: the measured
    step is step_s x (1 + err) for a rate and a duration alike (accuracy_bands.Row.err); nan with no such part."""
    return (nic_s + err * step_s) / nic_s if nic_s > 0 else float("nan")


def _step(sc: Any, system: Any) -> float:
    return float(np.asarray(step_time_arrays(sc.model, sc.training, system, sc.strategy)["step_s"]).reshape(-1)[0])


def _scaled(system: Any, scale: float) -> Any:
    """`system` with its network payload a GPU (System.inter_node_gb_s, the collectives' and p2p's rate across hosts)
    at `scale` of what it is charged."""
    return dataclasses.replace(system, inter_node_gb_s=system.inter_node_gb_s * scale)


def crossing(row: Any, cls: str, catalog: Any) -> Crossing | None:
    """The row as a Crossing; None where its job does not resolve, the time model refuses it or it has no network."""
    try:
        sc = resolve_job(row.job, catalog)
        if sc.network is None or sc.system is None or sc.system.inter_node_gb_s <= 0:
            return None
        step_s = _step(sc, sc.system)
        slow = _step(sc, _scaled(sc.system, 1.0 / (1.0 + RATE_PROBE)))
    except (TrainsizerError, KeyError, TypeError, ValueError):
        return None
    return Crossing(row, cls, sc.network.id, sc.network.kind, sc.system.inter_node_gb_s, step_s,
                    max(slow - step_s, 0.0) / RATE_PROBE)


def error_at_scale(c: Crossing, scale: float) -> float:
    """The row's signed error were its network's payload a GPU `scale` of what it is charged: the measured step is
    the predicted one x (1 + err), for a rate and a duration alike."""
    sc = resolve_job(c.row.job, _catalog(c.row.overlay))
    return (1.0 + c.row.err) * c.step_s / _step(sc, _scaled(sc.system, scale)) - 1.0


def _catalog(overlay: str) -> Any:
    """accuracy_bands' catalog of the row (its overlay where it has one), each loaded once."""
    if overlay not in ab._CATALOGS:
        ab._CATALOGS[overlay] = ab.load_catalog([ab.DATA / overlay] if overlay else [])
    return ab._CATALOGS[overlay]


def dense_across_hosts(classed: list[tuple[Any, tuple[str, ...]]]) -> list[Crossing]:
    """The dense time rows whose class scale is `multi` (more than one host), smallest error first."""
    out = [c for row, keys in classed
           if row.quantity == "time" and "/dense/" in keys[0] and keys[0].endswith("/multi")
           and (c := crossing(row, keys[0], _catalog(row.overlay))) is not None]
    return sorted(out, key=lambda c: c.row.err)


def what_ifs(cs: list[Crossing]) -> dict[int, list[float]]:
    """Each row's signed error at every SCALES (by id of the Crossing)."""
    return {id(c): [c.row.err if s == 1.0 else error_at_scale(c, s) for s in SCALES] for c in cs}


def _stat(errs: list[list[float]], i: int) -> str:
    e = 100.0 * np.array([x[i] for x in errs])
    return f"{np.median(e):+6.1f} / {np.mean(np.abs(e)):5.1f}"


def summary(cs: list[Crossing], errs: dict[int, list[float]], key) -> list[str]:
    """Per group of `key`: n, median network-bound share and implied factor, and median / MAPE at every SCALES."""
    groups: dict[str, list[Crossing]] = defaultdict(list)
    for c in cs:
        groups[key(c)].append(c)
    out = []
    for k, g in sorted(groups.items()):
        factors = [c.factor for c in g if np.isfinite(c.factor)]
        factor = f"{np.median(factors):7.2f}" if factors else "      -"
        out.append(f"  {k:40s} n={len(g):3d}  share {100 * np.median([c.share for c in g]):5.1f}%  factor {factor}  "
                   + "   ".join(_stat([errs[id(c)] for c in g], i) for i in range(len(SCALES))))
    return out


def line(c: Crossing, errs: list[float]) -> str:
    factor = f"{c.factor:7.2f}" if np.isfinite(c.factor) else "      -"
    return (f"  {c.row.benchmark:15s} {c.row.row_id[:52]:52s} {c.cls.split('/')[0][:9]:9s} {c.network[:10]:10s} "
            f"{c.kind:8s} {c.payload_gb_s:6.2f}  {100 * c.share:5.1f}  {factor}  "
            + "  ".join(f"{100 * e:+6.1f}" for e in errs))


def one_host_beside(classed: list[tuple[Any, tuple[str, ...]]], cs: list[Crossing]) -> list[str]:
    """For each release with rows across hosts in FOCUS: the median error of those rows and of the same release's
    rows on one host of the same stack and GPU (what its source misses where the network carries nothing)."""
    out = []
    for focus in FOCUS:
        node = focus.rsplit("/", 1)[0] + "/node"
        multi = [c for c in cs if c.cls == focus]
        for rel in sorted({ab.release_of(c.row.row_id) for c in multi}):
            mine = [100 * c.row.err for c in multi if ab.release_of(c.row.row_id) == rel]
            host = [100 * r.err for r, keys in classed if r.quantity == "time" and keys[0] == node
                    and ab.release_of(r.row_id) == rel]
            beside = f"{np.median(host):+6.1f}% over {len(host):2d}" if host else "   none"
            out.append(f"  {focus.split('/')[0]:9s} {rel:22s} across hosts {np.median(mine):+6.1f}% over "
                       f"{len(mine):2d}   on one host {beside}")
    return out


def development(scales: tuple[float, ...] = SCALES) -> dict[str, list[float]]:
    """perf_validation's MAPE (%), all its rows ("all") and each source's, were every network's payload a GPU each of
    `scales` of what it is charged: the development set's rows across hosts (Selene's HDR InfiniBand, Jean Zay's
    Omni-Path, the H100 runs). perf_validation builds its systems itself, so its step_time_arrays is wrapped."""
    import perf_validation as pv
    from harness import mape

    orig = pv.step_time_arrays
    table: dict[str, list[float]] = defaultdict(list)
    for scale in scales:
        def scaled(model, training, system, strategy, _s=scale, **kw):
            return orig(model, training, _scaled(system, _s), strategy, **kw)

        with mock.patch.object(pv, "step_time_arrays", scaled):
            cases = [c for c in pv.throughput_cases() if not c.skipped]
        by: dict[str, list[Any]] = defaultdict(list)
        for c in cases:
            by[c.source].append(c)
        for src, cs in [("all", cases), *sorted(by.items())]:
            table[src].append(mape(cs))
    return dict(table)


def twin(cs: list[Crossing]) -> list[str]:
    """TWIN's two steps, measured and predicted (s), and their ratio: the development row through perf_validation's
    own predict_row, the held-out one as its Crossing (measured = predicted x (1 + err))."""
    import perf_validation as pv

    dev = next(r for r in pv._rows() if r["id"] == TWIN[0])
    dev_pred = pv.predict_row(dev)[0]
    held = next(c for c in cs if c.row.row_id == TWIN[1])
    held_meas = held.step_s * (1.0 + held.row.err)
    return [f"  {TWIN[0]:34s} measured {float(dev['value']):6.2f} s  predicted {dev_pred:6.2f} s",
            f"  {TWIN[1]:34s} measured {held_meas:6.2f} s  predicted {held.step_s:6.2f} s",
            f"  second over first: measured {held_meas / float(dev['value']):.3f}, predicted {held.step_s / dev_pred:.3f}"]


def main() -> None:
    classed = ab.classify(ab.collect())
    cs = dense_across_hosts(classed)
    errs = what_ifs(cs)
    head = "   ".join(f"x{s:<4} med / MAPE" for s in SCALES)
    print("held-out dense time rows across hosts (signed error, + = predicted too fast): network, its kind, the payload "
          "a GPU as charged (GB/s),\nthe network-bound share of the predicted step (%), the implied factor, and the "
          f"error at each what-if payload ({', '.join(f'x{s}' for s in SCALES)}); docs/known-gaps.md 280 (a)")
    for c in cs:
        if c.cls in FOCUS:
            print(line(c, errs[id(c)]))
    print(f"\nby class ({'':29s}             {head}):")
    print("\n".join(summary(cs, errs, lambda c: c.cls)))
    print("by GPU family and network kind:")
    print("\n".join(summary(cs, errs, lambda c: f"{c.gpu} {c.kind}")))
    print("by GPU family and network-bound share of the step:")
    print("\n".join(summary(cs, errs, lambda c: f"{c.gpu} {ab._bin(c.share, SHARE_BINS, '{:.0%}')}")))
    print("median error of the A100 releases across hosts beside the same release's rows on one host:")
    print("\n".join(one_host_beside(classed, cs)))
    print("development set (perf_validation) MAPE % at each what-if payload " + " / ".join(f"x{s}" for s in SCALES)
          + ":")
    print("\n".join(f"  {src:28s} " + "  ".join(f"{m:6.1f}" for m in ms) for src, ms in development().items()))
    print("one per-pipeline work on two clusters (TWIN: Selene's HDR InfiniBand, MegaScale's RoCE):")
    print("\n".join(twin(cs)))
    focus = [errs[id(c)] for c in cs if c.cls in FOCUS]
    print(f"network_payload: n={len(cs)} dense rows across hosts; {len(focus)} in " + " + ".join(FOCUS)
          + f", median {100 * np.median([e[0] for e in focus]):+.1f}%")


if __name__ == "__main__":
    main()
