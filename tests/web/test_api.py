"""The HTTP API: same answers and same error messages as the CLI, 4xx JSON for every bad input."""

from __future__ import annotations

import json
import re

import pytest

from trainsizer.catalog import load_catalog
from trainsizer.errors import SpecError
from trainsizer.evaluate import evaluate, reverse_questions
from trainsizer.jsonable import to_jsonable
from trainsizer.scenario import resolve_job
from trainsizer.spec import load_job

from .conftest import REPO, example


def assert_error(r, status: int, field: str | None = None) -> dict:
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["message"]
    assert "Traceback" not in r.text
    if field is not None:
        assert err["field"] == field, err
    return err


def test_estimate_is_the_cli_estimate(client):
    job = example("sft-70b-16gpu.yaml")
    r = client.post("/api/estimate", json=job)
    assert r.status_code == 200, r.text
    cat = load_catalog()
    expected = to_jsonable(evaluate(resolve_job(job, cat), cat))
    assert r.json() == json.loads(json.dumps(expected))


def test_fit_answers_the_questions_asked(client):
    job = example("lora-8b-one-gpu.yaml")
    r = client.post("/api/fit", params={"what": ["micro-batch", "seq-len"]}, json=job)
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"job", "max_micro_batch", "max_seq_len"}
    cat = load_catalog()
    expected = reverse_questions(resolve_job(job, cat), ("micro-batch",))
    assert body["max_micro_batch"]["value"] == expected["max_micro_batch"]["value"]


def test_fit_refuses_an_unknown_question(client):
    r = client.post("/api/fit", params={"what": "batch"}, json=example("lora-8b-one-gpu.yaml"))
    err = assert_error(r, 422, "what.0")
    assert "micro-batch" in err["message"]


@pytest.mark.parametrize("patch, field", [
    ({"data": {"tokens": -1}}, "data.tokens"),
    ({"method": "sft"}, "method"),
    ({"precision": "bf17"}, "precision"),
    ({"seq_len": "long"}, "seq_len"),
    ({"goal": {"budget": {"amount": -5}}}, "goal.budget.amount"),
    ({"constraints": {"max_nodes": 0}}, "constraints.max_nodes"),
    ({"optimiser": "adamw"}, "optimiser"),
])
def test_bad_values_get_the_cli_message(client, patch, field):
    job = example("sft-70b-16gpu.yaml") | patch
    r = client.post("/api/estimate", json=job)
    err = assert_error(r, 422, field)
    with pytest.raises(SpecError) as cli_error:
        load_job(job)
    assert err["message"] == str(cli_error.value)


def test_lookup_errors_name_field_value_and_allowed(client):
    job = example("sft-70b-16gpu.yaml")
    job["hardware"] = dict(job["hardware"], accelerator="h100-sxm-80")
    err = assert_error(client.post("/api/estimate", json=job), 422, "hardware.accelerator")
    assert err["value"] == "h100-sxm-80"
    assert err["suggestion"] == "h100-sxm-80gb"


def test_strategy_errors_name_the_rule(client):
    job = example("sft-70b-16gpu.yaml")
    job["strategy"] = dict(job["strategy"], tp=3)
    err = assert_error(client.post("/api/estimate", json=job), 422)
    assert err["kind"] == "strategy" and err["rule"]


@pytest.mark.parametrize("model", ["/etc/passwd", "../examples/configs/tiny-llama/config.json", "config.json",
                                   str(REPO / "examples/configs/tiny-llama")])
def test_a_model_is_never_read_from_a_path(client, model):
    job = example("lora-8b-one-gpu.yaml") | {"model": model}
    err = assert_error(client.post("/api/estimate", json=job), 422, "model")
    assert "never a path" in err["message"]


def test_a_config_json_as_data_is_a_model(client):
    config = json.loads((REPO / "examples/configs/tiny-llama/config.json").read_text())
    job = example("lora-8b-one-gpu.yaml") | {"model": config}
    r = client.post("/api/estimate", json=job)
    assert r.status_code == 200, r.text
    assert r.json()["job"]["model"]["params_total"] > 0


@pytest.mark.parametrize("body, status", [
    (b"{not json", 422), (b"[1, 2]", 422), (b"\xff\xfe", 422), (b"", 422), (b'{"data": {"tokens": 1e999}}', 422),
])
def test_malformed_bodies_are_4xx(client, body, status):
    assert_error(client.post("/api/estimate", content=body, headers={"content-type": "application/json"}), status)


def test_infinite_numbers_are_refused(client):
    body = b'{"model": "llama-3.1-8b", "data": {"tokens": Infinity}, "seq_len": 4096, "global_batch": {"sequences": 8}}'
    err = assert_error(client.post("/api/fit", content=body), 422, "data.tokens")
    assert "finite" in err["message"]


def test_body_size_limit(client):
    big = b'{"name": "' + b"x" * 300_000 + b'"}'
    err = assert_error(client.post("/api/estimate", content=big), 413, "body")
    assert "limit" in err["message"]


def test_body_size_limit_without_content_length(client):
    def chunks():
        for _ in range(40):
            yield b" " * 10_000

    assert_error(client.post("/api/estimate", content=chunks()), 413, "body")


def test_catalog_lists_and_shows(client):
    accs = client.get("/api/catalog/accelerators").json()
    assert any(a["id"] == "h100-sxm-80gb" for a in accs)
    one = client.get("/api/catalog/accelerators/h100-sxm-80gb").json()
    assert one["id"] == "h100-sxm-80gb" and one["sources"]
    assert client.get("/api/catalog").json()[0] == "accelerators"


def test_catalog_errors(client):
    assert_error(client.get("/api/catalog/gpus"), 422, "kind")
    err = assert_error(client.get("/api/catalog/accelerators/h100"), 404, "entry_id")
    assert "h100-sxm-80gb" in err["message"]  # an ambiguous name lists the candidates
    assert_error(client.get("/api/catalog/prices/h100"), 404, "kind")


def test_models_search_and_show(client):
    names = [m["name"] for m in client.get("/api/models", params={"q": "qwen"}).json()]
    assert names and all("qwen" in n for n in names)
    arch = client.get("/api/models/llama-3.1-8b").json()
    assert arch["layers"] == 32
    err = assert_error(client.get("/api/models/llama-3.1-9b"), 404, "model")
    assert "llama-3.1-8b" in err["message"]


def test_openapi_documents_the_job_body(client):
    schema = client.get("/openapi.json").json()
    for path in ("/api/estimate", "/api/fit", "/api/catalog/{kind}", "/api/models"):
        assert path in schema["paths"]
    body = schema["paths"]["/api/estimate"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/Job"}
    assert "data" in schema["components"]["schemas"]["Job"]["properties"]
    assert "422" in schema["paths"]["/api/estimate"]["post"]["responses"]


def test_unknown_route_is_json_404(client):
    assert_error(client.get("/api/nothing"), 404)


def test_security_headers(client):
    r = client.get("/api/catalog")
    assert "default-src 'self'" in r.headers["content-security-policy"]
    assert r.headers["x-content-type-options"] == "nosniff"


def test_documented_examples_are_the_example_files(client):
    schema = client.get("/openapi.json").json()
    examples = schema["paths"]["/api/estimate"]["post"]["requestBody"]["content"]["application/json"]["examples"]
    assert examples
    for name, ex in examples.items():
        assert load_job(ex["value"]) == load_job(example(f"{name}.yaml"))
        assert client.post("/api/estimate", json=ex["value"]).status_code == 200


def test_api_docs_page_is_local(client):
    r = client.get("/api-docs", params={"lang": "zh"})
    assert r.status_code == 200
    assert "/api/estimate" in r.text and "/openapi.json" in r.text and "HTTP API 接口" in r.text
    assert "cdn" not in r.text.lower() and 'src="http' not in r.text


@pytest.mark.parametrize("days", [5e-324, 1e-9, 0])
def test_absurd_deadlines_are_refused_not_crashed(client, days):
    job = example("sft-70b-search.yaml")
    job["goal"] = dict(job["goal"], deadline_days=days)
    err = assert_error(client.post("/api/plan", json=job), 422, "goal.deadline_days")
    assert "0.001" in err["message"]


def test_errors_are_in_the_language_asked_for(client):
    """An API error body under ?lang=zh (or Accept-Language: zh) is in Chinese; English by default."""
    bad = {"model": "llama-9b", "method": "full", "data": {"tokens": 1e9}, "seq_len": 4096,
           "global_batch": {"sequences": 8}}
    en = client.post("/api/plan", json=bad).json()["error"]["message"]
    zh = client.post("/api/plan?lang=zh", json=bad).json()["error"]["message"]
    zh_header = client.post("/api/plan", json=bad, headers={"accept-language": "zh-CN"}).json()["error"]["message"]
    assert "llama-9b" in en and "llama-9b" in zh
    assert re.search(r"[\u4e00-\u9fff]", zh) and not re.search(r"[\u4e00-\u9fff]", en)
    assert re.search(r"[\u4e00-\u9fff]", zh_header)
    missing = client.get("/api/catalog/prices/x", params={"lang": "zh"}).json()["error"]["message"]
    assert "/api/catalog/prices" in missing and re.search(r"[\u4e00-\u9fff]", missing)


def test_api_docs_page_reads_in_chinese(client):
    """Every text the docs page takes from the OpenAPI schema (summaries, descriptions, responses, parameters)
    has its Chinese words (web/data/messages.yaml api_doc.*), and the page's own words are translated: a new
    endpoint cannot slip in English onto the Chinese page."""
    from trainsizer.web.app import create_app
    from trainsizer.web.pages import _operations

    en, zh = _operations(create_app().openapi(), "en"), _operations(create_app().openapi(), "zh")
    untranslated = []
    for e, z in zip(en, zh, strict=True):
        pairs = [(e["summary"], z["summary"]), (e["description"], z["description"]),
                 *[(a, b) for (_, a), (_, b) in zip(e["responses"], z["responses"], strict=True)],
                 *[(p[k], q[k]) for p, q in zip(e["params"], z["params"], strict=True) for k in ("in", "description")]]
        untranslated += [a for a, b in pairs if a and a == b]
    assert untranslated == []
    html = client.get("/api-docs", params={"lang": "zh"}).text
    assert "允许的取值" in html and "请求体（JSON 格式的任务）" in html and "为任务规划硬件" in html
    assert ">parameter<" not in html and "body (job as JSON)" not in html and "repeat for several" not in html
