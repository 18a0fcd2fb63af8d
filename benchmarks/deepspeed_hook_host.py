"""Host microseconds DeepSpeed ZeRO-3's module and gradient hooks add to a forward and backward, per module call, on
this machine's CPU (docs/known-gaps.md 262 (c)). A transformers-shaped decoder (each layer: the layer, its attention
with q / k / v / o linears and a parameterless rotary module, its MLP with gate / up / down linears and an act_fn
module, two RMS norms with a weight; the embedding, final norm and LM head around them) at widths small enough that
every op is host-bound, timed forward + backward in plain PyTorch and under deepspeed.initialize at ZeRO stage 3 (world
size 1 over gloo, the CPU accelerator: no CUDA streams, events or NCCL, so what is measured is the hooks' Python and
their CPU-side torch calls), the persistence threshold 0 so every weight goes through the fetch / release path. The
difference over the model's module calls is the figure; run under two DeepSpeed releases (PYTHONPATH to each) it
compares their hooks on one CPU. DeepSpeed is not a project dependency: without it the script times the plain model
and says so.

    PYTHONPATH=/path/to/deepspeed-0.16.6 DS_ACCELERATOR=cpu python benchmarks/deepspeed_hook_host.py
    python benchmarks/deepspeed_hook_host.py --slices   (reduce_scatter_coalesced's per-rank work: zero3_hooks
    rank_slice_s)
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, h: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


class Rotary(nn.Module):  # parameterless, as transformers <= 4.47's per-attention rotary module
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


class Attention(nn.Module):
    def __init__(self, h: int) -> None:
        super().__init__()
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(h, h, bias=False) for _ in range(4))
        self.rotary_emb = Rotary()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.rotary_emb(self.q_proj(x)), self.rotary_emb(self.k_proj(x)), self.v_proj(x)
        a = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1) @ v
        return self.o_proj(a)


class MLP(nn.Module):
    def __init__(self, h: int, f: int) -> None:
        super().__init__()
        self.gate_proj, self.up_proj = nn.Linear(h, f, bias=False), nn.Linear(h, f, bias=False)
        self.down_proj, self.act_fn = nn.Linear(f, h, bias=False), nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, h: int, f: int) -> None:
        super().__init__()
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(h), RMSNorm(h)
        self.self_attn, self.mlp = Attention(h), MLP(h, f)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class Decoder(nn.Module):
    def __init__(self, layers: int, h: int, f: int, vocab: int) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, h)
        self.layers = nn.ModuleList(Layer(h, f) for _ in range(layers))
        self.norm, self.lm_head = RMSNorm(h), nn.Linear(h, vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x)).float().logsumexp(-1).mean()


def module_calls(model: nn.Module, ids: torch.Tensor) -> int:
    """Module forward calls of one forward (each then has DeepSpeed's four hooks)."""
    n = [0]
    hooks = [m.register_forward_pre_hook(lambda *_: n.__setitem__(0, n[0] + 1)) for m in model.modules()]
    model(ids)
    for h in hooks:
        h.remove()
    return n[0]


def time_steps(fwd_bwd, iters: int, repeats: int) -> float:
    """Median CPU seconds of the process for one forward + backward over `repeats` runs of `iters` (after warm-up
    runs): CPU time, not wall time, so other jobs on a shared machine's cores do not count (their cache pressure still
    does: compare releases in alternating runs)."""
    for _ in range(3):
        fwd_bwd()
    runs = []
    for _ in range(repeats):
        t0 = time.process_time()
        for _ in range(iters):
            fwd_bwd()
        runs.append((time.process_time() - t0) / iters)
    return statistics.median(runs)


def rank_slice_us(world: int = 32, tensors: int = 10, repeats: int = 7) -> tuple[float, float]:
    """(us a slice, us a loop pass) of reduce_scatter_coalesced's per-rank work (deepspeedai/DeepSpeed v0.16.6
    runtime/comm/coalesced_collectives.py): each flattened gradient sliced once a rank, then the interleave loop's
    append, numel and padding check a rank and tensor; the least of `repeats` runs in process CPU time
    (perf_constants.yaml zero3_hooks rank_slice_s is their sum)."""
    flats = [torch.zeros(world * 32) for _ in range(tensors)]

    def slices() -> list[list[torch.Tensor]]:
        return [[f[r * 32:r * 32 + 32] for r in range(world)] for f in flats]

    parts, pad = slices(), tuple(32 for _ in flats)

    def interleave() -> list[torch.Tensor]:
        out = []
        for r in range(world):
            for i in range(tensors):
                chunk = parts[i][r]
                out.append(chunk)
                if pad[i] - chunk.numel() > 0:
                    out.append(torch.empty(pad[i] - chunk.numel()))
        return out

    def least(fn, n: int = 200) -> float:
        runs = []
        for _ in range(repeats):
            t0 = time.process_time()
            for _ in range(n):
                fn()
            runs.append((time.process_time() - t0) / (n * world * tensors))
        return min(runs) * 1e6

    return least(slices), least(interleave)


def plain_step(model: nn.Module, ids: torch.Tensor):
    def run() -> None:
        model(ids).backward()
        model.zero_grad(set_to_none=True)
    return run


def deepspeed_step(model: nn.Module, ids: torch.Tensor):
    """forward + backward through DeepSpeed's ZeRO-3 engine (no optimizer step), or None without DeepSpeed."""
    try:
        import deepspeed
    except ImportError:
        return None
    for key, val in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29517"), ("RANK", "0"), ("LOCAL_RANK", "0"),
                     ("WORLD_SIZE", "1"), ("LOCAL_SIZE", "1")):
        os.environ.setdefault(key, val)
    import importlib

    ds_torch_comm = importlib.import_module("deepspeed.comm.torch")  # `deepspeed.comm.torch` the attribute is PyTorch
    if hasattr(ds_torch_comm, "build_shm_op"):  # the CPU accelerator's shared-memory op needs a C++ build; one rank
        ds_torch_comm.build_shm_op = lambda: None  # never uses it
    deepspeed.init_distributed(dist_backend="gloo")
    config = {"train_micro_batch_size_per_gpu": ids.shape[0], "zero_allow_untested_optimizer": True,
              "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0}}
    engine, *_ = deepspeed.initialize(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.0),
                                      config=config)

    def run() -> None:
        engine.backward(engine(ids))
        engine.optimizer.zero_grad()
    return run, deepspeed.__version__


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tiny", action="store_true", help="a 1-layer model, 2 iterations: a smoke run")
    ap.add_argument("--slices", action="store_true", help="time reduce_scatter_coalesced's per-rank work only")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.slices or args.tiny:
        sl, loop = rank_slice_us(repeats=1 if args.tiny else 7)
        print(f"reduce_scatter_coalesced a rank and parameter: slice {sl:.2f} us, interleave pass {loop:.2f} us")
        if args.slices:
            return
    layers, iters, repeats = (1, 2, 1) if args.tiny else (args.layers, args.iters, args.repeats)
    torch.manual_seed(0)
    h, f, vocab = 32, 64, 128
    ids = torch.randint(0, vocab, (1, 16))
    model = Decoder(layers, h, f, vocab)
    calls = module_calls(model, ids)
    params = sum(1 for _ in model.parameters())
    plain = time_steps(plain_step(model, ids), iters, repeats)
    print(f"model: {layers} layers, {calls} module calls a forward, {params} parameters (torch {torch.__version__})")
    print(f"plain PyTorch forward + backward: {plain * 1e6:9.1f} us")
    got = deepspeed_step(model, ids)
    if got is None:
        print("deepspeed: not installed (PYTHONPATH to a release), nothing more to time")
        return
    run, version = got
    ds = time_steps(run, iters, repeats)
    print(f"DeepSpeed {version} ZeRO-3 forward + backward: {ds * 1e6:9.1f} us")
    print(f"added a module call (forward + backward): {(ds - plain) / calls * 1e6:7.1f} us; "
          f"a parameter: {(ds - plain) / params * 1e6:7.1f} us")


if __name__ == "__main__":
    main()
