"""Check 2: GPU health: ECC, retired pages / remapped rows, XID errors, clock-event (throttle) reasons.

Rules: docs/acceptance.md section 3 check #2 (aznhc, gcm): uncorrectable == 0, remap pending/failure == 0,
retired pages pending == 0, no critical XID since boot (on AMD: no critical amdgpu RAS / reset line), corrected ECC
only above a high bar.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from trainsizer.accept import platforms
from trainsizer.accept.context import Context
from trainsizer.accept.criteria import suite_check
from trainsizer.accept.results import CheckResult
from trainsizer.accept.telemetry import FAILING_REASONS, reason_names
from trainsizer.accept.telemetry_amd import XGMI_NO_ERRORS
from trainsizer.messages import Msg, msg


def _verdict(ctx: Context, name: str, bad: dict, checked: int, what: str, **kw) -> CheckResult:
    if checked == 0:
        return ctx.skipped(name, msg("acc_why_not_reported_by", what=what, source=ctx.telemetry.source))
    if bad:
        return ctx.result(name, "fail", measured=len(bad), threshold=0, unit="GPUs",
                          why=msg("acc_why_bad_gpus", what=what, gpus="; ".join(f"GPU {i}: {v}" for i, v in sorted(bad.items()))),
                          details={"bad": bad}, **kw)
    return ctx.result(name, "pass", measured=0, threshold=0, unit="GPUs", why=msg("acc_why_none_on", what=what, checked=checked),
                      **kw)


@dataclass(frozen=True)
class LogReport:
    """A GPU driver's error report in the kernel log, judged the same way at health and burn-in: NVIDIA's Xid lines
    (accept/xid.py), or amdgpu's RAS and GPU-reset lines on an AMD node, which has no Xid (accept/amdgpu_log.py)."""

    check: str  # the check's name after "health." / "<stage>."
    unit: str
    reader: str  # the GpuTelemetry method that reads the events, or None where the log cannot be read
    record: str  # burn-in's BurnInRecord keeps them as <record>_before / <record>_after
    criteria: str  # the AcceptanceCriteria list of critical values (its source: <criteria>_source)
    key: Callable[[Any], Any]  # an event's value that list holds
    words: Callable[[Iterable[Any]], str]  # a set of values or PCI addresses as a reason writes it
    details: Callable[[Any], dict]  # one event in the result's details
    no_log: str  # messages.yaml keys: the log cannot be read; critical events / none (health); new / none (burn-in)
    found: str
    clean: str
    new: str
    no_new: str

    def events(self, tel: Any) -> list | None:
        return getattr(tel, self.reader)()

    def critical(self, crit: Any) -> tuple[set, str | None]:
        return set(getattr(crit, self.criteria) or []), getattr(crit, f"{self.criteria}_source")


LOG_REPORTS = {
    "nvidia": LogReport(
        check="xid", unit="critical XIDs", reader="xid_events", record="xids", criteria="critical_xids",
        key=lambda e: e.xid, words=lambda v: str(sorted(v)),
        details=lambda e: {"pci": e.pci, "xid": e.xid, "message": e.message},
        no_log="acc_why_no_kernel_log", found="acc_why_critical_xids", clean="acc_why_no_critical_xid",
        new="acc_why_new_xids", no_new="acc_why_no_new_xid"),
    "amd": LogReport(
        check="amdgpu_ras", unit="critical amdgpu events", reader="amdgpu_events", record="amdgpu",
        criteria="critical_amdgpu_events", key=lambda e: e.kind, words=lambda v: ", ".join(sorted(v)),
        details=lambda e: {"pci": e.pci, "kind": e.kind, "count": e.count, "block": e.block, "message": e.message},
        no_log="acc_why_no_kernel_log_amd", found="acc_why_amdgpu_events", clean="acc_why_no_amdgpu_event",
        new="acc_why_new_amdgpu_events", no_new="acc_why_no_new_amdgpu_event"),
}


def log_report(ctx: Context) -> LogReport:
    """The kernel-log report of the node's driver (telemetry.vendor; NVIDIA's where no telemetry says)."""
    return LOG_REPORTS["amd" if ctx.telemetry is not None and ctx.telemetry.vendor == "amd" else "nvidia"]


def _kernel_log(ctx: Context, name: str, report: LogReport) -> CheckResult:
    events = report.events(ctx.telemetry)
    if events is None:
        return ctx.skipped(name, msg(report.no_log))
    critical, source = report.critical(ctx.criteria)
    hits = [e for e in events if report.key(e) in critical]
    seen = {report.key(e) for e in events}
    return ctx.result(
        name, "fail" if hits else "pass", measured=len(hits), threshold=0, unit=report.unit, source=source,
        why=(msg(report.found, found=report.words({report.key(e) for e in hits}),
                 pci=report.words({e.pci for e in hits})) if hits
             else msg(report.clean, seen=report.words(seen) if seen else msg("accept_none"))),
        details={"events": [report.details(e) for e in events[:50]]},
    )


def _xgmi_errors(ctx: Context, hs: list) -> CheckResult:
    """AMD Instinct: any xGMI error state fails the GPU (Azure's AMD health check: check_gpu_xgmi)."""
    states = {h.index: h.xgmi_error_status for h in hs if h.xgmi_error_status is not None}
    bad = {i: s for i, s in states.items() if s != XGMI_NO_ERRORS}
    return _verdict(ctx, "health.xgmi_errors", bad, len(states), msg("acc_what_xgmi_errors"),
                    source=msg("acc_src_azure_xgmi"))


def cper_failing() -> tuple[set[str], str]:
    """The CPER severities that fail a GPU (platforms.yaml defaults.critical_cper_severities) and their source."""
    d = platforms.defaults()["critical_cper_severities"]
    return set(d["value"]), platforms.source_text(d["source"])


def _cper_words(records: dict[str, int], keep: set[str]) -> str:
    return ", ".join(f"{s} x{n}" for s, n in sorted(records.items()) if s in keep)


def _cper(ctx: Context, hs: list) -> CheckResult:
    """AMD Instinct: a fatal or uncorrected CPER record fails the GPU; corrected ones are named, as AMD sets no bar."""
    failing, source = cper_failing()
    records = {h.index: h.cper_records for h in hs if h.cper_records is not None}
    if not records:
        return ctx.skipped("health.cper", msg("acc_why_no_cper"))
    bad = {i: _cper_words(r, failing) for i, r in records.items() if failing & set(r)}
    res = _verdict(ctx, "health.cper", bad, len(records), msg("acc_what_cper"), source=source)
    other = {i: _cper_words(r, set(r) - failing) for i, r in records.items() if set(r) - failing}
    if other:
        ctx.add_why(res, msg("acc_why_cper_other", gpus="; ".join(f"GPU {i}: {w}" for i, w in sorted(other.items()))))
    return res


def run(ctx: Context) -> list[CheckResult]:
    report = log_report(ctx)
    names = ["health.ecc_uncorrectable", "health.ecc_corrected", "health.remapped_rows", "health.retired_pages",
             f"health.{report.check}", "health.throttle"]
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
    if ctx.telemetry.vendor == "amd" and worst and out[-1].status == "pass":
        # AMD publishes no fail bar: its node-scraper logs any corrected count as a warning, so the GPUs are named
        ctx.add_why(out[-1], msg("acc_why_ecc_corrected_amd", gpus=", ".join(f"GPU {i}: {c}" for i, c in corr if c)))

    remap = {h.index: ", ".join(w for w, bad in (("remap pending", h.remap_pending),
                                                 ("remap failure", h.remap_failure)) if bad)
             for h in hs if h.remap_pending or h.remap_failure}
    seen = sum(1 for h in hs if h.remap_pending is not None or h.remap_failure is not None)
    if ctx.telemetry.vendor == "amd":  # AMD retires a bad HBM page (names[3]) where NVIDIA remaps a row
        out.append(ctx.skipped(names[2], msg("acc_why_remap_amd")))
    else:
        out.append(_verdict(ctx, names[2], remap, seen, msg("acc_what_remap"),
                            source=suite_check(2, "acc_rule_aznhc")))

    retired = {h.index: "retired pages pending" for h in hs if h.retired_pages_pending}
    seen = sum(1 for h in hs if h.retired_pages_pending is not None)
    out.append(_verdict(ctx, names[3], retired, seen, msg("acc_what_retired")))

    out.append(_kernel_log(ctx, names[4], report))
    if ctx.telemetry.vendor == "amd":
        out.append(_xgmi_errors(ctx, hs))
        out.append(_cper(ctx, hs))

    out.append(_amd_throttle(ctx, hs) if ctx.telemetry.vendor == "amd" else _throttle(ctx, hs))
    return out


def _throttle(ctx: Context, hs: list) -> CheckResult:
    reasons = {h.index: h.clock_event_reasons for h in hs if h.clock_event_reasons is not None}
    throttled = {i: ", ".join(reason_names(r & FAILING_REASONS)) for i, r in reasons.items() if r & FAILING_REASONS}
    return _verdict(ctx, "health.throttle", throttled, len(reasons), msg("acc_what_clock_slowdown"),
                    source=msg("acc_src_dcgm_failing_reasons"))


# amd-smi's violations that fail a GPU: the thermal and hardware-asserted ones, as DCGM fails HW_SLOWDOWN / SW_THERMAL /
# HW_THERMAL; the power-cap ones (ppt, gfx_clk_below_host_limit_power) and low utilization do not, as DCGM passes
# SW_POWER_CAP. AMD publishes no such list: this is DCGM's rule read onto AMD's names [derived]
AMD_FAILING_VIOLATIONS = ("prochot", "socket_thermal", "vr_thermal", "hbm_thermal",
                          "gfx_clk_below_host_limit_thermal", "gfx_clk_below_host_limit_thm")


def amd_failing(active: Iterable[str]) -> list[str]:
    """The active amd-smi violations that fail a GPU (AMD_FAILING_VIOLATIONS), at health and during burn-in alike."""
    return [v for v in active if v in AMD_FAILING_VIOLATIONS]


def amd_violations_source() -> Msg:
    return msg("acc_src_amd_violations", failing=", ".join(AMD_FAILING_VIOLATIONS))


def _amd_throttle(ctx: Context, hs: list) -> CheckResult:
    """AMD Instinct: the thermal violations amd-smi metric --throttle reports active fail the GPU."""
    states = {h.index: h.violations_active for h in hs if h.violations_active is not None}
    bad = {i: ", ".join(amd_failing(active)) for i, active in states.items() if amd_failing(active)}
    return _verdict(ctx, "health.throttle", bad, len(states), msg("acc_what_amd_violations"),
                    source=amd_violations_source())
