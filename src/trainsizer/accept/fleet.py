"""Merging per-node result files into one fleet result, with the fleet-relative straggler rule.

Rule: a node's figure >= fleet ratio x the fleet median (SuperBench variance rule, Google CHS suspects;
docs/acceptance.md section 3 "threshold policy" item 3).
"""

from __future__ import annotations

import statistics
import uuid

from trainsizer.accept.criteria import AcceptanceCriteria, fleet_ratio
from trainsizer.accept.results import CheckResult, RunResult, calibration_from, verdict_of
from trainsizer.messages import msg, storable

FLEET_METRICS = ("gemm.bf16", "gemm.fp8", "hbm.bandwidth", "storage.read", "storage.write", "storage.dataset_read",
                 "thermal.throughput", "burnin.throughput")


def fleet_checks(checks: list[CheckResult], ratio: float, source: str) -> list[CheckResult]:
    out = []
    for metric in FLEET_METRICS:
        per_node = {c.node: float(c.measured) for c in checks
                    if c.name == metric and isinstance(c.measured, int | float) and c.node}
        if len(per_node) < 2:
            continue
        med = statistics.median(per_node.values())
        slow = {n: v for n, v in per_node.items() if v < ratio * med}
        unit = next((c.unit for c in checks if c.name == metric), None)
        out.append(CheckResult(
            name=f"fleet.{metric}", status="fail" if slow else "pass", measured=min(per_node.values()),
            threshold=round(ratio * med, 4), unit=unit, source=f"{ratio} x fleet median ({source})", node="fleet",
            why=(why := msg("acc_why_fleet_slow", ratio=ratio, median=f"{med:.4g}",
                            nodes=", ".join(f"{n} {v:.4g}" for n, v in slow.items())) if slow
                 else msg("acc_why_fleet_ok", n=len(per_node), ratio=ratio, median=f"{med:.4g}")),
            why_msg=storable(why),
            details={"per_node": per_node},
        ))
    return out


def merge(results: list[RunResult], criteria: AcceptanceCriteria | None = None) -> RunResult:
    """One result from per-node results; cluster-wide collective checks are kept once."""
    if not results:
        raise ValueError("nothing to merge")
    first = results[0]
    # its own run id: reusing a node's would overwrite that node's run in the history database
    merged = RunResult(tool_version=first.tool_version, run_id=uuid.uuid4().hex[:12], started_at=min(
        r.started_at for r in results), platform=first.platform, criteria_source=first.criteria_source)
    seen_nodes: set[str] = set()
    seen_cluster: set[str] = set()
    for r in results:
        for n in r.nodes:
            if n.get("hostname") not in seen_nodes:
                seen_nodes.add(n.get("hostname"))
                merged.nodes.append(n)
        for c in r.checks:
            if c.name.startswith("collectives.") and c.name.endswith(".inter"):
                if c.name in seen_cluster:
                    continue
                seen_cluster.add(c.name)
            # the run it came from: the history keeps it once, under that run (store.record)
            merged.checks.append(c.model_copy(update={"details": {"run_id": r.run_id, **c.details}}))
    ratio, source = fleet_ratio(criteria)
    merged.checks.extend(fleet_checks(merged.checks, ratio, source))
    merged.finished_at = max((r.finished_at or r.started_at) for r in results)
    merged.complete = all(r.complete for r in results)
    verdict = verdict_of(merged.checks)
    merged.verdict = "incomplete" if verdict == "pass" and not merged.complete else verdict
    merged.calibration = calibration_from(merged.checks)
    return merged
