"""strategy.nf4_dequant_dtype: bitsandbytes < 0.43 and Lightning's BitsandbytesPrecision quantise a `.half()` copy, so
dequantize_4bit writes fp16 and MatMul4Bit casts every dequantised weight to a bf16 job's dtype in the forward and again
in the backward (step_time._nf4_recast_time); fp16 jobs, the default (the compute dtype) and other methods add nothing,
and a non-QLoRA job that states it is refused in en / zh."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.step_time import estimate_time
from trainsizer.messages import msg, tr
from trainsizer.scenario import resolve_job

CAT = load_catalog()


def _job(method: str = "qlora", precision: str = "bf16", acc: str = "a100-sxm-80gb", recompute: str = "none",
         **strategy) -> dict:
    lora = {"lora": {"rank": 16}} if "lora" in method else {}
    return {"model": "llama-3.1-8b", "method": method, **lora, "seq_len": 1024, "precision": precision,
            "data": {"tokens": 1e8}, "global_batch": {"sequences": 8},
            "hardware": {"accelerator": acc, "count": 1},
            "strategy": {"micro_batch": 1, "recompute": recompute, "framework": "hf", **strategy}}


def _step(job: dict) -> float:
    sc = resolve_job(job, CAT)
    return float(estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False).step_s)


def test_fp16_quant_state_adds_a_cast_per_weight_and_pass_at_the_dynamic_cast_rate():
    """On the A100 the copy runs at perf_constants.yaml dynamic_cast's per-SM rate: the step grows by at least the
    base linear weights over that rate, twice a micro-batch (forward, backward), three times under full recompute."""
    base, old = _step(_job()), _step(_job(nf4_dequant_dtype="fp16"))
    assert _step(_job(nf4_dequant_dtype="compute")) == base
    sc = resolve_job(_job(), CAT)
    m = sc.model
    linear = m.layers * m.hidden * (m.hidden + 2 * m.kv_heads * m.head_dim + m.hidden + 3 * m.ffn)
    per_pass = linear / load_constants().dynamic_cast_elems_s("a100-sxm-80gb") * 8  # 8 micro-batches a step
    assert 2 * per_pass <= old - base <= 2 * per_pass * 1.2
    full = _step(_job(recompute="full", nf4_dequant_dtype="fp16")) - _step(_job(recompute="full"))
    assert full == pytest.approx(1.5 * (old - base), rel=0.05)


def test_an_fp16_job_or_another_method_adds_nothing():
    assert _step(_job(precision="fp16", nf4_dequant_dtype="fp16")) == _step(_job(precision="fp16"))


def test_a_part_without_a_dynamic_cast_figure_streams_the_copy():
    """A10G: no dynamic_cast entry; the copy reads 2 B and writes 2 B a weight through HBM."""
    assert load_constants().dynamic_cast_elems_s("a10g") is None
    assert _step(_job(acc="a10g", nf4_dequant_dtype="fp16")) > _step(_job(acc="a10g"))


@pytest.mark.parametrize("method", ["lora", "full"])
def test_refused_off_qlora(method):
    with pytest.raises(TrainsizerError, match="nf4_dequant_dtype_method"):
        _step(_job(method=method, nf4_dequant_dtype="fp16"))


def test_unknown_dtype_is_refused_with_the_allowed_ones():
    with pytest.raises(TrainsizerError, match="fp16.*compute"):
        resolve_job(_job(nf4_dequant_dtype="bf16"), CAT)


def test_refusal_reads_in_both_languages():
    en, zh = (tr(msg("rule_nf4_dequant_dtype_method", method="lora"), lang) for lang in ("en", "zh"))
    assert "method qlora only" in en and "lora" in en
    assert "仅适用于 method qlora" in zh and "lora" in zh
