"""SDPA's memory-efficient (CUTLASS) kernels under an explicit mask run a head dim between their tiles at the whole
tile: P V and the backward's dV / dK / dQ are computed a tile wide (kernel_forward.h MM1, kernel_backward.h
MatmulGradV / GradK / GradQ), Q K^T and dO V^T reduce over the head dim in 32 steps (perf_constants.yaml
attention.mem_efficient_tiles; calibration.mem_efficient_head_pad; docs/known-gaps.md 202)."""

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


@pytest.mark.parametrize("d", [64, 128, 256])
def test_a_head_dim_the_tiles_divide_runs_as_counted(d):
    assert K.mem_efficient_head_pad(d, d) == (1.0, 1.0)


def test_phi3s_head_dim_96_runs_the_128_kernels_p_v_and_three_backward_gemms_at_128():
    """Forward (96 + 128) / 192; backward (96 + 96 + 3 x 128) / 480."""
    fwd, bwd = K.mem_efficient_head_pad(96, 96)
    assert fwd == pytest.approx(224 / 192)
    assert bwd == pytest.approx(576 / 480)


@settings(max_examples=60, deadline=None)
@given(d_qk=st.integers(8, 512), d_v=st.integers(8, 512))
def test_the_padding_never_saves_work_and_wide_heads_stay_below_a_doubling(d_qk, d_v):
    """A tile is at most 128 wide: from head dim 64 up no GEMM runs twice its counted width."""
    for pad in K.mem_efficient_head_pad(d_qk, d_v):
        assert pad >= 1.0
        if min(d_qk, d_v) >= 64:
            assert pad < 2.0


def _job(heads: int, accelerator: str = "h100-sxm-80gb", mask: bool = True) -> dict:
    """A 3,072-wide model whose head dim is 3072 / heads (96 at 32 heads, 128 at 24)."""
    model = {"name": f"probe-{heads}", "layers": 32, "hidden": 3072, "heads": heads, "kv_heads": heads, "ffn": 8192,
             "vocab": 32064, "mlp": "swiglu", "norm": "rmsnorm", "position": "rope", "tied_embeddings": False,
             "max_position": 131072}
    return {"model": model, "method": "full", "data": {"tokens": 1e8}, "seq_len": 8192,
            "global_batch": {"sequences": 2}, "precision": "bf16", "explicit_attention_mask": mask,
            "hardware": {"accelerator": accelerator, "count": 1},
            "strategy": {"micro_batch": 2, "recompute": "full", "framework": "hf"}}


def _step_s(heads: int, **kw) -> float:
    return evaluate(resolve_job(_job(heads, **kw), CAT), CAT)["time"]["step_s"]


@pytest.mark.parametrize("acc", ["h100-sxm-80gb", "a100-sxm-80gb", "rtx-pro-6000"])
def test_at_equal_flops_head_dim_96_is_slower_than_128_only_under_the_mask(acc):
    """32 heads of 96 and 24 of 128 count the same attention FLOPs; FlashAttention-2 compiles 96, so unmasked the two
    take about the same time, while the masked 96 runs the 128-wide tiles."""
    masked = _step_s(32, accelerator=acc) / _step_s(24, accelerator=acc)
    unmasked = _step_s(32, accelerator=acc, mask=False) / _step_s(24, accelerator=acc, mask=False)
    assert masked > unmasked * 1.05


def test_the_k64_kernels_take_their_measured_share_of_fa2s_head_dim_128_figure():
    """FA2 paper Fig. 4(a) / (b), A100, no causal mask, 8K: xformers 75 TFLOPS at head dim 64, FA2 201 at 128."""
    assert K.mem_efficient_over_fa2_at(64, 64) == pytest.approx(75 / 201, abs=5e-4)
    assert K.mem_efficient_over_fa2_at(96, 96) == K.mem_efficient_over_fa2_at(256, 256) == K.mem_efficient_over_fa2


@pytest.mark.parametrize("acc", ["h100-sxm-80gb", "a100-sxm-80gb"])
def test_a_masked_head_dim_64_runs_slower_a_flop_than_128(acc):
    """48 heads of 64 and 24 of 128 on a 3,072-wide model count the same attention FLOPs: masked, the 64 one is the
    slower by about 0.483 / 0.373 on its attention; unmasked the two are timed alike."""
    masked = _step_s(48, accelerator=acc) / _step_s(24, accelerator=acc)
    unmasked = _step_s(48, accelerator=acc, mask=False) / _step_s(24, accelerator=acc, mask=False)
    assert masked > unmasked * 1.05
