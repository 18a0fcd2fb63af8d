"""User YAML: duplicate keys refused with line numbers, `4e6` a number, the C parser when PyYAML has it."""

from __future__ import annotations

import pytest
import yaml

from trainsizer.errors import SpecError
from trainsizer.spec import load_job
from trainsizer.spec.yaml_loader import C_PARSER, DuplicateKeyError, UserLoader, load_yaml

JOB = "model: llama-3.1-8b\ndata: {tokens: 4e6}\nseq_len: 2048\nglobal_batch: {sequences: 1e3}\n"


def test_exponent_without_dot_is_a_number():
    assert load_yaml("a: 4e6\nb: -1E-3\nc: 2.5e+2\nd: e5\ne: '4e6'") == {
        "a": 4e6, "b": -1e-3, "c": 250.0, "d": "e5", "e": "4e6"}


def test_exponent_numbers_fill_integer_fields(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(JOB)
    job = load_job(path)
    assert job.data.tokens == 4e6 and job.global_batch.sequences == 1000


@pytest.mark.parametrize(("text", "line", "first"), [
    ("model: a\nseq_len: 1\nmodel: b\n", 3, 1),
    ("data: {tokens: 1, tokens: 2}\n", 1, 1),
    ("hardware:\n  count: 8\n  count: 16\n", 3, 2),
])
def test_duplicate_keys_name_both_lines(text, line, first):
    with pytest.raises(DuplicateKeyError) as err:
        load_yaml(text)
    assert (err.value.line, err.value.first_line) == (line, first)


def test_duplicate_key_in_a_job_file_is_a_spec_error_with_the_line(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(JOB + "model: llama-3.1-70b\n")
    with pytest.raises(SpecError, match=r"job.yaml:5: key 'model' is given twice \(first on line 1\)"):
        load_job(path)


def test_duplicate_key_in_json_is_refused(tmp_path):
    path = tmp_path / "job.json"
    path.write_text('{"model": "a", "model": "b"}')
    with pytest.raises(SpecError, match="'model' is given twice"):
        load_job(path)


def test_same_key_in_different_mappings_is_fine():
    assert load_yaml("a: {x: 1}\nb: {x: 2}\n") == {"a": {"x": 1}, "b": {"x": 2}}


def test_uses_the_c_parser_when_pyyaml_has_it():
    assert C_PARSER == hasattr(yaml, "CSafeLoader")
    assert issubclass(UserLoader, getattr(yaml, "CSafeLoader", yaml.SafeLoader))
