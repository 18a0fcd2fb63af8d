"""The layering of docs/CONVENTIONS.md, checked on every import in src (module level and inside functions)."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "src" / "trainsizer"

# Rank of each top-level module or package: an import must go to a lower rank (or stay inside its package).
# Shared by every layer: the loader of message catalogues, the message catalogue, the one way a parallel layout
# is written for people, a sourced rule (value, source id, note), the names a job file shares
# with the estimators, the error tree, the click runner that turns errors into exit status 2 (cli and
# `trainsizer accept`), and `trainsizer.__version__`.
RANK = {
    "catalogues": 0, "sourced_rule": 0, "names": 0, "numbers": 0, "jsonable": 0, "messages": 1, "layout_text": 2, "errors": 2, "cli_support": 3,
    "spec": 4,
    "catalog": 5, "models": 5,
    "estimate": 6,
    "scenario": 7, "evaluate": 8, "api": 9,
    "search": 10, "default_strategy": 11,
    "accept": 12,  # beside the others: it reads plan files; plan's build-out writes thresholds with its schema
    "plan": 13,
    "render": 14,
    "web": 15, "cli": 16,
    "__init__": 17,
}
# The one upward reference, lazy and documented: calling the package `trainsizer.estimate(...)` forwards to
# the library's entry point `trainsizer.api.estimate` (estimate/__init__.py, _CallableModule).
ALLOWED_UP = {("trainsizer.estimate", "trainsizer.api")}


def _top(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__"
    return parts[1]


def _imports(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "trainsizer":
            yield node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "trainsizer":
                    yield alias.name, []


def _module(path: Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_every_top_level_module_has_a_layer():
    tops = {p.stem if p.is_file() else p.name for p in PKG.iterdir()
            if (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))}
    assert tops == set(RANK), "add the new module to RANK and to docs/CONVENTIONS.md"


def test_imports_never_go_to_a_higher_layer():
    wrong = []
    for path in sorted(PKG.rglob("*.py")):
        here = _module(path)
        for target, names in _imports(path):
            if target == "trainsizer" and set(names) <= {"__version__"}:
                continue  # the version is shared
            a, b = _top(here), _top(target)
            if a == b or RANK[b] < RANK[a] or (here, target) in ALLOWED_UP:
                continue
            wrong.append(f"{here} imports {target} ({a} rank {RANK[a]} -> {b} rank {RANK[b]})")
    assert not wrong, "\n".join(wrong)
