"""`--lang zh` prints no English but names and units (tests/english_words.py says which words stay as written):
every example through check / fit / estimate, the catalog and model commands, and bad input of every kind
(job files, flags, catalog overlays, usage, a sample of the fuzzer's mutations). A failure names the command
and the English words; add the text to a message catalogue (src/trainsizer/data/messages.yaml for sentences,
src/trainsizer/render/data/i18n.yaml for labels) and raise or print it from there."""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import fuzz_specs  # noqa: E402
from english_words import catalog_prose, english_words, market_notes  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
JOB = (REPO / "examples" / "sft-70b-16gpu.yaml").read_text(encoding="utf-8")
SMALL = """model: llama-3.1-8b
method: full
data: {tokens: 1.0e9}
seq_len: 4096
global_batch: {sequences: 64}
hardware: {accelerator: h100-sxm-80gb, count: 8, per_node: 8}
"""
# Chinese puts no space between two of its characters ('需要 硬件' read as a stray gap)
HAN_SPACE_HAN = re.compile(r"[\u4e00-\u9fff] +[\u4e00-\u9fff]")
STRATEGY = "strategy: {tp: 1, pp: 1, dp: 8, zero: 3, micro_batch: 1}\n"


def _assert_chinese(run_cli, *args: str, source: str = "", codes: tuple[int, ...] = (0, 2),
                    prose: frozenset[str] = frozenset()) -> str:
    """Run `trainsizer --lang zh ARGS`; fail on English words other than names, the words of `source` (the
    job file) and `prose` (catalog data shown as written)."""
    code, out, err = run_cli("--lang", "zh", *args)
    assert code in codes, f"trainsizer --lang zh {' '.join(args)} exited {code}: {err[-600:]}"
    english = english_words(out + err, re.findall(r"[A-Za-z][\w.\-]*", " ".join((source, *args))), prose)
    assert not english, f"English left in `trainsizer --lang zh {' '.join(args)}`: {english}\n{(out + err)[-1500:]}"
    return out + err


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
@pytest.mark.parametrize("command", ["check", "fit", "estimate"])
def test_every_example_in_chinese(run_cli, example, command):
    _assert_chinese(run_cli, command, str(example), source=example.read_text(encoding="utf-8"),
                    prose=market_notes())


CATALOG_AND_MODELS = [
    *[("catalog", "list", kind) for kind in ("accelerators", "servers", "networks", "switches", "storage", "prices")],
    ("catalog", "show", "accelerator", "h100-sxm-80gb"), ("catalog", "show", "server", "dgx-h100"),
    ("catalog", "show", "network", "ib-ndr400"), ("catalog", "show", "switch", "quantum-2-qm9700"),
    ("catalog", "show", "storage", "lustre-ddn"), ("catalog", "show", "prices", "h100-sxm-80gb"),
    ("models", "list"), ("models", "show", "deepseek-v3"), ("models", "show", "examples/configs/tiny-llama"),
]


@pytest.mark.parametrize("args", CATALOG_AND_MODELS, ids=" ".join)
def test_catalog_and_models_in_chinese(run_cli, args):
    _assert_chinese(run_cli, *args, codes=(0,), prose=catalog_prose())


# One job file per kind of refusal: syntax, schema, bounds, names, strategy rules, job rules.
BAD_JOBS = {
    "yaml syntax": "model: [llama-3.1-8b\nmethod: full\n",
    "yaml indentation": "model: llama-3.1-8b\n  method: full\n",
    "yaml tab": "model: llama-3.1-8b\n\tmethod: full\n",
    "yaml bad token": "model: @llama\n",
    "duplicate key": SMALL + "model: llama-3.1-70b\n",
    "not a mapping": "- model\n- method\n",
    "unknown key": SMALL + "tokenz: 5\n",
    "missing model": SMALL.replace("model: llama-3.1-8b\n", ""),
    "bad method": SMALL.replace("method: full", "method: fulll"),
    "text for a number": SMALL.replace("seq_len: 4096", "seq_len: long"),
    "infinite tokens": SMALL.replace("tokens: 1.0e9", "tokens: .inf"),
    "negative batch": SMALL.replace("sequences: 64", "sequences: -4"),
    "two data quantities": SMALL.replace("{tokens: 1.0e9}", "{tokens: 1.0e9, samples: 10}"),
    "batch beyond data": SMALL.replace("tokens: 1.0e9", "tokens: 1000"),
    "lora without lora": SMALL + "lora: {rank: 8}\n",
    "unknown lora target": SMALL.replace("method: full", "method: lora") + "lora: {targets: [q_prj]}\n",
    "qlora fp8": SMALL.replace("method: full", "method: qlora") + "precision: fp8\n",
    "unknown model": SMALL.replace("llama-3.1-8b", "llama-9b"),
    "inline model": SMALL.replace("model: llama-3.1-8b", "model: {layers: 2, hidden: 100, heads: 3, vocab: 10}"),
    "inline unknown key": SMALL.replace("model: llama-3.1-8b", "model: {preset: llama-3.1-8b, layerz: 2}"),
    "inline literal": SMALL.replace("model: llama-3.1-8b", "model: {preset: llama-3.1-8b, mlp: relu}"),
    "long model name": SMALL.replace("llama-3.1-8b", "m" * 300),
    "unknown accelerator": SMALL.replace("h100-sxm-80gb", "h1000"),
    "ambiguous accelerator": SMALL.replace("h100-sxm-80gb", "h100"),
    "excluded accelerator": SMALL + "constraints: {exclude: [h100-sxm-80gb]}\n",
    "too many nodes": SMALL.replace("count: 8", "count: 64") + "constraints: {max_nodes: 2}\n",
    "needs a network": SMALL.replace("count: 8", "count: 16"),
    "whole hosts": SMALL.replace("count: 8, per_node: 8", "count: 12, per_node: 8"),
    "strategy without hardware": SMALL.replace("hardware: {accelerator: h100-sxm-80gb, count: 8, per_node: 8}\n",
                                               STRATEGY),
    "gpu count": SMALL + STRATEGY.replace("dp: 8", "dp: 4"),
    "tp divides heads": SMALL + STRATEGY.replace("tp: 1", "tp: 3").replace("dp: 8", "dp: 1").replace(
        "count: 8, per_node: 8", "count: 3, per_node: 8"),
    "batch divisible": SMALL.replace("sequences: 64", "sequences: 60") + STRATEGY,
    "vpp needs pp": SMALL + "strategy: {tp: 1, pp: 1, vpp: 2, dp: 8, micro_batch: 1}\n",
    "ep on a dense model": SMALL + "strategy: {tp: 1, pp: 1, dp: 8, ep: 2, micro_batch: 1}\n",
    "offload needs zero": SMALL + "strategy: {tp: 1, pp: 1, dp: 8, zero: 0, offload: optimizer, micro_batch: 1}\n",
    "zero3 with pp": SMALL + "strategy: {tp: 1, pp: 2, dp: 4, zero: 3, micro_batch: 1, framework: deepspeed}\n",
    "cp divides seq": SMALL.replace("seq_len: 4096", "seq_len: 4098") + "strategy: {tp: 1, cp: 4, dp: 2}\n",
    "no hardware": SMALL.replace("hardware: {accelerator: h100-sxm-80gb, count: 8, per_node: 8}\n", ""),
}


@pytest.mark.parametrize("name", sorted(BAD_JOBS))
def test_bad_job_files_refused_in_chinese(run_cli, tmp_path, name):
    path = tmp_path / "job.yaml"
    path.write_text(BAD_JOBS[name], encoding="utf-8")
    text = _assert_chinese(run_cli, "estimate", str(path), source=BAD_JOBS[name])
    assert "错误" in text
    assert not HAN_SPACE_HAN.search(text), f"a space between two Chinese characters: {text}"


BYTES = {"latin-1": b"name: caf\xe9\n" + SMALL.encode(), "utf-16": SMALL.encode("utf-16"),
         "binary": b"\x00\x01\x02binary", "deep": b"model: " + b"{a: " * 500 + b"1" + b"}" * 500 + b"\n",
         "json": b'{"model": "llama-3.1-8b", "method": }'}


@pytest.mark.parametrize("name", sorted(BYTES))
def test_unreadable_files_refused_in_chinese(run_cli, tmp_path, name):
    path = tmp_path / ("job.json" if name == "json" else "job.yaml")
    path.write_bytes(BYTES[name])
    _assert_chinese(run_cli, "check", str(path), codes=(2,))


def test_non_transformer_config_refused_in_chinese(run_cli, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "mamba", "hidden_size": 768}))
    text = _assert_chinese(run_cli, "models", "show", str(tmp_path), codes=(2,))
    assert "状态空间模型" in text


USAGE = [("catalog", "list", "gpuz"), ("catalog", "show", "accelerator", "nosuch"), ("estimat",),
         ("estimate",), ("fit", "examples/sft-70b-16gpu.yaml", "--what", "depth"),
         ("estimate", "examples/sft-70b-16gpu.yaml", "--tp", "two"), ("estimate", "examples/sft-70b-16gpu.yaml",
                                                                      "--bogus"),
         ("estimate", "examples/sft-70b-16gpu.yaml", "--calibration", "nothing.json"),
         ("estimate", "examples/sft-70b-16gpu.yaml", "--recompute", "sometimes"), ("accept", "--nproc", "0"),
         ("report", "/nonexistent/plan.json", "--out", "/nonexistent/out"),
         *[("accept", *bad, "--no-history", "--quiet") for bad in (
             ("--only", "storgae"), ("--platform", "h100"), ("--burn-in", "24hours"), ("--storage-size", "lots"),
             ("--nnodes", "2"), ("--telemetry", "nvmlx"), ("--merge", "/nonexistent/dir"))]]


@pytest.mark.parametrize("args", USAGE, ids=" ".join)
def test_usage_errors_in_chinese(run_cli, args):
    _assert_chinese(run_cli, *args, codes=(2,))


OVERLAYS = {
    "missing fields": "accelerators:\n  my-gpu: {memory_gb: 96, memory_bw_tb_s: 4.0, tflops_dense: {bf16: 800}}\n",
    "unknown section": "acelerators: {}\n",
    "unknown field": "prices:\n  rent-usd-h100-sxm-80gb: {low: 1.9, high: 2.1, cheap: true}\n",
    "bad range": "prices:\n  rent-usd-h100-sxm-80gb: {low: 3.0, high: 2.1, typical: 2.5}\n",
    "bad date": "date: yesterday\nprices: {}\n",
    "not a number": "accelerators:\n  h100-sxm-80gb: {tdp_w: lots}\n",
    "scale member": "scale_platforms:\n  hgx-hopper: {members: [nosuch-gpu]}\n",
    "scale two platforms": "scale_platforms:\n  hgx-hopper: {members: [mi300x]}\n",
}


@pytest.mark.parametrize("name", sorted(OVERLAYS))
def test_bad_catalog_overlays_refused_in_chinese(run_cli, tmp_path, name):
    path = tmp_path / "overlay.yaml"
    path.write_text(OVERLAYS[name], encoding="utf-8")
    _assert_chinese(run_cli, "--catalog", str(path), "catalog", "list", "prices", source=OVERLAYS[name], codes=(2,))


@pytest.fixture(scope="module")
def fuzz_folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz-zh")
    (path / "configs").symlink_to(REPO / "examples" / "configs")
    return path


@pytest.mark.parametrize("seed", range(24))
def test_mutated_job_files_in_chinese(run_cli, fuzz_folder, seed):
    """The fuzzer's mutations (benchmarks/fuzz_specs.py), a fixed sample: whatever is refused, in Chinese."""
    content, suffix = fuzz_specs.make_spec(random.Random(seed), fuzz_specs.load_bases())
    path = fuzz_folder / f"job{suffix}"
    path.write_bytes(content)
    _assert_chinese(run_cli, "check", str(path), source=content.decode("utf-8", "replace"), prose=market_notes())


def test_overlay_card_in_chinese(run_cli, tmp_path):
    """A card the overlay completed: defaulted values and the doubt the loader writes are in Chinese."""
    overlay = ("accelerators:\n  my-gpu: {memory_gb: 48, memory_bw_tb_s: 0.9, tflops_dense: {bf16: 180},\n"
               "    scaleup_tech: pcie, scaleup_bw_bidir_gb_s: 64, scaleup_domain: 8, pcie_gb_s: 32, tdp_w: 300}\n")
    path = tmp_path / "mine.yaml"
    path.write_text(overlay, encoding="utf-8")
    text = _assert_chinese(run_cli, "--catalog", str(path), "catalog", "show", "accelerator", "my-gpu",
                           source=overlay, codes=(0,), prose=catalog_prose())
    assert "未给出" in text and "已取默认值" in text


def test_accept_table_and_html_report_in_chinese(run_cli, tmp_path):
    """A recorded node through the health checks: table, criteria and HTML report in Chinese; each check's `why`
    is its stored English text (README), so its words are allowed."""
    telemetry = REPO / "tests" / "fixtures" / "accept" / "telemetry" / "h100x8-healthy.json"
    out, page = tmp_path / "run.json", tmp_path / "run.html"
    args = ("accept", "--only", "health", "--telemetry", str(telemetry), "--platform", "h100-sxm-80gb",
            "--no-history", "--out", str(out), "--html", str(page))
    code, _out, err = run_cli("--lang", "zh", *args)
    assert code in (0, 1), err[-600:]
    result = json.loads(out.read_text(encoding="utf-8"))
    whys = " ".join(c["why"] + " " + c["name"] + " " + (c.get("unit") or "") for c in result["checks"])
    from trainsizer.accept import platforms

    # the platform table's sources are quoted as written (data, like the catalog's notes); aznhc names a tool
    sources = frozenset(re.findall(r"[A-Za-z][\w.\-]*", " ".join(map(str, platforms._table()["sources"].values()))))
    text = _assert_chinese(run_cli, *args, source=whys + " aznhc " + result["checks"][0]["node"], codes=(0, 1),
                           prose=sources)
    assert "平台参考表" in text
    html = re.sub(r"<style>.*?</style>|<pre>.*?</pre>|<[^>]+>", " ", page.read_text(encoding="utf-8"), flags=re.S)
    assert not english_words(html, re.findall(r"[A-Za-z][\w.\-]*", whys + " " + " ".join(args))
                             + [result["run_id"], result["checks"][0]["node"], "aznhc"], sources), html[-1500:]


@pytest.mark.parametrize("content", ['{"a": 1}', '{"options": [], "schema_version": "2.0"}', '{"options": '])
def test_bad_plan_files_refused_in_chinese(run_cli, tmp_path, content):
    path = tmp_path / "plan.json"
    path.write_text(content, encoding="utf-8")
    # `options` and `schema_version` are the plan file's keys, named as written
    _assert_chinese(run_cli, "report", str(path), "--out", str(tmp_path / "out"), codes=(2,),
                    source="options schema_version")
