"""Diagnostic, not scored and nothing fitted into the estimate (docs/known-gaps.md 331): the strong scaling of
perf_heldout77's MoE Parallel Folding rows (arXiv:2504.14960 Table 4, global batch 1,024 at a fixed layout, 64-1,024
H100; Table 3's global batch 256 at the smallest count, the same layout) read as per-step time beyond the micro-batches.

At a fixed layout each GPU's work a micro-batch is the same at every GPU count and global batch; the pipelines run
m = global batch / DP micro-batches. With step = (m + y) x t (t: one micro-batch on the paced stage; y: the step's time
beyond the micro-batches in units of t: pipeline bubble, exposed p2p, DP / optimizer), MFU = A m / (m + y), so two rows
a and b of one layout give y = (MFU_b - MFU_a) / (MFU_a / m_a - MFU_b / m_b) (`implied_slots`), whatever A is. Read the
same way from the published and from the predicted MFU, y compares the two like for like. A 1F1B pipeline of p stages
and v virtual stages holds (p - 1) / v slots of bubble alone (Narayanan et al. 2021 s2.2; Megatron-Core schedules.py
forward_backward_pipelining_without_interleaving / _with_interleaving).

Printed per layout: every row (GPUs, DP, m, published / predicted MFU, the estimate's per-micro-batch time and step
terms, the bubble in slots), y from the largest-m row against each other row, published and predicted, and the bubble
the estimate would charge if its slots ran at the stage time without the LM head (`headless_stage_mb_s`): the event
replay of Megatron-Core's 1F1B order in tests/estimate/test_pipeline.py gives (p - 1) / v slots of a stage that does
not hold the head when only the last stage holds it (a what-if, not charged: 331 (c)).

Run: python benchmarks/folding_scaling.py
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

import perf_heldout77 as p77
from trainsizer.catalog import load_catalog
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.scenario import resolve_job

ID = re.compile(r"heldout_2027y_folding_(t[234])_(mixtral8x22b|qwen2_57b)_(mcore|folding)_gbs(256|1024)_(\d+)gpu")
LAYOUTS = (("mixtral8x22b", "mcore"), ("mixtral8x22b", "folding"), ("qwen2_57b", "mcore"), ("qwen2_57b", "folding"))


def implied_slots(mfu_a: float, m_a: float, mfu_b: float, m_b: float) -> float:
    """y of step = (m + y) t from two rows of one layout (module docstring)."""
    return (mfu_b - mfu_a) / (mfu_a / m_a - mfu_b / m_b)


def layout_rows(run: Any) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Each layout's BF16 rows as MFU % (Table 4's global batch 1,024; global batch 256: Table 3's Qwen2 MFU, Table 2's
    Mixtral TFLOP/s over the paper's 989.5 peak, which are Table 3's MFU), largest m first."""
    out: dict[tuple[str, str], list[dict[str, Any]]] = {k: [] for k in LAYOUTS}
    catalog = load_catalog()
    for c, res, r in run:
        hit = ID.fullmatch(c.row_id)
        if not hit or c.skipped:
            continue
        table, model, method, gbs, gpus = hit.groups()
        scale = 100.0 / p77.H100_PEAK_TFLOPS if table == "t2" else 1.0
        t = res["time"]
        parts = t["breakdown_s"]
        m = float(t["micro_batches"])
        sc = resolve_job(p77.job(r), catalog)
        headless = float(np.asarray(step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
                                    ["headless_stage_mb_s"]).reshape(-1)[0])
        p, v = int(r["pp"]), int(r["vpp"])
        t_mb = (parts["compute"] + parts["tp_comm"] + parts["cp_comm"] + parts["ep_comm"]) / m
        out[(model, method)].append({
            "id": c.row_id, "gpus": int(gpus), "gbs": int(gbs), "m": m, "p": p, "v": v, "published": c.measured * scale,
            "predicted": c.predicted * scale, "step_s": float(t["step_s"]), "t_mb_s": t_mb, "bubble_s": parts["pp_bubble"],
            "other_s": parts["pp_comm"] + parts["dp_comm"] + parts["optimizer"], "headless_s": headless,
            "dp": int(gpus) // (int(r["tp"]) * p)})
    for rows in out.values():
        rows.sort(key=lambda x: (-x["m"], x["gbs"]))
    return out


def headless_what_if(row: dict[str, Any]) -> float:
    """The row's predicted MFU with the bubble's slots charged at the stage time without the LM head."""
    bubble = (row["p"] - 1) / row["v"] * row["headless_s"]
    return row["predicted"] * row["step_s"] / (row["step_s"] - row["bubble_s"] + bubble)


def layout_lines(key: tuple[str, str], rows: list[dict[str, Any]]) -> list[str]:
    """One layout's rows and its implied slots, published against predicted."""
    first = rows[0]
    lines = [f"{key[0]} {key[1]}: PP {first['p']} x VPP {first['v']}, 1F1B bubble (p - 1) / v = "
             f"{(first['p'] - 1) / first['v']:.2f} slots"]
    for x in rows:
        lines.append(f"  {x['gpus']:5d} GPUs GBS {x['gbs']:5d} DP {x['dp']:4d} m {x['m']:4.0f}: MFU {x['published']:5.1f} / "
                     f"{x['predicted']:5.2f} ({x['predicted'] / x['published'] - 1:+6.1%}); t_mb {x['t_mb_s']:.3f} s, "
                     f"bubble {x['bubble_s']:.2f} s = {x['bubble_s'] / x['t_mb_s']:.2f} slots, p2p+DP+opt "
                     f"{x['other_s']:.2f} s; headless-slot bubble {x['headless_s'] * (x['p'] - 1) / x['v']:.2f} s "
                     f"-> MFU {headless_what_if(x):5.2f}")
    for x in rows[1:]:
        pub = implied_slots(first["published"], first["m"], x["published"], x["m"])
        pred = implied_slots(first["predicted"], first["m"], x["predicted"], x["m"])
        lines.append(f"  y from m {first['m']:.0f} / {x['m']:.0f} ({x['gpus']} GPUs, GBS {x['gbs']}): published "
                     f"{pub:5.2f}, predicted {pred:5.2f} slots")
    last = [x for x in rows if x["gbs"] == 1024]
    lo, hi = max(last, key=lambda x: x["m"]), min(last, key=lambda x: x["m"])
    lines.append(f"  MFU kept {lo['gpus']} -> {hi['gpus']} GPUs: published {hi['published'] / lo['published']:.3f}x, "
                 f"predicted {hi['predicted'] / lo['predicted']:.3f}x")
    return lines


def vpp_options(layers: int, pp: int) -> list[int]:
    """The virtual pipeline sizes Megatron-LM takes at `layers` over `pp` stages: layers a stage divisible by layers a
    virtual stage (arguments.py: num_layers_per_pipeline_stage % num_layers_per_virtual_pipeline_stage == 0)."""
    per = layers // pp
    return [per // k for k in range(per, 0, -1) if per % k == 0]


def slots_at_each_vpp(run: Any) -> dict[tuple[str, str], list[tuple[int, float, float, float, float]]]:
    """Each layout re-run at every VPP Megatron-LM takes: (VPP, 1F1B bubble (p - 1) / v, the published y's range
    (lowest, highest) and the predicted y's highest), y from the largest-m row against each other row."""
    models = p77.models()
    by_id = {r["id"]: r for _, _, r in run}
    out: dict[tuple[str, str], list[tuple[int, float, float, float, float]]] = {}
    for key, rows in layout_rows(run).items():
        first = by_id[rows[0]["id"]]
        layers = int(models[first["model"]]["model"]["layers"])
        p = int(first["pp"])
        pub = [implied_slots(rows[0]["published"], rows[0]["m"], x["published"], x["m"]) for x in rows[1:]]
        out[key] = []
        for v in vpp_options(layers, p):
            again = layout_rows(p77.BATCH.estimate([dict(by_id[x["id"]], vpp=str(v)) for x in rows]))[key]
            pred = [implied_slots(again[0]["predicted"], again[0]["m"], x["predicted"], x["m"]) for x in again[1:]]
            out[key].append((v, (p - 1) / v, min(pub), max(pub), max(pred)))
    return out


def main() -> None:
    run = p77.run_all()
    by_layout = layout_rows(run)
    for key in LAYOUTS:
        print("\n".join(layout_lines(key, by_layout[key])))
    print("\nEvery VPP Megatron-LM takes at the layout: 1F1B bubble alone, published y (range), predicted y (highest)")
    for key, options in slots_at_each_vpp(run).items():
        for v, bubble, lo, hi, pred in options:
            verdict = "excluded: the bubble alone exceeds every published y" if bubble > hi else "possible"
            print(f"  {key[0]} {key[1]} VPP {v}: bubble {bubble:.2f}, published {lo:.2f}-{hi:.2f}, predicted up to "
                  f"{pred:.2f} slots ({verdict})")


if __name__ == "__main__":
    main()
