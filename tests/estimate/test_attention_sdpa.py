"""PyTorch SDPA's flash backend (attention_kernel sdpa, the torchtitan / torchtune styles): FlashAttention-2 on NVIDIA,
AOTriton on ROCm at the rate read from AMD's published TorchTitan profile (benchmarks/attention_rocm.py,
perf_constants.yaml attention.flash_efficiency_sdpa), not tuned on a training row."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from trainsizer.catalog import load_catalog
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.compute import flash_head_dim_ratio
from trainsizer.estimate.step_time import estimate_time, perf_style
from trainsizer.scenario import resolve_job

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import attention_rocm as ar  # noqa: E402


@pytest.mark.parametrize("family", ["mi300x", "mi325x"])
def test_rocm_sdpa_figures_are_the_profile_derivation(family):
    """The shipped share and backward ratio are what the Primus profile (MI325X, 70B, 8K, full AC) gives with the
    estimate's FLOP counts and the family's GEMM share: the attention rates as fractions of the GEMM rate of the
    same run."""
    k, derived = load_constants(), ar.derived_constants()[family]
    assert k.flash_fraction(family, "sdpa") == pytest.approx(derived["share"], abs=5e-4)
    assert k.flash_bwd_ratio(family, "sdpa") == pytest.approx(derived["bwd_over_fwd"], abs=5e-3)


@pytest.mark.parametrize("family", ["mi355x", "mi350x"])
def test_cdna4_sdpa_figures_are_the_measured_kernel_rates(family):
    """CDNA 4's share and backward ratio are HipKittens' torch SDPA baseline on MI355X (causal, d 128, 8K; forward
    630, backward 224 TFLOPS): the forward over the MI355X's peak, the backward / forward time 2.5 x 630 / 224;
    MI350X the same die and kernels."""
    k, measured = load_constants(), ar.cdna4_constants()[family]
    assert k.flash_fraction(family, "sdpa") == pytest.approx(measured["share"], abs=5e-4)
    assert k.flash_bwd_ratio(family, "sdpa") == pytest.approx(measured["bwd_over_fwd"], abs=5e-3)
    assert ar.cdna4_rates() == {"fwd": pytest.approx(630.4, abs=0.1), "bwd": pytest.approx(224.0, abs=0.1)}


def test_rocm_sdpa_runs_below_the_gemms_and_the_other_kernels():
    """The profile's attention forward runs at about 1 / 2.8 of the GEMM rate, the backward at about 1 / 5.9: slower
    per FLOP than the FA2 / CK figure the other styles take on the part, the backward most."""
    x_fwd, x_bwd = ar.gemm_over_attention()
    assert 2.5 < x_fwd < 3.2 and 5.5 < x_bwd < 6.3
    k = load_constants()
    for family in ("mi300x", "mi325x", "mi355x", "mi350x"):
        assert k.flash_fraction(family, "sdpa") < 0.75 * k.flash_fraction(family, "fa2")
        assert k.flash_bwd_ratio(family, "sdpa") > 1.5 * k.flash_bwd_ratio(family, "fa2")


@pytest.mark.parametrize("part", ["h100-sxm", "a100-sxm-80gb", "b200"])
def test_sdpa_is_flashattention2_where_no_family_figure_is_held(part):
    """On NVIDIA torch compiles FA2's kernels into SDPA: every FA2 figure (share, backward ratio, length curve, head
    dims) holds."""
    k = load_constants()
    assert k.flash_fraction(part, "sdpa") == k.flash_fraction(part, "fa2")
    assert k.flash_bwd_ratio(part, "sdpa") == k.flash_bwd_ratio(part, "fa2")
    for length in (2048, 8192, 65536):
        assert k.flash_length_factor(part, "sdpa", length) == k.flash_length_factor(part, "fa2", length)
    mixed = np.broadcast_to(k.flash_length_factor(part, np.array(["sdpa", "native"]), np.array([2048, 2048])), (2,))
    assert mixed[0] == pytest.approx(k.flash_length_factor(part, "fa2", 2048))
    assert flash_head_dim_ratio(80, 80, "sdpa") == flash_head_dim_ratio(80, 80, "fa2") > 1.0


def test_pytorch_native_styles_call_sdpa():
    assert perf_style("torchtitan").attention_kernel == "sdpa"
    assert perf_style("torchtune").attention_kernel == "sdpa"
    assert perf_style("megatron-core").attention_kernel == "native"


def _step(accelerator: str, kernel: str | None = None) -> float:
    strategy = {"micro_batch": 1, "framework": "torchtitan", "zero": 3, "recompute": "selective",
                **({"attention_kernel": kernel} if kernel else {})}
    job = {"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": 8192, "global_batch": {"sequences": 8},
           "hardware": {"accelerator": accelerator, "count": 8}, "strategy": strategy}
    sc = resolve_job(job, load_catalog())
    return estimate_time(sc.model, sc.training, sc.system, sc.strategy).step_s


def test_torchtitan_on_mi300x_is_slower_than_with_vendor_kernels_and_unchanged_on_h100():
    """A torchtitan job on MI300X times SDPA's ROCm kernels unless it states the vendor-tuned ones (Primus-Turbo /
    Transformer Engine: attention_kernel native); on H100 SDPA is FA2, so the style's step is the fa2 step."""
    assert _step("mi300x") > 1.2 * _step("mi300x", "native")
    assert _step("mi300x", "sdpa") == _step("mi300x")
    assert _step("h100-sxm-80gb", "sdpa") == pytest.approx(_step("h100-sxm-80gb", "fa2"), rel=1e-12)


def _notes(accelerator: str, kernel: str | None = None) -> list[str]:
    strategy = {"micro_batch": 1, "framework": "torchtitan", "zero": 3, "recompute": "selective",
                **({"attention_kernel": kernel} if kernel else {})}
    job = {"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": 8192, "global_batch": {"sequences": 8},
           "hardware": {"accelerator": accelerator, "count": 8}, "strategy": strategy}
    sc = resolve_job(job, load_catalog())
    return [str(n) for n in estimate_time(sc.model, sc.training, sc.system, sc.strategy).notes]


def test_the_estimate_says_when_it_timed_rocm_sdpa():
    """The reader of an AMD torchtitan estimate learns the attention is PyTorch SDPA's ROCm kernels and how to state
    the vendor ones, on CDNA 3 and CDNA 4; not on NVIDIA, not with attention_kernel native."""
    for accelerator in ("mi300x", "mi355x"):
        assert any("AOTriton" in n and "attention_kernel native" in n for n in _notes(accelerator)), accelerator
    for accelerator, kernel in (("mi300x", "native"), ("h100-sxm-80gb", None), ("mi355x", "native")):
        assert not any("AOTriton" in n for n in _notes(accelerator, kernel)), accelerator
    k = load_constants()
    assert k.sdpa_own_rate("mi325x") and k.sdpa_own_rate("mi355x") and not k.sdpa_own_rate("h100-sxm-80gb")


def test_no_sdpa_note_where_the_job_states_flexattention():
    """A torchtitan gpt_oss run of the flex era (to e4035785d, 2026-06-18) states attention_kernel flex: its MI300X
    step is timed as flex, so the estimate must not say SDPA's ROCm kernels timed it; today's varlen default is timed
    at the style's SDPA figures (aten's flash ops, AOTriton on ROCm) and noted as such."""
    def notes(kernel: str | None) -> list[str]:
        strategy = {"micro_batch": 1, "framework": "torchtitan", "zero": 3, **({"attention_kernel": kernel} if kernel
                                                                               else {})}
        job = {"model": "gpt-oss-20b", "data": {"tokens": 1e9}, "seq_len": 8192, "global_batch": {"sequences": 8},
               "hardware": {"accelerator": "mi300x", "count": 8}, "strategy": strategy}
        sc = resolve_job(job, load_catalog())
        return [str(n) for n in estimate_time(sc.model, sc.training, sc.system, sc.strategy).notes]

    assert not any("AOTriton" in n for n in notes("flex"))
    assert any("AOTriton" in n for n in notes(None))
    assert any("AOTriton" in n for n in notes("sdpa"))


def _hf_notes(accelerator: str, lang: str = "en", **strategy) -> list[str]:
    from trainsizer.messages import tr

    job = {"model": "llama-3.1-8b", "method": "lora", "data": {"tokens": 1e8}, "seq_len": 2048,
           "global_batch": {"sequences": 8}, "hardware": {"accelerator": accelerator, "count": 1},
           "strategy": {"micro_batch": 2, "framework": "hf", **strategy}}
    sc = resolve_job(job, load_catalog())
    return [str(tr(n, lang)) for n in estimate_time(sc.model, sc.training, sc.system, sc.strategy).notes]


def test_the_estimate_says_sdpa_runs_cudnn_first_on_datacenter_hopper_and_blackwell():
    """PyTorch's SDPA dispatch (sdp_utils.cpp check_prefer_cudnn_attention) runs cuDNN first on sm90 / sm100 parts
    under torch 2.9 and >= 2.11, FA2 elsewhere: a torchtitan (sdpa) job there is told how to state it; not on an
    A100, an Ada card or an AMD part, nor once the job states native."""
    k = load_constants()
    for part in ("h100-sxm-80gb", "h200-sxm-141gb", "h800-sxm-80gb", "h20", "gh200-96gb", "b200", "gb300"):
        assert k.sdpa_cudnn_first(part), part
    for part in ("a100-sxm-80gb", "rtx-4090", "l40s", "rtx-5090", "mi300x"):
        assert not k.sdpa_cudnn_first(part), part
    said = [n for n in _notes("h100-sxm-80gb") if "cuDNN" in n]
    assert len(said) == 1 and "torch 2.9" in said[0] and "attention_kernel native" in said[0]
    assert not any("cuDNN" in n for n in _notes("h100-sxm-80gb", "native"))
    assert not any("cuDNN" in n for n in _notes("a100-sxm-80gb"))


def test_an_hf_job_is_told_transformers_default_sdpa_runs_cudnn_there():
    """The hf style times flash_attention_2 (PerfStyle.library_attention_kernel sdpa: transformers' own default):
    unstated on an H200 the estimate says so in en and zh; a stated kernel, or an A100, says nothing of it."""
    assert perf_style("hf").library_attention_kernel == "sdpa" and perf_style("hf").attention_kernel == "fa2"
    said = [n for n in _hf_notes("h200-sxm-141gb") if "cuDNN" in n]
    assert len(said) == 1 and "flash_attention_2" in said[0] and "attention_kernel native" in said[0]
    for stated in ("fa2", "native", "sdpa"):
        notes = [n for n in _hf_notes("h200-sxm-141gb", attention_kernel=stated) if "transformers' own default" in n]
        assert not notes, stated
    assert not any("cuDNN" in n for n in _hf_notes("a100-sxm-80gb"))
    assert any("cuDNN 融合注意力" in n and "attention_kernel native" in n for n in _hf_notes("h200-sxm-141gb", "zh"))
