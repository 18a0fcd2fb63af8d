"""Eager element-wise chains the estimate charges by HBM bytes, counted op by op as PyTorch runs them (needs PyTorch;
CPU is enough: the ops and tensor sizes are the device's). Each chain runs forward and backward in bf16 under a
dispatch mode that adds every op's tensor inputs and outputs (views and allocations move nothing), and prints the
bytes per element beside what the estimate charges: the chains' own constants (perf_constants.yaml gemm.*_bytes,
eager_bytes_per_element, eager_swiglu_backward_bytes, eager_backward_bytes_per_element, the styles' rope_eager_bytes
and rope_eager_backward_bytes). Counted on PyTorch 2.13.0 (CPU). docs/known-gaps.md 300 (a), (d), 304 (a), 339 (a).

    python benchmarks/eager_chain_bytes.py
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainsizer.estimate.calibration import load_constants
from trainsizer.estimate.step_time import perf_style

ROWS, WIDTH = 64, 48  # a chain's rows and its per-element width (the counts are per element: any size gives them)
HIDDEN = 1024  # the RMSNorm's row width
LIMIT = 7.0  # gpt-oss swiglu_limit / Megatron-Core activation_func_clamp_value
# ops that move no tensor data
NO_DATA = {"view", "_unsafe_view", "as_strided", "slice", "narrow", "split", "split_with_sizes", "chunk", "detach",
           "alias", "empty", "empty_strided", "empty_like", "scalar_tensor", "lift_fresh", "unsqueeze", "expand",
           "t", "transpose", "permute", "select", "unbind", "view_as_complex", "view_as_real"}
# ops that zero-fill their output before copying into part of it (ATen's slice_backward / select_backward: zeros, then
# copy_ into the slice): one more write of the output
ZERO_FILLED = {"slice_backward", "select_backward"}


def byte_mode():
    """A TorchDispatchMode whose `ops` list gets (op, bytes read, bytes written) for every data-moving op: each tensor
    input with a dimension read once (a broadcast dimension once, not per use: MeanBackward's expanded gradient), each
    output written once (twice where the op zero-fills it first; 0-dim scalars left out)."""
    import torch  # noqa: PLC0415 (optional dependency)
    from torch.utils._python_dispatch import TorchDispatchMode  # noqa: PLC0415
    from torch.utils._pytree import tree_flatten  # noqa: PLC0415

    def distinct(t: Any) -> int:
        """Elements a kernel moves for `t`: a broadcast (expanded, stride-0) dimension is read once, not per use."""
        return math.prod(n for n, st in zip(t.shape, t.stride(), strict=True) if st != 0)

    def size(tree: Any) -> int:
        return sum(distinct(t) * t.element_size() for t in tree_flatten(tree)[0]
                   if isinstance(t, torch.Tensor) and t.dim() > 0)

    class Bytes(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.ops: list[tuple[str, int, int]] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            name = func.overloadpacket.__name__
            if name not in NO_DATA:
                written = size(out) * (2 if name in ZERO_FILLED else 1)
                self.ops.append((name, size((args, kwargs)), written))
            return out

    return Bytes()


def count(make: Callable[[], tuple], chain: Callable[..., Any], elements: int) -> tuple[float, float, list, list]:
    """(forward, backward bytes per element, forward ops, backward ops) of `chain` on the tensors `make` returns."""
    import torch  # noqa: PLC0415

    inputs = make()
    fwd = byte_mode()
    with fwd:
        out = chain(*inputs)
    grad = torch.randn_like(out)
    bwd = byte_mode()
    with bwd:
        out.backward(grad)
    per = float(elements)
    return (sum(r + w for _, r, w in fwd.ops) / per, sum(r + w for _, r, w in bwd.ops) / per, fwd.ops, bwd.ops)


# --- the chains, as each framework's code writes them ---

def mcore_clamp_and_cat(x):
    """Megatron-Core weighted_bias_quick_geglu_impl's clamp before the compiled quick-GeGLU (fused_bias_geglu.py at
    Megatron-LM b0cc2706; the same at 0d8e0714 / b20c1b25 / 458c8d0e). Per intermediate element of a routed slot."""
    import torch  # noqa: PLC0415

    x_glu, x_linear = x.chunk(2, -1)
    return torch.cat((x_glu.clamp(min=None, max=LIMIT), x_linear.clamp(min=-LIMIT, max=LIMIT)), -1)


def mcore_apply_bias(t, b0, b1, p):
    """Megatron-Core TEGroupedMLP._apply_bias (experts.py at b0cc2706): fc2's bias a local expert, scaled by the
    routing probabilities (bf16: the alltoall dispatcher, moe_router_dtype unset), two experts. Per hidden element."""
    import torch  # noqa: PLC0415

    half = t.shape[0] // 2
    parts = zip(torch.split(t, [half, half]), (b0, b1), torch.split(p, [half, half]), strict=True)
    return torch.cat([ti + bi * pi for ti, bi, pi in parts]).to(t.dtype)


def _rotate_half(x):
    import torch  # noqa: PLC0415

    x1, x2 = torch.chunk(x, 2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def mcore_rope_unfused(t, freqs):
    """Megatron-Core _apply_rotary_pos_emb_bshd with mscale != 1 (rope_utils.py at b0cc2706): per q / k element."""
    import torch  # noqa: PLC0415

    rot = freqs.shape[-1]
    t, t_pass = t[..., :rot], t[..., rot:]
    cos_ = (torch.cos(freqs) * 1.35).to(t.dtype)
    sin_ = (torch.sin(freqs) * 1.35).to(t.dtype)
    return torch.cat(((t * cos_) + (_rotate_half(t) * sin_), t_pass), dim=-1)


def hf_rmsnorm(x, weight):
    """transformers LlamaRMSNorm.forward (torchtitan's / torchtune's RMSNorm the same ops): per hidden element."""
    import torch  # noqa: PLC0415

    h = x.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
    return weight * h.to(x.dtype)


def hf_swiglu(gate, up):
    """transformers LlamaMLP's act_fn(gate_proj(x)) * up_proj(x): per intermediate element."""
    import torch  # noqa: PLC0415

    return torch.nn.functional.silu(gate) * up


def nemo2_squared_relu(x):
    """NVIDIA/NeMo nemo/collections/llm/fn/activation.py squared_relu at b4148d21 (undecorated; NemotronConfig's
    activation_func, called eagerly by Megatron-Core MLP.forward): per intermediate element."""
    import torch  # noqa: PLC0415

    return torch.pow(torch.nn.functional.relu(x), 2)


def hf_rope(q, cos, sin):
    """transformers apply_rotary_pos_emb (cos / sin in the activations' dtype, broadcast over heads): per q element."""
    return (q * cos) + (_rotate_half(q) * sin)


def titan_rope(xq, freqs_cis):
    """torchtitan models/llama3/model.py apply_rotary_emb (the complex product; freqs_cis broadcast over batch and heads):
    per q element."""
    import torch  # noqa: PLC0415

    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    return torch.view_as_real(xq_ * freqs_cis).flatten(3).type_as(xq)


def titan_gpt_oss_swiglu(x):
    """torchtitan models/gpt_oss/moe.py swiglu (interleaved halves, alpha 1.702, limit 7, linear + 1; transformers'
    GptOssExperts the same): per intermediate element."""
    import torch  # noqa: PLC0415

    x_glu, x_linear = x[..., ::2], x[..., 1::2]
    x_glu = x_glu.clamp(min=None, max=LIMIT)
    x_linear = x_linear.clamp(min=-LIMIT, max=LIMIT)
    return x_glu * torch.sigmoid(1.702 * x_glu) * (x_linear + 1)


@dataclass(frozen=True)
class Chain:
    name: str
    make: Callable[[], tuple]
    run: Callable[..., Any]
    elements: int  # the elements the counts are per
    charged: tuple[float, float]  # the estimate's forward, backward bytes per element
    rule: str  # where the charge comes from


def chains() -> list[Chain]:
    """Every chain with the estimate's charge for it."""
    import torch  # noqa: PLC0415

    bf = torch.bfloat16
    k = load_constants()
    eb, clamp, bias = k.eager_bytes_per_element, k.activation_clamp_mcore_bytes, k.expert_bias_mcore_bytes
    ebb = k.eager_backward_bytes_per_element
    rope, sw = k.rope_unfused_mcore_bytes, k.eager_swiglu_backward_bytes
    n, w = ROWS, WIDTH

    def grad(*shape, dtype=bf):
        return torch.randn(*shape, dtype=dtype, requires_grad=True)

    s, b, heads, d = 8, 4, 64, 16  # the rotary tables broadcast over b x heads: their own ops under 0.2 B an element
    hf, titan = perf_style("hf"), perf_style("torchtitan")
    return [
        Chain("megatron-core clamp-and-cat (gpt-oss)", lambda: (grad(n, 2 * w),), mcore_clamp_and_cat, n * w,
              (clamp["forward"], clamp["backward"]), "gemm.activation_clamp_mcore_bytes"),
        Chain("megatron-core fc2 bias x probs (bf16)",
              lambda: (grad(n, w), grad(w), grad(w), grad(n, 1)), mcore_apply_bias, n * w,
              (bias["down_forward_bf16"], bias["down_backward_bf16"]), "gemm.expert_bias_mcore_bytes"),
        # the fused kernel's 2 + 2 forward and twice that backward the layer already counts, plus the unfused excess
        Chain("megatron-core unfused RoPE (YaRN mscale)",
              lambda: (grad(s, b, heads, d), torch.randn(s, 1, 1, d)), mcore_rope_unfused, s * b * heads * d,
              (rope["forward"] + 4.0, rope["backward"] + 8.0), "gemm.rope_unfused_mcore_bytes + the fused 4 / 8"),
        # a model's hidden width (its per-row mean and rsqrt under 0.1 B an element; at WIDTH they add 0.5 / 0.8)
        Chain("hf / torchtitan / torchtune RMSNorm", lambda: (grad(n, HIDDEN), grad(HIDDEN)), hf_rmsnorm, n * HIDDEN,
              (eb["rmsnorm"], ebb["rmsnorm"]), "eager_bytes_per_element.rmsnorm, eager_backward_bytes_per_element"),
        Chain("hf eager SwiGLU", lambda: (grad(n, w), grad(n, w)), hf_swiglu, n * w,
              (eb["swiglu"], sw["products"] + sw["silu"]), "eager_bytes_per_element.swiglu, eager_swiglu_backward_bytes"),
        Chain("nemo 2 eager squared ReLU", lambda: (grad(n, w),), nemo2_squared_relu, n * w,
              (eb["relu2"], ebb["relu2"]), "eager_bytes_per_element.relu2, eager_backward_bytes_per_element"),
        Chain("hf eager RoPE", lambda: (grad(b, heads, s, d), torch.randn(b, 1, s, d, dtype=bf),
                                        torch.randn(b, 1, s, d, dtype=bf)), hf_rope, b * heads * s * d,
              (hf.rope_eager_bytes, hf.rope_eager_backward_bytes), "frameworks.hf rope_eager_(backward_)bytes"),
        Chain("torchtitan eager RoPE (complex product)",
              lambda: (grad(b, s, heads, d), torch.polar(torch.ones(s, d // 2), torch.randn(s, d // 2)).view(
                  1, s, 1, d // 2)), titan_rope, b * heads * s * d,
              (titan.rope_eager_bytes, titan.rope_eager_backward_bytes), "frameworks.torchtitan rope_eager_(backward_)bytes"),
        Chain("torchtitan / hf gpt-oss clamped SwiGLU", lambda: (grad(n, 2 * w),), titan_gpt_oss_swiglu, n * w,
              (eb["swiglu_clamped"], ebb["swiglu_clamped"]),
              "eager_bytes_per_element.swiglu_clamped, eager_backward_bytes_per_element"),
    ]


def table() -> list[tuple[Chain, float, float]]:
    """(chain, counted forward, counted backward) per chain."""
    out = []
    for c in chains():
        f, b, _, _ = count(c.make, c.run, c.elements)
        out.append((c, f, b))
    return out


def main() -> None:
    try:
        import torch  # noqa: F401, PLC0415
    except ImportError as e:
        raise SystemExit("eager_chain_bytes needs PyTorch (pip install torch)") from e
    print("HBM bytes per element, counted as PyTorch runs each chain against the estimate's charge "
          "(small per-row tensors and 0-dim scalars included in the counts; + = the estimate charges too little):")
    print(f"  {'chain':42s} {'fwd':>6s} {'charged':>8s} {'bwd':>6s} {'charged':>8s} {'bwd miss':>9s}  charge from")
    for c, f, b in table():
        print(f"  {c.name:42s} {f:6.1f} {c.charged[0]:8.1f} {b:6.1f} {c.charged[1]:8.1f} {b - c.charged[1]:+9.1f}  {c.rule}")


if __name__ == "__main__":
    main()
