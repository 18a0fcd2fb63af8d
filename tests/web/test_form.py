"""The form: every field labelled and explained in both languages, inline messages for bad values,
uploads read as data, user input escaped."""

from __future__ import annotations

import re

import pytest

from trainsizer.errors import SpecError
from trainsizer.web.form import DEFAULTS, form_from_job, job_from_form
from trainsizer.web.jobinput import validate_job
from trainsizer.web.token import decode_job, encode_job

from .conftest import REPO, example

GOOD = {"model": "llama-3.1-8b", "method": "lora", "lora.rank": "16", "data_kind": "tokens",
        "data.tokens": "1e9", "data.epochs": "1", "seq_len": "4096", "batch_kind": "sequences",
        "batch_value": "64", "precision": "bf16", "optimizer": "adamw", "goal.deadline_days": "7",
        "goal.budget.currency": "USD", "goal.procurement": "rent", "lang": "en"}


def inline_errors(html: str) -> dict[str, str]:
    return dict(re.findall(r'<div class="error" role="alert" id="([^"]+)-error">([^<]*)</div>', html))


@pytest.mark.parametrize("lang, word", [("en", "Sequence length"), ("zh", "序列长度")])
def test_form_page_in_both_languages(client, lang, word):
    r = client.get("/", params={"lang": lang})
    assert r.status_code == 200
    assert word in r.text
    assert 'src="http' not in r.text and 'href="http' not in r.text  # nothing from other hosts


def test_browser_language_decides_without_a_parameter(client):
    assert "序列长度" in client.get("/", headers={"accept-language": "zh-CN,zh;q=0.9"}).text


def test_every_input_has_a_label_and_help(client):
    html = client.get("/", params={"lang": "en"}).text
    names = set(re.findall(r'<(?:input|select)[^>]* name="([^"]+)"', html)) - {"lang", "model_json"}
    assert {"model", "model_config", "method", "lora.rank", "data.tokens", "data.dataset_gb", "data.samples",
            "data.avg_tokens", "data.length_sigma", "data.max_tokens", "packing", "data.epochs", "seq_len", "batch_value", "precision", "goal.deadline_days",
            "goal.budget.amount", "goal.budget.currency", "goal.procurement", "constraints.include",
            "constraints.exclude", "constraints.market", "constraints.max_nodes", "constraints.rack_kw",
            "constraints.cooling", "text_language", "data.bytes_per_token"} <= names
    for name in names:
        assert f'id="{name}-help"' in html, name


def test_unpacked_sample_lengths_and_packing_reach_the_job():
    """The samples group carries the length spread, the longest sample and packing; a job's values come back."""
    values = DEFAULTS | {"data_kind": "samples", "data.samples": "52002", "data.avg_tokens": "125",
                         "data.length_sigma": "0.6", "data.max_tokens": "1024", "packing": "false"}
    job = job_from_form(values, None)
    assert job["data"] == {"samples": 52002, "avg_tokens": 125, "length_sigma": 0.6, "max_tokens": 1024, "epochs": 1}
    assert "packing" not in job
    validate_job(job)
    packed = job_from_form(values | {"packing": "true"}, None)
    assert packed["packing"] is True
    back = form_from_job(packed)
    assert back["packing"] == "true" and back["data.length_sigma"] == "0.6" and back["data_kind"] == "samples"
    with pytest.raises(SpecError):
        job_from_form(values | {"packing": "maybe"}, None)


@pytest.mark.parametrize("field, value", [
    ("data.length_sigma", "4"), ("data.length_sigma", "wide"), ("data.max_tokens", "-5"),
    ("data.max_tokens", "100"),   # below avg_tokens 125: beside the longest sample, not the data kind
])
def test_bad_sample_length_is_shown_beside_its_input(client, field, value):
    samples = {"data_kind": "samples", "data.samples": "52002", "data.avg_tokens": "125"}
    for lang in ("en", "zh"):
        r = client.post("/plan", data=GOOD | samples | {field: value, "lang": lang})
        assert r.status_code == 422
        errors = inline_errors(r.text)
        assert list(errors) == [field], errors


def test_defaults_are_a_valid_job():
    validate_job(job_from_form(DEFAULTS, None))


def test_good_form_redirects_to_its_result(client):
    r = client.post("/plan", data=GOOD, follow_redirects=False)
    assert r.status_code == 303
    token = r.headers["location"].split("job=")[1].split("&")[0]
    job = decode_job(token, 100_000)
    assert job["model"] == "llama-3.1-8b" and job["data"] == {"tokens": 1e9, "epochs": 1}
    assert job["lora"] == {"rank": 16}


@pytest.mark.parametrize("field, value, shown_at", [
    ("data.tokens", "-3", "data.tokens"),
    ("data.tokens", "lots", "data.tokens"),
    ("seq_len", "0", "seq_len"),
    ("batch_value", "x", "batch_value"),
    ("lora.rank", "0", "lora.rank"),
    ("goal.deadline_days", "0", "goal.deadline_days"),
    ("goal.budget.amount", "-1", "goal.budget.amount"),
    ("constraints.max_nodes", "1.5", "constraints.max_nodes"),
    ("model", "llama-3.1-9b", "model"),
    ("model", "/etc/passwd", "model"),
    ("precision", "bf17", "precision"),
])
def test_bad_value_is_shown_beside_its_input(client, field, value, shown_at):
    r = client.post("/plan", data=GOOD | {field: value})
    assert r.status_code == 422
    errors = inline_errors(r.text)
    assert list(errors) == [shown_at], errors
    assert 'id="job-form"' in r.text  # the form is still there, with what was typed
    assert f'value="{value}"' in r.text or value in r.text


def test_bad_include_names_the_accelerator(client):
    r = client.post("/plan", data=GOOD | {"constraints.include": ["h100-sxm-80gb", "tpu-v9"]})
    errors = inline_errors(r.text)
    assert "constraints.include" in errors and "tpu-v9" in errors["constraints.include"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_message_is_the_cli_message_without_the_field_path(client, lang):
    """Beside its input the message says what the CLI says, less "job: data.tokens: " (the input's label
    already names the field)."""
    from trainsizer.errors import SpecError
    from trainsizer.spec import load_job

    r = client.post("/plan", data=GOOD | {"data.tokens": "-3", "lang": lang})
    with pytest.raises(SpecError) as err:
        load_job(job_from_form(GOOD | {"data.tokens": "-3"}, None))
    cli = err.value.render(lang)
    prefix = "job: data.tokens: " if lang == "en" else "job：data.tokens："
    assert cli.startswith(prefix), cli
    rest = cli[len(prefix):]
    shown = inline_errors(r.text)["data.tokens"]
    assert shown == rest[:1].upper() + rest[1:] and "data.tokens" not in shown, shown


def test_user_input_is_escaped(client):
    evil = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'
    r = client.post("/plan", data=GOOD | {"name": evil, "data.tokens": "-1"})
    assert r.status_code == 422
    assert "<script>alert(1)" not in r.text and "<img src=x" not in r.text
    assert "&lt;script&gt;" in r.text


def test_uploaded_config_is_the_model(client):
    config = (REPO / "examples/configs/tiny-llama/config.json").read_bytes()
    r = client.post("/plan", data=GOOD | {"model": ""}, files={"model_config": ("config.json", config)},
                    follow_redirects=False)
    assert r.status_code == 303, inline_errors(r.text)
    job = decode_job(r.headers["location"].split("job=")[1].split("&")[0], 100_000)
    assert job["model"]["model_type"] == "llama"


@pytest.mark.parametrize("content, words", [(b"not json", "not valid JSON"), (b"[1]", "JSON object"),
                                            (b'{"model_type": "llama"}', "hidden_size: missing required key")])
def test_bad_upload_is_an_inline_message(client, content, words):
    r = client.post("/plan", data=GOOD, files={"model_config": ("config.json", content)})
    assert r.status_code == 422
    assert words in " ".join(inline_errors(r.text).values())


def test_upload_size_limit(client):
    big = b'{"model_type": "llama", "pad": "' + b"x" * 2_000_000 + b'"}'
    r = client.post("/plan", data=GOOD, files={"model_config": ("config.json", big)})
    assert r.status_code == 413


def test_language_switch_keeps_what_was_typed(client):
    r = client.get("/", params=GOOD | {"seq_len": "8192", "switch_lang": "zh"})
    assert "序列长度" in r.text and 'value="8192"' in r.text


@pytest.mark.parametrize("name", ["qlora-7b-one-gpu.yaml", "sft-70b-search.yaml", "dpo-72b-16gpu.yaml",
                                  "pretrain-405b.yaml"])
def test_form_round_trip_of_examples(name):
    job = example(name)
    for key in ("hardware", "strategy", "moe_capacity_factor"):  # not on the form: the plan chooses them
        job.pop(key, None)
    job["constraints"] = {"currency": "USD"} | job.get("constraints", {})
    again = job_from_form(form_from_job(job), None)
    assert validate_job(again).model_dump() == validate_job(job).model_dump()


def test_job_links_round_trip_and_refuse_garbage():
    job = example("sft-70b-search.yaml")
    assert decode_job(encode_job(job), 100_000) == job
    from trainsizer.errors import SpecError

    for bad in ("!!!", "eJzz", encode_job({"x": "y" * 10_000})):
        with pytest.raises(SpecError):
            decode_job(bad, 1_000)


@pytest.mark.parametrize("lang, said, not_said", [("zh", "不是 trainsizer 生成的作业链接（无法解码）", "does not decode"),
                                                ("en", "not a job link made by trainsizer (it does not decode)", "无法")])
def test_a_broken_edit_link_is_refused_in_the_page_language(client, lang, said, not_said):
    html = client.get("/", params={"job": "!!!", "lang": lang}).text
    assert said in html and not_said not in html


def test_edit_link_prefills_the_form(client):
    job = example("sft-70b-search.yaml")
    html = client.get("/", params={"job": encode_job(job), "lang": "en"}).text
    assert 'value="llama-3.1-70b"' in html and 'value="8192"' in html
    assert inline_errors(html) == {}


def test_the_chinese_form_words_its_choices_and_brackets(client):
    """A Chinese reader saw 'rent', 'global' and '只考虑这些加速卡 (可选)' with ASCII brackets."""
    zh = client.get("/?lang=zh").text
    assert '<option value="rent" selected>租用</option>' in zh and '<option value="buy">购买</option>' in zh
    assert '<option value="global" selected>全球</option>' in zh and ">中国市场、国产优先</option>" in zh
    assert "<em>（可选）</em>" in zh and "(可选)" not in zh
    en = client.get("/?lang=en").text
    assert '<option value="rent" selected>rent</option>' in en and "<em> (optional)</em>" in en


@pytest.mark.parametrize("field", ["method", "precision", "optimizer"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_method_precision_and_optimizer_show_their_names_with_the_code_as_value(client, field, lang):
    """The form listed 'lora', 'bf16', 'adamw': each choice now reads by its name, the code a job file writes
    kept in brackets, and the value sent is still the code."""
    from trainsizer.web.form import CHOICES

    html = client.get("/", params={"lang": lang}).text
    select = re.search(rf'<select id="{re.escape(field)}"[^>]*>(.*?)</select>', html, re.S).group(1)
    options = dict(re.findall(r'<option value="([^"]*)"[^>]*>([^<]*)</option>', select))
    assert set(options) == set(CHOICES[field])
    open_, close = ("（", "）") if lang == "zh" else (" (", ")")
    for code, shown in options.items():
        assert shown.endswith(f"{open_}{code}{close}") and len(shown) > len(code) + 2, (code, shown)


def test_the_accelerator_lists_use_the_pages_brackets(client):
    zh = client.get("/", params={"lang": "zh"}).text
    en = client.get("/", params={"lang": "en"}).text
    assert re.search(r">h100-sxm-80gb（英伟达，\d+ GB）</option>", zh) and "h100-sxm-80gb (" not in zh
    assert re.search(r">h100-sxm-80gb \(NVIDIA, \d+ GB\)</option>", en)


@pytest.mark.parametrize("lang, names", [("en", ("NVIDIA", "AMD", "Intel", "Huawei")),
                                         ("zh", ("英伟达", "AMD", "英特尔", "华为"))])
def test_accelerator_choices_name_the_vendor(client, lang, names):
    """The accelerator lists print the vendor's name from the catalog's `vendors` section, not its code."""
    html = client.get("/", params={"lang": lang}).text
    options = re.findall(r'<option value="[a-z0-9-]+"(?: selected)?>([^<]*GB[)）])</option>', html)
    assert options
    assert not [o for o in options if re.search(r"[(（](nvidia|amd|intel|huawei)[,，]", o)]
    for name in names:
        assert any(f"{name}，" in o or f"{name}," in o for o in options), name


def test_the_training_framework_reaches_the_plan():
    """The form's training framework: auto sends no strategy; hf sends a strategy that names only the framework,
    which the plan searches on (no pipelined layout for 8B LoRA on 2x RTX 5090, and no "own strategy" note)
    and which comes back into the form; a value outside the list is refused."""
    from trainsizer.catalog import load_catalog
    from trainsizer.plan.core import make_plan

    assert "strategy" not in job_from_form(DEFAULTS, None)
    job = job_from_form(DEFAULTS | {"strategy.framework": "hf"}, None)
    assert job["strategy"] == {"framework": "hf"}
    validate_job(job)
    assert form_from_job(job)["strategy.framework"] == "hf"
    job["hardware"] = {"accelerator": "rtx-5090", "count": 2, "per_node": 2}
    plan = make_plan(job, load_catalog())
    assert plan.recommended.strategy.pp == 1 and plan.recommended.strategy.framework == "hf"
    assert not any("strategy" in n and ("not used" in n or "own" in n) for n in plan.notes)
    with pytest.raises(SpecError):
        job_from_form(DEFAULTS | {"strategy.framework": "keras"}, None)


def test_the_currency_defaults_to_the_markets_as_a_job_file_does():
    """The form sent constraints.currency USD whatever the market, so a China-market plan from the web page priced in
    USD where the same job file gets CNY (spec.Job._one_currency); its default is now the market's."""
    china = job_from_form(DEFAULTS | {"constraints.market": "china", "goal.budget.amount": "100000"}, None)
    assert "currency" not in china.get("constraints", {}) and "currency" not in china["goal"]["budget"]
    assert validate_job(china).currency == "CNY"
    assert validate_job(job_from_form(DEFAULTS, None)).currency == "USD"
    usd = job_from_form(DEFAULTS | {"constraints.market": "china", "goal.budget.currency": "USD"}, None)
    assert validate_job(usd).currency == "USD"
    assert form_from_job(china)["goal.budget.currency"] == ""
    with pytest.raises(SpecError):
        job_from_form(DEFAULTS | {"goal.budget.currency": "EUR"}, None)


@pytest.mark.parametrize(("lang", "label"), [("en", "by market (USD; CNY in China)"), ("zh", "按市场")])
def test_the_market_currency_choice_is_labelled(client, lang, label):
    assert label in client.get("/", params={"lang": lang}).text


def _config(**changes) -> bytes:
    import json

    config = json.loads((REPO / "examples/configs/tiny-llama/config.json").read_text(encoding="utf-8"))
    return json.dumps({**config, **changes}).encode()


def test_an_upload_is_kept_when_another_field_is_wrong(client):
    """A browser never refills a file input: the form sent back keeps the parsed upload (and says so), and
    sending it again with the field fixed plans the uploaded model, not an empty one."""
    r = client.post("/plan", data=GOOD | {"model": "", "data.tokens": "-1"},
                    files={"model_config": ("config.json", _config())})
    assert r.status_code == 422 and list(inline_errors(r.text)) == ["data.tokens"]
    kept = re.search(r'<input type="hidden" name="model_json" value="([^"]+)">', r.text)
    assert kept and "the config.json given before is kept" in r.text
    import html

    again = client.post("/plan", data=GOOD | {"model": "", "model_json": html.unescape(kept.group(1))},
                        follow_redirects=False)
    assert again.status_code == 303, inline_errors(again.text)
    job = decode_job(again.headers["location"].split("job=")[1].split("&")[0], 100_000)
    assert job["model"]["model_type"] == "llama"


@pytest.mark.parametrize("lang, words", [("en", "hidden_size: must be >= 1 (got -64)"),
                                         ("zh", "hidden_size：必须 >= 1（得到 -64）")])
def test_a_bad_key_in_an_uploaded_config_is_shown_beside_the_upload(client, lang, words):
    r = client.post("/plan", data=GOOD | {"model": "", "lang": lang},
                    files={"model_config": ("config.json", _config(hidden_size=-64))})
    assert r.status_code == 422
    errors = inline_errors(r.text)
    import html

    assert list(errors) == ["model_config"] and words in html.unescape(errors["model_config"]), errors
    assert "job" not in errors["model_config"]


def test_a_config_pasted_into_the_model_box_is_the_model(client):
    r = client.post("/plan", data=GOOD | {"model": _config().decode()}, follow_redirects=False)
    assert r.status_code == 303, inline_errors(r.text)
    job = decode_job(r.headers["location"].split("job=")[1].split("&")[0], 100_000)
    assert job["model"]["model_type"] == "llama"


@pytest.mark.parametrize("pasted, words", [('{"hidden_size": 64,, }', "not valid JSON"),
                                           (None, "num_hidden_layers: missing required key")])
def test_a_bad_pasted_config_is_shown_beside_the_model_box_and_kept(client, pasted, words):
    import json

    if pasted is None:
        config = json.loads(_config())
        del config["num_hidden_layers"]
        pasted = json.dumps(config)
    r = client.post("/plan", data=GOOD | {"model": pasted})
    assert r.status_code == 422
    errors = inline_errors(r.text)
    assert list(errors) == ["model"] and words in errors["model"], errors
    import html

    box = re.search(r'<input id="model" name="model" list="presets" value="([^"]*)"', r.text)
    assert box and html.unescape(box.group(1)) == pasted  # what was pasted is still in the box


@pytest.mark.parametrize("field", ["goal.budget.amount", "data.tokens", "constraints.max_nodes"])
def test_a_number_typed_in_any_box_is_quoted_as_a_number(client, field):
    """The budget box's value reached the job as text, so its message read "(got '-100')" where every
    other box's reads "(got -100)", as a job file's does."""
    r = client.post("/plan", data=GOOD | {field: "-100"})
    assert r.status_code == 422
    assert "(got -100)" in inline_errors(r.text)[field]


@pytest.mark.parametrize(("lang", "typed", "said"), [
    ("zh", {"batch_value": "1e12"}, ("batch_value", "（得到 1万亿）")),
    ("en", {"batch_value": "1e12"}, ("batch_value", "(got 1T)")),
    ("zh", {"data_kind": "dataset_gb", "data.dataset_gb": "-1"}, ("data.dataset_gb", "0.000001 到 1亿")),
])
def test_numbers_beside_an_input_are_the_pages_numbers(client, lang, typed, said):
    """known-gaps 67 (e): a batch of 1e12 was quoted back as 1000000000000.0 and the dataset's range read
    "1e-06 到 1e+08" on a page whose tables write 万 / 亿 (numbers.fmt_exact, as the tables' fmt_num)."""
    r = client.post("/plan", data=GOOD | typed | {"lang": lang})
    assert r.status_code == 422
    field, words = said
    assert words in inline_errors(r.text)[field], inline_errors(r.text)
