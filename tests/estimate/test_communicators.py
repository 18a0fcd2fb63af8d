"""The NCCL communicators' device memory (estimate/communicators.py; docs/known-gaps.md 299 (a))."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainsizer.estimate import communicators as cm
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.model_states import load_memory_constants
from trainsizer.models import load_model

C = load_memory_constants()["communicators"]
MIB = 2**20


def _node(intra: float, gpus: int = 8, per_node: int = 8, mesh: int = 0, pcie: float = 64.0) -> System:
    return System(accelerator="h100-sxm-80gb", gpus=gpus, gpus_per_node=per_node, memory_gib=80.0,
                  peak_tflops={"bf16": 989.0}, hbm_gb_s=3350.0, intra_node_gb_s=intra, scaleup_domain=per_node,
                  scaleup_mesh_links=mesh, pcie_gb_s=pcie)


H100, A100, H800 = _node(450.0), _node(300.0, pcie=32.0), _node(200.0)
PCIE = _node(32.0, pcie=32.0)
MI300X = _node(448.0, mesh=7)


def test_a_channel_holds_twelve_mib_written_or_read():
    # P2P write: 2 MiB send side (ncclSendMem) + 10 MiB receive side (LL + LL128 + SIMPLE), issue 1685's allocations
    assert cm.channel_pair_bytes(C) == 12 * MIB
    # P2P read (A100): the SIMPLE buffer on the send side, 6 + 6 MiB
    align, head = C["connection_align_bytes"], C["connection_header_bytes"]
    send = np.ceil((head + C["simple_buffsize_bytes"]) / align) * align
    recv = np.ceil((head + C["ll_buffsize_bytes"] + C["ll128_buffsize_bytes"]) / align) * align
    assert send + recv == cm.channel_pair_bytes(C)


def test_the_logged_channel_counts():
    assert cm.ring_channels(A100, C) == 24  # nccl-tests issue 100: "Channel 23/24" on HGX A100
    assert cm.ring_channels(H800, C) == 16  # nccl issue 892: 16 coll channels, 16 p2p channels per peer
    assert cm.ring_channels(H100, C) == 32
    assert cm.ring_channels(PCIE, C) == 4  # nccl issue 1706: 4 coll channels, 2 p2p channels per peer
    assert cm.p2p_channels_per_peer(H100, C, True) == 32  # nccl issue 1685: 32 channels per pair of H100s
    assert cm.p2p_channels_per_peer(H800, C, True) == 16
    assert cm.p2p_channels_per_peer(A100, C, True) == 32
    assert cm.p2p_channels_per_peer(PCIE, C, True) == 2
    assert cm.p2p_channels_per_peer(H100, C, False) == 2  # nccl issue 1189: 2 p2p channels per network peer
    assert cm.p2p_channels_per_peer(MI300X, C, True) == 4  # one xGMI link a peer (64 GB/s)


def test_the_h100_all_to_all_stays_under_its_measured_rise():
    # nccl issue 1685: the first all_to_all_single over 8 H100 took the device from 1.06 to 4.34 GB
    a2a = float(cm.communicator_bytes(H100, C, 1, 1, 1, 1, 8, 1))
    assert a2a == 7 * 32 * 12 * MIB
    assert 0.8 * 3.28e9 < a2a < 3.28e9


def test_rings_pipeline_and_all_to_all():
    ring = 32 * 12 * MIB
    assert float(cm.communicator_bytes(H100, C, 1, 1, 1, 1, 1, 1)) == 0.0
    assert float(cm.communicator_bytes(H100, C, 8, 1, 1, 1, 1, 1)) == ring
    assert float(cm.communicator_bytes(H100, C, 2, 1, 2, 2, 1, 1)) == 3 * ring
    # a pipeline neighbour inside the node: 32 channels a peer; across nodes (TP 8 fills the node): 2
    assert float(cm.communicator_bytes(H100, C, 1, 2, 1, 1, 1, 1)) == 32 * 12 * MIB
    multi = _node(450.0, gpus=32)
    assert float(cm.communicator_bytes(multi, C, 8, 4, 1, 1, 1, 1)) == ring + 2 * 2 * 12 * MIB
    assert float(cm.communicator_bytes(H100, C, 1, 2, 1, 1, 1, 1, pipeline_comm=False)) == 0.0
    # rings across hosts: CP 16 at TP 8's stride, one rank a host, 2 channels; DP 16 over two hosts, 8 a host, 16
    per_rank = C["net_ring_channels_per_rank"]
    assert float(cm.communicator_bytes(_node(450.0, gpus=128), C, 8, 1, 1, 16, 1, 1)) == ring + per_rank * 12 * MIB
    assert float(cm.communicator_bytes(_node(450.0, gpus=16), C, 1, 1, 16, 1, 1, 1)) == 8 * per_rank * 12 * MIB
    # EP 16 over two nodes: 7 peers over NVLink, 8 over the network; spanning hosts, NCCL halves the channels a peer
    # until a round of every peer's, divUp(16, 8) batches, fits in 32 channels: 16 a peer
    assert float(cm.communicator_bytes(_node(450.0, gpus=16), C, 1, 1, 16, 1, 16, 1)) == \
        8 * per_rank * 12 * MIB + (7 * 16 + 8 * 2) * 12 * MIB
    # EP 64 over an NVL72 domain of 4-GPU trays: 63 peers over NVLink at 4 channels each (32 x 8 rounds / 32, halved)
    nvl72 = System(accelerator="gb200", gpus=64, gpus_per_node=4, memory_gib=186.0, peak_tflops={"bf16": 2500.0},
                   hbm_gb_s=8000.0, intra_node_gb_s=900.0, scaleup_domain=72, pcie_gb_s=200.0)
    a2a = float(cm.communicator_bytes(nvl72, C, 1, 1, 64, 1, 64, 1)) - float(cm.communicator_bytes(nvl72, C, 1, 1, 64,
                                                                                                       1, 1, 1))
    assert a2a == 63 * 4 * 12 * MIB


@given(st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2, 4]), st.sampled_from([1, 2, 8, 16]),
       st.sampled_from([1, 2]), st.sampled_from([1, 2, 8]), st.sampled_from([32.0, 200.0, 450.0]))
def test_whole_channels_and_none_without_peers(t, p, d, cp, ep, intra):
    s = _node(intra, gpus=t * p * d * cp, pcie=32.0)
    got = float(cm.communicator_bytes(s, C, t, p, d, cp, ep, 1))
    assert got >= 0.0
    assert got % cm.channel_pair_bytes(C) == 0.0
    assert (got == 0.0) == (max(t, p, d, cp, ep) == 1)


def test_the_estimate_charges_them_outside_the_allocator():
    model = load_model("llama-3.1-8b")
    training = Training(precision="bf16", seq_len=4096, global_batch_seqs=64)
    est = estimate_memory(model, training, H100, Strategy(tp=2, dp=4, zero=1, micro_batch=1), check=False)
    assert est.items_bytes["nccl_buffers"] == pytest.approx(float(cm.communicator_bytes(H100, C, 2, 1, 4, 1, 1, 1)))
    assert est.items_bytes["nccl_buffers"] == pytest.approx(2 * 32 * 12 * MIB)
