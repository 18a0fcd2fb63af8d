"""The device figure beside the allocated one, on the same runs: what nvidia-smi reads over torch's allocated peak in IBM's
fms-acceleration suite, split against the estimate's items, and what that leaves of the suite's MoE misses (a
diagnostic; nothing fitted, no estimate input; docs/known-gaps.md 307 (a), (b)).

Data: benchmarks/data/fms_device_pairs.csv. The suite's benchmark.py writes two memory figures for every run of
scripts/benchmarks/refs/a100_80gb*.csv: mem_nvidia_mem_reserved, the run's peak nvidia-smi memory.used (sampled each
second) less the first reading, averaged over the devices (get_peak_mem_usage_by_device_id), and
mem_peak_torch_mem_alloc_in_bytes, the HF Trainer's memory tracker on rank 0 (the allocation deltas of init and train
plus the train stage's peaked delta: torch.cuda.max_memory_allocated; extract_gpu_memory_metrics), the same at
24bdadb, 426a4a5, 4e81c64 and 9122a76. perf_heldout61 scores its 41 dense rows (packed to 4,096 tokens) on the second,
perf_heldout64 its 28 orca-math rows (refs_orca/a100_80gb_pf.csv at 3cf092a, a100_80gb_mp.csv at 4224c66: padding-free,
so each micro-batch's tokens vary); the file pairs each with the first, read at the row's commit and line. The MoE file
(refs/a100_80gb_moe.csv, perf_heldout66: unpacked alpaca-cleaned, each micro-batch padded to its longest) has the first
only.

Printed: each dense row's two figures, measured and predicted, and the implied fraction: the device figure less the
allocated peak, the estimate's CUDA context and communicators, its caching-allocator segments (loss path, forward
layers, freed gradients) and its allocator growth, over the allocated peak. That is what memory_constants.yaml's
allocator_fragmentation_fraction (0.05) stands for on a device figure, an upper bound (a context larger than the 0.53
GiB assumed lands in it too); its median and quartiles by layout (packed, padding-free) and GPU count (one GPU; FSDP1
on two or more). Then perf_heldout66's MoE rows split the same way, each miss in GiB and what is left of it at the
packed dense rows' median fraction for the same GPU count.

Run: python benchmarks/fms_device_memory.py
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from statistics import median, quantiles

import finetune_heldout as fh
import perf_heldout61 as p61
import perf_heldout64 as p64
import perf_heldout66 as p66
from harness import num
from trainsizer.catalog import load_catalog
from trainsizer.estimate.memory import CACHED_ONLY_ITEMS, GIB, estimate_memory, load_memory_constants
from trainsizer.scenario import resolve_job

DATA = Path(__file__).resolve().parent / "data"
PAIRS = DATA / "fms_device_pairs.csv"
MIB_PER_GIB = 1024.0
# the dense batches with both figures: fixed shapes (packed to 4,096) and varying ones (padding-free)
LAYOUTS = (("packed", p61), ("padding-free", p64))
ASSUMED_FRACTION = load_memory_constants()["framework_overhead"]["allocator_fragmentation_fraction"]


def pairs() -> dict[str, dict[str, str]]:
    """fms_device_pairs.csv by row id."""
    return {r["id"]: r for r in csv.DictReader(PAIRS.open(encoding="utf-8"))}


@dataclass(frozen=True)
class Split:
    """The estimate's device figure for one row, in GiB a GPU: allocated (the peak less what the allocator does not
    count as allocated), CUDA context and communicators, the fragmentation allowance, the other cached-only segments
    and the allocator's growth under varying lengths (estimate.allocator)."""

    allocated: float
    outside: float
    fragmentation: float
    segments: float
    growth: float
    device: float


def split(batch: fh.Batch, r: dict[str, str]) -> Split:
    """The estimate of row `r` (of `batch`) split as `Split`."""
    sc = resolve_job(batch.job(r), load_catalog())
    est = estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False)
    items = {k: v / GIB for k, v in est.items_bytes.items()}
    outside = sum(items.get(k, 0.0) for k in fh.OUTSIDE_ALLOCATOR)
    segments = sum(items.get(k, 0.0) for k in CACHED_ONLY_ITEMS if k != "fragmentation")
    fragmentation = items.get("fragmentation", 0.0)
    allocated = est.per_gpu_bytes / GIB - outside - segments - fragmentation
    return Split(allocated, outside, fragmentation, segments, est.allocator_growth_bytes / GIB,
                 est.reserved_peak_bytes / GIB)


@dataclass(frozen=True)
class Pair:
    """One dense run's two measured figures (GiB a GPU) and the estimate's split; `layout`: LAYOUTS' name."""

    row_id: str
    layout: str
    gpus: int
    allocated: float
    device: float
    est: Split

    @property
    def implied_fraction(self) -> float:
        """The device figure beyond the allocated peak and the estimate's non-fragmentation items, over the peak."""
        e = self.est
        return (self.device - self.allocated - e.outside - e.segments - e.growth) / self.allocated


def dense_pairs() -> list[Pair]:
    """The LAYOUTS batches' estimated rows with both figures."""
    got = pairs()
    return [Pair(r["id"], layout, int(r["gpu_count"]), num(got[r["id"]]["peak_allocated_bytes"]) / GIB,
                 num(got[r["id"]]["mem_nvidia_mib"]) / MIB_PER_GIB, split(mod.BATCH, r))
            for layout, mod in LAYOUTS for r in mod.rows() if r["id"] in got and not r["refused"]]


def fraction_stats(ps: list[Pair], one_gpu: bool, layout: str = "packed") -> tuple[int, float, float, float]:
    """(runs, median, lower and upper quartile) of the implied fraction over `layout`'s runs on one GPU (or on
    several)."""
    xs = [p.implied_fraction for p in ps if (p.gpus == 1) == one_gpu and p.layout == layout]
    q1, _, q3 = quantiles(xs, n=4)
    return len(xs), median(xs), q1, q3


def moe_misses(ps: list[Pair]) -> list[tuple[str, float, Split, float]]:
    """(row, measured nvidia-smi GiB, the estimate's split, the miss in GiB left at the dense runs' median fraction for
    the row's GPU count instead of the assumed one) for perf_heldout66's estimated memory rows."""
    out = []
    for r in p66.rows():
        if r["refused"] or not r["peak_mem"]:
            continue
        e = split(p66.BATCH, r)
        extra = (fraction_stats(ps, int(r["gpu_count"]) == 1)[1] - ASSUMED_FRACTION) * e.allocated
        out.append((r["id"], num(r["peak_mem"]), e, num(r["peak_mem"]) - e.device - extra))
    return out


def main() -> None:
    ps = dense_pairs()
    print("fms-acceleration's dense runs (A100-80GB, HF Trainer; perf_heldout61's packed 4,096 on one GPU or FSDP1 on "
          "two, perf_heldout64's padding-free orca-math on one to eight): torch's allocated peak and nvidia-smi, measured "
          "and predicted (GiB a GPU), the estimate's split of its device figure (context + communicators, fragmentation, "
          "other segments, growth) and the implied fraction:")
    print(f"  {'row':36s} {'alloc':>6s} {'pred':>6s} | {'device':>6s} {'pred':>6s} | {'ctx':>4s} {'frag':>4s} {'segs':>4s}"
          f" {'grow':>4s} | implied")
    for p in ps:
        e = p.est
        print(f"  {p.row_id:36s} {p.allocated:6.2f} {e.allocated:6.2f} | {p.device:6.2f} {e.device:6.2f} | "
              f"{e.outside:4.2f} {e.fragmentation:4.2f} {e.segments:4.2f} {e.growth:4.2f} | {p.implied_fraction:+.3f}")
    for (layout, _), (one, label) in product(LAYOUTS, ((True, "one GPU"), (False, "FSDP1"))):
        n, med, q1, q3 = fraction_stats(ps, one, layout)
        sub = [p for p in ps if (p.gpus == 1) == one and p.layout == layout]
        print(f"  {layout:12s} {label:7s} n={n:2d}: implied fraction median {med:.3f} (quartiles {q1:.3f} / {q3:.3f}; assumed "
              f"{ASSUMED_FRACTION:.3f}); error median allocated {100 * median(p.est.allocated / p.allocated - 1 for p in sub):+.1f}%"
              f", device {100 * median(p.est.device / p.device - 1 for p in sub):+.1f}%")
    print("\nperf_heldout66's MoE rows (nvidia-smi only; unpacked, padded per micro-batch), split the same way, the miss "
          "(measured - estimate, GiB) and what is left of it at the packed dense runs' median fraction:")
    for rid, measured, e, left in moe_misses(ps):
        print(f"  {rid:36s} measured {measured:6.2f} = estimate {e.device:6.2f} (alloc {e.allocated:5.2f}, ctx "
              f"{e.outside:4.2f}, frag {e.fragmentation:4.2f}, segs {e.segments:4.2f}, growth {e.growth:4.2f}) + "
              f"{measured - e.device:5.2f}; left {left:5.2f}")


if __name__ == "__main__":
    main()
