"""The strategies tried on one hardware option, as numpy arrays for `estimate.evaluate_batch`.

Each physical layout appears once: degrees multiply to the GPU count (dp is what tp x pp x cp leaves);
vpp > 1 only with pp > 1; EP only on MoE models and only dividing the experts and dp x cp; ZeRO stages only
where there is data parallelism to shard over; sequence parallelism always on with TP (it only saves memory
and traffic there, Korthikanti et al. 2022). Layout families follow what the frameworks run:

- Megatron-style (TP, PP, CP or EP > 1): plain data parallel or the distributed optimizer (ZeRO-1 over DP), under
  "auto" (which resolves such layouts to Megatron-Core) and the Megatron stacks.
- The same layouts under a stack the job names that shards with ZeRO / FSDP instead (`FSDP_SHARD_FRAMEWORKS`:
  torchtitan's FSDP2 with TP / PP / CP / EP, its 3D / 4D layouts, docs/composability.md; DeepSpeed, the HF
  Trainer, FSDP, torchtune): the data-parallel family's ZeRO 0-3 and hybrid shard, ZeRO-3 with PP for torchtitan
  only (validate.ZERO3_PP_REFUSED); none of them has Megatron's distributed optimizer.
- Data parallel only (the HF Trainer / DeepSpeed / FSDP world): ZeRO 0-3, and FSDP hybrid shard within a
  node when DP spans several nodes.
- Methods whose frameworks are data parallel only (search.yaml `data_parallel_only_methods`: QLoRA): the data
  parallel family alone.
- Offload (a second pass: on one node when nothing fits without it, and on any option when nothing that fits
  leaves the memory floor free, search.yaml memory_headroom_min):
  DeepSpeed ZeRO-Offload of the optimizer (ZeRO 1-3) and ZeRO-Infinity-style parameter offload (ZeRO-3).

Expert TP (`Strategy.etp`, the routed experts' TP degree): on a MoE layout with TP > 1 and EP > 1 under a framework
that runs both (`EXPERT_TP_SEARCH_FRAMEWORKS`) both etp 1 and etp = tp are tried, one more axis only there; every
other layout keeps the framework's default (validate.expert_tp). NVIDIA's MoE recipes run etp 1 at TP > 1
(Megatron-Bridge recipes expert_tensor_parallel_size=1; MLPerf Training v6.0 DeepSeek-V3 / GPT-OSS, known-gaps 45).

Pipeline end stages (`Strategy.pp_first_stage_layers` / `pp_last_stage_layers`): Megatron-Core builds L / p layers a
rank and asserts that p (and each rank's layers by vpp) divides them unless the end ranks' layers are stated
(transformer_block.py get_num_layers_to_build: "num_layers should be divisible by pipeline_model_parallel_size"). So
under the Megatron stacks (`END_STAGE_FRAMEWORKS`) a pipelined layout whose layers do not split evenly comes with
the split Megatron users state (`end_stage_layers`: the middle ranks hold the fewest whole chunks that leave the
rest to the two end ranks, the last rank, which also runs the LM head and the loss, the lighter): DeepSeek-V3's 61
layers at PP 8 run 7 + 6 x 8 + 6, Llama 3.1 405B's 126 at PP 8 15 + 6 x 16 + 15; where no such split exists the
layout is left out. The other stacks keep the split their estimate times (the first L mod p ranks one layer more).

Stacks without optimizer-only sharding (`names.FSDP_FRAMEWORKS`: FSDP / FSDP2 shard the states with the gradients,
FULL_SHARD or SHARD_GRAD_OP, reshard_after_forward True or False) are not offered ZeRO-1.

Every combination is then crossed with the micro-batch sizes and the three recompute modes.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import numpy as np

from trainsizer.estimate.inputs import OFFLOAD_CODE, Strategy
from trainsizer.estimate.validate import STAGE_LAYERS_FRAMEWORKS, expert_tp, sequence_splits_over_tp
from trainsizer.models.arch import ModelArch
from trainsizer.names import FSDP_FRAMEWORKS
from trainsizer.search.config import SearchConfig

# columns of a layout row before the micro-batch / recompute cross product
# (etp 0: the framework's default, filled in by `strategies`)
# (pp_first / pp_last 0: the even split, no end stage stated)
_COLS = ("tp", "pp", "vpp", "dp", "cp", "ep", "zero", "shard_group", "distributed_optimizer", "offload", "etp",
         "pp_first", "pp_last")
# frameworks whose routed experts run at expert TP 1 or tp under EP, either chosen: Megatron-Core
# (core/parallel_state.py initialize_model_parallel expert_tensor_parallel_size, any divisor of the grid; "auto"
# resolves every TP > 1 layout of the search to it) and torchtitan (job_config.py
# Parallelism.expert_tensor_parallel_degree: 1 or tp); validate.py rules etp_* hold the same
EXPERT_TP_SEARCH_FRAMEWORKS = ("auto", "megatron-core", "torchtitan")
# named stacks whose model-parallel layouts shard with ZeRO / FSDP, not the distributed optimizer (module docstring)
FSDP_SHARD_FRAMEWORKS = ("torchtitan", "torchtune", "hf", "fsdp", "deepspeed")
# of those, the stacks that compose FSDP (ZeRO-3) with a pipeline schedule (validate.ZERO3_PP_REFUSED: not the others)
FSDP_PP_FRAMEWORKS = ("torchtitan",)
# stacks whose uneven pipeline splits are stated end stages (module docstring); "auto" resolves pipelined layouts to
# Megatron-Core
END_STAGE_FRAMEWORKS = ("auto", *STAGE_LAYERS_FRAMEWORKS)
OFF_NONE, OFF_OPT, OFF_PARAMS = OFFLOAD_CODE["none"], OFFLOAD_CODE["optimizer"], OFFLOAD_CODE["optimizer+params"]


def _pow2_upto(limit: int) -> list[int]:
    out, v = [], 1
    while v <= limit:
        out.append(v)
        v *= 2
    return out


def odd_multipliers(odd_factors: tuple[int, ...]) -> list[int]:
    """1 and every product of distinct odd factors (search.yaml pp_odd_factors [3, 5, 7] -> 1, 3, 5, 7, 15, 21, 35,
    105): a pipeline degree is one of these times a power of two (MT-NLG 530B's PP 35 = 5 x 7)."""
    out = {1}
    for f in dict.fromkeys(odd_factors):
        out |= {m * f for m in out}
    return sorted(out)


def pipeline_degrees(limit: int, odd_factors: tuple[int, ...]) -> list[int]:
    """Pipeline degrees tried up to `limit`: each odd multiplier times a power of two (search.yaml pp_odd_factors:
    3 -> 3, 6, 12, 24, 48; 5 x 7 -> 35)."""
    return sorted({f * p for f in odd_multipliers(odd_factors) for p in _pow2_upto(limit // f)})


def model_parallel_group(n: int, odd_factors: tuple[int, ...]) -> bool:
    """Whether `n` GPUs form a TP x PP x CP group the search can try: a power of two times an odd multiplier of the
    pipeline degrees (limits on each degree aside)."""
    return any(n % f == 0 and (n // f) & (n // f - 1) == 0 for f in odd_multipliers(odd_factors))


def _shard_modes(megatron: bool, dp: int, cp: int, per_node: int, offload: bool,
                 zero1: bool = True) -> list[tuple[int, int, int, int]]:
    """(zero, shard_group, distributed_optimizer, offload code) choices for one layout (`zero1`: the stack has an
    optimizer-only stage)."""
    stages = (0, 1, 2, 3) if zero1 else (0, 2, 3)
    if offload:
        if megatron:
            return []
        return [(z, 0, 0, OFF_OPT) for z in stages if z] + [(3, 0, 0, OFF_PARAMS)]
    if dp * cp == 1:
        return [(0, 0, 0, OFF_NONE)]
    if megatron:
        return [(0, 0, 0, OFF_NONE), (0, 0, 1, OFF_NONE)]
    modes = [(z, 0, 0, OFF_NONE) for z in stages]
    if dp > per_node and dp % per_node == 0:
        modes.append((3, per_node, 0, OFF_NONE))  # FSDP hybrid shard: shard in a node, replicate across
    return modes


def layouts(model: ModelArch, seq_len: int, global_batch: int, gpus: int, per_node: int, domain: int,
            cfg: SearchConfig, offload: bool = False, dp_only: bool = False,
            expert_tp_choice: bool = False, framework: str = "auto") -> np.ndarray:
    """Layout rows (columns `_COLS`), one per distinct layout, before micro-batch and recompute.
    `dp_only`: data parallel layouts only (methods whose frameworks have no model parallelism);
    `expert_tp_choice`: MoE layouts at TP > 1 and EP > 1 come at etp 1 and etp = tp (module docstring);
    `framework`: a stack in FSDP_SHARD_FRAMEWORKS shards its model-parallel layouts with ZeRO / FSDP."""
    experts = model.experts if model.is_moe and not dp_only else 1
    max_tp, max_pp = (1, 1) if dp_only else (cfg.max_tp, cfg.max_pp)
    cp_min = seq_len + 1 if dp_only else cfg.cp_min_tokens_per_rank  # no CP degree > 1 keeps that many
    shards = "fsdp-pp" if framework in FSDP_PP_FRAMEWORKS else "fsdp" if framework in FSDP_SHARD_FRAMEWORKS else "megatron"
    return _layouts(model.heads, model.layers, experts, seq_len, global_batch, gpus, per_node, domain,
                    max_tp, max_pp, cp_min, cfg.vpp_values, offload, expert_tp_choice and experts > 1, shards,
                    cfg.pp_odd_factors, framework in END_STAGE_FRAMEWORKS, framework not in FSDP_FRAMEWORKS)


def end_stage_layers(layers: int, pp: int, vpp: int) -> tuple[int, int] | None:
    """(first, last) rank's decoder layers of the split Megatron users state where `layers` do not divide into pp x vpp
    whole chunks: each middle rank holds M layers, the fewest multiple of vpp from ceil(L / pp) up that leaves the
    two end ranks 2..2M layers, the first the larger half (the last also runs the LM head and the loss); (0, 0) where
    the layers split evenly, None where no split leaves each end rank a layer (validate._stage_layers_rules).
    Under an interleaved schedule the end ranks get whole chunks of vpp layers where the rest divides so, as
    Megatron-Core's num_layers_in_first / last_pipeline_stage must (TransformerConfig: "number of layers at first
    stage ... must be divisible by virtual pipeline parallel degree"): 126 layers at PP 8 x VPP 2 run 16 + 6 x 16 +
    14, not 15 + 15, which only a pipeline_model_parallel_layout states."""
    if pp <= 1 or layers % (pp * vpp) == 0:
        return 0, 0
    m = vpp * -(-layers // (pp * vpp))
    rest = layers - (pp - 2) * m
    if rest < 2:
        return None
    unit = vpp if rest % vpp == 0 and rest >= 2 * vpp else 1
    first = min(m, unit * -(-rest // (2 * unit)))
    return first, rest - first


@lru_cache(maxsize=4096)
def _layouts(heads: int, layers: int, experts: int, seq_len: int, global_batch: int, gpus: int, per_node: int,
             domain: int, max_tp: int, max_pp: int, cp_min: int, vpp_values: tuple[int, ...],
             offload: bool, expert_tp_choice: bool = False, shards: str = "megatron",
             pp_odd_factors: tuple[int, ...] = (), end_stages: bool = False, zero1: bool = True) -> np.ndarray:
    """`layouts` on plain numbers, cached: accelerators of one node shape share their layouts. `shards`: how a
    model-parallel layout shards its states: "megatron" (none or the distributed optimizer), "fsdp" (ZeRO 0-3,
    hybrid shard), "fsdp-pp" (the same, ZeRO-3 with PP too); `end_stages`: an uneven pipeline split states its end
    ranks' layers (`end_stage_layers`); `zero1`: ZeRO-1 is offered."""
    rows: list[tuple[int, ...]] = []
    tps = [t for t in _pow2_upto(min(max_tp, domain, gpus)) if heads % t == 0]
    cps = [c for c in _pow2_upto(gpus) if c == 1 or (seq_len // c >= cp_min and seq_len % (2 * c) == 0)]
    pps = pipeline_degrees(min(max_pp, layers, gpus), pp_odd_factors)
    for tp in tps:
        for cp in cps:
            for pp in pps:
                if gpus % (tp * cp * pp):
                    continue
                dp = gpus // (tp * cp * pp)
                if dp > global_batch:
                    continue
                vpps = [1] if pp == 1 else [v for v in vpp_values if pp * v <= layers]
                ends = {v: end_stage_layers(layers, pp, v) if end_stages else (0, 0) for v in vpps}
                vpps = [v for v in vpps if ends[v] is not None]
                eps = [e for e in _pow2_upto(experts) if experts % e == 0 and (dp * cp) % e == 0]
                for ep in eps:
                    megatron = shards == "megatron" and (tp > 1 or pp > 1 or cp > 1 or ep > 1)
                    etps = (1, tp) if expert_tp_choice and tp > 1 and ep > 1 else (0,)
                    for zero, sg, dist, off in _shard_modes(megatron, dp, cp, per_node, offload, zero1):
                        if zero == 3 and pp > 1 and shards != "fsdp-pp":
                            continue
                        rows.extend((tp, pp, v, dp, cp, ep, zero, sg, dist, off, et, *ends[v])
                                    for et in etps for v in vpps)
    out = np.array(rows, dtype=float).reshape(-1, len(_COLS))
    out.setflags(write=False)  # shared by every caller through the cache
    return out


def strategies(model: ModelArch, seq_len: int, global_batch: int, gpus: int, per_node: int, domain: int,
               cfg: SearchConfig, framework: str = "auto", offload: bool = False,
               dp_only: bool = False) -> Strategy | None:
    """All strategies for one hardware option as one array-valued `Strategy` (None: no layout at all)."""
    base = layouts(model, seq_len, global_batch, gpus, per_node, domain, cfg, offload, dp_only,
                   expert_tp_choice=framework in EXPERT_TP_SEARCH_FRAMEWORKS, framework=framework)
    if not len(base):
        return None
    mbs = np.array(cfg.micro_batches, dtype=float)
    dp = base[:, 3]
    # micro_batch x dp must divide the global batch: drop impossible pairs before the cross product
    ok = (global_batch % (mbs[None, :] * dp[:, None])) == 0
    li, mi = np.nonzero(ok)
    if not len(li):
        return None
    rec = np.arange(3, dtype=float)
    li, mi, ri = np.repeat(li, 3), np.repeat(mi, 3), np.tile(rec, len(mi))
    cols = {name: base[li, k] for k, name in enumerate(_COLS)}
    strat = Strategy(
        tp=cols["tp"], pp=cols["pp"], vpp=cols["vpp"], dp=cols["dp"], cp=cols["cp"], ep=cols["ep"],
        zero=cols["zero"], shard_group=cols["shard_group"], micro_batch=mbs[mi], recompute=ri,
        offload=cols["offload"],
        sequence_parallel=((cols["tp"] > 1) & sequence_splits_over_tp(seq_len, cols["tp"], cols["cp"])).astype(float),
        distributed_optimizer=cols["distributed_optimizer"], framework=framework,
        pp_first_stage_layers=cols["pp_first"], pp_last_stage_layers=cols["pp_last"],
    )
    if not model.is_moe:
        return strat  # dense: no routed experts, etp left unset
    default = expert_tp(strat, cols)  # stated on every MoE strategy, so the chosen one shows it
    return replace(strat, etp=np.where(cols["etp"] > 0, cols["etp"], default))
