"""strategy.fp8_lm_head (Megatron-Core fp8_output_proj: the LM head as a Transformer Engine Linear under the MXFP8
autocast, TELMHeadColumnParallelLinear) and its timing (compute.fp8_lm_head_delta)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import TrainsizerError
from trainsizer.estimate import step_time
from trainsizer.estimate.step_time import estimate_time
from trainsizer.render.i18n import t
from trainsizer.scenario import resolve_job

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import perf_mbridge26 as mb  # noqa: E402

# GPT-OSS 120B on 64 GB300 at the 26.06 layout: a 201,088-token vocabulary over 16,384 tokens a micro-batch
JOB = {"model": "gpt-oss-120b", "method": "pretrain", "data": {"tokens": 1e9}, "seq_len": 4096,
       "global_batch": {"sequences": 1280}, "precision": "fp8", "fp8_recipe": "mxfp8",
       "hardware": {"accelerator": "gb300", "count": 64, "network": "ib-ndr400"}}


def _scenario(recipe: str = "mxfp8", precision: str = "fp8", **strategy):
    s = {"ep": 16, "micro_batch": 4, "framework": "megatron-core", **strategy}
    return resolve_job({**JOB, "precision": precision, "fp8_recipe": recipe, "strategy": s}, load_catalog())


def _head_ms(**strategy) -> tuple[float, float]:
    sc = _scenario(**strategy)
    x = step_time._step(sc.model, sc.training, sc.system, sc.strategy, None, None, None)
    lt, _ = step_time._layer_time(x)
    return tuple(1e3 * float(np.asarray(v).reshape(-1)[0]) for v in (lt.head_fwd, lt.head_bwd))


def test_fp8_head_runs_its_gemms_at_the_fp8_rate_and_pays_its_casts():
    """The head's three GEMMs (6 x 16,384 x 2,880 x 201,088 FLOP) move to the MXFP8 rate, less than half their 16-bit
    time back; the backward also casts the output gradient over the whole vocabulary, so it keeps more of its time
    than the forward. Nothing else in the step moves."""
    f16, b16 = _head_ms()
    f8, b8 = _head_ms(fp8_lm_head=True)
    assert f8 < 0.8 * f16 and b8 < 0.8 * b16
    assert (f16 - f8) / f16 > (b16 - b8) / b16
    sc, sc8 = _scenario(), _scenario(fp8_lm_head=True)
    step = estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False)
    step8 = estimate_time(sc8.model, sc8.training, sc8.system, sc8.strategy, memory_note=False)
    assert step8.step_s < step.step_s


@pytest.mark.parametrize(("recipe", "precision"), [("tensorwise", "fp8"), ("mxfp8", "bf16")])
def test_fp8_head_needs_the_mxfp8_recipe(recipe, precision):
    with pytest.raises(TrainsizerError, match="fp8_lm_head"):
        sc = _scenario(recipe=recipe, precision=precision, fp8_lm_head=True)
        estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False)


def test_fp8_head_is_megatron_cores_and_torchtitans():
    """torchtitan's MXFP8LinearConverter converts the output layer too (known-gaps 55 (g)); FSDP keeps it 16-bit."""
    sc = _scenario(fp8_lm_head=True, framework="torchtitan", ep=1, zero=3)
    assert estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False).step_s > 0
    with pytest.raises(TrainsizerError, match="megatron-core, torchtitan"):
        sc = _scenario(fp8_lm_head=True, framework="fsdp", ep=1, zero=3)
        estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False)


def test_words_in_both_languages():
    assert t("field_strategy.fp8_lm_head", "zh") != t("field_strategy.fp8_lm_head", "en")


def test_the_releases_that_set_fp8_output_proj_state_it():
    """Megatron-Bridge v0.5.x's DeepSeek-V3 / GPT-OSS 120B GB300 / GB200 MXFP8 configs set fp8_output_proj; v0.4.x's
    and the other models' do not."""
    on = {r["id"] for r in mb.rows() if mb.job(r)["strategy"].get("fp8_lm_head")}
    assert on == {r["id"] for r in mb.rows() if r["release"] == "26.06" and r["precision"] == "FP8-MX"
                  and r["system"] in ("GB300", "GB200") and r["model"] in ("DeepSeekV3", "GPT OSS 120B")}
    assert on
