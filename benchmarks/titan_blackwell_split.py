"""torchtitan on Blackwell: how much slower each part of the modelled step would have to run to close each held-out
row, one part at a time (docs/known-gaps.md 219). A diagnostic: nothing is fitted and no estimate moves.

The rows are every torchtitan time row on a Blackwell part in the held-out batches that run it (perf_heldout28, 29,
39, 48, 55; their data files below), with TorchAO's H100 twin of its B200 Llama 3 8B row (perf_heldout40, the same
script and model two months earlier) as a control. For each row and each part of the step the estimate times -- the
attention core (Rates.flash_flops: cuDNN, FlexAttention or FlashAttention-2, as the row's style runs it), the routed
experts' torch._grouped_mm (Rates.grouped_gemm_flops), every other GEMM (gemm_flops, gemm16_flops) and the HBM-bound
kernels (hbm_bytes_s) -- the part's modelled time S is the step's growth when that rate is halved, and the factor
that alone closes the row is f = 1 + (measured step - modelled step) / S: the measured step is the modelled one times
predicted / measured tokens/s. A part whose f is alike across the rows a mechanism claims (one part, one release,
one kernel) and about 1 on the rows it does not is a candidate; one whose f scatters is not the miss alone. The
groups printed are the part, the attention kernel, the year of the run and the model kind.

Run: python benchmarks/titan_blackwell_split.py
"""

from __future__ import annotations

import csv
import dataclasses
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from statistics import median
from typing import Any

import perf_heldout as ph
from trainsizer.estimate import step_time

DATA = Path(__file__).resolve().parent / "data"
FILES = ("heldout_2026d.csv", "heldout_2026e.csv", "heldout_2026n_titan_nvfp4.csv", "heldout_2026o_torchao_pretrain.csv",
         "heldout_2026v_lambda_titan.csv", "heldout_2027c_titan_deepep_b200.csv")
BLACKWELL = ("b200", "b300", "gb200", "gb300")
CONTROLS = ("torchao_2025-06_h100_llama3_8b_bf16_8gpu",)  # TorchAO's H100 twin of its B200 rows
# each part of the step: the Rates fields its time is divided by
PARTS = {"attention": ("flash_flops",), "grouped": ("grouped_gemm_flops",),
         "gemm": ("gemm_flops", "gemm16_flops"), "hbm": ("hbm_bytes_s",)}
PROBE = 2.0  # the part's rates over this: its modelled time is the step's growth


def rows() -> list[dict[str, str]]:
    """The torchtitan time rows on Blackwell parts, and the controls, in file order."""
    out = []
    for name in FILES:
        for r in csv.DictReader((DATA / name).open(encoding="utf-8")):
            titan = r["framework"] == "torchtitan" and "memory" not in r["metric"] and "allocated" not in r["metric"]
            if titan and (r["accelerator"].startswith(BLACKWELL) or r["id"] in CONTROLS):
                out.append(r)
    return out


@contextmanager
def slowed(part: str, s: float) -> Iterator[None]:
    """step_time with one part's rates over s (the routed experts' grouped rate kept where the dense GEMMs slow, the
    dense ones where the grouped rate slows), for the duration of the block."""
    original = step_time._grouped_mm_rate

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        r = original(*args, **kwargs)
        changes = {f: getattr(r, f) / s for f in PARTS[part]}
        if part == "gemm" and not r.gemm16_flops:
            changes["gemm16_flops"] = r.gemm_flops / s  # 0 = "the linear rate": keep it the unscaled one's
        return dataclasses.replace(r, **changes)

    step_time._grouped_mm_rate = wrapped
    try:
        yield
    finally:
        step_time._grouped_mm_rate = original


def step_s(r: dict[str, str], models: dict[str, Any], catalogs: dict[str, Any]) -> tuple[float, float]:
    """(modelled step seconds, the row's predicted metric) of the row under the current rates."""
    case, result = ph.estimate_row(r, models, catalogs, ph.predicted_metric)
    return (float(result["time"]["step_s"]), float(case.predicted)) if result else (0.0, 0.0)


def split(r: dict[str, str], models: dict[str, Any], catalogs: dict[str, Any]) -> dict[str, Any] | None:
    """The row's error and, per part, (modelled seconds, the factor that alone closes the row); None if refused."""
    t0, pred = step_s(r, models, catalogs)
    if t0 <= 0:
        return None
    measured = float(r["value"])
    duration = r["metric"] in ("step_time_s",)
    t_meas = measured if duration else t0 * pred / measured
    out: dict[str, Any] = {"err": (t0 / measured - 1.0) if duration else (pred / measured - 1.0), "step": t0}
    for part in PARTS:
        with slowed(part, PROBE):
            t2, _ = step_s(r, models, catalogs)
        part_s = (t2 - t0) / (PROBE - 1.0)
        out[part] = (part_s, 1.0 + (t_meas - t0) / part_s if part_s > 1e-4 * t0 else None)
    return out


def kernel_of(r: dict[str, str]) -> str:
    """The attention kernel the row states (strategy_extra attention_kernel), else the style's: sdpa."""
    return next((v.split("=")[1] for v in r["strategy_extra"].split(";") if v.startswith("attention_kernel=")), "sdpa")


def group_key(r: dict[str, str]) -> str:
    kind = "moe" if any(m in r["model"] for m in ("a3b", "oss", "scout", "dsv3", "deepseek")) else "dense"
    return f"{r['accelerator'].split('-')[0]} {kernel_of(r)} {r['date'][:4]} {kind}"


def as_fa2(r: dict[str, str]) -> dict[str, str]:
    """The row with its SDPA stated as FlashAttention-2 (attention_kernel fa2: SDPA's FLASH backend, FA2's figures)
    in place of the cuDNN figures torchtitan's sdpa takes on a Blackwell part (PerfStyle.sdpa_cudnn_families)."""
    items = [v for v in r["strategy_extra"].split(";") if v and not v.startswith("attention_kernel=")]
    return dict(r, strategy_extra=";".join([*items, "attention_kernel=fa2"]))


def fa2_error(r: dict[str, str], models: dict[str, Any], catalogs: dict[str, Any]) -> float | None:
    """The row's error were its SDPA FlashAttention-2 (None: the row runs another kernel, or is refused)."""
    if kernel_of(r) != "sdpa":
        return None
    case, result = ph.estimate_row(as_fa2(r), models, catalogs, ph.predicted_metric)
    if not result:
        return None
    return case.predicted / float(r["value"]) - 1.0 if r["metric"] != "step_time_s" else \
        float(result["time"]["step_s"]) / float(r["value"]) - 1.0


def fmt(x: float | None) -> str:
    return "    -" if x is None else f"{x:5.2f}"


def main() -> None:
    models, catalogs = ph.model_data(ph.MODELS), {}
    groups: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    print("torchtitan on Blackwell: the factor on one part's modelled time that alone closes each row "
          "(- : the part is under 0.01% of the step); share = the part's modelled time over the step")
    print(f"{'row':58s} {'group':24s} {'err':>7s}  " + "  ".join(f"{p:>9s} share" for p in PARTS) + "  as FA2")
    for r in rows():
        res = split(r, models, catalogs)
        if res is None:
            print(f"{r['id'][:58]:58s} refused")
            continue
        key = group_key(r)
        cells = []
        for p in PARTS:
            part_s, f = res[p]
            cells.append(f"{fmt(f):>9s} {part_s / res['step']:5.2f}")
            if f is not None:
                groups[key][p].append(f)
        groups[key]["err"].append(res["err"])
        fa2 = fa2_error(r, models, catalogs)
        if fa2 is not None:
            groups[key]["fa2"].append(fa2)
        tail = "       -" if fa2 is None else f"  {100 * fa2:+6.1f}%"
        print(f"{r['id'][:58]:58s} {key:24s} {100 * res['err']:+6.1f}%  " + "  ".join(cells) + tail)
    print("\nby group: rows, median error, median factor per part (min..max), median error as FA2")
    for key, g in sorted(groups.items()):
        parts = "  ".join(f"{p} {median(g[p]):.2f} ({min(g[p]):.2f}..{max(g[p]):.2f})" for p in PARTS if g[p])
        fa2 = f"  as FA2 {100 * median(g['fa2']):+6.1f}%" if g["fa2"] else ""
        print(f"  {key:24s} n={len(g['err']):2d} {100 * median(g['err']):+6.1f}%  {parts}{fa2}")


if __name__ == "__main__":
    main()
