"""benchmarks/titan_blackwell_split.py, the diagnostic of docs/known-gaps.md 219: its rows are the torchtitan time rows
on Blackwell parts (and the H100 control), a part's closing factor closes its row, the rate patch is undone after
its block, and the FlashAttention-2 what-if states fa2 on the row and only there."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import perf_heldout as ph  # noqa: E402
import titan_blackwell_split as ts  # noqa: E402
from trainsizer.estimate import step_time  # noqa: E402

LAMBDA_QWEN3 = "lambda_b200_qwen3_30b_a3b_fsdp8_lbs8_8gpu"


def _row(row_id: str) -> dict[str, str]:
    return next(r for r in ts.rows() if r["id"] == row_id)


def test_rows_are_torchtitan_time_rows_on_blackwell_parts_and_the_control():
    rs = ts.rows()
    assert len(rs) >= 40
    for r in rs:
        assert r["framework"] == "torchtitan"
        assert "memory" not in r["metric"] and "allocated" not in r["metric"]
        assert r["accelerator"].startswith(ts.BLACKWELL) or r["id"] in ts.CONTROLS
    assert {r["id"] for r in rs} >= {LAMBDA_QWEN3, *ts.CONTROLS}


@pytest.mark.parametrize("part", ["attention", "grouped"])
def test_the_closing_factor_closes_the_row(part):
    """Slowing the part by its factor brings the predicted tokens/s to the measured (the part's time is linear in
    its rate's inverse, so the two-point factor is exact up to the GEMMs' soft roofline)."""
    models, catalogs = ph.model_data(ph.MODELS), {}
    r = _row(LAMBDA_QWEN3)
    res = ts.split(r, models, catalogs)
    assert res is not None and res["err"] > 0.2  # the row this section is about: predicted too fast
    part_s, f = res[part]
    assert part_s > 0 and f is not None and f > 1.0
    with ts.slowed(part, f):
        case, _ = ph.estimate_row(r, models, catalogs, ph.predicted_metric)
    assert case.predicted == pytest.approx(float(r["value"]), rel=0.02)


def test_slowed_restores_the_rates_and_slows_only_its_part():
    original = step_time._grouped_mm_rate
    models, catalogs = ph.model_data(ph.MODELS), {}
    dense = _row("torchtitan_2026-05_gb200_llama3_8b_compile_4gpu")  # no routed experts
    base = ph.estimate_row(dense, models, catalogs, ph.predicted_metric)[0].predicted
    with ts.slowed("grouped", 3.0):
        same = ph.estimate_row(dense, models, catalogs, ph.predicted_metric)[0].predicted
    with ts.slowed("attention", 3.0):
        slower = ph.estimate_row(dense, models, catalogs, ph.predicted_metric)[0].predicted
    assert step_time._grouped_mm_rate is original
    assert same == pytest.approx(base, rel=1e-9)
    assert slower < base


def test_as_fa2_states_flashattention2_once_and_leaves_other_kernels():
    r = dict(_row(LAMBDA_QWEN3), strategy_extra="fsdp=full;attention_kernel=native;torch_compile=true")
    extra = ts.as_fa2(r)["strategy_extra"].split(";")
    assert extra.count("attention_kernel=fa2") == 1 and "attention_kernel=native" not in extra
    assert "torch_compile=true" in extra
    flex = next(x for x in ts.rows() if ts.kernel_of(x) == "flex")
    assert ts.fa2_error(flex, ph.model_data(ph.MODELS), {}) is None
