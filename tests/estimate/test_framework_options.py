"""Framework options a job can state: async TP / TP overlap, FP8 FSDP all-gather, activation offloading,
optimizer in backward; and a power-capped part described through a catalog overlay."""

from __future__ import annotations

import textwrap

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import StrategyError
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.step_time import estimate_time
from trainsizer.scenario import resolve_job

from .test_perf_common import h100_cluster, llama8b

TR = Training(seq_len=8192, global_batch_seqs=64)


def test_async_tp_and_fp8_all_gather_are_job_options():
    m, s = llama8b(), h100_cluster(64)
    base = Strategy(tp=8, dp=8, zero=3, micro_batch=8, framework="torchtitan")
    plain = estimate_time(m, TR, s, base).breakdown_s
    overlapped = estimate_time(m, TR, s, base.with_(tp_comm_overlap=True)).breakdown_s
    assert overlapped["tp_comm"] < plain["tp_comm"]
    fp8 = Training(seq_len=8192, global_batch_seqs=64, precision="fp8", fp8_recipe="tensorwise")
    st = Strategy(dp=64, zero=3, micro_batch=1, framework="torchtitan")
    gathered = estimate_time(m, fp8, s, st.with_(fp8_param_allgather=True)).breakdown_s["dp_comm"]
    assert gathered < estimate_time(m, fp8, s, st).breakdown_s["dp_comm"]


def test_activation_offload_and_optimizer_in_backward_lower_gpu_memory():
    m, s = llama8b(), h100_cluster(8)
    st = Strategy(dp=8, zero=3, micro_batch=1, recompute="none", framework="torchtune")
    tr = Training(method="full", seq_len=8192, global_batch_seqs=8)
    base = estimate_memory(m, tr, s, st)
    off = estimate_memory(m, tr, s, st.with_(activation_offload=True))
    assert off.items_bytes["layer_activations"] < base.items_bytes["layer_activations"] / 8
    assert off.host_bytes_per_node > base.host_bytes_per_node
    fused = estimate_memory(m, tr, s, st.with_(optimizer_in_backward=True))
    assert fused.items_bytes["gradients"] < base.items_bytes["gradients"]
    with pytest.raises(StrategyError, match="optimizer_in_backward"):
        estimate_memory(m, Training(method="full", seq_len=8192, global_batch_seqs=16), s,
                        st.with_(optimizer_in_backward=True))


def test_power_capped_96gb_h100_through_a_catalog_overlay(tmp_path):
    """torchtitan's Grand Teton H100: 96 GB held at 500 W, said in the user's own catalog overlay."""
    path = tmp_path / "teton.yaml"
    path.write_text(textwrap.dedent("""
        date: 2026-12-01
        accelerators:
          h100-sxm-80gb: {memory_gib: 96, power_limit_w: 500}
    """), encoding="utf-8")
    job = {"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": 8192, "global_batch": {"sequences": 16},
           "hardware": {"accelerator": "h100-sxm-80gb", "count": 8},
           "strategy": {"fsdp": "full", "micro_batch": 2, "framework": "torchtitan"}}
    capped = resolve_job(job, load_catalog([path]))
    stock = resolve_job(job, load_catalog())
    assert capped.system.power_limit_w == 500 and capped.system.memory_gib == 96
    t = [estimate_time(sc.model, sc.training, sc.system, sc.strategy).step_s for sc in (capped, stock)]
    assert t[0] > t[1]
