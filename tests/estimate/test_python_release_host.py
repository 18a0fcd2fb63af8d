"""benchmarks/python_release_host.py (docs/known-gaps.md 330 (b)): its smoke run times each case under the running
interpreter, and its GraniteMoe block routes each position to its top-k experts as transformers' GraniteMoeMoE does."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the script times PyTorch ops (the [dev] install has none)")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import python_release_host as prh  # noqa: E402

F = torch.nn.functional


def test_tiny_run_gives_one_record_a_case_under_this_interpreter():
    recs = prh.run(tiny=True)
    assert [r["case"] for r in recs] == ["python_call", "mm", "linear_module", "moe_forward", "moe_backward"]
    for r in recs:
        assert r["us_per_call"] > 0.0 and r["cpu_us_per_call"] > 0.0 and r["python"] == sys.version.split()[0]


def test_block_is_the_top_k_mixture_of_swiglu_experts():
    torch.manual_seed(1)
    block = prh.GraniteMoeBlock(hidden=8, width=4, experts=5, topk=2).double()
    x = torch.randn(1, 6, 8, dtype=torch.float64)
    got = block(x)[0]
    logits = block.router.layer(x[0])
    vals, idx = logits.topk(2, dim=1)
    gates = torch.softmax(vals, dim=1)
    want = torch.zeros_like(x[0])
    for t in range(6):
        for j in range(2):
            e = int(idx[t, j])
            h = F.linear(x[0, t], block.input_linear.weight[e])
            a, b = h.chunk(2)
            want[t] += gates[t, j] * F.linear(F.silu(a) * b, block.output_linear.weight[e])
    assert torch.allclose(got, want, atol=1e-10)
