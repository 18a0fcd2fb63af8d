"""An MoE layer's element-wise traffic by part (compute.moe_elementwise_traffic, step_time._moe_passes): its norms,
residuals and RoPE at their own eager ratio, the experts' activation at the activation's, and the routed experts'
activation compiled behind DeepEP on a PyTorch-native style (NeMo AutoModel's GroupedExpertsDeepEP: the
@torch.compile'd weighted_swiglu / quick_geglu_deepep), not the dense layer's mixed ratio."""

from __future__ import annotations

import dataclasses

import pytest

from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.compute import eager_elementwise_traffic, moe_elementwise_traffic
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time

from .test_perf_common import h100_cluster, mixtral

K = load_constants()
EAGER = K.eager_bytes_per_element


def _compute(dispatcher: str, act_kernel: str | None, model=None, compile_: bool = False) -> float:
    training = Training(seq_len=4096, global_batch_seqs=8, precision="bf16")
    st = Strategy(dp=8, ep=8, zero=3, micro_batch=1, recompute="none", framework="torchtitan",
                  moe_dispatcher=dispatcher, activation_kernel=act_kernel, norm_kernel="fused",
                  torch_compile=compile_)
    return estimate_time(model or mixtral(), training, h100_cluster(8), st).breakdown_s["compute"]


def _hbm() -> float:
    return h100_cluster().hbm_gb_s * 1e9 * K.hbm_efficiency


def test_parts_against_the_dense_ratio():
    """Without a dense MLP (ffn 0) the dense ratio is the norms' and RoPE's alone; the activation's own ratio is
    10 / 6 for an eager SwiGLU and 1 fused, whatever RoPE costs."""
    m = dataclasses.replace(mixtral(), ffn=0)
    common, act = moe_elementwise_traffic(m, EAGER, 20.0, "fused", act_kernel="fused")
    assert float(common) == pytest.approx(float(eager_elementwise_traffic(m, EAGER, 20.0, "fused",
                                                                          act_kernel="fused")))
    assert float(common) > 1.0 and act == 1.0
    assert moe_elementwise_traffic(m, EAGER, 48.0, "fused", act_kernel="eager")[1] == pytest.approx(10.0 / 6.0)
    assert moe_elementwise_traffic(m, EAGER, 20.0, fused_rest=True) == (1.0, 1.0)


def test_routed_activation_behind_deepep_is_compiled():
    """behind DeepEP the routed experts' activation is the compiled one whatever activation_kernel says (mixtral
    has neither shared experts nor dense layers); with the all-to-all dispatcher an eager SwiGLU streams 10 B per
    inner element against 6, in the forward and twice in the backward."""
    assert _compute("flex", "eager") == pytest.approx(_compute("flex", "fused"), rel=1e-12)
    m = mixtral()
    slots = 4096 * m.experts_per_token * m.layers
    extra = _compute("alltoall", "eager") - _compute("alltoall", "fused")
    assert extra == pytest.approx(3 * (10 - 6) * m.expert_ffn * slots / _hbm(), rel=1e-4)  # the host soft maximum blends a little


def test_shared_experts_follow_activation_kernel_behind_deepep():
    """AutoModel's shared experts are the MLP class's eager F.silu(gate) * up: activation_kernel eager charges
    them 10 B per inner element behind DeepEP too, the routed experts still compiled."""
    m = dataclasses.replace(mixtral(), shared_expert_ffn=2048)
    extra = _compute("flex", "eager", m) - _compute("flex", "fused", m)
    assert extra == pytest.approx(3 * (10 - 6) * m.shared_expert_ffn * 4096 * m.layers / _hbm(), rel=1e-4)  # the host soft maximum blends a little


def test_torch_compile_fuses_every_part():
    assert _compute("alltoall", None, compile_=True) == pytest.approx(_compute("alltoall", "fused", compile_=True))
    assert _compute("alltoall", None) > _compute("alltoall", None, compile_=True)


def test_a_clamped_swiglu_streams_its_eager_ops():
    """gpt-oss clamps both halves before its SwiGLU (torchtitan gpt_oss/moe.py swiglu, transformers GptOssExperts):
    eager, two clamps, alpha x, sigmoid, two products and the + 1 stream 32 B per inner element against SwiGLU's 10;
    compiled or fused, the same 6 as any SwiGLU."""
    m = dataclasses.replace(mixtral(), activation_clamp=True)
    assert EAGER["swiglu_clamped"] == 32.0
    assert moe_elementwise_traffic(m, EAGER, 20.0, "fused", act_kernel="eager")[1] == pytest.approx(32.0 / 6.0)
    assert moe_elementwise_traffic(m, EAGER, 20.0, "fused", act_kernel="fused")[1] == 1.0
    assert moe_elementwise_traffic(m, EAGER, 20.0, fused_rest=True)[1] == 1.0
    plain = moe_elementwise_traffic(mixtral(), EAGER, 20.0, "fused", act_kernel="eager")[1]
    assert plain == pytest.approx(10.0 / 6.0)
    assert _compute("alltoall", "eager", m) > _compute("alltoall", "eager")
