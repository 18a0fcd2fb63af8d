"""Cross-check of step_time._fused_expert_grad_time's count against PyTorch itself (skipped without torch): transformers
4.45-4.5x GraniteMoeParallelExperts.forward (split the expert-sorted rows, F.linear(input_list[i], self.weight[i]) for
every expert, cat), on CPU. Every expert, hit or not, returns from SelectBackward0 a gradient of the whole [E, out, in]
weight, and autograd accumulates them (docs/known-gaps.md 261 (a))."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

pytestmark = pytest.mark.torch

E, H, OUT = 6, 16, 8


def test_every_expert_hit_or_not_returns_a_whole_weight_gradient():
    weight = torch.randn(E, OUT, H, requires_grad=True)
    sizes = [5, 0, 3, 7, 0, 1]  # two experts without a token: the loop still takes their slice
    x = torch.randn(sum(sizes), H)
    grads = []
    parts = x.split(sizes, dim=0)
    outs = []
    for i in range(E):
        w = weight[i]
        w.grad_fn.register_hook(lambda gi, _go: grads.append(gi[0]))
        outs.append(F.linear(parts[i], w))
    torch.cat(outs, dim=0).sum().backward()
    assert len(grads) == E
    assert all(tuple(g.shape) == (E, OUT, H) for g in grads)
    filled = [int((g != 0).any(dim=(1, 2)).sum()) for g in grads]
    assert sorted(filled) == sorted(0 if n == 0 else 1 for n in sizes)  # an unhit expert's: all zeros, still made
    assert torch.allclose(weight.grad, sum(grads))
