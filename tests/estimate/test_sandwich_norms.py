"""Sandwich norms (ModelArch.sandwich_norms: Gemma 2 / 3 and GLM-4-0414 norm the attention and MLP outputs too, 4
RMSNorms a layer; transformers modeling_gemma2.py, LitGPT config.py post_attention_norm / post_mlp_norm): their
weights, their element-wise work (eager: the RMSNorm's ops, perf_constants.yaml eager_bytes_per_element rmsnorm) and
what they save for the backward."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from trainsizer.estimate import compute
from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.models import arch_from_hf_config
from trainsizer.models.arch import ModelArch

PLAIN = ModelArch(name="toy", family="llama", layers=8, hidden=1024, heads=8, kv_heads=4, ffn=4096, vocab=32000, head_dim=128)
SANDWICH = dataclasses.replace(PLAIN, sandwich_norms=True)
EAGER = load_constants().eager_bytes_per_element
CARD = System(accelerator="a100-sxm-80gb", gpus=1, gpus_per_node=8, memory_gib=80.0, peak_tflops={"bf16": 312.0},
              hbm_gb_s=2039.0, intra_node_gb_s=300.0)
TRAINING = Training(method="lora", seq_len=1024, global_batch_seqs=8, lora_rank=16, lora_targets=("q_proj", "v_proj"),
                    precision="bf16")


def _step(model: ModelArch, **strategy) -> float:
    st = Strategy(micro_batch=2, recompute="none", framework="torchtune", **strategy)
    return float(np.asarray(step_time_arrays(model, TRAINING, CARD, st)["step_s"]).reshape(-1)[0])


def test_two_more_norm_weights_a_layer():
    assert SANDWICH.params_total - PLAIN.params_total == 2 * PLAIN.hidden * PLAIN.layers
    assert (PLAIN.norms_per_layer, SANDWICH.norms_per_layer) == (2, 4)


def test_eager_norms_stream_their_ops_and_fused_ones_a_read_and_a_write():
    def common(model: ModelArch, kernel: str) -> tuple[float, float]:
        run, fused = compute._norm_residual_rope_bytes(model, compute.ModelShapes.of(model), EAGER, 20.0, kernel,
                                                       False)
        return float(run), float(fused)
    eager_p, fused_p = common(PLAIN, "eager")
    eager_s, fused_s = common(SANDWICH, "eager")
    assert eager_s - eager_p == pytest.approx(2.0 * EAGER["rmsnorm"] * PLAIN.hidden)
    assert fused_s - fused_p == pytest.approx(2.0 * 4.0 * PLAIN.hidden)
    assert common(SANDWICH, "fused")[0] - common(PLAIN, "fused")[0] == pytest.approx(2.0 * 4.0 * PLAIN.hidden)


def test_the_step_pays_them_and_less_when_fused():
    eager = _step(SANDWICH) - _step(PLAIN)
    fused = _step(SANDWICH, norm_kernel="fused") - _step(PLAIN, norm_kernel="fused")
    assert eager > fused > 0.0


def test_they_save_what_a_pre_norm_saves():
    st = Strategy(micro_batch=2, recompute="none", framework="torchtune")
    plain = estimate_memory(PLAIN, TRAINING, CARD, st, check=False)
    sandwich = estimate_memory(SANDWICH, TRAINING, CARD, st, check=False)
    assert sandwich.per_gpu_bytes > plain.per_gpu_bytes
    full = Strategy(micro_batch=2, recompute="full", framework="torchtune")
    extra_full = (estimate_memory(SANDWICH, TRAINING, CARD, full, check=False).per_gpu_bytes
                  - estimate_memory(PLAIN, TRAINING, CARD, full, check=False).per_gpu_bytes)
    assert extra_full < sandwich.per_gpu_bytes - plain.per_gpu_bytes  # full recompute keeps the layer input only


def _cfg(model_type: str) -> dict:
    return {"model_type": model_type, "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 4,
            "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 1000}


@pytest.mark.parametrize(("model_type", "sandwich"), [("gemma2", True), ("gemma3_text", True), ("glm4", True),
                                                      ("glm", False), ("llama", False)])
def test_the_hf_importer_says_which_models_have_them(model_type, sandwich):
    arch = arch_from_hf_config(_cfg(model_type))
    assert arch.sandwich_norms is sandwich
    assert not any("sandwich" in n for n in arch.notes)  # counted now, no longer noted as left out
