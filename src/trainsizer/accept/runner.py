"""Runs the selected checks in order, saving the result file atomically after each one."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from pathlib import Path

from trainsizer import __version__
from trainsizer.accept import (
    burnin,
    checkpoint,
    collectives,
    dcgm,
    gemm,
    hbm,
    health,
    inventory,
    perftest,
    storage,
)
from trainsizer.accept.context import Context
from trainsizer.accept.results import CheckResult, RunResult, save, verdict_of
from trainsizer.errors import SpecError, did_you_mean
from trainsizer.messages import msg

# Order: docs/acceptance.md section 3 "order of stages" (inventory/health, per-node performance, fabric,
# storage, thermal, burn-in).
CHECKS: dict[str, Callable[[Context], list[CheckResult]]] = {
    "inventory": inventory.run,
    "health": health.run,
    "dcgm": dcgm.run,
    "gemm": gemm.run,
    "hbm": hbm.run,
    "collectives": collectives.run,
    "rdma": perftest.run,
    "storage": storage.run,
    "checkpoint": checkpoint.run,
    "thermal": lambda ctx: burnin.run(ctx, "thermal", ctx.options.thermal_s),
    "burnin": lambda ctx: burnin.run(ctx, "burnin", ctx.options.burnin_s),
}
NODE_LOCAL = [g for g in CHECKS if g != "collectives"]


def _names(values: tuple[str, ...] | list[str], where: str) -> list[str]:
    out = []
    for v in values:
        for name in (p.strip() for p in v.split(",")):
            if not name:
                continue
            if name not in CHECKS:
                raise SpecError(where, msg("error_unknown_name", kind=msg("kind_check")), value=name, allowed=list(CHECKS),
                                suggestion=did_you_mean(name, CHECKS))
            out.append(name)
    return out


def select(only: tuple[str, ...] | list[str] = (), skip: tuple[str, ...] | list[str] = ()) -> list[str]:
    chosen = _names(only, "--only") or list(CHECKS)
    skipped = set(_names(skip, "--skip"))
    return [g for g in CHECKS if g in chosen and g not in skipped]


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def new_result(ctx: Context) -> RunResult:
    return RunResult(
        tool_version=__version__, run_id=uuid.uuid4().hex[:12], started_at=now(),
        platform=ctx.criteria.platform, criteria_source=ctx.criteria.source,
    )


def run_checks(ctx: Context, groups: list[str], out_path: Path | None,
               on_check: Callable[[list[CheckResult]], None] | None = None) -> RunResult:
    result = new_result(ctx)
    try:
        result.nodes = [inventory.node_info(ctx)]
    except Exception as err:  # inventory of the node must not stop the checks
        result.nodes = [{"hostname": ctx.node, "error": f"{type(err).__name__}: {err}"}]
    if out_path:
        save(result, out_path)
    for group in groups:
        try:
            checks = CHECKS[group](ctx)
        except Exception as err:  # a crashing check is reported, the others still run
            checks = [ctx.result(group, "error", why=f"{type(err).__name__}: {err}")]
        result.checks.extend(checks)
        result.verdict = "running"
        if out_path:
            save(result, out_path)
        if on_check:
            on_check(checks)
    result.finished_at = now()
    result.complete = True
    result.verdict = verdict_of(result.checks)
    if out_path:
        save(result, out_path)
    return result
