"""LoRA adapters cost the activations their memory-bound A / B GEMMs, scaling and add stream (perf_constants.yaml
`lora:`): more adapted linears and wider ones cost more, the rank barely matters, full recompute runs their
forward twice, and a job without LoRA pays nothing."""

from __future__ import annotations

import pytest

from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.model_states import lora_adapted_widths
from trainsizer.estimate.step_time import estimate_time

from .test_perf_common import a100_cluster, llama8b, mixtral

ALL = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def _training(targets=("q_proj", "v_proj"), rank=8, method="lora") -> Training:
    return Training(method=method, seq_len=2048, global_batch_seqs=8, lora_rank=rank, lora_targets=targets)


def _step(training: Training, recompute: str = "full") -> float:
    st = Strategy(dp=1, micro_batch=2, recompute=recompute, framework="hf")
    return estimate_time(llama8b(), training, a100_cluster(1), st).step_s


def test_widths_sum_the_adapted_linears():
    m = llama8b()
    w_in, w_out, e_in, e_out, n = lora_adapted_widths(m, _training(ALL))
    assert (w_in, w_out, n) == (4096 * 6 + 14336, 4096 + 1024 * 2 + 4096 + 14336 * 2 + 4096, 7)
    assert e_in == e_out == 0
    assert lora_adapted_widths(m, _training(("q_proj", "v_proj")))[:2] == (8192, 4096 + 1024)
    assert lora_adapted_widths(m, Training(method="full", seq_len=2048, global_batch_seqs=8)) == (0, 0, 0, 0, 0)


def test_routed_expert_adapters_count_the_experts_a_token_passes():
    _, _, e_in, e_out, _ = lora_adapted_widths(mixtral(), _training(("gate_proj", "up_proj", "down_proj")))
    assert (e_in, e_out) == (2 * (4096 * 2 + 14336), 2 * (14336 * 2 + 4096))


def test_more_adapted_linears_cost_more_and_the_rank_barely_matters():
    few, many = _step(_training(("q_proj", "v_proj"))), _step(_training(ALL))
    assert many > few
    assert _step(_training(ALL, rank=64)) == pytest.approx(many, rel=0.02)


def test_full_recompute_runs_the_adapters_forward_again():
    def extra(rc: str) -> float:
        return _step(_training(ALL), rc) - _step(_training(("q_proj",)), rc)

    assert extra("full") > extra("none")
