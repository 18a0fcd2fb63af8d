"""GPT-NeoX's flash wrapper (v1.0 ParallelSelfAttention.flash_attention): q, k and v copied out of [s, b, np, hn] and
packed for the kernel, the output copied back (strategy.flash_qkv_pack, step_time._flash_qkv_pack_time;
docs/known-gaps.md 133). Counted per element: stated, the layer streams those copies; unstated or without flash
attention, nothing moves; a value that is not a boolean is refused by name."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError
from trainsizer.estimate.calibration import load_constants
from trainsizer.evaluate import evaluate
from trainsizer.scenario import resolve_job

NEOX = {"name": "neox-410m", "layers": 24, "hidden": 1024, "heads": 16, "kv_heads": 16, "ffn": 4096, "vocab": 50304,
        "mlp": "gelu", "norm": "layernorm", "position": "rope", "qkv_bias": True, "out_bias": True, "mlp_bias": True,
        "parallel_residual": True, "rotary_fraction": 0.25, "max_position": 2048}


def _step_s(flash: bool = True, **strategy) -> float:
    job = {"name": "neox", "model": NEOX, "method": "pretrain", "data": {"tokens": 1.0e10}, "seq_len": 2048,
           "global_batch": {"sequences": 256}, "precision": "fp16", "flash_attention": flash,
           "hardware": {"accelerator": "a100-sxm-40gb", "count": 8, "per_node": 8},
           "strategy": {"framework": "deepspeed", "zero": 1, "micro_batch": 32, "recompute": "full", **strategy}}
    cat = load_catalog()
    return float(evaluate(resolve_job(job, cat), cat)["time"]["step_s"])


def test_the_packing_copies_cost_their_bytes():
    b = load_constants().eager_bytes_per_element
    h, tok, layers = NEOX["hidden"], 32 * 2048, NEOX["layers"]
    # forward twice (full recompute), backward once: 8 B per q / k / v element, 4 B per output element, 4 B back
    nbytes = layers * tok * (2 * (b["flash_pack_qkv"] * 3 * h + b["flash_pack_out"] * h) + b["flash_pack_out_grad"] * h)
    added = _step_s(flash_qkv_pack=True) - _step_s()
    steps = 256 / 8 / 32  # micro-batches a step
    assert added > 0
    # at an A100-40GB's HBM (1.555 TB/s) the copies take at least their bytes' time, and not several times more
    assert nbytes * steps / 1.555e12 <= added <= 3 * nbytes * steps / 1.555e12


def test_unstated_or_without_flash_nothing_moves():
    assert _step_s(flash_qkv_pack=False) == _step_s()
    assert _step_s(flash=False, flash_qkv_pack=True) == _step_s(flash=False)


def test_a_value_that_is_not_a_boolean_is_refused_by_name():
    with pytest.raises(SpecError, match="flash_qkv_pack"):
        _step_s(flash_qkv_pack="maybe")
