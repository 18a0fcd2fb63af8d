"""When torch FSDP1 frees a frozen unit's gathered parameters: a diagnostic on the installed torch, on CPU (gloo, two
processes), for a model shaped as torchtune 0.1's lora_finetune_distributed wraps Llama 2 (known-gaps 229 (e), 235).

torchtune at 20747cd8 wraps each LoRA adapter matrix as its own FSDP unit (utils.lora_fsdp_wrap_policy), then every
decoder layer (its frozen base weights: a flat parameter that does not require grad), and leaves the frozen
embedding, final norm and output projection in the root (FULL_SHARD, use_orig_params False). torch FSDP1 re-shards a
frozen unit in the backward from a multi-grad hook on the unit's inputs that require grad
(_runtime_utils.py _register_post_backward_reshard_only_hook, since PR 101982, torch 2.1; the same hook at 2.2 with an
already-registered guard, PR 110948), so a frozen layer is freed once its input's gradient is computed; a unit whose
inputs require no grad (the root: token ids; the first layer: the frozen embedding's output) stays gathered to the
post-backward final callback (_catch_all_reshard).

Printed, for each iteration: which frozen units hold their gathered flat parameter after the forward, as each layer's
backward starts, and after the backward; and the most layers gathered at once. If the backward held every layer
gathered (the reading 229 (e) asked about: rank 0 at the whole unsharded model), the count would reach the layer
count. It stays at one or two: the hook runs. torch 2.2.2 (torchtune's README at 20747cd8: 'tested with ... 2.2.2')
is not installable here; its hook was read (stored source), the behaviour checked on the installed torch.

Run: python benchmarks/fsdp1_frozen_units.py   (CPU only; about ten seconds)
"""

from __future__ import annotations

import os
import socket
import sys
import warnings

HIDDEN, LAYERS, VOCAB, RANK = 64, 6, 128, 4


def _model():
    """Llama-2-shaped toy in torchtune 0.1's module layout: LoRA on q and v, frozen base, frozen embedding / head."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class LoRALinear(nn.Module):  # torchtune/modules/peft/lora.py LoRALinear.forward at 20747cd8
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.randn(HIDDEN, HIDDEN) / HIDDEN)
            self.lora_a = nn.Linear(HIDDEN, RANK, bias=False)
            self.lora_b = nn.Linear(RANK, HIDDEN, bias=False)
            self.dropout = nn.Dropout(0.05)

        def forward(self, x):
            return F.linear(x, self.weight) + 2.0 * self.lora_b(self.lora_a(self.dropout(x)))

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q, self.v = LoRALinear(), LoRALinear()
            self.k = nn.Linear(HIDDEN, HIDDEN, bias=False)
            self.w1, self.w2 = nn.Linear(HIDDEN, 4 * HIDDEN, bias=False), nn.Linear(4 * HIDDEN, HIDDEN, bias=False)

        def forward(self, x):
            h = x + torch.softmax(self.q(x) @ self.k(x).transpose(-1, -2), -1) @ self.v(x)
            return h + self.w2(F.silu(self.w1(h)))

    class Decoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok_embeddings = nn.Embedding(VOCAB, HIDDEN)
            self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
            self.output = nn.Linear(HIDDEN, VOCAB, bias=False)

        def forward(self, tokens):
            h = self.tok_embeddings(tokens)
            for layer in self.layers:
                h = layer(h)
            return self.output(h).float()

    model = Decoder()
    for name, p in model.named_parameters():
        p.requires_grad = "lora_" in name
    return model, Layer


def _gathered(units) -> list[int]:
    """1 where a frozen unit's padded unsharded flat parameter holds storage (FSDP1 frees it by resizing to 0)."""
    out = []
    for unit in units:
        full = getattr(unit._handle.flat_param, "_full_param_padded", None)
        out.append(int(full is not None and full.untyped_storage().size() > 0))
    return out


def _worker(rank: int, port: int, iters: int) -> None:
    import torch
    import torch.distributed as dist
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp import ShardingStrategy

    warnings.simplefilter("ignore")  # FSDP1's deprecation notice and the CPU / gloo notes: not what is shown
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    torch.manual_seed(0)
    model, layer_cls = _model()

    def policy(module, recurse, **_):  # torchtune utils.lora_fsdp_wrap_policy at 20747cd8
        if recurse:
            return True
        w = getattr(module, "weight", None)
        return bool(isinstance(w, torch.Tensor) and w.requires_grad) or isinstance(module, layer_cls)

    model = FSDP(model, auto_wrap_policy=policy, sharding_strategy=ShardingStrategy.FULL_SHARD,
                 device_id=torch.device("cpu"))
    units = [m for m in model.modules() if isinstance(m, FSDP) and m._handle is not None
             and not m._handle.flat_param.requires_grad]  # the root first, then the layers in order
    log: list[tuple[str, list[int]]] = []
    for i, layer in enumerate(m for m in model.modules() if isinstance(m, layer_cls)):
        layer.register_full_backward_pre_hook(lambda *_, i=i: log.append((f"layer {i} backward", _gathered(units))))
    tokens = torch.randint(0, VOCAB, (2, 16))
    for it in range(iters):
        log.clear()
        out = model(tokens)
        log.append(("after forward", _gathered(units)))
        out.pow(2).mean().backward()
        log.append(("after backward", _gathered(units)))
        if rank == 0:
            _report(it, log)
    dist.barrier()
    dist.destroy_process_group()
    # torch 2.13's gloo leaves a joinable thread that aborts the worker at interpreter teardown now and then
    # ("terminate called without an active exception", SIGABRT, more often on a loaded machine): skip the teardown
    sys.stdout.flush()
    os._exit(0)


def _report(it: int, log: list[tuple[str, list[int]]]) -> None:
    print(f"iteration {it}: frozen units gathered (root, layer 0 .. {LAYERS - 1}; 1 = gathered)")
    for what, flags in log:
        print(f"  {what:22s} root {flags[0]}  layers {''.join(map(str, flags[1:]))}")
    most = max(sum(flags[1:]) for _, flags in log)
    print(f"  most layers gathered at once: {most} of {LAYERS}")


def main() -> None:
    import torch
    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    print(f"torch {torch.__version__}, FSDP1 FULL_SHARD over 2 CPU ranks (gloo), {LAYERS} frozen layers with LoRA "
          "adapter units (torchtune 0.1's wrapping):")
    mp.spawn(_worker, args=(port, 2), nprocs=2, join=True)


if __name__ == "__main__":
    main()
