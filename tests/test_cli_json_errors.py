"""With --json, a refused command line prints the HTTP API's error object on stdout (and nothing on stderr),
in --lang, and exits non-zero: a script reads one JSON document either way."""

from __future__ import annotations

import json

import pytest

from conftest import REPO
from trainsizer.cli_support import wants_json
from trainsizer.errors import ERROR_FIELDS
from trainsizer.web.errors import ErrorDetail

LORA_PATH = REPO / "examples" / "lora-8b-one-gpu.yaml"
LORA = str(LORA_PATH)


def _error(run_cli, *args: str) -> dict:
    code, out, err = run_cli(*args)
    assert code == 2 and err == ""
    body = json.loads(out)
    assert set(body) == {"error"} and set(body["error"]) == set(ERROR_FIELDS)
    return body["error"]


def test_error_fields_are_the_http_apis():
    assert set(ERROR_FIELDS) == set(ErrorDetail.model_fields)


def test_misspelt_key_names_field_and_suggestion(run_cli, tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text(LORA_PATH.read_text().replace("seq_len:", "seqlen:"))
    error = _error(run_cli, "estimate", str(job), "--json")
    assert error["kind"] == "spec" and error["field"] == "seqlen" and error["suggestion"] == "seq_len"
    assert "seq_len" in error["allowed"] and error["message"].startswith(f"{job}: seqlen: ")


def test_unknown_accelerator_keeps_the_value_and_translates_the_message(run_cli, tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text(LORA_PATH.read_text().replace("accelerator: l40s", "accelerator: h100x"))
    error = _error(run_cli, "--lang", "zh", "check", str(job), "--json")
    assert error["field"] == "hardware.accelerator" and error["value"] == "h100x"
    assert "未知的加速卡" in error["message"] and not error["message"].startswith("错误")


def test_a_flags_error_names_the_job_field(run_cli):
    error = _error(run_cli, "estimate", LORA, "--zero", "7", "--json")
    assert error["field"] == "strategy.zero" and error["value"] == 7 and error["where"].startswith("--zero")


def test_strategy_rule_is_its_id(run_cli):
    error = _error(run_cli, "estimate", LORA, "--tp", "3", "--json")
    assert error["kind"] == "strategy" and error["rule"] == "degrees-multiply-to-gpus"


@pytest.mark.parametrize(("args", "where", "value", "allowed"), [
    (("estimate", LORA, "--bogus"), "--bogus", None, None),
    (("estimate", LORA, "--tp", "x"), "--tp", "x", None),
    (("fit", LORA, "--what", "foo"), "--what", "foo", "micro-batch, seq-len, model"),
    (("estimate",), "JOB_FILE", None, None),
])
def test_usage_errors(run_cli, args, where, value, allowed):
    error = _error(run_cli, *args, "--json")
    assert (error["kind"], error["where"], error["value"], error["allowed"]) == ("usage", where, value, allowed)


def test_without_json_the_error_stays_one_paragraph_on_stderr(run_cli):
    code, out, err = run_cli("estimate", LORA, "--tp", "3")
    assert code == 2 and out == "" and err.startswith("error: invalid strategy (degrees-multiply-to-gpus)")


def test_a_json_after_double_dash_is_an_argument():
    assert wants_json(["estimate", "job.yaml", "--json"]) and not wants_json(["estimate", "--", "--json"])

