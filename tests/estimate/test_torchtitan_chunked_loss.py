"""torchtitan's chunked loss (ChunkedCELoss 2026-04, ChunkedLossWrapper since 2026-06: loss_impl chunked under the
torchtitan style), its CompileConfig components (strategy.compile_loss) and what its per-op SAC keeps compiled:
read in torchtitan's components/loss.py, config/configs.py and distributed/activation_checkpoint.py at bcc09297a and
torch's AOTAutograd partitioner (memory_constants.yaml logits.torchtitan_chunked; docs/known-gaps.md 63)."""

from __future__ import annotations

import pytest

from trainsizer.errors import StrategyError
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.models import load_model

MODEL = load_model("llama-3.1-8b")
GB200 = System(accelerator="gb200", gpus=4, gpus_per_node=4, memory_gib=184.3, peak_tflops={"bf16": 2500.0},
               hbm_gb_s=8000.0, intra_node_gb_s=900.0)
SEQ, MB = 2048, 32
TRAINING = Training(method="pretrain", seq_len=SEQ, global_batch_seqs=4 * MB)
TOKENS = SEQ * MB


def _items(**kw):
    # compiled unless a test says (torchtitan runs eager unless asked: the compiled runs these tests read)
    st = Strategy(dp=4, zero=3, micro_batch=kw.pop("micro_batch", MB), recompute="selective",
                  framework=kw.pop("framework", "torchtitan"), torch_compile=kw.pop("torch_compile", True), **kw)
    return estimate_memory(MODEL, TRAINING, GB200, st, check=False).items_bytes


def test_one_chunk_of_logits_is_live_at_a_time():
    """Each chunk's LM head, loss and backward run before the next: no logit is kept, and one chunk (1/8 of the
    micro-batch) holds the eager loss's 16-bit logits, fp32 log-softmax and its two fp32 gradients (14 B an element),
    or the compiled loss's 16-bit logits and gradient (4 B)."""
    elems = TOKENS * MODEL.vocab
    eager = _items(loss_impl="chunked", compile_loss=False)
    assert eager.get("logits", 0.0) == 0.0
    assert eager["loss_backward_temporaries"] == pytest.approx(14 / 8 * elems)
    compiled = _items(loss_impl="chunked")  # compile_loss null: with torch_compile (stated true here)
    assert compiled["loss_backward_temporaries"] == pytest.approx(4 / 8 * elems)
    whole = _items(loss_impl="compiled")  # the same compiled loss over the whole micro-batch's logits
    assert whole["logits"] + whole["loss_backward_temporaries"] == pytest.approx(4 * elems)


def test_chunk_buffers_copy_only_when_a_micro_batch_holds_several_sequences():
    """GradAccumulator's fp32 buffer of the hidden states' gradient always; the chunks' .contiguous() copies where a
    sequence split of [B, L, D] is not contiguous (B > 1)."""
    several = _items(loss_impl="chunked")["loss_chunk_buffers"]
    assert several == pytest.approx(TOKENS * MODEL.hidden * (4 + 2))
    one = _items(loss_impl="chunked", micro_batch=1)["loss_chunk_buffers"]
    assert one == pytest.approx(SEQ * MODEL.hidden * 4)


def test_torchtune_chunked_loss_is_unchanged():
    """torchtune's CEWithChunkedOutputLoss keeps every chunk's logits until the loss returns (2 + 0.25 compiled)."""
    tt = _items(loss_impl="chunked", framework="torchtune")
    assert tt["logits"] + tt["loss_backward_temporaries"] == pytest.approx(2.25 * TOKENS * MODEL.vocab)
    assert "loss_chunk_buffers" not in tt


def test_compile_loss_decides_the_unchunked_loss_too():
    elems = TOKENS * MODEL.vocab
    eager = _items(compile_loss=False)
    assert eager["logits"] + eager["loss_backward_temporaries"] == pytest.approx(12 * elems)
    only_loss = _items(torch_compile=False, compile_loss=True)  # CompileConfig components ["loss"]
    assert only_loss["logits"] + only_loss["loss_backward_temporaries"] == pytest.approx(4 * elems)


def test_compile_loss_is_refused_off_torchtitan():
    with pytest.raises(StrategyError, match="compile_loss_framework"):
        estimate_memory(MODEL, TRAINING, GB200, Strategy(dp=4, zero=3, micro_batch=MB, recompute="full",
                                                         framework="torchtune", compile_loss=False))


def test_compiled_per_op_sac_does_not_keep_the_w2_output():
    """Eager, SAC's dispatch mode caches every MUST_SAVE op's output, w2's included; compiled, the partitioner saves
    only what the backward reads, and no backward reads w2's output: one hidden-sized 16-bit tensor a token a layer
    less."""
    eager = _items(torch_compile=False)["layer_activations"]
    compiled = _items(torch_compile=True)["layer_activations"]
    assert eager - compiled == pytest.approx(MODEL.layers * TOKENS * 2 * MODEL.hidden)
