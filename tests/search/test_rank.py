from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from trainsizer.search.rank import (
    Scored,
    front_basis,
    objective,
    pareto,
    prefer_cheapest,
    rank,
    roomier_than_cheapest,
    ties,
    value,
)

points = st.lists(st.tuples(st.floats(0.1, 100), st.one_of(st.none(), st.floats(1, 1e6)), st.booleans()),
                  min_size=1, max_size=30)


def _scored(items):
    return [Scored(i, d, c, ok, None) for i, (d, c, ok) in enumerate(items)]


@given(points)
def test_pareto_front_is_exactly_the_undominated(items):
    scored = _scored(items)
    front = pareto(scored)
    ids = {s.index for s in front}
    priced = [s for s in scored if s.cost is not None]
    for s in priced:
        dominated = any(o.train_days <= s.train_days and o.cost <= s.cost and
                        (o.train_days, o.cost) != (s.train_days, s.cost) for o in priced)
        if dominated:
            assert s.index not in ids
    for s in front:
        assert not any(o.train_days < s.train_days and o.cost < s.cost for o in priced)


@given(points)
def test_satisfying_options_rank_first_and_ties_are_close(items):
    scored = _scored(items)
    ranked = rank(scored, "cost_under_deadline")
    flags = [s.satisfies for s in ranked]
    assert flags == sorted(flags, reverse=True)
    tied = ties(ranked, "cost_under_deadline", 0.07)
    if tied and ranked[0].cost is not None:
        assert all(t.cost is not None and t.cost <= ranked[0].cost * 1.07 for t in tied)
    size = {s.index: (1, s.index) for s in scored}
    again = prefer_cheapest(ranked, tied, size)
    assert sorted(s.index for s in again) == sorted(s.index for s in ranked)


@given(st.lists(st.tuples(st.floats(1, 1e6), st.booleans(), st.integers(1, 8)), min_size=1, max_size=20))
def test_a_roomy_tied_option_goes_first(items):
    # the recommended option leaves the GPU memory floor free whenever some tied option does
    scored = [Scored(i, 1.0, c, True, None, roomy=r) for i, (c, r, _) in enumerate(items)]
    ranked = rank(scored, "cost")
    tied = ties(ranked, "cost", 0.07)
    size = {i: (n, 8 * n) for i, (_, _, n) in enumerate(items)}
    out = prefer_cheapest(ranked, tied, size)
    if len(tied) > 1 and any(s.roomy for s in tied):
        assert out[0].roomy
        assert out[0].cost == min(s.cost for s in tied if s.roomy)
    head = out[:len(tied)] if len(tied) > 1 else out[:1]
    assert roomier_than_cheapest(head, size) == (
        len(tied) > 1 and head[0].roomy and any(not s.roomy and (s.cost, size[s.index]) < (head[0].cost, size[head[0].index])
                                                for s in tied))


tie_points = st.lists(st.tuples(st.floats(1.0, 1.06), st.one_of(st.none(), st.floats(100, 107)), st.booleans(),
                                st.integers(1, 16)), min_size=2, max_size=12)


@given(tie_points, st.sampled_from(["cost", "time", "cost_under_deadline", "time_within_budget"]))
def test_the_recommended_tie_is_the_cheapest_roomy_one(items, goal):
    """Among options the model cannot tell apart, the one listed first leaves the memory floor free if any does,
    and of those it costs no more than any other (under a cost goal: it never costs more than the next one);
    unpriced ones follow the priced, the simplest first."""
    scored = [Scored(i, d, c, True, None, roomy=r) for i, (d, c, r, _) in enumerate(items)]
    size = {i: (n, 8 * n) for i, (_, _, _, n) in enumerate(items)}
    ranked = rank(scored, goal)
    tied = ties(ranked, goal, 0.07)
    out = prefer_cheapest(ranked, tied, size)
    if len(tied) < 2:
        return
    first, pool = out[0], [s for s in tied if s.roomy] or tied
    assert first in pool
    assert value(first, "cost") == min(value(s, "cost") for s in pool)
    if first.cost is None:
        assert size[first.index] == min(size[s.index] for s in pool)
    if goal.startswith("cost") and all(s.roomy for s in tied):
        assert value(out[0], "cost") <= value(out[1], "cost")


def test_objective_defaults():
    g = lambda **k: SimpleNamespace(**({"deadline_days": None, "budget": None, "objective": None} | k))  # noqa: E731
    assert objective(g(deadline_days=5)) == "cost_under_deadline"
    assert objective(g(budget=object())) == "time_within_budget"
    assert objective(g()) == "cost"
    assert objective(g(objective="time")) == "time"
    assert objective(g(objective="time", budget=object())) == "time_within_budget"


basis_points = st.lists(st.tuples(st.floats(0.01, 100), st.floats(1, 1e6), st.sampled_from(["rent", "buy"])),
                        min_size=1, max_size=30)


@given(basis_points, st.sampled_from(["rent", "buy"]), st.sampled_from([0.0, 0.07, 0.2]))
def test_the_front_compares_one_cost_basis_and_buys_time_beyond_the_band(items, basis, band):
    """Every point of the front is priced on `basis`; each one that costs more is faster than every cheaper point
    by more than `band`; an option of that basis left off has a point no dearer and not `band` slower."""
    scored = [Scored(i, d, c, None, None, basis=b) for i, (d, c, b) in enumerate(items)]
    front = pareto(scored, basis, band)
    assert all(s.basis == basis for s in front)
    for fast, slow in zip(front, front[1:], strict=False):  # fastest first: dearer, and faster beyond the band
        assert fast.cost >= slow.cost and fast.train_days * (1.0 + band) < slow.train_days
    ids = {s.index for s in front}
    for s in scored:
        if s.basis == basis and s.index not in ids:
            assert any(f.cost <= s.cost and s.train_days * (1.0 + band) >= f.train_days for f in front)


def test_the_front_basis_is_the_best_ranked_priced_options():
    ranked = [Scored(0, 1.0, None, None, None), Scored(1, 2.0, 5.0, None, None, basis="rent"),
              Scored(2, 0.5, 9e6, None, None, basis="buy")]
    assert front_basis(ranked) == "rent" and front_basis(ranked[:1]) is None
