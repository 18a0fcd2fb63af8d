"""DeepSeek-V3's activation savings (framework deepseek-dualpipe, recompute selective): RMSNorm and MLA
up-projections recomputed, the attention output cached in E5M6 and the MoE SwiGLU input in FP8 (report
arXiv:2412.19437 s3.2.3, s3.3.2)."""

from __future__ import annotations

import pytest

from trainsizer.estimate import memory
from trainsizer.estimate.activations import deepseek_selective_items, layer_items
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.models import load_model

DSV3 = load_model("deepseek-v3")
FP8 = Training(method="pretrain", precision="fp8", seq_len=4096, global_batch_seqs=1920)
H800 = System(accelerator="h800-sxm-80gb", gpus=2048, gpus_per_node=8, memory_gib=80.0,
              peak_tflops={"bf16": 989.0, "fp8": 1979.0}, hbm_gb_s=3350.0, intra_node_gb_s=200.0)


def test_moe_layer_keeps_latents_not_q_k_v():
    ds = deepseek_selective_items(DSV3, FP8, moe=True)
    mega = layer_items(DSV3, FP8, moe=True, profile="megatron", recompute="selective", impl="flash")
    # latents (q_a 1536 + kv_a 512 + rope 64, 16-bit) + E5M6 attention output + fp32 LSE + shared SwiGLU input
    expected_tp = 2 * (1536 + 512 + 64) + 1.5 * DSV3.attn_out_dim + 4 * DSV3.heads + 1.03125 * 2 * 2048
    assert ds.tp == pytest.approx(expected_tp)
    assert ds.tp < mega.tp - 2 * (DSV3.q_dim + DSV3.kv_dim)  # q and k alone are more than the saving target
    # per routed slot: FP8 expert input + FP8 SwiGLU input, 16-bit expert output, weight, index; no fc2 input
    assert ds.routed == pytest.approx(1.03125 * (7168 + 2 * 2048) + 2 * 7168 + 2 + 8)
    # against Megatron-Core's slot with the expert output DeepSeek's combine keeps (Megatron-Core weights the
    # tokens inside the activation and keeps none)
    assert ds.routed < mega.routed + 2 * DSV3.hidden


def test_bf16_training_caches_16_bit():
    bf16 = deepseek_selective_items(DSV3, Training(method="pretrain", precision="bf16"), moe=True)
    fp8 = deepseek_selective_items(DSV3, FP8, moe=True)
    assert bf16.routed > fp8.routed and bf16.tp > fp8.tp


def _mem(framework: str, recompute: str = "selective"):
    """The first stage's saved activations (3 dense + 1 MoE layer); under Megatron-Core the worst GPU is stage 1
    (4 MoE layers), under DualPipe the ends, so the stage is fixed here rather than read from the worst GPU."""
    strategy = Strategy(pp=16, dp=128, ep=64, micro_batch=1, recompute=recompute, distributed_optimizer=True,
                        framework=framework)
    r = memory._evaluate(DSV3, FP8, H800, strategy, memory.DEFAULT_OPTIONS, detail=True)
    return float(r["stages"]["first"]["items"]["layer_activations"].reshape(-1)[0])


def test_deepseek_framework_uses_its_own_selective_recompute():
    ds, mega = _mem("deepseek-dualpipe"), _mem("megatron-core")
    assert ds < 0.65 * mega  # DeepSeek-V3's first stage: 3 dense + 1 MoE layer, about half of Megatron's set
    assert _mem("deepseek-dualpipe", "none") == _mem("megatron-core", "none")  # only its "selective" differs
    assert _mem("deepseek-dualpipe", "full") < ds
