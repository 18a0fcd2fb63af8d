"""What the estimate still misses on transformers' eager MoE rows, per decoder layer and micro-batch, against what
the candidate mechanisms would scale with (docs/known-gaps.md 273): a diagnostic, nothing fitted, no estimate change.

The rows: every held-out time row (accuracy_bands.collect: the benchmarks' own rows and predictions) whose job runs
an MoE model under the hf style with transformers' per-expert loop (experts_implementation eager): perf_heldout31's
DeepCompile Mixtral-8x7B rows (32 H100, FSDP1 and ZeRO-3), perf_heldout61's fms-acceleration Mixtral LoRA / QLoRA rows
(1-2 A100, FSDP1 on 2) and perf_heldout66's Mixtral full fine-tune (8 A100, FSDP1) and granite-3.0-3b-a800m rows. Each
row's miss in ms a layer and micro-batch (accuracy_bands.missing_ms_per_layer: measured less predicted step over the
micro-batches and layers), beside the tokens a micro-batch, the estimate's exposed data-parallel seconds a layer and
micro-batch (its FSDP1 / ZeRO-3 gathers and reduce-scatters) and the same for the row's dense twin where its source
has one (the same layout, GPUs and method with the dense model: Mistral-7B for perf_heldout61, whose attention has
Mixtral's widths; Llama-3-70B for perf_heldout31).

Printed: the rows; per source and engine, the miss's least-squares line against the tokens a micro-batch and against
the exposed data-parallel seconds (a cost that grows with the tokens is a rate, one that grows with the gathered bytes
a link, one flat in both a per-layer cost: host issue, latencies, a sync's drain); the miss less the dense twin's (what
is MoE's own); and the file's ScatterMoE expert-parallel Mixtral rows (refused: no estimate path), whose measured
seconds a layer and micro-batch bound what that host spends on a Mixtral layer with neither the eager loop nor the
experts' FSDP1 gathers.

Run: python benchmarks/hf_moe_residual.py   (about half a minute: it runs the held-out benchmarks' rows)
"""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import numpy as np

from accuracy_bands import Row, collect, missing_ms_per_layer, step_parts
from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError
from trainsizer.estimate import host_sync, step_time
from trainsizer.estimate.calibration import load_constants
from trainsizer.scenario import resolve_job

DATA = Path(__file__).resolve().parent / "data"
FMS_MOE = DATA / "heldout_2027n_fms_moe.csv"
# a MoE row's dense twin: the same source's row id with the dense model's name in place of the MoE model's
TWIN_NAMES = (("mixtral_", "mistral7b_"), ("mixtral-8x7b", "llama3-70b"))
STEPS, LAYERS = 100, 32  # fms-acceleration's MoE scenario: max_steps 100; Mixtral-8x7B's decoder layers
HOST_FACTORS = (1.0, 1.5, 2.0, 3.0)  # what-if: the host's time a kernel and a layer pass at these multiples


def engine(job: dict) -> str:
    """fsdp1 / fsdp2 / zero3 / none: how the row's job shards (the hf style's FSDP is accelerate's FSDP1 unless the
    job states fsdp_version 2)."""
    st = job.get("strategy", {})
    if st.get("fsdp") not in (None, "none"):
        return f"fsdp{int(st.get('fsdp_version') or 1)}"
    return "zero3" if int(st.get("zero", 0) or 0) >= 3 else "none"


def row_figures(row: Row, catalog) -> dict[str, float] | None:
    """The row's miss (ms a layer and micro-batch), tokens a micro-batch on one GPU and the estimate's exposed
    data-parallel ms a layer and micro-batch; None where the job does not resolve."""
    parts = step_parts(row, catalog)
    if parts is None:
        return None
    sc = resolve_job(row.job, catalog)
    out = step_time.step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
    per = 1e3 / (parts["micro_batches"] * parts["layers"])
    # the positions one micro-batch runs on one GPU, padding included, as the step time counts them (its _Step)
    x = step_time._step(sc.model, sc.training, sc.system, sc.strategy, None, None, None)
    tokens = float(np.asarray(x.tok).reshape(-1)[0])
    return {"miss_ms": missing_ms_per_layer(row, parts), "tokens": tokens,
            "dp_ms": float(np.asarray(out["dp_comm"]).reshape(-1)[0]) * per, "err": 100.0 * row.err,
            "gpus": float(sc.system.gpus), "is_moe": float(sc.model.is_moe),
            "loop": float(str(getattr(sc.strategy, "experts_implementation", "") or "") == "eager")}


def hf_rows(rows: list[Row], catalog) -> dict[str, tuple[Row, dict[str, float]]]:
    """Time rows of the hf style, by id, with their figures (MoE and dense alike: the twins come from these)."""
    out = {}
    for row in rows:
        if row.metric == "peak" or row.job.get("strategy", {}).get("framework") != "hf":
            continue
        try:
            fig = row_figures(row, catalog)
        except (TrainsizerError, KeyError, TypeError, ValueError):
            fig = None
        if fig is not None:
            out[row.row_id] = (row, fig)
    return out


def twin_of(row_id: str, have: dict) -> str | None:
    """The id of a MoE row's dense twin among `have`, or None."""
    for moe, dense in TWIN_NAMES:
        twin = row_id.replace(moe, dense)
        if twin != row_id and twin in have:
            return twin
    return None


def line_fit(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """(intercept, slope, R^2) of y = a + b x by least squares; slope and R^2 0 where x does not vary."""
    if len(x) < 3 or float(np.ptp(x)) == 0.0:
        return float(np.mean(y)), 0.0, 0.0
    b, a = np.polyfit(x, y, 1)
    resid = y - (a + b * x)
    total = float(np.sum((y - y.mean()) ** 2))
    return float(a), float(b), 1.0 - float(np.sum(resid**2)) / total if total > 0 else 0.0


def scattermoe_floor() -> list[tuple[str, float]]:
    """(row, measured ms a layer and micro-batch) of the file's refused ScatterMoE expert-parallel Mixtral rows:
    train_runtime over the 100 steps of 16 micro-batches of one sample, over 32 layers."""
    rows = csv.DictReader(line for line in FMS_MOE.open() if not line.startswith("#"))
    return [(r["id"], 1e3 * float(r["train_runtime_s"]) / (STEPS * 16 * LAYERS)) for r in rows
            if "mixtral" in r["id"] and r["refused"] and "-ep8" in r["framework_config"]]


def host_steps(jobs: list[dict], catalog, factors: tuple[float, ...] = HOST_FACTORS) -> list[list[float]]:
    """Each job's estimated step seconds with the host's time a kernel (host_sync launch_bound_op_s, NVIDIA's) and a
    layer pass (perf_constants.yaml host_s_per_layer_pass) both at each of `factors` times the shipped figures: a host
    that many times slower than the one the figures were read on (a what-if; the shipped figures are restored)."""
    k0, table = load_constants(), host_sync.HOST_SYNC["launch_bound_op_s"]
    op0 = table["nvidia"]
    out: list[list[float]] = [[] for _ in jobs]
    try:
        for f in factors:
            table["nvidia"] = op0 * f
            k = dataclasses.replace(k0, host_s_per_layer_pass=k0.host_s_per_layer_pass * f)
            for steps, job in zip(out, jobs, strict=True):
                sc = resolve_job(job, catalog)
                steps.append(float(np.asarray(step_time.step_time_arrays(sc.model, sc.training, sc.system, sc.strategy,
                                                                         constants=k)["step_s"]).reshape(-1)[0]))
    finally:
        table["nvidia"] = op0
    return out


def host_whatif(rows: list[tuple[Row, dict[str, float]]], catalog) -> dict[str, list[float]]:
    """Signed errors % of `rows` with the host at each of HOST_FACTORS times the shipped figures (host_steps). A
    what-if, not applied: each row's step at the factor over its step as shipped scales its error ((1 + e) x step /
    step_f - 1 for a rate and a duration alike)."""
    steps = host_steps([row.job for row, _fig in rows], catalog)
    return {row.row_id: [100.0 * ((1.0 + fig["err"] / 100.0) * s[0] / x - 1.0) for x in s]
            for (row, fig), s in zip(rows, steps, strict=True)}


def main() -> None:
    catalog = load_catalog()
    have = hf_rows(collect(), catalog)
    moe = {rid: v for rid, v in have.items() if v[1]["is_moe"] and v[1]["loop"]}
    print("hf-style MoE rows with transformers' per-expert loop: miss a layer and micro-batch (measured less predicted "
          "step, + = the run took longer), tokens a micro-batch, the estimate's exposed data-parallel ms a layer and "
          "micro-batch; the dense twin's miss where the source has one")
    print(f"  {'row':58s} {'engine':6s} {'GPUs':>4s} {'tokens':>7s} {'err %':>7s} {'miss ms':>8s} {'dp ms':>7s}"
          f" {'twin miss':>9s} {'MoE own':>8s}")
    groups: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    for rid, (row, f) in sorted(moe.items(), key=lambda kv: (kv[1][0].benchmark, kv[0])):
        twin = twin_of(rid, have)
        t_miss = have[twin][1]["miss_ms"] if twin else float("nan")
        eng = engine(row.job)
        print(f"  {rid:58s} {eng:6s} {f['gpus']:4.0f} {f['tokens']:7.0f} {f['err']:+7.1f} {f['miss_ms']:+8.2f}"
              f" {f['dp_ms']:7.2f} {t_miss:+9.2f} {f['miss_ms'] - t_miss:+8.2f}")
        groups.setdefault((row.benchmark, eng), []).append((f["tokens"], f["dp_ms"], f["miss_ms"]))
    print("\nper source and engine: the miss (ms a layer and micro-batch) as a + b x over the tokens a micro-batch "
          "(b per 1,000 tokens) and over the exposed data-parallel ms (b per ms); R^2")
    for (bench, eng), vals in sorted(groups.items()):
        arr = np.asarray(vals)
        a_t, b_t, r_t = line_fit(arr[:, 0] / 1e3, arr[:, 2])
        a_d, b_d, r_d = line_fit(arr[:, 1], arr[:, 2])
        print(f"  {bench:15s} {eng:6s} n={len(arr):2d}  miss {np.min(arr[:, 2]):+6.2f}..{np.max(arr[:, 2]):+6.2f}  "
              f"tokens: {a_t:+6.2f} {b_t:+6.3f} R2 {r_t:4.2f}  dp: {a_d:+6.2f} {b_d:+6.3f} R2 {r_d:4.2f}")
    sources = ("perf_heldout31", "perf_heldout61", "perf_heldout66")
    picked = [(row, f) for _, (row, f) in sorted(have.items()) if row.benchmark in sources
              and row.row_id.startswith(("fmsacc", "fmsmoe_", "dc_"))]
    print("\nwhat-if, not applied: the fms-acceleration A100 rows and DeepCompile's H100 rows with the host's time a "
          "kernel and a layer pass at " + " / ".join(f"{f:g}x" for f in HOST_FACTORS) + " the shipped figures "
          "(signed error %)")
    errs = host_whatif(picked, catalog)
    for rid, es in errs.items():
        print(f"  {rid:58s} " + " ".join(f"{e:+7.1f}" for e in es))
    for bench in sources:
        for label, moe_row in (("MoE", True), ("dense", False)):
            sel = [errs[row.row_id] for row, f in picked if row.benchmark == bench and bool(f["is_moe"]) == moe_row]
            if sel:
                mape = np.mean(np.abs(np.asarray(sel)), axis=0)
                print(f"  {bench:15s} {label:5s} rows n={len(sel):2d} MAPE " + " / ".join(f"{m:.1f}" for m in mape))
    print("\nfms-acceleration's ScatterMoE expert-parallel Mixtral rows (refused, 9122a76; 8 A100, micro-batch 1): "
          "measured ms a layer and micro-batch, no eager loop and no expert gathers")
    for rid, ms in scattermoe_floor():
        print(f"  {rid:58s} {ms:6.2f}")


if __name__ == "__main__":
    main()
