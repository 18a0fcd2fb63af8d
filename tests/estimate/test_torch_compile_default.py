"""strategy.torch_compile left unstated is resolved in one place (framework.torch_compile_of) to the stack's default
(PerfStyle.compiles_by_default), per candidate where "auto" picks the stack: the scalar and batch estimates agree, and
an unstated field times exactly as the stack's default stated."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.estimate.batch import evaluate_batch
from trainsizer.estimate.framework import AUTO_CHOICES, compiles_by_default, torch_compile_of
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import estimate_time, perf_style

from .test_perf_common import h100_cluster, llama8b


def test_a_stated_value_wins_over_the_stacks_default():
    assert torch_compile_of(Strategy(torch_compile=False), True) is False
    assert torch_compile_of(Strategy(torch_compile=True), False) is True
    assert torch_compile_of(Strategy(), False) is False


def test_auto_resolves_the_default_per_candidate():
    # DP only -> hf (eager), TP -> megatron-core (fused), ZeRO-3 with TP -> torchtitan (eager)
    st = Strategy(tp=np.array([1, 2, 2]), dp=np.array([8, 4, 4]), zero=np.array([0, 0, 3]))
    assert compiles_by_default("auto", st).tolist() == [False, True, False]
    assert [perf_style(c).compiles_by_default for c in AUTO_CHOICES] == [True, False, False]


LAYOUTS = [(1, 8, 0), (1, 8, 3), (2, 4, 0), (2, 4, 3), (4, 2, 1)]  # (tp, dp, zero): hf, hf, mcore, titan, mcore


@settings(max_examples=6, deadline=None)
@given(rows=hs.lists(hs.sampled_from(LAYOUTS), min_size=2, max_size=5),
       method=hs.sampled_from(["pretrain", "lora"]), framework=hs.sampled_from(["auto", "hf", "torchtitan"]))
def test_scalar_and_batch_agree_with_the_default_resolved_per_stack(rows, method, framework):
    model, system = llama8b(), h100_cluster(8)
    training = Training(method=method, lora_rank=16 if method == "lora" else 0, seq_len=2048, global_batch_seqs=64)
    tp, dp, zero = (np.array(c) for c in zip(*rows, strict=True))
    batch = evaluate_batch(model, training, system, Strategy(tp=tp, dp=dp, zero=zero, micro_batch=1,
                                                              recompute="full", framework=framework))
    for i, (a, d, z) in enumerate(rows):
        one = Strategy(tp=a, dp=d, zero=z, micro_batch=1, recompute="full", framework=framework)
        if not batch["valid"][i]:
            continue
        fused = bool(np.asarray(compiles_by_default(framework, one, method == "pretrain")))
        stated = one.with_(torch_compile=fused)  # the unstated default is the stack's, stated
        for s in (one, stated):
            assert batch["step_s"][i] == pytest.approx(estimate_time(model, training, system, s).step_s, rel=1e-9)
            assert batch["mem_bytes"][i] == pytest.approx(
                estimate_memory(model, training, system, s, check=False).per_gpu_bytes, rel=1e-9)
