"""Held-out check on our own measurements: the HF Trainer's eager step (PEFT LoRA and full fine-tunes of Llama 3.x) on
one H200, measured by the lead's device run of 2026-12-04 (benchmarks/device/h200_2026_12_04/: hf_bench.py measured,
hf.jsonl its output, hf_prof.py + prof.jsonl torch.profiler over two steady steps, kernels grouped by kind; torch
2.11.0+cu130, transformers 5.17.0, peft 0.21.0, accelerate 1.15.0). Nothing is fitted on these rows.

A benchmark of its own rather than rows of finetune_heldout: these are measurements with a kernel profile beside
them, so each row also prints the estimate's parts next to the profiler's GPU time by kind (GEMM, element-wise and
copy / cast, attention, loss, optimizer), which is what they are for; the rows go through finetune_heldout's job path
(finetune_heldout.job, row_cases: the same columns, the same memory basis) so the two agree on what a row means.

Rows: benchmarks/data/device_h200_hf.csv. Memory: torch.cuda.max_memory_reserved against the estimate less the CUDA
context (finetune_heldout's GiB-allocator basis).

Run: python benchmarks/perf_device_hf.py
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from finetune_heldout import OUTSIDE_ALLOCATOR, _scenario, report, row_cases
from harness import Case, mape
from trainsizer.catalog import load_catalog
from trainsizer.estimate import step_time as st_mod
from trainsizer.estimate.memory import CACHED_ONLY_ITEMS, GIB, estimate_memory

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "device_h200_hf.csv"
PROFILE = HERE / "device" / "h200_2026_12_04" / "prof.jsonl"
RUNS = HERE / "device" / "h200_2026_12_04" / "hf.jsonl"
# the profiler's kernel kinds (hf_prof.py KINDS) summed into what the estimate separates
PROFILE_GROUPS = {"gemm": ("gemm",), "elementwise+copy": ("elementwise", "copy_cast", "reduce", "other"),
                  "attention": ("attention",), "loss": ("loss",), "optimizer": ("optimizer",)}


def _profiles() -> dict[str, dict]:
    """The profile of each run, less the optimizer's GPU user annotation: hf_prof.py summed every event on the device
    timeline, and torch.profiler puts the `Optimizer.step#AdamW.step` range there beside the kernels it holds (0.026 s
    a step on the 3B run), so that range is taken out of the optimizer kind and the busy time once."""
    out = {}
    for d in map(json.loads, PROFILE.read_text(encoding="utf-8").splitlines()):
        if "run" not in d:
            continue
        ann = sum(s for name, s, _ in d["top"] if name.startswith("Optimizer."))
        kinds = dict(d["by_kind_per_step_s"])
        kinds["optimizer"] = kinds.get("optimizer", 0.0) - ann
        out[d["run"]] = d | {"by_kind_per_step_s": kinds, "gpu_busy_per_step_s": d["gpu_busy_per_step_s"] - ann}
    return out


def _first(a) -> float:
    return float(np.asarray(a, float).reshape(-1)[0])


def estimate_parts(r: dict[str, str], cat) -> dict[str, float]:
    """Seconds per step of the estimate's parts for the row (one micro-batch a step): the decoder layers without
    the LoRA adapters (their attention core apart, forward again under recompute), the adapters' element-wise
    streams, the LM head + loss, and the rest (optimizer, host)."""
    sc = _scenario(r, cat)
    x = st_mod._step(sc.model, sc.training, sc.system, sc.strategy, None, None, None)
    lt, layer_mb = st_mod._layer_time(x)
    lora = st_mod._lora_adapters(x) if sc.training.method in ("lora", "qlora") else 0.0
    n = sc.model.layers
    out = {"step": _first(st_mod.step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)["step_s"]),
           "layers": n * _first(np.asarray(layer_mb) - lora), "lora": n * _first(lora),
           "head": _first(lt.head_fwd + lt.head_bwd),
           "attention": n * _first(lt.attn_fwd * (1.0 + x.full_share) + lt.attn_bwd)}
    out["rest"] = out["step"] - out["layers"] - out["lora"] - out["head"]
    return out


def breakdown(rows: list[dict[str, str]], cat) -> None:
    prof = _profiles()
    print("\nper step, estimate's parts (s) | profiler GPU time by kind (s), wall per step:")
    for r in rows:
        p = estimate_parts(r, cat)
        run = r["id"].removeprefix("h200dev_")
        line = (f"  {run:26s} est step {p['step']:.3f}: layers {p['layers']:.3f} (attention {p['attention']:.3f}) "
                f"lora {p['lora']:.3f} head+loss {p['head']:.3f} rest {p['rest']:.3f}")
        if run in prof:
            k = prof[run]["by_kind_per_step_s"]
            kinds = " ".join(f"{g} {sum(k.get(n, 0.0) for n in names):.3f}" for g, names in PROFILE_GROUPS.items())
            line += f" | measured wall {prof[run]['wall_per_step_s']:.3f} busy {prof[run]['gpu_busy_per_step_s']:.3f}: {kinds}"
        print(line)


def reserved_gap(rows: list[dict[str, str]], cat) -> None:
    """The run's reserved less allocated peak (hf.jsonl: max_memory_reserved, max_memory_allocated) beside the
    estimate's cached-only items (memory.CACHED_ONLY_ITEMS: the loss path's own segments, the forward's layer
    segments, the fragmentation share): what the caching allocator holds beyond the tensors (known-gaps 213)."""
    runs = {d["run"]: d for d in map(json.loads, RUNS.read_text(encoding="utf-8").splitlines()) if "run" in d}
    print("\nreserved less allocated peak (GiB): measured | the estimate's allocated, then its cached-only items:")
    for r in rows:
        run = r["id"].removeprefix("h200dev_")
        if run not in runs:
            continue
        sc = _scenario(r, cat)
        est = estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False)
        cached = {k: est.items_bytes.get(k, 0.0) / GIB for k in CACHED_ONLY_ITEMS}
        alloc = est.per_gpu_bytes / GIB - sum(cached.values()) - sum(
            est.items_bytes.get(k, 0.0) / GIB for k in OUTSIDE_ALLOCATOR)
        d = runs[run]
        print(f"  {run:26s} measured {d['max_reserved_gib'] - d['max_allocated_gib']:5.2f} (allocated "
              f"{d['max_allocated_gib']:5.1f}) | estimate allocated {alloc:5.1f}, cached {sum(cached.values()):5.2f}: "
              + " ".join(f"{k} {v:.2f}" for k, v in cached.items()))


def cases() -> tuple[list[Case], list[dict[str, str]]]:
    cat = load_catalog()
    rows = list(csv.DictReader(DATA.open(encoding="utf-8")))
    return [c for r in rows for c in row_cases(r, cat)], rows


def main() -> None:
    cs, rows = cases()
    print("HF Trainer eager step on one H200, our device run 2026-12-04 (held out, nothing fitted):")
    report(cs)
    breakdown(rows, load_catalog())
    reserved_gap(rows, load_catalog())
    for metric in ("tokens_s", "peak_gib"):
        g = [c for c in cs if c.metric == metric and not c.skipped]
        print(f"device H200 HF {metric}: n={len(g)} MAPE {mape(g):.1f}%")


if __name__ == "__main__":
    main()
