"""Parallel attention / MLP residual (ModelArch.parallel_residual; GPT-NeoX gpt_j_residual, GPT-J, Pythia): under TP
the layer reduces the summed branch outputs once in forward, and each branch's input gradient in backward
(step_time._tp_collectives_per_pass)."""

from __future__ import annotations

import numpy as np
import pytest

from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time, step_time_arrays
from trainsizer.models.hf_config import arch_from_hf_config
from trainsizer.models.inline import arch_from_inline

from .test_perf_common import a100_cluster, gpt

SEQ = gpt(layers=24, hidden=4096, heads=32)
PAR = SEQ.with_(parallel_residual=True)
TRAINING = Training(precision="fp16", seq_len=2048, global_batch_seqs=256)


def _tp_s(model, recompute: str, sp: bool, tp: int = 4) -> float:
    st = Strategy(tp=tp, pp=1, dp=64 // tp, zero=1, micro_batch=2, recompute=recompute, sequence_parallel=sp)
    return estimate_time(model, TRAINING, a100_cluster(64), st, framework_style="megatron").breakdown_s["tp_comm"]


@pytest.mark.parametrize(("recompute", "sp", "ratio"), [
    ("full", False, 4.0 / 6.0),  # forward 1 (+1 again in the recompute) + backward 2, against 2 + 2 + 2
    ("none", False, 3.0 / 4.0),
    ("selective", True, 3.0 / 4.0),  # 1.5 + 1.5 under sequence parallelism
    ("full", True, 4.5 / 6.0),
])
def test_one_forward_reduce_of_the_summed_branches(recompute, sp, ratio):
    seq, par = _tp_s(SEQ, recompute, sp), _tp_s(PAR, recompute, sp)
    assert seq > 0.0
    # the LM head's two all-reduces do not change: compare the layers' share
    head = _head_tp(recompute, sp)
    assert 0.0 < head < 0.1 * seq
    assert (par - head) == pytest.approx(ratio * (seq - head), rel=1e-9)


def _head_tp(recompute: str, sp: bool) -> float:
    """TP seconds of the LM head alone: a model's TP time less its layers' (layers scale linearly)."""
    one = _tp_s(SEQ.with_(layers=1), recompute, sp)
    two = _tp_s(SEQ.with_(layers=2), recompute, sp)
    return one - (two - one)


def test_no_tensor_parallelism_no_change():
    st = Strategy(tp=1, pp=1, dp=64, zero=1, micro_batch=2, recompute="full")
    a = step_time_arrays(SEQ, TRAINING, a100_cluster(64), st, framework_style="deepspeed")
    b = step_time_arrays(PAR, TRAINING, a100_cluster(64), st, framework_style="deepspeed")
    assert float(np.asarray(a["step_s"])) == float(np.asarray(b["step_s"]))


def test_vectorised_layouts_agree_with_single_ones():
    tps = np.array([1.0, 2.0, 4.0, 8.0])
    st = Strategy(tp=tps, pp=np.ones(4), dp=64 / tps, zero=np.ones(4), micro_batch=np.full(4, 2.0),
                  recompute=np.full(4, 2), sequence_parallel=np.array([0.0, 1.0, 0.0, 1.0]))
    vec = step_time_arrays(PAR, TRAINING, a100_cluster(64), st, framework_style="megatron")["tp_comm"]
    for i, tp in enumerate(tps):
        one = Strategy(tp=int(tp), pp=1, dp=int(64 / tp), zero=1, micro_batch=2, recompute="full",
                       sequence_parallel=bool(i % 2))
        assert float(vec[i]) == pytest.approx(
            float(step_time_arrays(PAR, TRAINING, a100_cluster(64), one, framework_style="megatron")["tp_comm"]),
            rel=1e-12)


def test_gpt_neox_configs_default_to_parallel_and_inline_models_may_say_so():
    cfg = {"model_type": "gpt_neox", "hidden_size": 64, "intermediate_size": 256, "num_hidden_layers": 2,
           "num_attention_heads": 4, "vocab_size": 101}
    assert arch_from_hf_config(cfg).parallel_residual  # GPTNeoXConfig use_parallel_residual=True
    assert not arch_from_hf_config(dict(cfg, use_parallel_residual=False)).parallel_residual
    inline = {"layers": 2, "hidden": 64, "heads": 4, "vocab": 101, "ffn": 256}
    assert arch_from_inline(dict(inline, parallel_residual=True)).parallel_residual
    assert not arch_from_inline(inline).parallel_residual
