"""The multi-token-prediction modules' time on the last pipeline stage (step_time._stage_micro_batch `mtp`,
compute.mtp_projection): each module runs eh_proj and its norms, one transformer layer and the LM head + loss once
more, where memory.py already holds it (Megatron-Core multi_token_prediction.py)."""

from __future__ import annotations

import numpy as np
import pytest

from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import step_time_arrays

from .test_perf_common import h100_cluster, llama8b

TRAIN = Training(seq_len=4096, global_batch_seqs=64)


def _out(model, **strategy) -> dict[str, float]:
    st = Strategy(**({"tp": 2, "pp": 1, "dp": 4, "framework": "megatron-core", "distributed_optimizer": True}
                     | strategy))
    o = step_time_arrays(model, TRAIN, h100_cluster(8), st)
    return {k: float(np.asarray(v).reshape(-1)[0]) for k, v in o.items()}


def test_one_module_adds_a_layer_a_head_pass_and_its_projection():
    """One stage holds everything: the module adds what one more decoder layer adds, one LM-head + loss pass
    (its forward seen in forward_compute; forward + backward about three forwards) and eh_proj 2h -> h (a few %
    of a 128K-vocabulary head)."""
    model = llama8b()
    base, mtp, deeper = _out(model), _out(model.with_(mtp_layers=1)), _out(model.with_(layers=model.layers + 1))
    layer = deeper["compute"] - base["compute"]
    head_fwd = (mtp["forward_compute"] - base["forward_compute"]) - (deeper["forward_compute"] - base["forward_compute"])
    rest = mtp["compute"] - base["compute"] - layer
    assert layer > 0 and head_fwd > 0
    assert 3.0 * head_fwd < rest < 3.5 * head_fwd


def test_the_module_paces_a_last_stage_only_where_it_is_the_slowest():
    """PP 4, 32 layers: the even split leaves 8 on the last rank, whose LM head already makes it the slowest, so the
    module adds to the step; with 2 layers stated there (10 elsewhere) the last rank holds 2 + the module + two head
    passes (Llama 3 8B's head is over two layers of GEMM), still below 10 layers, and the step does not move."""
    model = llama8b()
    even0, even1 = _out(model, pp=4, dp=1), _out(model.with_(mtp_layers=1), pp=4, dp=1)
    assert even1["compute"] > even0["compute"]
    kw = {"pp": 4, "dp": 1, "pp_last_stage_layers": 2}
    assert _out(model.with_(mtp_layers=1), **kw)["compute"] == pytest.approx(_out(model, **kw)["compute"], rel=1e-12)


def test_dualpipe_takes_the_mean_of_the_stages_its_end_rank_holds():
    """DualPipe puts stages 0 and p - 1 on one rank and sends half the micro-batches from each end (DeepSeek-V3
    report s3.2.1): that rank's micro-batch is the mean of its two stages, so the last stage's module counts half."""
    model = llama8b().with_(mtp_layers=1)
    kw = {"pp": 4, "dp": 1, "framework": "deepseek-dualpipe"}
    one_f1b = _out(model, pp=4, dp=1)["compute"] - _out(llama8b(), pp=4, dp=1)["compute"]
    dual = _out(model, **kw)["compute"] - _out(llama8b(), **kw)["compute"]
    assert dual == pytest.approx(0.5 * one_f1b, rel=0.25)
