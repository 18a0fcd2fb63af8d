"""moe_dispatcher flex (DeepEP / HybridEP) by the part's vendor (validate.FLEX_DISPATCHER_VENDORS, known-gaps 43 (t)):
NVIDIA parts on any stack that has the dispatcher; AMD parts only under Megatron-Core, where Primus's Megatron-LM
backend runs Primus-Turbo's DeepEP port; the search leaves the other AMD layouts out, counted, and says why (en / zh)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import StrategyError
from trainsizer.estimate.validate import check_strategy
from trainsizer.messages import tr
from trainsizer.scenario import resolve_job
from trainsizer.search import load_config, search_option
from trainsizer.search.candidates import HardwareOption

CAT = load_catalog()
MOE = {"model": "qwen3-30b-a3b", "data": {"tokens": 1.0e9}, "seq_len": 4096, "global_batch": {"sequences": 64}}


def _scenario(acc: str, framework: str, dispatcher: str = "flex"):
    job = {**MOE, "hardware": {"accelerator": acc, "count": 8},
           "strategy": {"tp": 1, "pp": 1, "ep": 8, "micro_batch": 1, "framework": framework,
                        "moe_dispatcher": dispatcher}}
    return resolve_job(job, CAT)


@pytest.mark.parametrize("acc, framework, ok", [
    ("h100-sxm-80gb", "torchtitan", True), ("h100-sxm-80gb", "megatron-core", True),
    ("mi355x", "megatron-core", True), ("mi355x", "torchtitan", False), ("mi300x", "torchtitan", False)])
def test_flex_runs_where_the_vendor_ships_a_dispatcher(acc, framework, ok):
    sc = _scenario(acc, framework)
    assert sc.system.vendor == CAT.accelerator(acc).vendor
    if ok:
        check_strategy(sc.model, sc.training, sc.system, sc.strategy)
        return
    with pytest.raises(StrategyError) as err:
        check_strategy(sc.model, sc.training, sc.system, sc.strategy)
    assert err.value.rule == "moe_dispatcher_vendor"
    assert "Primus-Turbo's DeepEP port" in tr(err.value.detail, "en") and "Primus-Turbo" in tr(err.value.detail, "zh")


def test_alltoall_and_auto_and_unknown_vendors_are_not_judged():
    sc = _scenario("mi355x", "torchtitan", "alltoall")
    check_strategy(sc.model, sc.training, sc.system, sc.strategy)
    sc = _scenario("mi355x", "torchtitan")
    check_strategy(sc.model, sc.training, replace(sc.system, vendor=""), sc.strategy)  # a System built by hand


def test_a_vendor_without_a_flex_dispatcher_is_refused_on_every_stack():
    sc = _scenario("mi355x", "megatron-core")
    with pytest.raises(StrategyError) as err:
        check_strategy(sc.model, sc.training, replace(sc.system, vendor="huawei"), sc.strategy)
    assert err.value.rule == "moe_dispatcher_vendor" and "NVSHMEM" in tr(err.value.detail, "en")


def test_the_search_leaves_amd_layouts_out_under_torchtitan_and_keeps_them_under_megatron_core():
    sc = _scenario("mi355x", "torchtitan")
    opt = HardwareOption(accelerator=sc.accelerator, server=None, per_node=8, count=8, network=None, fabric=None)
    titan = search_option(sc.model, sc.training, opt, load_config(), "torchtitan",
                          options=(("moe_dispatcher", "flex"),))
    assert titan.strategy is None and titan.refused_by_options
    assert titan.options_refusal[0] == "moe_dispatcher_vendor"
    mcore = search_option(sc.model, sc.training, opt, load_config(), "megatron-core",
                          options=(("moe_dispatcher", "flex"),))
    assert mcore.strategy is not None and mcore.strategy.moe_dispatcher == "flex"
    assert not any(str(r or "").startswith("moe_dispatcher_vendor") for r in (mcore.options_refusal or ()))


def test_options_of_one_shape_share_verdicts_only_on_one_part():
    """The search shares rules and memory between options of one shape (search.engine._memory); with a stated option
    judged on the part (flex by vendor), an H100 option's verdicts must not carry to an MI355X one of the same shape:
    the plan recommended an AMD layout the estimate then refused."""
    cache: dict = {}
    runs = {}
    for acc in ("h100-sxm-80gb", "mi355x"):
        sc = _scenario(acc, "torchtitan")
        opt = HardwareOption(accelerator=sc.accelerator, server=None, per_node=8, count=8, network=None, fabric=None)
        runs[acc] = search_option(sc.model, sc.training, opt, load_config(), "torchtitan", cache=cache,
                                  options=(("moe_dispatcher", "flex"),))
    assert runs["h100-sxm-80gb"].strategy is not None
    assert runs["mi355x"].strategy is None and runs["mi355x"].options_refusal[0] == "moe_dispatcher_vendor"
