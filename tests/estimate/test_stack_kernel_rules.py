"""Options a stack runs or does not: PyTorch's own attention kernels (attention_kernel sdpa / flex) on the Megatron
stacks (validate.TORCH_ATTENTION_FRAMEWORKS) and the MXFP8 LM head (fp8_lm_head) on the stacks that convert it
(validate.FP8_LM_HEAD_FRAMEWORKS: Megatron-Core's fp8_output_proj, torchtitan's MXFP8LinearConverter)."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import StrategyError
from trainsizer.estimate.step_time import estimate_time
from trainsizer.scenario import resolve_job


def _step(accelerator="h100-sxm-80gb", count=8, precision="bf16", fp8_recipe=None, **strategy):
    job = {"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": 4096, "global_batch": {"sequences": 8},
           "precision": precision, "hardware": {"accelerator": accelerator, "count": count},
           "strategy": {"micro_batch": 1, "recompute": "full", **strategy}}
    if fp8_recipe:
        job["fp8_recipe"] = fp8_recipe
    sc = resolve_job(job, load_catalog())
    return estimate_time(sc.model, sc.training, sc.system, sc.strategy).step_s


@pytest.mark.parametrize("kernel", ["sdpa", "flex"])
@pytest.mark.parametrize("framework", ["megatron-core", "megatron"])
def test_pytorchs_attention_is_refused_on_a_megatron_stack_naming_what_it_runs(kernel, framework):
    """flex on megatron-core (NeMo, Megatron-Bridge) was timed as stated; that stack calls TE's DotProductAttention or
    Megatron's own, never torch SDPA / FlexAttention."""
    with pytest.raises(StrategyError) as err:
        _step(framework=framework, tp=8, dp=1, attention_kernel=kernel)
    assert err.value.rule == "attention_kernel_framework"
    text = str(err.value)
    assert f"attention_kernel {kernel}" in text and "Transformer Engine" in text and "fa2 or native" in text
    assert "torchtitan" in text


def test_auto_is_judged_as_the_stack_it_resolves_to():
    with pytest.raises(StrategyError, match="resolved to megatron-core"):
        _step(framework="auto", tp=8, dp=1, attention_kernel="sdpa")


@pytest.mark.parametrize("framework", ["torchtitan", "hf", "fsdp", "deepspeed"])
def test_pytorch_stacks_run_their_own_attention(framework):
    assert _step(framework=framework, dp=8, zero=3, attention_kernel="sdpa") > 0


@pytest.mark.parametrize("kernel", ["fa2", "native"])
def test_a_megatron_stack_keeps_its_kernels(kernel):
    assert _step(framework="megatron-core", tp=8, dp=1, attention_kernel=kernel) > 0


def test_the_mxfp8_lm_head_runs_on_torchtitan_and_is_timed_there():
    """torchtitan's MXFP8LinearConverter converts the output layer too (known-gaps 57 (n)); fp8_lm_head was refused
    there as a Megatron-Core option. The head's GEMMs at the MXFP8 rate make the step shorter."""
    kw = dict(accelerator="gb200", count=4, precision="fp8", fp8_recipe="mxfp8", framework="torchtitan", dp=4, zero=3)
    assert _step(fp8_lm_head=True, **kw) < _step(**kw)


@pytest.mark.parametrize("framework", ["hf", "fsdp", "torchtune"])
def test_the_mxfp8_lm_head_refusal_names_the_stacks_that_keep_it_16_bit(framework):
    with pytest.raises(StrategyError) as err:
        _step(accelerator="gb200", count=4, precision="fp8", fp8_recipe="mxfp8", framework=framework, dp=4, zero=3,
              fp8_lm_head=True)
    assert err.value.rule == "fp8_lm_head_framework"
    assert "megatron-core, torchtitan" in str(err.value) and "16 bit" in str(err.value)
