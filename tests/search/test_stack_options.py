"""The job's stated stack options carried into every strategy the search tries (search.engine), the layouts they do
not hold on left out and counted, and what estimate / plan say (known-gaps 43 (q))."""

from __future__ import annotations

import json

import pytest
import yaml

from trainsizer.catalog import load_catalog
from trainsizer.scenario import resolve_job
from trainsizer.search import load_config, search_option
from trainsizer.search.candidates import HardwareOption

SMALL = {"model": "llama-3.1-8b", "data": {"tokens": 1.0e9}, "seq_len": 4096, "global_batch": {"sequences": 64},
         "hardware": {"accelerator": "h100-sxm-80gb", "count": 8}}
MOE = {**SMALL, "model": "qwen3-30b-a3b", "hardware": {"accelerator": "h200-sxm-141gb", "count": 8}}


def _option(job):
    sc = resolve_job(job, load_catalog())
    s = sc.system
    opt = HardwareOption(accelerator=sc.accelerator, server=None, per_node=s.gpus_per_node, count=s.gpus,
                         network=sc.network, fabric=None)
    return sc, opt


def test_stated_options_reach_every_strategy_and_move_the_figures():
    """torchtitan with compile_loss false: the chosen strategy carries it, and the loss outside the compiled graph
    costs time (torchtitan's CompileConfig components without "loss")."""
    sc, opt = _option(SMALL)
    compiled = (("torch_compile", True),)  # torchtitan runs eager unless asked: compile_loss splits a compiled run
    plain = search_option(sc.model, sc.training, opt, load_config(), "torchtitan", options=compiled)
    carried = search_option(sc.model, sc.training, opt, load_config(), "torchtitan",
                            options=(*compiled, ("compile_loss", False)))
    assert plain.strategy.compile_loss is None and carried.strategy.compile_loss is False
    assert carried.step_s > plain.step_s or carried.mem_gib > plain.mem_gib
    assert carried.dropped_by_options == 0 and carried.options_refusal is None


def test_an_option_that_holds_on_some_layouts_leaves_the_others_out_and_says_why():
    """Megatron-Core's EP all-to-all overlap needs EP, no full recompute and, under PP, interleaving: the layouts
    without them are left out (counted, the first one's rule kept), the chosen one runs EP."""
    sc, opt = _option(MOE)
    plain = search_option(sc.model, sc.training, opt, load_config(), "megatron-core")
    r = search_option(sc.model, sc.training, opt, load_config(), "megatron-core",
                      options=(("moe_a2a_overlap", True),))
    assert r.strategy is not None and r.strategy.ep > 1 and r.strategy.moe_a2a_overlap is True
    assert 0 < r.dropped_by_options < r.evaluated and r.options_refusal[0].startswith("moe_a2a_overlap")
    assert r.feasible < plain.feasible and plain.dropped_by_options == 0
    assert r.step_s < plain.step_s  # the all-to-all beside another micro-batch's compute


def _write(tmp_path, job):
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    return str(path)


def test_estimate_searches_a_stack_stated_with_options(run_cli, tmp_path):
    """A strategy of stack options without a layout was estimated at DP8 without ZeRO (43 (p)); it is searched now,
    on that stack, the options in the layout chosen, and the note names them (en / zh)."""
    job = {**SMALL, "strategy": {"framework": "torchtitan", "compile_loss": False, "attention_kernel": "sdpa"}}
    code, out, err = run_cli("estimate", _write(tmp_path, job), "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["memory"]["fits"] and result["framework"]["assumed"] == "torchtitan"
    said = [n for n in result["notes"] if n.startswith("the job's strategy states attention_kernel sdpa, compile_loss "
                                                       "false (framework torchtitan) but no layout: using")]
    assert len(said) == 1, result["notes"]
    assert not any("but no layout (tp" in n for n in result["notes"])
    code, out, err = run_cli("estimate", _write(tmp_path, job), "--lang", "zh")
    flat = "".join(out.split())  # the table wraps the note
    assert code == 0 and "设定了attention_kernelsdpa,compile_lossfalse（框架torchtitan），但未给并行布局" in flat, err


def test_estimate_says_which_layouts_an_option_left_out(run_cli, tmp_path):
    job = {**MOE, "strategy": {"framework": "megatron-core", "moe_a2a_overlap": True}}
    code, out, err = run_cli("estimate", _write(tmp_path, job), "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["job"]["strategy"]["ep"] > 1
    assert any("were left out because a stated stack option does not hold on them" in n for n in result["notes"])


@pytest.mark.parametrize("command", ["estimate", "plan"])
def test_options_that_hold_on_no_layout_are_refused_with_their_rule(run_cli, tmp_path, command):
    """compile_loss is torchtitan's: on Megatron-Core no layout runs it, so the search has nothing to offer and says
    which rule, as a stated layout would be refused; never 'nothing fits'."""
    job = {**SMALL, "strategy": {"framework": "megatron-core", "compile_loss": False}}
    code, _, err = run_cli(command, _write(tmp_path, job))
    assert code == 2 and "compile_loss" in err and "Traceback" not in err, err
    assert "fits" not in err


def test_plan_carries_the_options_and_says_so(run_cli, tmp_path):
    job = {**SMALL, "strategy": {"framework": "torchtitan", "compile_loss": False, "tp": 2}}
    code, out, err = run_cli("plan", _write(tmp_path, job), "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["search"]["stack_options"] == {"compile_loss": False}
    assert plan["search"]["layouts_dropped_by_stack_options"] == 0
    assert any(n == "the job's stack options are kept in every layout searched: compile_loss false"
               for n in plan["notes"])
    layout = [n for n in plan["notes"] if n.startswith("the job's layout (")]
    assert layout == ["the job's layout (tp) is not used: the plan searches every valid layout of its stack "
                      "(see `estimate` for the job's own)"]
    code, out, err = run_cli("plan", _write(tmp_path, job), "--lang", "zh")
    assert code == 0 and "作业设定的框架选项在搜索的每个布局中保留：compile_loss false" in out, err


def test_a_stack_stated_without_hardware_is_the_plans_to_search():
    """A strategy of the framework and stack options needs no hardware (the plan searches it); a layout field does."""
    from trainsizer.errors import SpecError

    bare = {k: v for k, v in SMALL.items() if k != "hardware"}
    sc = resolve_job({**bare, "strategy": {"framework": "torchtitan", "compile_loss": False}}, load_catalog())
    assert sc.system is None
    with pytest.raises(SpecError, match="strategy given without hardware"):
        resolve_job({**bare, "strategy": {"framework": "torchtitan", "compile_loss": False, "tp": 2}}, load_catalog())
    with pytest.raises(SpecError, match="strategy"):
        resolve_job({**bare, "hardware": {"count": 8}, "strategy": {"tp": 2}}, load_catalog())
    resolve_job({**bare, "hardware": {"count": 8}, "strategy": {"attention_kernel": "sdpa"}}, load_catalog())
