"""The result file of an acceptance run: checks, nodes, calibration (pydantic, JSON out).

The file is rewritten atomically (temp file + rename) after every check, so a crash never loses the
checks that finished.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from trainsizer.errors import SpecError
from trainsizer.messages import msg

Status = Literal["pass", "fail", "skipped", "error"]


class CheckResult(BaseModel):
    """One verdict: the measured figure, the threshold and where the threshold came from."""

    name: str
    status: Status
    measured: float | int | str | None = None
    threshold: float | int | str | None = None
    unit: str | None = None
    why: str = ""
    # the catalogue message `why` was written from ({key, params}), so the report reads it in either language
    why_msg: dict[str, Any] | None = None
    source: str | None = None
    # a plan's threshold: the catalogue message `source` was written from (criteria.Limit.source_msg), so the
    # report shows the source in the reader's language
    source_msg: dict[str, Any] | None = None
    node: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)


class GemmCalibration(BaseModel):
    bf16: float | None = None
    fp8: float | None = None


class Calibration(BaseModel):
    """Measured figures `trainsizer estimate --calibration` reads (keys are a contract with estimate)."""

    gemm_tflops: GemmCalibration = Field(default_factory=GemmCalibration)
    busbw_intra_gb_s: float | None = None
    busbw_inter_gb_s: float | None = None
    storage_read_gb_s: float | None = None
    storage_write_gb_s: float | None = None
    hbm_gb_s: float | None = None


class RunResult(BaseModel):
    schema_version: Literal[1] = 1
    tool: str = "trainsizer accept"
    tool_version: str = ""
    run_id: str
    started_at: str
    finished_at: str | None = None
    complete: bool = False
    verdict: Literal["pass", "fail", "incomplete", "running"] = "running"
    platform: str | None = None
    criteria_source: str = ""
    checks: list[CheckResult] = Field(default_factory=list)
    nodes: list[dict[str, Any]] = Field(default_factory=list)
    calibration: Calibration = Field(default_factory=Calibration)
    history: list[dict[str, Any]] = Field(default_factory=list)


# check name -> calibration field it feeds (the measured value is copied as is).
_CALIBRATION_FIELDS: dict[str, tuple[str, ...]] = {
    "gemm.bf16": ("gemm_tflops", "bf16"),
    "gemm.fp8": ("gemm_tflops", "fp8"),
    "hbm.bandwidth": ("hbm_gb_s",),
    "collectives.all_reduce.intra": ("busbw_intra_gb_s",),
    "collectives.all_reduce.inter": ("busbw_inter_gb_s",),
    "storage.read": ("storage_read_gb_s",),
    "storage.write": ("storage_write_gb_s",),
}


def calibration_from(checks: list[CheckResult]) -> Calibration:
    """Calibration section from the checks' measured figures (the lowest across nodes: the fleet floor)."""
    cal = Calibration()
    for check in checks:
        path = _CALIBRATION_FIELDS.get(check.name)
        if path is None or not isinstance(check.measured, int | float) or check.status == "error" \
                or check.details.get("calibration") is False:
            continue
        target: Any = cal
        for part in path[:-1]:
            target = getattr(target, part)
        old = getattr(target, path[-1])
        value = float(check.measured)
        setattr(target, path[-1], value if old is None else min(old, value))
    return cal


def verdict_of(checks: list[CheckResult]) -> Literal["pass", "fail", "incomplete"]:
    """fail if any check failed or errored; incomplete if any was skipped; pass only if all passed."""
    statuses = {c.status for c in checks}
    if statuses & {"fail", "error"}:
        return "fail"
    if "skipped" in statuses or not checks:
        return "incomplete"
    return "pass"


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temp file in the same folder, fsync, then rename over."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save(result: RunResult, path: Path) -> None:
    result.calibration = calibration_from(result.checks)
    write_atomic(path, result.model_dump_json(indent=2))


def load(path: Path) -> RunResult:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise SpecError(str(path), msg("acc_cannot_read_results", reason=str(err.strerror))) from None
    try:
        return RunResult.model_validate_json(text)
    except ValueError as err:
        raise SpecError(str(path), msg("acc_not_results", detail=str(err).splitlines()[0])) from None
