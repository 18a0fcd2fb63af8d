"""`trainsizer fit` tables: exact whole numbers, grouped, in either language."""

from __future__ import annotations

import json
import re

from conftest import REPO

SFT = str(REPO / "examples" / "sft-70b-16gpu.yaml")


def test_fit_prints_exact_grouped_whole_numbers(run_cli):
    code, out, err = run_cli("fit", SFT, "--what", "seq-len", "--json")
    assert code == 0, err
    longest = json.loads(out)["max_seq_len"]["value"]
    assert longest >= 10_000  # the example fits 17,536 tokens: grouping shows
    for lang in ("en", "zh"):
        code, out, err = run_cli("--lang", lang, "fit", SFT, "--what", "seq-len")
        assert code == 0, err
        assert f"{longest:,}" in out and "万" not in out, (lang, out)
        assert not re.search(rf"\b{longest}\b", out)


def test_check_shows_the_jobs_whole_numbers_exactly(run_cli):
    """`check` is the job as read: its tokens per step (1,048,576) read '104.86万' in Chinese."""
    for lang in ("en", "zh"):
        code, out, err = run_cli("--lang", lang, "check", SFT)
        assert code == 0, err
        assert "1,048,576" in out and "104.86万" not in out, out


def test_fit_writes_gib_to_a_tenth_as_the_estimate_does(run_cli):
    """The memory column read "76 GiB" beside "78.9 GiB" (three significant figures): a tenth of a GiB, as the
    estimate's memory table and the capacity sentence write it."""
    code, out, err = run_cli("fit", SFT, "--what", "micro-batch", "--what", "seq-len")
    assert code == 0, err
    shown = re.findall(r"([\d,.]+) GiB", out)
    assert len(shown) >= 2 and all(re.fullmatch(r"[\d,]+\.\d", g) for g in shown), shown
