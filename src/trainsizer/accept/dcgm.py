"""DCGM diagnostics (`dcgmi diag -r <level> -j`) when DCGM is installed; JSON per entity.

Format: NVIDIA/DCGM testing/python3/dcgm_diag_schema.json (docs/acceptance.md section 2.2). The exit code
is not trusted alone: every entity's status is read.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass

from trainsizer.accept.context import Context
from trainsizer.accept.results import CheckResult
from trainsizer.messages import msg


@dataclass(frozen=True)
class DiagResult:
    category: str
    test: str
    entity: str
    status: str
    warnings: tuple[str, ...]


def parse(text: str) -> tuple[list[DiagResult], str | None]:
    """(results, runtime_error) from `dcgmi diag -j` output."""
    data = json.loads(text[text.find("{"):])
    diag = data.get("DCGM Diagnostic", {})
    out = []
    for cat in diag.get("test_categories", []):
        for test in cat.get("tests", []):
            for r in test.get("results", []):
                warnings = tuple(w.get("warning", "") for w in r.get("warnings", []) or [])
                entity = f"{r.get('entity_group', 'GPU')} {r.get('entity_id', '?')}"
                out.append(DiagResult(cat.get("category", "?"), test.get("name", "?"), entity,
                                      str(r.get("status", "?")), warnings))
    return out, diag.get("runtime_error") or data.get("runtime_error")


def run(ctx: Context) -> list[CheckResult]:
    if shutil.which("dcgmi") is None:
        return [ctx.skipped("dcgm.diag", msg("acc_why_no_dcgmi"))]
    level = ctx.options.dcgm_level
    cmd = ["dcgmi", "diag", "-r", str(level), "-j"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, check=False)
        results, err = parse(proc.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError) as exc:
        return [ctx.result("dcgm.diag", "error", why=f"{' '.join(cmd)}: {exc}")]
    if err:
        return [ctx.result("dcgm.diag", "error", why=msg("acc_why_dcgm_error", error=str(err)))]
    failed = [r for r in results if r.status.lower() == "fail"]
    details = {"level": level, "results": [r.__dict__ for r in results]}
    why = ("; ".join(f"{r.test} {r.entity}: {' '.join(r.warnings)[:120]}" for r in failed) if failed
           else msg("acc_why_dcgm_ok", n=len(results), level=level))
    return [ctx.result("dcgm.diag", "fail" if failed else "pass", measured=len(failed), threshold=0,
                       unit="failed tests", source="DCGM diag per-entity status", why=why, details=details)]
