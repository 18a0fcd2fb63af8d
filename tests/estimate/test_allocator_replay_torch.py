"""Cross-check of allocator_replay.loss_path_ops against PyTorch itself (skipped without torch): the Qwen-1 loss code
(Qwen/Qwen-7B modeling_qwen.py QWenLMHeadModel.forward), the fp32 log-softmax CUDA autocast gives it, accelerate's
convert_outputs_to_fp32 and swift's argmax, then the backward, under torch's MemTracker (a TorchDispatchMode that
follows every storage; CPU) peak at what the replayed path allocates: 12 B a shifted logit element, the estimate's hf
charge (known-gaps 97, candidate 1)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import allocator_replay as ar  # noqa: E402

pytestmark = pytest.mark.torch

HIDDEN, VOCAB, TOKENS = 64, 32000, 256


def _qwen1_loss_step(h: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor) -> None:
    import torch.nn.functional as F

    lm_logits = F.linear(h, weight)  # lm_head under autocast: 16-bit
    shift_logits = lm_logits[..., :-1, :].contiguous()
    x = shift_logits.view(-1, VOCAB)
    # CrossEntropyLoss under CUDA autocast: log_softmax is on its fp32 list (the .float() copy, then fp32 output)
    loss = F.nll_loss(F.log_softmax(x.float(), -1), labels[..., 1:].contiguous().view(-1))
    del x, shift_logits  # forward returns: only lm_logits (in the output) and the saved log-softmax stay
    outputs_logits = lm_logits.float()  # accelerate convert_outputs_to_fp32
    del lm_logits
    preds = outputs_logits.argmax(dim=2)[..., :-1]  # swift's compute_loss accuracy, then the outputs dropped
    del preds, outputs_logits
    loss.backward()


def test_memtracker_peak_of_the_qwen1_loss_code_is_the_replayed_paths():
    from torch.distributed._tools.mem_tracker import MemTracker

    torch.manual_seed(0)
    weight = torch.randn(VOCAB, HIDDEN, dtype=torch.bfloat16)
    h = torch.randn(1, TOKENS, HIDDEN, dtype=torch.bfloat16, requires_grad=True)
    labels = torch.randint(0, VOCAB, (1, TOKENS))
    tracker = MemTracker()
    tracker.track_external(weight, h, labels)
    with tracker:
        _qwen1_loss_step(h, weight, labels)
    peak = sum(snap["Total"] for snap in tracker.get_tracker_snapshot("peak").values())
    held = weight.numel() * 2 + h.numel() * 2 * 2 + labels.numel() * 8  # weight, h and its gradient, labels
    assert (peak - held) == pytest.approx(ar.live_peak_bytes(TOKENS, VOCAB), rel=1e-3)
