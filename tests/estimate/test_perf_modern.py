"""The time estimator on NVIDIA DGX Cloud (NeMo) and torchtitan rows (benchmarks/perf_modern.py).

Bounds are what the estimator reaches today with a small margin, so a change that makes any source worse
fails here; the issue's target is 10% MAPE per source. Known misses (rows, not sources): torchtitan's
Llama 3 8B with TP 8 inside FSDP 8 is still predicted 14% too fast in BF16 (2-8% in Float8) after the
per-op SAC all-gathers, the split q/k/v and w1/w3 GEMMs and the Grand Teton parts' 2.4 TB/s HBM2e; the
FP8 rows of the 70B/405B on those parts are 6-16% too slow (the FP8 GEMM ratio was tuned before the HBM
figure was corrected; the 405B Float8 rows -12% with the FP8 FSDP all-gather their preset sets); NeMo's 70B FP8
rows are 10-14% too slow in step time (its BF16 rows: +4%)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import perf_modern as pm  # noqa: E402

# torchtitan 9.1 since Hopper's FA2 runs at its measured rate and length curve (6.7 at the 0.25 tuned on llm-foundry's
# Triton rows): its rows without CP move to within -14..+21% (most within 6%), its CP rows come out too fast; 8.0
# since PyTorch's ring attention is charged as its code runs (step_time._cp_torch_ring); 8.7 since torchao rowwise's
# GEMMs run at the tensorwise ratio as its code dispatches them (perf_constants.yaml fp8.recipes.rowwise; 8.3 at the
# 0.45 tuned on the four TP 8 rowwise rows, whose own benchmark page flags their vanilla-TP rowwise baseline as a bug,
# torchtitan issue 1207: they now read +9..+23%, docs/known-gaps.md 60)
BOUNDS = {"NeMo (dgxc) BF16": 6.0, "NeMo (dgxc) FP8": 9.0, "dgxc (all)": 7.5, "torchtitan": 9.0,
          "torchtitan (all)": 9.0}  # reached: 4.1, 5.4, 4.8, 8.7 (issue target: 10% per source)


def test_worst_modern_row(summary):
    # reached: torchtitan 8B CP 8 +43.2% (8B CP 4 +36.6%, 405B CP 8 +30.8%; +52.2 / +44.5 / +49.3 before PyTorch's
    # ring attention was charged as its code runs: step_time._cp_torch_ring): the 8B's time per token at CP 4 / 8 is
    # still 1.4 / 1.5x what its CP 1 / 2 rows extrapolate to linearly, which no mechanism read in the code gives at one
    # node (docs/known-gaps.md 1, perf_heldout (c)); -19.5% (8B CP 2) at the 0.25 FA2 figure, which hid it
    assert abs(summary["worst"][0][4]) <= 46.0, summary["worst"][0]


@pytest.fixture(scope="module")
def summary():
    return pm.summary(pm.cases())


def test_every_modern_row_is_predicted(summary):
    assert summary["rows"] == len(pm.modern_rows()) >= 186  # none refused, none skipped


def test_modern_mape_per_source(summary):
    for source, (n, err) in summary["by_source"].items():
        assert err <= BOUNDS[source], (source, n, err)


def test_nemo_mfu_formula_reproduces_the_reported_mfu():
    """The harness's NeMo MFU numerator, applied to a row's measured step time, gives the row's MFU."""
    rows = [r for r in pm.modern_rows() if r["id"] == "dgxc_v25.04_llama3.1_8b_BF16_8gpu"]
    step = float(next(r for r in rows if r["metric"] == "step_time")["value"])
    mfu = float(next(r for r in rows if r["metric"] == "mfu")["value"])
    model, training, system, _, _ = pm.configure(rows[0])
    fl = pm.nemo_flops_per_step(model, training.global_batch_seqs, training.seq_len)
    assert 100 * fl / (step * 8 * 989e12) == pytest.approx(mfu, rel=0.01)


def test_measured_runs_are_predicted_to_fit():
    """All 87 runs fit (every NeMo run, with the bf16 gradient buffers of its performance recipe; torchtitan's A100
    13B without AC at local batch 2 with the fused RMSNorm of its preset, 84 GiB before)."""
    refused = {f.row_id for f in pm.fits() if not f.fits}  # one entry per run, not per metric
    assert not refused, refused  # issue #13: no development row refused
