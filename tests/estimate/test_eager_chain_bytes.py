"""benchmarks/eager_chain_bytes.py (skipped without torch): the eager element-wise chains the estimate charges by HBM
bytes, counted op by op as PyTorch runs them on CPU, against the constants that claim a count (docs/known-gaps.md
300 (a), (d))."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch.utils._python_dispatch")

import eager_chain_bytes as ecb  # noqa: E402 (after the torch check: the benchmark needs it)

pytestmark = pytest.mark.torch


@pytest.fixture(scope="module")
def table():
    return {c.name: (c, f, b) for c, f, b in ecb.table()}


@pytest.mark.parametrize("name", ["megatron-core clamp-and-cat (gpt-oss)", "megatron-core fc2 bias x probs (bf16)",
                                  "hf eager SwiGLU", "hf / torchtitan / torchtune RMSNorm", "hf eager RoPE",
                                  "torchtitan / hf gpt-oss clamped SwiGLU", "nemo 2 eager squared ReLU"])
def test_the_constants_that_count_a_chain_hold_its_bytes(table, name):
    chain, fwd, bwd = table[name]
    assert fwd == pytest.approx(chain.charged[0], abs=0.5)
    assert bwd == pytest.approx(chain.charged[1], abs=0.5)


def test_the_clamp_backward_is_masks_wheres_and_a_cat():
    chain = next(c for c in ecb.chains() if c.name.startswith("megatron-core clamp"))
    _, _, _, bwd = ecb.count(chain.make, chain.run, chain.elements)
    assert sorted(op for op, _, _ in bwd) == sorted(["ge", "le", "logical_and_", "where", "le", "where", "cat"])


def test_the_counted_backwards_differ_from_twice_the_forward(table):
    """The chains whose backward the layer's twice-the-forward rule missed (known-gaps 300 (d), 304 (a)): RMSNorm's
    backward in fp32 is heavier, RoPE's lighter, the gpt-oss clamped SwiGLU's heavier; the charges are the counts."""
    for name, sign in (("hf / torchtitan / torchtune RMSNorm", 1), ("hf eager RoPE", -1),
                       ("torchtitan / hf gpt-oss clamped SwiGLU", 1)):
        chain, fwd, bwd = table[name]
        assert sign * (bwd - 2.0 * fwd) > 10.0
        assert sign * (chain.charged[1] - 2.0 * chain.charged[0]) > 10.0


def test_torchtitans_complex_rope_backward_is_its_forward_and_charged_at_twice(table):
    """A lead left (known-gaps 304 (c)): torchtitan's complex-product RoPE moves 20 B an element backward as forward;
    the style's charge keeps the twice-the-forward rule (40)."""
    chain, fwd, bwd = table["torchtitan eager RoPE (complex product)"]
    assert fwd == pytest.approx(chain.charged[0], abs=0.5) and bwd == pytest.approx(20.0, abs=0.5)
    assert chain.charged[1] == 2.0 * chain.charged[0]


def test_a_zero_filled_output_is_written_twice():
    mode = ecb.byte_mode()
    grad = torch.ones(4, 3, dtype=torch.bfloat16)
    with mode:
        torch.ops.aten.slice_backward(grad, [4, 6], 1, 0, 3, 1)
    ((name, read, written),) = mode.ops
    assert (name, read, written) == ("slice_backward", 24, 2 * 48)


def test_the_eager_squared_relu_is_two_kernels_forward_and_four_backward():
    """NeMo 2's torch.pow(F.relu(x), 2) (known-gaps 339 (a)): relu and pow forward (8 B an element, twice the fused
    4), pow's backward as autograd writes it (a copy for x.pow(1), two products) and relu's threshold_backward: 20 B,
    4 more than twice the forward, which step_time._eager_chain_backward_time charges."""
    chain = next(c for c in ecb.chains() if c.name == "nemo 2 eager squared ReLU")
    fwd, bwd, f_ops, b_ops = ecb.count(chain.make, chain.run, chain.elements)
    assert [op for op, _, _ in f_ops] == ["relu", "pow"]
    assert sorted(op for op, _, _ in b_ops) == sorted(["pow", "mul", "mul", "threshold_backward"])
    assert bwd - 2.0 * fwd == pytest.approx(4.0)
