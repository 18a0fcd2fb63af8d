"""Device memory of a job's NCCL communicators, from what NCCL allocates (docs/known-gaps.md 299 (a)).

Read at NVIDIA/nccl 5067397c (memory_constants.yaml `communicators` names each figure's line):

- A connection to one peer on one channel is a send side and a receive side, each allocated by its owner rank on
  its own device (transport/p2p.cc p2pSendSetup / p2pRecvSetup; the peer only maps it): the sender ncclSendMem,
  the receiver ncclRecvMem and the LL, LL128 and SIMPLE buffers, each side rounded up to CUDA_IPC_MIN. A rank's
  send and receive connections of one channel hold `channel_pair_bytes` (12 MiB at NCCL's defaults, P2P read or
  write alike).
- Collectives run rings (TP, CP, DP groups): every channel connects a rank to its ring neighbours, one send and one
  receive connection whatever the group's size (issue 986: "Ring uses a limited amount of memory as it only has 2
  connections regardless of the scale"); `ring_channels` from the scale-up fabric.
- Point-to-point (the pipeline's send / recv, the MoE all-to-all): each peer gets its own connections on
  p2pnChannelsPerPeer channels, connected at the first send to it (enqueue.cc), so an all-to-all over n ranks holds
  n - 1 peers' worth (issue 1685: 8 H100, 1.06 -> 4.34 GB at the first all_to_all_single).

Group placement follows comm.py (Megatron-Core's rank order tp -> cp -> dp -> pp; the EP group at the expert TP
stride). A ring spanning hosts runs NCCL's inter-node channels (about one a NIC, doubled; one NIC a GPU assumed), a network peer
is charged a channel like an NVLink one, and a CP group as a ring (Transformer Engine's ring attention exchanges by
send / recv, two peers' p2p channels). Not charged: NCCL's tree connections (connected at init before NCCL 2.22's runtime connect, for all-reduce
only after it), NVLS buffers (nvls.cc ncclNvlsBufferSetup), one-rank and framework-only groups (the world group,
Megatron's model-parallel and embedding groups), DeepEP's own buffers: docs/known-gaps.md 299 (b).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainsizer.estimate import comm
from trainsizer.estimate.inputs import System
from trainsizer.estimate.model_states import load_memory_constants


def _aligned(nbytes: float, align: float) -> float:
    return float(np.ceil(nbytes / align) * align)


def channel_pair_bytes(c: dict[str, Any]) -> float:
    """Bytes one rank holds for its send and its receive connection of one channel (P2P write: ncclSendMem on the
    send side; ncclRecvMem with the LL, LL128 and SIMPLE buffers on the receive side; each rounded up to
    CUDA_IPC_MIN). Under P2P read the SIMPLE buffer sits on the send side; at NCCL's default sizes both sum alike."""
    head, align = float(c["connection_header_bytes"]), float(c["connection_align_bytes"])
    buffers = float(c["ll_buffsize_bytes"] + c["ll128_buffsize_bytes"] + c["simple_buffsize_bytes"])
    return _aligned(head, align) + _aligned(head + buffers, align)


def _pow2_up(x: float) -> float:
    return float(2.0 ** np.ceil(np.log2(max(x, 1.0))))


def _fabric(system: System) -> bool:
    """A scale-up fabric (NVLink, NVSwitch, xGMI) faster than the host link: NCCL's NVLink path rules apply."""
    return system.intra_node_gb_s > system.pcie_gb_s


def _scaleup_gb_s(system: System, per_peer: bool) -> float:
    """The GPU's scale-up rate, one direction (per_peer: towards one peer, on a switchless mesh one link's share)."""
    rate = float(system.intra_node_gb_s)
    mesh = float(system.scaleup_mesh_links or 0)
    return rate / mesh if per_peer and mesh > 0 else rate


def ring_channels(system: System, c: dict[str, Any]) -> float:
    """Coll channels of a ring: NCCL's search finds about one channel per NVLink link, between the searched minimum
    and maximum, and doubles them (graph/search.cc ncclTopoDupChannels); a PCIe host the minimum, doubled."""
    lo, hi = float(c["ring_search_channels_min"]), float(c["ring_search_channels_max"])
    if not _fabric(system):
        return 2.0 * lo
    links = np.floor(_scaleup_gb_s(system, False) / float(c["nvlink_link_gb_s"]))
    return 2.0 * float(np.clip(links, lo, hi))


def p2p_channels_per_peer(system: System, c: dict[str, Any], same_domain: bool) -> float:
    """p2pnChannelsPerPeer towards one peer (graph/paths.cc ncclTopoGetNchannels, ncclTopoComputeP2pChannels): over
    NVLink 2 x its links, rounded up to a power of two and capped at the power of two above the coll channels; over
    PCIe the PCIe figure; across the network the network figure."""
    if not same_domain:
        return float(c["net_p2p_channels_per_peer"])
    if not _fabric(system):
        return float(c["pcie_p2p_channels_per_peer"])
    links = max(1.0, np.floor(_scaleup_gb_s(system, True) / float(c["nvlink_link_gb_s"])))
    return min(_pow2_up(2.0 * links), _pow2_up(ring_channels(system, c)))


def _multi_host_per_peer(per_peer: float, ranks: Any, system: System, c: dict[str, Any]) -> Any:
    """p2pnChannelsPerPeer of a communicator of `ranks` ranks spanning hosts (graph/paths.cc
    ncclTopoComputeP2pChannels, nNodes > 1): halved until a round of every peer's channels, divUp(ranks,
    NCCL_MAX_DEV_WORK_P2P_PER_BATCH) batches of them, fits in p2pnChannels (pow2Up of the coll channels)."""
    limit = _pow2_up(ring_channels(system, c))
    batches = np.ceil(np.asarray(ranks, float) / float(c["p2p_peers_per_batch"]))
    halvings = np.ceil(np.log2(np.maximum(per_peer * batches / limit, 1.0)))
    return np.maximum(per_peer / 2.0 ** halvings, 1.0)


def _p2p_bytes(peers_in: Any, peers_out: Any, system: System, c: dict[str, Any], ranks: Any, stride: Any) -> Any:
    """Bytes of point-to-point connections to `peers_in` peers inside the scale-up domain and `peers_out` outside,
    both directions (a send and a receive connection a channel and peer), in a communicator of `ranks` ranks at rank
    stride `stride`; one spanning hosts takes fewer channels a peer (`_multi_host_per_peer`)."""
    per_in = p2p_channels_per_peer(system, c, True)
    per_out = p2p_channels_per_peer(system, c, False)
    multi = comm.ranks_per_domain(ranks, stride, system.gpus_per_node) < np.asarray(ranks, float)
    per_in = np.where(multi, _multi_host_per_peer(per_in, ranks, system, c), per_in)
    per_out = np.where(multi, np.minimum(per_out, _multi_host_per_peer(per_out, ranks, system, c)), per_out)
    return (peers_in * per_in + peers_out * per_out) * channel_pair_bytes(c)


def _ring_bytes(n: Any, stride: Any, system: System, c: dict[str, Any]) -> Any:
    """Bytes of a ring over `n` ranks at rank stride `stride` (0 for one rank): inside one scale-up domain the
    fabric's channels; across domains NCCL's inter-node search, about one channel a NIC doubled, for the group's k
    ranks a domain (net_ring_channels_per_rank each), at most the fabric's."""
    k = comm.ranks_per_domain(n, stride, system.domain_gpus)
    host = ring_channels(system, c)
    channels = np.where(k >= n, host, np.minimum(host, float(c["net_ring_channels_per_rank"]) * k))
    return np.where(n > 1, channels * channel_pair_bytes(c), 0.0)


def communicator_bytes(system: System, c: dict[str, Any], t: Any, p: Any, d: Any, cp: Any, ep: Any, et: Any,
                       pipeline_comm: bool = True) -> Any:
    """Bytes a GPU holds for the job's communicators, per strategy (numpy arrays of the degrees): a ring a TP, CP
    and DP group of more than one rank; the pipeline's neighbours (one at p = 2, two beyond; none without a pipeline
    communicator: `pipeline_comm` False, device_map's one process); the EP group's n - 1 all-to-all peers at the
    expert TP stride. A peer inside the scale-up domain connects over it, one outside over the network."""
    t, p, d, cp, ep, et = (np.asarray(x, float) for x in (t, p, d, cp, ep, et))
    dom = system.domain_gpus
    rings = sum(_ring_bytes(n, stride, system, c) for n, stride in ((t, 1.0), (cp, t), (d, t * cp)))
    pp_peers = np.where(p > 2, 2.0, np.where(p > 1, 1.0, 0.0)) * float(pipeline_comm)
    pp_in = comm.ranks_per_domain(2.0, t * cp * d, dom) > 1
    pipe = _p2p_bytes(np.where(pp_in, pp_peers, 0.0), np.where(pp_in, 0.0, pp_peers), system, c, p, t * cp * d)
    ep_in = comm.ranks_per_domain(ep, et, dom) - 1.0
    a2a = _p2p_bytes(np.where(ep > 1, ep_in, 0.0), np.where(ep > 1, ep - 1.0 - ep_in, 0.0), system, c, ep, et)
    return rings + pipe + a2a


def fabric_key(system: System) -> tuple[float, float]:
    """What the communicators' bytes read of the hardware beyond the GPU count, GPUs per node and scale-up domain:
    the ring's channels and the channels a peer inside the domain gets (the search shares memory verdicts between
    options that agree on these, search/engine.py `_memory`)."""
    c = load_memory_constants()["communicators"]
    return ring_channels(system, c), p2p_channels_per_peer(system, c, True)
