from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from trainsizer.models import load_model
from trainsizer.search import load_config
from trainsizer.search.space import strategies

LLAMA8 = load_model("llama-3.1-8b")
MOE = load_model("deepseek-v3")


def _rows(s):
    cols = ("tp", "pp", "vpp", "dp", "cp", "ep", "zero", "shard_group", "micro_batch", "recompute", "offload",
            "distributed_optimizer")
    return np.stack([np.asarray(getattr(s, c), dtype=float) for c in cols], axis=1)


@given(gpus=st.sampled_from([1, 2, 4, 8, 16, 24, 48, 64, 96, 512]), batch=st.sampled_from([8, 64, 96, 1024]),
       seq=st.sampled_from([2048, 8192, 32768]))
def test_every_strategy_uses_every_gpu_once_and_is_distinct(gpus, batch, seq):
    s = strategies(LLAMA8, seq, batch, gpus, min(gpus, 8), 8, load_config())
    if s is None:
        return
    rows = _rows(s)
    assert np.all(rows[:, 0] * rows[:, 1] * rows[:, 3] * rows[:, 4] == gpus)
    assert len(np.unique(rows, axis=0)) == len(rows)  # each physical layout once
    assert np.all(batch % (rows[:, 8] * rows[:, 3]) == 0)
    assert np.all((rows[:, 2] == 1) | (rows[:, 1] > 1))  # vpp only with pp
    assert np.all(rows[:, 5] == 1)  # dense model: no EP
    assert np.all((rows[:, 4] == 1) | (seq / rows[:, 4] >= load_config().cp_min_tokens_per_rank))
    assert np.all((rows[:, 6] < 3) | (rows[:, 1] == 1))  # no ZeRO-3 with PP


def test_moe_gets_expert_parallelism_and_offload_only_in_its_pass():
    s = strategies(MOE, 4096, 1024, 64, 8, 8, load_config())
    rows = _rows(s)
    assert rows[:, 5].max() > 1 and np.all(MOE.experts % rows[:, 5] == 0)
    assert np.all(rows[:, 10] == 0)
    off = strategies(LLAMA8, 4096, 8, 1, 1, 8, load_config(), offload=True)
    assert np.all(_rows(off)[:, 10] > 0)


def test_data_parallel_only_layouts():
    from trainsizer.search.space import layouts

    model = load_model("qwen2.5-7b")
    rows = layouts(model, 2048, 64, 16, 8, 8, load_config(), dp_only=True)
    assert len(rows) and set(rows[:, 0]) == {1.0} and set(rows[:, 1]) == {1.0} and set(rows[:, 4]) == {1.0}
    assert len(layouts(model, 2048, 64, 16, 8, 8, load_config())) > len(rows)
    assert "qlora" in load_config().data_parallel_only_methods


def test_a_dense_model_gets_no_expert_tp_axis():
    from trainsizer.search.space import layouts

    cfg = load_config()
    with_choice = layouts(LLAMA8, 4096, 1024, 64, 8, 8, cfg, expert_tp_choice=True)
    assert np.array_equal(with_choice, layouts(LLAMA8, 4096, 1024, 64, 8, 8, cfg))
    assert strategies(LLAMA8, 4096, 1024, 64, 8, 8, cfg).etp is None


def _moe_rows(framework):
    s = strategies(MOE, 4096, 1024, 64, 8, 8, load_config(), framework=framework)
    return _rows(s), np.asarray(s.etp, dtype=float)


def test_moe_layouts_at_tp_and_ep_are_tried_at_expert_tp_1_and_tp():
    """Megatron-Core (what "auto" runs at TP > 1) and torchtitan run expert TP 1 or tp under EP: both are tried,
    each layout once per expert TP; without EP or TP the framework's default (tp; torchtitan 1 under EP)."""
    for framework in ("auto", "megatron-core", "torchtitan"):
        rows, etp = _moe_rows(framework)
        both = (rows[:, 0] > 1) & (rows[:, 5] > 1)
        assert both.any() and np.all((etp[both] == 1) | (etp[both] == rows[both, 0]))
        assert set(etp[both]) >= {1.0} and np.any(etp[both] == rows[both, 0])
        assert np.sum(both & (etp == 1)) == np.sum(both & (etp == rows[:, 0]))  # one of each per layout
        default = np.where((rows[:, 5] > 1) & (framework == "torchtitan"), 1.0, rows[:, 0])
        assert np.array_equal(etp[~both], default[~both])
        full = np.column_stack([rows, etp])
        assert len(np.unique(full, axis=0)) == len(full)


def test_a_framework_without_expert_tp_keeps_tp():
    rows, etp = _moe_rows("deepspeed")
    assert np.array_equal(etp, rows[:, 0])
    assert len(np.unique(rows, axis=0)) == len(rows)  # each layout once: no expert-TP axis


def test_a_named_fsdp_stack_shards_its_model_parallel_layouts_with_fsdp():
    """A plan for a `framework: torchtitan` job recommended 'DP8 EP8, distributed optimizer' (Megatron's sharding,
    which torchtitan lacks) and never FSDP with TP / EP; its model-parallel layouts now take ZeRO / FSDP (ZeRO-3 with
    PP too, its 3D / 4D layouts), other named FSDP stacks without ZeRO-3 + PP, "auto" and Megatron as before."""
    def modes(framework):
        rows = _rows(strategies(MOE, 4096, 1024, 64, 8, 8, load_config(), framework=framework))
        mp = (rows[:, 0] > 1) | (rows[:, 1] > 1) | (rows[:, 4] > 1) | (rows[:, 5] > 1)
        return rows, mp

    col = {"pp": 1, "zero": 6, "distributed_optimizer": 11}  # _rows' columns
    for framework in ("torchtitan", "hf", "deepspeed"):
        rows, mp = modes(framework)
        assert not rows[mp, col["distributed_optimizer"]].any(), framework
        # FSDP / FSDP2 has no optimizer-only stage: torchtitan is not offered ZeRO-1 (known-gaps 55 (j))
        stages = {0.0, 2.0, 3.0} if framework == "torchtitan" else {0.0, 1.0, 2.0, 3.0}
        assert set(rows[mp & (rows[:, col["pp"]] == 1), col["zero"]]) == stages, framework
        zero3_pp = (rows[:, col["zero"]] == 3) & (rows[:, col["pp"]] > 1)
        assert zero3_pp.any() == (framework == "torchtitan"), framework
    for framework in ("auto", "megatron-core"):
        rows, mp = modes(framework)
        assert rows[mp, col["distributed_optimizer"]].any() and not rows[mp, col["zero"]].any(), framework


def test_pipeline_degrees_include_odd_factors_times_powers_of_two():
    """search.yaml pp_odd_factors [3, 5, 7]: BLOOM's PP 12, the 1.5x ladder rungs' factor 3 (known-gaps 65 (d)) and
    MT-NLG 530B's PP 35 = 5 x 7 (known-gaps 55 (l)): each product of distinct factors times a power of two."""
    from trainsizer.search.space import model_parallel_group, odd_multipliers, pipeline_degrees

    assert pipeline_degrees(64, (3,)) == [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]
    assert pipeline_degrees(64, ()) == [1, 2, 4, 8, 16, 32, 64]
    assert pipeline_degrees(2, (3,)) == [1, 2]
    assert odd_multipliers((3, 5, 7)) == [1, 3, 5, 7, 15, 21, 35, 105]
    assert pipeline_degrees(40, (3, 5, 7)) == [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 15, 16, 20, 21, 24, 28, 30, 32,
                                               35, 40]
    assert load_config().pp_odd_factors == (3, 5, 7)
    assert [n for n in range(1, 50) if model_parallel_group(n, (3,))] == [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48]
    assert not model_parallel_group(9, (3, 5, 7)) and not model_parallel_group(25, (3, 5, 7))


def test_mt_nlg_layout_is_searched_at_its_published_count():
    """MT-NLG 530B (105 layers, 128 heads) on 4,480 A100 with 1,920 sequences ran TP 8 x PP 35 x DP 16 (Smith et al.
    2022): the search offers it, 3 layers a stage, no stated end stages; an uneven degree states its ends
    (search.space.end_stage_layers), as Megatron-Core requires."""
    from trainsizer.search.space import _layouts, end_stage_layers

    cfg = load_config()
    rows = _layouts(128, 105, 1, 2048, 1920, 4480, 8, 8, cfg.max_tp, cfg.max_pp, cfg.cp_min_tokens_per_rank,
                    cfg.vpp_values, False, False, "megatron", cfg.pp_odd_factors, True, True)
    mtnlg = rows[(rows[:, 0] == 8) & (rows[:, 1] == 35) & (rows[:, 2] == 1)]
    assert len(mtnlg) and set(mtnlg[:, 3]) == {16} and set(mtnlg[:, -2]) == set(mtnlg[:, -1]) == {0}
    assert end_stage_layers(126, 5, 1) == (24, 24)  # Llama 3.1 405B at PP 5: 24 + 3 x 26 + 24
    assert end_stage_layers(126, 7, 2) == (0, 0)  # 126 = 7 x 2 x 9: even


def test_a_count_of_three_times_a_power_of_two_splits_a_power_of_two_batch_through_the_pipeline():
    """384 GPUs (3 x 128) and 2,048 sequences: BLOOM 176B ran TP 4 x PP 12 x DP 8. With power-of-two pipeline
    degrees only, the 3 fell into DP, which 2,048 does not divide, and no layout existed."""
    model = load_model("llama-3.1-70b")
    s = strategies(model, 2048, 2048, 384, 8, 8, load_config())
    assert s is not None
    rows = _rows(s)
    assert np.all(rows[:, 1] % 3 == 0)  # the 3 is in PP: DP, TP and CP are powers of two
    assert np.any((rows[:, 0] == 4) & (rows[:, 1] == 12) & (rows[:, 3] == 8))  # BLOOM's own layout
    assert np.all(2048 % (rows[:, 8] * rows[:, 3]) == 0)


def test_end_stage_split_is_the_one_megatron_runs():
    """Megatron-Core asserts that pp (x vpp) divides the layers unless the end ranks' layers are stated: an uneven
    layout states them, each middle rank the fewest whole chunks, the last rank the lighter end (55 (j))."""
    from trainsizer.search.space import end_stage_layers

    assert end_stage_layers(61, 8, 1) == (7, 6)  # DeepSeek-V3: 7 + 6 x 8 + 6
    assert end_stage_layers(61, 8, 2) == (7, 6)  # middle ranks 8 = 4 chunks of 2
    assert end_stage_layers(126, 8, 1) == (15, 15)  # Llama 3.1 405B: 15 + 6 x 16 + 15
    assert end_stage_layers(61, 2, 1) == (31, 30)
    assert end_stage_layers(80, 8, 2) == (0, 0)  # even: nothing stated
    assert end_stage_layers(61, 32, 1) is None  # 30 ranks of 2 leave 1 layer for two end ranks


def test_interleaved_end_stages_are_whole_chunks_where_the_layers_allow():
    """Megatron-Core's TransformerConfig refuses num_layers_in_first / last_pipeline_stage that vpp does not divide:
    where the rest divides by vpp, the end ranks take whole chunks (the layout runs with the plain flags)."""
    from trainsizer.search.space import end_stage_layers

    assert end_stage_layers(126, 8, 2) == (16, 14)  # was 15 + 15: refused by the flags at VPP 2
    assert end_stage_layers(80, 3, 4) == (28, 24)  # was 26 + 26
    for layers, pp, vpp in ((126, 8, 2), (80, 3, 2), (80, 3, 4), (80, 6, 4), (94, 12, 2), (64, 3, 2), (64, 6, 4)):
        split = end_stage_layers(layers, pp, vpp)
        assert split is not None and split != (0, 0), (layers, pp, vpp)
        first, last = split
        middle = (layers - first - last) / (pp - 2)
        assert first % vpp == 0 and last % vpp == 0 and middle % vpp == 0, (layers, pp, vpp, split)
        assert middle >= first >= last >= vpp, (layers, pp, vpp, split)
    assert end_stage_layers(61, 8, 2) == (7, 6)  # 61 is odd: only a layout states it, as NVIDIA's recipes do
    assert end_stage_layers(126, 8, 4) == (15, 15)  # 126 is no multiple of 4: likewise


def test_an_uneven_megatron_layout_states_its_end_stages_and_is_valid():
    """The search's DeepSeek-V3 layouts under "auto" / Megatron-Core: every pipelined one either splits the 61 layers
    evenly (never: 61 is prime) or states end stages the rule table accepts; torchtitan keeps its own split."""
    from trainsizer.catalog import load_catalog
    from trainsizer.estimate.batch import evaluate_batch
    from trainsizer.estimate.inputs import Training
    from trainsizer.scenario import build_system

    system = build_system(load_catalog().accelerator("h100-sxm-80gb"), 256, 8, None)
    training = Training(method="pretrain", precision="bf16", seq_len=4096, global_batch_seqs=1024)
    for framework in ("auto", "megatron-core"):
        s = strategies(MOE, 4096, 1024, 256, 8, 8, load_config(), framework=framework)
        first, last, pp = (np.asarray(getattr(s, f)) for f in ("pp_first_stage_layers", "pp_last_stage_layers", "pp"))
        assert np.all((first > 0) == (pp > 1)) and np.all(last[pp > 1] >= 1), framework
        stated = evaluate_batch(MOE, training, system, s, parts=("valid",))["valid"]
        even = evaluate_batch(MOE, training, system, replace(s, pp_first_stage_layers=None, pp_last_stage_layers=None),
                              parts=("valid",))["valid"]
        assert np.array_equal(stated, even), framework  # no rule refuses a stated split the fallback would pass
    titan = strategies(MOE, 4096, 1024, 256, 8, 8, load_config(), framework="torchtitan")
    assert not np.asarray(titan.pp_first_stage_layers).any()


def test_sequence_parallelism_only_where_the_sequence_splits_over_tp():
    """At a length TP x CP does not divide, the TP layouts run without sequence parallelism (rule sp_divides_seq)
    instead of being dropped; at 4,096 every TP layout keeps it."""
    odd = strategies(LLAMA8, 4095, 1024, 64, 8, 8, load_config())
    tp = np.asarray(odd.tp)
    assert np.any(tp > 1) and not np.any(np.asarray(odd.sequence_parallel)[tp > 1] > 0)
    even = strategies(LLAMA8, 4096, 1024, 64, 8, 8, load_config())
    assert np.all(np.asarray(even.sequence_parallel) == (np.asarray(even.tp) > 1))
