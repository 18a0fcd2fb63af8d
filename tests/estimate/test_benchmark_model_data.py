"""benchmarks/harness.model_data: the benchmark model files state every model's positions (an inline model without
max_position reads 0, "none stated"), and an entry that does not is refused naming the file, the entry and what to give."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

from harness import model_data  # noqa: E402


@pytest.mark.parametrize("name", ["heldout_models.yaml", "papers_models.yaml"])
def test_every_shipped_benchmark_model_states_its_positions(name):
    from trainsizer.models.inline import arch_from_inline

    entries = model_data(BENCH / "data" / name)
    assert entries
    for key, entry in entries.items():
        assert arch_from_inline(entry["model"]).max_position >= 1, key


def test_qwen3_32b_reads_its_config_positions():
    """The inline qwen3-32b read 0; its config.json (the shipped preset's) says 40,960."""
    from trainsizer.models.inline import arch_from_inline

    entry = model_data(BENCH / "data" / "heldout_models.yaml")["qwen3-32b"]
    assert arch_from_inline(entry["model"]).max_position == 40960


def test_an_entry_without_positions_is_refused(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text("tiny:\n  source: test\n  model: {name: tiny, layers: 2, hidden: 64, heads: 4, ffn: 256, vocab: 128}\n",
                    encoding="utf-8")
    with pytest.raises(ValueError, match=r"models.yaml: tiny.model.max_position is 0 \(not stated\).*>= 1"):
        model_data(path)
