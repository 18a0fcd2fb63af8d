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


def test_values_are_shown_as_the_job_file_spells_them():
    """A value is quoted as the user wrote it in YAML / JSON (true, null), never as Python prints it (True, None)."""
    from trainsizer.errors import NULL, shown_value

    assert [shown_value(v) for v in (True, False, None, NULL, "4k", 8, 8.5, float("inf"), float("-inf"))] == \
        ["true", "false", "null", "null", "'4k'", "8", "8.5", "inf", "-inf"]
    assert shown_value([1, True, None]) == "[1, true, null]"
    assert shown_value({"tp": True, "pp": [None]}) == "{tp: true, pp: [null]}"


def test_a_yes_no_value_where_a_number_belongs_is_named_in_either_language():
    err = SpecError("job.yaml: strategy.tp", "must be a whole number", value=True)
    assert str(err) == "job.yaml: strategy.tp: must be a whole number (got true, a yes/no value)."
    assert "True" not in err.render("zh") and "（得到 true，这是一个是/否值）" in err.render("zh")
    assert "True" not in quoted(err) and "(got true)" in quoted(err)


def test_a_null_value_is_shown_and_kept_none_for_scripts():
    from trainsizer.errors import NULL

    err = SpecError("job.yaml: model", "must be text", value=NULL)
    assert err.value is None and str(err).endswith("(got null).")
    assert str(err.at("other.yaml: model")).endswith("(got null).")
    assert quoted(err).endswith("(got null)")
    assert str(SpecError("job.yaml: model", "must be text")) == "job.yaml: model: must be text."


def test_a_file_location_takes_the_full_width_colon_in_chinese_only():
    """'job.yaml: strategy.tp' in English; 'job.yaml：strategy.tp' in Chinese, where the rest of the sentence
    is Chinese (errors.located, message error_at), in the error itself and where a sentence quotes it; a
    'file:line' position and a field path alone are left as written."""
    from trainsizer.messages import msg

    err = SpecError("job.yaml: strategy.tp", msg("spec_finite"), value=0)
    assert err.where == "job.yaml: strategy.tp" and str(err).startswith("job.yaml: strategy.tp: ")
    zh = err.render("zh")
    assert zh.startswith("job.yaml：strategy.tp：") and ": " not in zh
    assert str(tr(quoted(err), "zh")).startswith("job.yaml：strategy.tp：")
    assert err.at(err.where).render("zh") == zh
    for where in ("job.yaml:12:3", "strategy.tp"):
        assert SpecError(where, msg("spec_finite")).render("zh").startswith(where + "：")


def test_a_job_file_error_reads_in_chinese_with_chinese_colons(tmp_path):
    from trainsizer.spec.load import load_job

    path = tmp_path / "job.yaml"
    path.write_text("name: x\nmodel: llama-3.1-8b\nmethod: full\ndata: {tokens: 1e9}\nseq_len: 4096\n"
                    "global_batch: {sequences: 64}\nhardware: {accelerator: h100-sxm-80gb, count: 8}\n"
                    "strategy: {tp: 0}\n", encoding="utf-8")
    try:
        load_job(path)
    except SpecError as err:
        assert err.render("zh").startswith(f"{path}：strategy.tp：")
        assert str(err).startswith(f"{path}: strategy.tp: ")
    else:
        raise AssertionError("tp 0 was accepted")


def test_one_stray_last_character_lists_the_ids_the_rest_starts():
    """'h100x' is an h100 with a typo, not the closest spelling 'h800-sxm-80gb'."""
    err = unknown_name("hardware.accelerator", "accelerator", "h100x", IDS)
    assert all(i in str(err) for i in IDS[:3]) and "h800" not in str(err) and "h100x" in str(err)
    assert "以 h100 开头的有" in tr(err.problem, "zh")
    assert unknown_name("x", "accelerator", "b200x", IDS).suggestion == "b200"
    assert unknown_name("x", "accelerator", "zzzz", IDS).suggestion is None


def test_allowed_names_are_enumerated_with_the_chinese_list_comma():
    """Chinese lists names with 、; the allowed values and an ambiguous name's matches were joined with ', '."""
    err = SpecError("method", "not an allowed value", value="ful", allowed=["pretrain", "full", "lora"])
    assert "Allowed: pretrain, full, lora." in err.render("en")
    assert "pretrain、full、lora" in err.render("zh") and ", " not in err.render("zh")
    ambiguous = unknown_name("hardware.accelerator", "accelerator", "h100", IDS)
    assert "h100-nvl-94gb、h100-pcie-80gb、h100-sxm-80gb" in ambiguous.render("zh")
    assert "h100-nvl-94gb, h100-pcie-80gb, h100-sxm-80gb" in str(ambiguous)
