"""A sequence longer than the model's positions: a note (context extension is a legitimate run), not a refusal
(scenario._past_positions_note), in `check`, `estimate` and `plan`, en / zh / JSON."""

from __future__ import annotations

import json

import pytest
import yaml

from trainsizer.catalog import load_catalog
from trainsizer.scenario import resolve_job

JOB = {"model": "llama-3.1-8b", "data": {"tokens": 1.0e9}, "seq_len": 262_144, "global_batch": {"sequences": 8}}
KEY = "note_seq_len_past_positions"


def _keys(sc):
    return [getattr(n, "key", "") for n in sc.notes]


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def test_a_sequence_past_the_positions_is_noted_with_the_ratio(catalog):
    """67 (e)'s case: 10,000,000 tokens on llama-3.1-8b (131,072 positions) is 76x them."""
    sc = resolve_job({**JOB, "seq_len": 10_000_000}, catalog)
    note = next(n for n in sc.notes if getattr(n, "key", "") == KEY)
    assert note.params["ratio"] == "76.3" and note.params["positions"] == "131,072"
    assert "RoPE scaling" in note


@pytest.mark.parametrize("seq_len", [4096, 131_072])
def test_no_note_within_the_positions(catalog, seq_len):
    assert KEY not in _keys(resolve_job({**JOB, "seq_len": seq_len}, catalog))


INLINE = {"layers": 4, "hidden": 512, "heads": 8, "ffn": 2048, "vocab": 32000}


def test_an_inline_model_noted_only_against_positions_it_states(catalog):
    """An inline model without max_position states no positions (0): no note at any length; one that states 2,048
    is noted at 4,096, a learned table in its own words (it has no entries past them)."""
    assert resolve_job({**JOB, "model": INLINE, "seq_len": 65_536}, catalog).model.max_position == 0
    assert KEY not in _keys(resolve_job({**JOB, "model": INLINE, "seq_len": 65_536}, catalog))
    stated = resolve_job({**JOB, "model": {**INLINE, "max_position": 2048}, "seq_len": 4096}, catalog)
    assert KEY in _keys(stated)
    learned = resolve_job({**JOB, "model": {**INLINE, "position": "learned", "max_position": 2048,
                                             "mlp": "gelu", "norm": "layernorm"}, "seq_len": 4096}, catalog)
    assert "learned position table" in next(n for n in learned.notes if getattr(n, "key", "") == KEY)


def _write(tmp_path, job):
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    return str(path)


def test_check_estimate_and_plan_carry_the_note(run_cli, tmp_path):
    job = _write(tmp_path, {**JOB, "hardware": {"accelerator": "h100-sxm-80gb", "count": 8}})
    code, out, err = run_cli("check", job, "--lang", "zh")
    assert code == 0 and "上下文扩展" in out, err
    code, out, err = run_cli("estimate", job, "--json")
    assert code == 0, err
    assert any("262,144 is 2x the model's 131,072 positions" in n for n in json.loads(out)["notes"])
    code, out, err = run_cli("plan", job, "--json")
    assert code == 0, err
    assert any("context extension" in n for n in json.loads(out)["notes"])
