"""A LoRA adapter on the frozen LM head (lora target lm_head_adapter: LitGPT's lora_head, litgpt/lora.py LoRALinear at
00af8b0d; PEFT's lora.Linear on target_modules 'lm_head'): r x (hidden + vocab) trainable parameters, what its A and B
save, and its vocabulary-wide output, scaling and add streamed as an adapted linear's (perf_constants.yaml `lora:`)."""

from __future__ import annotations

import numpy as np
import pytest

from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.model_states import lora_trainable_params
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.models.arch import ModelArch
from trainsizer.spec.job import LoraSpec

MODEL = ModelArch(name="toy", family="llama", layers=8, hidden=2048, heads=16, kv_heads=16, ffn=8192, vocab=256000)
HBM_GB_S = 600.0
CARD = System(accelerator="a10g", gpus=1, gpus_per_node=1, memory_gib=24.0, peak_tflops={"bf16": 70.0},
              hbm_gb_s=HBM_GB_S, intra_node_gb_s=32.0)
SEQ, MB, STEP_MB, RANK = 512, 2, 3, 8
TARGETS = ("q_proj", "v_proj")


def _training(*extra: str) -> Training:
    return Training(method="lora", seq_len=SEQ, global_batch_seqs=MB * STEP_MB, lora_rank=RANK,
                    lora_targets=TARGETS + extra, precision="bf16")


def _strategy() -> Strategy:
    return Strategy(micro_batch=MB, recompute="none", framework="torchtune")


def _step(training: Training) -> float:
    return float(np.asarray(step_time_arrays(MODEL, training, CARD, _strategy())["step_s"]).reshape(-1)[0])


def test_the_adapter_trains_r_times_hidden_plus_vocab():
    extra = lora_trainable_params(MODEL, _training("lm_head_adapter")) - lora_trainable_params(MODEL, _training())
    assert extra == RANK * (MODEL.hidden + MODEL.vocab)


def test_the_step_streams_its_vocabulary_wide_output_twice_over():
    """B's output, the scaling's read and write, the add's two reads and write (6 elements of 2 B forward), the
    scaling's gradient and B's two GEMMs reading the logits' gradient (4 backward): at most the rated bandwidth."""
    extra = _step(_training("lm_head_adapter")) - _step(_training())
    rated = STEP_MB * MB * SEQ * MODEL.vocab * (6.0 + 4.0) * 2.0 / (HBM_GB_S * 1e9)
    assert rated <= extra < 2.0 * rated


def test_it_holds_its_weights_states_and_saved_inputs():
    st = _strategy()
    plain = estimate_memory(MODEL, _training(), CARD, st, check=False)
    head = estimate_memory(MODEL, _training("lm_head_adapter"), CARD, st, check=False)
    assert head.items_bytes["lora_adapters"] > plain.items_bytes["lora_adapters"]
    assert head.per_gpu_bytes > plain.per_gpu_bytes


def test_the_target_is_accepted_and_a_misspelt_one_names_it():
    assert LoraSpec(targets=["q_proj", "lm_head_adapter"]).targets == ("q_proj", "lm_head_adapter")
    with pytest.raises(ValueError, match="lm_head_adapter"):  # the allowed names listed
        LoraSpec(targets=["lm_head_adaptor"])
