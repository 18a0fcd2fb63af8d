"""Failures, checkpoints and goodput of a long training job.

- Job MTBF = 1 / (GPUs x failures per GPU-day) -- nodes fail independently and any failure stops a
  synchronous job (Kokolis et al. 2024, "Revisiting reliability in large-scale ML research clusters").
- Checkpoint write time delta = checkpoint bytes / storage bandwidth.
- Optimal checkpoint interval tau = sqrt(2 delta M) - delta (Daly 2006 first order; Young 1974 without the
  -delta), capped at M.
- Wasted fraction ~ delta/tau + (tau/2 + R)/M (Daly 2006 first order: checkpoint cost, lost work since the
  last checkpoint, restart); goodput = 1 - waste.

The failure rate, restart time and checkpoint size are the catalog's reliability figures (catalog/data/
reliability.yaml), passed in as `FailureFigures`: a catalog overlay of them changes the estimate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from trainsizer.estimate.calibration import load_constants

if TYPE_CHECKING:
    from trainsizer.catalog.catalog import Reliability as CatalogReliability


@dataclass(frozen=True)
class FailureFigures:
    """The planning figures the goodput model reads, taken from a catalog's reliability figures."""

    per_gpu_mtbf_h: float  # per-GPU mean time between job-interrupting failures (figure per-gpu-mtbf-hours)
    restart_s: float  # re-queue + init + checkpoint load (figure restart-overhead-minutes)
    checkpoint_bytes_per_param: float  # full training-state checkpoint (figure checkpoint-bytes-per-param)

    @property
    def failures_per_gpu_day(self) -> float:
        return 24.0 / self.per_gpu_mtbf_h


def failure_figures(catalog_reliability: CatalogReliability | None = None) -> FailureFigures:
    """A catalog's figures (each its typical value, else the middle of its range); None: the built-in catalog."""
    if catalog_reliability is None:
        from trainsizer.catalog.catalog import load_catalog

        catalog_reliability = load_catalog().reliability
    rel = catalog_reliability
    return FailureFigures(per_gpu_mtbf_h=float(rel.per_gpu_mtbf_hours.mid),
                          restart_s=float(rel.restart_overhead_minutes.mid) * 60.0,
                          checkpoint_bytes_per_param=float(rel.checkpoint_bytes_per_param.mid))


@dataclass(frozen=True)
class Reliability:
    job_mtbf_s: float
    checkpoint_write_s: float
    checkpoint_interval_s: float
    restart_s: float
    goodput: float  # fraction of wall-clock time that advances training
    expected_failures_per_day: float

    def to_dict(self) -> dict[str, float]:
        return {
            "job_mtbf_h": self.job_mtbf_s / 3600.0,
            "checkpoint_write_s": self.checkpoint_write_s,
            "checkpoint_interval_min": self.checkpoint_interval_s / 60.0,
            "restart_s": self.restart_s,
            "goodput": self.goodput,
            "expected_failures_per_day": self.expected_failures_per_day,
        }


def job_mtbf_s(gpus, failures_per_gpu_day: float | None = None):
    """Mean time between job-stopping failures (seconds) for a job on `gpus` GPUs (default rate: the built-in
    catalog's per-GPU MTBF)."""
    rate = failures_per_gpu_day if failures_per_gpu_day is not None else failure_figures().failures_per_gpu_day
    return 86400.0 / (np.maximum(np.asarray(gpus, float), 1.0) * rate)


def optimal_checkpoint_interval_s(write_s, mtbf_s):
    """Daly (2006) first order: sqrt(2 delta M) - delta, at least delta, at most M."""
    d = np.asarray(write_s, float)
    m = np.asarray(mtbf_s, float)
    tau = np.sqrt(2.0 * d * m) - d
    return np.clip(tau, np.maximum(d, 1.0), m)


def goodput_fraction(write_s, interval_s, restart_s, mtbf_s):
    """1 - (delta/tau + (tau/2 + R)/M), floored at 1% (Daly 2006 first-order waste)."""
    d, tau = np.asarray(write_s, float), np.asarray(interval_s, float)
    waste = d / tau + (tau / 2.0 + np.asarray(restart_s, float)) / np.asarray(mtbf_s, float)
    return np.clip(1.0 - waste, 0.01, 1.0)


def checkpoint_write_s(checkpoint_bytes, writer_nodes, storage_gb_s: float | None = None):
    """Seconds to write `checkpoint_bytes`: delta = bytes / bandwidth, the bandwidth `storage_gb_s` (GB/s aggregate)
    or perf_constants.yaml checkpoint_storage.storage_gb_s_per_node x the nodes that write. Numpy-broadcasting."""
    nodes = np.maximum(np.asarray(writer_nodes, float), 1.0)
    per_node = load_constants().raw["checkpoint_storage"]["storage_gb_s_per_node"]
    bw = (storage_gb_s if storage_gb_s is not None else per_node * nodes) * 1e9
    return np.asarray(checkpoint_bytes, float) / bw


def reliability(params_total: float, gpus: int, gpus_per_node: int, *, figures: FailureFigures | None = None,
                storage_gb_s: float | None = None,
                failures_per_gpu_day: float | None = None, failures_per_node_day: float | None = None,
                restart_s: float | None = None,
                checkpoint_bytes_per_param: float | None = None,
                checkpoint_interval_s: float | None = None) -> Reliability:
    """Goodput of a job. Failure rate, restart and checkpoint size come from `figures` (default: the built-in
    catalog's), each overridable by its keyword; the checkpoint bandwidth per node from `perf_constants.yaml`."""
    fig = figures if figures is not None else failure_figures()
    rate = fig.failures_per_gpu_day if failures_per_gpu_day is None else failures_per_gpu_day
    if failures_per_node_day is not None:  # e.g. Kokolis 2024 r_f = 5e-3 per 8-GPU node-day
        rate = failures_per_node_day / max(1, int(gpus_per_node))
    restart = float(fig.restart_s if restart_s is None else restart_s)
    bpp = float(fig.checkpoint_bytes_per_param if checkpoint_bytes_per_param is None
                else checkpoint_bytes_per_param)
    nodes = max(1, -(-int(gpus) // max(1, int(gpus_per_node))))
    write = float(checkpoint_write_s(params_total * bpp, nodes, storage_gb_s))
    mtbf = float(job_mtbf_s(gpus, rate))
    tau = float(checkpoint_interval_s) if checkpoint_interval_s else float(optimal_checkpoint_interval_s(write, mtbf))
    good = float(goodput_fraction(write, tau, restart, mtbf))
    return Reliability(mtbf, write, tau, restart, good, 86400.0 / mtbf)
