"""Cross-check of step_time._sequential_mlp_time's count against PyTorch itself (skipped without torch): Megatron-Core's
SequentialMLP loop, on CPU, its ops logged below autograd. Before core_r0.9.0 (experts.py at d0f13074) the forward
makes one whole-buffer tensor (zeros_like) and the backward, per local expert, a whole-buffer slice_backward (zeros,
rows copied in) and CopySlices' whole copy (new_empty_strided + copy_), and sums the n whole gradients of the input
(n - 1 adds): the (6n + 4)R the estimate charges counts these plus their slice-sized copies. From core_r0.9.0
(8f331e8c89) one cat forward and one cat backward (docs/known-gaps.md 301 (a))."""

from __future__ import annotations

from collections import Counter

import pytest

torch = pytest.importorskip("torch")
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

pytestmark = pytest.mark.torch

H, FFN, N, T = 16, 24, 4, 64  # hidden, expert FFN, local experts, routed rows


class _WholeBufferOps(TorchDispatchMode):
    """Counts the ops whose floating-point output is the whole routed buffer's size (T x H)."""

    def __init__(self):
        super().__init__()
        self.ops: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for o in out if isinstance(out, tuple | list) else (out,):
            if isinstance(o, torch.Tensor) and o.dtype.is_floating_point and o.numel() == T * H:
                self.ops[func.overloadpacket.__name__] += 1
        return out


def _experts():
    torch.manual_seed(0)
    return [torch.nn.Sequential(torch.nn.Linear(H, FFN, bias=False), torch.nn.SiLU(),
                                torch.nn.Linear(FFN, H, bias=False)) for _ in range(N)]


def _sliced(experts, x):  # SequentialMLP.forward before core_r0.9.0
    out = torch.zeros_like(x)
    ends = torch.cumsum(torch.full((N,), T // N), 0)  # a host tensor, as the dispatchers hand it over
    starts = ends - T // N
    for e, s, t in zip(experts, starts, ends, strict=True):
        out[s:t] = e(x[s:t])
    return out


def _split_cat(experts, x):  # SequentialMLP.forward from core_r0.9.0
    return torch.cat([e(c) for e, c in zip(experts, torch.split(x, [T // N] * N), strict=True)], dim=0)


def _logged(fn):
    x = torch.randn(T, H, requires_grad=True) * 1.0  # not a leaf: the experts' input gradients are summed
    fwd, bwd = _WholeBufferOps(), _WholeBufferOps()
    with fwd:
        y = fn(_experts(), x)
    with bwd:
        y.backward(torch.ones_like(y))
    return fwd.ops, bwd.ops


def test_the_sliced_loop_makes_whole_buffer_tensors_per_expert():
    fwd, bwd = _logged(_sliced)
    assert fwd == Counter({"zeros_like": 1})
    assert bwd["slice_backward"] == N and bwd["new_empty_strided"] == N and bwd["copy_"] == N
    assert bwd["add"] == N - 1


def test_split_and_cat_make_one_each_way():
    fwd, bwd = _logged(_split_cat)
    assert fwd == Counter({"cat": 1})
    assert bwd["cat"] == 1 and not bwd["slice_backward"] and not bwd["copy_"]
