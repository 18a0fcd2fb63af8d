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


def test_frozen_base_weights_add_no_gradient_buckets():
    """Megatron-Core DDP and torch DDP bucket only the parameters that require gradients: a LoRA job's exposed
    data-parallel time is its adapters' (a few buckets), not one bucket latency per 40M frozen base parameters.
    MLPerf Training v5.0 GB200 Llama 2 70B LoRA on 72 GPUs was predicted 44% slow while the frozen base counted."""
    from trainsizer.estimate.step_time import step_time_arrays

    from .test_perf_common import h100_cluster

    training = _training(ALL, rank=16)
    full = Training(method="full", seq_len=2048, global_batch_seqs=8)
    st = Strategy(dp=64, micro_batch=1, recompute="full", framework="megatron-core", distributed_optimizer=True)
    lora = float(step_time_arrays(llama8b(), training, h100_cluster(64), st)["dp_comm"])
    base = float(step_time_arrays(llama8b(), full, h100_cluster(64), st)["dp_comm"])
    # the adapters are ~0.3% of the weights: their reduction costs a few bucket latencies, far below the full job's
    assert lora < 0.05 * base


def test_a_frozen_base_stored_in_fp8_is_not_cast_again():
    """LoRA under FP8 with FP8 primary weights (NeMo fp8_params / Megatron-Core fp8_param_gather): the frozen base
    is created in FP8 at load and no optimizer step changes it, so no step re-casts it; with 16-bit base weights
    TE casts them once per step. Full fine-tuning keeps its cast either way (its weights change every step)."""
    from .test_perf_common import h100_cluster

    def step(method: str, fp8_params: bool) -> float:
        lora = {"lora_rank": 16, "lora_targets": ALL} if method == "lora" else {}
        training = Training(method=method, seq_len=2048, global_batch_seqs=8, precision="fp8", **lora)
        st = Strategy(dp=8, micro_batch=1, recompute="none", framework="megatron-core", distributed_optimizer=True,
                      fp8_param_allgather=fp8_params)
        return estimate_time(llama8b(), training, h100_cluster(8), st).step_s

    # the cast reads 16 bits and writes FP8 and its transpose (4 B) per base weight: 7e9 x 4 B at 3.35 TB/s, ~8 ms
    assert step("lora", False) - step("lora", True) > 0.006
    # the full job's FP8 primary weights change only its all-gather, not the per-step cast of its weights
    assert step("full", True) == pytest.approx(step("full", False), rel=0.05)
