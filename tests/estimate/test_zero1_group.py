"""ZeRO-1 / 2 over a group below DP (strategy.shard_group with zero 1 or 2): InternLM's hybrid ZeRO (zero1 below DP,
hybrid_zero_optim.py at c18bec9) and Megatron-Core's partial distributed optimizer shard the optimizer over the group,
step on the group's share and gather the updated parameters inside it; the gradients are all-reduced over all of DP
(zero1_grad_allreduce) or reduce-scattered in the group and all-reduced across the groups (step_time._zero_groups,
_zero_group_collectives; known-gaps 228)."""

from __future__ import annotations

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import estimate_time
from trainsizer.scenario import resolve_job

JOB = {"model": "llama-2-7b", "data": {"tokens": 1e9}, "seq_len": 2048, "global_batch": {"sequences": 512},
       "precision": "bf16", "hardware": {"accelerator": "a100-sxm-80gb", "count": 64, "network": "ib-hdr200"}}
STRATEGY = {"tp": 1, "pp": 1, "micro_batch": 2, "recompute": "full", "framework": "megatron", "zero": 1}


def _run(count=64, **strategy):
    job = {**JOB, "hardware": {**JOB["hardware"], "count": count}}
    sc = resolve_job({**job, "strategy": {**STRATEGY, **strategy}}, load_catalog())
    return (estimate_time(sc.model, sc.training, sc.system, sc.strategy, memory_note=False),
            estimate_memory(sc.model, sc.training, sc.system, sc.strategy))


def test_a_group_as_large_as_dp_is_zero1_over_dp():
    whole, _ = _run()
    same, _ = _run(shard_group=64)
    assert same.step_s == pytest.approx(whole.step_s, rel=1e-12)
    assert same.breakdown_s == pytest.approx(whole.breakdown_s, rel=1e-12)


@pytest.mark.parametrize("allreduce", [True, False])
def test_the_group_steps_on_its_share_and_gathers_inside_the_node(allreduce):
    """Over a node's 8 GPUs each GPU steps on, and holds, the optimizer states of 1/8 of the parameters, as ZeRO-1 on
    one node of 8 does; the parameters are gathered over NVLink, not across the hosts."""
    whole_t, whole_m = _run(zero1_grad_allreduce=allreduce)
    node_t, node_m = _run(shard_group=8, zero1_grad_allreduce=allreduce)
    one_t, one_m = _run(zero1_grad_allreduce=allreduce, count=8)
    assert node_t.breakdown_s["optimizer"] == pytest.approx(one_t.breakdown_s["optimizer"], rel=1e-9)
    assert node_t.breakdown_s["optimizer"] > whole_t.breakdown_s["optimizer"]
    assert node_m.items_bytes["optimizer_states"] == pytest.approx(one_m.items_bytes["optimizer_states"], rel=1e-9)
    assert node_m.items_bytes["optimizer_states"] == pytest.approx(8.0 * whole_m.items_bytes["optimizer_states"],
                                                                   rel=1e-6)
    assert node_t.breakdown_s["dp_comm"] < whole_t.breakdown_s["dp_comm"]


def test_fsdp_hybrid_shard_steps_on_the_group_share():
    """Under ZeRO-3 with a shard group (FSDP HYBRID_SHARD: the flat parameter and its gradient sharded over the
    intra-node group, replicated across it) each GPU steps on 1/8 of the parameters, as FULL_SHARD on one node of 8
    does, not on 1/64 (known-gaps 228 (d)); the states it holds are the same 1/8."""
    fsdp = {"framework": "fsdp", "zero": 3, "fsdp": "full"}
    whole_t, _ = _run(**fsdp)
    hybrid_t, hybrid_m = _run(**{**fsdp, "fsdp": "hybrid"}, shard_group=8)
    one_t, one_m = _run(**fsdp, count=8)
    assert hybrid_t.breakdown_s["optimizer"] == pytest.approx(one_t.breakdown_s["optimizer"], rel=1e-9)
    # eight times the bytes a GPU updates (the step's fixed launches aside)
    assert 7.0 * whole_t.breakdown_s["optimizer"] < hybrid_t.breakdown_s["optimizer"] <= 8.0 * whole_t.breakdown_s[
        "optimizer"]
    assert hybrid_m.items_bytes["optimizer_states"] == pytest.approx(one_m.items_bytes["optimizer_states"], rel=1e-9)
