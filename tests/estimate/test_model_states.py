"""Parameter layout and bytes-per-parameter tables."""

from __future__ import annotations

import pytest

from trainsizer.estimate.inputs import Training
from trainsizer.estimate.model_states import (
    frozen_base_bytes,
    lora_layer_params,
    optimizer_state_bytes,
    param_layout,
    state_bytes,
)
from trainsizer.models.arch import ModelArch

LLAMA8 = ModelArch(name="llama-3.1-8b", family="llama", layers=32, hidden=4096, heads=32, kv_heads=8,
                   ffn=14336, vocab=128256)
DSV3ISH = ModelArch(name="dsv3-ish", family="deepseek", layers=6, hidden=1024, heads=8, kv_heads=8, ffn=4096,
                    vocab=32000, attention="mla", q_lora_rank=256, kv_lora_rank=128, qk_nope_head_dim=32,
                    qk_rope_head_dim=16, v_head_dim=32, experts=16, experts_per_token=2, expert_ffn=512,
                    shared_expert_ffn=512, dense_layers=2, router_bias=True, mtp_layers=1)


@pytest.mark.parametrize("model", [LLAMA8, DSV3ISH], ids=lambda m: m.name)
def test_layout_sums_to_params_total(model: ModelArch) -> None:
    lay = param_layout(model, Training())
    L = model.layers
    body = lay.cum_tp[L] + lay.cum_rep[L] + lay.cum_exp[L]
    assert body + lay.embedding + lay.lm_head_own + lay.final_norm == model.params_total
    assert lay.cum_moe[L] == model.moe_layer_count


def test_lora_params_formula() -> None:
    t = Training(method="lora", lora_rank=8, lora_targets=("q_proj", "v_proj"))
    dense, experts = lora_layer_params(LLAMA8, t, moe_layer=False)
    assert dense == 8 * (4096 + 4096) + 8 * (4096 + 1024) and experts == 0
    fused = Training(method="lora", lora_rank=8, lora_targets=("qkv_proj",))
    assert lora_layer_params(LLAMA8, fused, False)[0] == 8 * (4096 + 4096 + 2 * 1024)


def test_lora_on_experts() -> None:
    t = Training(method="lora", lora_rank=4, lora_targets=("gate_proj", "up_proj", "down_proj"))
    dense, experts = lora_layer_params(DSV3ISH, t, moe_layer=True)
    assert experts == 16 * 3 * 4 * (1024 + 512)
    assert dense == 3 * 4 * (1024 + 512)  # shared expert


def test_state_bytes_tables() -> None:
    hf = state_bytes(Training(precision="bf16"), LLAMA8, "hf")
    assert hf.weights + hf.grads + hf.master + hf.optimizer == 16
    mg = state_bytes(Training(precision="bf16"), LLAMA8, "megatron")
    assert mg.weights + mg.grad_accum_fp32 + mg.master + mg.optimizer == 18
    fp8 = state_bytes(Training(precision="fp8"), LLAMA8, "megatron")
    assert fp8.weights == 2 and fp8.fp8_cache == 2


def test_optimizers() -> None:
    assert optimizer_state_bytes(Training(optimizer="adamw"), LLAMA8) == 8
    assert optimizer_state_bytes(Training(optimizer="sgd"), LLAMA8) == 4
    assert optimizer_state_bytes(Training(optimizer="adamw8bit"), LLAMA8) == pytest.approx(2, rel=1e-2)
    assert optimizer_state_bytes(Training(optimizer="adafactor"), LLAMA8) < 0.01


def test_frozen_base() -> None:
    assert frozen_base_bytes(Training(method="lora", lora_rank=8)) == (2.0, 2.0, 0.0)
    q, nq, c = frozen_base_bytes(Training(method="qlora", lora_rank=8))
    assert q == 0.5 and nq == 4 and c == pytest.approx(0.127 / 8)
