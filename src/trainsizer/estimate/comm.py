"""Collective and point-to-point communication times (alpha-beta model on the real topology, vectorised).

- A process group of `n` ranks has `k` ranks inside one scale-up domain (NVLink/NVSwitch island, or the PCIe
  node when there is no NVLink) and spans n/k domains. Group placement follows Megatron-Core's rank order
  tp -> cp -> ep/dp -> pp (innermost first).
- Ring collectives (NCCL): all-reduce t = 2(n-1)/n * S / busbw + 2(n-1) alpha; reduce-scatter / all-gather
  t = (n-1)/n * S / busbw + (n-1) alpha (Thakur, Rabenseifner & Gropp 2005; nccl-tests PERFORMANCE.md).
  NCCL's tree all-reduce replaces the latency term by 2 log2(n) alpha (NCCL 2.4 double binary trees); the
  faster of the two is used.
- Multi-domain rings run one channel per NIC, so busbw = min(intra-domain busbw, k x per-GPU NIC rate);
  measured: 2x DGX A100 (8x HDR) 192 GB/s, 8x NDR400 ~370-385 GB/s (network.yaml).
- NVLS (NVLink SHARP) all-reduce inside one domain: busbw x nvls gain (nccl#1455: 365 -> 480 GB/s on 8 H100). All-gather
  and reduce-scatter get none: NVLS moves S one way and S/N the other where a ring moves (N-1)/N S each way, so NCCL
  keeps rings for them (nccl#1083, #1506: all-gather NVLS 300 vs ring 350 GB/s on 8 H100; #1670).
- All-to-all: each rank sends (n-1)/n of its buffer; the off-domain share goes through its NIC. Forwarded MoE
  dispatch across domains (DeepEP internode normal kernels, HybridEP): a token crosses the network once per remote
  domain, then NVLink carries every copy inside the receiving domain (DeepEP README "forwarding data from NVLink
  domain to RDMA domain").
- Point-to-point: S / link + alpha.
- Oversubscribed fabric (System.zone_gpus, oversubscription o; a pod under full bisection, o:1 above it: Llama 3's
  24K-GPU RoCE cluster, 3,072-GPU pods at 1:7, arXiv:2407.21783 s3.3.1): a group with m members per zone and
  n > m crosses zones. A ring crosses each zone's boundary once per direction, so its rate through that cut is
  the ring's busbw, and every group placed alike crosses the same uplinks: Z/m groups share Z x NIC / o, so
  busbw <= m x NIC / o (the inter-domain rule one level up). An all-to-all sends (n - m)/n of each rank's bytes
  out of its zone, every rank at once, through NIC / o per rank. A pipeline hop with rank stride s crosses a
  zone once in Z/s hops, s flows sharing Z x NIC / o (p2p_zone_factor). The ECMP hash collisions that Meta's
  RoCE paper (Gangidi et al., SIGCOMM 2024) tunes away are not modelled.
- Switchless full mesh (AMD xGMI on the 8-GPU UBB: 7 links per GPU, one to each peer, no switch): a group of k
  ranks of one domain drives only the k - 1 links between them, so its ring / all-to-all bandwidth is the
  8-GPU busbw x (k - 1) / links, and a point-to-point copy gets one link. Measured (RCCL all-reduce, 8x MI300X):
  8 GPUs 313-317 GB/s, 2 GPUs 47.7 GB/s (networks.yaml allreduce-8x-mi300x; Azure ND MI300X v5); the rule gives
  44.8 for 2 GPUs from the 8-GPU figure.
- NVLink bridges smaller than the host (PCIe cards: 8 H200 NVL in 4-way bridges, RTX A6000 pairs; System.bridge_gpus):
  a group held in one bridge rings at the bridge's rate, a 4-way bridge being a full mesh (the rule above on its 3
  peer links); a group that spans bridges crosses the host's PCIe, its slowest hop (bridge_rates).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from trainsizer.estimate.calibration import Rates


def ranks_per_domain(size, stride, domain: int):
    """Members of a group (size `size`, rank stride `stride`) that share one scale-up domain."""
    size = np.asarray(size, float)
    stride = np.asarray(stride, float)
    return np.clip(np.floor(domain / np.maximum(stride, 1.0)), 1.0, np.maximum(size, 1.0))


def mesh_share(k, system) -> np.ndarray:
    """Share of a GPU's scale-up bandwidth that a group with k ranks in one domain can use: (k - 1) / links on a
    switchless full mesh (system.scaleup_mesh_links; one link per peer), 1 on a switch."""
    links = float(getattr(system, "scaleup_mesh_links", 0) or 0) if system is not None else 0.0
    return _peer_share(k, links)


def _peer_share(k, links: float) -> np.ndarray:
    k = np.asarray(k, float)
    if links <= 0:
        return np.ones_like(k)
    return np.clip((k - 1.0) / links, 1.0 / links, 1.0)


def bridge_rates(rates: Rates, size, stride, system, p2p: bool = False) -> Rates:
    """`rates` for a group of `size` ranks at rank stride `stride` on a host whose NVLink bridges join fewer GPUs than
    it holds (System.bridge_gpus: 8 PCIe H200 NVL in 4-way bridges, RTX A6000 pairs): a group inside one bridge --
    its span size x stride no larger than the bridge and dividing it, as Megatron-Core's groups tile consecutive
    ranks in the order tp-cp-ep-dp-pp (parallel_state.RankGenerator) -- rings at the bridge's busbw, the share of a
    full-mesh bridge's links its peers own (_peer_share; a point-to-point copy one peer's: `p2p`); a group that spans
    bridges crosses the host's PCIe, its slowest hop (rates.intra_busbw). `rates` unchanged where there is no such
    bridge."""
    bridge = float(getattr(system, "bridge_gpus", 0) or 0)
    if bridge <= 1 or not rates.bridge_busbw:
        return rates
    span = np.asarray(size, float) * np.maximum(np.asarray(stride, float), 1.0)
    inside = (span <= bridge) & (np.mod(bridge, span) == 0)
    peers = _peer_share(2.0 if p2p else size, float(getattr(system, "bridge_mesh_links", 0) or 0))
    return dataclasses.replace(rates, intra_busbw=np.where(inside, rates.bridge_busbw * peers, rates.intra_busbw))


def zone_members(size, stride, system) -> np.ndarray:
    """Members of a group (rank stride `stride`) inside one zone of an oversubscribed fabric; `size` (never
    crossing) where the fabric is non-blocking."""
    size = np.asarray(size, float)
    zone = int(getattr(system, "zone_gpus", 0) or 0) if system is not None else 0
    if zone <= 0 or float(getattr(system, "oversubscription", 1.0)) <= 1.0:
        return size
    return ranks_per_domain(size, stride, zone)


def _oversub(system) -> float:
    return max(1.0, float(getattr(system, "oversubscription", 1.0) or 1.0)) if system is not None else 1.0


def p2p_zone_factor(stride, size, system) -> np.ndarray:
    """Mean slowdown of a pipeline hop (stage rank stride `stride`, `size` stages) on an oversubscribed fabric: a
    share min(1, s/Z) of the hops cross a zone, where min(s, Z) ranks send at once through Z x NIC / o."""
    stride = np.asarray(stride, float)
    zone = float(getattr(system, "zone_gpus", 0) or 0) if system is not None else 0.0
    o = _oversub(system)
    if zone <= 0 or o <= 1.0:
        return np.ones_like(stride)
    crosses = np.asarray(size, float) * stride > zone
    share = np.minimum(1.0, stride / zone)
    slow = np.maximum(1.0, np.minimum(stride, zone) * o / zone)
    return np.where(crosses, 1.0 + share * (slow - 1.0), 1.0)


def _busbw(n, k, rates: Rates, system=None, m=None):
    """Ring bus bandwidth (bytes/s) of a group of n ranks with k per domain (m per fabric zone)."""
    multi = n > k
    intra = rates.intra_busbw * mesh_share(k, system)
    bw = np.where(multi, np.minimum(np.where(k > 1, intra, np.inf), k * rates.inter_nic), intra)
    if m is None:
        return bw
    m = _net_members(m, k)
    return np.where(n > m, np.minimum(bw, m * rates.inter_nic / _oversub(system)), bw)


# The bus bandwidth a ring collective's time assumes, for callers outside the step model (the plan's all-reduce block)
ring_busbw = _busbw


def _net_members(m, k) -> np.ndarray:
    """Members per zone as the network sees them: a scale-up domain's traffic never touches the scale-out fabric,
    so a zone smaller than the domain (NVL72 trays in smaller zones) still holds the domain's k members."""
    return np.maximum(np.asarray(m, float), np.asarray(k, float))


def _alpha(n, k, system):
    return np.where(n > k, system.inter_node_latency_s, system.intra_node_latency_s)


def all_reduce_time(nbytes, n, k, rates: Rates, system, nvls_gain: float = 1.0, m=None):
    """Seconds for an all-reduce of `nbytes` per rank over n ranks (k per domain, m per fabric zone)."""
    n = np.asarray(n, float)
    k = np.asarray(k, float)
    bw = _busbw(n, k, rates, system, m)
    if system.nvls:
        bw = np.where(n > k, bw, bw * nvls_gain)
    a = _alpha(n, k, system)
    lat = np.minimum(2.0 * (n - 1.0) * a, 2.0 * np.log2(np.maximum(n, 1.0)) * a)
    t = 2.0 * (n - 1.0) / np.maximum(n, 1.0) * np.asarray(nbytes, float) / bw + lat
    return np.where(n > 1, t, 0.0)


def reduce_scatter_time(nbytes, n, k, rates: Rates, system, m=None):
    """Seconds for a reduce-scatter (or all-gather) whose full buffer is `nbytes`, over n ranks."""
    n = np.asarray(n, float)
    k = np.asarray(k, float)
    bw = _busbw(n, k, rates, system, m)
    t = (n - 1.0) / np.maximum(n, 1.0) * np.asarray(nbytes, float) / bw + (n - 1.0) * _alpha(n, k, system)
    return np.where(n > 1, t, 0.0)


all_gather_time = reduce_scatter_time


def all_to_all_time(nbytes, n, k, rates: Rates, system, m=None):
    """Seconds for an all-to-all where each rank holds `nbytes` spread evenly over the n ranks (m per zone)."""
    n = np.asarray(n, float)
    k = np.asarray(k, float)
    s = np.asarray(nbytes, float)
    t_intra = (k - 1.0) / np.maximum(n, 1.0) * s / (rates.intra_busbw * mesh_share(k, system))
    t_inter = (n - k) / np.maximum(n, 1.0) * s / rates.inter_nic
    if m is not None:  # the out-of-zone share through NIC / o
        out = np.maximum(n - _net_members(m, k), 0.0) / np.maximum(n, 1.0)
        t_inter = np.maximum(t_inter, out * s * _oversub(system) / rates.inter_nic)
    lat = np.where(n > k, system.inter_node_latency_s, 0.0) + system.intra_node_latency_s
    t = np.maximum(t_intra, t_inter) + lat
    return np.where(n > 1, t, 0.0)


def forwarded_all_to_all_time(net_bytes, nvlink_bytes, n, k, rates: Rates, system, m=None):
    """Seconds for an MoE dispatch / combine that sends `net_bytes` per rank over its NIC (one copy per remote
    domain) and forwards `nvlink_bytes` per rank over the scale-up links, the two overlapped (the faster waits);
    a plain all-to-all inside one domain (n <= k). On an oversubscribed fabric the remote domains outside the
    zone, (n - m) / (n - k) of them, take their copies through NIC / o."""
    n = np.asarray(n, float)
    k = np.asarray(k, float)
    t_inter = np.asarray(net_bytes, float) / rates.inter_nic
    if m is not None:
        out = np.maximum(n - _net_members(m, k), 0.0) / np.maximum(n - k, 1.0)
        t_inter = t_inter * np.maximum(1.0, out * _oversub(system))
    t_intra = np.asarray(nvlink_bytes, float) / (rates.intra_busbw * mesh_share(k, system))
    lat = system.inter_node_latency_s + system.intra_node_latency_s
    t = np.maximum(t_intra, t_inter) + lat
    return np.where(n > k, t, all_to_all_time(nvlink_bytes, n, k, rates, system, m))


def p2p_time(nbytes, same_domain, rates: Rates, system, zone_factor=1.0):
    """Seconds for one send/recv of `nbytes` between neighbouring pipeline stages (`zone_factor`: the mean
    slowdown of its network hops on an oversubscribed fabric, p2p_zone_factor)."""
    s = np.asarray(nbytes, float)
    same = np.asarray(same_domain, bool)
    bw = np.where(same, rates.intra_busbw * mesh_share(2, system), rates.inter_nic / np.asarray(zone_factor, float))
    lat = np.where(same, system.intra_node_latency_s, system.inter_node_latency_s)
    return s / bw + lat
