"""QLoRA's frozen base is gathered by ZeRO-3 / FSDP in its stored form (step_time._quantised_gather_bytes): the decoder's
GEMM weights as NF4 data plus block constants, the embeddings, norms and LM head at 16 bits (torchao NF4Tensor
fsdp_pre_all_gather / fsdp_post_all_gather under torchtune's FSDP2; bitsandbytes' packed Params4bit storage), so its
all-gathers and FSDP2's copy-outs move about a quarter of a 16-bit base's bytes."""

from __future__ import annotations

import numpy as np
import pytest

from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.model_states import frozen_base_bytes
from trainsizer.estimate.step_time import _quantised_gather_bytes, _step, step_time_arrays
from trainsizer.models import load_model

MODEL = load_model("llama-3.1-70b")
NODE = System(accelerator="a100-sxm-80gb", gpus=8, gpus_per_node=8, memory_gib=80.0, peak_tflops={"bf16": 312.0},
              hbm_gb_s=2039.0, intra_node_gb_s=300.0)
TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def _training(method: str) -> Training:
    return Training(method=method, seq_len=2048, global_batch_seqs=8, lora_rank=16, lora_targets=TARGETS)


def _strategy() -> Strategy:
    return Strategy(dp=8, zero=3, micro_batch=1, recompute="full", framework="torchtune")


def test_qlora_gathers_nf4_weights_and_16_bit_rest():
    nf4, _, constants = frozen_base_bytes(_training("qlora"))
    x = _step(MODEL, _training("qlora"), NODE, _strategy(), None, None, None)
    got = float(_quantised_gather_bytes(x, 2.0))
    rest = (MODEL.embedding_params + MODEL.lm_head_params) / MODEL.params_total  # 16-bit, about 2% of 70B
    assert got == pytest.approx((1.0 - rest) * (nf4 + constants) + rest * 2.0, rel=0.01)
    lora = _step(MODEL, _training("lora"), NODE, _strategy(), None, None, None)
    assert _quantised_gather_bytes(lora, 2.0) == 2.0


def test_qlora_fsdp_exposes_less_gather_time_than_lora_at_one_layout():
    """Same model, layout and adapters: the QLoRA step's exposed FSDP time (gathers, copies) is well under the LoRA
    step's, which gathers the 16-bit base."""
    def dp(method: str) -> float:
        return float(np.asarray(step_time_arrays(MODEL, _training(method), NODE, _strategy())["dp_comm"]).reshape(-1)[0])

    assert dp("qlora") < 0.4 * dp("lora")
