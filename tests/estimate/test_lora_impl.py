"""LoRA adapter implementations and dropout (job lora.impl, lora.dropout): NeMo AutoModel scales A's rank-wide output
(its adapter streams less than PEFT's, which scales the d_out-wide one), its Triton kernels launch fewer kernels but
read x twice in the backward, dropout costs a pass each way on the side the implementation puts it (PEFT the input,
AutoModel the output) and a 1-byte mask there; AutoModel's adapters and their AdamW moments take the base dtype."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainsizer.errors import SpecError
from trainsizer.estimate import compute
from trainsizer.estimate.activations import layer_items
from trainsizer.estimate.inputs import Strategy, Training
from trainsizer.estimate.memory import estimate_memory
from trainsizer.estimate.model_states import lora_adapted_widths
from trainsizer.estimate.step_time import estimate_time
from trainsizer.names import LORA_IMPLS
from trainsizer.spec.load import load_job

from .test_perf_common import h100_cluster, llama8b, mixtral

ALL = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
TOKENS = 2 * 2048


def _training(impl: str = "peft", dropout: float = 0.0, targets=ALL) -> Training:
    return Training(method="lora", seq_len=2048, global_batch_seqs=2, lora_rank=16, lora_targets=targets,
                    lora_impl=impl, lora_dropout=dropout)


def _step(training: Training, model=None) -> float:
    """An eager torchtitan-style step (torch_compile off: the implementations' own counts; test_lora_compiled.py
    has the compiled ones)."""
    st = Strategy(dp=1, micro_batch=2, recompute="none", framework="torchtitan", zero=3, torch_compile=False)
    return estimate_time(model or llama8b(), training, h100_cluster(1), st).step_s


def test_automodel_scales_the_rank_wide_output_so_its_adapters_stream_less():
    peft, auto = _step(_training("peft")), _step(_training("automodel"))
    assert auto < peft
    # what it drops: the scaling's read and write of d_out (forward) and of its gradient (backward): 4 d_out
    _, w_out, _, _, n = lora_adapted_widths(llama8b(), _training())
    saved = peft - auto
    bytes_saved = 32 * TOKENS * 4 * w_out * 2
    assert saved > 0.5 * bytes_saved / 3.35e12
    assert saved < 1.5 * bytes_saved / 2.0e12


def test_the_triton_kernels_read_x_twice_but_launch_fewer_kernels():
    auto, triton = _step(_training("automodel")), _step(_training("automodel-triton"))
    w_in = lora_adapted_widths(llama8b(), _training())[0]
    # one more d_in read in the backward, 3 kernels fewer per adapted linear: the two nearly cancel at this size
    assert triton == pytest.approx(auto, rel=0.02)
    assert triton - auto < 32 * TOKENS * w_in * 2 / 2.0e12


@pytest.mark.parametrize("impl", LORA_IMPLS)
def test_dropout_costs_a_pass_each_way_and_p_zero_costs_nothing(impl):
    none, zero, some = (_step(_training(impl, p)) for p in (0.0, 0.0, 0.1))
    assert zero == none
    assert some > none
    # the rate does not matter, only whether there is a dropout
    assert _step(_training(impl, 0.5)) == pytest.approx(some)


def test_dropout_sits_on_the_input_under_peft_and_on_the_output_under_automodel():
    w_in, w_out, _, _, _ = lora_adapted_widths(llama8b(), _training())
    peft = _step(_training("peft", 0.1)) - _step(_training("peft"))
    auto = _step(_training("automodel", 0.1)) - _step(_training("automodel"))
    # 5 elements a token (2.5 each way) over d_in or d_out: the ratio of the streams is the ratio of the widths
    assert auto / peft == pytest.approx(w_out / w_in, rel=0.05)
    # and the whole of it: the stream plus a dropout kernel each way per adapted linear and layer
    kernels = 32 * 2 * len(ALL)
    # to within the host's soft maximum over the layer's GPU work, which the dropout joins (step_time._host_excess:
    # microseconds of the 23 ms)
    assert compute.stream_time(32 * TOKENS * 5 * w_out * 2, _rates(), kernels=kernels) == pytest.approx(auto, rel=1e-3)


def _rates():
    return _spy(_training(), 1)[0]


def test_dropout_saves_a_one_byte_mask_on_its_side():
    m = llama8b()
    w_in, w_out, _, _, _ = lora_adapted_widths(m, _training())

    def items(tr: Training) -> dict[str, float]:
        return layer_items(m, tr, moe=False, profile="hf", recompute="none", impl="flash").detail

    assert "lora_dropout" not in items(_training("automodel"))
    assert items(_training("automodel", 0.1))["lora_dropout"] == pytest.approx(w_out)  # mask, 1 B
    assert items(_training("peft", 0.1))["lora_dropout"] == pytest.approx(3 * w_in)  # mask + the dropped 2-byte copy
    full = layer_items(m, _training("automodel", 0.1), moe=False, profile="hf", recompute="full", impl="flash")
    assert "lora_dropout" not in full.detail  # full recompute keeps the layer input only


def test_litgpt_drops_out_the_fused_qkv_input_once():
    """LitGPT's LoRAQKVLinear: one dropout of x for all its q / k / v adapters (memory_constants.yaml
    lora.dropout_shared_qkv); o_proj and the MLP's adapters drop out their own inputs, as PEFT's do."""
    m = llama8b()

    def items(tr: Training) -> dict[str, float]:
        return layer_items(m, tr, moe=False, profile="hf", recompute="none", impl="flash").detail

    for targets, n_qkv in ((("q_proj", "v_proj"), 2), (ALL, 3)):
        peft, lit = items(_training("peft", 0.05, targets)), items(_training("litgpt", 0.05, targets))
        assert peft["lora_dropout"] - lit["lora_dropout"] == pytest.approx(3 * (n_qkv - 1) * m.hidden)
        assert lit == items(_training("litgpt-2023", 0.05, targets))
    # one adapted qkv part: nothing shared, the same as PEFT's
    assert items(_training("litgpt", 0.05, ("q_proj",))) == items(_training("peft", 0.05, ("q_proj",)))


def test_routed_expert_adapters_drop_out_per_slot():
    m = mixtral()
    tr = _training("automodel", 0.1, ("gate_proj", "up_proj", "down_proj"))
    d = layer_items(m, tr, moe=True, profile="hf", recompute="none", impl="flash").detail
    assert d["lora_dropout_per_slot"] == pytest.approx(2 * 14336 + 4096)  # gate, up and down outputs: 1-byte mask
    assert "lora_dropout" not in d  # no dense adapter in the layer


def test_automodel_adapters_and_their_moments_take_the_base_dtype():
    st = Strategy(dp=1, micro_batch=2, recompute="none", framework="torchtitan", zero=3)
    peft = estimate_memory(llama8b(), _training("peft"), h100_cluster(1), st).items_bytes
    auto = estimate_memory(llama8b(), _training("automodel"), h100_cluster(1), st).items_bytes
    for key in ("lora_adapters", "gradients", "optimizer_states"):
        assert auto[key] == pytest.approx(peft[key] / 2), key


@settings(max_examples=30, deadline=None)
@given(impl=st.sampled_from(LORA_IMPLS), p=st.floats(0.01, 0.9),
       targets=st.lists(st.sampled_from(ALL), min_size=1, max_size=7, unique=True))
def test_dropout_never_makes_a_step_faster_nor_a_layer_smaller(impl, p, targets):
    base, drop = _training(impl, 0.0, tuple(targets)), _training(impl, p, tuple(targets))
    assert _step(drop) > _step(base)
    saved = [layer_items(llama8b(), tr, moe=False, profile="hf", recompute="none", impl="flash")
             for tr in (base, drop)]
    assert saved[1].tp > saved[0].tp


BASE_JOB = {"model": "llama-3.1-8b", "method": "lora", "data": {"tokens": 1e8}, "seq_len": 2048,
            "global_batch": {"sequences": 8}, "hardware": {"accelerator": "h100-sxm-80gb", "count": 1}}


@pytest.mark.parametrize(("lora", "where", "words_en", "words_zh"), [
    ({"dropout": 1.0}, "lora.dropout", "less than 1", "必须小于 1"),
    ({"dropout": -0.1}, "lora.dropout", "greater than or equal to 0", "必须不小于 0"),
    ({"dropout": True}, "lora.dropout", "number", "数字"),
    ({"impl": "triton"}, "lora.impl", "automodel-triton", "automodel-triton"),
])
def test_bad_lora_options_are_refused_in_english_and_chinese(lora, where, words_en, words_zh):
    with pytest.raises(SpecError) as err:
        load_job({**BASE_JOB, "lora": lora})
    assert where in err.value.render("en") and words_en in err.value.render("en")
    assert words_zh in err.value.render("zh")


def test_the_options_are_echoed_in_the_json_summary():
    from trainsizer.catalog import load_catalog
    from trainsizer.scenario import resolve_job

    sc = resolve_job({**BASE_JOB, "lora": {"dropout": 0.1, "impl": "automodel"}}, load_catalog())
    echo = json.loads(json.dumps(sc.summary()))["lora"]
    assert echo["dropout"] == 0.1 and echo["impl"] == "automodel"
    assert (sc.training.lora_dropout, sc.training.lora_impl) == (0.1, "automodel")
    plain = resolve_job(BASE_JOB, load_catalog())
    assert (plain.training.lora_dropout, plain.training.lora_impl) == (0.0, "peft")


def test_the_default_is_the_peft_count_the_development_set_runs():
    assert _step(_training()) == _step(dataclasses.replace(_training(), lora_impl="peft"))


def _tp_step(training: Training, tp: int, sp: bool = True) -> float:
    st = Strategy(tp=tp, dp=1, micro_batch=2, recompute="none", framework="megatron-core", sequence_parallel=sp)
    return estimate_time(llama8b(), training, h100_cluster(tp), st).step_s


def _spy(training: Training, tp: int, sp: bool = True) -> tuple:
    """(the job's rates, seconds of one layer's adapters per micro-batch) of a Megatron-Core job at TP `tp`, read
    through a spy on step_time._lora_adapters."""
    from trainsizer.estimate import step_time

    seen = []
    real = step_time._lora_adapters

    def spy(x, **kw):  # the training step's call; forward_compute's eval-mode one (eval_forward) not recorded
        v = real(x, **kw)
        if not kw:
            seen.append((x.r, float(v)))
        return v

    step_time._lora_adapters = spy
    try:
        _tp_step(training, tp, sp)
    finally:
        step_time._lora_adapters = real
    return seen[0]


def _adapter_s(training: Training, tp: int, sp: bool = True) -> float:
    return _spy(training, tp, sp)[1]


def test_under_tp_a_column_parallel_adapter_reads_its_whole_input_and_a_row_parallel_one_writes_its_whole_output():
    col, row = _training(targets=("q_proj",)), _training(targets=("o_proj",))
    h, q = 4096, 4096
    # q_proj (column-parallel): A reads all of x on every rank, B writes 1 / t of q; o_proj (row-parallel): A reads
    # 1 / t of its input, B writes (and the add reads and writes) the whole partial sum
    per_rank_col = {t: (1 + 5) * h + (6 + 4) * q / t for t in (1, 2, 4)}
    per_rank_row = {t: (1 + 5) * h / t + (6 + 4) * h for t in (1, 2, 4)}
    launches = 10 * float(_rates().kernel_fixed_s)  # 4 forward and 6 backward kernels a layer, any width
    for widths, tr in ((per_rank_col, col), (per_rank_row, row)):
        s1, s4 = _adapter_s(tr, 1) - launches, _adapter_s(tr, 4) - launches
        assert s4 / s1 == pytest.approx(widths[4] / widths[1], rel=0.03)


def test_nemo_a2a_keeps_a_row_parallel_adapters_output_split_under_sequence_parallelism():
    row = _training(targets=("o_proj",))
    a2a = dataclasses.replace(row, lora_a2a=True)
    assert _adapter_s(a2a, 4) < _adapter_s(row, 4)
    assert _adapter_s(a2a, 4, sp=False) == _adapter_s(row, 4, sp=False)  # without SP it gathers the output whole
    assert _adapter_s(a2a, 1) == _adapter_s(row, 1)
    col = _training(targets=("q_proj",))
    assert _adapter_s(dataclasses.replace(col, lora_a2a=True), 4) == _adapter_s(col, 4)


def test_a2a_is_validated_and_echoed():
    with pytest.raises(SpecError) as err:
        load_job({**BASE_JOB, "lora": {"a2a": "sometimes"}})
    assert "lora.a2a" in err.value.render("en") and "true or false" in err.value.render("en")
    assert "true 或 false" in err.value.render("zh")
    from trainsizer.catalog import load_catalog
    from trainsizer.scenario import resolve_job

    sc = resolve_job({**BASE_JOB, "lora": {"a2a": True}}, load_catalog())
    assert sc.summary()["lora"]["a2a"] is True and sc.training.lora_a2a
