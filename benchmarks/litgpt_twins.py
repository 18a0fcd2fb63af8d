"""Diagnostic, not scored and nothing fitted on its rows (docs/known-gaps.md 231): where LitGPT's fine-tuning rows
(perf_heldout37: Lit-GPT's 2023 A100 40GB table, its 2024 config hub on one A10G and one A100) lose their time, read
from the rows' own twins before any rate is questioned.

- Per micro-batch: a row's timed seconds over its training micro-batches, measured (the published minutes) and as
  perf_heldout37 predicts them (the training steps, and for the 2024 rows the validations and generate_example), and
  the miss in ms (+ = the estimate too fast).
- The QLoRA increment: a model's QLoRA row less its LoRA twin of the same table, a micro-batch each, measured and
  predicted. Where the twins run one micro-batch (same lengths, tokens and loop: only the 4-bit path differs) this
  checks what the estimate charges QLoRA. Where they do not (the 2024 Llama 3.x twins: LoRA micro-batch 1, QLoRA 2),
  the LoRA row re-run at the QLoRA row's micro-batch and global batch (a what-if row, never scored) gives the
  predicted increment at the QLoRA's micro-batch, and the measured QLoRA less that increment the LoRA part a
  micro-batch of that size would have needed (`implied_lora_ms`).
- The GEMM-shape what-if (docs/known-gaps.md 5.8, benchmarks/gemm_shape.py): every row again with tile and wave
  quantisation, 128 x 128 output tiles in whole waves of one tile per SM (gemm_shape `waves_128x128`), the
  large-GEMM share of peak scaled by the factors gemm_shape.refit finds on the DEVELOPMENT rows (REFIT below), never
  on these rows. The A10G's SM count is in gemm_shape.SM_COUNT.

Run: python benchmarks/litgpt_twins.py            (the tables and the what-if, about a minute)
     python benchmarks/litgpt_twins.py --refit    (the what-if's factors refitted first, about two minutes more)
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the benchmarks beside it

import gemm_shape  # noqa: E402
import perf_heldout37 as p37  # noqa: E402
from trainsizer.catalog import load_catalog  # noqa: E402
from trainsizer.estimate.calibration import load_constants  # noqa: E402

# gemm_shape.refit("waves_128x128") on the development rows (perf_validation + perf_modern) at main 3459d269,
# 2026-12-06: the multipliers of the large-GEMM share of peak of the A100 family (the A10G's follows it) and of the
# H100 family; development MAPE 5.62 -> 5.23% with them (`--refit` prints the grid's choice again).
REFIT = {"a100": 1.035, "h100": 1.05}
# The one per-shape GEMM measurement of an A10G held (catalog source zzc0721_a10g: zzc0721/torch-performance-test-data
# issue #126, 2026-01-20, read 2026-12-02): torch.matmul BF16, n x n x n, TFLOP/s, PyTorch 2.7.0 + CUDA 12.8.
A10G_SQUARES = {1024: 47.9, 2048: 60.6, 4096: 62.5, 8192: 66.6, 10240: 69.5}


def timed_rows() -> list[dict[str, str]]:
    """perf_heldout37's rows that publish a time and are estimated (not refused, not an OOM row)."""
    return [r for r in p37.rows() if r["minutes"] and not r["refused"] and r["peak_mem"] != "OOM"]


def micro_batches(r: dict[str, str]) -> float:
    """Training micro-batches the published minutes cover."""
    return float(r["samples_timed"]) / float(r["micro_batch"])


def measured_ms(r: dict[str, str]) -> float:
    """Published seconds over the row's training micro-batches, in ms."""
    return 1e3 * float(r["minutes"]) * 60.0 / micro_batches(r)


def predicted_ms(r: dict[str, str], cat, archs: dict) -> float:
    """perf_heldout37's predicted seconds for the row's timed run over its training micro-batches, in ms."""
    return 1e3 * float(r["samples_timed"]) / p37.predicted_samples_s(r, cat, archs) / micro_batches(r)


@dataclass(frozen=True)
class Twin:
    """A QLoRA row and its LoRA twin (one model, one table), per micro-batch in ms."""

    qlora: str
    lora: str
    same_micro_batch: bool
    measured_increment_ms: float  # QLoRA less LoRA as published (same micro-batch only; nan otherwise)
    predicted_increment_ms: float  # at the QLoRA row's micro-batch (the what-if LoRA row where they differ)
    qlora_measured_ms: float
    lora_at_qlora_mb_ms: float  # the estimate's LoRA at the QLoRA row's micro-batch

    @property
    def implied_lora_ms(self) -> float:
        """The LoRA part the measured QLoRA leaves at its micro-batch, were the increment as predicted."""
        return self.qlora_measured_ms - self.predicted_increment_ms


def lora_at(lora: dict[str, str], qlora: dict[str, str]) -> dict[str, str]:
    """The LoRA row re-run at the QLoRA row's micro-batch, global batch and timed samples (what-if, never scored)."""
    return dict(lora, micro_batch=qlora["micro_batch"], global_batch_seqs=qlora["global_batch_seqs"],
                samples_timed=qlora["samples_timed"])


def pairs(rows: list[dict[str, str]]) -> list[tuple[dict[str, str], dict[str, str]]]:
    """(QLoRA, LoRA) rows of one model and table: the LoRA row of the same micro-batch where there is one, else the
    row the QLoRA row's id names with `lora` for `qlora` (the config hub's lora.yaml beside its qlora.yaml)."""
    out = []
    for q in (r for r in rows if r["method"] == "qlora"):
        twins = [r for r in rows if r["method"] == "lora" and r["model"] == q["model"]
                 and p37._table(r) == p37._table(q)]
        same = [r for r in twins if r["micro_batch"] == q["micro_batch"]]
        named = [r for r in twins if r["id"] == q["id"].replace("_qlora_", "_lora_")]
        if same or named:
            out.append((q, (same or named)[0]))
    return out


def twin(q: dict[str, str], lo: dict[str, str], cat, archs: dict) -> Twin:
    same = q["micro_batch"] == lo["micro_batch"]
    q_pred = predicted_ms(q, cat, archs)
    lora_pred = predicted_ms(lo if same else lora_at(lo, q), cat, archs)
    measured = measured_ms(q) - measured_ms(lo) if same else float("nan")
    return Twin(q["id"], lo["id"], same, measured, q_pred - lora_pred, measured_ms(q), lora_pred)


@contextmanager
def gemm_waves(a10g_sms: int | None = None):
    """The estimate with gemm_shape's `waves_128x128` GEMMs and REFIT's shares of peak; restored on exit. `a10g_sms`
    replaces the A10G's SM count (a sensitivity; None keeps gemm_shape.SM_COUNT's)."""
    saved = dict(gemm_shape.SM_COUNT)
    if a10g_sms is not None:
        gemm_shape.SM_COUNT["a10g"] = a10g_sms
    gemm_shape.use("waves_128x128", REFIT["a100"], REFIT["h100"])
    try:
        yield
    finally:
        _shipped()
        gemm_shape.SM_COUNT.clear()
        gemm_shape.SM_COUNT.update(saved)


def _shipped() -> None:
    """The estimate's own GEMM time, rates and shares of peak back in place (what gemm_shape.use replaced)."""
    gemm_shape.compute.gemm_time = gemm_shape.SHIPPED_GEMM
    gemm_shape.step_time.rates = gemm_shape.SHIPPED_RATES
    gemm_shape.calibration.PerfConstants.gemm_efficiency = gemm_shape.SHIPPED_EFFICIENCY


def squares(system) -> list[tuple[int, float, float, float]]:
    """(n, measured, shipped, waves) TFLOP/s of A10G_SQUARES: the estimate's GEMM time (compute.gemm_time at the
    step's rates) for `system` as shipped and under gemm_waves."""
    k = load_constants()

    def tflops(n: int) -> float:
        r = gemm_shape.step_time.rates(system, "bf16", k)
        return 2.0 * n**3 / float(gemm_shape.compute.gemm_time(n, n, n, r)) / 1e12

    shipped = {n: tflops(n) for n in A10G_SQUARES}
    with gemm_waves():
        waves = {n: tflops(n) for n in A10G_SQUARES}
    return [(n, measured, shipped[n], waves[n]) for n, measured in A10G_SQUARES.items()]


def a10g_system(rows: list[dict[str, str]], cat, archs: dict):
    """The A10G system the rows are estimated on (an A10G row's scenario)."""
    return p37.fh._scenario(next(r for r in rows if r["gpu"] == "a10g"), cat, archs).system


def errors(rows: list[dict[str, str]], cat, archs: dict) -> dict[str, float]:
    """Signed error of each row's samples/s, + = predicted too fast (perf_heldout37's sign)."""
    return {r["id"]: measured_ms(r) / predicted_ms(r, cat, archs) - 1.0 for r in rows}


def by_table(rows: list[dict[str, str]], err: dict[str, float]) -> dict[str, tuple[int, float, float]]:
    """{table: (rows, MAPE %, median %)}."""
    out: dict[str, list[float]] = {}
    for r in rows:
        out.setdefault(p37._table(r), []).append(err[r["id"]])
    return {t: (len(e), 100.0 * float(np.mean(np.abs(e))), 100.0 * float(np.median(e))) for t, e in out.items()}


def _print_rows(rows, cat, archs) -> None:
    print("per micro-batch (ms; + = predicted too fast):")
    for r in rows:
        m, pr = measured_ms(r), predicted_ms(r, cat, archs)
        print(f"  {r['id']:44s} mb {r['micro_batch']:>2s}  measured {m:7.1f}  predicted {pr:7.1f}  miss {m - pr:+7.1f}")


def _print_twins(rows, cat, archs) -> None:
    print("\nQLoRA increment a micro-batch (QLoRA less its LoRA twin, ms):")
    for q, lo in pairs(rows):
        t = twin(q, lo, cat, archs)
        if t.same_micro_batch:
            print(f"  {t.qlora:44s} same micro-batch  measured {t.measured_increment_ms:+7.1f}  predicted "
                  f"{t.predicted_increment_ms:+7.1f}")
        else:
            print(f"  {t.qlora:44s} mb {lo['micro_batch']} -> {q['micro_batch']}  predicted {t.predicted_increment_ms:+7.1f};"
                  f" LoRA at mb {q['micro_batch']}: predicted {t.lora_at_qlora_mb_ms:7.1f}, implied {t.implied_lora_ms:7.1f}"
                  f" ({t.implied_lora_ms / t.lora_at_qlora_mb_ms:.2f}x); LoRA twin at mb {lo['micro_batch']}: measured"
                  f" {measured_ms(lo):7.1f}, predicted {predicted_ms(lo, cat, archs):7.1f}")


def _print_waves(rows, cat, archs) -> None:
    base = errors(rows, cat, archs)
    with gemm_waves():
        waves = errors(rows, cat, archs)
    with gemm_waves(a10g_sms=72):
        waves72 = errors(rows, cat, archs)
    print(f"\nGEMM-shape what-if (waves_128x128, A100 x{REFIT['a100']} / H100 x{REFIT['h100']} from the development "
          f"rows; A10G {gemm_shape.SM_COUNT['a10g']} SMs, 72 as a sensitivity; never scored), samples/s error:")
    for r in rows:
        print(f"  {r['id']:44s} mb {r['micro_batch']:>2s}  shipped {100 * base[r['id']]:+6.1f}%  waves "
              f"{100 * waves[r['id']]:+6.1f}%  (72 SMs {100 * waves72[r['id']]:+6.1f}%)")
    for name, err in (("shipped", base), ("waves", waves), ("waves, 72 SMs", waves72)):
        print(f"  {name:14s} " + "; ".join(f"{t} n={n} MAPE {m:.1f}% median {md:+.1f}%"
                                            for t, (n, m, md) in by_table(rows, err).items()))
    print("  the A10G's published square matmuls (zzc0721_a10g), TFLOP/s: "
          + "; ".join(f"{n}^3 measured {m:.1f} shipped {sh:.1f} waves {w:.1f}"
                      for n, m, sh, w in squares(a10g_system(rows, cat, archs))))


def main() -> None:
    if "--refit" in sys.argv[1:]:
        REFIT["a100"], REFIT["h100"] = gemm_shape.refit("waves_128x128")
        _shipped()
    print(__doc__.split("\n\n")[0])
    cat, archs = load_catalog(), p37.models()
    rows = timed_rows()
    _print_rows(rows, cat, archs)
    _print_twins(rows, cat, archs)
    _print_waves(rows, cat, archs)


if __name__ == "__main__":
    main()
