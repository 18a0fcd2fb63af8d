"""The plan's terminal tables (render/plan_view.py)."""

from __future__ import annotations

import pytest

from trainsizer.render.plan_view import _past_top_note


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ranks_listed_past_the_top_are_explained(lang: str) -> None:
    """'#22' printed under '#10' without a word: the plan lists the Pareto front (and ties) past its top ranks."""
    options = [{"rank": r} for r in (1, 2, 3, 22, 40)]
    note = _past_top_note(options, lang)
    assert note is not None and ("#22, #40" if lang == "en" else "#22、#40") in note and "3" in note
    assert ("Pareto" if lang == "en" else "帕累托") in note


def test_a_contiguous_table_needs_no_note() -> None:
    assert _past_top_note([{"rank": r} for r in (1, 2, 3)], "en") is None
    assert _past_top_note([], "zh") is None


def test_tied_options_are_listed_with_the_chinese_list_mark(run_cli) -> None:
    """The ties line joined names with the clause comma '，' (list_sep); a list of names takes '、'."""
    from conftest import REPO

    code, out, err = run_cli("--lang", "zh", "plan", str(REPO / "examples" / "sft-70b-search.yaml"))
    assert code == 0, err
    line = next(ln for ln in out.splitlines() if ln.startswith("持平方案"))
    assert "、" in line and "，" not in line.split("：", 1)[1], line


@pytest.mark.parametrize(("days", "shown"), [("1", "(1 day, "), ("3", "(3 days, ")])
def test_a_one_day_deadline_reads_in_the_singular(run_cli, days, shown) -> None:
    from conftest import REPO

    code, out, err = run_cli("plan", str(REPO / "examples" / "qlora-7b-one-gpu.yaml"), "--deadline-days", days)
    assert code == 0, err
    goal = next(ln for ln in out.splitlines() if ln.startswith("Goal:"))
    assert shown in goal, goal


def test_a_converted_pareto_point_says_so() -> None:
    """The Pareto table gave a CNY-only part's cost in the plan's USD without the 'converted' the options table
    and the cost line carry (known-gaps 55 (a))."""
    from io import StringIO

    from rich.console import Console

    from trainsizer.render.plan_view import _pareto_table

    o = {"id": "h800 x8", "cost": {"currency": "CNY", "rent": {"low": 9.0, "mid": 10.0, "high": 11.0, "currency": "CNY"}},
         "score": {"metric": "cost", "cost_basis": "rent", "cost": 1.393, "currency": "USD"}}
    plan = {"goal": {"procurement": "rent"}, "options": [o],
            "pareto": [{"id": "h800 x8", "train_days": 2.0, "cost": 1.393, "currency": "USD", "cost_basis": "rent"}]}
    con = Console(file=StringIO(), width=200)
    con.print(_pareto_table(plan, "en"))
    assert "(rent, converted)" in con.file.getvalue()
    o["score"]["currency"], o["score"]["cost"] = "CNY", 10.0
    con = Console(file=StringIO(), width=200)
    con.print(_pareto_table(plan, "en"))
    assert "converted" not in con.file.getvalue() and "(rent)" in con.file.getvalue()



@pytest.mark.parametrize("lang,words", [("en", "Likely error"), ("zh", "可能误差")])
def test_the_recommended_option_shows_its_accuracy_band(run_cli, lang, words):
    """The plan prints the held-out band of the recommended option's class (the estimate's accuracy line)."""
    from conftest import REPO

    code, out, err = run_cli("--lang", lang, "plan", str(REPO / "examples" / "sft-70b-16gpu.yaml"))
    assert code == 0, err
    flat = " ".join(out.split())
    assert words in flat and "hf/dense/hopper/multi" in flat
