"""`trainsizer plan`: tables, --json, --out/--force, overrides, and bad input as one paragraph + exit 2."""

from __future__ import annotations

import json

import pytest
import yaml

from conftest import REPO

SEARCH = str(REPO / "examples" / "sft-70b-search.yaml")
QLORA = str(REPO / "examples" / "qlora-7b-one-gpu.yaml")


def _job(tmp_path, **changes):
    data = yaml.safe_load((REPO / "examples" / "qlora-7b-one-gpu.yaml").read_text(encoding="utf-8"))
    data.pop("strategy")
    data.pop("hardware")
    for key, value in changes.items():
        data[key] = value
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return str(path)


def test_json_and_tables(run_cli):
    code, out, err = run_cli("plan", QLORA, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["schema_version"].startswith("1.")
    assert data["recommended"]["hardware"]["accelerator"] == "rtx-4090"
    code, out, _ = run_cli("--lang", "zh", "plan", QLORA)
    assert code == 0 and "推荐" in out and "rtx-4090 x1" in out
    code, out, _ = run_cli("--lang", "en", "plan", QLORA)
    assert code == 0 and "Recommended" in out


def test_out_never_overwrites_without_force(run_cli, tmp_path):
    target = tmp_path / "plan.json"
    code, _, err = run_cli("plan", QLORA, "--out", str(target))
    assert code == 0, err
    first = json.loads(target.read_text(encoding="utf-8"))
    assert first["recommended"]["hardware"]["count"] == 1
    target.write_text("keep", encoding="utf-8")
    code, _, err = run_cli("plan", QLORA, "--out", str(target))
    assert code == 2 and "--force" in err and "Traceback" not in err
    assert target.read_text(encoding="utf-8") == "keep"
    code, _, err = run_cli("plan", QLORA, "--out", str(target), "--force")
    assert code == 0 and json.loads(target.read_text(encoding="utf-8"))["schema_version"]


def test_overrides_pin_and_constrain(run_cli, tmp_path):
    job = _job(tmp_path)
    code, out, err = run_cli("plan", job, "--accelerator", "h100-sxm-80gb", "--max-nodes", "1", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert {o["accelerator"] for o in data["hardware_options"]} == {"h100-sxm-80gb"}
    assert all(o["nodes"] == 1 for o in data["hardware_options"])
    code, out, _ = run_cli("plan", job, "--count", "2", "--top", "3", "--json")
    data = json.loads(out)
    assert code == 0 and {o["count"] for o in data["hardware_options"]} == {2}
    assert len(data["options"]) >= min(3, len(data["hardware_options"]))


@pytest.mark.parametrize(("args", "changes", "needle"), [
    ((), {"constraints": {"include": ["h100-sxm-80gbb"]}}, "constraints.include[0]"),
    (("--budget", "-5"), {}, "goal.budget.amount"),
    (("--deadline-days", "0"), {}, "goal.deadline_days"),
    ((), {"goal": {"deadline_days": 0}}, "goal.deadline_days"),
    (("--accelerator", "h100x"), {}, "accelerator"),
    (("--top", "0"), {}, "--top"),
])
def test_bad_input_is_one_paragraph_and_exit_2(run_cli, tmp_path, args, changes, needle):
    job = _job(tmp_path, **changes)
    code, out, err = run_cli("plan", job, *args)
    assert code == 2
    assert needle in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_pins_that_leave_no_option_explain_themselves(run_cli, tmp_path):
    code, out, err = run_cli("plan", _job(tmp_path), "--accelerator", "h100-sxm-80gb", "--count", "12", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["recommended"] is None and data["binding"]["constraint"] == "constraints"
    assert "whole number of nodes" in data["binding"]["detail"]


def test_options_table_marks_a_layout_short_of_the_memory_floor(plan_of):
    """An option whose best layout leaves less than the floor free is marked '!' with the reason under the table,
    in either language; an option that keeps it is not."""
    from rich.console import Console

    from trainsizer.render.plan_view import print_plan

    plan = plan_of(str(REPO / "examples" / "sft-70b-search.yaml")).model_dump(mode="json")
    for short in (False, True):
        p = {**plan, "options": [{**o, "leaves_memory_floor": not (short and i == 1)}
                                 for i, o in enumerate(plan["options"])]}
        for lang, word in (("en", "! its layout leaves less than"), ("zh", "! 其并行策略的显存余量不足")):
            con = Console(record=True, width=200)
            print_plan(p, lang, con)
            out = con.export_text()
            assert (word in out) == short
            assert (f"{p['options'][1]['memory']['per_gpu_gib']:.1f} !" in out) == short


def test_the_pinned_hardware_note_is_a_list_in_the_readers_punctuation(run_cli):
    code, out, err = run_cli("--lang", "zh", "plan", QLORA, "--count", "1", "--accelerator", "l40s")
    assert code == 0, err
    assert "accelerator=l40s、count=1" in out and "l40s, count" not in out
    code, out, _ = run_cli("plan", QLORA, "--count", "1", "--accelerator", "l40s")
    assert "accelerator=l40s, count=1" in out


def test_the_search_line_counts_options_in_english_grammar(run_cli):
    code, out, _ = run_cli("plan", QLORA)
    assert code == 0 and " on 1 hardware option (" in out and "option(s)" not in out


def test_the_recommended_options_own_notes_are_printed_as_the_report_lists_them(run_cli):
    """The recommended option's notes (its estimate's: a dated price, an uneven pipeline split, the attention rate
    assumed) were in the JSON and the report but not in the CLI's tables; each is printed once."""
    code, out, err = run_cli("plan", QLORA, "--json")
    assert code == 0, err
    data = json.loads(out)
    own = [n for n in data["recommended"]["notes"] if n not in data["notes"]]
    assert own, "the example's option has notes of its own (a dated purchase price)"
    code, out, _ = run_cli("plan", QLORA)
    lines = " ".join(out.split())
    for note in own:
        assert " ".join(note.split())[:60] in lines
    assert lines.count(" ".join(own[0].split())[:60]) == 1


@pytest.mark.parametrize(("lang", "same"), [("en", "as long as the plan's best"), ("zh", "与方案最佳相同")])
def test_the_jobs_own_strategy_as_fast_as_the_plans_is_said_so(run_cli, tmp_path, lang, same):
    """The QLoRA example's own layout times as the plan's best: it read '(the job's takes +0% as long)' (55 (k)).
    PEFT's fp32 stream stated (kbit_upcast true, the figures this was set on; unstated, hf's 16-bit stream fits
    without the example's full recompute, so the plan's best is faster: docs/known-gaps.md 258 (a))."""
    data = yaml.safe_load((REPO / "examples" / "qlora-7b-one-gpu.yaml").read_text(encoding="utf-8"))
    data["strategy"] = {**data["strategy"], "kbit_upcast": True}
    path = tmp_path / "qlora.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    code, out, err = run_cli("--lang", lang, "plan", str(path))
    assert code == 0, err
    lines = "".join(out.split())
    assert "".join(same.split()) in lines and "+0%" not in lines
