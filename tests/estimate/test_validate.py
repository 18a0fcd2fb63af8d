"""Strategy rules: each rule named, scalar check and vectorised mask agree."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from trainsizer.errors import StrategyError
from trainsizer.estimate.inputs import Strategy, System, Training
from trainsizer.estimate.validate import RULES, check_strategy, shard_groups, strategy_arrays, valid_mask
from trainsizer.models.arch import ModelArch

LLAMA70 = ModelArch(name="llama-3.1-70b", family="llama", layers=80, hidden=8192, heads=64, kv_heads=8,
                    ffn=28672, vocab=128256)
MOE = ModelArch(name="qwen1.5-moe-a2.7b", family="qwen2_moe", layers=24, hidden=2048, heads=16, kv_heads=16,
                ffn=5632, vocab=151936, experts=60, experts_per_token=4, expert_ffn=1408, shared_expert_ffn=5632)


def sysm(gpus: int = 64) -> System:
    return System(accelerator="h100-sxm", gpus=gpus, gpus_per_node=8, memory_gib=80.0,
                  peak_tflops={"bf16": 989.0}, hbm_gb_s=3350.0, intra_node_gb_s=450.0)


TRAIN = Training(seq_len=8192, global_batch_seqs=512)


def test_valid_strategy_passes() -> None:
    assert check_strategy(LLAMA70, TRAIN, sysm(64), Strategy(tp=8, pp=4, dp=2)) == []


@pytest.mark.parametrize(
    ("model", "training", "gpus", "strategy", "rule"),
    [
        (LLAMA70, TRAIN, 64, Strategy(tp=8, pp=4, dp=4), "gpu_count"),
        (LLAMA70, TRAIN, 48, Strategy(tp=3, pp=2, dp=8), "tp_divides_heads"),
        (LLAMA70, TRAIN, 64, Strategy(tp=16, pp=1, dp=4, framework="torchtitan"), "tp_divides_kv_heads"),
        (LLAMA70, TRAIN, 96, Strategy(tp=1, pp=96, dp=1), "pp_exceeds_layers"),
        (LLAMA70, TRAIN, 64, Strategy(tp=8, pp=1, vpp=2, dp=8), "vpp_needs_pp"),
        (LLAMA70, Training(seq_len=8192, global_batch_seqs=6), 64, Strategy(tp=8, pp=4, vpp=2, dp=2),
         "interleaved_microbatches"),
        (LLAMA70, TRAIN, 64, Strategy(tp=8, dp=8, ep=2), "ep_needs_moe"),
        (MOE, TRAIN, 64, Strategy(tp=1, dp=64, ep=8), "ep_divides_experts"),
        (MOE, TRAIN, 10, Strategy(tp=1, dp=10, ep=4), "ep_divides_dp_cp"),
        (MOE, TRAIN, 6, Strategy(tp=1, dp=6, ep=4), "ep_divides_dp_cp"),
        (LLAMA70, Training(seq_len=8190, global_batch_seqs=512), 64, Strategy(tp=8, dp=4, cp=2),
         "cp_divides_seq"),
        (LLAMA70, Training(seq_len=8192, global_batch_seqs=100), 64, Strategy(tp=8, dp=8),
         "batch_divisible"),
        (LLAMA70, TRAIN, 64, Strategy(tp=8, dp=8, zero=4), "zero_stage"),
        (LLAMA70, TRAIN, 64, Strategy(tp=8, dp=8, zero=3, shard_group=3), "shard_group_divides_dp"),
        (LLAMA70, TRAIN, 64, Strategy(tp=8, pp=2, dp=4, zero=3, framework="deepspeed"), "zero3_with_pp"),
        (LLAMA70, TRAIN, 64, Strategy(tp=8, pp=2, dp=4, zero=2, framework="deepspeed"), "zero2_with_pp"),
        (LLAMA70, TRAIN, 64, Strategy(tp=8, pp=2, dp=4, zero=3, framework="hf"), "pipeline_framework"),
        (LLAMA70, TRAIN, 64, Strategy(tp=8, pp=2, dp=4, framework="hf"), "pipeline_framework"),
        (LLAMA70, TRAIN, 64, Strategy(tp=8, pp=2, dp=4, framework="torchtune"), "pipeline_framework"),
        (LLAMA70, TRAIN, 64, Strategy(tp=8, pp=2, dp=4, framework="fsdp"), "pipeline_framework"),
        (LLAMA70, TRAIN, 64, Strategy(tp=8, pp=2, vpp=2, dp=4, framework="deepspeed"), "interleaved_framework"),
        (LLAMA70, TRAIN, 64, Strategy(tp=8, pp=2, dp=4, pipeline_loss_layer=True, framework="torchtitan"),
         "pipeline_slots_need_megatron"),
        (LLAMA70, TRAIN, 64, Strategy(tp=8, dp=8, zero=0, offload="optimizer"), "offload_needs_zero"),
        (LLAMA70, TRAIN, 64, Strategy(tp=8, dp=8, zero=2, offload="optimizer+params"), "offload_needs_zero"),
        (LLAMA70, Training(method="qlora", precision="fp8", lora_rank=8), 64, Strategy(tp=8, dp=8),
         "qlora_fp8"),
        (LLAMA70, TRAIN, 64, Strategy(tp=0, dp=8), "positive_degrees"),
    ],
)
def test_each_rule_fires(model, training, gpus, strategy, rule) -> None:
    with pytest.raises(StrategyError) as err:
        check_strategy(model, training, sysm(gpus), strategy)
    assert err.value.rule == rule
    assert rule in str(err.value)
    assert not valid_mask(model, training, sysm(gpus), strategy).reshape(-1)[0]


def test_ffn_rule() -> None:
    odd = LLAMA70.with_(ffn=28670)
    with pytest.raises(StrategyError) as err:
        check_strategy(odd, TRAIN, sysm(64), Strategy(tp=8, pp=4, dp=2))
    assert err.value.rule == "tp_divides_ffn"


def test_rules_are_named_uniquely() -> None:
    assert len(set(RULES)) == len(RULES)


def test_every_rule_has_its_refusal_message() -> None:
    # the stack rules (validate._stack_rule) name their message rule_<rule>, which the literal-key scan of
    # tests/render/test_messages.py cannot see; one rule names a shorter key
    from trainsizer.messages import catalogue

    own_key = {"optimizer_in_backward_no_accumulation"}
    assert [r for r in RULES if r not in own_key and f"rule_{r}" not in catalogue()] == []


def test_moe_options_on_a_dense_model_are_said_to_change_nothing() -> None:
    # stated on a dense model they were accepted without a word (the step time is the same with or without them)
    st = Strategy(tp=8, pp=4, dp=2, framework="megatron-core", moe_dispatcher="flex", moe_sync_free=True)
    w = check_strategy(LLAMA70, TRAIN, sysm(64), st)
    assert [x for x in w if x.startswith("moe_options_dense")] == [
        "moe_options_dense: llama-3.1-70b has no routed experts, so moe_dispatcher, moe_sync_free change nothing "
        "here (the estimate is the same without them)"]
    assert check_strategy(LLAMA70, TRAIN, sysm(64), Strategy(tp=8, pp=4, dp=2, moe_sync_free=False)) != []
    moe = Strategy(tp=1, pp=1, dp=64, ep=4, framework="megatron-core", moe_dispatcher="flex", moe_sync_free=True)
    assert not any(x.startswith("moe_options_dense") for x in check_strategy(MOE, TRAIN, sysm(64), moe))


def test_warnings() -> None:
    w = check_strategy(LLAMA70, TRAIN, sysm(64), Strategy(tp=8, pp=4, dp=2))
    assert w == []
    w = check_strategy(LLAMA70.with_(layers=81), TRAIN, sysm(64), Strategy(tp=8, pp=4, dp=2))
    assert any(x.startswith("pp_uneven_layers") for x in w)
    # interleaving with layers not divisible by pp*vpp: a warning (Megatron-Core uneven split), not an error
    w = check_strategy(LLAMA70, TRAIN, sysm(64), Strategy(tp=8, pp=4, vpp=3, dp=2))
    assert any(x.startswith("vpp_uneven_layers") for x in w)
    big = LLAMA70.with_(heads=128, kv_heads=16)
    w = check_strategy(big, TRAIN, sysm(64), Strategy(tp=16, pp=1, dp=4))
    assert any(x.startswith("tp_across_nodes") for x in w)


def test_mask_matches_scalar_check() -> None:
    rng = np.random.default_rng(0)
    n = 400
    st = Strategy(tp=rng.choice([1, 2, 3, 4, 8, 16], n), pp=rng.choice([1, 2, 4, 5], n),
                  dp=rng.choice([1, 2, 4, 8, 16], n), cp=rng.choice([1, 2], n), ep=rng.choice([1, 2, 4], n),
                  zero=rng.integers(0, 4, n), vpp=rng.choice([1, 2], n), micro_batch=rng.choice([1, 2, 3], n),
                  offload=rng.integers(0, 3, n), recompute=rng.integers(0, 3, n))
    for model in (LLAMA70, MOE):
        mask = valid_mask(model, TRAIN, sysm(64), st)
        assert mask.shape == (n,)
        for i in range(n):
            one = Strategy(**{f: int(np.asarray(getattr(st, f))[i]) for f in
                              ("tp", "pp", "dp", "cp", "ep", "zero", "vpp", "micro_batch", "offload",
                               "recompute")})
            try:
                check_strategy(model, TRAIN, sysm(64), one)
                ok = True
            except StrategyError:
                ok = False
            assert ok == bool(mask[i])
        assert mask.any() or model is MOE


def test_tp_inside_an_nvlink_domain_larger_than_a_node_is_not_flagged() -> None:
    """Bug fix: the warning compared TP with GPUs per node, so TP 8 over 4-GPU trays of one NVL72 domain was
    said to cross the network (the time model already used the scale-up domain)."""
    big = LLAMA70.with_(heads=128, kv_heads=16)
    nvl72 = System(accelerator="gb200", gpus=64, gpus_per_node=4, memory_gib=186.0,
                   peak_tflops={"bf16": 2500.0}, hbm_gb_s=8000.0, intra_node_gb_s=900.0, scaleup_domain=72)
    w = check_strategy(big, TRAIN, nvl72, Strategy(tp=8, pp=1, dp=8))
    assert not any(x.startswith("tp_across_nodes") for x in w)


def test_more_model_chunks_than_layers_is_refused():
    model = ModelArch("m", "llama", 8, 1024, 8, 8, 4096, 32000)
    system = System(accelerator="x", gpus=4, gpus_per_node=4, memory_gib=80, peak_tflops={"bf16": 100.0},
                    hbm_gb_s=1000.0, intra_node_gb_s=100.0)
    training = Training(seq_len=1024, global_batch_seqs=64)
    with pytest.raises(StrategyError, match="pp_exceeds_layers"):
        check_strategy(model, training, system, Strategy(pp=4, vpp=4, dp=1, micro_batch=1))
    check_strategy(model, training, system, Strategy(pp=4, vpp=2, dp=1, micro_batch=1))


@pytest.mark.parametrize("framework", ["torchtitan", "auto"])
def test_fsdp2_with_pipeline_is_allowed_where_it_runs(framework):
    """torchtitan composes FSDP2 with pipelining (its 3D/4D layouts); the DeepSpeed-only refusal does not apply."""
    st = Strategy(tp=8, pp=2, dp=4, zero=3, framework=framework)
    check_strategy(LLAMA70, TRAIN, sysm(64), st)
    assert bool(valid_mask(LLAMA70, TRAIN, sysm(64), st))


def test_megatron_embedding_and_loss_slots_allow_two_more_chunks():
    """NeMo's 405B proxy: 30 layers on pp=4 x vpp=8 = 32 chunks with the embedding and the loss as layers."""
    model = LLAMA70.with_(layers=30)
    sysx = sysm(64)
    st = Strategy(tp=8, pp=4, vpp=8, dp=2, framework="megatron-core")
    with pytest.raises(StrategyError, match="pp_exceeds_layers"):
        check_strategy(model, TRAIN, sysx, st)
    with pytest.raises(StrategyError, match="pp_exceeds_layers"):  # one slot is not enough
        check_strategy(model, TRAIN, sysx, st.with_(pipeline_embedding_layer=True))
    both = st.with_(pipeline_embedding_layer=True, pipeline_loss_layer=True)
    assert check_strategy(model, TRAIN, sysx, both) == []  # 32 slots split evenly: no uneven warning
    assert bool(valid_mask(model, TRAIN, sysx, both))



def test_deepspeed_pipeline_counts_the_embeddings_as_layers():
    """Megatron-DeepSpeed's --pp-partition-method 'type:transformer|embedding' partitions the tied embedding layers at
    both ends as layers: GLM-130B's 70 layers + 2 over PP 8 (9 x 8 - 2, arXiv:2210.02414 s3) is a run that was made,
    accepted without an uneven-split warning; without the slots the same split warns; torchtitan still refuses."""
    model = LLAMA70.with_(layers=70)
    st = Strategy(tp=8, pp=8, dp=1, framework="deepspeed")
    both = st.with_(pipeline_embedding_layer=True, pipeline_loss_layer=True)
    assert check_strategy(model, TRAIN, sysm(64), both) == []
    assert any(w.startswith("pp_uneven_layers") for w in check_strategy(model, TRAIN, sysm(64), st))
    with pytest.raises(StrategyError, match="pipeline_slots_need_megatron"):
        check_strategy(model, TRAIN, sysm(64), both.with_(framework="torchtitan"))

def test_ep_beyond_the_domain_warns():
    w = check_strategy(MOE, TRAIN, sysm(64), Strategy(tp=4, dp=16, ep=4))
    assert any(x.startswith("ep_across_domains") for x in w)
    assert not any(x.startswith("ep_across_domains") for x in check_strategy(MOE, TRAIN, sysm(64),
                                                                              Strategy(tp=2, dp=32, ep=4)))


def test_strategy_arrays_is_the_one_conversion() -> None:
    """Every per-strategy field by name, broadcast to one shape; one strategy stays 0-d; modes as codes."""
    from types import SimpleNamespace

    from trainsizer.errors import SpecError
    from trainsizer.estimate.inputs import (
        DEGREE_FIELDS,
        FLAG_FIELDS,
        MODE_FIELDS,
        OFFLOAD_CODE,
        RECOMPUTE_CODE,
    )
    from trainsizer.estimate.validate import strategy_arrays

    one = strategy_arrays(Strategy(tp=2, dp=4, recompute="full", offload="optimizer"))
    assert set(one) == {*DEGREE_FIELDS, *MODE_FIELDS, *FLAG_FIELDS, "etp"}  # etp resolved (validate.expert_tp)
    assert one["etp"] == 2.0  # "auto" at tp 2 is Megatron-Core: expert TP = tp
    assert all(v.shape == () and v.dtype == float for v in one.values())
    assert (one["tp"], one["dp"], one["sequence_parallel"]) == (2.0, 4.0, 1.0)
    assert one["recompute"] == RECOMPUTE_CODE["full"] and one["offload"] == OFFLOAD_CODE["optimizer"]

    many = strategy_arrays(Strategy(tp=np.array([1, 2, 4]), micro_batch=np.array([[1], [2]]),
                                    recompute=np.array([RECOMPUTE_CODE[m] for m in ("none", "selective", "full")])))
    assert all(v.shape == (2, 3) and v.flags.c_contiguous for v in many.values())
    assert many["micro_batch"][1].tolist() == [2.0, 2.0, 2.0]
    assert many["recompute"][0].tolist() == [RECOMPUTE_CODE[m] for m in ("none", "selective", "full")]

    duck = SimpleNamespace(**{f: 1 for f in DEGREE_FIELDS}, recompute_code=lambda: 0, offload_code=lambda: 0,
                           recompute="none", offload="none")
    assert strategy_arrays(duck)["sequence_parallel"] == float(Strategy().sequence_parallel)  # the Strategy default
    assert "torch_compile" not in one  # one value a batch, resolved per stack (framework.torch_compile_of)
    with pytest.raises(SpecError, match="recompute"):
        strategy_arrays(Strategy(recompute="sometimes"))


STARCODER = ModelArch(name="starcoderbase-15b", family="gpt", layers=40, hidden=6144, heads=48, kv_heads=1,
                      ffn=24576, vocab=49152, mlp="gelu", norm="layernorm", position="learned")


def test_multi_query_attention_under_tp_runs_where_the_kv_head_is_replicated():
    """StarCoderBase trained with TP 4 and one KV head (BigCode Megatron-LM fork, arXiv:2305.06161 s5.6);
    Megatron-Core runs it too since core_v0.16.0 (one query group: every rank all-gathers the QKV activations);
    torchtitan refuses it (update_from_config, PR 2577)."""
    train = Training(seq_len=8192, global_batch_seqs=512)
    st = Strategy(tp=4, pp=4, dp=32, framework="megatron")
    assert check_strategy(STARCODER, train, sysm(512), st) == []
    assert bool(valid_mask(STARCODER, train, sysm(512), st))
    assert check_strategy(STARCODER, train, sysm(512), st.with_(framework="megatron-core")) == []
    with pytest.raises(StrategyError, match="tp_divides_kv_heads"):
        check_strategy(STARCODER, train, sysm(512), Strategy(tp=4, dp=128, zero=3, framework="torchtitan"))
    with pytest.raises(StrategyError, match="tp_divides_kv_heads"):  # GQA is not replicated by the BigCode fork
        check_strategy(LLAMA70, TRAIN, sysm(64), Strategy(tp=16, dp=4, framework="megatron"))


QWEN3_MOE = ModelArch(name="qwen3-30b-a3b", family="qwen3_moe", layers=48, hidden=2048, heads=32, kv_heads=4,
                      head_dim=128, ffn=6144, vocab=151936, experts=128, experts_per_token=8, expert_ffn=768)


@pytest.mark.parametrize(("framework", "tp", "legal"), [
    ("megatron-core", 8, True),  # 4 query groups, TP 8: each group's K / V head on two ranks (core_v0.16.0+)
    ("auto", 8, True),  # auto resolves TP 8 to megatron-core
    ("megatron-core", 4, True), ("megatron-core", 2, True),
    ("torchtitan", 8, False),  # update_from_config: tensor_parallel_degree must divide n_kv_heads
    ("megatron", 8, False),  # the 2020-22 Megatron-LM: divide(num_query_groups, tp)
    ("deepspeed", 8, False), ("hf", 8, False),
])
def test_tp_above_the_kv_heads_only_where_the_stack_subshards_them(framework, tp, legal):
    """Megatron-Core (f7dfb99795) takes TP a multiple of the query groups; the other stacks need TP to divide them."""
    st = Strategy(tp=tp, dp=64 // tp, framework=framework)
    assert bool(valid_mask(QWEN3_MOE, TRAIN, sysm(64), st)) is legal
    if legal:
        check_strategy(QWEN3_MOE, TRAIN, sysm(64), st)
    else:
        with pytest.raises(StrategyError, match="tp_divides_kv_heads") as err:
            check_strategy(QWEN3_MOE, TRAIN, sysm(64), st)
        assert "megatron-core" in str(err.value)  # names the stack that runs it


def test_tp_must_be_a_multiple_of_the_kv_heads_above_them():
    """12 query groups: Megatron-Core takes a TP degree that divides them or that they divide ("must be a multiple
    or divisor"), torchtitan only one that divides them; the mask agrees with the one-strategy check."""
    model = LLAMA70.with_(heads=96, kv_heads=12, ffn=24576)
    train = Training(seq_len=12288, global_batch_seqs=1536)  # divisible by every tp below (sp_divides_seq)
    tp = np.array([2, 4, 6, 8, 12, 16, 24, 48])
    for fw, zero, want in (("megatron-core", 0, [1, 1, 1, 0, 1, 0, 1, 1]), ("auto", 0, [1, 1, 1, 0, 1, 0, 1, 1]),
                           ("torchtitan", 3, [1, 1, 1, 0, 1, 0, 0, 0])):
        st = Strategy(tp=tp, dp=96 // tp, zero=zero, framework=fw)
        mask = valid_mask(model, train, sysm(96), st)
        assert mask.tolist() == [bool(w) for w in want], fw
        for i, t in enumerate(tp.tolist()):
            one = Strategy(tp=t, dp=96 // t, zero=zero, framework=fw)
            if want[i]:
                check_strategy(model, train, sysm(96), one)
            else:
                with pytest.raises(StrategyError, match="tp_divides_kv_heads"):
                    check_strategy(model, train, sysm(96), one)


@settings(max_examples=30, deadline=None)
@given(dp=hs.sampled_from([1, 2, 4, 8, 16, 64]), cp=hs.sampled_from([1, 2]), ep=hs.sampled_from([1, 2, 4, 8, 64]),
       sg=hs.sampled_from([0, 2, 8]))
def test_experts_are_sharded_over_the_shard_group_less_ep(dp, cp, ep, sg):
    """EP borrows from the shard group (torchtitan dp_shard_mod_ep, AutoModel ep_shard): a GPU's experts and its dense
    weights are sharded over the same ranks in all (expert group x EP = the group), one rank at least."""
    dense, expert = shard_groups(strategy_arrays(Strategy(dp=dp, cp=cp, ep=ep, zero=3, shard_group=sg)))
    assert float(dense) == (min(sg, dp * cp) if sg else dp * cp)
    assert float(expert) == max(float(dense) / ep, 1.0)


DSV3_LIKE = LLAMA70.with_(layers=61)


@pytest.mark.parametrize(
    ("strategy", "rule", "words"),
    [
        (Strategy(tp=8, pp=4, dp=2, pp_last_stage_layers=13, framework="torchtitan"), "pp_stage_layers_framework",
         "torchtitan"),
        (Strategy(tp=8, pp=1, dp=8, pp_last_stage_layers=13, framework="megatron-core"),
         "pp_stage_layers_pipelined", "pp=1 has no first or last stage"),
        (Strategy(tp=8, pp=4, dp=2, pp_last_stage_layers=13, pipeline_loss_layer=True, framework="megatron-core"),
         "pp_stage_layers_pipelined", "not allowed beside pipeline_embedding_layer / pipeline_loss_layer (1 set)"),
        (Strategy(tp=8, pp=4, dp=2, pp_last_stage_layers=12, framework="megatron-core"), "pp_stage_layers_split",
         "49 of the 61 layers are left for 3 middle stage(s) x vpp 1"),
        (Strategy(tp=8, pp=4, vpp=4, dp=2, pp_last_stage_layers=13, pp_first_stage_layers=14,
                  framework="megatron-core"), "pp_stage_layers_split", "2 middle stage(s) x vpp 4"),
        (Strategy(tp=8, pp=2, dp=4, pp_last_stage_layers=29, pp_first_stage_layers=30, framework="megatron-core"),
         "pp_stage_layers_split", "0 middle stage(s)"),
        # the totals that would split: 61 - 3k (3 middle ranks, vpp 1) nearest 12; 61 itself with no middle rank
        (Strategy(tp=8, pp=4, dp=2, pp_last_stage_layers=12, framework="megatron-core"), "pp_stage_layers_split",
         "allowed nearest: 10 / 13 layers"),
        (Strategy(tp=8, pp=2, dp=4, pp_last_stage_layers=29, pp_first_stage_layers=30, framework="megatron-core"),
         "pp_stage_layers_split", "allowed nearest: 61 layers"),
        (Strategy(tp=8, pp=4, dp=2, pp_first_stage_layers=200, framework="megatron-core"), "pp_stage_layers_split",
         "pp_first_stage_layers 200: 200 decoder layers stated, more than the model's 61 (allowed nearest: 55 / 58"),
    ],
)
def test_stated_stage_layers_refused_with_the_reason(strategy, rule, words) -> None:
    with pytest.raises(StrategyError) as err:
        check_strategy(DSV3_LIKE, TRAIN, sysm(64), strategy)
    assert err.value.rule == rule
    assert words in str(err.value)
    assert not valid_mask(DSV3_LIKE, TRAIN, sysm(64), strategy).reshape(-1)[0]


def test_stated_stage_layers_accepted_without_the_uneven_split_warning() -> None:
    """Megatron-Bridge's DeepSeek-V3 layouts at the rank level: the last rank 64 / p - 3 layers (PP 4 x VP 4: 13,
    PP 2 x VP 8: 29 with no middle rank), neither a multiple of vpp (a layout's chunks may differ)."""
    for pp, vpp, dp, last in ((4, 4, 2, 13), (2, 8, 4, 29), (8, 1, 1, 5)):
        s = Strategy(tp=8, pp=pp, vpp=vpp, dp=dp, pp_last_stage_layers=last, framework="megatron-core")
        assert check_strategy(DSV3_LIKE, TRAIN, sysm(64), s) == []
    assert check_strategy(DSV3_LIKE, TRAIN, sysm(64), Strategy(tp=8, pp=4, dp=2, framework="megatron-core"))


@pytest.mark.parametrize(("zero", "pp", "legal"), [(0, 2, True), (1, 2, True), (2, 2, False), (3, 2, False),
                                                   (2, 1, True), (3, 1, True)])
def test_deepspeed_pipeline_engine_takes_zero_below_two(zero, pp, legal):
    """DeepSpeed's PipelineEngine asserts ZeRO stage < 2 ("ZeRO-2 and ZeRO-3 are incompatible with pipeline
    parallelism", runtime/pipe/engine.py since PR 980); ZeRO-1 with PP is what BLOOM and GPT-NeoX ran."""
    st = Strategy(tp=8, pp=pp, dp=8 // pp, zero=zero, framework="deepspeed")
    assert bool(valid_mask(LLAMA70, TRAIN, sysm(64), st)) is legal
    if not legal:
        with pytest.raises(StrategyError, match="zero[23]_with_pp"):
            check_strategy(LLAMA70, TRAIN, sysm(64), st)


@pytest.mark.parametrize(("seq", "tp", "cp", "sp", "legal"), [
    (8192, 8, 1, True, True), (8190, 2, 1, True, True), (8190, 4, 1, True, False), (8190, 4, 1, False, True),
    (6144, 8, 2, True, True), (6008, 8, 2, True, False), (6008, 1, 4, True, True), (8190, 1, 1, True, True),
])
def test_sequence_parallel_splits_each_cp_ranks_sequence_over_tp(seq, tp, cp, sp, legal):
    """Megatron-Core's scatter to the sequence-parallel region asserts the (CP rank's) sequence divisible by TP;
    without sequence parallelism or TP nothing is split."""
    train = Training(seq_len=seq, global_batch_seqs=512)
    st = Strategy(tp=tp, cp=cp, dp=64 // (tp * cp), sequence_parallel=sp)
    assert bool(valid_mask(LLAMA70, train, sysm(64), st)) is legal
    if not legal:
        with pytest.raises(StrategyError, match="sp_divides_seq"):
            check_strategy(LLAMA70, train, sysm(64), st)


@pytest.mark.parametrize("zero", [1, 2, 3])
def test_the_shard_group_refusal_names_the_zero_group_and_fsdps_hybrid_group(zero) -> None:
    """With zero 1 / 2 a shard group is a ZeRO group (InternLM's zero1, known-gaps 228), not a hybrid shard group: the
    refusal read "hybrid shard group" only; it names both, in both languages."""
    with pytest.raises(StrategyError) as err:
        check_strategy(LLAMA70, TRAIN, sysm(64), Strategy(tp=8, dp=8, zero=zero, shard_group=3))
    assert err.value.rule == "shard_group_divides_dp"
    en, zh = err.value.render("en"), err.value.render("zh")
    assert "ZeRO group" in en and "hybrid shard group" in en and "dp*cp = 8" in en
    assert "ZeRO 分区组" in zh and "混合切分组" in zh and "dp*cp = 8" in zh
