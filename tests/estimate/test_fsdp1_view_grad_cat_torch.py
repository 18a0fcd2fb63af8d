"""Cross-check of step_time._fsdp1_view_grad_cat_s against PyTorch itself (skipped without torch): torch FSDP1 hands
each module Tensor views of the unit's flat parameter (torch.split, then view: _flat_param.py _get_unflat_views), so
the module's weight gradients reach the flat parameter through SplitWithSizesBackward, which concatenates them into
one new flat gradient (a read and a write of every element), on CPU here."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch


def _flat_unit(numels: tuple[int, ...], shapes: tuple[tuple[int, int], ...]):
    flat = torch.zeros(sum(numels), requires_grad=True)
    views = [v.view(s) for v, s in zip(torch.split(flat, list(numels)), shapes, strict=True)]
    return flat, views


def test_the_views_gradients_are_concatenated_into_a_new_flat_gradient():
    flat, (w1, w2) = _flat_unit((8, 16), ((2, 4), (4, 4)))
    assert type(w1.grad_fn.next_functions[0][0]).__name__ == "SplitWithSizesBackward0"
    x = torch.randn(3, 4)
    loss = (x @ w1.t()).sum() + (x @ w2.t()).sum()
    seen: list = []
    split_node = w1.grad_fn.next_functions[0][0]
    split_node.register_hook(lambda grad_inputs, grad_outputs: seen.append((grad_inputs[0], grad_outputs)))
    with torch.profiler.profile() as prof:
        loss.backward()
    assert any(e.name == "aten::cat" for e in prof.events())
    flat_grad, view_grads = seen[0]
    # the flat gradient is a new tensor holding every view's gradient: no view's gradient shares its storage
    assert flat_grad.numel() == flat.numel()
    assert all(g.untyped_storage().data_ptr() != flat_grad.untyped_storage().data_ptr() for g in view_grads)
    assert torch.equal(flat.grad, torch.cat([g.reshape(-1) for g in view_grads]))


def test_a_view_without_a_gradient_is_filled_with_zeros_in_the_cat():
    """A view the loss does not reach still takes its slice of the flat gradient (zeros), so the cat writes the
    whole flat parameter's gradient."""
    flat, (w1, _w2) = _flat_unit((8, 16), ((2, 4), (4, 4)))
    (torch.randn(3, 4) @ w1.t()).sum().backward()
    assert flat.grad.numel() == 24 and torch.count_nonzero(flat.grad[8:]) == 0
