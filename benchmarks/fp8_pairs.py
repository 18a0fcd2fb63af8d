"""What FP8 / MXFP8 / NVFP4 gains over the next-wider recipe at one layout, measured and modelled, in every source
that publishes both rows (docs/known-gaps.md 30).

A pair is two rows of one source that differ only in the precision recipe (BF16 -> FP8, FP8 current scaling ->
MXFP8, FP8 -> NVFP4): same model, GPUs, batch and parallel layout (rows whose layouts differ, such as dgxc's Llama
3.1 70B BF16 at CP 2 / PP 4 against FP8 at CP 1 / PP 8, are left out). The ratio of the two throughputs is what the
recipe buys, apart from how fast either row is. For each pair this prints the measured and predicted ratio, each
row's own throughput error where the source publishes the level (+ = predicted too fast: which side of the pair the
ratio error comes from), the model's split of the wider recipe's and the narrower recipe's step (linear-layer GEMMs,
attention core, HBM-bound passes, the rest: communication, bubble, LM head, optimizer, host), and the factor on the
narrower recipe's linear GEMM time that would close the ratio (1 = the model's; > 1: its low-precision GEMMs would
have to be slower). The split is the step less the step with that part at an unbounded rate (estimate.calibration
Calibration gemm_tflops / flash_tflops / hbm_gb_s): the GEMM part keeps its memory-bound share, and the HBM part
includes the GEMMs' memory side, so the parts overlap a little and need not add to 1.

Sources (rows and job files as their own benchmarks state them; nothing fitted here):
- development: NVIDIA dgxc NeMo 25.04 (H100, BF16 / FP8 delayed scaling) and torchtitan (H100, BF16 / torchao
  float8) from perf_modern.py; Megatron-Bridge 25.11 FP8-CS / FP8-MX from perf_blackwell.py.
- held out: perf_heldout.py (dgxc Nemotron-4, torchtitan 2025-06, OLMo-core); Megatron-Bridge 26.02, 26.02.01,
  26.04, 26.04.01 and 26.06 (perf_heldout26.py, perf_heldout27.py, perf_mbridge26.py: NVFP4 against MXFP8 or
  FP8-CS; MXFP8 against FP8-CS); Megatron-Bridge 26.06 SFT / LoRA FP8-CS / MXFP8 (finetune_heldout.py).
- printed apart (moe_pairs, held out): the MoE releases' FP8 / BF16 pairs with their dense twins, dgxc v24.11
  (perf_heldout62), v25.05 (perf_heldout34, perf_heldout77) and the MoE Parallel Folding paper (perf_heldout77), grouped
  by release, part and MoE / dense (docs/known-gaps.md 332 (a)); v25.05's Nemotron-4 (perf_heldout78) as dense twins.

Run: python benchmarks/fp8_pairs.py
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import yaml

import finetune_heldout as FT
import perf_blackwell as PB
import perf_heldout as PH
import perf_heldout26 as H26
import perf_heldout27 as H27
import perf_heldout34 as H34
import perf_heldout62 as H62
import perf_heldout77 as H77
import perf_heldout78 as H78
import perf_mbridge26 as MB26
import perf_modern as PM
from trainsizer.catalog import load_catalog
from trainsizer.estimate.calibration import Calibration
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.scenario import resolve_job

# a rate no part reaches: with it that part's time is ~0, so the step less that run is the part's time
_UNBOUNDED = 1e9


@dataclass
class Side:
    """One row of a pair: the scenario (model, training, system, strategy, perf style or None), its measured
    figure and whether that figure is a step time (a rate is its inverse); measured None where the source gives
    only the pair's ratio."""

    scenario: tuple
    measured: float | None
    step_metric: bool = False


@dataclass
class Pair:
    group: str
    row_id: str
    dev: bool
    wide: Side  # the wider recipe (BF16, or FP8 against MXFP8 / NVFP4)
    narrow: Side
    measured_ratio: float  # narrow over wide throughput


@dataclass
class Split:
    step: float
    gemm: float
    attention: float
    hbm: float
    rate: float  # predicted throughput in the measured figure's terms (1 / step for a step time)


def split(side: Side) -> Split:
    model, training, system, strategy, style = side.scenario

    def step(cal: Calibration | None = None) -> tuple[float, dict]:
        o = step_time_arrays(model, training, system, strategy, calibration=cal, framework_style=style)
        return float(np.asarray(o["step_s"]).reshape(-1)[0]), o

    full, _ = step()
    gemm = full - step(Calibration(gemm_tflops=_UNBOUNDED))[0]
    attention = full - step(Calibration(flash_tflops=_UNBOUNDED))[0]
    hbm = full - step(Calibration(hbm_gb_s=_UNBOUNDED))[0]
    rate = 1.0 / full if side.step_metric else training.tokens_per_step / full / system.gpus
    return Split(full, gemm, attention, hbm, rate)


def _sc(sc) -> tuple:
    return (sc.model, sc.training, sc.system, sc.strategy, None)


# ------------------------------------------------------------------------------------------------ sources
def dgxc_pairs() -> list[Pair]:
    """dgxc NeMo 25.04 step times (perf_modern): BF16 / FP8 twins at the same layout."""
    rows = [r for r in PM.modern_rows() if r["source"].startswith("NVIDIA/dgxc") and r["metric"] == "step_time"]
    by: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        by.setdefault((r["model"], r["gpu_count"]), {})[PM._precision(r)] = r
    layout = ("tp", "pp", "dp", "cp", "vpp", "micro_batch", "global_batch_seqs", "seq_len", "layers")
    out = []
    for d in by.values():
        b, f = d.get("bf16"), d.get("fp8")
        if not (b and f) or any(b[k] != f[k] for k in layout):
            continue
        sides = [Side(PM.configure(r)[:4] + (None,), float(r["value"]), step_metric=True) for r in (b, f)]
        out.append(Pair("dgxc NeMo 25.04 H100 FP8 / BF16", f["id"], True, *sides,
                        float(b["value"]) / float(f["value"])))
    return out


def torchtitan_pairs() -> list[Pair]:
    """torchtitan's tables (perf_modern): float8 rows against their bfloat16 twins."""
    rows = {r["id"]: r for r in PM.modern_rows() if r["source"].startswith("pytorch/torchtitan")
            and r["metric"] == "tokens_per_sec_per_gpu"}
    out = []
    for rid, r in rows.items():
        base = None
        if rid.startswith("torchtitan_asynctp_") and "float8" in rid:
            base = rid.replace("float8_tensorwise", "None__bfloat16_").replace("float8_rowwise", "None__bfloat16_")
        elif rid.endswith("_+_Float8"):
            base = rid[: -len("_+_Float8")]
        elif rid.endswith("_Float8"):
            base = rid[: -len("_Float8")] + "_None"
        if base not in rows:
            continue
        sides = []
        for x in (rows[base], r):
            model, training, system, strategy, _ = PM.configure(x)
            sides.append(Side((model, training, system, strategy, PM.torchtitan_style(x)), float(x["value"])))
        out.append(Pair("torchtitan H100 float8 / BF16", rid, True, *sides,
                        float(r["value"]) / float(rows[base]["value"])))
    return out


def _on_overlay(job_of) -> Callable[[dict], tuple]:
    """A row's scenario on its row's catalog overlay, each overlay's catalog loaded once."""
    catalogs: dict[str, Any] = {}

    def scenario(x: dict) -> tuple:
        overlay = x.get("overlay", "")
        if overlay not in catalogs:
            catalogs[overlay] = load_catalog([PH.DATA / overlay] if overlay else [])
        return _sc(resolve_job(job_of(x), catalogs[overlay]))
    return scenario


def _precision_twins(rows: list[dict], extra_key: Callable[[str], Any], same_metric: bool):
    """(bf16 row, fp8 row) of one source that differ only in the precision (PH.precision_pairs' rule: same model,
    GPUs, layout and accelerator; the strategy_extra equal once `extra_key` drops the FP8-only settings)."""
    keys = [k for k in PH.LAYOUT if k not in ("precision", "strategy_extra")] + ["accelerator", "source_key"]
    for r in rows:
        if r["precision"] != "fp8":
            continue
        for t in rows:
            if t["precision"] == "bf16" and (not same_metric or t["metric"] == r["metric"]) and \
                    all(r[k] == t[k] for k in keys) and extra_key(r["strategy_extra"]) == extra_key(t["strategy_extra"]):
                yield t, r


def heldout_pairs() -> list[Pair]:
    """perf_heldout: rows of one source that differ only in the precision (PH.precision_pairs' rule), each on its
    row's catalog overlay (torchtitan's 500 W H100 96 GB)."""
    models = yaml.safe_load(PH.MODELS.read_text(encoding="utf-8"))
    scenario = _on_overlay(lambda x: PH.job_of(x, models))
    rows = [r for r in PH.rows() if r["metric"] not in PH.MEMORY_METRICS]
    out = []
    for t, r in _precision_twins(rows, PH._without_fp8_extra, same_metric=True):
        step_metric = r["metric"] == "step_time_s"
        sides = [Side(scenario(x), float(x["value"]), step_metric) for x in (t, r)]
        out.append(Pair(f"{r['source_key']} FP8 / BF16", r["id"], False, *sides,
                        PH._rate(float(t["value"]), float(r["value"]), r["metric"])))
    return out


def batch_pairs(label: str, batch: PH.Batch) -> list[Pair]:
    """A held-out batch's rows that differ only in the precision (PH.precision_pairs' rule: same model, GPUs, layout,
    accelerator and source, the FP8-only settings aside), each on its row's catalog overlay, grouped by the source and
    whether the model routes experts: `label` then "MoE" or "dense" (docs/known-gaps.md 332)."""
    scenario = _on_overlay(batch.job)
    rows = [r for r in batch.rows() if r["metric"] not in PH.MEMORY_METRICS and not r.get("refused")]
    out = []
    for t, r in _precision_twins(rows, _recipe_free, same_metric=False):
        step_metric = r["metric"] == "step_time_s"
        # the MFU / TFLOP/s rows count model FLOPs the split's tokens/s does not: the pair's ratio only
        ratio_only = r["metric"] in H77.MOE_METRICS
        sides = [Side(scenario(x), None if ratio_only else float(x["value"]), step_metric) for x in (t, r)]
        kind = "MoE" if sides[0].scenario[0].is_moe else "dense"
        out.append(Pair(f"{label} {kind} FP8 / BF16", r["id"], False, *sides,
                        PH._rate(float(t["value"]), float(r["value"]), r["metric"])))
    return out


# settings a release's FP8 recipe sets beside the precision (each side's estimate states its own): NeMo 25.04's
# bf16_mixed reduces gradients in fp32 where its FP8 recipes do not (dgxc v25.05 GB200 Llama 3.1 405B), and v25.05's H100
# Maverick FP8 row runs per-layer CUDA graphs where its BF16 row does not (92 (a))
_RECIPE_EXTRA = PH.FP8_ONLY_EXTRA + ("grad_reduce_in_fp32", "cuda_graphs")


def _recipe_free(text: str) -> str:
    return ";".join(sorted(t for t in text.split(";") if t and t.split("=", 1)[0] not in _RECIPE_EXTRA))


def moe_pairs() -> list[Pair]:
    """The held-out releases that publish FP8 and BF16 at one layout for MoE models, with their dense twins where the
    release has them (the same stack's dense FP8 gain as the control): dgxc-benchmarking v24.11 (H100, NeMo 24.09:
    Grok-1 and the dense models, perf_heldout62), v25.05 (NeMo 25.04: Llama 4 Maverick and Grok-1 on H100 and GB200,
    perf_heldout34; its GB200 Llama 3.1 405B, perf_heldout77; its Nemotron-4 15B / 340B on H100 and 340B on GB200,
    perf_heldout78) and the MoE Parallel Folding paper's Mixtral 8x22B (H100,
    Megatron-Core, perf_heldout77). Printed apart from all_pairs: added 2026-12-07 to size the MoE FP8 gain (332)."""
    h77 = H77.BATCH.rows()
    return (batch_pairs("dgxc v24.11 H100", H62.BATCH)
            + batch_pairs("dgxc v25.05 H100", _only(H34.DGXC_BATCH, "h100"))
            + batch_pairs("dgxc v25.05 H100", _only(H78.BATCH, "h100"))
            + batch_pairs("dgxc v25.05 GB200", _only(H34.DGXC_BATCH, "gb200"))
            + batch_pairs("dgxc v25.05 GB200", _rows_batch(H77.BATCH, [r for r in h77 if "dgxc" in r["id"]]))
            + batch_pairs("dgxc v25.05 GB200", _only(H78.BATCH, "gb200"))
            + batch_pairs("MoE Parallel Folding H100", _rows_batch(H77.BATCH, [r for r in h77 if "folding" in r["id"]])))


def _rows_batch(batch: PH.Batch, rows: list[dict]) -> Any:
    """`batch` answering rows() with `rows` (its job path and models unchanged)."""
    class _B:
        job = staticmethod(batch.job)

        @staticmethod
        def rows() -> list[dict]:
            return rows
    return _B


def _only(batch: PH.Batch, accelerator_prefix: str) -> Any:
    return _rows_batch(batch, [r for r in batch.rows() if r["accelerator"].startswith(accelerator_prefix)])


# the recipe order from wide to narrow; a pair is two rows of adjacent or further recipes at one layout
_RECIPES = ("BF16", "FP8-CS", "FP8-MX", "NVFP4")
_MB_LAYOUT = ("release", "system", "model", "gpu_count", "global_batch_seqs", "micro_batch", "seq_len", "fsdp", "tp",
              "pp", "cp", "vpp", "ep")


def mbridge_pairs(label: str, rows: list[dict], job, cat, dev: bool) -> list[Pair]:
    """Megatron-Bridge tables: rows at one release, system, model, batch and layout in two recipes."""
    out = []
    for r in rows:
        for t in rows:
            if r["precision"] not in _RECIPES or t["precision"] not in _RECIPES or \
                    _RECIPES.index(t["precision"]) >= _RECIPES.index(r["precision"]) or \
                    any(r.get(k, "") != t.get(k, "") for k in _MB_LAYOUT):
                continue
            sides = [Side(_sc(resolve_job(job(x), cat)), float(x["tokens_per_sec_per_gpu"])) for x in (t, r)]
            out.append(Pair(f"{label} {r['precision']} / {t['precision']}", r["id"], dev, *sides,
                            float(r["tokens_per_sec_per_gpu"]) / float(t["tokens_per_sec_per_gpu"])))
    return out


def finetune_pairs(cat) -> list[Pair]:
    """Megatron-Bridge 26.06 SFT / LoRA rows (finetune_heldout): FP8-CS and MXFP8 at one layout."""
    rows = [r for r in csv.DictReader(FT.DATA.open(encoding="utf-8")) if r["tokens_per_s"]]
    keys = ("source", "model", "gpu", "gpu_count", "method", "seq_len", "global_batch_seqs", "micro_batch", "tp",
            "pp", "vpp", "lora_rank")
    out = []
    for r in rows:
        if r["fp8_recipe"] != "mxfp8":
            continue
        for t in rows:
            if t["fp8_recipe"] == "tensorwise" and all(r[k] == t[k] for k in keys):
                # the ratio only: tokens_per_s is per GPU or per job as the row's tokens_scope says
                sides = [Side(_sc(FT._scenario(x, cat)), None) for x in (t, r)]
                out.append(Pair("Megatron-Bridge 26.06 fine-tuning FP8-MX / FP8-CS", r["id"], False, *sides,
                                float(r["tokens_per_s"]) / float(t["tokens_per_s"])))
    return out


def all_pairs() -> list[Pair]:
    cat = load_catalog()
    pb_rows = list(csv.DictReader(PB.DATA.open(encoding="utf-8")))
    return (dgxc_pairs() + torchtitan_pairs()
            + mbridge_pairs("Megatron-Bridge 25.11", [dict(r, release="25.11") for r in pb_rows], PB.job, cat, True)
            + heldout_pairs()
            + mbridge_pairs("Megatron-Bridge 26.02", H26.rows(), MB26.job, cat, False)
            + mbridge_pairs("Megatron-Bridge 26.02.01 / 26.04.01", H27.rows(), MB26.job, cat, False)
            + mbridge_pairs("Megatron-Bridge 26.04 / 26.06", MB26.rows(), MB26.job, cat, False)
            + finetune_pairs(cat))


# ------------------------------------------------------------------------------------------------ report
@dataclass
class Row:
    pair: Pair
    wide: Split
    narrow: Split

    @property
    def predicted(self) -> float:
        return self.narrow.rate / self.wide.rate

    @property
    def err(self) -> float:
        return self.predicted / self.pair.measured_ratio - 1.0

    def side_err(self, which: str) -> float | None:
        side, s = (self.pair.wide, self.wide) if which == "wide" else (self.pair.narrow, self.narrow)
        if side.measured is None:
            return None
        measured = 1.0 / side.measured if side.step_metric else side.measured
        return s.rate / measured - 1.0

    @property
    def needed(self) -> float:
        """Factor on the narrower recipe's linear GEMM time that makes the predicted ratio the measured one."""
        target = self.narrow.step * self.predicted / self.pair.measured_ratio  # narrow step that gives the ratio
        return 1.0 + (target - self.narrow.step) / max(self.narrow.gemm, 1e-12)


def rows_of(pairs: list[Pair]) -> list[Row]:
    """The pairs with the model's splits, grouped by source in the order the sources first appear."""
    order = {g: i for i, g in reversed(list(enumerate(p.group for p in pairs)))}
    return [Row(p, split(p.wide), split(p.narrow)) for p in sorted(pairs, key=lambda p: order[p.group])]


def _parts(s: Split) -> str:
    rest = s.step - s.gemm - s.attention - s.hbm
    return f"{s.gemm / s.step:4.2f} {s.attention / s.step:4.2f} {s.hbm / s.step:4.2f} {rest / s.step:5.2f}"


def _pct(x: float | None) -> str:
    return f"{100 * x:+6.1f}" if x is not None else "     -"


def print_rows(rows: list[Row]) -> None:
    print("narrow / wide throughput at one layout; wide / narrow err: each row's own throughput error (+ = too fast);")
    print("split: linear GEMMs, attention core, HBM-bound passes, rest, as shares of each step; need: factor on the")
    print("narrow recipe's GEMM time that closes the ratio")
    group = None
    for r in rows:
        if r.pair.group != group:
            group = r.pair.group
            print(f"\n{group}{' (development set)' if r.pair.dev else ' (held out)'}")
            print(f"  {'row':54s} {'meas':>6s} {'pred':>6s} {'err%':>6s} {'wide':>6s} {'narrow':>6s}   "
                  f"{'wide split':19s}   {'narrow split':19s}  need")
        print(f"  {r.pair.row_id[:54]:54s} {r.pair.measured_ratio:6.3f} {r.predicted:6.3f} {_pct(r.err)} "
              f"{_pct(r.side_err('wide'))} {_pct(r.side_err('narrow'))}   {_parts(r.wide)}   {_parts(r.narrow)} "
              f"{r.needed:5.2f}")


def summary(rows: list[Row]) -> dict[str, tuple[int, float, float]]:
    """group -> (pairs, mean |error| of the ratio, mean signed error)."""
    out: dict[str, list[float]] = {}
    for r in rows:
        out.setdefault(r.pair.group, []).append(r.err)
    return {g: (len(e), float(np.mean(np.abs(e))), float(np.mean(e))) for g, e in out.items()}


def main() -> None:
    rows = rows_of(all_pairs())
    print_rows(rows)
    print("\nper source: pairs, mean |error| of the ratio, mean signed error (+ = the model gives the narrower "
          "recipe too much)")
    for g, (n, mae, mean) in summary(rows).items():
        print(f"  {g:58s} n={n:2d}  {100 * mae:5.1f}%  {100 * mean:+5.1f}%")
    for label, sel in (("development", True), ("held out", False)):
        e = [r.err for r in rows if r.pair.dev == sel]
        print(f"all {label} pairs: n={len(e)} mean |error| {100 * np.mean(np.abs(e)):.1f}%, "
              f"mean {100 * np.mean(e):+.1f}%")
    print_moe(rows_of(moe_pairs()))


def print_moe(rows: list[Row]) -> None:
    """The MoE releases' pairs (moe_pairs) with their dense controls, and per group the mean ratio error."""
    print("\nMoE FP8 / BF16 at one layout, with the same release's dense pairs (held out; docs/known-gaps.md 332)")
    print_rows(rows)
    print("\nper group: pairs, mean |error| of the ratio, mean signed error, mean need")
    need: dict[str, list[float]] = {}
    for r in rows:
        need.setdefault(r.pair.group, []).append(r.needed)
    for g, (n, mae, mean) in summary(rows).items():
        print(f"  {g:58s} n={n:2d}  {100 * mae:5.1f}%  {100 * mean:+5.1f}%  need {np.mean(need[g]):4.2f}")


if __name__ == "__main__":
    main()
