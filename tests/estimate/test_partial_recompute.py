"""Partial full recompute (strategy.recompute_method / recompute_num_layers: Megatron-Core's recompute_method uniform |
block with recompute_num_layers, NeMo's activations_checkpoint_method / _num_layers): what each method keeps and
re-runs per model chunk, its limits as Megatron states them, and the rules that refuse the rest."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.errors import StrategyError
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.partial_recompute import chunk_shares
from trainsizer.estimate.step_time import estimate_time
from trainsizer.models import load_model
from trainsizer.spec import Job

LLAMA = load_model("llama-2-7b")  # 32 layers
TRAIN = Training(method="pretrain", precision="bf16", seq_len=4096, global_batch_seqs=64)
H100 = System(accelerator="h100-sxm-80gb", gpus=8, gpus_per_node=8, memory_gib=80.0,
              peak_tflops={"bf16": 989.0, "fp8": 1979.0}, hbm_gb_s=3350.0, intra_node_gb_s=450.0,
              inter_node_gb_s=50.0)
BASE = Strategy(tp=2, pp=2, dp=2, micro_batch=1, distributed_optimizer=True, framework="megatron-core")


def run(recompute: str, method: str | None = None, n: int | None = None, s: Strategy = BASE):
    st = s.with_(recompute=recompute, recompute_method=method, recompute_num_layers=n)
    return estimate_memory(LLAMA, TRAIN, H100, st), estimate_time(LLAMA, TRAIN, H100, st)


def test_block_and_uniform_shares_follow_transformer_block():
    block = chunk_shares("block", 5, 16)
    assert (block.rerun, block.checkpointed, block.kept, block.working) == (5 / 16, 5 / 16, 11 / 16, 0.0)
    uniform = chunk_shares("uniform", 5, 16)  # groups 0-4, 5-9, 10-14, 15: four checkpoints, every layer re-run
    assert (uniform.rerun, uniform.checkpointed, uniform.kept, uniform.working) == (1.0, 4 / 16, 0.0, 5.0)
    every = chunk_shares(None, None, 16)
    assert (every.rerun, every.checkpointed, every.kept, every.working) == (1.0, 1.0, 0.0, 1.0)


@settings(max_examples=25, deadline=None)
@given(pp=hs.sampled_from([1, 2, 4]), vpp=hs.sampled_from([1, 2]), mb=hs.sampled_from([1, 2]))
def test_block_none_and_all_are_no_and_full_recompute(pp, vpp, mb):
    """block 0 equals no recompute; block with every layer of a stage, or uniform 1, equals full recompute."""
    s = Strategy(tp=8 // (pp * 2) if pp < 4 else 1, pp=pp, vpp=vpp if pp > 1 else 1, dp=8 // ((8 // (pp * 2) if pp < 4
                 else 1) * pp), micro_batch=mb, distributed_optimizer=True, framework="megatron-core")
    stage = -(-LLAMA.layers // pp)
    none_m, none_t = run("none", s=s)
    full_m, full_t = run("full", s=s)
    for (m, t), (want_m, want_t) in (
        (run("full", "block", 0, s), (none_m, none_t)),
        (run("full", "block", stage, s), (full_m, full_t)),
        (run("full", "uniform", 1, s), (full_m, full_t)),
    ):
        assert m.per_gpu_bytes == pytest.approx(want_m.per_gpu_bytes)
        assert t.step_s == pytest.approx(want_t.step_s)


def test_more_block_layers_trade_memory_for_time():
    acts, steps = [], []
    for n in (0, 4, 8, 16):
        m, t = run("full", "block", n)
        acts.append(m.items_bytes["layer_activations"])
        steps.append(t.step_s)
    assert acts == sorted(acts, reverse=True) and len(set(acts)) == 4
    assert steps == sorted(steps) and len(set(steps)) == 4


def test_uniform_groups_keep_fewer_inputs_and_re_create_a_group_at_once():
    full_m, full_t = run("full")
    m, t = run("full", "uniform", 4)
    assert m.items_bytes["layer_activations"] == pytest.approx(full_m.items_bytes["layer_activations"] / 4)
    assert m.items_bytes["recompute_working_set"] == pytest.approx(4 * full_m.items_bytes["recompute_working_set"])
    assert t.step_s == pytest.approx(full_t.step_s)  # every layer's forward runs again either way


def test_hardware_flops_count_the_block_layers_only():
    from trainsizer.estimate.flops import hardware_flops_per_token

    none, full = (hardware_flops_per_token(LLAMA, 4096, rc) for rc in ("none", "full"))
    assert hardware_flops_per_token(LLAMA, 4096, "full", full_share=0.5) == pytest.approx((none + full) / 2)


def test_refused_outside_megatron_and_beyond_a_stage():
    fsdp = Strategy(dp=8, zero=3, recompute="full", recompute_method="block", recompute_num_layers=4, framework="fsdp")
    with pytest.raises(StrategyError, match="recompute_num_layers_framework"):
        estimate_time(LLAMA, TRAIN, H100, fsdp)
    with pytest.raises(StrategyError, match="recompute_num_layers_range"):
        estimate_time(LLAMA, TRAIN, H100, BASE.with_(recompute="full", recompute_method="block",
                                                     recompute_num_layers=17))
    # Megatron-LM's own style has --recompute-method too
    estimate_time(LLAMA, TRAIN, H100, BASE.with_(recompute="full", recompute_method="block", recompute_num_layers=16,
                                                 framework="megatron"))


JOB = {"model": "llama-2-7b", "data": {"tokens": 1e9}, "seq_len": 4096, "global_batch": {"sequences": 64},
       "hardware": {"accelerator": "h100-sxm-80gb", "count": 8}}


@pytest.mark.parametrize("strategy, words", [
    ({"recompute": "selective", "recompute_method": "block", "recompute_num_layers": 2}, "recompute: full"),
    ({"recompute": "full", "recompute_method": "block"}, "go together .*recompute_num_layers null"),
    ({"recompute": "full", "recompute_num_layers": 2}, "go together .*recompute_method null"),
    ({"recompute": "full", "recompute_method": "uniform", "recompute_num_layers": 0}, "1 or more"),
    ({"recompute": "full", "recompute_method": "random", "recompute_num_layers": 2}, "recompute_method"),
])
def test_job_file_refuses_incomplete_partial_recompute(strategy, words):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=words):
        Job.model_validate(JOB | {"strategy": strategy})


def test_report_names_the_partial_recompute_in_both_languages():
    from trainsizer.layout_text import layout_in

    s = {"tp": 1, "dp": 8, "recompute": "full", "recompute_method": "block", "recompute_num_layers": 21,
         "micro_batch": 1}
    assert "full recompute (block, 21 layers per chunk)" in layout_in(s, "en")
    assert "完全重计算（block，每个模型分块 21 层）" in layout_in(s, "zh")
    assert layout_in(s | {"recompute_method": None}, "en") == "DP8 mb1, full recompute"


def test_one_n_per_strategy_in_a_batch_is_each_n_on_its_own():
    """recompute_num_layers may be an array (the search's partial-recompute pass): every strategy of the batch gets
    exactly the memory and step time of the same strategy with its N alone."""
    import numpy as np

    from trainsizer.estimate import evaluate_batch

    ns = np.array([0.0, 3.0, 7.0, 16.0, 17.0])  # 17 > the stage's 16 layers: refused, as alone
    batch = BASE.with_(tp=np.full(ns.size, 2.0), recompute="full", recompute_method="block", recompute_num_layers=ns)
    out = evaluate_batch(LLAMA, TRAIN, H100, batch, threads=1)
    for k, n in enumerate(ns):
        alone = evaluate_batch(LLAMA, TRAIN, H100, BASE.with_(recompute="full", recompute_method="block",
                                                            recompute_num_layers=int(n)), threads=1)
        assert bool(out["valid"][k]) == bool(alone["valid"])
        if alone["valid"]:
            assert out["mem_bytes"][k] == pytest.approx(float(alone["mem_bytes"]))
            assert out["step_s"][k] == pytest.approx(float(alone["step_s"]))
    assert not out["valid"][-1] and out["valid"][:-1].all()
