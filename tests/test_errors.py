"""Errors name what is wrong and what is allowed; names get a suggestion."""

from __future__ import annotations

from trainsizer.errors import SpecError, TrainsizerError, did_you_mean, quoted, unknown_name
from trainsizer.messages import tr

IDS = ["h100-nvl-94gb", "h100-pcie-80gb", "h100-sxm-80gb", "h800-sxm-80gb", "b200"]


def test_misspelt_name_gets_the_closest():
    err = unknown_name("hardware.accelerator", "accelerator", "h100-sxm-80g", IDS)
    assert "Did you mean 'h100-sxm-80gb'" in str(err) and "Allowed:" in str(err)


def test_short_prefix_of_several_ids_lists_them():
    err = unknown_name("hardware.accelerator", "accelerator", "h100", IDS)
    assert "ambiguous accelerator" in str(err)
    assert all(i in str(err) for i in IDS[:3]) and "h800" not in str(err)


def test_prefix_of_one_id_suggests_it():
    assert unknown_name("x", "accelerator", "b20", IDS).suggestion == "b200"


def test_spec_error_message_parts():
    err = SpecError("job.yaml: seq_len", "must be positive", value=-1, allowed="an integer > 0")
    assert str(err) == "job.yaml: seq_len: must be positive (got -1). Allowed: an integer > 0."
    assert did_you_mean("zzz", IDS) is None


def test_a_quoted_error_is_a_catalogue_message_in_either_language():
    err = unknown_name("hardware.accelerator", "accelerator", "h100-sxm-80g", IDS)
    q = quoted(err)
    assert q == "hardware.accelerator: unknown accelerator (got 'h100-sxm-80g')"
    assert tr(q, "zh") == "hardware.accelerator：未知的加速卡（得到 'h100-sxm-80g'）"
    long = quoted(SpecError("x", "too long", value="a" * 200))
    assert len(long) < 120 and long.endswith("...)")
    assert quoted(TrainsizerError("plain")) == "plain"  # no catalogue message: its own text


def test_every_error_problem_in_src_is_a_catalogue_message():
    """A SpecError's problem written as a literal string is English in a Chinese CLI or web page: every one is
    a catalogue message (msg(...)) or built from one."""
    import ast
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "src" / "trainsizer"
    literal = []
    for path in sorted(src.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = getattr(node, "func", None)
            name = getattr(name, "id", getattr(name, "attr", None))
            if name == "SpecError" and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant | ast.JoinedStr):
                literal.append(f"{path.relative_to(src)}:{node.lineno}")
    assert not literal, f"problems written as literal English: {literal}"
