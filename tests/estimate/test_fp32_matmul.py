"""fp32 training's matmul precision (strategy.tf32, PerfStyle.fp32_matmul_tf32): PyTorch runs fp32 GEMMs at full fp32
unless TF32 is allowed (allow_tf32 False since 1.12), so the hf / torchtune / torchtitan styles time them at the part's
fp32 rate (NVIDIA's CUDA cores, AMD's fp32 matrix cores) and megatron / megatron-core (NGC containers,
TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1) at the TF32 one; a job states tf32 to override. QLoRA in an fp32 job is estimated:
its 4-bit linears compute in bnb_4bit_compute_dtype (nf4_dequant_dtype fp16: fp16 GEMMs with fp32 <-> fp16 copies
around each linear; compute: fp32). known-gaps 163 (f), (g) and 170."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError
from trainsizer.estimate.inputs import fp32_matmul_key
from trainsizer.estimate.step_time import estimate_time, perf_style
from trainsizer.render.i18n import t
from trainsizer.scenario import resolve_job

CAT = load_catalog()


def _job(precision: str = "fp32", acc: str = "h100-sxm-80gb", method: str = "lora", framework: str = "hf",
         count: int = 1, **strategy) -> dict:
    lora = {"lora": {"rank": 8}} if "lora" in method else {}
    return {"model": "llama-2-7b", "method": method, **lora, "seq_len": 1024, "precision": precision,
            "data": {"tokens": 1e8}, "global_batch": {"sequences": 8 * count},
            "hardware": {"accelerator": acc, "count": count},
            "strategy": {"micro_batch": 4, "recompute": "none", "framework": framework, **strategy}}


def _time(job: dict):
    sc = resolve_job(job, CAT)
    return estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False)


def _step(job: dict) -> float:
    return float(_time(job).step_s)


def test_the_styles_defaults_follow_the_stacks():
    assert perf_style("megatron").fp32_matmul_tf32 and perf_style("megatron-core").fp32_matmul_tf32
    for name in ("hf", "torchtune", "torchtitan", "deepspeed", "fsdp"):
        assert not perf_style(name).fp32_matmul_tf32


def test_hf_fp32_runs_at_the_fp32_rate_unless_the_job_allows_tf32():
    """On an H100 the fp32 CUDA-core peak is 67 against TF32's 495: full fp32 is several times slower; the HF
    default is tf32 false, stated true it is the TF32 estimate."""
    full, tf32 = _step(_job()), _step(_job(tf32=True))
    assert _step(_job(tf32=False)) == full
    assert full > 3.0 * tf32
    assert _time(_job()).mfu == pytest.approx(_time(_job(tf32=True)).mfu, rel=0.6)  # each against its own peak


def test_a_16_bit_job_is_untouched_by_the_setting():
    assert _step(_job(precision="bf16", tf32=False)) == _step(_job(precision="bf16", tf32=True)) \
        == _step(_job(precision="bf16"))


def test_a_part_without_tf32_runs_fp32_either_way():
    assert _step(_job(acc="v100-sxm-32gb", tf32=True)) == _step(_job(acc="v100-sxm-32gb"))


def test_amd_full_fp32_is_its_matrix_fp32_peak():
    peaks = CAT.accelerator("mi300x").tflops_dense
    assert fp32_matmul_key(peaks, tf32=False) == "fp32_matrix"
    assert fp32_matmul_key(peaks, tf32=True) == "tf32"
    assert _step(_job(acc="mi300x")) > 2.0 * _step(_job(acc="mi300x", tf32=True))


@given(st.dictionaries(st.sampled_from(["tf32", "fp32_matrix", "fp32"]), st.floats(1.0, 2000.0)), st.booleans())
@settings(max_examples=60, deadline=None)
def test_the_key_is_a_listed_peak_and_tf32_only_when_allowed(peaks, tf32):
    key = fp32_matmul_key(peaks, tf32)
    assert key != "tf32" or tf32
    if set(peaks) - {"tf32"} or (tf32 and peaks):  # a part with only TF32 has no full-fp32 rate: refused
        assert key in peaks
    if tf32 and "tf32" in peaks:
        assert key == "tf32"


def test_auto_gives_each_strategy_its_stacks_precision():
    """framework auto: a TP layout runs megatron-core (TF32), a DP-only fine-tune hf (fp32); one batch of both gives
    each strategy what it gets alone, and the TP one is the faster for it."""
    from trainsizer.estimate import evaluate_batch
    from trainsizer.estimate.inputs import Strategy

    sc = resolve_job(_job(method="full", framework="auto", count=8, micro_batch=1, zero=3), CAT)

    def step(**kw):
        s = Strategy(micro_batch=1, recompute="full", framework="auto", **kw)
        return evaluate_batch(sc.model, sc.training, sc.system, s, parts=("time",), threads=1)["step_s"]

    both = step(tp=np.array([1, 2]), dp=np.array([8, 4]), zero=np.array([3, 1]),
                distributed_optimizer=np.array([False, True]))
    alone = [float(step(tp=1, dp=8, zero=3)), float(step(tp=2, dp=4, zero=1, distributed_optimizer=True))]
    assert np.allclose(both, alone, rtol=1e-9)
    assert alone[1] < alone[0]


def test_the_field_is_carried_and_labelled():
    sc = resolve_job(_job(tf32=True), CAT)
    assert sc.strategy.tf32 is True and sc.summary()["strategy"]["tf32"] is True
    assert "TF32" in t("field_strategy.tf32", "en") and t("field_strategy.tf32", "zh") != t("field_strategy.tf32", "en")
    with pytest.raises(TrainsizerError):
        resolve_job(_job(tf32="sometimes"), CAT)


def test_qlora_in_fp32_is_estimated_and_fp8_still_refused():
    assert np.isfinite(_step(_job(method="qlora")))
    with pytest.raises(TrainsizerError, match="fp8"):
        resolve_job(_job(method="qlora", precision="fp8"), CAT)


def test_fp16_compute_4bit_linears_run_at_the_fp16_rate_with_casts():
    """nf4_dequant_dtype fp16 in an fp32 job (bnb_4bit_compute_dtype float16): the base GEMMs at the fp16 rate, far
    faster than BitsAndBytesConfig's default float32 compute on an H100; the casts around each linear cost time, so
    it is slower than the same GEMMs with no casts would be, and no weight recast is charged."""
    fp16, fp32 = _step(_job(method="qlora", nf4_dequant_dtype="fp16")), _step(_job(method="qlora"))
    assert fp16 < 0.5 * fp32
    from trainsizer.estimate.model_states import nf4_fp16_compute, nf4_recast

    tr = resolve_job(_job(method="qlora", nf4_dequant_dtype="fp16"), CAT).training
    assert nf4_fp16_compute(tr, "fp16") and not nf4_recast(tr, "fp16")
    assert not nf4_fp16_compute(tr, "compute")


def test_the_estimate_says_which_precision_it_timed():
    from trainsizer.evaluate import framework_assumed

    assert framework_assumed(resolve_job(_job(), CAT))["tf32"] == {"requested": None, "assumed": False}
    assert framework_assumed(resolve_job(_job(framework="megatron-core"), CAT))["tf32"]["assumed"] is True
    assert framework_assumed(resolve_job(_job(tf32=True), CAT))["tf32"] == {"requested": True, "assumed": True}
    assert "tf32" not in framework_assumed(resolve_job(_job(precision="bf16"), CAT))
