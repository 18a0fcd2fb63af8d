"""QLoRA's reserved memory under PyTorch's caching allocator: two candidates for ms-swift's QLoRA residual, replayed
(a diagnostic; docs/known-gaps.md 198 (d) and 128 (c)). It moves no figure.

ms-swift 1.5's QLoRA rows (perf_heldout35, torch.cuda.max_memory_reserved) read about 0.5 B a quantised parameter more
than their LoRA twins' offset explains: 3.7 / 5.6 GiB on Qwen-1 7B / 14B in the page's first table, where most samples
have the cutoff's length. Two ways the 4-bit path could leave reserved segments the live tensors do not fill, each
replayed through caching_allocator.Pool (the large pool's rules, torch 2.1):

- `load`: transformers 4.36 quantises each weight as it loads it (integrations/bitsandbytes.py
  set_module_quantized_tensor_to_device -> bitsandbytes 0.41.3 Params4bit.cuda: `w = self.data.contiguous().half()
  .cuda(device)`, then functional.quantize_4bit: an fp32 absmax of one value per 64, the packed NF4 data of half a byte
  a value, with double quantisation the absmax's 8-bit copy; the fp32 absmax and the fp16 copy freed), in checkpoint
  key order (safetensors' sorted names: per layer attn.c_attn, attn.c_proj, mlp.c_proj, mlp.w1, mlp.w2), the 16-bit
  LM head and embedding beside them;
- `forward`: one forward of the checkpointed model (reentrant gradient checkpointing runs each layer under no_grad and
  keeps only its input), each 4-bit linear dequantising its weight to fp16 and recasting it to bf16 before the GEMM
  (bitsandbytes 0.41.3 MatMul4Bit.forward: `F.dequantize_4bit(B, state).to(A.dtype)`), PEFT 0.7's clone of the base
  output and its LoRA path on c_attn, Qwen-1's eager RMSNorm (fp32 copies), rotary on fp32 copies of q and k, the MLP's
  w1 / w2 / SiLU product: whether the layer outputs kept for the backward settle inside the freed dequantisation
  segments and force new ones layer after layer.

Reserved over live after each (GiB) is printed for LoRA and QLoRA; requests of 1 MiB or less (the small pool) are
left out. Both stay a few tenths of a GiB: neither is the residual.

Run: python benchmarks/qlora_allocator.py
"""

from __future__ import annotations

from caching_allocator import MIB, Pool

GIB = 1 << 30
# Qwen-1 (config.json): hidden, the MLP's w1 / w2 width (intermediate_size / 2), layers, vocabulary
QWEN1 = {"qwen-1.8b": (2048, 5504, 24, 151936), "qwen-7b": (4096, 11008, 32, 151936),
         "qwen-14b": (5120, 13696, 40, 152064)}


def linears(hidden: int, mlp: int) -> dict[str, tuple[int, int]]:
    """A Qwen-1 layer's linears (in, out), by checkpoint name."""
    return {"attn.c_attn": (hidden, 3 * hidden), "attn.c_proj": (hidden, hidden), "mlp.c_proj": (mlp, hidden),
            "mlp.w1": (hidden, mlp), "mlp.w2": (hidden, mlp)}


class _Tracked:
    """A Pool with named live blocks (requests of 1 MiB or less left out) and the live bytes."""

    def __init__(self) -> None:
        self.pool, self.live = Pool(), {}

    def malloc(self, name: str, n: int) -> None:
        if n > MIB:
            self.live[name] = self.pool.malloc(n)

    def free(self, name: str) -> None:
        bid = self.live.pop(name, None)
        if bid is not None:
            self.pool.release(bid)

    def over_gib(self) -> float:
        """Reserved bytes no live block holds, GiB."""
        return (self.pool.reserved - sum(self.pool.blocks[b][2] for b in self.live.values())) / GIB


def load(hidden: int, mlp: int, layers: int, vocab: int) -> _Tracked:
    """The 4-bit load (module docstring): per weight of n values an fp16 copy (2 n), an fp32 absmax (n / 16), the
    packed data (n / 2) and the 8-bit absmax (n / 64) kept; the head and the embedding in bf16."""
    t = _Tracked()
    t.malloc("lm_head", 2 * vocab * hidden)  # 'lm_head.weight' sorts before 'transformer.*'
    for i in range(layers):
        for name, (k, n_out) in sorted(linears(hidden, mlp).items()):
            n = k * n_out
            t.malloc("w16", 2 * n)
            t.malloc("absmax", n // 16)
            t.malloc(f"{i}.{name}", n // 2)
            t.malloc(f"{i}.{name}.absmax8", n // 64)
            t.free("absmax")
            t.free("w16")
    t.malloc("wte", 2 * vocab * hidden)
    return t


def forward(hidden: int, mlp: int, layers: int, tokens: int, qlora: bool) -> _Tracked:
    """One checkpointed forward (module docstring) over `tokens` positions; the layer outputs are what stays live."""
    t, s = _Tracked(), tokens

    def linear(k: int, n_out: int, out: str, lora: bool = False) -> None:
        if qlora:
            t.malloc("w16", 2 * k * n_out)
            t.malloc("wbf", 2 * k * n_out)
            t.free("w16")
        t.malloc(out, 2 * s * n_out)
        t.free("wbf")
        if lora:
            if qlora:  # PEFT 0.7 bnb.Linear4bit: result = result.clone()
                t.malloc("clone", 2 * s * n_out)
                t.free(out)
                if "clone" in t.live:
                    t.live[out] = t.live.pop("clone")
            t.malloc("drop", 2 * s * k)
            t.malloc("lora_b", 2 * s * n_out)
            t.malloc("scaled", 2 * s * n_out)
            for name in ("lora_b", "drop", "scaled"):
                t.free(name)

    def rmsnorm(out: str) -> None:  # x.float(), pow, x * rsqrt, type_as, * weight
        t.malloc("f1", 4 * s * hidden)
        t.malloc("f2", 4 * s * hidden)
        t.free("f2")
        t.malloc("f3", 4 * s * hidden)
        t.free("f1")
        t.malloc("b1", 2 * s * hidden)
        t.free("f3")
        t.malloc(out, 2 * s * hidden)
        t.free("b1")

    t.malloc("x0", 2 * s * hidden)
    for i in range(layers):
        rmsnorm("ln1")
        linear(hidden, 3 * hidden, "qkv", lora=True)
        t.free("ln1")
        for q in ("q", "k"):  # rotary on t.float(), cast back
            t.malloc(q + "32", 4 * s * hidden)
            t.malloc(q + "o", 4 * s * hidden)
            t.free(q + "32")
            t.malloc(q + "r", 2 * s * hidden)
            t.free(q + "o")
        t.malloc("attn", 2 * s * hidden)
        for name in ("qr", "kr", "qkv"):
            t.free(name)
        linear(hidden, hidden, "ao")
        t.free("attn")
        t.malloc("res1", 2 * s * hidden)
        t.free("ao")
        rmsnorm("ln2")
        linear(hidden, mlp, "a1")
        linear(hidden, mlp, "a2")
        t.free("ln2")
        t.malloc("silu", 2 * s * mlp)
        t.free("a2")
        t.malloc("prod", 2 * s * mlp)
        t.free("a1")
        t.free("silu")
        linear(mlp, hidden, "mo")
        t.free("prod")
        t.malloc(f"x{i + 1}", 2 * s * hidden)  # the layer output: the next layer's kept input
        t.free("mo")
        t.free("res1")
    return t


def main() -> None:
    print("QLoRA's reserved memory under the caching allocator, ms-swift 1.5's Qwen-1 (known-gaps 198 (d)):")
    print(f"  {'model':10s} {'load':>6s}  {'forward 2,048: LoRA':>20s} {'QLoRA':>6s}   (GiB reserved over live)")
    for name, (h, f, layers, vocab) in QWEN1.items():
        lo = load(h, f, layers, vocab).over_gib()
        fl, fq = (forward(h, f, layers, 2048, q).over_gib() for q in (False, True))
        print(f"  {name:10s} {lo:6.2f}  {fl:20.2f} {fq:6.2f}")


if __name__ == "__main__":
    main()
