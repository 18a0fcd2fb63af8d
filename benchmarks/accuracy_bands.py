"""Accuracy bands: how far off the estimate is on published runs it was not fitted on, per job class.

Runs the held-out benchmarks' own rows through their own code (their row lists, job builders and predictions; this
file holds no row), classes each row's job with the estimate's classifier (evaluate.job_class_of ->
estimate.accuracy.job_class, the function a user's job goes through), and writes per class the signed errors'
statistics to src/trainsizer/estimate/data/accuracy_bands.yaml, which the estimate and the plan report beside their
figures.

Held out (docs/validation.md "Held out"): perf_heldout, perf_heldout26..46, perf_mlperf, perf_mlperf6,
perf_mbridge26, perf_hybrid, perf_amd, perf_finetune, finetune_heldout, perf_device_hf (our own H200 runs),
perf_external, perf_papers. The development
set (perf_validation, perf_modern, perf_vtrain, perf_blackwell, memory_*) is NOT used: constants were fitted on it, so
its errors understate what a new job sees. The pair checks (fp8_pairs, nvfp4_pairs) score ratios, not runs: not used.

Quantities: time = throughput, signed (predicted - measured) / measured of a rate (tokens/s, TFLOP/s, MFU) or
measured / predicted - 1 of a duration (step time, GPU-hours): + = predicted too fast. memory = a published peak
(PyTorch's reserved / allocated peak or the device's used memory, as each benchmark scores it), + = predicted too large. Left out: refused rows,
memory after the step (model states, not a peak), the longest sequence that fits, the DualPipe F&B pair (one stage's
kernel time).

Classes (estimate/accuracy.py): stack family / model kind / GPU family / scale, each band at the finest level with at
least MIN_ROWS rows; every row counts once, so a source with many rows weighs more.

Run: python benchmarks/accuracy_bands.py            (prints the table)
     python benchmarks/accuracy_bands.py --write    (and rewrites the data file)
     python benchmarks/accuracy_bands.py --rows megatron/moe/blackwell/domain   (that class's rows, worst last:
       each with its part, GPUs, model, EP degree and MoE dispatcher, and for a time row the time it misses per
       decoder layer and micro-batch and the step's exposed EP share; grouped by each fact, by the dispatch path
       (dispatcher, padded token drop or not), CUDA graphs and EP all-to-all overlap, and as the estimate resolves
       the job by micro-batches a step (with the graphs), TP / PP / CP layout and DP degree, with the ms a step each
       micro-batch bin misses; where a class's offset comes from; a memory row with the GiB a GPU it misses and what
       its figure counts, the rows grouped by figure)
     python benchmarks/accuracy_bands.py --rows megatron/moe/blackwell/domain --without model=gpt-oss-120b
       (that listing less a row family: any fact of the listing's "by" lines, FACT=VALUE, repeatable; the
       resolved ones too: --without micro-batches=<2)
"""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError
from trainsizer.estimate.accuracy import QUANTITIES
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.evaluate import job_class_of
from trainsizer.scenario import resolve_job

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "trainsizer" / "estimate" / "data" / "accuracy_bands.yaml"
DATA = Path(__file__).resolve().parent / "data"
MIN_ROWS = 8  # fewer rows than this: the class falls back to a coarser one (a 10th / 90th percentile of 8 is thin)
RATE_METRICS = ("tokens_per_s_per_gpu", "tokens_per_sec_per_gpu", "tokens_s", "narayanan_tflops_per_gpu",
                "nemo_tflops_per_gpu", "megatron_tflops_per_gpu", "gptneox_tflops_per_gpu", "mfu_6n_total_pct",
                "palm_mfu_pct", "mfu", "samples_s", "nanotron_mfu_pct", "atorch_tflops_per_gpu",
                "primus_megatron_tflops_per_gpu", "megatron_moe_tflops_per_gpu", "megatron_moe_mfu_pct",
                "nemo_nemotron_tflops_per_gpu")
DURATION_METRICS = ("step_time_s", "gpu_hours", "gpu_hours_logged")
# a published peak: PyTorch's reserved / allocated peak, or the device's used memory (torch.cuda.mem_get_info)
PEAK_METRICS = ("peak_memory_gib", "peak_allocated_gib", "peak_allocated_first_step_gib", "peak_gib",
                "device_memory_used_gib")
LEFT_OUT = ("allocated_after_step_gib", "allocated_after_backward_gib", "max_seq", "fb_pair_s", "fits", "refused")
# what a published peak counts (docs/known-gaps.md 292 (a)): every allocation on the device (torch.cuda.mem_get_info,
# nvidia-smi: the allocator's segments, the context, the communicators), the caching allocator's reserve, or live
# tensors; by metric, and for a finetune_heldout row ("peak_gib") by its unit (finetune_heldout._memory_gib's bases)
FIGURE_OF_METRIC = {"device_memory_used_gib": "device", "peak_memory_gib": "reserved", "peak_allocated_gib": "allocated",
                    "peak_allocated_first_step_gib": "allocated"}
FIGURE_OF_UNIT = {"GiB-nvidia-smi": "device", "GiB-allocator": "reserved", "GiB-reserved": "reserved",
                  "GB-reserved": "reserved", "GiB": "allocated", "GiB-active": "allocated", "GB-allocated": "allocated",
                  "GB-allocator": "allocated"}


@dataclass
class Row:
    """One scored held-out figure: its benchmark, id, metric, measured and predicted value, and its job."""

    benchmark: str
    row_id: str
    metric: str
    measured: float
    predicted: float
    job: dict[str, Any]
    overlay: str = ""  # a catalog overlay file under benchmarks/data the row's job is resolved on
    unit: str = ""  # a finetune_heldout row's peak_mem_unit (what its peak_gib counts)

    @property
    def quantity(self) -> str | None:
        if self.metric in RATE_METRICS or self.metric in DURATION_METRICS:
            return "time"
        if self.metric in PEAK_METRICS:
            return "memory"
        if self.metric in LEFT_OUT:
            return None
        raise ValueError(f"{self.benchmark} {self.row_id}: metric {self.metric!r} is not sorted into a quantity")

    @property
    def figure(self) -> str:
        """What a memory row's figure counts: device, reserved, allocated (FIGURE_OF_METRIC / FIGURE_OF_UNIT) or
        unstated."""
        return FIGURE_OF_METRIC.get(self.metric) or FIGURE_OF_UNIT.get(self.unit, "unstated")

    @property
    def err(self) -> float:
        """Signed error: + = predicted too fast (time) or too large (memory)."""
        if self.metric in DURATION_METRICS:
            return self.measured / self.predicted - 1.0
        return self.predicted / self.measured - 1.0


def _heldout_style(name: str, run: list, models: dict[str, Any]) -> list[Row]:
    """Rows of the files in perf_heldout's columns: (case, result, row) triples, jobs from perf_heldout.job_of."""
    import perf_heldout as ph

    return [Row(name, c.row_id, c.metric, c.measured, c.predicted, ph.job_of(r, models), r["overlay"])
            for c, _, r in run if not c.skipped]


def _tokens_style(name: str, cases: list[tuple[str, str, float, float]], rows: list[dict[str, str]], job) -> list[Row]:
    """Rows scored as (row id, key, measured, predicted tokens/s/GPU), jobs from the benchmark's own builder."""
    by_id = {r["id"]: r for r in rows}
    return [Row(name, rid, "tokens_per_s_per_gpu", m, p, job(by_id[rid])) for rid, _, m, p in cases]


def _case_style(name: str, cases: list, rows: list[dict[str, str]], job) -> list[Row]:
    """Rows scored as harness.Case lists (one row may give several cases), jobs from the benchmark's builder, each on
    its row's catalog overlay where the file has that column (perf_heldout40's RTX 3090 rig)."""
    by_id = {r["id"]: r for r in rows}
    return [Row(name, c.row_id, c.metric, c.measured, c.predicted, job(by_id[c.row_id]),
                by_id[c.row_id].get("overlay") or "", by_id[c.row_id].get("peak_mem_unit") or "")
            for c in cases if not c.skipped]


def collect() -> list[Row]:
    """Every scored held-out figure, each benchmark through its own functions."""
    import csv

    import finetune_heldout as fh
    import perf_amd
    import perf_device_hf
    import perf_external as pe
    import perf_finetune as pf
    import perf_heldout as ph
    import perf_heldout26 as h26
    import perf_heldout27 as h27
    import perf_heldout28 as h28
    import perf_heldout29 as h29
    import perf_heldout30 as h30
    import perf_heldout31 as h31
    import perf_heldout32 as h32
    import perf_heldout33 as h33
    import perf_heldout34 as h34
    import perf_heldout35 as h35
    import perf_heldout36 as h36
    import perf_heldout37 as h37
    import perf_heldout38 as h38
    import perf_heldout39 as h39
    import perf_heldout40 as h40
    import perf_heldout41 as h41
    import perf_heldout42 as h42
    import perf_heldout43 as h43
    import perf_heldout44 as h44
    import perf_heldout45 as h45
    import perf_heldout46 as h46
    import perf_heldout47 as h47
    import perf_heldout48 as h48
    import perf_heldout49 as h49
    import perf_heldout50 as h50
    import perf_heldout51 as h51
    import perf_heldout52 as h52
    import perf_heldout53 as h53
    import perf_heldout54 as h54
    import perf_heldout55 as h55
    import perf_heldout56 as h56
    import perf_heldout57 as h57
    import perf_heldout58 as h58
    import perf_heldout59 as h59
    import perf_heldout60 as h60
    import perf_heldout61 as h61
    import perf_heldout62 as h62
    import perf_heldout63 as h63
    import perf_heldout64 as h64
    import perf_heldout65 as h65
    import perf_heldout66 as h66
    import perf_heldout67 as h67
    import perf_heldout68 as h68
    import perf_heldout69 as h69
    import perf_heldout70 as h70
    import perf_heldout71 as h71
    import perf_heldout72 as h72
    import perf_heldout73 as h73
    import perf_heldout74 as h74
    import perf_heldout75 as h75
    import perf_heldout76 as h76
    import perf_heldout77 as h77
    import perf_heldout78 as h78
    import perf_heldout79 as h79
    import perf_hybrid
    import perf_mbridge26 as mb
    import perf_mlperf
    import perf_mlperf6 as m6
    import perf_papers as pp

    models = yaml.safe_load(ph.MODELS.read_text(encoding="utf-8"))
    out = _heldout_style("perf_heldout", [(c, {}, r) for c, _, r in ph.run_all()], models)
    out += _heldout_style("perf_heldout28", h28.run_all(), models)
    out += _heldout_style("perf_heldout29", h29.run_all(), models)
    out += _heldout_style("perf_heldout30", h30.run_all(), models)
    out += _heldout_style("perf_heldout31", h31.run_all(), models)
    out += _heldout_style("perf_heldout32", h32.run_all(), models)
    out += _heldout_style("perf_heldout33", h33.moe_run(), models)
    out += _heldout_style("perf_heldout34", h34.dgxc_run(), models)
    out += _heldout_style("perf_heldout39", h39.run_all(), models)
    out += _heldout_style("perf_heldout40", h40.run_all(), models)
    out += _heldout_style("perf_papers", pp.run_all(), pp.models())
    out += _heldout_style("perf_heldout45", h45.nemo_run(), models)
    out += _heldout_style("perf_heldout48", h48.run_all(), models)
    out += _heldout_style("perf_heldout49", h49.run_all(), models)
    out += _heldout_style("perf_heldout51", h51.run_all(), models)
    out += _heldout_style("perf_heldout53", h53.run_all(), models)
    out += _heldout_style("perf_heldout54", h54.titan_run(), models)
    out += _heldout_style("perf_heldout55", h55.titan_run(), models)
    out += _heldout_style("perf_heldout57", h57.run_all(), h57.models())
    out += _heldout_style("perf_heldout57", h57.internlm_run(), h57.internlm_models())
    out += _heldout_style("perf_heldout60", h60.run_all(), models)
    out += _heldout_style("perf_heldout63", h63.run_all(), models)
    out += _heldout_style("perf_heldout65", h65.run_all(), h65.models())
    out += _heldout_style("perf_heldout67", h67.run_all(), h67.models())
    out += _heldout_style("perf_heldout69", h69.run_all(), h69.models())
    out += _heldout_style("perf_heldout70", h70.run_all(), h70.models())
    out += _heldout_style("perf_heldout71", h71.run_all(), h71.models())
    out += _heldout_style("perf_heldout72", h72.run_all(), h72.models())
    out += _heldout_style("perf_heldout73", h73.run_all(), h73.models())
    out += _heldout_style("perf_heldout74", h74.run_all(), h74.models())
    out += _heldout_style("perf_heldout75", h75.run_all(), h75.models())
    out += _heldout_style("perf_heldout76", h76.run_all(), h76.models())
    out += _heldout_style("perf_heldout77", h77.run_all(), h77.models())
    out += _heldout_style("perf_heldout78", h78.run_all(), h78.models())
    out += _heldout_style("perf_heldout79", h79.titan_run(), h79.titan_models())
    out += _heldout_style("perf_heldout68", h68.run_all(), h68.models())
    out += _heldout_style("perf_heldout62", h62.run_all(), h62.models())
    out += _tokens_style("perf_heldout26", h26.cases(), h26.rows(), mb.job)
    out += _tokens_style("perf_heldout54", h54.report_cases(), h54.report_rows(), mb.job)
    out += _tokens_style("perf_heldout55", h55.cases(), h55.rows(), h55.job)
    out += _tokens_style("perf_heldout26", h26.automodel_cases(), h26.automodel_rows(), h26.automodel_job)
    out += _tokens_style("perf_heldout26", h26.mlperf_cases(), h26.mlperf_rows(), h26.mlperf_job)
    out += _tokens_style("perf_heldout26", h26.mlperf_nvidia_cases(), h26.mlperf_nvidia_rows(), h26.mlperf_nvidia_job)
    out += _tokens_style("perf_heldout27", h27.cases(), h27.rows(), mb.job)
    out += _tokens_style("perf_heldout27", h27.mlperf_cases(), h27.mlperf_rows(), h26.mlperf_nvidia_job)
    out += _tokens_style("perf_heldout29", h29.mbridge_cases(), h29.mbridge_rows(), mb.job)
    out += _tokens_style("perf_heldout29", h29.mlperf_cases(), h29.mlperf_rows(), m6.job)
    out += _tokens_style("perf_mlperf6", m6.cases(), m6.rows(), m6.job)
    out += _tokens_style("perf_heldout42", h42.cases(), h42.rows(), h42.job)
    out += _tokens_style("perf_heldout45", h45.mzoo_cases(), h45.mzoo_rows(), h45.mzoo_job)
    out += _tokens_style("perf_mbridge26", mb.cases(), mb.rows(), mb.job)
    out += _tokens_style("perf_hybrid", perf_hybrid.cases(), perf_hybrid.rows(), perf_hybrid.job)
    out += _tokens_style("perf_heldout33", h33.amd_cases(), h33.amd_rows(), h26.mlperf_job)
    out += _tokens_style("perf_heldout33", h33.nvidia_cases(), h33.nvidia_rows(), h26.mlperf_nvidia_job)
    out += _case_style("perf_heldout33", h33.finetune_cases(), h33.finetune_rows(), fh.job)
    out += _tokens_style("perf_heldout34", h34.krai_cases(), h34.krai_rows(), h34.krai_job)
    out += _tokens_style("perf_heldout34", h34.v50_amd_cases(), h34.v50_amd_rows(), h26.mlperf_job)
    out += _tokens_style("perf_heldout34", h34.v50_nvidia_cases(), h34.v50_nvidia_rows(), h26.mlperf_nvidia_job)
    out += _tokens_style("perf_heldout36", h36.cases(), h36.rows(), h36.job)
    out += _tokens_style("perf_heldout38", h38.cases(), h38.rows(), h38.job)
    out += _tokens_style("perf_heldout38", h38.recipe_cases(), h38.recipe_rows(), h38.recipe_job)
    out += _tokens_style("perf_heldout38", h38.guide_cases(), h38.guide_rows(), h38.recipe_job)
    out += _case_style("perf_amd", perf_amd.cases(), list(csv.DictReader(perf_amd.DATA.open(encoding="utf-8"))),
                       perf_amd.job)
    out += _case_style("perf_mlperf", perf_mlperf.cases(), perf_mlperf._rows(), perf_mlperf.job)
    out += _case_style("finetune_heldout", fh.cases(), fh.rows(), fh.job)
    out += _case_style("perf_device_hf", *perf_device_hf.cases(), fh.job)
    archs = h35.models()
    out += _case_style("perf_heldout35", h35.cases(), h35.rows(), lambda r: fh.job(r, archs))
    archs37 = h37.models()
    out += _case_style("perf_heldout37", h37.cases(), h37.rows(), lambda r: fh.job(r, archs37))
    archs40 = h40.models()
    out += _case_style("perf_heldout40", h40.fsdp_cases(), h40.fsdp_rows(), lambda r: fh.job(r, archs40))
    out += _case_style("perf_heldout41", h41.cases(), h41.rows(), h41.job)
    out += _case_style("perf_heldout43", h43.cases(), h43.rows(), h43.job)
    out += _case_style("perf_heldout44", h44.cases(), h44.rows(), h44.job)
    out += _case_style("perf_heldout46", h46.cases(), h46.rows(), h46.job)
    out += _case_style("perf_heldout47", h47.cases(), h47.rows(), h47.job)
    out += _case_style("perf_heldout50", h50.cases(), h50.rows(), h50.job)
    out += _case_style("perf_heldout52", h52.cases(), h52.rows(), h52.job)
    out += _case_style("perf_heldout56", h56.cases(), h56.rows(), h56.job)
    out += _case_style("perf_heldout58", h58.cases(), h58.rows(), h58.job)
    out += _case_style("perf_heldout59", h59.cases(), h59.rows(), h59.job)
    out += _case_style("perf_heldout61", h61.cases(), h61.rows(), h61.job)
    out += _case_style("perf_heldout64", h64.cases(), h64.rows(), h64.job)
    out += _heldout_style("perf_heldout64", h64.xtuner_run(), h64.xtuner_models())
    out += _case_style("perf_heldout66", h66.cases(), h66.rows(), h66.job)
    out += _case_style("perf_heldout79", h79.cases(), h79.rows(), h79.job)
    pf_rows = list(csv.DictReader(pf.DATA.open(encoding="utf-8")))
    out += _tokens_style("perf_finetune", [(rid, "", m, p) for rid, m, p in pf.cases()], pf_rows, pf.job)
    cat = load_catalog()
    out += [Row("perf_external", c.name, c.metric, c.published, pe.run_case(c, cat)[0], c.job) for c in pe.CASES]
    return out


def classify(rows: list[Row]) -> list[tuple[Row, tuple[str, ...]]]:
    """(row, its class keys finest first) for the rows with a quantity, each job resolved as a user's would be."""
    catalogs: dict[str, Any] = {}
    out = []
    for row in rows:
        if row.quantity is None:
            continue
        if row.overlay not in catalogs:
            catalogs[row.overlay] = load_catalog([DATA / row.overlay] if row.overlay else [])
        cat = catalogs[row.overlay]
        out.append((row, job_class_of(resolve_job(row.job, cat), cat).keys()))
    return out


def spread(err: np.ndarray) -> float:
    """The errors' spread about their median, as a fraction: the mean |(1 + e) / (1 + median) - 1|, i.e. the MAPE
    the class would show were every estimate of it divided by its common offset (1 + median). What two options of
    one class can differ by: they share the offset, so it cancels between them (plan.searched.tie_fraction_of).
    A mean absolute error, the same statistic as the MAPE and as search.yaml tie_fraction (the development set's
    MAPE, whose median is near 0), so a class with no offset has spread = MAPE; a ratio, not e - median, because
    the offset multiplies the estimate (a +60% class's +20% and +100% rows are 25% either side of it, not 40%)."""
    med = float(np.median(err))
    return float(np.mean(np.abs((1.0 + err) / (1.0 + med) - 1.0)))


def stats(rows: list[Row]) -> dict[str, Any]:
    """A class's band: n, MAPE, median signed error, spread about the median (`spread`), 10th / 90th percentile
    signed, 90th percentile of |error| (%), and its rows by benchmark."""
    raw = np.array([r.err for r in rows])
    e = 100.0 * raw
    by_bench: dict[str, int] = defaultdict(int)
    for r in rows:
        by_bench[r.benchmark] += 1

    def pct(x: float) -> float:
        return round(float(x), 1)

    return {"n": len(rows), "mape_pct": pct(np.mean(np.abs(e))), "median_pct": pct(np.median(e)),
            "spread_pct": pct(100.0 * spread(raw)),
            "signed_p10_pct": pct(np.percentile(e, 10)), "signed_p90_pct": pct(np.percentile(e, 90)),
            "abs_p90_pct": pct(np.percentile(np.abs(e), 90)), "sources": dict(sorted(by_bench.items()))}


def bands(classed: list[tuple[Row, tuple[str, ...]]]) -> dict[str, Any]:
    """{"bands": {quantity: {class: stats}}, "kind_rows": {quantity: {stack/kind: n}}}: every class at every level
    with at least MIN_ROWS rows, those holding the same rows as their parent too (the lookup matches the job's own
    class, and a coarser one only where the finer has too few rows: what the estimate's line says)."""
    out: dict[str, Any] = {"bands": {}, "kind_rows": {}}
    for q in QUANTITIES:
        groups: dict[str, list[Row]] = defaultdict(list)
        for row, keys in classed:
            if row.quantity == q:
                for key in keys:
                    groups[key].append(row)
        out["bands"][q] = {k: stats(v) for k, v in sorted(groups.items()) if len(v) >= MIN_ROWS}
        out["kind_rows"][q] = {k: len(v) for k, v in sorted(groups.items()) if k.count("/") == 1}
    return out


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


HEADER = """\
# Accuracy bands of the estimate per job class, measured on held-out published runs (nothing fitted on them).
# Written by benchmarks/accuracy_bands.py --write; do not edit by hand (tests/estimate/test_accuracy_bands.py
# checks, in a slow test, that these figures are what the benchmark computes now).
# The development set (perf_validation, perf_modern, perf_vtrain, perf_blackwell, memory_*) is not used: the
# estimate's constants were fitted on it. Signed errors in percent: time + = predicted too fast (tokens/s),
# memory + = predicted too large (peak); spread_pct = the errors' spread about their median (mean
# |(1 + e) / (1 + median) - 1|: what two jobs of one class can differ by, their common offset cancelled; the plan's
# ties read it). A class is stack/kind/gpu/scale (estimate/accuracy.py); only classes with
# at least min_rows rows are listed; kind_rows counts every scored row per stack family and model kind (the
# coarsest class: below min_rows there, a job gets no band).
"""


def document(computed: dict[str, Any]) -> dict[str, Any]:
    return {"made_on": {"commit": commit(), "date": datetime.now(UTC).date().isoformat()},
            "min_rows": MIN_ROWS, **computed}


def print_table(computed: dict[str, Any]) -> None:
    for q in QUANTITIES:
        print(f"\n{q} (signed %, + = predicted too {'fast' if q == 'time' else 'large'}); rows by stack/kind "
              f"{computed['kind_rows'][q]}")
        print(f"{'class':40s} {'n':>4s} {'MAPE':>6s} {'median':>7s} {'spread':>6s} {'p10':>7s} {'p90':>7s} "
              f"{'|e| p90':>8s}  sources")
        for key, s in computed["bands"][q].items():
            src = ", ".join(f"{b} {n}" for b, n in s["sources"].items())
            print(f"{key:40s} {s['n']:4d} {s['mape_pct']:6.1f} {s['median_pct']:+7.1f} {s['spread_pct']:6.1f} "
                  f"{s['signed_p10_pct']:+7.1f} {s['signed_p90_pct']:+7.1f} {s['abs_p90_pct']:8.1f}  {src}")


def class_rows(classed: list[tuple[Row, tuple[str, ...]]], key: str, quantity: str = "time") -> list[Row]:
    """The rows of class `key` (any level: "megatron/moe", "megatron/moe/blackwell/domain") for `quantity`, by
    signed error, most negative first: the rows `stats` summarises for that class."""
    return sorted((r for r, keys in classed if key in keys and r.quantity == quantity), key=lambda r: r.err)


FACTS = ("model", "part", "ep", "dispatcher", "path", "graphs", "a2a overlap", "precision", "experts", "release")


def release_of(row_id: str) -> str:
    """The series a held-out row id names (each benchmark's id form starts with it): the id's first field, with the
    second where that one starts with a digit (a release, round or date): mbridge_25.09_gb200_... -> mbridge_25.09,
    mlperf6.0_dell_gb300_... -> mlperf6.0, mbcard_2026-07_... -> mbcard_2026-07, mcore_moe_... -> mcore. A class's
    offset that one release carries shows here (docs/known-gaps.md 263 (a))."""
    fields = row_id.split("_")
    return "_".join(fields[:2]) if len(fields) > 1 and fields[1][:1].isdigit() else fields[0]


def row_facts(row: Row) -> dict[str, str]:
    """The job facts a class listing groups by: part, model, EP degree, MoE dispatcher, CUDA graphs
    (strategy.cuda_graphs) and EP all-to-all overlap (strategy.moe_a2a_overlap), '-' where the job states none, as
    the job is written; path = the dispatcher and, where the job pads every expert to capacity
    (strategy.moe_pad_to_capacity: Megatron-Core's token drop), "padded" after it: the alltoall dispatcher's two
    paths carry opposite offsets (docs/known-gaps.md 132 (a)); precision = the job's precision and, under FP8, its
    recipe (bf16, fp8/mxfp8, fp8/blockwise, ...); experts = how Megatron-Core runs the routed experts where the job says
    (strategy.moe_fused_grouped_mlp: "fused", TE's fused grouped MLP; "grouped", TEGroupedMLP; '-' unstated)
    (docs/known-gaps.md 319 (a)); release = the series the row id names (release_of)."""
    hw, st = row.job.get("hardware") or {}, row.job.get("strategy") or {}
    model = row.job.get("model")
    dispatcher = str(st.get("moe_dispatcher", "-"))
    return {"part": str(hw.get("accelerator", "-")),
            "model": model if isinstance(model, str) else _inline_model_name(model or {}),
            "ep": str(st.get("ep", 1)), "dispatcher": dispatcher,
            "path": dispatcher + (" padded" if st.get("moe_pad_to_capacity") else ""),
            "graphs": str(st.get("cuda_graphs", "-")), "a2a overlap": str(st.get("moe_a2a_overlap", "-")),
            "precision": _precision_of(row.job), "experts": _experts_of(st), "release": release_of(row.row_id)}


def _precision_of(job: dict[str, Any]) -> str:
    """A job's precision as written, with its FP8 recipe under FP8 (fp8/mxfp8); '-' where it states none."""
    precision = str(job.get("precision", "-"))
    return f"{precision}/{job['fp8_recipe']}" if precision == "fp8" and job.get("fp8_recipe") else precision


def _experts_of(strategy: dict[str, Any]) -> str:
    """The routed experts' path a job states: "fused" (strategy.moe_fused_grouped_mlp true), "grouped" (false), '-'."""
    fused = strategy.get("moe_fused_grouped_mlp")
    return "-" if fused is None else ("fused" if fused else "grouped")


def step_parts(row: Row, catalog) -> dict[str, float] | None:
    """The estimate's step of the row's job on `catalog` (step_time_arrays, whose step the benchmarks' tokens/s come
    from): step seconds, micro-batches, the decoder layers one pipeline stage runs, the exposed EP all-to-all
    seconds, the host's excess over the GPU inside the compute (host_excess: the per-layer host floor, Megatron-Core's
    dropless MoE sync), and the MoE layer as the job resolves it (moe_parts). None where the job does not resolve or
    the time model refuses it (a listing's partial job)."""
    try:
        sc = resolve_job(row.job, catalog)
        out = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
    except (TrainsizerError, KeyError, TypeError, ValueError):
        return None

    def first(key: str) -> float:
        return float(np.asarray(out[key]).reshape(-1)[0])

    return {"step_s": first("step_s"), "micro_batches": first("micro_batches"), "ep_s": first("ep_comm"),
            "host_s": first("host_excess"),
            "layers": sc.model.layers / max(int(getattr(sc.strategy, "pp", 1) or 1), 1)} | moe_parts(sc) | {
        "ep_domains": first("ep_domains")} | layout_parts(sc)


def layout_parts(sc) -> dict[str, float]:
    """A resolved job's parallel degrees (TP, PP, CP, DP) as the estimate runs them: what a dense class's listing
    groups by (resolved_facts), the data-parallel degree derived where the job leaves it to the GPU count."""
    st = sc.strategy
    return {k: float(getattr(st, k, 1) or 1) for k in ("tp", "pp", "cp", "dp")}


def moe_parts(sc) -> dict[str, float]:
    """A resolved job's MoE layer: local routed experts a GPU holds (experts / EP) and routed tokens one expert runs
    a micro-batch on one GPU at balanced routing (the micro-batch's tokens x top-k / experts: what each grouped-GEMM
    member multiplies, the EP group gathering every rank's share). Zeros for a dense model. The scale-up domains the
    EP group spans are the estimate's own (step_time_arrays' ep_domains, step_parts)."""
    model, st = sc.model, sc.strategy
    experts = float(getattr(model, "experts", 0) or 0)
    if experts <= 0:
        return {"local_experts": 0.0, "tokens_per_expert": 0.0}
    ep = float(getattr(st, "ep", 1) or 1)
    tokens = float(sc.training.seq_len) * float(getattr(st, "micro_batch", 1) or 1) / float(getattr(st, "cp", 1) or 1)
    topk = float(getattr(model, "experts_per_token", 1) or 1)
    return {"local_experts": max(experts / ep, 1.0), "tokens_per_expert": tokens * topk / experts}


def missing_ms_per_layer(row: Row, parts: dict[str, float]) -> float:
    """Measured minus predicted step time per decoder layer and micro-batch, ms (+ = the run took longer): the
    predicted step times the row's signed error (the measured step is the predicted one x (1 + err) for a rate and
    for a duration alike), over the micro-batches and one pipeline stage's layers. What a row misses in these units
    says what kind of cost it is: a per-layer cost (host issue, a sync's latency) stays about constant across the
    tokens a micro-batch runs, a bandwidth or FLOP cost grows with them (docs/known-gaps.md 157 (a))."""
    return 1e3 * parts["step_s"] * row.err / (parts["micro_batches"] * parts["layers"])


def missing_ms_per_step(row: Row, parts: dict[str, float]) -> float:
    """Measured minus predicted step time, ms (+ = the run took longer): missing_ms_per_layer before the division.
    A cost paid once a step (a host sync's refill, the step's own Python) is about the same number of ms on every
    row of one stack that pays it, whatever the micro-batch count; a per-micro-batch cost grows with that count
    (docs/known-gaps.md 290 (a))."""
    return 1e3 * parts["step_s"] * row.err


def group_summary(rows: list[Row], fact: str) -> list[tuple[str, int, float, float]]:
    """(value of `fact`, rows, median signed error %, MAPE %) per value among `rows`, most rows first: which part,
    model, EP degree, dispatcher or dispatch path carries a class's offset."""
    groups: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        groups[row_facts(row)[fact]].append(100.0 * row.err)
    out = [(k, len(v), float(np.median(v)), float(np.mean(np.abs(v)))) for k, v in groups.items()]
    return sorted(out, key=lambda g: (-g[1], g[0]))


def row_line(row: Row, parts: dict[str, float] | None = None) -> str:
    """One row of a class listing: its error, source, id, part and GPUs, model, EP degree and MoE dispatcher (the
    job as written; '-' where it states none); with the estimate's step `parts` (step_parts), the time the row misses
    per layer and micro-batch and the step's exposed EP share; a memory row, the GiB a GPU it misses (measured less
    predicted) and what its figure counts (Row.figure)."""
    f, count = row_facts(row), (row.job.get("hardware") or {}).get("count", "-")
    line = (f"{100 * row.err:+7.1f}  {row.benchmark:18s} {row.row_id:58s} {f['part']:>14s} {count!s:>5s}  "
            f"{f['model']:26s} ep {f['ep']:>3s}  {f['dispatcher']}")
    if row.quantity == "memory":
        line += f"  miss {row.measured - row.predicted:+6.1f} GiB  {row.figure}"
    if parts:
        line += (f"  miss {missing_ms_per_layer(row, parts):+6.2f} ms/layer-mb"
                 f"  ep {100 * parts['ep_s'] / parts['step_s']:4.1f}% of step"
                 f"  host {100 * parts.get('host_s', 0.0) / parts['step_s']:4.1f}%")
        if parts.get("local_experts"):
            line += (f"  {parts['local_experts']:.0f} experts x {parts['tokens_per_expert']:.0f} tok"
                     f"  EP over {parts['ep_domains']:.0f} dom")
    return line


HOST_BINS = (0.05, 0.20, 0.35)  # the host excess's share of the predicted step: where a listing splits its rows
MICRO_BATCH_BINS = (2.0, 5.0, 16.0)  # micro-batches a step: one, 2-4, 5-15, 16 and more (a once-a-step cost's weight)
DP_BINS = (8.0, 64.0, 512.0)  # data-parallel ranks
TOKEN_BINS = (256.0, 1024.0, 4096.0)  # routed tokens one expert runs a micro-batch


def _bin(value: float, edges: tuple[float, ...], fmt: str) -> str:
    lo = [e for e in edges if e <= value]
    hi = [e for e in edges if e > value]
    if not lo:
        return "<" + fmt.format(hi[0])
    return ">=" + fmt.format(lo[-1]) if not hi else fmt.format(lo[-1]) + "-" + fmt.format(hi[0])


def resolved_facts(row: Row, parts: dict[str, float]) -> dict[str, str]:
    """The facts a listing groups by that need the resolved job and its step (step_parts): the host excess's share
    of the step (HOST_BINS), that share with the EP all-to-all overlap (moe_a2a_overlap: under Megatron-Core's
    combined 1F1B the paired micro-batch's kernels are issued behind the same sync), local experts, routed tokens an
    expert runs (TOKEN_BINS) and the NVLink domains the EP group spans; the micro-batches a step (MICRO_BATCH_BINS),
    alone and with the job's CUDA graphs (a full-iteration graph replays the step's host work, docs/known-gaps.md
    290 (a)), the TP / PP / CP layout and the data-parallel degree (DP_BINS)."""
    host = _bin(parts.get("host_s", 0.0) / parts["step_s"], HOST_BINS, "{:.0%}")
    out = {"host share": host, "host share x a2a overlap": f"{host} {row_facts(row)['a2a overlap']}"}
    if "dp" in parts:
        mbs = _bin(parts["micro_batches"], MICRO_BATCH_BINS, "{:.0f}")
        out |= {"micro-batches": mbs, "micro-batches x graphs": f"{mbs} {row_facts(row)['graphs']}",
                "layout": "tp{:.0f} pp{:.0f} cp{:.0f}".format(parts["tp"], parts["pp"], parts["cp"]),
                "dp": _bin(parts["dp"], DP_BINS, "{:.0f}")}
    if parts.get("local_experts"):
        out |= {"local experts": f"{parts['local_experts']:.0f}",
                "tokens/expert": _bin(parts["tokens_per_expert"], TOKEN_BINS, "{:.0f}"),
                "ep domains": f"{parts['ep_domains']:.0f}"}
    return out


RESOLVED = ("host share", "host share x a2a overlap", "local experts", "tokens/expert", "ep domains", "micro-batches",
            "micro-batches x graphs", "layout", "dp")


def resolved_summary(rows: list[Row], parts: list[dict[str, float] | None], fact: str) -> list[tuple[str, int, float,
                                                                                                      float]]:
    """group_summary over a resolved fact (resolved_facts), the rows with a step only."""
    groups: dict[str, list[float]] = defaultdict(list)
    for row, p in zip(rows, parts, strict=True):
        if p and fact in (f := resolved_facts(row, p)):
            groups[f[fact]].append(100.0 * row.err)
    out = [(k, len(v), float(np.median(v)), float(np.mean(np.abs(v)))) for k, v in groups.items()]
    return sorted(out, key=lambda g: (-g[1], g[0]))


def _inline_model_name(model: dict[str, Any]) -> str:
    """A short name for a job's inline model (a Hugging Face config.json or the estimator's own fields): its name,
    else its architecture with hidden size and layer count."""
    if model.get("name"):
        return str(model["name"])
    arch = (model.get("architectures") or ["inline"])[0]
    return f"{arch} h{model.get('hidden_size', model.get('hidden', '?'))} L{model.get('num_hidden_layers', model.get('layers', '?'))}"


def without_rows(rows: list[Row], without: tuple[tuple[str, str], ...],
                 parts: list[dict[str, float] | None] | None = None) -> list[Row]:
    """`rows` less those whose fact equals the value of any (fact, value) pair in `without`: a class with a row
    family set apart (--without model=gpt-oss-120b). A fact is a row_facts one or, given each row's step `parts`
    (step_parts, in the order of `rows`), a resolved one (resolved_facts: --without micro-batches=<2); a row with no
    step keeps its place under a resolved fact. A fact neither names is refused."""
    return [r for r, keep in zip(rows, kept(rows, without, parts), strict=True) if keep]


def kept(rows: list[Row], without: tuple[tuple[str, str], ...],
         parts: list[dict[str, float] | None] | None = None) -> list[bool]:
    """For each row, whether without_rows keeps it."""
    for fact, _ in without:
        if fact not in FACTS + RESOLVED:
            raise SystemExit(f"accuracy_bands --without: no fact {fact!r}; facts: " + ", ".join(FACTS + RESOLVED))
    steps = parts if parts is not None else [None] * len(rows)
    out = []
    for row, p in zip(rows, steps, strict=True):
        facts = row_facts(row) | (resolved_facts(row, p) if p else {})
        out.append(not any(facts.get(fact) == value for fact, value in without))
    return out


def parse_without(args: list[str]) -> tuple[tuple[str, str], ...]:
    """The (fact, value) pairs of every `--without FACT=VALUE` in `args`."""
    out = []
    for at, arg in enumerate(args):
        if arg == "--without":
            spec = args[at + 1] if at + 1 < len(args) else ""
            if "=" not in spec:
                raise SystemExit("accuracy_bands --without needs FACT=VALUE, e.g. --without model=gpt-oss-120b")
            fact, value = spec.split("=", 1)
            out.append((fact.strip(), value.strip()))
    return tuple(out)


def print_rows(classed: list[tuple[Row, tuple[str, ...]]], key: str,
               without: tuple[tuple[str, str], ...] = ()) -> None:
    """Print class `key`'s time and memory rows (row_line), less the row families in `without` (without_rows), and
    what the rows left give (n, median, MAPE); a class no row falls in is said, with the classes that hold rows."""
    known = sorted({k for _, keys in classed for k in keys})
    if key not in known:
        raise SystemExit(f"accuracy_bands --rows: no held-out row falls in class {key!r}; classes with rows: "
                         + ", ".join(known))
    for q in QUANTITIES:
        every = class_rows(classed, key, q)
        every_parts = [_row_parts(row) if q == "time" else None for row in every]
        keep = kept(every, without, every_parts)
        rows = [r for r, k in zip(every, keep, strict=True) if k]
        if rows:
            parts = [p for p, k in zip(every_parts, keep, strict=True) if k]
            less = "".join(f" without {f}={v}" for f, v in without)
            print(f"\n{key}: {len(rows)} {q} rows{less} (signed %, + = predicted too "
                  f"{'fast' if q == 'time' else 'large'}; {len(every) - len(rows)} left out)")
            for row, p in zip(rows, parts, strict=True):
                print(row_line(row, p))
            e = 100.0 * np.array([r.err for r in rows])
            print(f"  all: n={len(rows)} median {np.median(e):+.1f} MAPE {np.mean(np.abs(e)):.1f}")
            for fact in FACTS:
                print(f"  by {fact}: " + "; ".join(f"{k} n={n} median {med:+.1f} MAPE {m:.1f}"
                                                  for k, n, med, m in group_summary(rows, fact)))
            if q == "memory":
                print("  by figure: " + "; ".join(f"{k} n={n} median {med:+.1f} MAPE {m:.1f} miss {g:+.1f} GiB"
                                                 for k, n, med, m, g in figure_summary(rows)))
            for fact in RESOLVED if q == "time" else ():
                groups = resolved_summary(rows, parts, fact)
                if groups:
                    print(f"  by {fact}: " + "; ".join(f"{k} n={n} median {med:+.1f} MAPE {m:.1f}"
                                                      for k, n, med, m in groups))
            steps = step_miss_summary(rows, parts)
            if steps:
                print("  missed ms a step, median by micro-batches x graphs: "
                      + ", ".join(f"{k} {v:+.0f} (n={n})" for k, n, v in steps))
            misses = {id(r): missing_ms_per_layer(r, p) for r, p in zip(rows, parts, strict=True) if p}
            if misses:
                print("  missed ms per layer and micro-batch, median by " + "; by ".join(
                    f"{fact}: " + ", ".join(f"{k} {v:+.2f}" for k, v in miss_summary(rows, misses, fact))
                    for fact in FACTS))


def figure_summary(rows: list[Row]) -> list[tuple[str, int, float, float, float]]:
    """(what the figure counts, rows, median signed error %, MAPE %, median GiB missed a GPU) per Row.figure among
    memory `rows`, most rows first: whether a class's memory offset sits in live tensors or in what the allocator or
    the device holds beyond them (docs/known-gaps.md 292 (a))."""
    groups: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        groups[row.figure].append(row)
    out = [(k, len(v), 100.0 * float(np.median([r.err for r in v])), 100.0 * float(np.mean([abs(r.err) for r in v])),
            float(np.median([r.measured - r.predicted for r in v]))) for k, v in groups.items()]
    return sorted(out, key=lambda g: (-g[1], g[0]))


_CATALOGS: dict[str, Any] = {}


def _row_parts(row: Row) -> dict[str, float] | None:
    """step_parts on the row's catalog (its overlay where it has one), each catalog loaded once."""
    if row.overlay not in _CATALOGS:
        _CATALOGS[row.overlay] = load_catalog([DATA / row.overlay] if row.overlay else [])
    return step_parts(row, _CATALOGS[row.overlay])


def step_miss_summary(rows: list[Row], parts: list[dict[str, float] | None]) -> list[tuple[str, int, float]]:
    """(micro-batches x graphs bin, rows, median missed ms a step: missing_ms_per_step) over the rows with a
    resolved layout, most rows first: a cost paid once a step reads as the same ms in every bin that pays it."""
    groups: dict[str, list[float]] = defaultdict(list)
    for row, p in zip(rows, parts, strict=True):
        if p and "dp" in p:
            groups[resolved_facts(row, p)["micro-batches x graphs"]].append(missing_ms_per_step(row, p))
    return [(k, len(v), float(np.median(v))) for k, v in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0]))]


def miss_summary(rows: list[Row], misses: dict[int, float], fact: str) -> list[tuple[str, float]]:
    """(value of `fact`, median missed ms per layer and micro-batch) over the rows with a step (`misses` by id(row)),
    most rows first."""
    groups: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        if id(row) in misses:
            groups[row_facts(row)[fact]].append(misses[id(row)])
    return [(k, float(np.median(v))) for k, v in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0]))]


def compute() -> dict[str, Any]:
    return bands(classify(collect()))


def main() -> None:
    args = sys.argv[1:]
    if "--rows" in args:
        at = args.index("--rows")
        if at + 1 >= len(args):
            raise SystemExit("accuracy_bands --rows needs a class, e.g. --rows megatron/moe/blackwell/domain")
        print_rows(classify(collect()), args[at + 1], parse_without(args))
        return
    computed = compute()
    print_table(computed)
    if "--write" in sys.argv[1:]:
        OUT.write_text(HEADER + yaml.safe_dump(document(computed), sort_keys=False, allow_unicode=True),
                       encoding="utf-8")
        print(f"\nwrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
