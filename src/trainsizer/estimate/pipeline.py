"""Pipeline schedule arithmetic (vectorised).

- Micro-batches per step: m = global_batch / (dp * micro_batch) (gradient accumulation; Narayanan 2021 s2.2).
- 1F1B bubble: (p-1)/m of the ideal time; interleaved with v chunks per stage: (p-1)/(v*m)
  (Narayanan 2021 s2.2.1-2.2.2).
- DualPipe (DeepSeek-V3): bidirectional schedule, bubble (p/2-1)(F&B+B-3W) (DeepSeek-V3 report Table 2).
- Point-to-point transfers: every micro-batch crosses each stage boundary forward and backward; interleaving
  multiplies the boundary crossings by v (Narayanan 2021 s2.2.2). The transfers on the critical path are
  2 per slot of the (v*m + p - 1)-slot schedule. Megatron-Core's overlap_p2p_comm (set by NeMo / Megatron-Bridge
  whenever vpp > 1) posts each chunk's send / recv asynchronously, so only the warm-up / cool-down transfers stay
  on the critical path: 2(p v - 1) of them, as its warm-up rounds of p micro-batches leave the ring of stages no
  slack (p2p_transfers_unhidden).
- Uneven splits (L not divisible by p or p*v; Megatron-Core --decoder-first/last-pipeline-num-layers): the
  steady state runs at the pace of the slowest stage, so time uses the most loaded stage's layers (plus the
  LM head on the last stage), never the average.
- Stated end stages (Strategy.pp_first_stage_layers / pp_last_stage_layers: Megatron-Core
  num_layers_in_first_pipeline_stage / num_layers_in_last_pipeline_stage, or a pipeline_model_parallel_layout's
  per-rank counts): those ranks hold the stated decoder layers, the others the rest split evenly
  (megatron/core/transformer/transformer_block.py get_num_layers_to_build: layers_to_distribute // middle stages).
- Stated per-rank layers (Strategy.pp_stage_layers: nanotron's build_model, models/base.py at 0e0a27ea, puts each
  PipelineBlock on the current rank and moves on once the cumulative get_block_compute_costs passes (r + 1) / p of
  the total, the LM head counted V h, so middle ranks may differ: 6 / 5 x 13 / 6 / 3 for an 80-layer model at PP 16;
  a Megatron-Core pipeline_model_parallel_layout writes any counts): rank r holds its stated count, in order.
"""

from __future__ import annotations

import numpy as np


def micro_batches(global_batch, dp, micro_batch):
    """Number of micro-batches each pipeline processes per step (at least 1)."""
    gb = np.asarray(global_batch, float)
    return np.maximum(gb / (np.asarray(dp, float) * np.asarray(micro_batch, float)), 1.0)


def schedule_micro_batches(m, micro_batch, local_batch=None):
    """Micro-batches one pipeline schedule runs: the step's m, or local_batch / micro_batch where the stack runs one
    schedule per local batch and accumulates gradients across them (Strategy.local_batch: torchtitan's and NeMo
    AutoModel's local_batch_size; AutoModel's performance summary: 'GA: number of local-batches before optimizer
    step'), never more than m."""
    if local_batch is None:
        return m
    return np.minimum(m, float(local_batch) / np.asarray(micro_batch, float))


def bubble_fraction(pp, m, vpp=1):
    """Idle fraction relative to the ideal time: (p-1)/(v*m); zero at p = 1."""
    p = np.asarray(pp, float)
    v = np.maximum(np.asarray(vpp, float), 1.0)
    return (p - 1.0) / (v * np.asarray(m, float))


def dualpipe_bubble_fraction(pp, m):
    """DualPipe bubble relative to the ideal time (DeepSeek-V3 report, Table 2).

    Bubble = (p/2 - 1)(F&B + B - 3W) against 1F1B's (p - 1)(F + B); with B = 2F, W = F and F&B = F + B this is
    (p/2 - 1) x 2F, i.e. (p/2 - 1)/m x 2/3 of the ideal time m(F + B).
    """
    p = np.asarray(pp, float)
    return np.maximum(p / 2.0 - 1.0, 0.0) * (2.0 / 3.0) / np.asarray(m, float)


def p2p_transfers_on_critical_path(pp, m, vpp=1):
    """Sends/receives on the critical path of one step (0 when p = 1)."""
    p = np.asarray(pp, float)
    v = np.maximum(np.asarray(vpp, float), 1.0)
    return np.where(p > 1, 2.0 * (v * np.asarray(m, float) + p - 1.0), 0.0)


def crosses_domain_edge(pp, stride, domain):
    """Whether a pipeline whose neighbouring stages sit `stride` ranks apart, closer than a scale-up domain of `domain`
    ranks, still spans several domains (pp x stride > domain), so that some stage's neighbour is across the network:
    with ranks in Megatron-Core's order (tp-cp-ep-dp-pp, parallel_state.RankGenerator; nanotron's ParallelContext
    likewise puts pp outermost) the boundary after every domain's last stage leaves it, e.g. TP 4 x PP 16 on 8-GPU
    hosts: two stages a host, every other boundary over the network. False at pp = 1."""
    p, s, d = (np.asarray(v, float) for v in (pp, stride, domain))
    return (p > 1) & (s < d) & (p * s > d)


def p2p_transfers_unhidden(pp, m=None, vpp=1):
    """Sends/receives that an overlapped schedule cannot hide: the warm-up forwards and cool-down backwards that
    fill and drain the pipeline, each waited on before any compute runs beside it. Under Megatron-Core's
    interleaved schedule (schedules.py get_pp_rank_microbatches: rank r warms up with (p - r - 1) x 2 + (v - 1) x g
    forwards; g = microbatch_group_size_per_vp_stage, default p) a warm-up round sends p micro-batches around the
    ring of p stages, one per stage, so the ring holds no slack and every hop of every model chunk waits for its
    transfer: 2 (p v - 1) transfers, 2 (p - 1) at v = 1 (an event replay of that order, tests/estimate/
    test_pipeline.py, gives exactly this for any forward / backward ratio); never more than the step's
    p2p_transfers_on_critical_path (`m` micro-batches)."""
    p = np.asarray(pp, float)
    v = np.maximum(np.asarray(vpp, float), 1.0)
    fill = 2.0 * (p * v - 1.0)
    if m is not None:
        fill = np.minimum(fill, p2p_transfers_on_critical_path(p, m, v))
    return np.where(p > 1, fill, 0.0)


def combined_1f1b_unpaired(pp, m, vpp=1):
    """Chunk passes each way (forwards in the warm-up, backwards in the cool-down) that Megatron-Core's combined 1F1B
    (overlap_moe_expert_parallel_comm) runs without a partner on the first pipeline rank, which has the most, of one
    schedule of `m` micro-batches: there the EP all-to-alls find no other micro-batch's compute to hide behind.
    Interleaved (schedules.py get_pp_rank_microbatches, Megatron-LM d98e8a64): (p - 1) x 2 + (v - 1) x g warm-up
    forwards, g = microbatch_group_size_per_vp_stage = p by default, plus the one extra forward the overlap schedules
    "to ensure the forward and backward computations are independent in all 1f1b steps"; without pipelining
    (combined_1f1b.py combined_1f1b_schedule_for_no_pipelining) the first micro-batch's forward and the last one's
    backward run alone: 1. Never more than the schedule's v x m chunk passes."""
    p = _stages(pp)
    v = np.maximum(np.asarray(vpp, float), 1.0)
    warm = np.where(p > 1, 2.0 * (p - 1.0) + (v - 1.0) * p + 1.0, 1.0)
    return np.minimum(warm, v * np.asarray(m, float))


def _stages(pp):
    """Pipeline stages as floats, at least one (pp 0 or unset reads as one stage holding every layer)."""
    return np.maximum(np.asarray(pp, float), 1.0)


def _slots(layers: int, pp, embedding_slot, loss_slot):
    """(p >= 1, embedding slot, loss slot, layers + slots): the slots count only where the model is pipelined."""
    p = _stages(pp)
    e = np.where(p > 1, np.asarray(embedding_slot, float), 0.0)
    lo = np.where(p > 1, np.asarray(loss_slot, float), 0.0)
    return p, e, lo, layers + e + lo


def _edge(layers_stated) -> np.ndarray:
    """A stated end stage's decoder layers as floats, NaN where none is stated (None, or 0 in a search's arrays)."""
    if layers_stated is None:
        return np.asarray(np.nan)
    x = np.asarray(layers_stated, float)
    return np.where(x > 0, x, np.nan)


def _stated_edges(layers: int, p, rank, first_layers, last_layers):
    """(start, stop, stated) of rank `rank` where the first / last rank's decoder layers are stated: those ranks
    hold them, the others (middle ranks, and the first one when only the last is stated) (L - stated) / their
    count each."""
    f, la = _edge(first_layers), _edge(last_layers)
    has_f, has_l = ~np.isnan(f), ~np.isnan(la)
    fv, lv = np.where(has_f, f, 0.0), np.where(has_l, la, 0.0)
    middle = p - has_f - has_l
    per = np.where(middle > 0, (layers - fv - lv) / np.maximum(middle, 1.0), 0.0)

    def start_of(k):
        past_first = has_f & (k > 0)
        return np.where(past_first, fv, 0.0) + (k - past_first) * per

    start = np.clip(start_of(rank), 0.0, float(layers))
    stop = np.where(rank >= p - 1.0, float(layers), np.clip(start_of(rank + 1.0), 0.0, float(layers)))
    return start, stop, (has_f | has_l) & (p > 1)


def stated_edges(strategy) -> tuple:
    """(first, last, every) rank's decoder layers a strategy states (Strategy.pp_first_stage_layers /
    pp_last_stage_layers / pp_stage_layers; None where not stated), as `stage_layer_range` takes them."""
    every = getattr(strategy, "pp_stage_layers", None)
    return (getattr(strategy, "pp_first_stage_layers", None), getattr(strategy, "pp_last_stage_layers", None),
            None if every is None else tuple(int(n) for n in every))


def _listed_range(stage_layers: tuple, rank):
    """(start, stop) of rank `rank` under a stated per-rank list: the counts before it and through it."""
    bounds = np.concatenate(([0.0], np.cumsum(np.asarray(stage_layers, float))))
    r = np.clip(np.asarray(rank, float), 0.0, len(stage_layers) - 1.0).astype(np.int64)
    return bounds[r], bounds[r + 1]


def stage_layer_range(layers: int, pp, rank, embedding_slot=0.0, loss_slot=0.0, first_layers=None,
                      last_layers=None, stage_layers=None):
    """(first, one past the last) decoder layer that pipeline rank `rank` builds: L + slots split over p ranks, the
    first (L + slots) mod p ranks holding one slot more, the embedding slot taking rank 0's first and the loss slot
    the last rank's last (megatron/core/transformer/transformer_block.py get_transformer_layer_offset /
    get_num_layers_to_build: num_layers += 1 per slot, num_layers // pp a rank, one fewer on the first / last).
    `first_layers` / `last_layers` (None = not stated): the decoder layers the first / last rank holds, all its
    model chunks together (`_stated_edges`; Strategy.pp_first_stage_layers / pp_last_stage_layers); `stage_layers`
    (None = not stated): every rank's, in order (`_listed_range`; Strategy.pp_stage_layers), over the others."""
    if stage_layers is not None:
        return _listed_range(stage_layers, rank)
    p, e, _, total = _slots(layers, pp, embedding_slot, loss_slot)
    r = np.minimum(np.asarray(rank, float), p - 1.0)
    per, extra = np.floor(total / p), np.mod(total, p)

    def slots_before(k):
        return k * per + np.minimum(k, extra)

    start = np.clip(slots_before(r) - e, 0.0, float(layers))
    stop = np.clip(slots_before(r + 1.0) - e, 0.0, float(layers))
    if first_layers is None and last_layers is None:
        return start, stop
    s_start, s_stop, stated = _stated_edges(layers, p, r, first_layers, last_layers)
    return np.where(stated, s_start, start), np.where(stated, s_stop, stop)


def first_last_stage_layers(layers: int, pp, embedding_slot=0.0, loss_slot=0.0, first_layers=None,
                            last_layers=None, stage_layers=None):
    """(layers on the first stage, layers on the last stage) of an L-over-p split where the first L mod p
    stages get one more layer: (ceil(L/p), floor(L/p)); (L, L) at p = 1 (one stage holds everything).

    `embedding_slot` / `loss_slot` (0 or 1, arrays allowed): Megatron-Core account_for_embedding_in_pipeline_
    split / account_for_loss_in_pipeline_split count the input embedding (first stage) and the LM head + loss
    (last stage) as one layer slot each, so L + slots are split and those stages hold one decoder layer fewer
    (`stage_layer_range`); `first_layers` / `last_layers`: the end ranks' stated decoder layers; `stage_layers`:
    every rank's."""
    p = _stages(pp)
    edges = (embedding_slot, loss_slot, first_layers, last_layers, stage_layers)
    f0, f1 = stage_layer_range(layers, p, 0.0, *edges)
    l0, l1 = stage_layer_range(layers, p, p - 1.0, *edges)
    return f1 - f0, l1 - l0


def most_loaded_stage_layers(layers: int, pp, embedding_slot=0.0, loss_slot=0.0, first_layers=None,
                             last_layers=None, stage_layers=None):
    """Decoder layers of the most loaded pipeline stage, first, last and middle ones alike. Without slots that is
    the first stage (ceil(L/p)); with Megatron-Core's embedding / loss slots a middle stage (p > 2) builds all
    (L + slots) / p of its slots as decoder layers, one more than the end stage whose slot the embedding or the
    loss takes. Under the uneven fallback the first (L + slots) mod p stages hold one more slot, so stage 1, the
    middle stage with the most, holds ceil((L + slots) / p) unless only one stage does. Stated end stages
    (`first_layers` / `last_layers`): the middle ones hold the rest evenly. Every rank's stated (`stage_layers`):
    the most any holds."""
    p = _stages(pp)
    if stage_layers is not None:
        return np.full(np.shape(p), float(max(stage_layers)))
    edges = (embedding_slot, loss_slot, first_layers, last_layers, stage_layers)
    first, last = first_last_stage_layers(layers, p, *edges)
    m0, m1 = stage_layer_range(layers, p, 1.0, *edges)
    middle = np.where(p > 2, m1 - m0, 0.0)
    return np.maximum(np.maximum(first, last), middle)


def fullest_middle_ranks(stage_layers: tuple | None) -> tuple[int, ...]:
    """The middle ranks (1 .. p - 2) that can hold the most under a stated per-rank list, beyond rank 1: a later rank
    keeps fewer micro-batches' activations in flight under 1F1B (p - r) and as many parameters a layer, so it can
    hold more only with more layers than every middle rank before it (the ranks whose count passes all earlier
    middle counts); () where none is stated."""
    if stage_layers is None:
        return ()
    out, most = [], stage_layers[1] if len(stage_layers) > 2 else 0
    for r in range(2, len(stage_layers) - 1):
        if stage_layers[r] > most:
            out.append(r)
            most = stage_layers[r]
    return tuple(out)
