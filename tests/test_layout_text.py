"""layout_text: one way to write a parallel layout for people, in the CLI plan, the report, the Excel sheet, the
plan's JSON summary and the default-strategy note (they wrote 'tp8 dp2 rc=none', 'TP8 recompute full' and
'tp=8, pp=1, ...'). Every recompute and offload mode has words in both languages."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainsizer.layout_text import layout_codes, layout_in, layout_text
from trainsizer.messages import storable, stored
from trainsizer.names import OFFLOAD, RECOMPUTE

BASE = {"tp": 1, "pp": 1, "vpp": 1, "dp": 1, "cp": 1, "ep": 1, "zero": 3, "shard_group": None,
        "distributed_optimizer": False, "micro_batch": 2, "recompute": "full", "offload": "none"}

STRATEGIES = st.fixed_dictionaries({
    **{k: st.sampled_from([1, 2, 4, 8]) for k in ("tp", "pp", "vpp", "dp", "cp", "ep")},
    "zero": st.sampled_from([0, 1, 2, 3]), "shard_group": st.sampled_from([None, 0, 8]),
    "distributed_optimizer": st.booleans(), "micro_batch": st.integers(1, 16),
    "recompute": st.sampled_from(RECOMPUTE), "offload": st.sampled_from(OFFLOAD)})


@given(STRATEGIES)
def test_both_languages_share_the_codes_and_only_the_words_differ(s):
    codes = layout_codes(s)
    en, zh = layout_in(s, "en"), layout_in(s, "zh")
    assert en.startswith(codes) and zh.startswith(codes)
    assert f"DP{s['dp']}" in codes and f"mb{s['micro_batch']}" in codes  # DP is always written, even DP1
    for k in ("tp", "pp", "vpp", "cp", "ep"):
        assert (f"{k.upper()}{s[k]}" in codes.split()) == (s[k] != 1)
    assert "重计算" in zh and "recompute" in en
    assert not any(w in zh[len(codes):] for w in ("recompute", "offload", "optimizer", "sharded"))


@given(STRATEGIES)
def test_a_stored_layout_reads_in_either_language(s):
    """A plan keeps its sentences as messages: the default-strategy note's layout translates after a round trip."""
    back = stored(storable(layout_text(s)))  # the recompute mode is always written: always a message
    assert str(back) == layout_in(s, "en") and back.tr("zh") == layout_in(s, "zh")


@pytest.mark.parametrize("mode", [m for m in OFFLOAD if m != "none"])
def test_offload_mode_has_words_in_both_languages(mode):
    zh, en = layout_in(BASE | {"offload": mode}, "zh"), layout_in(BASE | {"offload": mode}, "en")
    assert "卸载" in zh and "优化器" in zh and ("参数" in zh) == ("params" in mode)
    assert en == "DP1 ZeRO-3 mb2, full recompute, " + ("optimizer and parameters offloaded" if "params" in mode
                                                       else "optimizer offloaded")


def test_no_offload_says_nothing_about_it():
    assert "offload" not in layout_in(BASE, "en") and "卸载" not in layout_in(BASE, "zh")


@pytest.mark.parametrize("mode", RECOMPUTE)
def test_recompute_mode_has_words_in_both_languages(mode):
    s = BASE | {"recompute": mode}
    assert layout_in(s, "zh").startswith("DP1 ZeRO-3 mb2，") and layout_in(s, "zh").endswith("重计算")
    assert layout_in(s, "en") == "DP1 ZeRO-3 mb2, " + {"none": "no recompute", "selective": "selective recompute",
                                                        "full": "full recompute"}[mode]


def test_partial_recompute_names_its_method_and_layers():
    s = BASE | {"recompute_method": "block", "recompute_num_layers": 21}
    assert layout_in(s, "en").endswith("full recompute (block, 21 layers per chunk)")
    assert layout_in(s, "zh").endswith("完全重计算（block，每个模型分块 21 层）")


def test_a_shard_group_and_the_distributed_optimizer_are_named():
    s = BASE | {"tp": 8, "pp": 2, "vpp": 4, "dp": 4, "zero": 1, "shard_group": 8, "distributed_optimizer": True}
    assert layout_in(s, "en") == ("TP8 PP2 VPP4 DP4 ZeRO-1 mb2, sharded in groups of 8, distributed optimizer, "
                                  "full recompute")
    assert layout_in(s, "zh") == "TP8 PP2 VPP4 DP4 ZeRO-1 mb2，每 8 卡一组分片，分布式优化器，完全重计算"
    assert "dist-opt" not in layout_codes(s)  # a code word no buyer knows


def test_expert_tp_is_written_where_it_is_not_tp():
    moe = BASE | {"tp": 4, "ep": 8, "dp": 8}
    assert layout_codes(moe | {"etp": 1}).split()[:4] == ["TP4", "DP8", "EP8", "ETP1"]
    assert "ETP" not in layout_codes(moe | {"etp": 4}) and "ETP" not in layout_codes(moe)
    assert "ETP" not in layout_codes(BASE | {"tp": 4, "etp": 1})  # no EP: no routed-expert split to name


def test_stated_end_stages_and_fsdp_sharding_are_named():
    """The search's uneven Megatron split names its end ranks' layers; torchtitan's ZeRO-2 / 3 are FSDP's (55 (j))."""
    s = BASE | {"tp": 2, "pp": 8, "dp": 4, "pp_first_stage_layers": 7, "pp_last_stage_layers": 6}
    assert layout_in(s, "en").endswith("first / last pipeline stage 7 / 6 layers")
    assert layout_in(s, "zh").endswith("流水线首 / 末级 7 / 6 层")
    assert "pipeline stage" not in layout_in(BASE | {"pp": 8}, "en")
    # at VPP 2, 7 + 6 are not whole virtual stages: Megatron-Core's num_layers flags refuse them, a layout sets them
    assert layout_in(s | {"vpp": 2}, "en").endswith("7 / 6 layers (not whole virtual stages: set by "
                                                    "pipeline_model_parallel_layout)")
    assert "pipeline_model_parallel_layout" in layout_in(s | {"vpp": 2}, "zh")
    assert layout_in(s | {"vpp": 2, "pp_first_stage_layers": 8}, "en").endswith("8 / 6 layers")
    titan = BASE | {"dp": 8, "ep": 8, "zero": 2, "framework": "torchtitan"}
    assert layout_in(titan, "en").endswith("FSDP without resharding after forward")
    assert "FSDP" not in layout_in(titan | {"framework": "deepspeed"}, "en")  # DeepSpeed's ZeRO-2 is ZeRO-2


def test_device_map_names_every_card_or_the_one_card():
    """device_map auto on several cards lists accelerate's count of each; on one card there is no chain to list."""
    chain = BASE | {"pp": 3, "device_map": True, "pp_stage_layers": [10, 12, 10]}
    assert "(10 / 12 / 10 layers, card by card" in layout_in(chain, "en")
    one = BASE | {"device_map": True}
    assert layout_in(one, "en").endswith("device_map auto: every layer on one card (accelerate's split needs no "
                                         "second card)")
    assert "1 cards" not in layout_in(one, "en") and "一张卡" in layout_in(one, "zh")
