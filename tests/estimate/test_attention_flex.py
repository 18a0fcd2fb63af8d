"""FlexAttention's Triton template (attention_kernel flex: torchtitan's gpt_oss): its rate read from torchtitan's
measured GB200 kernel table (perf_constants.yaml attention.flash_efficiency_flex), FA2's figures where no family entry
is held, and a narrow head's softmax work charged as on the native kernels."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from trainsizer.catalog import load_catalog
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.compute import flash_head_dim_ratio
from trainsizer.estimate.flops import causal_fraction
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.step_time import estimate_time, perf_style, step_time_arrays
from trainsizer.models.arch import ModelArch
from trainsizer.scenario import resolve_job

# torchtitan e4b1220d7 (PR 3462), "Triton FlexAttention | standard_doc_ids" on GB200, Qwen3-32B heads, d 128, 8K
FLEX_GB200_FWD_MS, FLEX_GB200_FWD_TFS, FLEX_GB200_BWD_MS = 1.116, 392.57, 3.473
GB200_BF16_TFLOPS = 2500.0


def gb200_tray(gpus=4) -> System:
    return System(accelerator="gb200", gpus=gpus, gpus_per_node=4, memory_gib=184,
                  peak_tflops={"bf16": GB200_BF16_TFLOPS, "fp16": GB200_BF16_TFLOPS, "fp8": 5000.0},
                  hbm_gb_s=8000.0, intra_node_gb_s=900.0, scaleup_domain=72, inter_node_gb_s=50.0)


def test_flex_rates_are_the_measured_gb200_figures_and_fa2_where_none_is_held():
    k = load_constants()
    assert k.flash_fraction("gb200", "flex") * GB200_BF16_TFLOPS == pytest.approx(FLEX_GB200_FWD_TFS, rel=0.01)
    assert k.flash_bwd_ratio("gb200", "flex") == pytest.approx(FLEX_GB200_BWD_MS / FLEX_GB200_FWD_MS, rel=0.01)
    assert k.flash_fraction("b200", "flex") == k.flash_fraction("gb200", "flex")  # the same die
    # between FA2's sm80 kernels on sm100 (known-gaps 199: about the H100's rate) and cuDNN's tcgen05 ones
    assert k.flash_fraction("gb200", "fa2") < k.flash_fraction("gb200", "flex") < k.flash_fraction("gb200", "native")
    for part in ("h100-sxm", "a100-sxm-80gb", "mi300x", "gb300"):  # no measurement of the kernel there
        assert k.flash_fraction(part, "flex") == k.flash_fraction(part, "fa2")
        assert k.flash_bwd_ratio(part, "flex") == k.flash_bwd_ratio(part, "fa2")


@pytest.mark.parametrize("heads", [32, 64])  # head dim 128 and 64 at hidden 4,096
def test_flex_forward_costs_its_rate_and_a_narrow_heads_softmax(heads):
    """Against FA2 on the same job, the forward attention time moves by the causal FLOPs x (n / flex - 1 / fa2), n the
    narrow-head time per FLOP (calibration.narrow_head: 1 at 128) that the flex rate, measured at 128, carries."""
    k = load_constants()
    model = ModelArch(name="dense", family="llama", layers=4, hidden=4096, heads=heads, kv_heads=8, ffn=14336,
                      vocab=128256, max_position=8192)
    tr, system = Training(seq_len=8192, global_batch_seqs=4), gb200_tray()
    st = Strategy(dp=4, zero=3, micro_batch=1, framework="torchtitan")

    def forward(kernel: str) -> float:
        style = dataclasses.replace(perf_style("torchtitan"), attention_kernel=kernel)
        return float(np.asarray(step_time_arrays(model, tr, system, st, framework_style=style)["forward_compute"]))

    flops = model.layers * 4.0 * 8192 * 8192 * causal_fraction(8192) * heads * model.head_dim
    narrow = k.narrow_head(model.head_dim, model.head_dim)[0]
    peak = GB200_BF16_TFLOPS * 1e12
    expected = flops * (narrow / (k.flash_fraction("gb200", "flex") * peak) - 1.0 / (k.flash_fraction("gb200", "fa2") * peak))
    assert forward("flex") - forward("fa2") == pytest.approx(expected, rel=0.01)
    assert narrow == (1.0 if heads == 32 else pytest.approx(1.396, rel=1e-3))


def test_flex_pads_each_head_dim_to_a_power_of_two():
    """torch/_inductor/kernel/flex/common.py set_head_dim_values: QK_HEAD_DIM_ROUNDED and V_HEAD_DIM_ROUNDED are
    next_power_of_two of each, the tiles' width: MLA's 192 / 128 runs 256 / 128; GPT-OSS's 64 as is."""
    assert flash_head_dim_ratio(192, 128, "flex") == pytest.approx((256 + 128) / (192 + 128))
    assert flash_head_dim_ratio(64, 64, "flex") == 1.0
    assert flash_head_dim_ratio(80, 80, "flex") == pytest.approx(128 / 80)
    assert flash_head_dim_ratio(192, 128, "native") == 1.0


def test_torchtitan_times_gpt_oss_attention_at_its_own_kernel_and_flex_where_stated():
    """torchtitan's gpt_oss defaults to varlen attention since e4035785d (2026-06-18; FlexAttention only before): the
    style times it at its own kernel, as any family; a run of the flex era states flex, which is timed slower on GB200
    (flex's measured rate under FA2's)."""

    def step(model: str, **extra) -> float:
        job = {"model": model, "data": {"tokens": 1e9}, "seq_len": 8192, "global_batch": {"sequences": 4},
               "hardware": {"accelerator": "gb200", "count": 4},
               "strategy": {"micro_batch": 1, "framework": "torchtitan", "recompute": "full", **extra}}
        sc = resolve_job(job, load_catalog())
        return estimate_time(sc.model, sc.training, sc.system, sc.strategy).step_s

    style = perf_style("torchtitan").attention_kernel
    assert step("gpt-oss-20b") == step("gpt-oss-20b", attention_kernel=style)
    assert step("gpt-oss-20b", attention_kernel="flex") > step("gpt-oss-20b")
    assert step("llama-3.1-8b") == step("llama-3.1-8b", attention_kernel=style)


def _flex_notes(accelerator: str) -> tuple[str, ...]:
    job = {"model": "gpt-oss-20b", "data": {"tokens": 1e9}, "seq_len": 4096, "global_batch": {"sequences": 8},
           "hardware": {"accelerator": accelerator, "count": 8 if accelerator != "gb200" else 4},
           "strategy": {"micro_batch": 1, "framework": "torchtitan", "zero": 3, "recompute": "full",
                        "attention_kernel": "flex"}}
    sc = resolve_job(job, load_catalog())
    return estimate_time(sc.model, sc.training, sc.system, sc.strategy).notes


def test_flex_off_the_measured_parts_says_it_is_timed_at_fa2s_rate():
    """torchtitan's gpt_oss on H100 ran FlexAttention at FA2's figures with no word (known-gaps 43 (o)): the note names
    the parts the kernel was measured on and what it ran at there; on GB200, its own rate, no note."""
    k = load_constants()
    ratio = k.flash_fraction("b200", "flex") / k.flash_fraction("b200", "fa2")  # the first measured family's
    note = next(n for n in _flex_notes("h100-sxm-80gb") if "FlexAttention" in n)
    assert "FlashAttention-2's rate" in note and "b200 / gb200" in note and f"{ratio:.2f}" in note
    assert not any("FlexAttention" in n for n in _flex_notes("gb200"))
