"""The YAML and JSON parsers' own problem texts as catalogue messages, so that a syntax error reads in the
user's language. The table holds the problems libyaml, PyYAML and Python's json module report (found by
fuzzing the examples, benchmarks/fuzz_specs.py); any other text is passed on as the parser wrote it."""

from __future__ import annotations

import re

from trainsizer.messages import Msg, msg

# (pattern on the parser's text, message key); groups named in the pattern become the message's parameters
_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"did not find expected (?P<what>'[^']*' or '[^']*')", "parse_expected_either"),
    (r"expected (?P<what>'[^']*' or '[^']*'), but got .*", "parse_expected_either"),
    (r"unacceptable character #x(?P<code>[0-9a-fA-F]+): .*", "parse_control_character"),
    (r"did not find expected key", "parse_expected_key"),
    (r"found character (?:'.*' )?that cannot start any token", "parse_bad_token_start"),
    (r"could not find expected ':'", "parse_expected_colon"),
    (r"mapping values are not allowed (?:in this context|here)", "parse_mapping_value_here"),
    (r"did not find expected node content", "parse_expected_value"),
    (r"found unexpected end of stream", "parse_unexpected_end"),
    (r"found unexpected ':'", "parse_unexpected_colon"),
    (r"did not find expected <document start>", "parse_expected_document"),
    (r"found undefined alias.*", "parse_undefined_alias"),
    (r"did not find expected comment or line break", "parse_expected_line_break"),
    (r"did not find expected whitespace or line break", "parse_expected_line_break"),
    (r"did not find expected alphabetic or numeric character", "parse_expected_name"),
    (r"found unexpected non-alphabetical character", "parse_expected_name"),
    (r"could not find expected directive name", "parse_expected_name"),
    (r"mapping keys are not allowed (?:in this context|here)", "parse_mapping_key_here"),
    (r"found unhashable key", "parse_unhashable_key"),
    (r"could not determine a constructor for the tag (?P<tag>.*)", "parse_unknown_tag"),
    (r"found undefined tag handle.*", "parse_unknown_tag_handle"),
    (r"block sequence entries are not allowed (?:in this context|here)", "parse_list_item_here"),
    (r"found a tab character .*", "parse_tab"),
    (r"found unknown escape character.*", "parse_bad_escape"),
    (r"found duplicate anchor.*", "parse_duplicate_anchor"),
    (r"expected <block end>, but found .*", "parse_bad_indent"),
    (r"but found another document", "parse_two_documents"),
    (r"Unterminated string starting at", "parse_unterminated_string"),
    (r"Expecting value", "parse_expected_value"),
    (r"Expecting (?P<what>'[^']*') delimiter", "parse_expected_delimiter"),
    (r"Expecting property name enclosed in double quotes", "parse_expected_json_key"),
    (r"Invalid control character at", "parse_control_character_json"),
    (r"Invalid \\escape.*", "parse_bad_escape"),
    (r"Extra data", "parse_extra_data"),
    (r"Unexpected UTF-8 BOM.*", "parse_bom"),
    (r"exceeded maximum nesting depth", "parse_too_deep"),
)
_COMPILED = tuple((re.compile(p), key) for p, key in _PATTERNS)


def parse_problem(text: str) -> Msg | str:
    """The parser's problem text as a catalogue message when it is a known one, else the text itself."""
    text = str(text).strip()
    for pattern, key in _COMPILED:
        found = pattern.fullmatch(text)
        if found:
            return msg(key, **found.groupdict())
    return text
