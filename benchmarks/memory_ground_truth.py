"""Ground truth for the memory estimator, measured on CPU with small plain-PyTorch models.

Each case builds a tiny decoder (Llama-style GQA + SwiGLU + RMSNorm; Qwen-MoE-style shared expert + top-k
routing; DeepSeek-style MLA), runs one training step and counts
- activations: the bytes of every tensor autograd saves for backward during the forward pass, through
  `torch.autograd.graph.saved_tensors_hooks`, deduplicated by storage, parameters excluded;
- model states: parameter, gradient, fp32 master and optimizer-state bytes after a mixed-precision AdamW step
  (bf16 weights and gradients, fp32 master copies, fp32 AdamW states).
The estimator is run with the `hf` profile (transformers-style eager modules) and the attention kernel the
case uses: `sdpa` (torch scaled_dot_product_attention: keeps q, k, v, output, log-sum-exp; o_proj keeps a
reshaped copy) or `eager` (materialised fp32 softmax + its bf16 copy; repeat_kv expands K/V).
MLA cases use eager attention for recompute none/selective (torch SDPA has no CPU kernel for a V head dim
different from the QK head dim and falls back to a materialising path).
Recompute: none; selective = the attention core under torch.utils.checkpoint; full = every decoder layer
under torch.utils.checkpoint (reentrant, so only the layer input is kept).
LoRA adapters are kept in bf16 here (the QLoRA reference code does this); the estimator counts PEFT's fp32
adapters, which have the same 16 B/param of model states. Each adapter's input makes PEFT's round trip (cast to the
fp32 adapter dtype, back to bf16 by autocast), so its lora_A keeps a copy of its own, as under PEFT.

Run: python benchmarks/memory_ground_truth.py   (needs torch)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import MemoryOptions, estimate_memory
from trainsizer.models.arch import ModelArch

TOLERANCE = 0.05
DTYPE = torch.bfloat16
SYSTEM = System(accelerator="cpu", gpus=1, gpus_per_node=1, memory_gib=1024.0, peak_tflops={"bf16": 1.0},
                hbm_gb_s=1.0, intra_node_gb_s=1.0)

LLAMA = ModelArch(name="tiny-llama", family="llama", layers=4, hidden=64, heads=4, kv_heads=2, ffn=160,
                  vocab=512)
MOE = ModelArch(name="tiny-qwen-moe", family="qwen2_moe", layers=3, hidden=64, heads=4, kv_heads=4, ffn=160,
                vocab=512, experts=8, experts_per_token=2, expert_ffn=48, shared_expert_ffn=96,
                shared_expert_gate=True)
MLA = ModelArch(name="tiny-mla", family="deepseek", layers=3, hidden=64, heads=4, kv_heads=4, ffn=160,
                vocab=512, attention="mla", q_lora_rank=48, kv_lora_rank=32, qk_nope_head_dim=16,
                qk_rope_head_dim=8, v_head_dim=16)


# ------------------------------------------------------------------ reference modules (transformers-style)
class RMSNorm(nn.Module):
    def __init__(self, n: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n, dtype=DTYPE))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # transformers LlamaRMSNorm
        dtype = x.dtype
        x = x.to(torch.float32)
        var = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + self.eps)
        return self.weight * x.to(dtype)


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, r: int) -> None:
        super().__init__()
        self.base = base
        self.base.weight.requires_grad_(False)
        self.A = nn.Linear(base.in_features, r, bias=False, dtype=DTYPE)
        self.B = nn.Linear(r, base.out_features, bias=False, dtype=DTYPE)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # PEFT's lora.Linear casts x to its fp32 adapters' dtype and the Trainer's autocast casts it back for lora_A
        # (peft lora/layer.py _cast_input_dtype): A keeps a 16-bit copy of its own
        return self.base(x) + self.B(self.A(x.float().to(DTYPE))) * 2.0


def lin(i: int, o: int) -> nn.Linear:
    return nn.Linear(i, o, bias=False, dtype=DTYPE)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return x * cos + rotate_half(x) * sin


def core_attention(q, k, v, impl: str) -> torch.Tensor:
    """(b, h, s, d) in, (b, h, s, dv) out."""
    if impl == "sdpa":
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=k.shape[1] != q.shape[1])
    rep = q.shape[1] // k.shape[1]
    if rep > 1:  # transformers repeat_kv
        b, kh, s, d = k.shape
        k = k[:, :, None].expand(b, kh, rep, s, d).reshape(b, kh * rep, s, d)
        v = v[:, :, None].expand(b, kh, rep, s, v.shape[-1]).reshape(b, kh * rep, s, v.shape[-1])
    s = q.shape[2]
    mask = torch.full((s, s), float("-inf"), dtype=q.dtype).triu(1)
    scores = torch.matmul(q, k.transpose(2, 3)) * (1.0 / math.sqrt(q.shape[-1])) + mask
    probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
    return torch.matmul(probs, v)


class Attention(nn.Module):
    def __init__(self, m: ModelArch, impl: str, recompute: str) -> None:
        super().__init__()
        self.m, self.impl, self.recompute = m, impl, recompute
        h = m.hidden
        if m.attention == "mla":
            self.q_a_proj = lin(h, m.q_lora_rank)
            self.q_a_norm = RMSNorm(m.q_lora_rank)
            self.q_b_proj = lin(m.q_lora_rank, m.q_dim)
            self.kv_a_proj = lin(h, m.kv_lora_rank + m.qk_rope_head_dim)
            self.kv_a_norm = RMSNorm(m.kv_lora_rank)
            self.kv_b_proj = lin(m.kv_lora_rank, m.heads * (m.qk_nope_head_dim + m.v_head_dim))
        else:
            self.q_proj = lin(h, m.q_dim)
            self.k_proj = lin(h, m.kv_dim)
            self.v_proj = lin(h, m.v_dim)
        self.o_proj = lin(m.attn_out_dim, h)

    def forward(self, x, cos, sin):
        m, (b, s, _) = self.m, x.shape
        nh = m.heads
        if m.attention == "mla":
            dn, dr, dv = m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim
            q = self.q_b_proj(self.q_a_norm(self.q_a_proj(x))).view(b, s, nh, dn + dr).transpose(1, 2)
            q_nope, q_pe = q[..., :dn], q[..., dn:]
            ckv = self.kv_a_proj(x)
            k_pass, k_pe = ckv[..., : m.kv_lora_rank], ckv[..., m.kv_lora_rank:]
            kv = self.kv_b_proj(self.kv_a_norm(k_pass)).view(b, s, nh, dn + dv).transpose(1, 2)
            k_nope, v = kv[..., :dn], kv[..., dn:]
            k_pe = k_pe.view(b, 1, s, dr)
            q_pe, k_pe = rope(q_pe, cos, sin), rope(k_pe, cos, sin)
            q = torch.cat((q_nope, q_pe), dim=-1)
            k = torch.cat((k_nope, k_pe.expand(b, nh, s, dr)), dim=-1)
            v = v.contiguous()
        else:
            hd = m.head_dim
            q = self.q_proj(x).view(b, s, nh, hd).transpose(1, 2)
            k = self.k_proj(x).view(b, s, m.kv_heads, hd).transpose(1, 2)
            v = self.v_proj(x).view(b, s, m.kv_heads, hd).transpose(1, 2)
            q, k = rope(q, cos, sin), rope(k, cos, sin)
        if self.recompute == "selective":
            out = checkpoint(core_attention, q, k, v, self.impl, use_reentrant=True)
        else:
            out = core_attention(q, k, v, self.impl)
        return self.o_proj(out.transpose(1, 2).reshape(b, s, -1))


class MLP(nn.Module):
    def __init__(self, h: int, f: int) -> None:
        super().__init__()
        self.gate_proj, self.up_proj, self.down_proj = lin(h, f), lin(h, f), lin(f, h)

    def forward(self, x):  # transformers LlamaMLP
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class SparseMoE(nn.Module):
    """transformers Qwen2MoeSparseMoeBlock (eager loop over experts)."""

    def __init__(self, m: ModelArch) -> None:
        super().__init__()
        self.m = m
        self.gate = lin(m.hidden, m.experts)
        self.experts = nn.ModuleList(MLP(m.hidden, m.expert_ffn) for _ in range(m.experts))
        self.shared_expert = MLP(m.hidden, m.shared_expert_ffn)
        self.shared_expert_gate = lin(m.hidden, 1)

    def forward(self, x):
        b, s, h = x.shape
        x = x.view(-1, h)
        logits = self.gate(x)
        w = F.softmax(logits, dim=1, dtype=torch.float)
        w, sel = torch.topk(w, self.m.experts_per_token, dim=-1)
        w = w.to(x.dtype)
        out = torch.zeros_like(x)
        mask = F.one_hot(sel, num_classes=self.m.experts).permute(2, 1, 0)
        for e in range(self.m.experts):
            idx, top_x = torch.where(mask[e])
            if top_x.numel() == 0:
                continue
            cur = x[None, top_x].reshape(-1, h)
            y = self.experts[e](cur) * w[top_x, idx, None]
            out = out.index_add(0, top_x, y.to(x.dtype))
        shared = torch.sigmoid(self.shared_expert_gate(x)) * self.shared_expert(x)
        return (out + shared).view(b, s, h)


class Layer(nn.Module):
    def __init__(self, m: ModelArch, impl: str, recompute: str, moe: bool) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(m.hidden)
        self.self_attn = Attention(m, impl, recompute)
        self.post_attention_layernorm = RMSNorm(m.hidden)
        self.mlp = SparseMoE(m) if moe else MLP(m.hidden, m.ffn)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class Model(nn.Module):
    def __init__(self, m: ModelArch, impl: str, recompute: str) -> None:
        super().__init__()
        self.m, self.recompute = m, recompute
        self.embed_tokens = nn.Embedding(m.vocab, m.hidden, dtype=DTYPE)
        self.layers = nn.ModuleList(Layer(m, impl, recompute, m.layer_is_moe(i)) for i in range(m.layers))
        self.norm = RMSNorm(m.hidden)
        self.lm_head = lin(m.hidden, m.vocab)

    def forward(self, ids, labels):
        b, s = ids.shape
        x = self.embed_tokens(ids)
        if self.recompute != "none" and not x.requires_grad:
            x.requires_grad_(True)  # transformers enable_input_require_grads (checkpointing + PEFT)
        d = self.m.qk_rope_head_dim if self.m.attention == "mla" else self.m.head_dim
        pos = torch.arange(s, dtype=torch.float32)
        inv = 1.0 / (10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
        ang = torch.cat([torch.outer(pos, inv)] * 2, dim=-1)
        cos = ang.cos().to(DTYPE)[None, None].expand(b, 1, s, d).contiguous()
        sin = ang.sin().to(DTYPE)[None, None].expand(b, 1, s, d).contiguous()
        for layer in self.layers:
            if self.recompute == "full":
                x = checkpoint(layer, x, cos, sin, use_reentrant=True)
            else:
                x = layer(x, cos, sin)
        logits = self.lm_head(self.norm(x)).float()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1))


def apply_lora(model: Model, targets: tuple[str, ...], r: int) -> None:
    for p in model.parameters():
        p.requires_grad_(False)
    names = set(targets)
    if "all-linear" in names:  # every projection of the decoder layers (not the LM head or MoE gates)
        names |= {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "q_a_proj",
                  "q_b_proj", "kv_a_proj", "kv_b_proj"}
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, nn.Linear) and name in names:
                setattr(module, name, LoRALinear(child, r))


# ------------------------------------------------------------------ measurement
@dataclass(frozen=True)
class GTCase:
    name: str
    model: ModelArch
    impl: str
    recompute: str
    seq: int
    batch: int
    method: str = "full"
    lora_targets: tuple[str, ...] = ()
    lora_rank: int = 8


def measure(case: GTCase, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    model = Model(case.model, case.impl, case.recompute)
    if case.method == "lora":
        apply_lora(model, case.lora_targets, case.lora_rank)
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    ids = torch.randint(0, case.model.vocab, (case.batch, case.seq))
    labels = torch.randint(0, case.model.vocab, (case.batch, case.seq))
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        if st.data_ptr() not in params:
            seen[st.data_ptr()] = st.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = model(ids, labels)
    saved = float(sum(seen.values()))
    loss.backward()
    trainable = [p for p in model.parameters() if p.requires_grad]
    masters = [p.detach().float().clone().requires_grad_(True) for p in trainable]
    opt = torch.optim.AdamW(masters, lr=1e-3)
    for mp, p in zip(masters, trainable, strict=True):
        mp.grad = p.grad.float()
    opt.step()
    for mp in masters:
        mp.grad = None

    def nbytes(ts) -> float:
        return float(sum(t.numel() * t.element_size() for t in ts))

    states = (nbytes(model.parameters()) + nbytes(p.grad for p in trainable) + nbytes(masters)
              + nbytes(v for s in opt.state.values() for v in s.values() if torch.is_tensor(v) and v.dim() > 0))
    return {"activations": saved, "model_states": states}


def predict(case: GTCase) -> dict[str, float]:
    # two micro-batches a step: the loss phase holds every gradient and peaks, so its items hold the forward's saves
    # (with one, the HF Trainer's set_to_none can move the peak to the backward's end, docs/known-gaps.md 242)
    training = Training(method=case.method, precision="bf16", optimizer="adamw", seq_len=case.seq,
                        global_batch_seqs=2 * case.batch, lora_rank=case.lora_rank if case.method == "lora" else 0,
                        lora_targets=case.lora_targets, flash_attention=case.impl != "eager")
    options = MemoryOptions(framework="hf", attention_impl=case.impl, overheads=False)
    e = estimate_memory(case.model, training, SYSTEM,
                        Strategy(micro_batch=case.batch, recompute=case.recompute, torch_compile=False), options)
    it = e.items_bytes
    act = sum(it[k] for k in ("layer_activations", "embedding_and_rope", "final_norm_and_head_input", "logits"))
    # the states after the step, before the next zero_grad (the measurement's moment): every gradient, whichever
    # phase peaks (the HF Trainer's set_to_none leaves the loss phase none, docs/known-gaps.md 242)
    return {"activations": act, "model_states": e.after_step_bytes}


QV = ("q_proj", "v_proj")
ALL = ("all-linear",)
CASES = (
    GTCase("llama gqa sdpa none s64 b2", LLAMA, "sdpa", "none", 64, 2),
    GTCase("llama gqa eager none s64 b1", LLAMA, "eager", "none", 64, 1),
    GTCase("llama gqa eager none s128 b2", LLAMA, "eager", "none", 128, 2),
    GTCase("llama gqa eager selective s128 b1", LLAMA, "eager", "selective", 128, 1),
    GTCase("llama gqa sdpa selective s64 b2", LLAMA, "sdpa", "selective", 64, 2),
    GTCase("llama gqa sdpa full s128 b2", LLAMA, "sdpa", "full", 128, 2),
    GTCase("llama gqa eager full s64 b1", LLAMA, "eager", "full", 64, 1),
    GTCase("llama lora q,v sdpa none s64 b2", LLAMA, "sdpa", "none", 64, 2, "lora", QV),
    GTCase("llama lora all eager none s64 b1", LLAMA, "eager", "none", 64, 1, "lora", ALL),
    GTCase("llama lora all sdpa full s128 b1", LLAMA, "sdpa", "full", 128, 1, "lora", ALL),
    GTCase("llama lora q,v eager selective s64 b2", LLAMA, "eager", "selective", 64, 2, "lora", QV),
    GTCase("moe sdpa none s64 b2", MOE, "sdpa", "none", 64, 2),
    GTCase("moe eager none s64 b1", MOE, "eager", "none", 64, 1),
    GTCase("moe sdpa selective s64 b1", MOE, "sdpa", "selective", 64, 1),
    GTCase("moe sdpa full s64 b2", MOE, "sdpa", "full", 64, 2),
    GTCase("mla eager none s64 b2", MLA, "eager", "none", 64, 2),
    GTCase("mla eager none s128 b1", MLA, "eager", "none", 128, 1),
    GTCase("mla eager selective s64 b1", MLA, "eager", "selective", 64, 1),
    GTCase("mla sdpa full s128 b1", MLA, "sdpa", "full", 128, 1),
    GTCase("mla lora all eager none s64 b1", MLA, "eager", "none", 64, 1, "lora", ALL),
    GTCase("mla lora all sdpa full s64 b2", MLA, "sdpa", "full", 64, 2, "lora", ALL),
)


def run(cases=CASES) -> list[tuple[GTCase, str, float, float]]:
    rows = []
    for c in cases:
        got, pred = measure(c), predict(c)
        for what in ("activations", "model_states"):
            rows.append((c, what, pred[what], got[what]))
    return rows


def main() -> None:
    rows = run()
    print(f"{'case':42s} {'what':13s} {'predicted KiB':>14s} {'measured KiB':>13s} {'error':>8s}")
    worst = 0.0
    for c, what, pred, got in rows:
        err = (pred - got) / got
        worst = max(worst, abs(err))
        print(f"{c.name:42s} {what:13s} {pred / 1024:14.1f} {got / 1024:13.1f} {err:+8.2%}")
    print(f"worst error {worst:.2%} (tolerance {TOLERANCE:.0%})")


if __name__ == "__main__":
    main()
