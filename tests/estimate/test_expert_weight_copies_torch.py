"""Cross-check of memory._expert_weight_copies against PyTorch itself (skipped without torch): a loop over the hit
experts of fused [E, H, 2I] / [E, I, H] parameters, each expert's weights taken with a one-element index tensor (as
transformers 4.55's GptOssExperts training branch takes them) or a 0-dim one (as later releases do). What autograd saves
and what each expert's backward node returns, on CPU, without a dispatch mode (a mode would turn autograd's in-place
gradient accumulation out of place: InputBuffer::accumulate's isTensorSubclassLike)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

E, H, FFN, T = 8, 64, 32, 64


def _expert_loop(scalar_index: bool) -> tuple[list, list, torch.Tensor, torch.Tensor]:
    """(tensors autograd saved, gradients the weight-indexing nodes returned, gate_up, down) of one forward and backward
    at top-2 with every expert hit."""
    torch.manual_seed(0)
    gate_up = torch.randn(E, H, 2 * FFN, requires_grad=True)
    down = torch.randn(E, FFN, H, requires_grad=True)
    x = torch.randn(T, H, requires_grad=True)
    route = torch.stack([torch.arange(T) % E, (torch.arange(T) + 1) % E], 1)
    saved, node_grads = [], []

    def keep(grad_inputs, _grad_outputs):
        node_grads.append(grad_inputs[0])

    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        out = torch.zeros_like(x)
        for e in torch.unique(route).view(-1, 1):  # one-element rows, as nonzero() gives them
            idx = e[0] if scalar_index else e
            tok = (route == e[0]).any(1).nonzero().view(-1)
            w_gu, w_dn = gate_up[idx], down[idx]
            for w in (w_gu, w_dn):
                w.grad_fn.register_hook(keep)
            h = x[tok] @ w_gu
            y = (torch.nn.functional.silu(h[..., :FFN]) * h[..., FFN:]) @ w_dn
            out.index_add_(0, tok, y.reshape(-1, H))
    out.sum().backward()
    return saved, node_grads, gate_up, down


def _copied_weight_bytes(saved: list, params: tuple) -> int:
    """Bytes of the saved expert weights that are not the parameters' own storage."""
    own = {p.untyped_storage().data_ptr() for p in params}
    copies = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in saved
              if t.dim() >= 2 and tuple(t.shape[-2:]) in ((H, 2 * FFN), (FFN, H)) and t.untyped_storage().data_ptr() not in own}
    return sum(copies.values())


def test_a_one_element_index_saves_a_copy_of_every_hit_experts_weights():
    saved, _, gate_up, down = _expert_loop(scalar_index=False)
    per_expert = (H * 2 * FFN + FFN * H) * 4  # fp32 here; the estimate counts the job's 16-bit copies
    assert _copied_weight_bytes(saved, (gate_up, down)) == E * per_expert


def test_a_scalar_index_saves_views_only():
    saved, _, gate_up, down = _expert_loop(scalar_index=True)
    assert _copied_weight_bytes(saved, (gate_up, down)) == 0


@pytest.mark.parametrize("scalar_index", [False, True])
def test_each_hit_expert_returns_a_gradient_of_the_whole_fused_parameter(scalar_index):
    """IndexBackward0 (new_zeros, then index_put_) and SelectBackward0 (zeros, then the slice copied) alike: one
    whole-parameter gradient per hit expert and parameter, added into the parameter's accumulating gradient."""
    _, grads, gate_up, down = _expert_loop(scalar_index)
    assert len(grads) == 2 * E
    assert sorted({tuple(g.shape) for g in grads}) == sorted({tuple(gate_up.shape), tuple(down.shape)})
    assert all(int((g != 0).any(dim=(1, 2)).sum()) == 1 for g in grads)  # one expert's slice filled, the rest zeros
