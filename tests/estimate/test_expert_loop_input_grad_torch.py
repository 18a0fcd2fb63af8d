"""Cross-check of step_time._expert_loop_input_grad_time's count against PyTorch itself (skipped without torch):
transformers' MixtralSparseMoeBlock expert loop (`hidden_states[None, top_x]` per hit expert), on CPU. Each hit
expert's IndexBackward0 returns a gradient of the WHOLE [tokens, hidden] input, which autograd adds into the input's
gradient; an expert no token picks makes none (docs/known-gaps.md 273 (a))."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

pytestmark = pytest.mark.torch

E, K, T, H = 6, 2, 10, 8


def _loop(hidden, routed):
    """MixtralSparseMoeBlock.forward's loop (modeling_mixtral.py, 4.x) over a fixed routing; returns the output and
    the whole-input gradients its index ops return."""
    experts = [torch.nn.Linear(H, H, bias=False) for _ in range(E)]
    mask = F.one_hot(routed, num_classes=E).permute(2, 1, 0)
    out = torch.zeros(T, H)
    grads = []
    for i in range(E):
        idx, top_x = torch.where(mask[i])
        if top_x.numel() == 0:
            continue
        state = hidden[None, top_x].reshape(-1, H)
        state.grad_fn.next_functions[0][0].register_hook(lambda gi, _go: grads.append(gi[0]))
        out = out.index_add(0, top_x, experts[i](state))
    return out, grads


def test_each_hit_expert_returns_a_whole_input_gradient():
    routed = torch.tensor([[0, 1]] * 4 + [[2, 3]] * 3 + [[0, 3]] * 3)  # experts 4 and 5 never picked
    hidden = torch.randn(T, H, requires_grad=True)
    out, grads = _loop(hidden, routed)
    out.sum().backward()
    assert len(grads) == 4  # the hit experts 0-3 only
    assert all(tuple(g.shape) == (1, T, H) for g in grads)  # the input as indexed: hidden_states[None] of [T, H]
    rows = [int((g[0] != 0).any(dim=1).sum()) for g in grads]
    assert sorted(rows) == [3, 4, 6, 7]  # each holds its own tokens' rows, the rest zeros
    assert torch.allclose(hidden.grad, sum(grads)[0])
