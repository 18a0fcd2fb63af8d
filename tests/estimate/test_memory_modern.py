"""The memory estimator on torchtitan's measured peaks (benchmarks/memory_modern.py).

Bound = what the estimator reaches today with a small margin (issue target: 12% MAPE per source). The two
H200 rows (2025 torchtitan) compile the loss, the December 2024 rows did not (benchmark docstring). Known misses:
the 405B 1F1B row (-11%) and the 405B CP 8 row (-14%) are under."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import memory_modern as mm  # noqa: E402


def test_torchtitan_peak_memory_mape():
    s = mm.summary(mm.cases())
    assert s["n"] == 20  # every torchtitan memory row, none skipped
    assert s["mape"] <= 4.5, s  # reached: 3.7%
    assert abs(s["worst"][0][3]) <= 15.0, s["worst"]


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


def test_tp_rows_hold_the_gathered_inputs_and_the_loss_parallel_temporaries():
    """70B TP 8 x FSDP 32 (-19% before): DTensor SP saves the all-gathered block inputs whole in the re-run block,
    and loss_parallel's backward keeps three fp32 logit-sized temporaries."""
    from trainsizer.estimate.memory import estimate_memory

    two_d = [c for c in mm.cases() if c.case.startswith("torchtitan_mem_t4")]
    assert len(two_d) == 2 and all(abs(c.error) < 0.08 for c in two_d), two_d
    row = next(r for r in mm.rows() if r["id"] == "torchtitan_mem_t4_2d")
    model, training, system, strategy = mm.configure(row)
    e = estimate_memory(model, training, system, strategy, check=False)
    tokens = training.seq_len * strategy.micro_batch
    assert e.items_bytes["loss_backward_temporaries"] == 12 * tokens * model.vocab / strategy.tp
    mega = estimate_memory(model, training, system, strategy.with_(framework="megatron-core"), check=False)
    assert e.items_bytes["recompute_working_set"] > mega.items_bytes["recompute_working_set"]


def test_eager_per_op_sac_reruns_the_block_and_compile_does_not():
    from trainsizer.estimate.memory import estimate_memory

    row = next(r for r in mm.rows() if r["id"] == "torchtitan_mem_t1_fsdp")
    model, training, system, strategy = mm.configure(row)
    eager = estimate_memory(model, training, system, strategy, check=False)
    compiled = estimate_memory(model, training, system, strategy.with_(torch_compile=True), check=False)
    assert compiled.items_bytes["recompute_working_set"] == 0.0
    assert eager.items_bytes["recompute_working_set"] > 0.5 * eager.items_bytes["layer_activations"] / model.layers
    assert eager.per_gpu_bytes > compiled.per_gpu_bytes
