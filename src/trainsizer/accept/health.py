"""Check 2: GPU health: ECC, retired pages / remapped rows, XID errors, clock-event (throttle) reasons.

Rules: docs/acceptance.md section 3 check #2 (aznhc, gcm): uncorrectable == 0, remap pending/failure == 0,
retired pages pending == 0, no critical XID since boot (on AMD: no critical amdgpu RAS / reset line), corrected ECC
only above a high bar.
"""

from __future__ import annotations

from trainsizer.accept.context import Context
from trainsizer.accept.criteria import suite_check
from trainsizer.accept.results import CheckResult
from trainsizer.accept.telemetry import FAILING_REASONS, reason_names
from trainsizer.messages import msg


def _verdict(ctx: Context, name: str, bad: dict, checked: int, what: str, **kw) -> CheckResult:
    if checked == 0:
        return ctx.skipped(name, msg("acc_why_not_reported_by", what=what, source=ctx.telemetry.source))
    if bad:
        return ctx.result(name, "fail", measured=len(bad), threshold=0, unit="GPUs",
                          why=msg("acc_why_bad_gpus", what=what, gpus="; ".join(f"GPU {i}: {v}" for i, v in sorted(bad.items()))),
                          details={"bad": bad}, **kw)
    return ctx.result(name, "pass", measured=0, threshold=0, unit="GPUs", why=msg("acc_why_none_on", what=what, checked=checked),
                      **kw)


def log_check_name(ctx: Context) -> str:
    """The kernel-log check of the node's driver: Xid lines (NVIDIA) or amdgpu's RAS / reset lines (AMD)."""
    return "health.amdgpu_ras" if ctx.telemetry is not None and ctx.telemetry.vendor == "amd" else "health.xid"


def _amdgpu(ctx: Context, name: str) -> CheckResult:
    events = ctx.telemetry.amdgpu_events()
    if events is None:
        return ctx.skipped(name, msg("acc_why_no_kernel_log_amd"))
    critical = set(ctx.criteria.critical_amdgpu_events or [])
    hits = [e for e in events if e.kind in critical]
    kinds = sorted({e.kind for e in events})
    return ctx.result(
        name, "fail" if hits else "pass", measured=len(hits), threshold=0, unit="critical amdgpu events",
        source=ctx.criteria.critical_amdgpu_events_source,
        why=(msg("acc_why_amdgpu_events", kinds=", ".join(sorted({e.kind for e in hits})),
                 pci=", ".join(sorted({e.pci for e in hits}))) if hits
             else msg("acc_why_no_amdgpu_event", seen=", ".join(kinds) if kinds else msg("accept_none"))),
        details={"events": [{"pci": e.pci, "kind": e.kind, "count": e.count, "block": e.block, "message": e.message}
                            for e in events[:50]]},
    )


def _xid(ctx: Context, name: str) -> CheckResult:
    events = ctx.telemetry.xid_events()
    if events is None:
        return ctx.skipped(name, msg("acc_why_no_kernel_log"))
    crit = ctx.criteria
    critical = set(crit.critical_xids or [])
    hits = [e for e in events if e.xid in critical]
    seen_xids = sorted({e.xid for e in events})
    return ctx.result(
        name, "fail" if hits else "pass", measured=len(hits), threshold=0, unit="critical XIDs",
        source=crit.critical_xids_source,
        why=(msg("acc_why_critical_xids", xids=str(sorted({e.xid for e in hits})),
                 pci=str(sorted({e.pci for e in hits}))) if hits
             else msg("acc_why_no_critical_xid", seen=str(seen_xids) if seen_xids else msg("accept_none"))),
        details={"events": [{"pci": e.pci, "xid": e.xid, "message": e.message} for e in events[:50]]},
    )


def run(ctx: Context) -> list[CheckResult]:
    names = ["health.ecc_uncorrectable", "health.ecc_corrected", "health.remapped_rows", "health.retired_pages",
             log_check_name(ctx), "health.throttle"]
    if ctx.telemetry is None:
        return [ctx.skipped(n, ctx.telemetry_why) for n in names]
    crit = ctx.criteria
    hs = ctx.telemetry.health()
    out: list[CheckResult] = []

    unc = {h.index: f"volatile {h.ecc_uncorrected_volatile}, aggregate {h.ecc_uncorrected_aggregate}"
           for h in hs if (h.ecc_uncorrected_volatile or 0) > 0 or (h.ecc_uncorrected_aggregate or 0) > 0}
    seen = sum(1 for h in hs if h.ecc_uncorrected_volatile is not None or h.ecc_uncorrected_aggregate is not None)
    out.append(_verdict(ctx, names[0], unc, seen, msg("acc_what_ecc_uncorrectable"), source=suite_check(2)))

    corr = [(h.index, h.ecc_corrected_volatile) for h in hs if h.ecc_corrected_volatile is not None]
    worst = max((c for _, c in corr), default=None)
    out.append(ctx.at_most(names[1], worst, crit.ecc_corrected_max, "errors", msg("acc_what_ecc_corrected")))

    remap = {h.index: ", ".join(w for w, bad in (("remap pending", h.remap_pending),
                                                 ("remap failure", h.remap_failure)) if bad)
             for h in hs if h.remap_pending or h.remap_failure}
    seen = sum(1 for h in hs if h.remap_pending is not None or h.remap_failure is not None)
    out.append(_verdict(ctx, names[2], remap, seen, msg("acc_what_remap"), source=suite_check(2, "acc_rule_aznhc")))

    retired = {h.index: "retired pages pending" for h in hs if h.retired_pages_pending}
    seen = sum(1 for h in hs if h.retired_pages_pending is not None)
    out.append(_verdict(ctx, names[3], retired, seen, msg("acc_what_retired")))

    out.append(_amdgpu(ctx, names[4]) if names[4] == "health.amdgpu_ras" else _xid(ctx, names[4]))

    reasons = {h.index: h.clock_event_reasons for h in hs if h.clock_event_reasons is not None}
    throttled = {i: ", ".join(reason_names(r & FAILING_REASONS)) for i, r in reasons.items() if r & FAILING_REASONS}
    out.append(_verdict(ctx, names[5], throttled, len(reasons), msg("acc_what_clock_slowdown"),
                        source=msg("acc_src_dcgm_failing_reasons")))
    return out
