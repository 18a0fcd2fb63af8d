"""strategy.bnb_compute_from_input: bitsandbytes 0.41.0-0.46.x's Linear4bit.set_compute_type takes the first input's
dtype as the compute dtype where it is fp32 or bf16, over bnb_4bit_compute_dtype (compute_type_is_set False at init
until #1662, 812ef06a, 0.47.0). In an fp32 job with an fp16 quant state (nf4_dequant_dtype fp16) the 4-bit linears
then dequantise to fp16, recast the weight to fp32 and multiply at the fp32 rate, with no copies of the activations;
unset / false keeps the configured compute dtype (0.47.0+). known-gaps 185."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.model_states import nf4_fp16_compute, nf4_recast
from trainsizer.estimate.step_time import estimate_time
from trainsizer.scenario import resolve_job

CAT = load_catalog()


def _job(precision: str = "fp32", acc: str = "mi300x", method: str = "qlora", **strategy) -> dict:
    lora = {"lora": {"rank": 8}} if "lora" in method else {}
    return {"model": "llama-2-7b", "method": method, **lora, "seq_len": 1024, "precision": precision,
            "data": {"tokens": 1e8}, "global_batch": {"sequences": 8},
            "hardware": {"accelerator": acc, "count": 1},
            "strategy": {"micro_batch": 4, "recompute": "none", "framework": "hf", **strategy}}


def _step(job: dict) -> float:
    sc = resolve_job(job, CAT)
    return float(estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False).step_s)


def test_unset_is_false():
    assert _step(_job(nf4_dequant_dtype="fp16")) == _step(_job(nf4_dequant_dtype="fp16", bnb_compute_from_input=False))


def test_fp32_input_takes_the_fp32_rate_over_the_configured_fp16():
    """On an MI300X fp32 matrix (163 TFLOP/s) against fp16 (1,307): the from-input job is several times slower than
    the configured fp16 compute and slower than an fp32 quant state's fp32 compute by the weight recast."""
    fp16 = _step(_job(nf4_dequant_dtype="fp16"))
    taken = _step(_job(nf4_dequant_dtype="fp16", bnb_compute_from_input=True))
    fp32_state = _step(_job())
    assert taken > 3.0 * fp16
    assert taken > fp32_state


def test_the_flags_say_fp32_compute_with_a_recast():
    tr = resolve_job(_job(nf4_dequant_dtype="fp16"), CAT).training
    assert nf4_fp16_compute(tr, "fp16") and not nf4_recast(tr, "fp16")
    assert not nf4_fp16_compute(tr, "fp16", True) and nf4_recast(tr, "fp16", True)
    assert not nf4_recast(tr, "compute", True)  # an fp32 quant state: nothing to recast


def test_the_recast_copy_is_held_in_memory():
    """The fp16 dequantised weight (2 B) and its fp32 copy (4 B) live together at the cast: 1.5 fp32 copies of the
    largest linear (memory._nf4_copies), against one where the quant state is the compute dtype."""
    def transient(**strategy):
        sc = resolve_job(_job(nf4_lm_head=True, kbit_upcast=False, **strategy), CAT)
        return estimate_memory(sc.model, sc.training, sc.system, sc.strategy).items_bytes["nf4_dequant_transient"]

    head = resolve_job(_job(), CAT).model.lm_head_params
    assert transient(nf4_dequant_dtype="fp16", bnb_compute_from_input=True) == pytest.approx(6.0 * head, rel=1e-9)
    assert transient() == pytest.approx(4.0 * head, rel=1e-9)


@settings(max_examples=6, deadline=None)
@given(precision=st.sampled_from(["bf16", "fp16"]), dtype=st.sampled_from(["fp16", "compute"]))
def test_16_bit_jobs_are_untouched(precision, dtype):
    """With 16-bit norms (kbit_upcast false) a bf16 job already computes in its input's dtype and an fp16 input keeps
    the configured compute dtype; under PEFT's fp32 norms the input is fp32 and the weight casts are charged
    (docs/known-gaps.md 243 (a))."""
    assert _step(_job(precision=precision, nf4_dequant_dtype=dtype, bnb_compute_from_input=True,
                      kbit_upcast=False)) == _step(_job(precision=precision, nf4_dequant_dtype=dtype, kbit_upcast=False))
    assert _step(_job(precision=precision, nf4_dequant_dtype=dtype, bnb_compute_from_input=True, kbit_upcast=True)) > _step(
        _job(precision=precision, nf4_dequant_dtype=dtype, kbit_upcast=True))


def test_other_methods_refuse_it():
    with pytest.raises(TrainsizerError, match="bnb_compute_from_input"):
        _step(_job(method="lora", bnb_compute_from_input=True))


def test_a_bad_value_is_refused_at_the_job():
    with pytest.raises(TrainsizerError, match="bnb_compute_from_input"):
        resolve_job(_job(bnb_compute_from_input="sometimes"), CAT)
