"""Which aten ops Megatron-Core's unfused MoE permutation runs in the backward, recorded with torch itself (skipped
without torch; CPU: the aten ops are the device's, their kernels are not). Megatron-Core's permute (moe_utils.permute,
fused false) is tokens.index_select(0, sorted_indices): its gradient is one index_add over the routed copies, the op
whose bf16 add is a compare-and-swap loop on gfx950 under PyTorch 2.9 (docs/known-gaps.md 187 (a)); the unpermute's
scatter_add_ backward is a gather, no atomics. The device script benchmarks/device/rocm_permute_atomics.py times the
same ops on a GPU."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch

TOKENS, EXPERTS, TOPK, HIDDEN = 24, 8, 3, 16


class _Record(torch.utils._python_dispatch.TorchDispatchMode):
    """The aten op packets dispatched inside the mode, in order."""

    def __init__(self):
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func.overloadpacket))
        return func(*args, **(kwargs or {}))


def _sorted_indices() -> torch.Tensor:
    """Megatron's expert-major order of the routed copies (routing_map.T masked_select) under round-robin routing."""
    experts = (torch.arange(TOKENS).unsqueeze(1) * TOPK + torch.arange(TOPK)) % EXPERTS
    routing_map = torch.zeros(TOKENS, EXPERTS, dtype=torch.bool).scatter_(1, experts, True).T.contiguous()
    return torch.arange(TOKENS).unsqueeze(0).expand(EXPERTS, -1).masked_select(routing_map)


def _backward_ops(out: torch.Tensor) -> list[str]:
    rec = _Record()
    with rec:
        out.backward(torch.ones_like(out))
    return [op for op in rec.ops if op not in ("aten.ones_like", "aten.detach")]


def test_unfused_permute_gradient_is_one_index_add_over_the_routed_copies():
    idx = _sorted_indices()
    assert idx.numel() == TOKENS * TOPK
    tokens = torch.randn(TOKENS, HIDDEN, dtype=torch.bfloat16, requires_grad=True)
    ops = _backward_ops(tokens.index_select(0, idx))
    assert ops.count("aten.index_add") + ops.count("aten.index_add_") == 1
    assert not {"aten.gather", "aten.scatter_add", "aten.scatter_add_"} & set(ops)
    # every token's gradient sums its top-k copies: the adds land on one row from TOPK places
    assert torch.equal(tokens.grad, torch.full_like(tokens, float(TOPK)))


def test_unfused_unpermute_gradient_is_a_gather_without_atomics():
    idx = _sorted_indices().unsqueeze(1).expand(-1, HIDDEN)
    permuted = torch.randn(TOKENS * TOPK, HIDDEN, dtype=torch.bfloat16, requires_grad=True)
    ops = _backward_ops(torch.zeros(TOKENS, HIDDEN, dtype=torch.bfloat16).scatter_add(0, idx, permuted))
    assert ops == ["aten.gather"]
