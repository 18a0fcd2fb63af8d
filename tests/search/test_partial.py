"""The search's partial full recompute (search/partial.py): Megatron's block method tried where full recompute is
needed for memory, every N judged, the smallest that fits kept."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from trainsizer.catalog import load_catalog
from trainsizer.estimate import evaluate_batch
from trainsizer.estimate.inputs import Strategy
from trainsizer.estimate.memory import GIB
from trainsizer.scenario import resolve_job
from trainsizer.search import Pins, hardware_candidates, load_config, search_option
from trainsizer.search.config import leaves_floor
from trainsizer.search.engine import option_system
from trainsizer.search.partial import candidate_rows, every_n

# 70B full SFT at 8K tokens on 16 H20 (96 GB): no layout fits without recompute, so the search's best re-runs layers
SFT = {"model": "llama-3.1-70b", "method": "full", "data": {"tokens": 1e9}, "seq_len": 8192,
       "global_batch": {"tokens": 4194304},
       "hardware": {"accelerator": "h20", "count": 16, "network": "ib-ndr400"}}


def _option(job: dict):
    cat = load_catalog()
    sc = resolve_job(job, cat)
    h = job["hardware"]
    cands = hardware_candidates(sc, cat, Pins(accelerator=h["accelerator"], count=h["count"]),
                                {"exclude": set(), "include": None}, load_config())
    return sc, cands.options[0]


@given(st.lists(st.integers(1, 40), min_size=1, max_size=6))
def test_every_n_lists_one_to_chunk_minus_one_per_layout(chunks):
    idx, n = every_n(np.array(chunks, dtype=float))
    for k, c in enumerate(chunks):
        assert n[idx == k].tolist() == list(range(1, c))


def test_candidates_are_full_rows_whose_none_and_selective_twins_do_not_fit():
    rec = np.array([0, 1, 2] * 4, dtype=float)
    fits = np.array([0, 0, 1,  1, 1, 1,  0, 1, 1,  0, 0, 0], dtype=bool)
    rows = candidate_rows(Strategy(recompute=rec), fits)
    assert rows.tolist() == [2]  # layout 2: none fits; layout 3: selective fits; layout 4: full does not fit


def test_the_search_re_runs_only_the_layers_memory_needs():
    sc, option = _option(SFT)
    cfg = load_config()
    r = search_option(sc.model, sc.training, option, cfg)
    s = r.strategy
    assert s.recompute == "full" and s.recompute_method == "block"
    assert 1 <= s.recompute_num_layers < r.chunk_layers
    assert r.step_s < r.full_recompute_step_s  # fewer layers re-run: a shorter step than re-running all
    system = option_system(option)
    cap = system.memory_gib * GIB
    fewer = evaluate_batch(sc.model, sc.training, system, s.with_(recompute_num_layers=s.recompute_num_layers - 1),
                           parts=("valid", "memory"), threads=1)
    mine = evaluate_batch(sc.model, sc.training, system, s, threads=1)
    assert bool(mine["fits"]) and float(mine["step_s"]) == r.step_s
    roomy = bool(leaves_floor(float(mine["mem_bytes"]), cap))
    # one layer fewer re-run does not fit (or, where the chosen one leaves the memory floor free, does not leave it)
    assert not fewer["fits"] or (roomy and not leaves_floor(float(fewer["mem_bytes"]), cap))
    none = evaluate_batch(sc.model, sc.training, system, s.with_(recompute="none", recompute_method=None,
                                                                 recompute_num_layers=None), threads=1)
    assert not none["fits"]
    # the plan says so, in either language, with the layout label naming the method and N
    from trainsizer.layout_text import layout_in
    from trainsizer.plan.explain import _layout_headroom

    n, chunk = s.recompute_num_layers, r.chunk_layers
    assert f"full recompute (block, {n} layers per chunk)" in layout_in(s, "en")
    assert f"完全重计算（block，每个模型分块 {n} 层）" in layout_in(s, "zh")
    assert f"first {n} of each model chunk's {chunk} layers" in _layout_headroom(r, "en")
    assert f"{chunk} 层中只重计算前 {n} 层" in _layout_headroom(r, "zh")


def test_partial_recompute_is_not_tried_where_no_layout_needs_full_recompute():
    sc, option = _option(SFT | {"seq_len": 2048, "global_batch": {"sequences": 256},
                                "hardware": {"accelerator": "h200-sxm-141gb", "count": 64,
                                             "network": "ib-ndr400"}})
    r = search_option(sc.model, sc.training, option, load_config())
    assert r.strategy.recompute_method is None and r.strategy.recompute != "full"
