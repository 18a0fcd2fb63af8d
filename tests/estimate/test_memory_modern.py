"""The memory estimator on torchtitan's measured peaks (benchmarks/memory_modern.py).

Bound = what the estimator reaches today with a small margin (issue target: 12% MAPE per source). The two
H200 rows (2025 torchtitan) compile the loss, the December 2024 rows did not (benchmark docstring). Known misses:
the 70B 2D rows are ~14-19% under."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import memory_modern as mm  # noqa: E402


def test_torchtitan_peak_memory_mape():
    s = mm.summary(mm.cases())
    assert s["n"] == 20  # every torchtitan memory row, none skipped
    assert s["mape"] <= 6.5, s  # reached: 5.6%
    assert abs(s["worst"][0][3]) <= 20.0, s["worst"]


def test_h200_rows_with_the_compiled_loss_within_5_percent():
    """torchtitan 2025 compiles its loss under --training.compile; with it the two H200 rows (+31-33% with the
    eager upcast loss) come within a few percent."""
    h200 = [c for c in mm.cases() if "h200" in c.case]
    assert len(h200) == 2 and all(abs(c.error) < 0.05 for c in h200), h200


def test_per_op_sac_keeps_less_than_no_recompute_and_more_than_full():
    """torchtitan's selective AC sits between none and full (it was modelled as Megatron's selective = none)."""
    from trainsizer.estimate.memory import estimate_memory

    row = next(r for r in mm.rows() if r["id"] == "torchtitan_mem_t1_compile")
    model, training, system, strategy = mm.configure(row)
    acts = [estimate_memory(model, training, system, strategy.with_(recompute=rc), check=False)
            .items_bytes["layer_activations"] for rc in ("none", "selective", "full")]
    assert acts[0] > acts[1] > acts[2]
    mega = estimate_memory(model, training, system, strategy.with_(framework="hf"), check=False)
    assert mega.items_bytes["layer_activations"] > 0.99 * acts[0]  # hf's selective ~ none under flash


def test_fsdp2_with_pipeline_holds_the_stage_unsharded():
    row = next(r for r in mm.rows() if r["id"] == "torchtitan_mem_t5_1f1b")
    from trainsizer.estimate.memory import estimate_memory

    model, training, system, strategy = mm.configure(row)
    titan = estimate_memory(model, training, system, strategy, check=False).items_bytes["framework_buffers"]
    one_stage = model.params_total / (8 * 8)
    assert titan > 0.9 * 6.0 * one_stage  # bf16 weights + fp32 accumulated gradients of the stage
