"""loss_impl liger: Liger-Kernel's fused linear cross-entropy as its code holds memory (liger_kernel/ops/
fused_linear_cross_entropy.py at 7dd8ecc5, fused_linear_cross_entropy_forward): one chunk of
next_power_of_2(ceil(BT / ceil(V / H))) rows of 16-bit logits, grad_input (BT x H) and, where the head trains,
grad_weight with each chunk's V x H product and its fp32 copy (memory._liger_loss; docs/known-gaps.md 203 (e), 198 (f)).
Step time as loss_impl fused (the fused count)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from trainsizer.catalog import load_catalog
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import step_time_arrays
from trainsizer.scenario import resolve_job

CAT = load_catalog([])
# Llama 3.2 1B (meta-llama/Llama-3.2-1B config.json: 16 layers, hidden 2048, 32 heads, 8 KV heads, intermediate 8192,
# vocab 128256, tie_word_embeddings true)
LLAMA_32_1B = {"name": "llama-3.2-1b", "layers": 16, "hidden": 2048, "heads": 32, "kv_heads": 8, "ffn": 8192,
               "vocab": 128256, "mlp": "swiglu", "norm": "rmsnorm", "position": "rope", "tied_embeddings": True}


def _sc(loss_impl: str = "liger", method: str = "full", micro_batch: int = 64, seq_len: int = 8192, **strategy):
    job = {"model": LLAMA_32_1B, "method": method, "data": {"tokens": 1e9}, "seq_len": seq_len,
           "global_batch": {"sequences": micro_batch}, "precision": "bf16",
           "hardware": {"accelerator": "mi300x", "count": 1},
           "strategy": {"micro_batch": micro_batch, "recompute": "full", "framework": "hf", "loss_impl": loss_impl,
                        **strategy}}
    if method == "lora":
        job["lora"] = {"rank": 8, "targets": ["q_proj", "v_proj"]}
    return resolve_job(job, CAT)


def _items(**kw) -> dict[str, float]:
    sc = _sc(**kw)
    return estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False).items_bytes


def _liger_bytes(bt: int, h: int, v: int, head: bool) -> float:
    rows = min(2 ** math.ceil(math.log2(math.ceil(bt / math.ceil(v / h)))), bt)
    return rows * v * 2 + bt * h * 2 + (v * h * (2 + 2 + 4) if head else 0)


def test_the_chunk_grad_input_and_grad_weight_as_the_code_allocates_them():
    """Llama 3.2 1B (h 2,048, V 128,256, tied head) at 64 x 8,192: chunks of 16,384 rows (3.9 GiB of bf16 logits),
    grad_input 2 GiB, grad_weight with a chunk's product and its fp32 copy 2 GiB in full training; none of the head's
    in LoRA. Checkpointed under the hf style, the re-run layer's working set is the larger phase, so the items are
    read with the loss phase summed (live_at_rerun loss)."""
    sc = _sc()
    m = sc.model
    full = _items(live_at_rerun="loss")["loss_chunk_working_set"]
    assert full == pytest.approx(_liger_bytes(64 * 8192, m.hidden, m.vocab, head=True))
    lora = _items(method="lora", live_at_rerun="loss")["loss_chunk_working_set"]
    assert lora == pytest.approx(_liger_bytes(64 * 8192, m.hidden, m.vocab, head=False))
    assert 2 ** math.ceil(math.log2(math.ceil(64 * 8192 / math.ceil(m.vocab / m.hidden)))) == 16384


def test_liger_holds_less_than_the_fused_constant_and_the_rerun_layer_sets_the_peak():
    liger, fused = _items(live_at_rerun="loss"), _items(loss_impl="fused", live_at_rerun="loss")
    assert liger["loss_chunk_working_set"] < fused["loss_backward_temporaries"]
    peak = _items()  # the phases apart: the re-run layer's working set is the larger one here
    assert peak["recompute_working_set"] > 0 and peak.get("loss_chunk_working_set", 0.0) == 0.0
    assert peak.get("forward_layer_segments", 0.0) == 0.0  # the chunk fits a freed ffn-wide segment


@pytest.mark.parametrize("mb", [1, 8, 64])
def test_liger_times_as_the_fused_count(mb):
    def step(loss_impl: str) -> float:
        sc = _sc(loss_impl=loss_impl, micro_batch=mb)
        return float(np.asarray(step_time_arrays(sc.model, sc.training, sc.system, sc.strategy)["step_s"]).ravel()[0])
    assert step("liger") == pytest.approx(step("fused"))
