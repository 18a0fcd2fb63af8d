"""Held-out check on AMD Instinct (MI300X, MI325X, MI350X, MI355X): MLPerf Training v5.1 and v5.0, AMD's
closed submissions (published 2025-11-12 and 2025-06-04): Llama 3.1 8B pre-training (v5.1: MI355X, MI350X) and
Llama 2 70B LoRA (v5.1: MI300X, MI325X, MI350X, MI355X; v5.0: MI300X, MI325X), all on one 8-GPU node, FP8. No constant was fitted on them: the AMD GEMM shares
(perf_constants.yaml gemm.efficiency_max) come from measured matmul rates, the xGMI mesh from RCCL measurements.

Data: benchmarks/data/amd_mlperf.csv (one row per system and benchmark: the median of the submission logs'
per-block samples/s, with the layout from the submission's config and train script, and an `assumed` column
saying what the submission does not state). The stack is NeMo / Megatron-Core with Transformer Engine on ROCm
(hipBLASLt FP8 GEMMs, CK fused attention), modelled as the `megatron-core` style; both benchmarks run data
parallel 8 (TP = PP = CP = 1), so the xGMI mesh carries only the gradient reduce-scatter / all-gather.

The MI300X LoRA rows recompute the first 21 of their 80 layers in full (NeMo activations_checkpoint_method block,
activations_checkpoint_num_layers 21): strategy.recompute full with recompute_method block, recompute_num_layers 21
(estimate/partial_recompute.py); their estimates with no recompute and with every layer recomputed are printed
beside them as bounds.

Run: python benchmarks/perf_amd.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from harness import Case, Fit, fit_of, mape, print_fits
from trainsizer.catalog import load_catalog
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.scenario import resolve_job

DATA = Path(__file__).resolve().parent / "data" / "amd_mlperf.csv"
RECOMPUTE = {"none": "none", "full": "full", "selective": "selective"}  # what a job can state


def job(r: dict[str, str], recompute: str | None = None) -> dict:
    """The row as a job (recompute: the row's, or the one given, every layer alike, for a partial row's bounds)."""
    lora = r["task"] == "lora"
    out = {
        "model": r["model"], "method": "lora" if lora else "pretrain", "seq_len": int(r["seq_len"]),
        "data": {"samples": 1e5, "avg_tokens": int(r["seq_len"])} if lora else {"tokens": 1e9},
        "global_batch": {"sequences": int(r["global_batch_seqs"])}, "precision": r["precision"],
        "fp8_recipe": r["fp8_recipe"] or "auto",
        "hardware": {"accelerator": r["accelerator"], "count": int(r["gpu_count"])},
        "strategy": {"tp": int(r["tp"]), "pp": int(r["pp"]), "cp": int(r["cp"]), "micro_batch": int(r["micro_batch"]),
                     "recompute": recompute or r["recompute"], "framework": "megatron-core",
                     # pre-training: the distributed optimizer with FP8 primary weights gathered in FP8 and bf16
                     # gradient buffers (train.py get_strategy); LoRA: NeMo's fused_adam on one node (the
                     # config's optim name picks mcore_distributed_optim only for several nodes)
                     "distributed_optimizer": not lora, "grad_reduce_in_fp32": False},
    }
    if recompute is None and r["recompute_method"]:
        out["strategy"] |= {"recompute_method": r["recompute_method"],
                            "recompute_num_layers": int(r["recompute_num_layers"])}
    if lora:
        # target_modules ['attention']: the fused QKV (linear_qkv) and the output projection (linear_proj)
        # LORA_A2A=1 in AMD's and MangoBoost's config_*.sh: NeMo's LoRA a2a_experimental (TP 1 here: no effect)
        out["lora"] = {"rank": int(r["lora_rank"]), "targets": r["lora_targets"].split(";"), "a2a": True}
        # megatron_gpt_peft_tuning_config.yaml: fp8_params ${FP8} (True in every config_*.sh): the frozen base built
        # as FP8 tensors; disable_parameter_transpose_cache True (and ENABLE_TRANSPOSE_CACHE=0): no cached transpose
        out["strategy"] |= {"fp8_param_allgather": True, "fp8_transpose_cache": False}
    return out


def _predict(r: dict[str, str], cat, recompute: str | None = None) -> float:
    sc = resolve_job(job(r, recompute), cat)
    o = step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)
    step = float(np.asarray(o["step_s"]).reshape(-1)[0])
    return sc.training.tokens_per_step / step / sc.system.gpus


def cases() -> list[Case]:
    cat = load_catalog()
    out = []
    for r in csv.DictReader(DATA.open(encoding="utf-8")):
        c = Case(r["id"], r["source_key"], "tokens_per_sec_per_gpu", float(r["tokens_per_sec_per_gpu"]))
        if r["recompute"] not in RECOMPUTE:
            c.skipped = f"recompute '{r['recompute']}' cannot be stated"
        else:
            c.predicted = _predict(r, cat)
        out.append(c)
    return out


def bounds() -> list[tuple[str, float, float, float]]:
    """(row, measured, predicted with no recompute, with every layer recomputed) for the partial-recompute rows."""
    cat = load_catalog()
    return [(r["id"], float(r["tokens_per_sec_per_gpu"]), _predict(r, cat, "none"), _predict(r, cat, "full"))
            for r in csv.DictReader(DATA.open(encoding="utf-8")) if r["recompute_method"]]


def fits() -> list[Fit]:
    """Each runnable row's predicted peak memory against the card's usable memory (every row ran)."""
    cat = load_catalog()
    out = []
    for r in csv.DictReader(DATA.open(encoding="utf-8")):
        if r["recompute"] in RECOMPUTE:
            sc = resolve_job(job(r), cat)
            out.append(fit_of(r["id"], sc.model, sc.training, sc.system, sc.strategy))
    return out


def fewest_block_layers() -> list[tuple[str, int, int | None]]:
    """(row, its recompute_num_layers, the fewest block layers with which it is predicted to fit) for the
    partial-recompute rows: a check of the memory estimate against the choice the submitter made."""
    cat = load_catalog()
    out = []
    for r in csv.DictReader(DATA.open(encoding="utf-8")):
        if r["recompute_method"] != "block":
            continue
        fewest = None
        for n in range(0, 81):
            row = r | {"recompute_num_layers": str(n)}
            sc = resolve_job(job(row), cat)
            if fit_of(r["id"], sc.model, sc.training, sc.system, sc.strategy).fits:
                fewest = n
                break
        out.append((r["id"], int(r["recompute_num_layers"]), fewest))
    return out


def ratios(cs: list[Case]) -> list[tuple[str, float, float]]:
    """(pair, measured, predicted throughput ratio) of the same benchmark on two AMD parts."""
    by = {c.row_id: c for c in cs if not c.skipped}
    out = []
    for bench in ("llama31_8b_pretrain", "llama2_70b_lora"):
        for new, old in (("mi355x", "mi350x"), ("mi355x", "mi325x"), ("mi350x", "mi325x")):
            a, b = by.get(f"mlperf5.1_{new}_{bench}_fp8_8gpu"), by.get(f"mlperf5.1_{old}_{bench}_fp8_8gpu")
            if a and b:
                out.append((f"{bench} {new} / {old}", a.measured / b.measured, a.predicted / b.predicted))
    return out


def main() -> None:
    cs = cases()
    print(f"{'row':48s} {'measured':>9s} {'predicted':>9s} {'err%':>7s}")
    for c in cs:
        if c.skipped:
            print(f"{c.row_id:48s} {c.measured:9.0f} {'':>9s} {'':>7s} REFUSED: {c.skipped}")
        else:
            print(f"{c.row_id:48s} {c.measured:9.0f} {c.predicted:9.0f} {100 * c.err:+7.1f}")
    for rid, m, none, full in bounds():
        print(f"  partial recompute {rid}: bounds no recompute {none:.0f} ({100 * (none - m) / m:+.1f}%), "
              f"every layer {full:.0f} ({100 * (full - m) / m:+.1f}%)")
    scored = [c for c in cs if not c.skipped]
    print(f"\nMLPerf Training v5.0 / v5.1 AMD (held out): n={len(scored)} MAPE {mape(cs):.1f}%, "
          f"{len(cs) - len(scored)} refused")
    for src in dict.fromkeys(c.source for c in cs):
        sub = [c for c in cs if c.source == src]
        print(f"  {src:52s} n={sum(not c.skipped for c in sub)} MAPE {mape(sub):5.1f}%")
    for part in dict.fromkeys(c.row_id.split("_")[1] for c in scored):
        sub = [c for c in scored if c.row_id.split("_")[1] == part]
        print(f"  {part:8s} n={len(sub)} MAPE {mape(sub):5.1f}%")
    print("same benchmark on two parts (measured vs predicted throughput ratio):")
    for name, meas, pred in ratios(cs):
        print(f"  {name:36s} measured {meas:.3f} predicted {pred:.3f}")
    print("worst rows:")
    for c in sorted(scored, key=lambda c: -abs(c.err))[:3]:
        print(f"  {c.row_id:48s} {100 * c.err:+7.1f}%")
    print_fits(fits(), "MLPerf Training v5.0 / v5.1 AMD")
    for rid, n, fewest in fewest_block_layers():
        print(f"  {rid}: recomputes {n} layers (block); the fewest predicted to fit: {fewest}")


if __name__ == "__main__":
    main()
