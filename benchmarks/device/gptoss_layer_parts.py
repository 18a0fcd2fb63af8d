# Settles (not run yet: written 2026-12-06; no GPU is lent here; docs/known-gaps.md 263 (e)): which GPT-OSS-only part
# of an eager Megatron-Core layer is slower than the estimate charges. GPT-OSS 120B is predicted too fast on every part
# (+6..+9% on H100, +28..+49% on Blackwell in BF16; 17 (a), 41 (8), 208 (e) (a)), by about 0.4-0.6 us a token and layer,
# where Qwen3 / DeepSeek-V3 layers fit. The two GPT-OSS-only leads both need a GPU: TE GroupedLinear's expert GEMMs with
# a bias (fc1's bias gradient in BF16 rides cuBLASLt's BGRADB epilogue on the wgrad GEMM, 41 (8); no rate of it is
# public) and the attention with a learnable sink and a 128-token sliding window at head dim 64 (TE softmax_type
# "learnable", window_size (127, 0)), against the same without. Run it on one B200 / GB200 and one H100, same image:
# python benchmarks/device/gptoss_layer_parts.py (--tiny on a CPU as a smoke test). Each line's ms / TFLOP/s against
# its "without" twin is the cost the estimate would need; the backend line says which attention kernel TE picked.
"""GPT-OSS's expert GEMMs and attention, each with and without its GPT-OSS-only feature, forward and backward, on one
GPU in BF16.

Expert GEMMs (TE GroupedLinear, the eager TEGroupedMLP path of the Megatron-Bridge 26.02-26.04 rows): fc1 2,880 ->
2 x 2,880 and fc2 2,880 -> 2,880 over the routed rows one rank runs a micro-batch (4 x 4,096 tokens x top-4 =
65,536 rows): 2 local experts (EP 64) and 16 (EP 8), with bias=True (GPT-OSS) and bias=False; Qwen3 235B-A22B's
expert (4,096 -> 2 x 1,536, 1,536 -> 4,096; 4 x 4,096 x top-8 rows at 4 local experts) as the control that fits.
Attention (TE DotProductAttention, bshd, 4 x 4,096 tokens, 64 query heads / 8 KV heads, head dim 64, causal):
softmax_type vanilla / learnable, window none / (127, 0). Per case one JSON line: median ms (CUDA events),
model TFLOP/s, and for attention the backend TE chose; without TE (the --tiny CPU run) torch's own ops stand in."""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import median_ms  # noqa: E402

TINY = "--tiny" in sys.argv
DEV = "cuda" if torch.cuda.is_available() and not TINY else "cpu"
WARM, N = (1, 2) if TINY else (3, 10)
# (name, hidden, expert FFN width, routed rows a rank and micro-batch, local experts)
EXPERTS = ([("tiny", 32, 24, 64, 2)] if TINY else
           [("gpt-oss-120b ep64", 2880, 2880, 65536, 2), ("gpt-oss-120b ep8", 2880, 2880, 65536, 16),
            ("qwen3-235b-a22b ep32", 4096, 1536, 131072, 4)])
# (name, sequences, sequence length, query heads, KV heads, head dim)
ATTENTION = ("tiny", 1, 64, 4, 2, 8) if TINY else ("gpt-oss-120b", 4, 4096, 64, 8, 64)
WINDOW = 7 if TINY else 127  # GPT-OSS's 128-token window as (left, right) = (127, 0) (Megatron-Bridge PR 2656)


def _te():
    if DEV != "cuda":
        return None
    try:
        import transformer_engine.pytorch as te  # noqa: PLC0415 (optional: absent on most hosts)
    except ImportError:
        return None
    return te


def expert_case(hidden: int, ffn: int, rows: int, local: int, bias: bool):
    """A callable running fc1 (gated, 2 x ffn wide), the activation and fc2 over `local` equal splits of `rows`,
    forward and backward; its path name."""
    x = torch.randn(rows, hidden, dtype=torch.bfloat16, device=DEV, requires_grad=True)
    splits = [rows // local] * local
    te = _te()
    if te is not None:
        fc1 = te.GroupedLinear(local, hidden, 2 * ffn, bias=bias, params_dtype=torch.bfloat16)
        fc2 = te.GroupedLinear(local, ffn, hidden, bias=bias, params_dtype=torch.bfloat16)

        def run() -> None:
            h = fc1(x, splits)
            out = fc2(torch.nn.functional.silu(h[:, :ffn]) * h[:, ffn:], splits)
            out.sum().backward()
        return run, "te.GroupedLinear bf16"
    w1 = torch.randn(local, 2 * ffn, hidden, dtype=torch.bfloat16, device=DEV, requires_grad=True)
    w2 = torch.randn(local, hidden, ffn, dtype=torch.bfloat16, device=DEV, requires_grad=True)
    b1 = torch.zeros(local, 2 * ffn, dtype=torch.bfloat16, device=DEV, requires_grad=True) if bias else None
    b2 = torch.zeros(local, hidden, dtype=torch.bfloat16, device=DEV, requires_grad=True) if bias else None

    def loop() -> None:
        outs = []
        for e, xe in enumerate(x.split(splits)):
            h = torch.nn.functional.linear(xe, w1[e], None if b1 is None else b1[e])
            a = torch.nn.functional.silu(h[:, :ffn]) * h[:, ffn:]
            outs.append(torch.nn.functional.linear(a, w2[e], None if b2 is None else b2[e]))
        torch.cat(outs).sum().backward()
    return loop, "torch.nn.functional.linear loop"


def expert_flops(hidden: int, ffn: int, rows: int) -> float:
    """fc1 (2 x ffn) and fc2 forward and backward (3x the forward's 2 m n k)."""
    return 3.0 * 2.0 * rows * hidden * 3 * ffn


def attention_case(learnable: bool, window: bool):
    """A callable running one causal attention forward and backward (sink and window as asked); its path name and,
    after it ran, the backend TE chose (backend())."""
    b, s, hq, hkv, d = ATTENTION[1:]
    q = torch.randn(b, s, hq, d, dtype=torch.bfloat16, device=DEV, requires_grad=True)
    k = torch.randn(b, s, hkv, d, dtype=torch.bfloat16, device=DEV, requires_grad=True)
    v = torch.randn(b, s, hkv, d, dtype=torch.bfloat16, device=DEV, requires_grad=True)
    te = _te()
    if te is not None:
        dpa = te.DotProductAttention(hq, d, num_gqa_groups=hkv, qkv_format="bshd", attn_mask_type="causal",
                                     window_size=(WINDOW, 0) if window else None,
                                     softmax_type="learnable" if learnable else "vanilla").to(DEV)

        def run() -> None:
            dpa(q, k, v).sum().backward()
        return run, "te.DotProductAttention"
    sink = torch.zeros(hq, dtype=torch.float32, device=DEV, requires_grad=True)
    pos = torch.arange(s, device=DEV)
    allowed = pos[None, :] <= pos[:, None]
    if window:
        allowed &= pos[:, None] - pos[None, :] <= WINDOW

    def eager() -> None:  # the math the kernels compute: a sink logit a head in the softmax's denominator
        qh, kh, vh = (t.transpose(1, 2).float() for t in (q, k, v))
        kh, vh = (t.repeat_interleave(hq // hkv, dim=1) for t in (kh, vh))
        scores = (qh @ kh.transpose(-1, -2)) / d ** 0.5
        scores = scores.masked_fill(~allowed, float("-inf"))
        if learnable:
            col = sink.view(1, hq, 1, 1).expand(b, hq, s, 1)
            probs = torch.softmax(torch.cat([scores, col], dim=-1), dim=-1)[..., :s]
        else:
            probs = torch.softmax(scores, dim=-1)
        (probs @ vh).sum().backward()
    return eager, "eager torch"


def te_backend() -> str:
    """The attention backend TE chose last (its module-level selection cache), where this TE version keeps one."""
    try:
        from transformer_engine.pytorch.attention.dot_product_attention import dot_product_attention as m  # noqa: PLC0415
    except ImportError:
        return "-"
    sel = getattr(m, "_attention_backends", {})
    for key, name in (("use_flash_attention", "flash"), ("use_fused_attention", "fused"),
                      ("use_unfused_attention", "unfused")):
        if sel.get(key):
            return name + (f" {sel.get('fused_attention_backend')}" if name == "fused" else "")
    return "-"


def attention_flops(window: bool) -> float:
    """Causal QK^T and PV forward and backward (2.5x the forward) over the keys each query attends."""
    b, s, hq, _, d = ATTENTION[1:]
    keys = min(WINDOW + 1, s) * (s - WINDOW / 2) / s if window else (s + 1) / 2
    return 3.5 * 4.0 * b * s * keys * hq * d


def main() -> None:
    name = torch.cuda.get_device_name(0) if DEV == "cuda" else DEV
    te = _te()
    print(json.dumps({"torch": torch.__version__, "device": name,
                      "transformer_engine": getattr(te, "__version__", None) if te else None,
                      "cudnn": torch.backends.cudnn.version() if DEV == "cuda" else None}))
    for shape, hidden, ffn, rows, local in EXPERTS:
        for bias in (False, True):
            fn, path = expert_case(hidden, ffn, rows, local, bias)
            ms = median_ms(fn, DEV, WARM, N)
            print(json.dumps({"part": "experts", "shape": shape, "local_experts": local, "bias": bias, "path": path,
                              "ms": round(ms, 4), "tflops": round(expert_flops(hidden, ffn, rows) / ms / 1e9, 2)}))
    for learnable in (False, True):
        for window in (False, True):
            fn, path = attention_case(learnable, window)
            ms = median_ms(fn, DEV, WARM, N)
            print(json.dumps({"part": "attention", "shape": ATTENTION[0], "softmax": "learnable" if learnable
                              else "vanilla", "window": WINDOW if window else None, "path": path,
                              "backend": te_backend() if te else "-", "ms": round(ms, 4),
                              "tflops": round(attention_flops(window) / ms / 1e9, 2)}))


if __name__ == "__main__":
    main()
