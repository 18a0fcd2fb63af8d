"""torchtune trains in the model dtype (no mixed precision): bf16 weights, gradients and AdamW states, no fp32
master copy (torchtune docs, memory optimisations, "Model Precision")."""

from __future__ import annotations

import pytest

from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import GIB, estimate_memory
from trainsizer.models import load_model

MODEL = load_model("llama-3.1-8b")
CARD = System(accelerator="a100-sxm-80gb", gpus=1, gpus_per_node=1, memory_gib=80.0, peak_tflops={"bf16": 312.0},
              hbm_gb_s=2039.0, intra_node_gb_s=300.0)


def _items(framework: str, optimizer: str = "adamw") -> dict[str, float]:
    training = Training(method="full", seq_len=2048, global_batch_seqs=2, optimizer=optimizer)
    st = Strategy(micro_batch=2, recompute="full", framework=framework)
    return estimate_memory(MODEL, training, CARD, st, check=False).items_bytes


def test_torchtune_keeps_no_fp32_master_and_bf16_adam_states():
    tt, hf = _items("torchtune"), _items("hf")
    params = MODEL.params_total
    assert tt["master_weights"] == 0 and hf["master_weights"] == pytest.approx(4 * params)
    assert tt["optimizer_states"] == pytest.approx(4 * params)  # two bf16 AdamW states
    assert hf["optimizer_states"] == pytest.approx(8 * params)
    assert tt["weights"] == hf["weights"] and tt["gradients"] == hf["gradients"]


def test_torchtune_8bit_adam_is_two_bytes_per_parameter():
    tt = _items("torchtune", "adamw8bit")
    assert tt["optimizer_states"] / GIB == pytest.approx(2 * MODEL.params_total / GIB, rel=1e-3)


def test_torchtune_lora_adapters_are_built_in_the_training_dtype():
    """PEFT keeps LoRA A/B (and their gradients) in fp32; torchtune instantiates them in bf16 with the model."""
    # two micro-batches per step: the first one's adapter gradients are live in the second one's loss phase
    training = Training(method="lora", seq_len=2048, global_batch_seqs=4, lora_rank=16,
                        lora_targets=("q_proj", "v_proj"))
    st = {fw: estimate_memory(MODEL, training, CARD, Strategy(micro_batch=2, recompute="full", framework=fw),
                              check=False).items_bytes for fw in ("torchtune", "hf")}
    assert st["torchtune"]["lora_adapters"] == pytest.approx(st["hf"]["lora_adapters"] / 2)
    assert st["torchtune"]["gradients"] == pytest.approx(st["hf"]["gradients"] / 2)
    assert st["torchtune"]["optimizer_states"] == pytest.approx(st["hf"]["optimizer_states"] / 2)
