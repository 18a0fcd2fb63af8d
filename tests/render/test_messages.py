"""Message catalogues: every key in both languages, every key the code names exists, and Chinese output of
every example has no English label left. A failure names the key and the language to add."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from trainsizer.errors import SpecError
from trainsizer.messages import catalogue, msg, tr
from trainsizer.render.i18n import LANGS, _table, t

SRC = Path(__file__).resolve().parents[2] / "src" / "trainsizer"
REPO = SRC.parents[1]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
# literal keys in calls: t("key", ...), msg("key", ...), _m("key", ...)
CALL = re.compile(r"""\b(t|msg|_m|Msg)\(\s*["']([A-Za-z0-9_.]+)["']\s*[,)]""")


@pytest.mark.parametrize("name,table", [("render/data/i18n.yaml", _table), ("data/messages.yaml", catalogue)])
def test_every_key_has_every_language(name, table):
    missing = [f"{key} (no {lang})" for key, entry in table().items() for lang in LANGS
               if not isinstance(entry, dict) or not str(entry.get(lang) or "").strip()]
    assert not missing, f"{name}: add the missing language for: {', '.join(missing)}"


def _keys_for(call: str, source: str) -> set[str] | None:
    """Keys the function `call` of a module may name: the catalogue of the module it is imported from
    (None: another package's own catalogue, with its own test)."""
    origin = re.search(rf"^from (\S+) import [^\n]*\b{call}\b", source, re.M)
    module = origin.group(1) if origin else None
    if module in ("trainsizer.messages", "trainsizer.render.i18n") or (module is None and call in ("_m",)):
        return set(_table()) | set(catalogue())
    if module == "trainsizer.render.report.i18n":
        from trainsizer.render.report.i18n import catalogue as report_catalogue

        return set(report_catalogue())
    return None


def test_every_key_named_in_the_code_exists():
    missing = []
    for path in sorted(SRC.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        for call, key in CALL.findall(source):
            known = _keys_for(call, source)
            if known is not None and key not in known:
                missing.append(f"{key!r} used in {path.relative_to(SRC.parent)}")
    assert not missing, ("message keys without an entry (add `KEY: {en: ..., zh: ...}` to the catalogue the "
                         "module reads: src/trainsizer/render/data/i18n.yaml, src/trainsizer/data/messages.yaml "
                         "or src/trainsizer/render/report/data/i18n.yaml): " + "; ".join(missing))


def test_placeholders_match_between_languages():
    field = re.compile(r"(?<!\{)\{(\w+)\}(?!\})")
    bad = []
    for table in (_table(), catalogue()):
        for key, entry in table.items():
            names = {lang: set(field.findall(entry.get(lang, ""))) for lang in LANGS}
            if names["en"] != names["zh"]:
                bad.append(f"{key}: en {sorted(names['en'])} vs zh {sorted(names['zh'])}")
    assert not bad, "placeholders differ between languages: " + "; ".join(bad)


def test_missing_key_error_names_key_and_language():
    with pytest.raises(KeyError, match=r"no 'zh' text for message key 'no_such_key'"):
        t("no_such_key", "zh")


def test_msg_is_english_text_and_translates():
    m = msg("file_duplicate_key", key="'model'", first=1)
    assert m == "key 'model' is given twice (first on line 1)"
    assert tr(m, "zh") == "键 'model' 出现了两次（第一次在第 1 行）"


def test_spec_error_in_chinese():
    err = SpecError("job: data.tokens", msg("spec_finite"), value=float("inf"))
    assert str(err) == "job: data.tokens: must be a finite number (got inf)."
    assert err.render("zh") == "job：data.tokens：必须是有限的数（得到 inf）。"


# Chinese output of every command, example and bad input: tests/test_cli_zh.py


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_row_of_check_has_a_label(run_cli, example):
    """Each key path of `trainsizer check --json` needs `field_<path>` in render/data/i18n.yaml."""
    import json

    code, out, _ = run_cli("check", str(example), "--json")
    if code != 0:
        return
    from trainsizer.cli.job_cmd import _flatten

    paths = [k for k, _ in _flatten(json.loads(out)) if k != "notes"]
    missing = [f"field_{k} ({lang})" for k in paths for lang in LANGS if not (_table().get(f"field_{k}") or {}).get(lang)]
    assert not missing, f"add to src/trainsizer/render/data/i18n.yaml: {', '.join(missing)}"


def test_strategy_rule_in_chinese():
    from trainsizer.errors import StrategyError

    err = StrategyError("batch_divisible", msg("rule_batch_divisible", batch=100, micro_batch=1, dp=8))
    assert "not divisible by micro_batch*dp = 1*8" in str(err)
    assert err.render("zh") == "并行策略无效（batch_divisible）：全局批次 100 条序列不能被 micro_batch*dp = 1*8 整除"


def test_stack_labels_match_the_framework_assumptions():
    """`stack_<style>` in English is the framework's `stack` in estimate/data/framework_assumptions.yaml."""
    import yaml

    data = yaml.safe_load((SRC / "estimate" / "data" / "framework_assumptions.yaml").read_text(encoding="utf-8"))
    for name, entry in data["frameworks"].items():
        assert t(f"stack_{name}", "en") == entry["stack"], f"update stack_{name} in render/data/i18n.yaml"
        assert t(f"stack_{name}", "zh") != entry["stack"]


def test_every_message_call_passes_its_parameters():
    """`msg("key", a=...)` names every `{placeholder}` of the key's text: a missing one would be a KeyError
    (a traceback) when the message is raised."""
    import ast

    field = re.compile(r"(?<!\{)\{(\w+)[^{}]*\}(?!\})")
    texts = {**_table(), **catalogue()}
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if _keys_for("msg", source) is None:
            continue  # another package's own catalogue (plan/), with its own tests
        for node in ast.walk(ast.parse(source)):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("msg", "Msg") and node.args
                    and isinstance(node.args[0], ast.Constant) and node.args[0].value in texts):
                continue
            if any(k.arg is None for k in node.keywords):
                continue  # **params: checked where they are built
            need = set(field.findall(texts[node.args[0].value]["en"])) - {k.arg for k in node.keywords}
            if need:
                bad.append(f"{path.relative_to(SRC.parent)}:{node.lineno} {node.args[0].value} lacks {sorted(need)}")
    assert not bad, "; ".join(bad)
