"""Fuzz the job-file boundary: mutated job files through `trainsizer check` and `trainsizer estimate --json`.

Each spec starts from one of `examples/*.yaml` and gets 1-3 mutations: a value replaced by a nasty one
(inf, NaN, 1e-300, 10^30, "", "4e6", a 300-character string, a list, a mapping, ...), a number scaled by
10^-30..10^30, a key deleted or added, a section taken from another example, or a byte-level change
(duplicated line, Latin-1 / UTF-16 / binary bytes, truncation, 500-deep nesting, a 256-character model
name, JSON instead of YAML). Every run must end in exit 0 or 2 with no traceback, and a `--json` run that
exits 0 must print valid JSON (no NaN).

    python benchmarks/fuzz_specs.py                 # 10,000 specs, seed 0
    python benchmarks/fuzz_specs.py --specs 500 --seed 7

The test suite runs a bounded, derandomised slice of the same mutations (tests/test_fuzz_specs.py).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
COMMANDS = (("check",), ("estimate", "--json"))

NASTY: tuple[Any, ...] = (
    0, -1, 1, 0.5, 3, 7, 1e-300, 1e300, 10**30, -(10**30), 2**63, float("inf"), float("-inf"), float("nan"),
    "", "4e6", "1e9", "abc", "x" * 300, "h100", "llama-3.1-8b", "全参数", None, True, False, [], {}, [1, 2],
    {"a": 1}, [[[]]], "none", "full", "lora", "fp8",
)


# Values a real user might write for these keys: most such specs should estimate (exit 0) or be refused by
# a rule (exit 2), which exercises the estimators as well as the validators.
PLAUSIBLE: dict[str, tuple[Any, ...]] = {
    "method": ("pretrain", "cpt", "full", "dpo", "lora", "qlora"),
    "precision": ("bf16", "fp8", "fp16", "fp32"),
    "optimizer": ("adamw", "adamw8bit", "sgd", "adafactor"),
    "recompute": ("none", "selective", "full"),
    "offload": ("none", "optimizer", "optimizer+params"),
    "fsdp": ("none", "full"),
    "zero": (0, 1, 2, 3),
    "tp": (1, 2, 4, 8), "pp": (1, 2, 4), "dp": (1, 2, 4, 8, 16), "cp": (1, 2), "ep": (1, 2, 8),
    "micro_batch": (1, 2, 4, 8),
    "seq_len": (512, 2048, 4096, 8192, 32768),
    "accelerator": ("h100-sxm-80gb", "a100-sxm-80gb", "h20", "l40s", "rtx-4090", "mi300x", "b200"),
    "count": (1, 2, 8, 16, 64),
    "model": ("llama-3.1-8b", "llama-3.1-70b", "qwen2.5-32b", "qwen2.5-7b", "mixtral-8x7b"),
    "samples": (1_000, 52_002, 200_000), "avg_tokens": (50, 300, 900, 4_000, 20_000),
    "length_sigma": (0, 0.3, 0.8, 1.5, 3), "max_tokens": (512, 2_048, 8_192, 32_768), "packing": (True, False),
    "recompute_method": ("uniform", "block"), "recompute_num_layers": (0, 1, 2, 4, 8, 40),
    "fp8_transpose_cache": (True, False),
    "fp8_attention": (True, False), "fp8_activation_store": (True, False),
    "cuda_graphs": ("none", "layer", "full_iteration"), "local_batch": (1, 2, 3, 4, 8, 16),
    "cudnn_release": ("9.13", "9.17", 9.17, "9.19"),
    "framework": ("auto", "megatron", "megatron-core", "deepspeed", "fsdp", "hf", "torchtitan", "torchtune"),
}

# Fields no example writes (unpacked samples with their lengths, partial full recompute, the FP8 transpose
# cache, CUDA graphs, the FP8 SwiGLU input store and torchtitan's local batch): a quarter of the specs get one of these sections (merged into a strategy only where the example has
# one) before their mutations, so that these fields are fuzzed too.
SECTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("data", {"samples": 200_000, "avg_tokens": 900, "length_sigma": 0.8, "max_tokens": 8_192, "epochs": 2}),
    ("data", {"samples": 52_002, "avg_tokens": 300, "length_sigma": 1.2}),
    ("strategy", {"recompute": "full", "recompute_method": "block", "recompute_num_layers": 4,
                  "framework": "megatron-core"}),
    ("strategy", {"recompute": "full", "recompute_method": "uniform", "recompute_num_layers": 1,
                  "fp8_transpose_cache": False, "framework": "megatron-core"}),
    ("strategy", {"cuda_graphs": "full_iteration", "fp8_activation_store": True, "framework": "megatron-core"}),
    ("strategy", {"local_batch": 1, "framework": "torchtitan"}),
)


def _plausible(parent: dict, key: Any, rng: random.Random) -> None:
    value = parent.get(key)
    if key in PLAUSIBLE:
        parent[key] = rng.choice(PLAUSIBLE[key])
    elif isinstance(value, int | float) and not isinstance(value, bool):
        scaled = value * rng.choice((0.1, 0.25, 0.5, 2, 4, 10))
        parent[key] = max(1, int(scaled)) if isinstance(value, int) else scaled


def _paths(data: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path in a nested mapping (containers and leaves)."""
    out: list[tuple] = []
    if isinstance(data, dict):
        for k, v in data.items():
            out.append((*prefix, k))
            out.extend(_paths(v, (*prefix, k)))
    return out


def _parent(data: dict, path: tuple) -> dict | None:
    node: Any = data
    for k in path[:-1]:
        node = node.get(k) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


def _mutate_data(data: dict, rng: random.Random, others: list[dict]) -> None:
    paths = _paths(data) or [("model",)]
    path = rng.choice(paths)
    parent = _parent(data, path)
    if parent is None:
        return
    op = rng.randrange(12)
    key = path[-1]
    if op >= 6:
        _plausible(parent, key, rng)
    elif op == 0:
        parent[key] = rng.choice(NASTY)
    elif op == 1:
        value = parent.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            parent[key] = value * 10.0 ** rng.randint(-30, 30)
        else:
            parent[key] = rng.choice(NASTY)
    elif op == 2:
        parent.pop(key, None)
    elif op == 3:
        parent[rng.choice(["bogus", "tokenz", "count", "tp", "model", "lora"])] = rng.choice(NASTY)
    elif op == 4:
        donor = rng.choice(others)
        section = rng.choice(list(donor))
        data[section] = donor[section]
    else:
        parent[key] = {"nested": parent.get(key)} if rng.random() < 0.5 else [parent.get(key)]


def _mutate_bytes(text: str, rng: random.Random) -> tuple[bytes, str]:
    """Byte-level damage; returns (content, file suffix)."""
    op = rng.randrange(9)
    lines = text.splitlines(keepends=True) or ["\n"]
    if op == 0:
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
        return "".join(lines).encode(), ".yaml"
    if op == 1:
        return ("name: caf\u00e9 \u00fcber\n" + text).encode("latin-1", "replace"), ".yaml"
    if op == 2:
        return text.encode("utf-16"), ".yaml"
    if op == 3:
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 400))), ".yaml"
    if op == 4:
        return text.encode()[: rng.randrange(max(len(text), 1))], ".yaml"
    if op == 5:
        depth = rng.choice([40, 200, 500, 2000])
        return (text + "\nmodel: " + "{a: " * depth + "1" + "}" * depth + "\n").encode(), ".yaml"
    if op == 6:
        return (text + "\nmodel: " + "m" * rng.choice([256, 300, 5000]) + "\n").encode(), ".yaml"
    if op == 7:
        depth = rng.choice([40, 500, 5000])
        return ('{"model": ' + "[" * depth + "]" * depth + "}").encode(), ".json"
    try:
        return json.dumps(yaml.safe_load(text)).encode(), ".json"
    except (yaml.YAMLError, ValueError):
        return text.encode(), ".json"


def make_spec(rng: random.Random, bases: list[dict]) -> tuple[bytes, str]:
    """One mutated job file: (content, suffix)."""
    data = json.loads(json.dumps(rng.choice(bases)))
    if rng.random() < 0.25:
        section, fields = rng.choice(SECTIONS)
        if section == "data":
            data["data"] = dict(fields)
        elif isinstance(data.get(section), dict):
            data[section] = {**data[section], **fields}
    for _ in range(rng.randint(1, 3)):
        _mutate_data(data, rng, bases)
    text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
    if rng.random() < 0.25:
        return _mutate_bytes(text, rng)
    return text.encode(), ".yaml"


def load_bases() -> list[dict]:
    return [yaml.safe_load(p.read_text(encoding="utf-8")) for p in EXAMPLES]


def run_cli(args: list[str]) -> tuple[str, str]:
    """(outcome, detail) of one in-process CLI run: outcome is ok, error (exit 2) or crash."""
    from trainsizer.cli import main

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(args)
    except BaseException as exc:  # noqa: BLE001  (anything escaping main is the finding)
        return "crash", "".join(traceback.format_exception_only(type(exc), exc)).strip()
    if "Traceback" in err.getvalue():
        return "crash", err.getvalue()[-400:]
    if code == 2 and "--json" in args:  # the error object on stdout; its message as the paragraph would print it
        try:
            return "error", "error: " + json.loads(out.getvalue(), parse_constant=_no_nan)["error"]["message"]
        except (ValueError, KeyError, TypeError) as exc:
            return "crash", f"invalid JSON error: {exc!r}: {out.getvalue()[-400:]}"
    if code == 2:
        return "error", err.getvalue().strip()
    if code != 0:
        return "crash", f"exit {code}: {err.getvalue()[-400:]}"
    if "--json" in args:
        try:
            json.loads(out.getvalue(), parse_constant=_no_nan)
        except ValueError as exc:
            return "crash", f"invalid JSON: {exc}"
    return "ok", ""


def _no_nan(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def check_spec(content: bytes, suffix: str, folder: Path) -> list[tuple[str, str, str]]:
    """Run every command on one spec written under `folder` (beside the examples' configs)."""
    path = folder / f"fuzz{suffix}"
    path.write_bytes(content)
    return [(" ".join(cmd), *run_cli([cmd[0], str(path), *cmd[1:]])) for cmd in COMMANDS]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--specs", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    bases = load_bases()
    counts: Counter[tuple[str, str]] = Counter()
    crashes: list[str] = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "configs").symlink_to(REPO / "examples" / "configs")
        for _ in range(args.specs):
            content, suffix = make_spec(rng, bases)
            for cmd, outcome, detail in check_spec(content, suffix, folder):
                counts[(cmd, outcome)] += 1
                if outcome == "crash":
                    crashes.append(f"{cmd}: {detail.splitlines()[-1] if detail else ''}")
    took = time.perf_counter() - start
    runs = sum(counts.values())
    print(f"fuzz: {args.specs:,} specs (seed {args.seed}), {runs:,} runs in {took:.0f} s")
    for cmd in (" ".join(c) for c in COMMANDS):
        row = {o: counts[(cmd, o)] for o in ("ok", "error", "crash")}
        print(f"  {cmd:16s} exit 0: {row['ok']:6,}   exit 2 (error): {row['error']:6,}   crashes: {row['crash']:,}")
    for line, n in Counter(crashes).most_common(15):
        print(f"  crash x{n}: {line[:200]}")
    print(f"tracebacks: {len(crashes)}")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
