"""Cross-check of `head_weight_cast` against PyTorch itself (skipped without torch): under autocast a frozen
fp32 LM head (PEFT's prepare_model_for_kbit_training upcast) is cast to 16 bit for its matmul and that cast is
what autograd saves for the input gradient; a 16-bit head (torchtune, LLaMA-Factory) saves nothing of its size.
Autocast's cast rules are the same on CPU and CUDA (aten/src/ATen/autocast_mode.cpp cached_cast)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from trainsizer.estimate.inputs import Strategy, System, Training  # noqa: E402
from trainsizer.estimate.memory import estimate_memory  # noqa: E402
from trainsizer.models import load_model  # noqa: E402

pytestmark = pytest.mark.torch

VOCAB, HIDDEN, TOKENS = 1000, 64, 16


def _saved_bytes(weight_dtype: torch.dtype) -> int:
    """Bytes autograd saves for the head's matmul under bf16 autocast, the head frozen in `weight_dtype`, beyond
    the weight's own storage (a saved view of the parameter costs nothing)."""
    head = torch.nn.Linear(HIDDEN, VOCAB, bias=False).to(weight_dtype).requires_grad_(False)
    h = torch.randn(TOKENS, HIDDEN, requires_grad=True)  # the final norm's output needs a gradient
    own = head.weight.untyped_storage().data_ptr()
    saved: list[int] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        if t.untyped_storage().data_ptr() != own:
            saved.append(t.numel() * t.element_size())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), torch.autocast("cpu", dtype=torch.bfloat16):
        head(h)
    return sum(saved)


def test_autocast_saves_a_16_bit_cast_of_an_fp32_frozen_head():
    assert _saved_bytes(torch.float32) == 2 * VOCAB * HIDDEN  # the bf16 cast, not the fp32 weight nor the input
    assert _saved_bytes(torch.bfloat16) == 0  # a 16-bit head is saved as itself: no copy


def test_the_estimate_charges_what_torch_saves_per_head_parameter():
    model = load_model("llama-3.1-8b")
    qlora = Training(method="qlora", seq_len=2048, global_batch_seqs=8, lora_rank=16, lora_targets=("q_proj",))
    card = System(accelerator="rtx-4090", gpus=1, gpus_per_node=1, memory_gib=24.0, peak_tflops={"bf16": 165.0},
                  hbm_gb_s=1008.0, intra_node_gb_s=25.0)
    est = estimate_memory(model, qlora, card, Strategy(micro_batch=2, recompute="full", framework="hf", kbit_upcast=True))
    per_head_param = _saved_bytes(torch.float32) / (VOCAB * HIDDEN)
    assert est.items_bytes["head_weight_cast"] == pytest.approx(per_head_param * model.vocab * model.hidden)
