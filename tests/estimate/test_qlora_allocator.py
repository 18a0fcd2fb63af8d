"""benchmarks/qlora_allocator.py: two candidates for ms-swift's QLoRA residual replayed through the caching
allocator's large pool (docs/known-gaps.md 198 (d)). A diagnostic: it moves no figure; these tests hold its
replays and the finding that neither candidate reaches the residual."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import qlora_allocator as qa  # noqa: E402

# the QLoRA residual over the LoRA twins' offset, GiB, in the first table (most samples at the cutoff; known-gaps
# 128 (c)): Qwen-1 7B, 14B
RESIDUAL_GIB = {"qwen-7b": 3.7, "qwen-14b": 5.6}


def test_the_load_keeps_the_packed_weights_and_frees_the_copies():
    h, f, layers, vocab = qa.QWEN1["qwen-7b"]
    t = qa.load(h, f, layers, vocab)
    packed = sum(k * n for k, n in qa.linears(h, f).values()) * layers / 2
    kept = sum(t.pool.blocks[b][2] for b in t.live.values())
    # the packed NF4 data, its 8-bit absmax and the two 16-bit embeddings, nothing of the fp16 copies
    assert packed + 2 * 2 * vocab * h <= kept < packed * (1 + 1 / 32 + 0.01) + 2 * 2 * vocab * h
    assert "w16" not in t.live and "absmax" not in t.live


def test_neither_candidate_reaches_the_residual():
    for name, residual in RESIDUAL_GIB.items():
        h, f, layers, vocab = qa.QWEN1[name]
        load = qa.load(h, f, layers, vocab).over_gib()
        lora, qlora = (qa.forward(h, f, layers, 2048, q).over_gib() for q in (False, True))
        assert 0 <= load < 0.3 and 0 <= lora <= qlora < 0.7, name
        assert load + qlora - lora < residual / 5, name


def test_the_forward_keeps_only_the_layer_inputs():
    h, f, layers, _ = qa.QWEN1["qwen-1.8b"]
    for qlora in (False, True):
        t = qa.forward(h, f, layers, 2048, qlora)
        assert set(t.live) == {f"x{i}" for i in range(layers + 1)}
