"""Context parallelism's all-to-alls take NCCL's all-to-all rates (step_time.nccl_alltoall_rates; docs/known-gaps.md
109): Transformer Engine's a2a (flash_attn_a2a_communicate) and Megatron-Core's Mamba CP (_AllToAll) both call
torch.distributed.all_to_all_single, the collective the EP alltoall dispatchers run. The ring kinds (TE's p2p, the
all-gather) keep the ring rates."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from trainsizer.estimate import comm
from trainsizer.estimate.calibration import load_constants, rates
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.step_time import estimate_time, nccl_alltoall_rates
from trainsizer.models.arch import ModelArch

from .test_perf_common import h100_cluster

TR = Training(seq_len=16384, global_batch_seqs=16)
# 16 K / V heads, so CP 16 at TP 1 gives every rank whole heads (TE's a2a asserts it)
MODEL = ModelArch(name="m", family="llama", layers=8, hidden=4096, heads=32, kv_heads=16, ffn=14336, vocab=32000,
                  max_position=16384)
# a stack of Mamba-2 and MLP layers: only the mixers' all-to-alls (Megatron-Core MambaContextParallel)
MAMBA = ModelArch(name="h", family="custom", layers=8, hidden=1024, heads=16, kv_heads=4, ffn=4096, vocab=32000,
                  mlp="relu2", layer_pattern="M-" * 4, ssm_heads=32, ssm_head_dim=64, ssm_state=128, ssm_groups=8)


def _cp_s(model: ModelArch, system, cp: int, kind: str | None = "a2a") -> float:
    st = Strategy(dp=system.gpus // cp, cp=cp, micro_batch=1, framework="megatron-core", cp_comm_type=kind)
    return estimate_time(model, TR, system, st, memory_note=False).breakdown_s["cp_comm"]


def _at_share(share: float):
    return dataclasses.replace(h100_cluster(16), inter_node_alltoall_share=share)


@pytest.mark.parametrize(("model", "kind"), [(MODEL, "a2a"), (MAMBA, None)], ids=["te_a2a", "mamba"])
def test_across_nodes_the_cp_alltoall_runs_at_the_networks_alltoall_share(model, kind):
    """CP 16 over two nodes: the network term dominates each all-to-all, so the CP time is A + B / share; halving the
    share twice adds B, then 2 B -- the NIC rate the all-to-all takes is the ring payload times the share. (The
    Mamba stack has no attention: its mixers run their all-to-alls whatever cp_comm_type says.)"""
    t1, t2, t4 = (_cp_s(model, _at_share(s), 16, kind) for s in (1.0, 0.5, 0.25))
    assert t2 > t1 > 0.0
    assert t4 - t2 == pytest.approx(2.0 * (t2 - t1), rel=1e-9)


def test_the_ring_kinds_keep_the_ring_rates():
    """TE's p2p ring and the K / V all-gather are not NCCL's all-to-all: the network's all-to-all share leaves them."""
    for kind in ("p2p", "all_gather"):
        assert _cp_s(MODEL, _at_share(0.5), 16, kind) == _cp_s(MODEL, _at_share(1.0), 16, kind), kind


def test_inside_one_nvswitch_node_the_te_alltoall_runs_at_the_nccl_nvlink_rate():
    """CP 8 on one H100 node: NVSwitch (nvls) against the same node without the NVSwitch measurement differ by the
    five query-wide and four K-wide all-to-alls a layer and micro-batch, each at NCCL's all-to-all NVLink rate
    (comm.nccl_alltoall_busbw_fraction) against the ring's; reorders and latency are the same on both."""
    switched, plain = h100_cluster(8), h100_cluster(8, nvls=False)
    k = load_constants()
    r_sw, r_pl = nccl_alltoall_rates(rates(switched, "bf16", k), switched, k), rates(plain, "bf16", k)
    assert r_sw.intra_busbw < r_pl.intra_busbw  # 0.72 of the link, not the ring's 0.80
    tok = TR.seq_len / 8

    def a2a(elems: float, r, system) -> float:
        return float(comm.all_to_all_time(elems * 2.0, 8, 8, r, system))

    per_layer = sum(n * (a2a(tok * w, r_sw, switched) - a2a(tok * w, r_pl, plain))
                    for n, w in ((5, MODEL.q_dim), (4, MODEL.kv_dim)))
    micro_batches = TR.global_batch_seqs  # DP 1, micro-batch 1
    diff = _cp_s(MODEL, switched, 8) - _cp_s(MODEL, plain, 8)
    assert diff == pytest.approx(per_layer * MODEL.layers * micro_batches, rel=1e-6)
    assert np.isfinite(diff) and diff > 0.0
