"""The CLI end to end: tables, --json, --lang, and one-paragraph errors with exit status 2."""

from __future__ import annotations

import json

import pytest

from conftest import EXAMPLES


def test_version(run_cli):
    code, out, _ = run_cli("--version")
    assert code == 0 and "trainsizer" in out


def test_models_list_json_has_presets(run_cli):
    code, out, _ = run_cli("models", "list", "--json")
    assert code == 0
    names = {p["name"] for p in json.loads(out)}
    assert {"llama-3.1-8b", "llama-3.1-405b", "deepseek-v3", "mixtral-8x7b"} <= names
    assert len(names) >= 15


def test_models_show_json_counts(run_cli):
    code, out, _ = run_cli("models", "show", "llama-3.1-8b", "--json")
    data = json.loads(out)
    assert code == 0
    assert data["params_total"] == pytest.approx(8.03e9, rel=0.005)
    assert data["params_active"] == data["params_total"]


def test_models_show_table_in_chinese(run_cli):
    code, out, _ = run_cli("--lang", "zh", "models", "list")
    assert code == 0 and "模型预设" in out


def test_models_show_labels_a_hybrid_pattern_and_hides_it_elsewhere(run_cli):
    code, out, _ = run_cli("--lang", "zh", "models", "show", "nemotron-3-nano-30b-a3b")
    assert code == 0 and "层模式" in out and "Mamba-2 头数" in out and "ssm_" not in out
    code, out, _ = run_cli("models", "show", "llama-3.1-8b")
    assert code == 0 and "Mamba-2" not in out and "ssm_" not in out


def test_models_show_labels_every_field_and_hides_moe_fields_of_a_dense_model(run_cli):
    """'expert_groups', 'sliding_window' ... were shown as their keys; a dense model listed 'MoE every n layers 1'."""
    from trainsizer.models import load_model, preset_names
    from trainsizer.render.i18n import t

    keys = {k for n in preset_names() for k in load_model(n).to_dict()} - {"notes", "unknown_keys"}
    for lang in ("en", "zh"):
        missing = []
        for k in sorted(keys):
            try:
                t(f"model_{k}", lang)
            except KeyError:
                missing.append(k)
        assert not missing, f"add model_<field> to src/trainsizer/render/data/i18n.yaml ({lang}): {missing}"
    code, out, _ = run_cli("models", "show", "llama-3.1-8b")
    assert code == 0 and "MoE" not in out and "expert" not in out
    code, out, _ = run_cli("--lang", "zh", "models", "show", "deepseek-v3")
    assert code == 0 and "专家分组数" in out and "expert_groups" not in out


def test_unknown_model_is_one_paragraph_error(run_cli):
    code, out, err = run_cli("models", "show", "llama-3.1-8")
    assert code == 2
    assert "Traceback" not in err and err.startswith("error:")
    assert "llama-3.1-8b" in err  # did-you-mean


def test_catalog_list_accelerators_json(run_cli):
    code, out, _ = run_cli("catalog", "list", "accelerators", "--json")
    ids = {a["id"] for a in json.loads(out)}
    assert code == 0 and len(ids) >= 25
    assert {"a100-sxm-80gb", "h100-sxm-80gb", "h200-sxm-141gb", "b200", "h20", "ascend-910b"} <= ids


@pytest.mark.parametrize("kind", ["servers", "networks", "switches", "storage", "prices"])
def test_catalog_list_other_kinds(run_cli, kind):
    code, out, _ = run_cli("catalog", "list", kind, "--json")
    assert code == 0 and len(json.loads(out)) > 0
    code, out, _ = run_cli("--lang", "en", "catalog", "list", kind)
    assert code == 0 and out.strip()


def test_catalog_show_unknown_suggests(run_cli):
    code, _, err = run_cli("catalog", "show", "accelerator", "h100-sxm-80")
    assert code == 2 and "h100-sxm-80gb" in err


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_check_every_example(run_cli, example):
    code, out, err = run_cli("check", str(example), "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["model"]["params_total"] > 1e8
    assert summary["tokens_total"] > 0


def test_check_bad_job_exit_2(run_cli, tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text("model: llama-3.1-8b\nmethod: full\ndata: {tokens: 1e9}\nseq_len: 2048\n"
                   "global_batch: {sequences: 8}\nhardware: {accelerator: h100-sxm, count: 8}\n")
    code, _, err = run_cli("check", str(job))
    assert code == 2
    assert "hardware.accelerator" in err and "h100-sxm-80gb" in err
    assert "Traceback" not in err


def test_check_multi_node_needs_network(run_cli, tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text("model: llama-3.1-8b\ndata: {tokens: 1e9}\nseq_len: 2048\n"
                   "global_batch: {sequences: 8}\nhardware: {accelerator: h100-sxm-80gb, count: 16}\n")
    code, _, err = run_cli("check", str(job))
    assert code == 2 and "hardware.network" in err


def test_catalog_overlay_flag_overrides_price(run_cli, tmp_path):
    overlay = tmp_path / "negotiated.yaml"
    overlay.write_text("date: 2026-12-01\nprices:\n  rent-usd-h100-sxm-80gb: {low: 1.5, high: 1.7, typical: 1.6}\n")
    code, out, _ = run_cli("--catalog", str(overlay), "catalog", "list", "prices", "--json")
    assert code == 0
    rent = next(r for r in json.loads(out) if r["accelerator"] == "h100-sxm-80gb" and r["kind"] == "rent")
    assert (rent["low"], rent["high"]) == (1.5, 1.7)
    assert "overlay_negotiated" in rent["sources"]


def test_catalog_overlay_bad_field_is_specific(run_cli, tmp_path):
    overlay = tmp_path / "bad.yaml"
    overlay.write_text("accelerators:\n  h100-sxm-80gb: {tdp_watts: 700}\n")
    code, _, err = run_cli("--catalog", str(overlay), "catalog", "list", "accelerators")
    assert code == 2 and "tdp_watts" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        ("constraints: {exclude: [h100-sxm-80gb]}\n", "constraints.exclude"),
        ("constraints: {include: [h200-sxm-141gb]}\n", "constraints.include"),
        ("constraints: {max_nodes: 1}\n", "max_nodes"),
        ("constraints: {exclude: [h100-sxm80gb]}\n", "Did you mean 'h100-sxm-80gb'"),
    ],
)
def test_hardware_must_respect_constraints(run_cli, tmp_path, extra, fragment):
    job = tmp_path / "job.yaml"
    job.write_text("model: llama-3.1-8b\ndata: {tokens: 1e9}\nseq_len: 2048\nglobal_batch: {sequences: 8}\n"
                   "hardware: {accelerator: h100-sxm-80gb, count: 16, network: ib-ndr400}\n" + extra)
    code, _, err = run_cli("check", str(job))
    assert code == 2 and fragment in err, err


def test_china_market_note_for_restricted_part(run_cli, tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text("model: llama-3.1-8b\ndata: {tokens: 1e9}\nseq_len: 2048\nglobal_batch: {sequences: 8}\n"
                   "hardware: {accelerator: h100-sxm-80gb, count: 8}\nconstraints: {market: china}\n")
    code, out, _ = run_cli("check", str(job), "--json")
    assert code == 0
    assert any("export-restricted" in n for n in json.loads(out)["notes"])


@pytest.mark.parametrize(("lang", "shown"), [("en", "$300,000"), ("zh", "US$30万")])
def test_check_writes_the_budget_as_one_sum_of_money(run_cli, lang, shown):
    """Not 'budget 300,000' and 'budget currency USD' on two rows."""
    job = next(p for p in EXAMPLES if p.name == "sft-70b-search.yaml")
    code, out, _ = run_cli("--lang", lang, "check", str(job))
    assert code == 0 and shown in out
    assert "budget currency" not in out and "预算币种" not in out


def test_check_in_chinese_says_what_the_jobs_named_choices_mean(run_cli):
    """zh `check` reads the job's words (method, procurement, cooling, recompute, offload, framework) in
    Chinese and keeps the word the job file wrote in brackets; English shows the word as written."""
    job = next(p for p in EXAMPLES if p.name == "sft-70b-16gpu.yaml")
    code, out, _ = run_cli("--lang", "zh", "check", str(job))
    assert code == 0
    for shown in ("全参数微调（full）", "租用（rent）", "风冷（air）", "完全重计算（full）",
                  "卸载优化器状态（optimizer）", "按并行布局自动选择（auto）", "整个数据并行组（0）"):
        assert shown in out, shown
    code, out, _ = run_cli("check", str(job))
    assert code == 0 and "（" not in out and "full" in out


def test_every_named_choice_of_a_job_reads_in_chinese():
    """Each value a job field can take that `check` shows by name has its zh entry (or the shared auto / none)."""
    from typing import get_args

    from trainsizer import names
    from trainsizer.render.i18n import t

    fields = {"method": names.METHODS, "strategy.recompute": names.RECOMPUTE, "strategy.offload": names.OFFLOAD,
              "strategy.framework": names.FRAMEWORKS}
    from trainsizer.spec.job import Cooling, NetworkKind, Procurement

    fields |= {"goal.procurement": get_args(Procurement), "constraints.cooling": get_args(Cooling),
               "hardware.network.kind": get_args(NetworkKind)}
    for key, values in fields.items():
        for v in values:
            zh = next((t(k, "zh") for k in (f"value.{key}.{v}", f"value.{v}") if _has(k)), None)
            assert zh is not None and f"（{v}）" in zh, (key, v)


def _has(key):
    from trainsizer.render.i18n import MissingMessage, t

    try:
        t(key, "zh")
    except MissingMessage:
        return False
    return True



def test_a_hardware_block_without_an_accelerator_pins_only_the_count(run_cli, tmp_path):
    # known-gaps 43 (b): plan searches the accelerators at the pinned count; estimate asks for the accelerator
    job = tmp_path / "job.yaml"
    job.write_text("model: llama-3.1-8b\nmethod: pretrain\ndata: {tokens: 1.0e9}\nseq_len: 4096\n"
                   "global_batch: {sequences: 64}\nhardware: {count: 64}\n")
    code, out, err = run_cli("plan", str(job), "--json")
    options = json.loads(out)["options"]
    assert code == 0 and options and {o["hardware"]["count"] for o in options} == {64}, err
    code, _, err = run_cli("estimate", str(job))
    assert code == 2 and "hardware.accelerator" in err and "--accelerator" in err, err
