"""MoE peaks predicted low, row by row (docs/known-gaps.md 292): the megatron/moe and hf/moe memory rows of
accuracy_bands (held out, nothing fitted here, no estimate figure), each with what it misses in GiB a GPU, the kind of
figure it is (the device's use, the caching allocator's reserve or its allocated peak), what the job says about
recompute and expandable segments, and beside it the size of each candidate read in the frameworks' code:

- rerun: where the job recomputes, the estimate's peak without recompute less its peak as written (the bracket a
  recompute that kept more than it says would fall in; the miss as a share of it);
- dispatcher state: Megatron-Core's alltoall dispatcher keeps on each MoE layer's own object, from that layer's
  forward to its next (its recompute under full recompute), the routing probabilities, the routing map and the
  permutation's reversed mapping (token_dispatcher.py dispatch_preprocess / token_permutation at core_v0.13.0:
  self.probs, self.routing_map, self.reversed_local_input_permutation_mapping); megatron rows under full recompute;
- first-step states: optimizer states made lazily by the first step (torch.optim and Transformer Engine's / apex's
  FusedAdam create them in step 1) land in the blocks the first backward freed; without expandable segments the next
  forward can find at most that freed transient less the states unusable (the caching allocator's best fit, rules in
  estimate/allocator.py), so the reserve gains at most max(0, transient - states): an upper bound, 0 under
  expandable segments;
- communicators: for figures that count the whole device (mem_get_info, nvidia-smi), the RCCL per-rank figure
  measured on LUMI (Lumi-supercomputer/LUMI-AI-Guide issue 111, 2026-08-19: about 1 GiB for the first communicator
  and 0.65 GiB for each further one, MI250X) over the estimate's communicator count, less the estimate's own
  nccl_buffers (estimate/communicators.py, docs/known-gaps.md 299 (a)). A lead, not a constant: one machine, one
  fabric.
- transient reserve: for figures that count the caching allocator's reserve (max_memory_reserved, the device) without
  expandable segments, a published Megatron-Core MoE run's reserve over its step's transient bytes (Megatron-LM's
  fine-grained activation offloading README at 7d867ab: a DeepSeek-V3 proxy on H100 at PP 4 x EP 16, 'after 10
  iterations', max reserved less max allocated over max allocated less the allocated between steps: 22.5 / 19.6 /
  25.0% on the three stages without the loss, 42.6% on the last) at its median, less what the estimate already holds
  reserved beyond the allocated peak (fragmentation and the allocator's segments): a ratio read on one run, a lead
  (docs/known-gaps.md 307 (c)).

Printed: every row (error, miss GiB, kind, TP / EP / recompute / expandable segments, the candidates), the median miss
by class and kind, per candidate the rows where it reaches half the miss, and each class's memory MAPE with the
transient reserve added (a what-if; nothing applied).

Sign: miss = measured - predicted GiB (+ = predicted too small).

Run: python benchmarks/moe_memory_gaps.py
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from accuracy_bands import DATA, Row, _case_style, _heldout_style, classify
from trainsizer.catalog import load_catalog
from trainsizer.estimate.allocator import EXPANDABLE_BY_DEFAULT
from trainsizer.estimate.memory import CACHED_ONLY_ITEMS, GIB, estimate_memory
from trainsizer.scenario import resolve_job

CLASSES = ("megatron/moe", "hf/moe")
# RCCL on LUMI (MI250X), LUMI-AI-Guide issue 111 (2026-08-19): GiB a rank for the first communicator, each further one
RCCL_FIRST_GIB, RCCL_NEXT_GIB = 1.0, 0.65
# bytes a token of the alltoall dispatcher's per-layer state: probabilities (fp32 under moe_router_dtype fp32, Megatron-
# SWIFT's default; the job states no router dtype, so the wider is sized), the bool routing map (a byte an expert), and
# the int64 reversed mapping (one per routed slot)
PROBS_BYTES, MAP_BYTES, INDEX_BYTES = 4.0, 1.0, 8.0
# the DeepSeek-V3 proxy's reserve over its transient part, median of the three stages without the loss (module
# docstring; docs/known-gaps.md 307 (c)): (74,306 - 65,203.9) / (65,203.9 - 24,761.0), (58,770 - 52,228.2) /
# (52,228.2 - 18,907.7), (51,772 - 45,200.8) / (45,200.8 - 18,907.8) MB
TRANSIENT_RESERVE_FRACTION = 0.225
# the model states, what lives outside the allocator and the fragmentation allowance: not transient
STATIC_ITEMS = ("weights", "base_weights_frozen", "gradients", "grad_accum_buffer", "master_weights",
                "optimizer_states", "lora_adapters", "fsdp_unsharded_grads", "reference_model", "cuda_context",
                "nccl_buffers", "fragmentation", "quant_constants", "fp8_weight_cache")


@dataclass
class Gap:
    """One MoE memory row: its accuracy_bands row, class, kind of figure (Row.figure), miss (GiB a GPU), the estimate's peak without
    recompute less its peak as written (GiB; 0 without recompute) and the candidates' GiB."""

    row: Row
    cls: str
    kind: str
    miss_gib: float
    rerun_gib: float
    candidates: dict[str, float]


# candidates that are upper bounds (a row whose bound is under half its miss is not explained by it), sizes, and a
# published ratio (reported, not asserted away)
BOUNDS = ("first-step states",)
SIZES = ("dispatcher state", "communicators")
RATIOS = ("transient reserve",)


def collect() -> list[tuple[Row, tuple[str, ...]]]:
    """(row, class keys) of the six benchmarks that hold the MoE memory rows, through accuracy_bands' own builders and
    classifier."""
    import perf_heldout as ph
    import perf_heldout30 as h30
    import perf_heldout43 as h43
    import perf_heldout44 as h44
    import perf_heldout61 as h61
    import perf_heldout66 as h66
    import perf_heldout68 as h68

    rows = _heldout_style("perf_heldout30", h30.run_all(), ph.model_data(ph.MODELS))
    rows += _heldout_style("perf_heldout68", h68.run_all(), h68.models())
    for name, mod in (("perf_heldout43", h43), ("perf_heldout44", h44), ("perf_heldout61", h61),
                      ("perf_heldout66", h66)):
        rows += _case_style(name, mod.cases(), mod.rows(), mod.job)
    return [(r, keys) for r, keys in classify(rows) if r.quantity == "memory" and any(c in keys for c in CLASSES)]


def _estimate(job: dict[str, Any], catalog) -> Any:
    sc = resolve_job(job, catalog)
    return sc, estimate_memory(sc.model, sc.training, sc.system, sc.strategy, check=False)


def rerun_gib(job: dict[str, Any], catalog) -> float:
    """The estimate's peak with recompute none less its peak as the job writes it, GiB a GPU (0 without recompute)."""
    if (job.get("strategy") or {}).get("recompute", "none") == "none":
        return 0.0
    bare = copy.deepcopy(job)
    bare["strategy"]["recompute"] = "none"
    return (_estimate(bare, catalog)[1].per_gpu_bytes - _estimate(job, catalog)[1].per_gpu_bytes) / GIB


def dispatcher_state_gib(model, tokens: float, moe_layers: float) -> float:
    """GiB the alltoall dispatcher's per-layer state holds over `moe_layers` MoE layers of `tokens` tokens a GPU:
    probabilities and routing map a token and expert, one index a routed slot (module docstring)."""
    per_token = model.experts * (PROBS_BYTES + MAP_BYTES) + INDEX_BYTES * model.experts_per_token
    return tokens * moe_layers * per_token / GIB


def transient_bytes(items: dict[str, float]) -> float:
    """The peak's transient bytes: everything but the model states, what lives outside the allocator and the
    fragmentation allowance (STATIC_ITEMS)."""
    return sum(v for k, v in items.items() if k not in STATIC_ITEMS)


def first_step_bound_gib(items: dict[str, float], expandable: bool) -> float:
    """Upper bound of the reserve the first step's lazily made optimizer states leave unusable (module docstring):
    the peak's transient bytes less the optimizer states, GiB; 0 under expandable segments."""
    if expandable:
        return 0.0
    return max(0.0, transient_bytes(items) - items.get("optimizer_states", 0.0)) / GIB


def transient_reserve_gib(items: dict[str, float], expandable: bool, kind: str) -> float:
    """The published reserve ratio over the peak's transient bytes less what the estimate already holds reserved
    (fragmentation, the allocator's segments), GiB, at least 0; 0 for an allocated figure or under expandable
    segments (module docstring)."""
    if expandable or kind == "allocated":
        return 0.0
    held = sum(items.get(k, 0.0) for k in CACHED_ONLY_ITEMS)
    tensors = transient_bytes(items) - (held - items.get("fragmentation", 0.0))
    return max(0.0, TRANSIENT_RESERVE_FRACTION * tensors - held) / GIB


def communicators_gib(items: dict[str, float], n_comm: int) -> float:
    """The LUMI RCCL figure over `n_comm` communicators less the estimate's own nccl_buffers, GiB (0 with none)."""
    if n_comm <= 0:
        return 0.0
    return RCCL_FIRST_GIB + RCCL_NEXT_GIB * (n_comm - 1) - items.get("nccl_buffers", 0.0) / GIB


def communicator_count(st) -> int:
    """The job's communicators as the estimate counts them: one per parallel dimension of more than one rank."""
    return sum(int((getattr(st, k, 1) or 1) > 1) for k in ("tp", "pp", "dp", "cp", "ep"))


def candidates(row: Row, kind: str, catalogs: dict[str, Any]) -> dict[str, float]:
    """Each candidate's GiB a GPU for one row (module docstring)."""
    if row.overlay not in catalogs:
        catalogs[row.overlay] = load_catalog([DATA / row.overlay] if row.overlay else [])
    cat = catalogs[row.overlay]
    sc, est = _estimate(row.job, cat)
    st = sc.strategy
    items = dict(est.items_bytes)
    stated = getattr(st, "allocator_expandable_segments", None)
    expandable = bool(stated) if stated is not None else st.framework in EXPANDABLE_BY_DEFAULT
    megatron_full = (row.job["strategy"].get("framework") == "megatron-core"
                     and row.job["strategy"].get("recompute") == "full")
    tokens = float(sc.training.seq_len) * float(st.micro_batch) / max(float(st.cp or 1), 1.0)
    moe_layers = sc.model.moe_layer_count / max(float(st.pp or 1), 1.0)
    return {"dispatcher state": dispatcher_state_gib(sc.model, tokens, moe_layers) if megatron_full else 0.0,
            "first-step states": first_step_bound_gib(items, expandable),
            "communicators": communicators_gib(items, communicator_count(st)) if kind == "device" else 0.0,
            "transient reserve": transient_reserve_gib(items, expandable, kind)}


def gaps() -> list[Gap]:
    """Every MoE memory row with its miss, rerun bracket and candidates, most negative error first."""
    catalogs: dict[str, Any] = {}
    out = []
    for row, keys in collect():
        kind = row.figure
        cls = next(c for c in CLASSES if c in keys)
        cand = candidates(row, kind, catalogs)
        out.append(Gap(row, cls, kind, row.measured - row.predicted, rerun_gib(row.job, catalogs[row.overlay]), cand))
    return sorted(out, key=lambda g: g.row.err)


def by_kind(gs: list[Gap]) -> list[tuple[str, str, int, float, float]]:
    """(class, kind, rows, median miss GiB, median signed error %) per class and kind."""
    groups: dict[tuple[str, str], list[Gap]] = {}
    for g in gs:
        groups.setdefault((g.cls, g.kind), []).append(g)
    return [(c, k, len(v), float(np.median([g.miss_gib for g in v])), 100.0 * float(np.median([g.row.err for g in v])))
            for (c, k), v in sorted(groups.items())]


def with_candidate(gs: list[Gap], name: str) -> list[tuple[str, int, float, float]]:
    """(class, rows, memory MAPE %, MAPE % with candidate `name`'s GiB added to each row's prediction) per class."""
    out = []
    for c in CLASSES:
        sub = [g for g in gs if g.cls == c]
        before = [abs(g.row.err) for g in sub]
        after = [abs((g.row.predicted + g.candidates[name]) / g.row.measured - 1.0) for g in sub]
        out.append((c, len(sub), 100.0 * float(np.mean(before)), 100.0 * float(np.mean(after))))
    return out


def reaching(gs: list[Gap], name: str, share: float = 0.5) -> list[str]:
    """Rows (with a positive miss) a size candidate reaches `share` of the miss on, or, for a bound (BOUNDS), rows
    whose bound stays under `share` of it: rows the bound rules out as the main part."""
    if name in BOUNDS:
        return [g.row.row_id for g in gs if g.miss_gib > 0 and g.candidates[name] < share * g.miss_gib]
    return [g.row.row_id for g in gs if g.miss_gib > 0 and g.candidates[name] >= share * g.miss_gib]


def main() -> None:
    gs = gaps()
    print("MoE memory rows (megatron/moe, hf/moe): error, measured - predicted GiB a GPU, the figure's kind, the job's "
          "TP / EP / recompute / expandable segments; then each candidate's GiB and, under recompute, the miss as a "
          "share of the estimate's peak without recompute less its peak (docs/known-gaps.md 292):")
    for g in gs:
        st = g.row.job.get("strategy") or {}
        cand = ", ".join(f"{k} {v:.1f}" for k, v in g.candidates.items())
        share = f"; miss {g.miss_gib / g.rerun_gib:.0%} of rerun {g.rerun_gib:.1f}" if g.rerun_gib > 0 else ""
        print(f"  {100 * g.row.err:+6.1f}%  miss {g.miss_gib:+5.1f}  {g.cls:12s} {g.kind:9s} "
              f"tp {st.get('tp', 1)} ep {st.get('ep', 1)} {st.get('recompute', 'none'):9s} "
              f"exp.seg {st.get('allocator_expandable_segments', '-')!s:5s}  {g.row.row_id}")
        print(f"           {cand}{share}")
    print("median miss by class and kind of figure:")
    for c, k, n, miss, err in by_kind(gs):
        print(f"  {c:12s} {k:9s} n={n:2d}  miss {miss:+5.1f} GiB  median {err:+6.1f}%")
    missed = sum(g.miss_gib > 0 for g in gs)
    for name in SIZES:
        hit = reaching(gs, name)
        print(f"{name}: reaches half the miss on {len(hit)} of {missed} rows: {', '.join(hit) or '-'}")
    for name in BOUNDS:
        out = reaching(gs, name)
        print(f"{name} (an upper bound): under half the miss on {len(out)} of {missed} rows: {', '.join(out) or '-'}")
    for name in RATIOS:
        hit = reaching(gs, name)
        print(f"{name} (a published ratio, 307 (c)): reaches half the miss on {len(hit)} of {missed} rows: "
              f"{', '.join(hit) or '-'}")
        for c, n, before, after in with_candidate(gs, name):
            print(f"  {c:12s} n={n:2d}  memory MAPE {before:5.1f}% -> {after:5.1f}% with it added (a what-if)")


if __name__ == "__main__":
    main()
