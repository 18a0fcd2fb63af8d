"""The DeepSpeed-era stacks (GPT-NeoX, Megatron-DeepSpeed) time their element-wise work eager unless the job says
torch_compile (perf_constants.yaml frameworks: deepspeed compiles_by_default false), and RoPE over a partial rotary
(ModelArch.rotary_fraction: GPT-NeoX / Pythia rotary_pct 0.25) runs over the rotated slice only, plus the concatenation
of that slice with the rest (compute._eager_rope_bytes; docs/known-gaps.md 133)."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError
from trainsizer.estimate import compute
from trainsizer.estimate.calibration import load_constants
from trainsizer.evaluate import evaluate
from trainsizer.models.arch import ModelArch
from trainsizer.scenario import resolve_job

NEOX = {"name": "neox-1b", "layers": 16, "hidden": 2048, "heads": 16, "kv_heads": 16, "ffn": 8192, "vocab": 50304,
        "mlp": "gelu", "norm": "layernorm", "position": "rope", "qkv_bias": True, "out_bias": True, "mlp_bias": True,
        "parallel_residual": True, "max_position": 2048}
EAGER = load_constants().eager_bytes_per_element


def _job(model: dict, **strategy) -> dict:
    return {"name": "neox", "model": model, "method": "pretrain", "data": {"tokens": 1.0e10}, "seq_len": 2048,
            "global_batch": {"sequences": 128}, "precision": "fp16",
            "hardware": {"accelerator": "a100-sxm-40gb", "count": 8, "per_node": 8},
            "strategy": {"framework": "deepspeed", "zero": 1, "micro_batch": 16, "recompute": "full", **strategy}}


def _result(model: dict, **strategy) -> dict:
    cat = load_catalog()
    return evaluate(resolve_job(_job(model, **strategy), cat), cat)


def test_partial_rotary_streams_the_rotated_slice_and_the_concatenation():
    full = ModelArch(**NEOX, family="gpt")
    quarter = ModelArch(**NEOX, family="gpt", rotary_fraction=0.25)
    assert compute._eager_rope_bytes(full, 20.0, EAGER) == pytest.approx(20.0)
    assert compute._eager_rope_bytes(quarter, 20.0, EAGER) == pytest.approx(20.0 * 0.25 + EAGER["rope_partial_cat"])


def test_deepspeed_times_eager_unless_asked_and_says_so():
    res = _result(NEOX)
    assert res["framework"]["torch_compile"] == {"requested": None, "assumed": False,
                                                 "reason": "torch_compile_default_deepspeed"}
    stated = _result(NEOX, torch_compile=False)
    assert res["time"]["step_s"] == stated["time"]["step_s"]
    assert _result(NEOX, torch_compile=True)["time"]["step_s"] < res["time"]["step_s"]  # RoPE's eager ops cost


def test_a_partial_rotary_is_cheaper_eager_and_the_same_fused():
    quarter = {**NEOX, "rotary_fraction": 0.25}
    assert _result(quarter)["time"]["step_s"] < _result(NEOX)["time"]["step_s"]
    fused = _result(NEOX, torch_compile=True)["time"]["step_s"]
    assert _result(quarter, torch_compile=True)["time"]["step_s"] == pytest.approx(fused)


@pytest.mark.parametrize("bad", [0.0, 1.5, -0.25])
def test_a_rotary_fraction_outside_0_1_is_refused_by_name(bad):
    with pytest.raises(SpecError, match="rotary_fraction"):
        _result({**NEOX, "rotary_fraction": bad})
