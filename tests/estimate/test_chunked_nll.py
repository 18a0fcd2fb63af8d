"""TRL SFTTrainer's loss_type chunked_nll (loss_impl chunked-nll; the SFTConfig default since TRL 1.7, trl#5846): the
LM head and loss run per chunk of 256 labelled tokens under gradient checkpointing, as h.float() @ w.float().t() under
autocast (trl/trainer/sft_trainer.py _chunked_cross_entropy_loss / _chunk at f2cd577). No logits of the micro-batch
are kept; each chunk copies the head weight to fp32 and autocast casts it back to 16 bits (memory: both at the cast;
time: 12 B per head weight per chunk, forward and the backward's re-run), and the head's forward runs twice."""

from __future__ import annotations

import numpy as np
import pytest

from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.models import load_model

MODEL = load_model("llama-3.1-8b")
CARD = System(accelerator="h100-sxm", gpus=1, gpus_per_node=8, memory_gib=80.0, peak_tflops={"bf16": 989.0},
              hbm_gb_s=3350.0, intra_node_gb_s=450.0)
HEAD = MODEL.vocab * MODEL.hidden  # untied LM head


def _training(seq: int, precision: str = "bf16") -> Training:
    return Training(method="lora", seq_len=seq, global_batch_seqs=8, lora_rank=16, lora_targets=("q_proj", "v_proj"),
                    precision=precision)


def _items(loss_impl: str, seq: int = 4096, micro_batch: int = 2, precision: str = "bf16") -> dict[str, float]:
    st = Strategy(micro_batch=micro_batch, recompute="full", framework="hf", loss_impl=loss_impl)
    return estimate_memory(MODEL, _training(seq, precision), CARD, st, check=False).items_bytes


def _step(loss_impl: str, seq: int = 4096, micro_batch: int = 2) -> float:
    st = Strategy(micro_batch=micro_batch, recompute="full", framework="hf", loss_impl=loss_impl)
    return float(np.asarray(step_time_arrays(MODEL, _training(seq), CARD, st)["step_s"]).reshape(-1)[0])


def test_no_logits_but_the_head_weight_copied_per_chunk():
    items = _items("chunked-nll")
    assert items["logits"] == 0 and items["loss_backward_temporaries"] == 0
    # at the cast: the fp32 copy (4 B) and its 16-bit cast (2 B) of the 128,256 x 4,096 head, above the cast beside
    # one chunk's fp32 logits and gradients (2 B x head + 256 x vocab x 20)
    assert items["loss_chunk_working_set"] == pytest.approx(6.0 * HEAD)
    upcast = _items("upcast")
    assert upcast["logits"] + upcast["loss_backward_temporaries"] > 3.0 * items["loss_chunk_working_set"]


def test_short_micro_batches_hold_more_than_the_upcast_loss():
    """At 512 tokens the upcast loss's logits (12 B x 512 x vocab) are smaller than the head-weight copies: chunked_nll
    raises the peak there, as Unsloth measured on Gemma 3 4B (unsloth#8261: 8.2 GB against 4.5 at 141 tokens)."""
    short = _items("chunked-nll", seq=512, micro_batch=1)
    upcast = _items("upcast", seq=512, micro_batch=1)
    assert short["loss_chunk_working_set"] > upcast["logits"] + upcast["loss_backward_temporaries"]


def test_fp32_training_copies_nothing():
    items = _items("chunked-nll", precision="fp32")
    assert items["loss_chunk_working_set"] == pytest.approx(256 * MODEL.vocab * 20.0)


def test_step_pays_the_casts_and_the_head_rerun():
    """32 chunks of 256 in a 2 x 4,096 micro-batch, two runs each, 12 B per head weight per run: at least that many
    bytes at the card's rated HBM bandwidth per micro-batch, 4 micro-batches a step."""
    extra = _step("chunked-nll") - _step("upcast")
    assert extra > 4 * 2 * 32 * 12.0 * HEAD / (3350e9)
    assert _step("chunked-nll", seq=512, micro_batch=1) > _step("upcast", seq=512, micro_batch=1)
