"""Fuzzed job files never crash the CLI: exit 0 or 2, no traceback, valid JSON (benchmarks/fuzz_specs.py).

A bounded, derandomised slice of the benchmark's mutations runs in CI; the benchmark runs >= 10,000."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import fuzz_specs  # noqa: E402

BASES = fuzz_specs.load_bases()


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz")
    (path / "configs").symlink_to(fuzz_specs.REPO / "examples" / "configs")
    return path


@settings(max_examples=80, derandomize=True, database=None)
@given(rng=st.randoms(use_true_random=False))
def test_mutated_job_files_end_in_exit_0_or_2_with_valid_json(rng, folder):
    content, suffix = fuzz_specs.make_spec(rng, BASES)
    for cmd, outcome, detail in fuzz_specs.check_spec(content, suffix, folder):
        assert outcome != "crash", f"{cmd} crashed on {content[:300]!r}: {detail}"


def _job_with(**sections) -> bytes:
    data = dict(BASES[0])
    for key, value in sections.items():
        data[key] = {**data[key], **value} if isinstance(data.get(key), dict) else value
    return yaml.safe_dump(data).encode()


ISSUE_15_CRASHERS = {
    "tokens inf": _job_with(data={"tokens": float("inf")}),
    "epochs inf": _job_with(data={"tokens": 1e9, "epochs": float("inf")}),
    "bytes_per_token 1e-300": _job_with(data={"dataset_gb": 1.0, "bytes_per_token": 1e-300}),
    "batch 10^30": _job_with(global_batch={"sequences": 10**30}),
    "deadline inf": _job_with(goal={"deadline_days": float("inf")}),
    "rack_kw inf": _job_with(constraints={"rack_kw": float("inf")}),
    "gbps_per_nic 1e-9": _job_with(hardware={"network": {"nics_per_node": 1, "gbps_per_nic": 1e-9}}),
    "count 10^9": _job_with(hardware={"count": 10**9}),
    "model name 256 chars": _job_with(model="m" * 256),
    "latin-1": b"name: caf\xe9\n" + _job_with(),
    "utf-16": _job_with().decode().encode("utf-16"),
    "binary": b"\x00\x01\x02binary",
    "model nested 500 deep": b"model: " + b"{a: " * 500 + b"1" + b"}" * 500 + b"\n",
}


@pytest.mark.parametrize("name", sorted(ISSUE_15_CRASHERS))
def test_issue_15_crashers_are_one_paragraph_errors(name, folder):
    """The crashes filed in issue 15: every one is an exit-2 error of one paragraph naming the problem."""
    for cmd, outcome, detail in fuzz_specs.check_spec(ISSUE_15_CRASHERS[name], ".yaml", folder):
        assert outcome == "error", f"{cmd}: {outcome} {detail}"
        assert "\n" not in detail and detail.startswith("error: "), detail


@pytest.mark.parametrize("section, fields", fuzz_specs.SECTIONS, ids=lambda v: v if isinstance(v, str) else "")
def test_the_fields_no_example_writes_are_fuzzed_and_estimate(section, fields, folder):
    """The sections make_spec adds (unpacked samples, partial recompute, the FP8 transpose cache) are valid on
    an example with a Megatron-style layout: the fuzzer starts them from a job that estimates."""
    base = next(b for b in BASES if b.get("strategy", {}).get("pp", 1) > 1)
    data = {**base, "data": dict(fields)} if section == "data" else {**base, section: {**base[section], **fields}}
    for cmd, outcome, detail in fuzz_specs.check_spec(yaml.safe_dump(data).encode(), ".yaml", folder):
        assert outcome == "ok", f"{cmd}: {detail}"
