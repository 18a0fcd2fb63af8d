"""torchtitan memory under pipelining and tensor parallelism (docs/known-gaps.md 348): torch.distributed.pipelining's
per-micro-batch receive buffers (memory._pp_recv_buffers) and what per-op SAC keeps of a row-parallel linear under
TP with sequence parallelism (memory._titan_tp_rowwise_bytes), eager and compiled."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.memory import GIB, estimate_memory

from .test_perf_common import h100_cluster, llama8b

ROOT = Path(__file__).resolve().parents[2]


def _est(framework="torchtitan", local=32, seq=4096, tp=1, pp=2, compile_=True, recompute="selective"):
    st = Strategy(dp=8 // (tp * pp), tp=tp, pp=pp, zero=3, micro_batch=1 if pp > 1 else local, recompute=recompute,
                  sequence_parallel=tp > 1, framework=framework, torch_compile=compile_)
    training = Training(method="pretrain", seq_len=seq, global_batch_seqs=local * st.dp)
    return estimate_memory(llama8b(), training, h100_cluster(8), st, check=False)


def test_each_micro_batch_of_the_schedule_adds_one_boundary_buffer():
    # PP 2: a rank holds one buffer a micro-batch (inputs on stage 1, output gradients on stage 0), 16-bit, h wide
    small, large = _est(local=32), _est(local=64)
    per = 4096 * llama8b().hidden * 2
    grown = large.items_bytes["pp_recv_buffers"] - small.items_bytes["pp_recv_buffers"]
    assert grown == pytest.approx(32 * per, rel=1e-6)


def test_the_buffers_are_torch_pipelinings_only():
    assert _est(framework="megatron-core").items_bytes.get("pp_recv_buffers", 0.0) == 0.0
    assert _est(pp=1, local=4).items_bytes.get("pp_recv_buffers", 0.0) == 0.0


def test_tp_keeps_the_row_parallel_outputs_eager_more_than_compiled():
    # per layer and token a TP rank keeps 3.0 h B more eager (w2's whole-sequence mm output, both reduce-scatter
    # outputs) and 1.0 h B compiled (wo's reduce-scatter output) than the sequence-sharded count
    h, layers, tokens = llama8b().hidden, llama8b().layers, 4 * 4096
    eager = _est(tp=2, pp=1, local=4, compile_=False).items_bytes["layer_activations"]
    compiled = _est(tp=2, pp=1, local=4, compile_=True).items_bytes["layer_activations"]
    eager_1 = _est(tp=2, pp=1, local=4, compile_=False, recompute="full").items_bytes["layer_activations"]
    assert eager > eager_1
    # the compiled block also drops w2's output (memory._compiled_sac_unread, 1 h over TP 2): 3 + 1 - 1 = 3 h
    assert (eager - compiled) / (tokens * h * layers) == pytest.approx(3.0, abs=0.01)


def test_the_torch_count_is_what_the_estimate_charges():
    pytest.importorskip("torch")
    out = subprocess.run([sys.executable, "titan_tp_sac_saves.py"], cwd=ROOT / "benchmarks", capture_output=True,
                         text=True, timeout=600, check=True).stdout
    totals = {line.split()[0]: float(line.split(":")[1].split()[0]) for line in out.splitlines()
              if " TP 2: " in line}
    # without TP the block keeps 14.03 h eager and 12.03 h compiled (titan_sac_saves.py); over TP 2 half of that
    # sequence-sharded, plus 3.0 h eager and 1.0 h compiled
    assert totals["eager"] == pytest.approx(14.03 / 2 + 3.0, abs=0.02)
    assert totals["compile"] == pytest.approx(12.03 / 2 + 1.0, abs=0.02)


def test_the_buffers_are_in_gib_on_the_3d_rows_growth():
    # perf_heldout79's 3D rows: 16K positions, TP 2 x PP 2, local batch 64 -> 512: 448 micro-batches of 64 MiB
    a = _est(tp=2, pp=2, local=64, seq=16384).items_bytes["pp_recv_buffers"]
    b = _est(tp=2, pp=2, local=512, seq=16384).items_bytes["pp_recv_buffers"]
    assert (b - a) / GIB == pytest.approx(448 * 16384 / 2 * llama8b().hidden * 2 / GIB, rel=1e-6)


def test_a_compiled_loss_under_loss_parallel_saves_the_fp32_log_softmax():
    # TP 2, compiled loss: 4 B a local logit element saved (as eager), not the non-TP compiled loss's 2 B
    tp = _est(tp=2, pp=1, local=4, compile_=True)
    gathered = estimate_memory(llama8b(), Training(method="pretrain", seq_len=4096, global_batch_seqs=16),
                               h100_cluster(8), Strategy(dp=4, tp=2, zero=3, micro_batch=4, recompute="selective",
                                                         sequence_parallel=True, framework="torchtitan",
                                                         torch_compile=True, loss_parallel=False), check=False)
    elements = 4 * 4096 * llama8b().vocab / 2
    assert tp.items_bytes["logits"] == pytest.approx(4.0 * elements, rel=1e-6)
    # loss_parallel off: the head's output gathered, the compiled loss's 16-bit logits whole on each rank
    assert gathered.items_bytes["logits"] == pytest.approx(2.0 * elements * 2, rel=1e-6)
