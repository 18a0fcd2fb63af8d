"""Job spec: the issue's example keys load; every kind of bad input gives a specific error."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from trainsizer.errors import SpecError
from trainsizer.spec import Job, load_job

ISSUE_EXAMPLE = """
model: llama-3.1-70b
method: full
lora: null
data: {tokens: 2.0e9}
seq_len: 4096
global_batch: {sequences: 256}
precision: bf16
optimizer: adamw
goal: {deadline_days: 14, budget: {amount: 500000, currency: USD}, procurement: rent}
constraints: {exclude: [rtx-4090], include: null, max_nodes: 64, rack_kw: 20, cooling: air}
hardware: {accelerator: h100-sxm-80gb, count: 64, per_node: 8, network: ib-ndr400}
strategy: {tp: 8, pp: 1, vpp: 1, dp: 8, cp: 1, ep: 1, zero: 3, micro_batch: 1, recompute: selective, offload: none}
"""

BASE = {"model": "llama-3.1-8b", "data": {"tokens": 1e9}, "seq_len": 2048, "global_batch": {"sequences": 64}}


def test_issue_example_loads(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(ISSUE_EXAMPLE)
    job = load_job(path)
    assert job.hardware.accelerator == "h100-sxm-80gb"
    assert job.strategy.zero == 3
    assert job.goal.budget.amount == 500000
    assert job.global_batch_sequences == 256


def test_json_file_loads(tmp_path):
    path = tmp_path / "job.json"
    path.write_text(json.dumps(BASE))
    assert load_job(path).model == "llama-3.1-8b"


def test_inline_model_and_lora_defaults():
    job = load_job({**BASE, "model": {"layers": 2, "hidden": 64}, "method": "lora"})
    assert job.lora is not None and job.lora.rank == 16


@pytest.mark.parametrize(
    ("data", "tokens"),
    [
        ({"tokens": 5e9}, 5e9),
        ({"dataset_gb": 10, "epochs": 2}, 10e9 / 4.0 * 2),
        ({"dataset_gb": 3, "bytes_per_token": 3.0}, 1e9),
        ({"samples": 1e6, "avg_tokens": 1024, "epochs": 3}, 3 * 1.024e9),
    ],
)
def test_data_quantities(data, tokens):
    assert load_job({**BASE, "data": data}).data.tokens_total == pytest.approx(tokens)


def test_batch_in_tokens_rounds_to_sequences():
    job = load_job({**BASE, "global_batch": {"tokens": 1048576}})
    assert job.global_batch_sequences == 512


@pytest.mark.parametrize(
    ("patch", "fragments"),
    [
        ({"methd": "full"}, ["methd", "unknown key", "Did you mean 'method'"]),
        ({"method": "fulll"}, ["method", "'fulll'", "Did you mean 'full'", "pretrain"]),
        ({"precision": "bf17"}, ["precision", "bf16"]),
        ({"optimizer": "adam"}, ["optimizer", "adamw"]),
        ({"seq_len": 0}, ["seq_len", "greater than 0"]),
        ({"data": {"tokens": 1, "dataset_gb": 2}}, ["data", "exactly one"]),
        ({"data": {"samples": 10}}, ["data", "avg_tokens"]),
        ({"global_batch": {}}, ["global_batch", "exactly one"]),
        ({"lora": {"rank": 8}}, ["lora", "method"]),
        ({"method": "lora", "lora": {"targets": ["qproj"]}}, ["lora.targets", "q_proj"]),
        ({"method": "qlora", "precision": "fp8"}, ["qlora", "fp8"]),
        ({"strategy": {"tp": 2}}, ["strategy", "hardware"]),
        ({"packing": True}, ["packing", "avg_tokens"]),
        ({"data": {"tokens": 1e9, "length_sigma": 0.5}}, ["length_sigma", "data.samples"]),
        ({"data": {"samples": 10, "avg_tokens": 500, "max_tokens": 100}}, ["max_tokens 100", "avg_tokens 500"]),
        ({"data": {"samples": 10, "avg_tokens": 500, "length_sigma": 4}}, ["length_sigma", "3"]),
        ({"hardware": {"accelerator": "h100-sxm-80gb", "count": 12, "per_node": 8}},
         ["hardware", "multiple of per_node"]),
        ({"hardware": {"accelerator": "h100-sxm-80gb", "count": 8, "network": {"nics": 4}}},
         ["hardware.network", "nics_per_node"]),
        ({"hardware": {"accelerator": "x", "count": 8}, "strategy": {"tpp": 2}}, ["strategy.tpp", "'tp'"]),
        ({"hardware": {"accelerator": "x", "count": 8}, "strategy": {"zero": 2, "fsdp": "full"}}, ["fsdp", "zero"]),
        ({"hardware": {"accelerator": "x", "count": 8}, "strategy": {"zero": 0, "fsdp": "full"}},
         ["fsdp: full", "zero: 0", "--fsdp none"]),
        ({"goal": {"budget": {"amount": 5, "currency": "EUR"}}}, ["goal.budget.currency", "USD", "CNY"]),
        ({"hardware": {"accelerator": "x", "count": 8}, "strategy": {"activation_offload": 0}},
         ["activation_offload", "true", "cpu_offloading_num_layers"]),
        ({"hardware": {"accelerator": "x", "count": 8}, "strategy": {"activation_offload": "some"}},
         ["activation_offload"]),
        ({"hardware": {"accelerator": "x", "count": 8}, "strategy": {"recompute_modules": ["mla_up_proj"],
                                                                     "recompute": "none"}},
         ["recompute_modules", "recompute: selective", "none"]),
        ({"hardware": {"accelerator": "x", "count": 8}, "strategy": {"recompute_modules": ["attention"]}},
         ["recompute_modules", "core_attn", "mla_up_proj"]),
        ({"constraints": {"cooling": "water"}}, ["constraints.cooling", "air", "liquid"]),
    ],
)
def test_bad_input_messages(patch, fragments):
    with pytest.raises(SpecError) as info:
        load_job({**BASE, **patch})
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, message


@pytest.mark.parametrize(
    ("patch", "fragment"),
    [
        ({"seq_len": True}, "seq_len: must be a whole number"),
        ({"data": {"samples": 10, "avg_tokens": True}}, "data.avg_tokens: must be a number"),
        ({"data": {"samples": 10, "avg_tokens": 500, "length_sigma": True}}, "data.length_sigma: must be a number"),
        ({"data": {"samples": 10, "avg_tokens": 500, "max_tokens": False}}, "data.max_tokens: must be a number"),
        ({"hardware": {"accelerator": "x", "count": 8},
          "strategy": {"recompute": "full", "recompute_method": "block", "recompute_num_layers": True}},
         "strategy.recompute_num_layers: must be a whole number"),
    ],
)
def test_true_or_false_is_no_number(patch, fragment):
    """YAML true / false where a number belongs is refused, not read as 1 / 0."""
    with pytest.raises(SpecError) as info:
        load_job({**BASE, **patch})
    assert fragment in str(info.value), str(info.value)


def test_true_or_false_stays_allowed_where_a_field_takes_a_flag():
    strategy = {"activation_offload": True, "fp8_transpose_cache": False, "torch_compile": False}
    job = load_job({**BASE, "hardware": {"accelerator": "x", "count": 8}, "strategy": strategy})
    assert job.strategy is not None and job.strategy.activation_offload is True
    assert job.strategy.fp8_transpose_cache is False


def test_missing_required_key_named():
    data = dict(BASE)
    del data["seq_len"]
    with pytest.raises(SpecError, match=r"seq_len: required key is missing"):
        load_job(data)


def test_hardware_may_pin_only_the_gpu_count():
    """known-gaps 43 (b): "1,024 GPUs, any accelerator" is a hardware block without an accelerator (the plan's
    search pins the count); a parallel layout still needs the accelerator it is checked on (en + zh)."""
    job = load_job({**BASE, "hardware": {"count": 1024}})
    assert job.hardware is not None and job.hardware.accelerator is None and job.hardware.count == 1024
    assert load_job({**BASE, "hardware": {"count": 64}, "strategy": {"framework": "torchtitan"}}).strategy
    with pytest.raises(SpecError) as info:
        load_job({**BASE, "hardware": {"count": 64}, "strategy": {"tp": 8}})
    assert "needs hardware.accelerator" in str(info.value)
    assert "hardware.accelerator" in info.value.render("zh") and "布局" in info.value.render("zh")


def test_file_errors(tmp_path):
    with pytest.raises(SpecError, match="file not found"):
        load_job(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: [unclosed\n")
    with pytest.raises(SpecError, match=r"bad.yaml:\d+:\d+: not valid YAML"):
        load_job(bad)
    listy = tmp_path / "list.yaml"
    listy.write_text("- a\n- b\n")
    with pytest.raises(SpecError, match=r"top level must be a mapping.* \(got \['a', 'b'\]\)"):  # not 'list'
        load_job(listy)


@given(st.text(min_size=1, max_size=12).filter(lambda k: k not in Job.model_fields))
def test_any_unknown_top_level_key_is_rejected(key):
    with pytest.raises(SpecError, match="unknown key"):
        load_job({**BASE, key: 1})


def test_job_round_trips_through_yaml(tmp_path):
    job = load_job(yaml.safe_load(ISSUE_EXAMPLE))
    dumped = yaml.safe_dump(job.model_dump(mode="json", exclude_none=True))
    assert load_job(yaml.safe_load(dumped)) == job


@pytest.mark.parametrize(("section", "value", "field"), [
    ("data", {"tokens": float("inf")}, "data.tokens"),
    ("data", {"tokens": 1e9, "epochs": float("nan")}, "data.epochs"),
    ("data", {"dataset_gb": 1, "bytes_per_token": 1e-300}, "data.bytes_per_token"),
    ("global_batch", {"sequences": 10**30}, "global_batch.sequences"),
    ("goal", {"deadline_days": float("inf")}, "goal.deadline_days"),
    ("goal", {"budget": {"amount": float("inf")}}, "goal.budget.amount"),
    ("constraints", {"rack_kw": float("inf")}, "constraints.rack_kw"),
    ("hardware", {"accelerator": "h100", "count": 10**9}, "hardware.count"),
    ("hardware", {"accelerator": "h100", "count": 8,
                  "network": {"nics_per_node": 8, "gbps_per_nic": 1e-9}}, "hardware.network.gbps_per_nic"),
])
def test_absurd_values_are_refused_naming_the_field(section, value, field):
    with pytest.raises(SpecError, match="job: " + re.escape(field) + ":"):
        load_job({**BASE, section: value})


def test_no_pydantic_class_names_in_messages():
    with pytest.raises(SpecError) as err:
        load_job({**BASE, "global_batch": 7})
    assert "instance of" not in str(err.value) and "GlobalBatch" not in str(err.value)
    assert "expected a mapping of sequences, tokens" in str(err.value)


def test_union_field_of_the_wrong_shape_names_the_shapes():
    with pytest.raises(SpecError, match=r"job: model: must be one of: mapping \| text \(got 5\)"):
        load_job({**BASE, "model": 5})


def test_a_mapping_where_a_number_belongs_is_shown_as_written():
    """A field given a mapping (a slip of indentation) names what it got, as a list or a word would be."""
    with pytest.raises(SpecError, match=r"job: seq_len: must be a whole number \(got \{nested: 2048\}\)"):
        load_job({**BASE, "seq_len": {"nested": 2048}})


def test_a_rule_over_a_whole_section_does_not_echo_the_section():
    with pytest.raises(SpecError) as err:
        load_job({**BASE, "method": "pretrain", "lora": {"rank": 8}})
    assert "lora settings given" in str(err.value) and "(got {" not in str(err.value)


@pytest.mark.parametrize(
    ("patch", "fragment", "zh"),
    [
        ({"data": {"tokens": "2B"}}, "data.tokens: must be a number in digits or e-notation, without a k / M / B "
                                     "multiplier: write 2B as 2e9", "请把 2B 写成 2e9"),
        ({"goal": {"budget": {"amount": "500k", "currency": "USD"}}}, "write 500k as 500000", "请把 500k 写成 500000"),
        ({"constraints": {"rack_kw": "20kW"}}, "the key's name gives the unit, so write 20kW as 20", "请把 20kW 写成 20"),
        ({"goal": {"deadline_days": "14 days"}}, "write 14 days as 14", "请把 14 days 写成 14"),
        ({"seq_len": "4k"}, "seq_len: must be a whole number in digits, without a k / M / B multiplier",
         "不带 k / M / B 等倍数后缀"),
        ({"seq_len": "long"}, "seq_len: must be a whole number (got 'long')", "必须是整数"),
    ],
)
def test_a_number_written_as_people_say_it_gets_the_plain_number(patch, fragment, zh):
    """'2B' tokens, '500k' dollars, '20kW' for rack_kw: the error says what to write instead, in either language."""
    with pytest.raises(SpecError) as info:
        load_job({**BASE, **patch})
    assert fragment in str(info.value), str(info.value)
    assert zh in info.value.render("zh"), info.value.render("zh")


@given(st.floats(min_value=1e-3, max_value=1e15, allow_nan=False), st.sampled_from(["k", "M", "B", "T"]))
def test_the_plain_number_suggested_reads_back_as_the_same_amount(number, word):
    from trainsizer.spec.load import _MULTIPLIERS, _plain

    assert float(_plain(number * _MULTIPLIERS[word])) == pytest.approx(number * _MULTIPLIERS[word], rel=1e-5)


@pytest.mark.parametrize(
    ("goal", "en", "zh"),
    [
        ({"budget": {"amount": 1e-300}}, "goal.budget.amount: must be greater than or equal to 1 (got 1E-300). "
                                         "Allowed: from 1 to 10T.", "必须不小于 1（得到 1E-300）。允许：1 到 10万亿。"),
        ({"budget": {"amount": 0.5, "currency": "CNY"}}, "(got 0.5). Allowed: from 1 to 10T.", "允许：1 到 10万亿"),
        ({"deadline_days": 1e-9}, "goal.deadline_days: must be greater than or equal to 0.001 (got 1E-9). "
                                  "Allowed: from 0.001 to 3,650.", "允许：0.001 到 3,650。"),
    ],
)
def test_an_absurdly_small_budget_or_deadline_names_the_allowed_range(goal, en, zh):
    """A positive but absurd budget (1e-300 USD passed `gt=0` and ranked every option over budget) is refused,
    naming the field, the value and the whole allowed range, in either language."""
    with pytest.raises(SpecError) as info:
        load_job({**BASE, "goal": goal})
    assert en in str(info.value), str(info.value)
    assert zh in info.value.render("zh"), info.value.render("zh")


def test_an_open_lower_bound_reads_as_greater_than():
    with pytest.raises(SpecError) as info:
        load_job({**BASE, "seq_len": 0})
    assert "seq_len: must be greater than 0 (got 0). Allowed: greater than 0, up to 10M." in str(info.value)
    assert "允许：大于 0，不超过 1000万。" in info.value.render("zh"), info.value.render("zh")


def test_one_currency_per_job():
    """A budget without a currency is read in constraints.currency (it was read in USD beside CNY); a job naming two
    currencies is refused (the ranking converts no price); unnamed, the market's currency prices the job."""
    job = Job(**BASE, goal={"budget": {"amount": 1.5e6}}, constraints={"currency": "CNY"})
    assert job.goal.budget.currency == "CNY" and job.currency == "CNY" and not job.currency_from_market
    with pytest.raises(SpecError, match="constraints.currency is CNY, but goal.budget.currency is USD") as err:
        load_job({**BASE, "goal": {"budget": {"amount": 1.5e6, "currency": "USD"}},
                          "constraints": {"currency": "CNY"}})
    assert err.value.where.endswith("constraints")
    china = Job(**BASE, constraints={"market": "china"})
    assert china.currency == "CNY" and china.currency_from_market
    said = Job(**BASE, constraints={"market": "china", "currency": "USD"})
    assert said.currency == "USD" and not said.currency_from_market
    assert Job(**BASE).currency == "USD" and not Job(**BASE).currency_from_market
    budget_only = Job(**BASE, goal={"budget": {"amount": 1e5, "currency": "CNY"}})
    assert budget_only.constraints.currency == "CNY" and not budget_only.currency_from_market


@pytest.mark.parametrize(("patch", "en", "zh"), [
    ({"data": {"dataset_gb": -1}}, "(got -1). Allowed: from 0.000001 to 100M.", "（得到 -1）。允许：0.000001 到 1亿。"),
    ({"global_batch": {"sequences": 1e12}}, "(got 1T).", "（得到 1万亿）。"),
    ({"seq_len": 123456789.5}, "(got 123.4567895M).", "（得到 1.234567895亿）。"),
])
def test_numbers_in_messages_are_written_as_the_tables_write_them(patch, en, zh):
    """A bound or a typed value in the reader's numbers (numbers.fmt_exact: 万 / 亿 in Chinese, M / T in English,
    never rounded): the range read '1e-06 到 1e+08' and a batch of 1e12 was quoted back as 1000000000000.0."""
    with pytest.raises(SpecError) as info:
        load_job({**BASE, **patch})
    assert en in str(info.value), str(info.value)
    assert zh in info.value.render("zh"), info.value.render("zh")


@pytest.mark.parametrize("as_file", [True, False])
def test_a_model_config_given_as_the_job_is_named_as_such(tmp_path, as_file):
    """A Hugging Face config.json passed where the job goes (`trainsizer plan config.json`, or posted to the API)
    read "architectures: unknown key. Allowed: name, model, method, ..." with nothing on what the file is."""
    config = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 2048,
              "num_hidden_layers": 48, "vocab_size": 151936}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_job(path if as_file else config)
    en, zh = info.value.render("en"), info.value.render("zh")
    assert "config.json" in en and "qwen3_moe" in en and "model:" in en and "unknown key" not in en
    assert "qwen3_moe" in zh and "作业" in zh
    if as_file:
        assert f"model: {path}" in en
    # a job that names its model and carries a stray model_type key is still an unknown key
    with pytest.raises(SpecError, match="unknown key"):
        load_job({**BASE, "model_type": "llama"})
