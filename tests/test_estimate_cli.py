"""`trainsizer estimate`: the JSON contract of issues 3 and 4, flags, calibration and errors."""

from __future__ import annotations

import json

import pytest

from conftest import EXAMPLES, REPO
from trainsizer.spec import read_mapping

EVALUABLE = [p for p in EXAMPLES if "strategy" in read_mapping(p)]
SFT = str(REPO / "examples" / "sft-70b-16gpu.yaml")


def _estimate(run_cli, *args):
    code, out, err = run_cli("estimate", *args, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("example", EVALUABLE, ids=lambda p: p.name)
def test_every_example_with_a_strategy_estimates(run_cli, example):
    d = _estimate(run_cli, str(example))
    mem, tm = d["memory"], d["time"]
    for key in ("per_gpu_gib", "capacity_gib", "fits", "headroom_gib", "breakdown_gib", "worst_gpu"):
        assert key in mem
    assert set(mem["breakdown_gib"]) >= {"weights", "gradients", "optimizer", "activations", "other"}
    assert mem["per_gpu_gib"] == pytest.approx(sum(mem["breakdown_gib"].values()), rel=1e-3)
    assert mem["headroom_gib"] == pytest.approx(mem["capacity_gib"] - mem["per_gpu_gib"], abs=1e-3)
    for key in ("step_s", "tokens_per_s", "model_tflops_per_gpu", "mfu", "hardware_tflops_per_gpu", "hfu",
                "breakdown_s", "train_days", "gpu_hours"):
        assert key in tm
    assert 0 < tm["mfu"] < 1 and 0 < tm["hfu"] < 1
    assert tm["step_s"] == pytest.approx(sum(tm["breakdown_s"].values()), rel=1e-6)
    assert tm["train_days"] > 0 and tm["gpu_hours"] > 0
    assert d["energy"]["kwh"] > 0
    assert "cost" in d and d["cost"]["currency"] in ("USD", "CNY")


def test_examples_that_are_showcases_fit(run_cli):
    for name in ("sft-70b-16gpu.yaml", "qlora-7b-one-gpu.yaml", "lora-8b-one-gpu.yaml", "dpo-72b-16gpu.yaml"):
        d = _estimate(run_cli, str(REPO / "examples" / name))
        assert d["memory"]["fits"], name


def test_rent_cost_is_gpu_hours_times_price(run_cli):
    d = _estimate(run_cli, SFT)
    rent = d["cost"]["rent"]
    assert rent["mid"] == pytest.approx(d["time"]["gpu_hours"] * rent["unit_price"]["mid"])
    assert rent["low"] <= rent["mid"] <= rent["high"]
    assert d["goal"]["meets_deadline"] is (d["time"]["train_days"] <= 14)


def test_flags_override_the_job(run_cli):
    base = _estimate(run_cli, SFT)
    more_mb = _estimate(run_cli, SFT, "--micro-batch", "2")
    assert more_mb["job"]["strategy"]["micro_batch"] == 2
    assert more_mb["memory"]["breakdown_gib"]["activations"] > base["memory"]["breakdown_gib"]["activations"]


def test_partial_recompute_flags_override_the_job(run_cli, tmp_path):
    """--recompute-method / --recompute-num-layers take what strategy.recompute_method / _num_layers take."""
    job = tmp_path / "mcore.yaml"
    job.write_text("model: llama-3.1-8b\ndata: {tokens: 1.0e9}\nseq_len: 4096\nglobal_batch: {sequences: 64}\n"
                   "hardware: {accelerator: h100-sxm-80gb, count: 8, per_node: 8}\n"
                   "strategy: {tp: 2, pp: 2, dp: 2, recompute: full, framework: megatron-core}\n")
    every = _estimate(run_cli, str(job))
    block = _estimate(run_cli, str(job), "--recompute-method", "block", "--recompute-num-layers", "4")
    assert block["job"]["strategy"]["recompute_method"] == "block"
    assert block["job"]["strategy"]["recompute_num_layers"] == 4
    # 4 of a stage's 16 layers checkpointed: less recompute, more activations kept than every layer's
    assert block["time"]["hardware_flops_per_step"] < every["time"]["hardware_flops_per_step"]
    assert block["memory"]["breakdown_gib"]["activations"] > every["memory"]["breakdown_gib"]["activations"]
    code, _, err = run_cli("estimate", str(job), "--recompute-method", "uniform", "--recompute-num-layers", "0")
    assert code == 2 and "1 or more" in err and "Traceback" not in err
    code, _, err = run_cli("estimate", str(job), "--recompute-num-layers", "2")
    assert code == 2 and "go together" in err and "recompute_method null" in err
    code, _, err = run_cli("estimate", str(job), "--recompute-method", "block", "--recompute-num-layers", "17")
    assert code == 2 and "at most 16 decoder layers" in err
    code, _, err = run_cli("--lang", "zh", "estimate", str(job), "--recompute-num-layers", "2")
    assert code == 2 and "须同时给出" in err and "Traceback" not in err


def test_bad_flag_value_names_the_field(run_cli):
    code, _, err = run_cli("estimate", SFT, "--recompute", "sometimes")
    assert code == 2 and "strategy.recompute" in err and "selective" in err


@pytest.mark.parametrize(("args", "said"), [
    (("estimate", SFT, "--zero", "5"), "error: --zero (strategy.zero): must be less than or equal to 3 (got 5)."),
    (("fit", SFT, "--micro-batch", "0"), "error: --micro-batch (strategy.micro_batch): must be greater than 0"),
    (("--lang", "zh", "plan", SFT, "--budget", "0"), "错误：--budget（goal.budget.amount）：必须不小于 1（得到 0）。允许：1 到 10万亿。"),
    (("plan", SFT, "--deadline-days", "-3"), "error: --deadline-days (goal.deadline_days): "),
    # plan's pins were blamed on a bare "accelerator:" / "network:" that named neither the flag nor the field
    (("plan", SFT, "--accelerator", "zzz"), "error: --accelerator (hardware.accelerator): unknown accelerator"),
    (("--lang", "zh", "plan", SFT, "--network", "ib-ndr40"), "错误：--network（hardware.network）：未知"),
])
def test_a_bad_flag_value_is_blamed_on_the_flag_not_the_job_file(run_cli, args, said):
    code, _, err = run_cli(*args)
    assert code == 2 and err.startswith(said) and ".yaml" not in err.split("(got")[0]


def test_a_bad_value_in_the_file_is_still_blamed_on_the_file(run_cli, tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text(open(SFT, encoding="utf-8").read().replace("strategy: {", "strategy: {zero: 7, ", 1),
                   encoding="utf-8")
    code, _, err = run_cli("estimate", str(job), "--tp", "1")
    assert code == 2 and "job.yaml: strategy.zero" in err


def test_impossible_strategy_names_the_rule(run_cli):
    code, _, err = run_cli("estimate", SFT, "--tp", "3", "--dp", "1", "--count", "3", "--per-node", "3",
                           "--fsdp", "none")
    assert code == 2 and "tp" in err and "heads" in err and "Traceback" not in err


def test_gpu_count_mismatch(run_cli):
    code, _, err = run_cli("estimate", SFT, "--dp", "4")
    assert code == 2 and "degrees-multiply-to-gpus" in err


def test_estimate_without_hardware_explains(run_cli):
    code, _, err = run_cli("estimate", str(REPO / "examples" / "sft-70b-search.yaml"))
    assert code == 2 and "needs hardware" in err and "trainsizer plan" in err and "--accelerator" in err


def test_calibration_from_accept_results(run_cli, tmp_path):
    base = _estimate(run_cli, SFT)
    slow = tmp_path / "results.json"
    slow.write_text(json.dumps({"checks": [], "calibration": {"gemm_tflops": {"bf16": 300.0}, "busbw_inter_gb_s": 20.0,
                                                                "storage_write_gb_s": 2.0}}))
    calibrated = _estimate(run_cli, SFT, "--calibration", str(slow))
    assert calibrated["calibration"]["gemm_tflops"] == 300.0
    assert calibrated["time"]["step_s"] > base["time"]["step_s"]


def test_calibration_unknown_key(run_cli, tmp_path):
    bad = tmp_path / "cal.json"
    bad.write_text(json.dumps({"calibration": {"gemm_tflop": 300}}))
    code, _, err = run_cli("estimate", SFT, "--calibration", str(bad))
    assert code == 2 and "gemm_tflop" in err and "gemm_tflops" in err


def test_table_output_in_both_languages(run_cli):
    code, out, _ = run_cli("--lang", "en", "estimate", SFT)
    assert code == 0 and "MFU" in out and "GiB" in out
    code, out, _ = run_cli("--lang", "zh", "estimate", SFT)
    assert code == 0 and "单卡显存" in out


def test_fit_answers_are_tight(run_cli):
    code, out, err = run_cli("fit", SFT, "--what", "micro-batch", "--json")
    assert code == 0, err
    best = json.loads(out)["max_micro_batch"]["value"]
    assert best >= 1
    # the answer fits and one more sequence per micro-batch does not (memory only: the answer need not divide the
    # global batch, which `estimate` checks too)
    from trainsizer.catalog import load_catalog
    from trainsizer.estimate import estimate_memory
    from trainsizer.scenario import resolve_job

    sc = resolve_job(SFT, load_catalog())
    at_best = estimate_memory(sc.model, sc.training, sc.system, sc.strategy.with_(micro_batch=best), check=False)
    assert at_best.fits
    over = estimate_memory(sc.model, sc.training, sc.system, sc.strategy.with_(micro_batch=best + 1), check=False)
    assert not over.fits


def test_fit_model_and_seq_len(run_cli):
    code, out, _ = run_cli("fit", str(REPO / "examples" / "qlora-7b-one-gpu.yaml"), "--json")
    d = json.loads(out)
    assert code == 0
    assert d["max_seq_len"]["value"] >= 2048  # the job's own 2048 fits
    assert d["max_model"]["params_total"] > 7e9
    assert d["max_model"]["per_gpu_gib"] <= 24.0


def test_fit_says_why_when_nothing_fits(run_cli):
    """A fit question with no answer says so, what its smallest value needs and the largest parts of it, in
    both languages and in the JSON (not a bare 0)."""
    lora = str(REPO / "examples" / "lora-8b-one-gpu.yaml")
    code, out, err = run_cli("fit", lora, "--accelerator", "rtx-4090", "--what", "micro-batch", "--json")
    assert code == 0, err
    answer = json.loads(out)["max_micro_batch"]
    short = answer["nothing_fits"]
    assert answer["value"] == 0 and short["smallest"] == 1 and short["per_gpu_gib"] > short["capacity_gib"] == 23.643  # what CUDA gives
    assert short["per_gpu_gib"] == pytest.approx(sum(short["breakdown_gib"].values()), rel=1e-3)
    code, out, _ = run_cli("fit", lora, "--accelerator", "rtx-4090", "--what", "micro-batch")
    assert code == 0 and "none fits" in out and "no micro-batch fits: even 1 sequence per GPU needs" in out
    assert "weights 15" in " ".join(out.split())
    code, out, _ = run_cli("--lang", "zh", "fit", lora, "--accelerator", "rtx-4090")
    assert code == 0 and "都放不下" in out and "没有能放下的微批次" in out
    code, out, _ = run_cli("fit", lora, "--what", "micro-batch", "--json")
    assert "nothing_fits" not in json.loads(out)["max_micro_batch"]  # on the L40S one fits


def test_samples_cut_at_seq_len_are_a_warning_in_every_output(run_cli, tmp_path):
    job = read_mapping(REPO / "examples" / "lora-8b-one-gpu.yaml")
    job["data"] = {"samples": 2000, "avg_tokens": 8000}
    path = tmp_path / "long.yaml"
    path.write_text(json.dumps(job))
    for lang, word in (("en", "WARNING: samples_truncated"), ("zh", "警告：samples_truncated")):
        for command in ("check", "estimate"):
            code, out, err = run_cli("--lang", lang, command, str(path))
            assert code == 0, err
            assert word in out, (lang, command)
    notes = _estimate(run_cli, str(path))["notes"]
    assert notes[0].startswith("samples_truncated: ") and "49%" in notes[0]


def test_a_zero_flag_over_a_file_with_fsdp_is_refused_not_ignored(run_cli):
    """`--zero 0` over the example's `fsdp: full` used to be dropped in silence (FSDP estimated anyway)."""
    code, _, err = run_cli("estimate", SFT, "--zero", "0")
    assert code == 2 and "fsdp: full" in err and "zero: 0" in err and "--fsdp none" in err
    code, _, err = run_cli("estimate", SFT, "--zero", "0", "--fsdp", "none", "--offload", "none", "--json")
    assert code == 0, err


def test_a_purchase_shows_its_full_price_and_its_amortised_share_each_labelled(run_cli, tmp_path):
    """`estimate` writes a bought job's cost as the plan does: 'buy, full price' and 'buy, amortised over 4
    years', and the budget line says which basis it checked."""
    import yaml

    job = yaml.safe_load((REPO / "examples" / "sft-70b-16gpu.yaml").read_text(encoding="utf-8"))
    job["goal"].update(procurement="buy", budget={"amount": 100000, "currency": "USD"})
    path = tmp_path / "buy.yaml"
    path.write_text(yaml.safe_dump(job), encoding="utf-8")
    for lang, full, amortised in (("en", "Buy, full price", "Buy, amortised over 4 years"),
                                  ("zh", "购买，全价", "购买，按 4 年折旧分摊")):
        code, out, _ = run_cli("--lang", lang, "estimate", str(path))
        assert code == 0 and full in out and amortised in out
    d = _estimate(run_cli, str(path))
    assert d["goal"]["cost_basis"] == "buy" and d["goal"]["within_budget"] is False
