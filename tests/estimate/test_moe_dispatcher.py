"""MoE token dispatcher (Strategy.moe_dispatcher): Megatron-Core's alltoall dispatcher synchronises with the host
each MoE layer and pays a per-local-expert host cost; the flex one (DeepEP / HybridEP) does not. "auto" follows
Megatron-Bridge 25.11's recipes (HybridEP on multi-host NVLink domains, DeepEP when EP leaves the domain)."""

from __future__ import annotations

import dataclasses
import textwrap

import numpy as np
import pytest
import yaml

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError, TrainsizerError
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time, moe_alltoall
from trainsizer.scenario import resolve_job

from .test_perf_common import h100_cluster, llama8b, mixtral

TR = Training(seq_len=4096, global_batch_seqs=256)


def _nvl72(gpus: int = 64):
    # GB200 NVL72 trays: 4 GPUs per host, one NVLink domain over the racks' trays
    return dataclasses.replace(h100_cluster(gpus, intra_gb_s=900.0), gpus_per_node=4, scaleup_domain=min(gpus, 72))


def test_auto_follows_the_megatron_bridge_recipes():
    h100 = h100_cluster(256)
    assert bool(moe_alltoall("auto", h100, 8, 1))  # EP inside one HGX node: alltoall
    assert not bool(moe_alltoall("auto", h100, 64, 1))  # EP across nodes: DeepEP
    assert not bool(moe_alltoall("auto", _nvl72(), 8, 1))  # NVL72: HybridEP
    got = moe_alltoall("auto", h100, np.array([4, 8, 16]), np.array([1, 2, 1]))
    assert got.tolist() == [True, False, False]  # EP x TP beyond the 8-GPU domain
    assert bool(moe_alltoall("alltoall", _nvl72(), 8, 1)) and not bool(moe_alltoall("flex", h100, 8, 1))
    with pytest.raises(SpecError) as err:
        moe_alltoall("all2all", h100, 8, 1)
    assert "strategy.moe_dispatcher" in str(err.value)


def test_alltoall_costs_host_time_per_local_expert_and_flex_does_not():
    m, s = mixtral().with_(experts=64, experts_per_token=8, expert_ffn=1792), h100_cluster(64)
    st = Strategy(dp=64, ep=8, micro_batch=1, framework="megatron-core")
    a2a = estimate_time(m, TR, s, st.with_(moe_dispatcher="alltoall")).breakdown_s["compute"]
    flex = estimate_time(m, TR, s, st.with_(moe_dispatcher="flex")).breakdown_s["compute"]
    assert a2a > flex
    assert estimate_time(m, TR, s, st).breakdown_s["compute"] == a2a  # auto: EP 8 in one node -> alltoall
    # twice the local experts (EP 4 instead of 8) -> about twice the exposed host time
    a2a4 = estimate_time(m, TR, s, st.with_(ep=4, moe_dispatcher="alltoall")).breakdown_s["compute"]
    flex4 = estimate_time(m, TR, s, st.with_(ep=4, moe_dispatcher="flex")).breakdown_s["compute"]
    assert (a2a4 - flex4) == pytest.approx(2.0 * (a2a - flex), rel=0.05)
    # dense models and non-Megatron styles are not affected
    d = Strategy(tp=8, dp=8, framework="megatron-core")
    assert estimate_time(llama8b(), TR, s, d.with_(moe_dispatcher="alltoall")).step_s == estimate_time(
        llama8b(), TR, s, d.with_(moe_dispatcher="flex")).step_s
    fsdp = Strategy(dp=64, ep=8, zero=3, framework="torchtitan")
    assert estimate_time(m, TR, s, fsdp.with_(moe_dispatcher="alltoall")).step_s == estimate_time(
        m, TR, s, fsdp.with_(moe_dispatcher="flex")).step_s


def _job(dispatcher: str) -> dict:
    return yaml.safe_load(textwrap.dedent(f"""\
        model: qwen3-30b-a3b
        data: {{tokens: 1.0e9}}
        seq_len: 4096
        global_batch: {{sequences: 512}}
        hardware: {{accelerator: b200, count: 8, network: ib-ndr400}}
        strategy: {{ep: 8, micro_batch: 1, recompute: none, distributed_optimizer: true,
                    framework: megatron-core, moe_dispatcher: {dispatcher}}}
        """))


def test_job_file_names_the_dispatcher_and_a_bad_name_is_refused():
    cat = load_catalog()
    sc = resolve_job(_job("flex"), cat)
    assert sc.strategy.moe_dispatcher == "flex"
    assert sc.summary()["strategy"]["moe_dispatcher"] == "flex"
    with pytest.raises(TrainsizerError) as err:
        resolve_job(_job("deepep2"), cat)
    assert "moe_dispatcher" in str(err.value)
