"""What the throughput and memory benchmarks share: reading numbers and parallel degrees from the CSV rows,
the DGX H100 system, one compared row, and MAPE."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fabrics import ndr400
from trainsizer.errors import TrainsizerError
from trainsizer.estimate.inputs import System
from trainsizer.scenario import resolve_job


def num(x: str, default: float = 0.0) -> float:
    """A number from a CSV cell; blank or "NA" (not published) gives `default`, anything else must parse."""
    x = (x or "").strip()
    return default if x in ("", "NA") else float(x)


def source_label(r: dict[str, str]) -> str:
    """A row's source without its parenthesised detail (the per-source MAPE groups by it)."""
    return r["source"].split(" (")[0]


def whole(x: str, default: int = 0) -> int:
    return int(round(num(x, default)))


def degrees(row: dict[str, str]) -> tuple[int, int, int, int, int]:
    """(gpus, tp, pp, cp, dp) of a row; a blank TP/PP/CP is 1, a blank DP is what the GPUs leave."""
    gpus = whole(row["gpu_count"])
    tp, pp, cp = whole(row["tp"], 1) or 1, whole(row["pp"], 1) or 1, whole(row["cp"], 1) or 1
    return gpus, tp, pp, cp, whole(row["dp"]) or gpus // (tp * pp * cp)


def usable_gib(accelerator: str) -> float:
    """What a process gets on the catalog part (Accelerator.memory_gib: the driver-visible total where the catalog
    has a reading, catalog/data/accelerators.yaml memory_driver), the capacity the search and the plan check."""
    from trainsizer.catalog import load_catalog

    return float(load_catalog().accelerator(accelerator).memory_gib)


def dgx_h100(gpus: int) -> System:
    """DGX H100: 700 W SXM5 80 GB (79.2 GiB to CUDA), NVLink4 450 GB/s per direction, NVLS, 8 x NDR400 (50 GB/s per
    GPU)."""
    return System(accelerator="h100-sxm", gpus=gpus, gpus_per_node=8, memory_gib=usable_gib("h100-sxm-80gb"),
                  peak_tflops={"bf16": 989.0, "fp16": 989.0, "fp8": 1979.0, "tf32": 494.0},
                  hbm_gb_s=3350.0, intra_node_gb_s=450.0, scaleup_domain=8, nvls=True, inter_node_gb_s=ndr400(),
                  tdp_w=700.0)


@dataclass
class Case:
    """One published figure and the estimate of it; `skipped` says why a row is not scored."""

    row_id: str
    source: str
    metric: str
    measured: float
    predicted: float = math.nan
    skipped: str = ""

    @property
    def err(self) -> float:
        return (self.predicted - self.measured) / self.measured


def mape(cases: list[Case]) -> float:
    """Mean absolute percentage error over the scored (not skipped) cases."""
    errs = [abs(c.err) for c in cases if not c.skipped]
    return 100.0 * float(np.mean(errs)) if errs else math.nan


@dataclass
class Fit:
    """The memory estimate of one measured run: predicted worst-GPU peak against the card's usable memory, through
    `memory_per_gpu_bytes` (the function the search and the plan use to accept or refuse a layout)."""

    row_id: str
    predicted_gib: float
    usable_gib: float
    fits: bool


def fit_of(row_id: str, model, training, system, strategy, options=None) -> Fit:
    """`options`: the run's memory.MemoryOptions where they are not the defaults (e.g. dropout masks)."""
    from trainsizer.estimate.memory import DEFAULT_OPTIONS, GIB, memory_per_gpu_bytes

    worst, ok = memory_per_gpu_bytes(model, training, system, strategy, options or DEFAULT_OPTIONS)
    return Fit(row_id, float(np.asarray(worst).reshape(-1)[0]) / GIB, float(system.memory_gib),
               bool(np.asarray(ok).reshape(-1)[0]))


def job_fits(jobs) -> list[Fit]:
    """Peak memory against the card's usable memory for (row id, job dict) pairs, each resolved on the built-in
    catalog as a user's job file would be (every row ran on real hardware)."""
    from trainsizer.catalog import load_catalog
    from trainsizer.scenario import resolve_job

    cat = load_catalog()
    out = []
    for row_id, job in jobs:
        sc = resolve_job(job, cat)
        out.append(fit_of(row_id, sc.model, sc.training, sc.system, sc.strategy))
    return out


def job_tokens_per_gpu(jobs, constants=None) -> list[tuple[str, float]]:
    """Predicted training tokens/s per GPU for (row id, job dict) pairs, each resolved on the built-in catalog as a
    user's job file would be: the tokens of one step over its step time, per GPU. `constants`: a PerfConstants to
    time with instead of the shipped ones (a diagnostic's counterfactual; None = perf_constants.yaml)."""
    import numpy as np

    from trainsizer.catalog import load_catalog
    from trainsizer.estimate.step_time import step_time_arrays
    from trainsizer.scenario import resolve_job

    cat = load_catalog()
    out = []
    for row_id, job in jobs:
        sc = resolve_job(job, cat)
        arrays = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy, constants=constants)
        step_s = float(np.asarray(arrays["step_s"]).reshape(-1)[0])
        out.append((row_id, sc.training.tokens_per_step / step_s / sc.system.gpus))
    return out


def layout_stage_layers(layout: str, pp: int) -> dict[str, int]:
    """A Megatron-Core pipeline_model_parallel_layout (megatron/core/transformer/pipeline_parallel_layer_layout.py:
    `|` between model chunks, E embedding, t decoder layer, m MTP, L loss, `X*n` / `(...)*n` repeats, `,` a
    separator) as the job fields that state it: the first and the last pipeline rank's decoder layers, all their
    chunks together (chunk c on rank c mod pp, the interleaved order). Refused where the middle ranks differ (the
    job states the ends only)."""
    flat = layout.replace(",", "").replace(" ", "")
    while "(" in flat:
        flat = re.sub(r"\(([^()]*)\)\*(\d+)", lambda g: g.group(1) * int(g.group(2)), flat)
    flat = re.sub(r"([EtmL])\*(\d+)", lambda g: g.group(1) * int(g.group(2)), flat)
    chunks = flat.split("|")
    if len(chunks) % pp:
        raise ValueError(f"layout {layout!r}: {len(chunks)} chunks do not split over pp {pp}")
    ranks = [sum(c.count("t") for c in chunks[r::pp]) for r in range(pp)]
    if len(set(ranks[1:-1])) > 1:
        raise ValueError(f"layout {layout!r}: middle ranks hold {ranks[1:-1]} layers, not one count")
    return {"pp_first_stage_layers": ranks[0], "pp_last_stage_layers": ranks[-1]} if pp > 1 else {}


def pretrain_job(r: dict, model, precision: str, recipe, acc: str, net, strategy: dict) -> dict:
    """A pre-training job file for one published table row (a csv row with seq_len, global_batch_seqs, gpu_count):
    the tokens do not matter to a throughput row, so 1e9."""
    return {
        "model": model, "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": int(r["seq_len"]),
        "global_batch": {"sequences": int(r["global_batch_seqs"])}, "precision": precision, "fp8_recipe": recipe,
        "hardware": {"accelerator": acc, "count": int(r["gpu_count"]), "network": net},
        "strategy": strategy,
    }


def row_cases(rows: list[dict], job, key: str = "system",
              measured: str = "tokens_per_sec_per_gpu") -> list[tuple[str, str, float, float]]:
    """(row id, row[key], measured, predicted tokens/s/GPU) for csv rows with id, `key` and the `measured` column."""
    predicted = job_tokens_per_gpu((r["id"], job(r)) for r in rows)
    return [(r["id"], r[key], float(r[measured]), p) for r, (_, p) in zip(rows, predicted, strict=True)]


def gpus_system(gpus: int, accelerator: str, network: str, catalog):
    """A System of `gpus` GPUs through the public job path, for benchmarks that time one collective (the model and
    batch only make the job valid)."""
    job = {"model": "llama-3.1-8b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
           "global_batch": {"sequences": gpus}, "precision": "bf16",
           "hardware": {"accelerator": accelerator, "count": gpus, "network": network},
           "strategy": {"tp": 1, "pp": 1}}
    return resolve_job(job, catalog).system


def print_cases(cs: list[tuple[str, str, float, float]], blank_line: bool = False) -> np.ndarray:
    """Print each (row id, key, measured, predicted) case with its signed error; return |predicted - measured| /
    measured per case, for the caller's MAPE."""
    if blank_line:
        print()
    print(f"{'row':56s} {'measured':>9s} {'predicted':>9s} {'err%':>7s}")
    for rid, _, m, p in cs:
        print(f"{rid:56s} {m:9.0f} {p:9.0f} {100 * (p - m) / m:+7.1f}")
    return np.array([abs(p - m) / m for _, _, m, p in cs])


def print_case_rows(cs: list[Case], id_width: int, value_fmt: str) -> None:
    """Print each Case a line: its row id and metric, then REFUSED with the reason, or measured, predicted and the
    signed error (values in `value_fmt`, e.g. "9.1f")."""
    for c in cs:
        if c.skipped:
            print(f"  {c.row_id:{id_width}s} {c.metric:9s} REFUSED: {c.skipped}")
        else:
            print(f"  {c.row_id:{id_width}s} {c.metric:9s} measured {c.measured:{value_fmt}} "
                  f"predicted {c.predicted:{value_fmt}} ({100 * c.err:+.1f}%)")


def refusals_said(rows: list[dict[str, str]], row_cases, source_of) -> list[Case]:
    """Every row's Cases (row_cases(row) -> list[Case]); a row whose job the estimate refuses (TrainsizerError) is
    one "refused" Case under source_of(row), with the first line of the reason, said and not raised."""
    out: list[Case] = []
    for r in rows:
        try:
            out.extend(row_cases(r))
        except TrainsizerError as e:
            out.append(Case(r["id"], source_of(r), "refused", 0.0, skipped=str(e).splitlines()[0][:120]))
    return out


def kept_rows(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """The rows of a held-out csv with an empty `refused` column: the ones estimated."""
    return [r for r in rows if not r["refused"]]


def refused_rows(rows: list[dict[str, str]]) -> list[tuple[str, str]]:
    """(row id, why it is not estimated) of the rows whose `refused` column says why."""
    return [(r["id"], r["refused"]) for r in rows if r["refused"]]


def scored(cs: list[Case], metric: str) -> list[Case]:
    """The Cases of `metric` that carry an estimate (not refused)."""
    return [c for c in cs if c.metric == metric and not c.skipped]


def twin_ratios(cs: list[Case], metric: str, twin_of) -> list[tuple[str, float, float]]:
    """(row, measured, predicted) figure of each scored row of `metric` over its twin's, the twin's id given by
    `twin_of(row id)` (None: the row has none): what one change between two measured runs moves, and the estimate."""
    got = {c.row_id: c for c in scored(cs, metric)}
    pairs = [(c, got.get(twin_of(rid) or "")) for rid, c in got.items()]
    return [(c.row_id, c.measured / t.measured, c.predicted / t.predicted) for c, t in pairs if t is not None]


def print_totals(name: str, cs: list[Case], metrics: tuple[str, ...] = ("samples_s", "peak_gib")) -> None:
    """The benchmark's closing line per figure: its scored rows' count, MAPE and median signed error."""
    for metric in metrics:
        g = scored(cs, metric)
        print(f"{name} {metric}: n={len(g)} MAPE {mape(g):.1f}% (median error "
              f"{100 * float(np.median([c.err for c in g])):+.1f}%)")


def print_fits(fits: list[Fit], what: str) -> None:
    """Every run in the set was trained on real hardware, so each must be predicted to fit: print the count and
    every run predicted not to (one line per run, not per metric)."""
    runs = {f.row_id: f for f in fits}
    refused = [f for f in runs.values() if not f.fits]
    print(f"\nmemory ({what}): {len(runs)} runs, {len(runs) - len(refused)} predicted to fit, "
          f"{len(refused)} refused")
    for f in sorted(refused, key=lambda f: -f.predicted_gib / f.usable_gib):
        print(f"  refused: {f.row_id} predicted {f.predicted_gib:.1f} GiB > {f.usable_gib:.1f} GiB usable")


def model_data(path: Path) -> dict[str, Any]:
    """The entries of a benchmark model file (benchmarks/data/*_models.yaml: {key: {source, model}}), each model
    checked as a job's inline model is (models.inline.arch_from_inline), and refused where it states no positions:
    an inline model without max_position reads 0 ("none stated"), which a job may leave out but benchmark data,
    read from the model's config.json or paper, must not (the sequence-past-positions note reads it)."""
    import yaml

    from trainsizer.models.inline import arch_from_inline

    entries = yaml.safe_load(path.read_text(encoding="utf-8"))
    for key, entry in entries.items():
        arch = arch_from_inline(entry["model"], where=f"{path.name}: {key}.model")
        if not arch.max_position:
            raise ValueError(f"{path.name}: {key}.model.max_position is 0 (not stated): give the positions the model "
                             f"was trained at, a whole number >= 1 (its config.json max_position_embeddings, or the "
                             f"sequence length its source states), and cite it in `source`")
    return entries
