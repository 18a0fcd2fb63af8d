"""The host time of transformers' eager MoE loop by CPython release, on this machine's CPU (docs/known-gaps.md 330).

perf_heldout66's granite rows ran one job on one stack but two interpreters: fms-acceleration's
refs/requirements_moe.txt (a `pip freeze`) at 5b35eae lists async-timeout (aiohttp's dependency below CPython 3.11
only) and networkx 3.4.2 (3.10 and later): CPython 3.10; at c959c6b and 9122a76 it lists setuptools, which pip's
freeze shows from CPython 3.12 on and torch 2.4.1's cp312 wheel requires (its cp311 wheel does not): CPython 3.12.
This script times, under whatever interpreter runs it, the host side of the ops those rows issue, with one PyTorch
build, so that two interpreters with the same torch can be compared:

- python_call: a pure-Python control (a method call, attribute reads, an add): the interpreter alone.
- mm: torch.mm of two 16 x 16 fp32 tensors back to back (one C++ op a Python call: the launch-bound op's method,
  perf_constants.yaml host_sync launch_bound_op_s, on the CPU).
- linear_module: an nn.Linear(16, 16) called as a module (Module.__call__ and forward in Python, one addmm).
- moe_forward / moe_backward: GraniteMoeMoE as transformers 4.45.2-4.52.4 write it (GraniteMoeTopKGating,
  GraniteMoeParallelExperts' split loop for input_linear and output_linear, the index_add combine; the same code at
  the three pins, docs/known-gaps.md 289 (a)) at tiny widths, 40 experts top-8, 64 positions (every expert hit): one
  forward with autograd recording, then its backward (autograd's C++ engine: no Python frames, the control for the
  interpreter's share).

Each case: the median over repeats of the wall and the process CPU time a call, single-threaded. The CUDA launch a
GPU host adds to each op is the same under any interpreter and is not here; the CPU kernels of these tiny ops are.

    /path/to/python3.10-venv-with-torch/bin/python benchmarks/python_release_host.py
    python benchmarks/python_release_host.py --tiny      # a smoke run (the test's)
"""

from __future__ import annotations

import json
import platform
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

HIDDEN, WIDTH, EXPERTS, TOPK, POSITIONS = 64, 32, 40, 8, 64


class ParallelExperts(nn.Module):
    """transformers' GraniteMoeParallelExperts (4.45.2-4.52.4): one weight [E, out, in], a Python loop over the
    experts' splits of the sorted tokens, F.linear each, cat."""

    def __init__(self, experts: int, d_in: int, d_out: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(experts, d_out, d_in) * 0.02)
        self.num_experts = experts

    def forward(self, inputs: torch.Tensor, expert_size: list[int]) -> torch.Tensor:
        input_list = inputs.split(expert_size, dim=0)
        output_list = [F.linear(input_list[i], self.weight[i]) for i in range(self.num_experts)]
        return torch.cat(output_list, dim=0)


class TopKGating(nn.Module):
    """transformers' GraniteMoeTopKGating: router GEMM, top-k, softmax, the one host read of the expert sizes."""

    def __init__(self, d_in: int, experts: int, topk: int) -> None:
        super().__init__()
        self.num_experts, self.top_k = experts, topk
        self.layer = nn.Linear(d_in, experts, bias=False)

    def forward(self, hidden_states: torch.Tensor):
        logits = self.layer(hidden_states).float()
        top_k_logits, top_k_indices = logits.topk(self.top_k, dim=1)
        top_k_gates = torch.softmax(top_k_logits, dim=1).type_as(hidden_states)
        zeros = torch.zeros([top_k_gates.size(0), self.num_experts], dtype=top_k_gates.dtype,
                            device=top_k_gates.device)
        gates = zeros.scatter(1, top_k_indices, 1)
        expert_size = gates.long().sum(0).tolist()
        top_k_experts = top_k_indices.flatten()
        _, index_sorted_experts = top_k_experts.sort(0)
        batch_index = index_sorted_experts.div(self.top_k, rounding_mode="trunc")
        batch_gates = top_k_gates.flatten()[index_sorted_experts]
        return index_sorted_experts, batch_index, batch_gates, expert_size, logits


class GraniteMoeBlock(nn.Module):
    """transformers' GraniteMoeMoE.forward: gate, gather, input_linear's loop, SwiGLU, output_linear's loop, the
    routing weights, the zeros.index_add combine."""

    def __init__(self, hidden: int = HIDDEN, width: int = WIDTH, experts: int = EXPERTS, topk: int = TOPK) -> None:
        super().__init__()
        self.input_size, self.hidden_size = hidden, width
        self.input_linear = ParallelExperts(experts, hidden, 2 * width)
        self.output_linear = ParallelExperts(experts, width, hidden)
        self.router = TopKGating(hidden, experts, topk)

    def forward(self, layer_input: torch.Tensor) -> torch.Tensor:
        bsz, length, emb_size = layer_input.size()
        layer_input = layer_input.reshape(-1, emb_size)
        _, batch_index, batch_gates, expert_size, _ = self.router(layer_input)
        expert_inputs = layer_input[batch_index]
        hidden_states = self.input_linear(expert_inputs, expert_size)
        chunked = hidden_states.chunk(2, dim=-1)
        hidden_states = F.silu(chunked[0]) * chunked[1]
        expert_outputs = self.output_linear(hidden_states, expert_size)
        expert_outputs = expert_outputs * batch_gates[:, None]
        zeros = torch.zeros((bsz * length, self.input_size), dtype=expert_outputs.dtype, device=expert_outputs.device)
        layer_output = zeros.index_add(0, batch_index, expert_outputs)
        return layer_output.view(bsz, length, self.input_size)


class _Plain:
    def __init__(self) -> None:
        self.a, self.b = 1, 2

    def step(self, x: int) -> int:
        return x + self.a * self.b


def timed(fn, calls: int, repeats: int) -> tuple[float, float]:
    """(median wall us, median process-CPU us) a call of fn over `repeats` runs of `calls` calls, after one warm run."""
    for _ in range(calls):
        fn()
    wall, cpu = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(calls):
            fn()
        wall.append((time.perf_counter() - w0) / calls * 1e6)
        cpu.append((time.process_time() - c0) / calls * 1e6)
    return statistics.median(wall), statistics.median(cpu)


def cases(tiny: bool):
    """(name, callable, calls a run) for each case; the backward case rebuilds its graph outside the timed call."""
    torch.manual_seed(0)
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    lin, x16 = nn.Linear(16, 16), torch.randn(16, 16)
    plain = _Plain()
    block = GraniteMoeBlock()
    h = torch.randn(1, POSITIONS, HIDDEN, requires_grad=True)
    scale = 0.02 if tiny else 1.0
    n = lambda k: max(2, int(k * scale))  # noqa: E731

    def backward_once():
        out = block(h).sum()
        t0, c0 = time.perf_counter(), time.process_time()
        out.backward()
        return time.perf_counter() - t0, time.process_time() - c0

    return [("python_call", lambda: plain.step(3), n(200_000)), ("mm", lambda: torch.mm(a, b), n(50_000)),
            ("linear_module", lambda: lin(x16), n(50_000)), ("moe_forward", lambda: block(h), n(200)),
            ("moe_backward", backward_once, n(100))]


def run(tiny: bool = False) -> list[dict]:
    """One record a case under the running interpreter."""
    torch.set_num_threads(1)
    repeats = 3 if tiny else 7
    out = []
    for name, fn, calls in cases(tiny):
        if name == "moe_backward":
            for _ in range(calls):
                fn()
            wall, cpu = [], []
            for _ in range(repeats):
                got = [fn() for _ in range(calls)]
                wall.append(sum(g[0] for g in got) / calls * 1e6)
                cpu.append(sum(g[1] for g in got) / calls * 1e6)
            w, c = statistics.median(wall), statistics.median(cpu)
        else:
            w, c = timed(fn, calls, repeats)
        out.append({"case": name, "python": platform.python_version(), "torch": torch.__version__,
                    "us_per_call": round(w, 3), "cpu_us_per_call": round(c, 3)})
    return out


def main(argv: list[str]) -> None:
    for rec in run(tiny="--tiny" in argv):
        print(json.dumps(rec))


if __name__ == "__main__":
    main(sys.argv[1:])
