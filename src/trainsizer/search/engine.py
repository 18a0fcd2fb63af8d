"""For every hardware option, the fastest strategy that obeys the rules and fits in memory (or, when that one
leaves less than search.yaml's memory floor free, the fastest that does within the tie band: `choose`).

On one hardware option the GPU count and prices are fixed, so the fastest step is also the cheapest run and
the shortest time to train: the best strategy of an option does not depend on the job's goal. The goal
only ranks the options (`search.rank`).

Work per option (vectorised with `estimate.evaluate_batch`):
1. Memory lower bound: the model states sharded over every GPU (ZeRO-3 across the whole option) must fit
   one GPU; when they do not, no strategy can, and the option is skipped without enumerating anything
   (unless the job is one node, where CPU offload may still rescue it).
2. Rules and memory of every strategy of `search.space` in one call; time only for those that fit.
3. A second pass with CPU offload: options where nothing fits, and any option where nothing that fits leaves
   the memory floor free (then an offloaded layout within the tie band may be chosen, `choose`). Options of
   several nodes where nothing fits try it too: with the fit judged on what the driver gives a process (79.2 GiB
   on an H100 80GB), 70B full SFT on 16 H100 has no layout without offload, and ZeRO-Offload / FSDP CPU offload
   is how such a job runs (examples/sft-70b-16gpu.yaml).

Stack options the job states (spec.STACK_OPTION_FIELDS: compile_loss, attention_kernel, moe_torch_grouped_mm, ...)
are carried into every strategy tried, as one value for the batch (the estimate's Strategy takes them so), and the
rules judge each strategy with them: a layout an option does not hold on (moe_a2a_overlap without EP, compile_loss
on a layout "auto" resolves to Megatron-Core) is left out, counted, and the first one's refusal kept to say why.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from trainsizer.errors import StrategyError
from trainsizer.estimate import communicators, evaluate_batch
from trainsizer.estimate.batch import OPTIONAL_ARRAY_FIELDS
from trainsizer.estimate.inputs import (
    DEGREE_FIELDS,
    FLAG_FIELDS,
    MODE_FIELDS,
    RECOMPUTE,
    RECOMPUTE_CODE,
    Strategy,
    System,
    Training,
)
from trainsizer.estimate.memory import GIB
from trainsizer.estimate.model_states import frozen_base_bytes, model_state_bytes
from trainsizer.estimate.validate import check_strategy, valid_mask
from trainsizer.models.arch import ModelArch
from trainsizer.scenario import build_system, server_ram_per_node
from trainsizer.search import partial
from trainsizer.search.candidates import HardwareOption
from trainsizer.search.config import SearchConfig, leaves_floor
from trainsizer.search.space import strategies

_FIELDS = (*DEGREE_FIELDS, *MODE_FIELDS, *FLAG_FIELDS)
OFFLOAD_NAMES = ("none", "optimizer", "optimizer+params")
StackOptions = tuple[tuple[str, Any], ...]  # spec.stated_stack_options: (field, value) pairs


@dataclass(frozen=True)
class OptionResult:
    """The best strategy found on one hardware option (strategy None: nothing fits)."""

    option: HardwareOption
    system: System
    evaluated: int  # strategies evaluated (rules + memory)
    feasible: int  # of which fit
    strategy: Strategy | None = None
    step_s: float = float("nan")
    tokens_per_s: float = float("nan")
    busy_fraction: float = 1.0  # compute share of the step (for energy)
    mem_gib: float = float("nan")  # worst GPU of the best strategy
    min_mem_gib: float = float("nan")  # least memory of any valid strategy (how far from fitting)
    min_mem_on_gpu_gib: float = float("nan")  # least of any valid strategy without CPU offload (why offload)
    lower_bound_gib: float = 0.0  # model states sharded over every GPU
    skipped: str | None = None  # why no strategy was enumerated
    runner_up_step_s: float = float("nan")  # fastest of the other strategies on this option
    memory_evaluations: int = 0  # of `evaluated`, those computed here (not shared with an option of its shape)
    fastest_step_s: float = float("nan")  # the fastest fitting strategy (the chosen one unless kept for headroom)
    fastest_mem_gib: float = float("nan")
    for_headroom: bool = False  # a slower strategy chosen to keep the GPU memory floor free (`choose`)
    # a block partial-recompute choice (search.partial): the layers of its model chunk, and the step of the same
    # layout re-running every layer (full recompute)
    chunk_layers: int = 0
    full_recompute_step_s: float = float("nan")
    # the fitting strategy of the chosen one's TP / PP / VPP / CP / EP that needs the least memory (the fastest of
    # those within 0.1 GiB of it): what the job needs in that layout when memory is short, beside the fastest one
    # that the search picks when it is not
    lean_strategy: Strategy | None = None
    lean_mem_gib: float = float("nan")
    lean_step_s: float = float("nan")
    # strategies the stated stack options left out (valid without them, refused with them) and the first one's
    # refusal (rule, sentence)
    dropped_by_options: int = 0
    options_refusal: tuple[str, str] | None = None
    # no strategy valid here at all: the rule the first one breaks (rule, sentence), a job-level setting no layout
    # can run (fp8_recipe nvfp4-torchao on Megatron-Core), not the memory
    invalid_refusal: tuple[str, str] | None = None
    # what the chosen strategy keeps in a node's host RAM, GiB (the memory estimate's host_bytes_per_node, judged
    # against the host's RAM where known): the plan prices and notes it from here (plan.searched.price)
    host_gib_per_node: float = 0.0

    @property
    def refused_by_options(self) -> bool:
        """No strategy valid here, and some only because of the stated stack options."""
        return self.strategy is None and self.dropped_by_options > 0 and not math.isfinite(self.min_mem_gib)


@dataclass
class SearchStats:
    evaluated: int = 0
    feasible: int = 0
    options: int = 0
    options_pruned_by_memory: int = 0
    options_pruned_by_scaling: int = 0
    memory_evaluations: int = 0  # distinct rules + memory evaluations (options of one shape share them)
    time_evaluations: int = 0  # step-time evaluations (fitting strategies only)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    dropped_by_options: int = 0  # OptionResult.dropped_by_options, summed
    options_refusal: tuple[str, str] | None = None  # the first option's


def states_lower_bound_bytes(model: ModelArch, training: Training, gpus: int) -> float:
    """Bytes per GPU of the model states with everything sharded over `gpus` (no activations, no offload):
    no strategy on `gpus` GPUs needs less. Full / pretrain / DPO: ZeRO-3 states of every parameter (the least
    of the framework profiles; DPO's frozen reference adds its 16-bit weights); LoRA / QLoRA: the frozen base."""
    params = float(model.params_total)
    if training.trains_base_weights:
        states = min(float(model_state_bytes(params, training, model, zero=3, shard=gpus, profile=p))
                     for p in ("hf", "megatron"))
        if training.has_reference_model:
            states += params * frozen_base_bytes(training)[0] / gpus
        return states
    return params * frozen_base_bytes(training)[0] / gpus


_take = partial.take


def _one(strategy: Strategy, i: int) -> Strategy:
    """The i-th strategy of an array-valued Strategy, with plain Python values and mode names."""
    vals: dict[str, Any] = {f: (np.asarray(v)[i] if np.ndim(v := getattr(strategy, f)) else np.asarray(v)).item()
                            for f in _FIELDS}
    for f in DEGREE_FIELDS:
        vals[f] = int(vals[f])
    vals["recompute"] = RECOMPUTE[int(vals["recompute"])]
    vals["offload"] = OFFLOAD_NAMES[int(vals["offload"])]
    for f in FLAG_FIELDS:
        vals[f] = bool(vals[f])
    for f in OPTIONAL_ARRAY_FIELDS:  # the partial-recompute pass's N; a MoE search's expert TP (search.space)
        n = getattr(strategy, f)
        if n is not None:
            vals[f] = int(np.asarray(n)[i] if np.ndim(n) else n)
    for f in ("pp_first_stage_layers", "pp_last_stage_layers"):  # 0: the search's even split, none stated
        if f in vals:
            vals[f] = vals[f] or None
    return replace(strategy, **vals)


def option_system(option: HardwareOption) -> System:
    system = build_system(option.accelerator, option.count, min(option.per_node, option.count), option.network)
    if option.fabric is not None:  # the job's oversubscribed fabric, the same fact the scenario resolved
        system = replace(system, zone_gpus=option.fabric.zone_gpus, oversubscription=option.fabric.oversubscription)
    ram = server_ram_per_node(option.accelerator, option.server, system.gpus_per_node)
    return replace(system, host_ram_gib=ram) if ram else system


MemoryCache = dict[tuple, tuple[Strategy, dict[str, np.ndarray]]]
# a node's host RAM need, GiB, besides the states it offloads, on a system (evaluate.node_base_for)
HostBase = Callable[[System], float]


def _memory(model: ModelArch, training: Training, system: System, args: tuple, framework: str, offload: bool,
            cache: MemoryCache | None,
            options: StackOptions = ()) -> tuple[Strategy | None, dict[str, np.ndarray] | None, bool]:
    """(strategies, rules + memory verdicts, whether they were computed now) for one option, the stated stack
    `options` carried into every strategy (verdict "dropped": valid without them, not with them).

    Rules and per-GPU bytes depend on the job and the strategy and, of the hardware, only on the GPU count,
    GPUs per node, scale-up domain and the NCCL channels its fabric gets (validate.py, memory.py,
    communicators.fabric_key), so options of the same shape share one
    evaluation (exact duplicates evaluated once); `fits` is then the bytes against this accelerator's memory,
    as `memory_per_gpu_bytes` decides it. The offload pass also checks host RAM, so it is not shared."""
    # stated stack options are judged on the part too (validate: cudnn_release by family, the fused grouped MLP on
    # SM100, moe_dispatcher flex by vendor), so options of one shape share verdicts only on one accelerator then
    key = (system.gpus, system.gpus_per_node, system.domain_gpus, communicators.fabric_key(system), framework,
           options, system.accelerator if options else None)
    if offload or cache is None or key not in cache:
        dp_only = training.method in args[-1].data_parallel_only_methods
        plain = strategies(*args, framework=framework, offload=offload, dp_only=dp_only)
        if plain is None:
            return None, None, False
        strat = replace(plain, **dict(options))
        mem = evaluate_batch(model, training, system, strat, parts=("valid", "memory"), threads=1)
        if options:
            mem["dropped"] = valid_mask(model, training, system, plain) & ~mem["valid"]
        if not offload and cache is not None:
            cache[key] = (strat, mem)
        return strat, mem, True
    strat, shared = cache[key]
    mem_bytes = shared["mem_bytes"]
    with np.errstate(invalid="ignore"):
        fits = shared["valid"] & np.isfinite(mem_bytes) & (mem_bytes <= system.memory_gib * GIB)
    out = {"valid": shared["valid"], "mem_bytes": mem_bytes, "fits": fits,
           "host_bytes_per_node": shared["host_bytes_per_node"]}
    if "dropped" in shared:
        out["dropped"] = shared["dropped"]
    return strat, out, False


def _host_fits(rows: np.ndarray, host_bytes: np.ndarray, system: System, host_base: HostBase | None) -> np.ndarray:
    """The fitting rows whose node's whole host need fits the host's RAM: a layout keeping states in host RAM
    (offload, paged optimizers) needs them beside what the node needs without them (`host_base`: OS, processes,
    buffers, checkpoint staging, page cache; estimate.host_memory, the node block's one definition; evaluate.node_base_for
    gives it where no RAM can be added, a GB200 tray's 960 GiB, and 0 where DIMMs can be, which the ranking prices),
    so such a tray holds the states + the rest, not the states alone (known-gaps 43 (w))."""
    if host_base is None or system.host_ram_gib <= 0 or not rows.size:
        return rows
    held = np.asarray(host_bytes)[rows]
    base = host_base(system) * GIB
    return rows[(held <= 0) | (held + base <= system.host_ram_gib * GIB)]


def _refusal(model: ModelArch, training: Training, system: System, strat: Strategy,
             row: int) -> tuple[str, str] | None:
    """(rule, sentence) of the rule the `row`-th strategy breaks (None where it breaks none: valid_mask and
    check_strategy read one rule table, so only a bug gets there, and then no reason is given rather than a wrong one)."""
    try:
        check_strategy(model, training, system, _one(strat, row))
    except StrategyError as err:
        return err.rule, err.detail
    return None


def search_option(model: ModelArch, training: Training, option: HardwareOption, cfg: SearchConfig,
                  framework: str = "auto", cache: MemoryCache | None = None,
                  options: StackOptions = (), host_base: HostBase | None = None) -> OptionResult:
    """The fastest fitting strategy on one hardware option (`cache`: memory verdicts shared by options of
    the same shape, see `_memory`; `options`: the job's stated stack options, carried into every strategy;
    `host_base`: a node's host RAM need besides its offloaded states on a system, `_host_fits`)."""
    system = option_system(option)
    bound = states_lower_bound_bytes(model, training, option.count)
    one_node = option.count <= option.per_node
    if bound > system.memory_gib * GIB and not one_node:
        return OptionResult(option, system, 0, 0, lower_bound_gib=bound / GIB,
                            skipped="model states alone exceed GPU memory at this count")
    args = (model, training.seq_len, training.global_batch_seqs, option.count, system.gpus_per_node,
            system.domain_gpus, cfg)
    evaluated, computed, min_mem, on_gpu = 0, 0, float("nan"), float("nan")
    fitting: list[tuple[Strategy, np.ndarray, np.ndarray]] = []
    plain: tuple[Strategy, np.ndarray] | None = None  # the pass without offload and its fits (search.partial)
    roomy = False  # some fitting strategy leaves the memory floor free
    dropped, refusal = 0, None  # strategies the stack options left out, the first one's refusal
    invalid = None  # the first pass's first strategy's rule, kept until some strategy is valid
    for offload in (False, True):
        # CPU offload: when nothing fits, and when nothing that fits leaves the memory floor free (an offloaded
        # layout within the tie band is then the one to run, `choose`)
        if offload and roomy:
            break
        strat, mem, fresh = _memory(model, training, system, args, framework, offload, cache, options)
        if strat is None or mem is None:
            continue
        if "dropped" in mem and mem["dropped"].any():
            dropped += int(mem["dropped"].sum())
            refusal = refusal or _refusal(model, training, system, strat, int(np.flatnonzero(mem["dropped"])[0]))
        n = int(np.asarray(strat.tp).size)
        evaluated += n
        computed += n if fresh else 0
        valid = mem["valid"]
        if not valid.any() and invalid is None and not np.isfinite(min_mem):
            invalid = _refusal(model, training, system, strat, 0)
        if valid.any():
            invalid = None
            least = float(np.nanmin(mem["mem_bytes"][valid])) / GIB
            min_mem = least if not np.isfinite(min_mem) else min(min_mem, least)
            on_gpu = on_gpu if offload else least
        rows = np.flatnonzero(mem["fits"])
        rows = _host_fits(rows, mem["host_bytes_per_node"], system, host_base)
        if rows.size:
            fitting.append((_take(strat, rows), mem["mem_bytes"][rows], mem["host_bytes_per_node"][rows]))
            roomy = bool(np.any(leaves_floor(mem["mem_bytes"][rows], system.memory_gib * GIB, cfg.memory_headroom_min)))
        if not offload and rows.size and partial.searched(framework, training, cfg):
            plain = (strat, mem["fits"])
    if fitting:
        fit, mem_bytes, host = _concat(fitting)
        t = evaluate_batch(model, training, system, fit, parts=("time",), threads=1)
        groups = [(fit, mem_bytes, t, np.full(len(mem_bytes), np.nan), host)]
        i, _ = choose(t["step_s"], mem_bytes, system.memory_gib * GIB, cfg.tie_fraction, cfg.memory_headroom_min)
        if plain is not None and np.asarray(fit.recompute)[i] == RECOMPUTE_CODE["full"]:
            # full recompute needed for memory: layouts that fit only under it, with Megatron's block method
            found, judged = _partial_group(model, training, system, plain, t["step_s"], cfg)
            groups += [found] if found is not None else []
            evaluated += judged
        return replace(_best(model, training, system, option, groups, evaluated, min_mem, bound / GIB, computed, cfg),
                       min_mem_on_gpu_gib=on_gpu, dropped_by_options=dropped, options_refusal=refusal)
    return OptionResult(option, system, evaluated, 0, min_mem_gib=min_mem, lower_bound_gib=bound / GIB,
                        memory_evaluations=computed, min_mem_on_gpu_gib=on_gpu, dropped_by_options=dropped,
                        options_refusal=refusal, invalid_refusal=invalid if not np.isfinite(min_mem) else None)


def offload_reason(r: OptionResult, frozen_base: bool) -> tuple[str, dict[str, Any]] | None:
    """Why the chosen layout offloads to the CPU, as a message key and its fields, when no layout fits on the GPUs
    alone: the model states sharded over all of them exceed a GPU (states_lower_bound_bytes, which scales as 1 / GPUs:
    from how many GPUs they would fit, activations on top; `frozen_base`: LoRA / QLoRA, whose states are the frozen
    base) or, when they fit, the least any layout without offload needs. None when the layout does not offload or a
    layout without offload fits."""
    s, cap, gpus = r.strategy, r.system.memory_gib, r.option.count
    if s is None or s.offload == "none":
        return None
    if r.lower_bound_gib > cap:
        return ("layout_offload_base" if frozen_base else "layout_offload_states",
                {"gpus": gpus, "need": f"{r.lower_bound_gib:.1f}", "cap": f"{cap:.1f}",
                 "more": math.ceil(gpus * r.lower_bound_gib / cap)})
    if r.min_mem_on_gpu_gib > cap:
        return "layout_offload_least", {"gpus": gpus, "least": f"{r.min_mem_on_gpu_gib:.1f}", "cap": f"{cap:.1f}"}
    return None


def _concat(parts: list[tuple[Strategy, np.ndarray, np.ndarray]]) -> tuple[Strategy, np.ndarray, np.ndarray]:
    """Array-valued strategies (with their device bytes and host bytes a node) of several passes as one."""
    if len(parts) == 1:
        return parts[0]
    sizes = [len(p[1]) for p in parts]
    first = parts[0][0]
    vals = {}
    for f in (*_FIELDS, *(f for f in OPTIONAL_ARRAY_FIELDS if getattr(first, f) is not None)):
        vs = [getattr(p[0], f) for p in parts]
        if all(np.ndim(v) == 0 for v in vs) and len({float(v) for v in vs}) == 1:
            continue  # the same for every strategy: stays scalar
        vals[f] = np.concatenate([np.broadcast_to(np.asarray(v, dtype=float), (n,)) for v, n in zip(vs, sizes, strict=True)])
    return replace(first, **vals), np.concatenate([p[1] for p in parts]), np.concatenate([p[2] for p in parts])


def choose(step_s: np.ndarray, mem_bytes: np.ndarray, capacity_bytes: float, band: float,
           floor: float) -> tuple[int, int]:
    """(chosen, fastest): indices of the strategy to run and of the fastest one.

    Fastest first; among equally fast (to 0.1%), the one with the most memory headroom. When the fastest
    leaves less than `floor` of the GPU memory free, the fastest of the strategies that do leave it is chosen
    instead, provided its step is within `band` of the fastest (the time model cannot tell such steps apart,
    search.yaml tie_fraction); otherwise the fastest stays and the plan's risks flag it."""
    fastest_step = float(np.nanmin(step_s))
    order = np.lexsort((mem_bytes, np.round(step_s / fastest_step, 3)))
    fastest = int(order[0])
    clears = leaves_floor(mem_bytes, capacity_bytes, floor)
    if clears[fastest]:
        return fastest, fastest
    roomy = [int(j) for j in order if clears[j] and step_s[j] <= fastest_step * (1.0 + band)]
    return (roomy[0] if roomy else fastest), fastest


def _partial_group(model: ModelArch, training: Training, system: System, plain: tuple[Strategy, np.ndarray],
                   step_s: np.ndarray, cfg: SearchConfig) -> tuple[tuple | None, int]:
    """Block partial-recompute strategies (search.partial) with their bytes, step times and full-recompute steps,
    and how many were judged; `step_s`: the step times of the fitting strategies, the pass without offload first (its full-recompute
    rows bound what re-running fewer layers can gain)."""
    strat, fits = plain
    full_step = np.full(fits.shape, np.nan)
    full_step[np.flatnonzero(fits)] = step_s[:int(fits.sum())]
    return partial.partial_layouts(model, training, system, strat, fits, cfg, full_step, float(np.nanmin(step_s)))


def _best(model: ModelArch, training: Training, system: System, option: HardwareOption, groups: list[tuple],
          evaluated: int, min_mem: float, bound_gib: float, computed: int, cfg: SearchConfig) -> OptionResult:
    """The strategy to run among every fitting one, by `choose`. `groups`: batches of strategies with their bytes,
    step times and, for block partial recompute (search.partial), the step of the same layout re-running every
    layer (NaN otherwise), and the host bytes a node of each."""
    step = np.concatenate([g[2]["step_s"] for g in groups])
    mem_bytes = np.concatenate([g[1] for g in groups])
    host = np.concatenate([g[4] for g in groups])
    i, fastest = choose(step, mem_bytes, system.memory_gib * GIB, cfg.tie_fraction, cfg.memory_headroom_min)
    others = np.delete(step, i)
    g, row = _locate([len(g[1]) for g in groups], i)
    chosen, t = _one(groups[g][0], row), groups[g][2]
    extra: dict[str, Any] = {}
    if chosen.recompute_method is not None:
        extra = {"chunk_layers": int(partial.chunk_layers(model, chosen)),
                 "full_recompute_step_s": float(groups[g][3][row])}
    # the lean layout keeps the chosen one's model-parallel shape (TP, PP, VPP, CP, EP, expert TP): what differs is what a
    # layout spends memory on when it is free (no recompute, larger micro-batches, less sharding of the states),
    # not a TP 8 over PCIe that needs less memory and runs far slower
    shape = [np.concatenate([np.broadcast_to(np.asarray(getattr(g[0], f), dtype=float), (len(g[1]),)) for g in groups])
             for f in ("tp", "pp", "vpp", "cp", "ep", "etp") if getattr(groups[0][0], f) is not None]
    same = np.logical_and.reduce([a == a[i] for a in shape])
    lean = int(np.lexsort((step, np.round(np.where(same, mem_bytes, np.inf) / GIB, 1)))[0])
    lg, lrow = _locate([len(g[1]) for g in groups], lean)
    extra |= {"lean_strategy": _one(groups[lg][0], lrow), "lean_mem_gib": float(mem_bytes[lean] / GIB),
              "lean_step_s": float(step[lean])}
    return OptionResult(
        option, system, evaluated, int(len(step)), strategy=chosen, step_s=float(step[i]),
        tokens_per_s=float(t["tokens_per_s"][row]), busy_fraction=float(t["compute"][row] / step[i]),
        mem_gib=float(mem_bytes[i] / GIB), min_mem_gib=min_mem, lower_bound_gib=bound_gib,
        runner_up_step_s=float(np.min(others)) if len(others) else float("nan"), memory_evaluations=computed,
        fastest_step_s=float(step[fastest]), fastest_mem_gib=float(mem_bytes[fastest] / GIB),
        for_headroom=i != fastest, host_gib_per_node=float(host[i] / GIB), **extra,
    )


def _locate(sizes: list[int], i: int) -> tuple[int, int]:
    """(group, row in it) of the i-th strategy of groups of `sizes` laid end to end."""
    for g, n in enumerate(sizes):
        if i < n:
            return g, i
        i -= n
    raise IndexError(i)


def _family(option: HardwareOption) -> tuple:
    """Options that differ only in GPU count: one accelerator, server and (past one node) network."""
    net = option.network.id if option.network is not None and option.count > option.per_node else "*"
    return option.accelerator.id, option.server.id if option.server is not None else None, net


def search_options(model: ModelArch, training: Training, options: list[HardwareOption], cfg: SearchConfig,
                   framework: str = "auto", stack: StackOptions = (),
                   host_base: HostBase | None = None) -> tuple[list[OptionResult], SearchStats]:
    """`search_option` on every option (`stack`: the job's stated stack options); returns results (same order) and
    totals.

    Scaling stop (dominance): options come in ascending GPU count per family; once two larger counts in a row
    shorten the best step by less than the tie fraction, the larger counts of that family are skipped: they
    cost more GPU-hours for a gain inside the model's uncertainty, so they cannot be told to be faster."""
    start = time.perf_counter()
    stats = SearchStats(options=len(options))
    results = []
    cache: MemoryCache = {}
    best: dict[tuple, float] = {}
    strikes: dict[tuple, int] = {}
    for option in options:
        fam = _family(option)
        if strikes.get(fam, 0) >= 2:
            results.append(OptionResult(option, option_system(option), 0, 0,
                                        skipped="more GPUs stopped shortening the step"))
            stats.options_pruned_by_scaling += 1
            continue
        r = search_option(model, training, option, cfg, framework, cache, stack, host_base)
        if r.strategy is not None:
            single = best.get((*fam[:2], "*"), float("inf"))
            so_far = min(best.get(fam, float("inf")), single)
            if r.step_s < so_far / (1.0 + cfg.tie_fraction):
                strikes[fam] = 0
            elif option.count > 1:
                strikes[fam] = strikes.get(fam, 0) + 1
            best[fam] = min(best.get(fam, float("inf")), r.step_s)
        stats.evaluated += r.evaluated
        stats.feasible += r.feasible
        stats.memory_evaluations += r.memory_evaluations
        stats.time_evaluations += r.feasible
        stats.options_pruned_by_memory += r.skipped is not None
        stats.dropped_by_options += r.dropped_by_options
        stats.options_refusal = stats.options_refusal or r.options_refusal
        results.append(r)
    stats.seconds = time.perf_counter() - start
    return results, stats
