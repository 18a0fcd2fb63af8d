"""SDPA's memory-efficient backward on the parts whose thread block gets at most 99 KB of shared memory (sm_86 / 89 /
120): at head dims in (64, 128] the 128x128 kMaxK 128 kernel does not fit, and attention_backward.cu launches the 64x64
one (dK / dV in an fp32 workspace), timed at the kMaxK 64 kernels' measured 64x64-tile figure; sm_86 / 89 keep a
128x64 register kernel to head dim 96 (perf_constants.yaml attention.mem_efficient_small_smem; docs/known-gaps.md
216)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.estimate.calibration import load_constants
from trainsizer.evaluate import evaluate
from trainsizer.scenario import resolve_job

CAT = load_catalog([])
K = load_constants()
SM120 = ["rtx-pro-6000", "rtx-5090"]
SM89 = ["rtx-4090", "l40s", "rtx-6000-ada"]
LARGE = ["a100-sxm-80gb", "h100-sxm-80gb", "b200"]


@pytest.mark.parametrize("acc", SM120 + SM89)
@pytest.mark.parametrize("d", [100, 112, 128])
def test_the_99kb_parts_run_the_64x64_backward_above_the_register_kernels_range(acc, d):
    assert K.mem_efficient_bwd_over_fa2_at(acc, d, d) == K.mem_efficient_k64_over_fa2
    assert K.mem_efficient_over_fa2_at(d, d) == K.mem_efficient_over_fa2  # the forward's 64x128 tiles fit


@pytest.mark.parametrize("acc", LARGE)
@pytest.mark.parametrize("d", [80, 96, 128])
def test_the_large_smem_parts_keep_the_128x128_backward(acc, d):
    assert K.mem_efficient_bwd_over_fa2_at(acc, d, d) == K.mem_efficient_over_fa2


@pytest.mark.parametrize("d", [72, 80, 96])
def test_only_sm86_and_sm89_have_the_128x64_register_kernel_to_head_dim_96(d):
    """generate_kernels.py dispatches it where `cc == 86 || cc == 89`: sm_120 (Phi-3's 96) takes the 64x64 kernel."""
    for acc in SM89 + ["rtx-3090", "a10g"]:
        assert K.mem_efficient_bwd_over_fa2_at(acc, d, d) == K.mem_efficient_over_fa2
    for acc in SM120:
        assert K.mem_efficient_bwd_over_fa2_at(acc, d, d) == K.mem_efficient_k64_over_fa2


@settings(max_examples=80, deadline=None)
@given(d_qk=st.integers(8, 512), d_v=st.integers(8, 512), acc=st.sampled_from(SM120 + SM89 + LARGE + ["rtx-3090"]))
def test_the_backward_never_runs_faster_than_the_forward_figure_and_differs_only_in_the_fallback_range(d_qk, d_v, acc):
    bwd, fwd = K.mem_efficient_bwd_over_fa2_at(acc, d_qk, d_v), K.mem_efficient_over_fa2_at(d_qk, d_v)
    assert bwd <= fwd
    if bwd < fwd:
        assert 64 < max(d_qk, d_v) <= 128 and acc not in LARGE


def _job(accelerator: str, mask: bool = True, precision: str = "bf16") -> dict:
    """Llama-3.1-8B-like shapes at head dim 128, 2 x 8,192 positions, as perf_heldout50's trainer rows."""
    model = {"name": "probe-d128", "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn": 14336,
             "vocab": 128256, "mlp": "swiglu", "norm": "rmsnorm", "position": "rope", "tied_embeddings": False,
             "max_position": 131072}
    return {"model": model, "method": "full", "data": {"tokens": 1e8}, "seq_len": 8192,
            "global_batch": {"sequences": 2}, "precision": precision, "explicit_attention_mask": mask,
            "hardware": {"accelerator": accelerator, "count": 1},
            "strategy": {"micro_batch": 2, "recompute": "full", "framework": "hf"}}


def _step_s(accelerator: str, **kw) -> float:
    return evaluate(resolve_job(_job(accelerator, **kw), CAT), CAT)["time"]["step_s"]


def _without_small_smem(monkeypatch) -> None:
    """The shipped constants with no 99 KB family: every part's backward at the 128x128 kernel's figure."""
    monkeypatch.setitem(K.raw["attention"], "mem_efficient_small_smem",
                        {"families": [], "rf_max_k": 96, "rf_families": []})


@pytest.mark.parametrize("acc", SM120)
def test_the_fallback_slows_a_masked_16_bit_step_on_sm120_and_nothing_else(acc, monkeypatch):
    masked, unmasked, fp32 = _step_s(acc), _step_s(acc, mask=False), _step_s(acc, precision="fp32")
    _without_small_smem(monkeypatch)
    assert _step_s(acc) < masked
    assert _step_s(acc, mask=False) == unmasked
    assert _step_s(acc, precision="fp32") == fp32


def test_the_large_smem_parts_steps_are_unchanged(monkeypatch):
    before = {acc: _step_s(acc) for acc in ["a100-sxm-80gb", "h100-sxm-80gb"]}
    _without_small_smem(monkeypatch)
    assert {acc: _step_s(acc) for acc in before} == before
