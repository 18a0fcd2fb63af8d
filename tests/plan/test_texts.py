"""The plan stores each sentence's catalogue message next to its text, so one plan.json reads in English and
in Chinese: a plan made in English and rendered in Chinese says what a plan made in Chinese says."""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO
from trainsizer.catalog import load_catalog
from trainsizer.catalogues import load
from trainsizer.messages import SENTENCE_FILES, msg
from trainsizer.plan.core import make_plan
from trainsizer.plan.messages import joined
from trainsizer.plan.messages import msg as plan_msg
from trainsizer.plan.schema import Relaxation
from trainsizer.plan.texts import localise, ref, say


@cache
def _plans(name: str, deadline_days: float | None = None) -> tuple[dict, dict]:
    over = {"deadline_days": deadline_days} if deadline_days else None
    made = [make_plan(REPO / "examples" / name, load_catalog(), top=3, overrides=over, lang=lang)
            .model_dump(mode="json", by_alias=True) for lang in ("en", "zh")]
    return made[0], made[1]


def _texts(node, out: list, path: str = "") -> list:
    """(path, text) of every field that has a stored message."""
    if isinstance(node, dict):
        for k, v in node.items():
            if f"{k}_msg" in node and node[f"{k}_msg"] is not None:
                out.append((f"{path}/{k}", v))
            _texts(v, out, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _texts(v, out, f"{path}/{i}")
    return out


@pytest.mark.parametrize("name,deadline", [("sft-70b-search.yaml", None), ("sft-70b-16gpu.yaml", None),
                                           ("sft-70b-search.yaml", 0.1)])
def test_a_plan_made_in_english_reads_in_chinese_as_one_made_in_chinese(name, deadline):
    en, zh = _plans(name, deadline)
    found = _texts(en, [])
    assert found, "the plan stores no message: nothing could be rendered in another language"
    assert _texts(localise(en, "zh"), []) == _texts(zh, [])
    assert _texts(localise(zh, "en"), []) == found
    fields = {p.rsplit("/", 1)[-1] for p, _ in found}
    assert fields & {"why", "detail"}, "the plan's own sentences are stored as messages"
    if en.get("build"):
        assert {"item", "rule", "source"} <= fields, "the build-out's texts are stored as messages"


def test_a_plan_without_messages_is_shown_as_written():
    """Plans from before schema 1.1 have texts only: they are read, and their texts are kept."""
    en, _ = _plans("sft-70b-16gpu.yaml")
    old = localise(en, "en", keep=False)
    assert not any(k.endswith("_msg") for k in str(old).split("'"))
    assert localise(old, "zh") == old


def test_display_copy_drops_the_stored_messages():
    en, _ = _plans("sft-70b-search.yaml")
    shown = localise(en, "zh", keep=False)
    assert "why_msg" not in shown["options"][0] and shown["options"][0]["why"] != en["options"][0]["why"]


def test_nested_and_joined_messages_round_trip():
    text = joined([plan_msg("cmp_tied", "en", pct="7%"), plan_msg("relax_meets", "en", option="h100 x8")], "en")
    assert text == "tied with the recommended option (within 7%); h100 x8 meets it"
    stored = ref(text).model_dump()
    assert say(stored, "zh") == "与推荐方案持平（相差不到 7%）；h100 x8 可以满足"
    assert say(stored, "en") == text


def test_a_model_fills_the_message_of_a_text_given_as_a_message():
    r = Relaxation(change=plan_msg("relax_budget", "zh", cost="1 USD"), result="plain text")
    assert r.change == "预算 1 USD" and r.change_msg.key == "relax_budget" and r.result_msg is None
    assert ref("plain") is None and ref(msg("money_none")).key == "money_none"


def test_no_sentence_key_is_defined_in_two_catalogues():
    seen: dict[str, str] = {}
    twice = []
    for path in SENTENCE_FILES:
        for key in load(path):
            if key in seen:
                twice.append(f"{key} ({seen[key]} and {path})")
            seen[key] = path
    assert not twice, "a key in two catalogues hides one of them: " + "; ".join(twice)


def test_data_files_and_their_catalogue_entries_say_the_same():
    """Phases, frameworks and rule notes keep their English in the rule files (beside their sources); the
    catalogue's English must be that text, or a reader would get a different sentence in each language."""
    from trainsizer.messages import catalogue
    from trainsizer.plan.buildout import rules

    cat = catalogue()
    raw = rules.raw("phases")
    for phase in raw["phases"] + raw["rent_phases"] + raw["workstation_phases"]:
        assert cat[f"phase_what_{phase['id']}"]["en"] == " ".join(phase["note"].split()), phase["id"]
    for key, text in rules.value("software", "frameworks").items():
        assert cat[f"framework_{key}"]["en"] == text, key
    translated = [(b, r) for b, r in rules.all_rules() if f"rule.{b}.{r.name}" in cat]
    assert translated, "no rule note is translated: the rule-note catalogue is not read"
    for block, r in translated:
        assert r.note == cat[f"rule.{block}.{r.name}"]["en"] and r.note.key == f"rule.{block}.{r.name}"


def test_every_key_the_plan_and_web_name_exists():
    """Keys named literally in msg("...") calls of plan/ and web/ (plan.messages and trainsizer.messages)."""
    import re
    from pathlib import Path

    from trainsizer.messages import catalogue

    src = Path(__file__).resolve().parents[2] / "src" / "trainsizer"
    call = re.compile(r"""\bmsg\(\s*["']([A-Za-z0-9_.]+)["']\s*[,)]""")
    named = {(key, path.name) for folder in ("plan", "web") for path in (src / folder).rglob("*.py")
             for key in call.findall(path.read_text(encoding="utf-8"))}
    assert len(named) > 50, "the scan found few keys: the pattern is broken"
    missing = sorted(f"{key} ({where})" for key, where in named if key not in catalogue())
    assert not missing, "add these keys to plan/data/buildout_text.yaml or explain.yaml: " + ", ".join(missing)


def _plan_keys() -> list[str]:
    return sorted(k for path in ("plan/data/explain.yaml", "plan/data/buildout_text.yaml") for k in load(path))


@settings(max_examples=60, derandomize=True, deadline=None)
@given(st.sampled_from(_plan_keys()), st.data())
def test_a_stored_message_reads_back_in_both_languages(key, data):
    """Any plan sentence with any fields (text, numbers, a nested sentence) survives JSON and renders in
    English as it was written and in Chinese as the catalogue writes it."""
    import json
    import string

    from trainsizer.catalogues import load as load_catalogue
    from trainsizer.messages import render

    entry = next(load_catalogue(p)[key] for p in ("plan/data/explain.yaml", "plan/data/buildout_text.yaml")
                 if key in load_catalogue(p))
    names = {f for _, f, _, _ in string.Formatter().parse(entry["en"]) if f}
    value = st.one_of(st.text(alphabet="abcxyz-019 .", max_size=12), st.integers(-10**6, 10**6),
                      st.just(msg("money_none")))
    params = {n: data.draw(value, label=n) for n in sorted(names)}
    written = msg(key, **params)
    stored = json.loads(json.dumps(ref(written).model_dump()))
    assert say(stored, "en") == written
    assert say(stored, "zh") == render(key, "zh", params)


def test_a_stored_message_an_older_version_wrote_reads_as_written():
    # plan.json files stored before a sentence gained a field ({asked} of excluded_cooling) or lost its key
    # must still render: the text as written, not a KeyError
    node = {"why": "x needs liquid cooling; constraints.cooling is air",
            "why_msg": {"key": "excluded_cooling", "params": {"server": "x", "cooling": "liquid"}},
            "gone": "old words", "gone_msg": {"key": "no_such_sentence_any_more", "params": {}}}
    out = localise(node, "zh", keep=False)
    assert out == {"why": node["why"], "gone": "old words"}
    complete = {"why": "", "why_msg": {"key": "excluded_cooling",
                                       "params": {"server": "x", "cooling": "liquid", "asked": "air"}}}
    assert localise(complete, "zh", keep=False)["why"] != ""
