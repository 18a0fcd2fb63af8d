"""Checks 6: thermal (30 min) and burn-in (24 h): sustained GEMM load while sampling telemetry.

Fails on a lost GPU, a new critical XID (amdgpu RAS / reset line on AMD), new uncorrectable ECC errors, thermal/power
clock slowdown (on AMD: an active thermal violation in amd-smi's throttle status),
temperature over min(criteria, NVML GPU max), or a GPU below fleet ratio x the node median throughput
(docs/acceptance.md section 3 checks #14, #15; DCGM failing clock-event reasons).
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from trainsizer.accept.context import Context
from trainsizer.accept.criteria import Limit, fleet_ratio, suite_check
from trainsizer.accept.health import amd_failing, amd_violations_source, cper_failing, log_report
from trainsizer.accept.results import CheckResult
from trainsizer.accept.telemetry import FAILING_REASONS, GpuHealth, GpuSample, GpuTelemetry, reason_names
from trainsizer.messages import msg


@dataclass
class BurnInRecord:
    duration_s: float
    gpu_count: int
    ticks: list[list[GpuSample]] = field(default_factory=list)
    health_before: list[GpuHealth] = field(default_factory=list)
    health_after: list[GpuHealth] = field(default_factory=list)
    xids_before: list | None = None
    xids_after: list | None = None
    amdgpu_before: list | None = None  # an AMD node's amdgpu RAS / reset lines (accept.amdgpu_log)
    amdgpu_after: list | None = None
    throughput: dict[int, float] = field(default_factory=dict)
    load: str = "none"
    load_errors: dict[int, str] = field(default_factory=dict)  # GPU -> why its load stopped early
    temp_limits: dict[int, float] = field(default_factory=dict)


class GemmLoad:
    """One thread per GPU running bf16 matmuls until stopped; counts TFLOP/s per GPU.

    `start` returns once every GPU has run one warm-up batch (allocation, cuBLAS's first call, clocks ramping), and
    the count starts there: neither the telemetry nor the throughput sees the minutes-long soak's first second idle.
    """

    name = "bf16 GEMM on every GPU (torch)"
    batch = 10  # matmuls between synchronisations

    def __init__(self, n: int = 8192, ready_timeout_s: float = 120.0, torch=None) -> None:
        if torch is None:  # a stand-in lets the start / count logic be tested where PyTorch is not installed
            import torch

        self.torch = torch
        self.n = n
        self.ready_timeout_s = ready_timeout_s
        self.stop = threading.Event()
        self.go = threading.Event()
        self.ready: list[threading.Event] = []
        self.flops: dict[int, float] = {}
        self.errors: dict[int, str] = {}
        self.threads: list[threading.Thread] = []
        self.t0 = 0.0

    def _operands(self, i: int):
        dev = self.torch.device("cuda", i)
        return (dev, self.torch.randn(self.n, self.n, device=dev, dtype=self.torch.bfloat16),
                self.torch.randn(self.n, self.n, device=dev, dtype=self.torch.bfloat16))

    def _run_batch(self, operands) -> None:
        dev, a, b = operands
        for _ in range(self.batch):
            a @ b
        self.torch.cuda.synchronize(dev)

    def _loop(self, i: int, ready: threading.Event) -> None:
        self.flops[i] = 0.0
        try:
            operands = self._operands(i)
            self._run_batch(operands)  # warm-up, not counted
            ready.set()
            self.go.wait()
            while not self.stop.is_set():
                self._run_batch(operands)
                self.flops[i] += 2.0 * self.n**3 * self.batch
        except Exception as err:  # a GPU that fails under load is a finding, not a silent gap in the figures
            self.errors[i] = f"{type(err).__name__}: {err}"[:300]
        finally:
            ready.set()

    def start(self) -> None:
        for i in range(self.torch.cuda.device_count()):
            ready = threading.Event()
            t = threading.Thread(target=self._loop, args=(i, ready), daemon=True)
            t.start()
            self.ready.append(ready)
            self.threads.append(t)
        for ready in self.ready:
            ready.wait(timeout=self.ready_timeout_s)
        self.t0 = time.perf_counter()
        self.go.set()

    def finish(self) -> dict[int, float]:
        self.stop.set()
        self.go.set()
        for t in self.threads:
            t.join(timeout=60)
        elapsed = time.perf_counter() - self.t0
        return {i: round(f / elapsed / 1e12, 2) for i, f in self.flops.items()}


# NVML's utilisation is the busy share of its last sample period, 1/6 s to 1 s by product
# (nvmlDeviceGetUtilizationRates, NVML API reference): a sample taken as the load starts counts the idle time before it.
UTIL_WINDOW_S = 1.0


def record(tel: GpuTelemetry, duration_s: float, interval_s: float, load=None,
           clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> BurnInRecord:
    gpus = tel.gpus()
    rec = BurnInRecord(duration_s=duration_s, gpu_count=len(gpus), load=getattr(load, "name", "none"),
                       health_before=tel.health(), xids_before=tel.xid_events(),
                       amdgpu_before=tel.amdgpu_events(),
                       temp_limits={g.index: g.temp_limit_c for g in gpus if g.temp_limit_c})
    if load:
        load.start()
        sleep(UTIL_WINDOW_S)
    end = clock() + duration_s
    try:
        while True:
            rec.ticks.append(tel.sample())
            if clock() >= end:
                break
            sleep(min(interval_s, max(0.0, end - clock())))
    finally:
        if load:
            rec.throughput = load.finish()
            rec.load_errors = dict(getattr(load, "errors", {}))
    rec.health_after = tel.health()
    rec.xids_after = tel.xid_events()
    rec.amdgpu_after = tel.amdgpu_events()
    return rec


def _common(rec: BurnInRecord) -> dict:
    return {"duration_s": rec.duration_s, "samples": len(rec.ticks), "load": rec.load}


def _gpus_present(ctx: Context, prefix: str, rec: BurnInRecord) -> CheckResult:
    counts = [len([s for s in tick if not s.lost]) for tick in rec.ticks]
    lost = sorted({s.index for tick in rec.ticks for s in tick if s.lost})
    fewest = min(counts, default=rec.gpu_count)
    ok = fewest >= rec.gpu_count and not lost
    return ctx.result(f"{prefix}.gpus_present", "pass" if ok else "fail", measured=fewest,
                      threshold=rec.gpu_count, unit="GPUs", source=msg("acc_src_gpu_count_at_start"),
                      why=msg("acc_why_no_gpu_lost") if ok else msg(
                          "acc_why_gpu_lost", lost=str(lost) if lost else msg("acc_why_count_dropped")),
                      details=_common(rec))


def _kernel_log(ctx: Context, prefix: str, rec: BurnInRecord) -> CheckResult:
    """No new critical event of the node driver's kernel-log report (health.LOG_REPORTS) during the load."""
    report = log_report(ctx)
    name = f"{prefix}.{report.check}"
    before, after = getattr(rec, f"{report.record}_before"), getattr(rec, f"{report.record}_after")
    if before is None or after is None:
        return ctx.skipped(name, msg(report.no_log))
    critical, source = report.critical(ctx.criteria)
    new = [e for e in after[len(before):] if report.key(e) in critical]
    return ctx.result(name, "fail" if new else "pass", measured=len(new), threshold=0, unit=report.unit,
                      source=source, why=msg(report.new, found=report.words({report.key(e) for e in new})) if new
                      else msg(report.no_new))


def _ecc(ctx: Context, prefix: str, rec: BurnInRecord) -> CheckResult:
    before = {h.index: h.ecc_uncorrected_volatile or 0 for h in rec.health_before}
    after = {h.index: h.ecc_uncorrected_volatile or 0 for h in rec.health_after}
    for tick in rec.ticks:
        for s in tick:
            if s.ecc_uncorrected_volatile is not None:
                after[s.index] = max(after.get(s.index, 0), s.ecc_uncorrected_volatile)
    new_ecc = {i: after[i] - before.get(i, 0) for i in after if after[i] > before.get(i, 0)}
    return ctx.result(f"{prefix}.ecc", "fail" if new_ecc else "pass", measured=sum(new_ecc.values()),
                      threshold=0, unit="new uncorrectable", source=suite_check(15, "acc_rule_delta_ecc"),
                      why=msg("acc_why_new_ecc", errors=str(new_ecc)) if new_ecc else msg("acc_why_no_new_ecc"))


def _throttle(ctx: Context, prefix: str, rec: BurnInRecord) -> CheckResult:
    """Throttling under load, sample by sample: NVML's clock-event reasons that DCGM fails on, or on an AMD node the
    violations amd-smi reports active, judged as health.throttle judges them (thermal and PROCHOT fail, the power cap
    does not)."""
    amd = ctx.telemetry is not None and ctx.telemetry.vendor == "amd"
    throttled: dict[int, set[str]] = {}
    n_bad = seen = 0
    for s in (s for tick in rec.ticks for s in tick):
        bad = _failing(s, amd)
        if bad is None:
            continue
        seen += 1
        if bad:
            n_bad += 1
            throttled.setdefault(s.index, set()).update(bad)
    counted = _counted_violations(rec) if amd else None
    for i, names in (counted or {}).items():
        throttled.setdefault(i, set()).update(f"{n} ({COUNTER_WORDS})" for n in names if n not in throttled.get(i, ()))
    if amd and not seen and counted is None:  # an amd-smi without metric --throttle: nothing to judge, not a clean run
        return ctx.skipped(f"{prefix}.throttle", msg("acc_why_no_violation_samples"))
    return ctx.result(
        f"{prefix}.throttle", "fail" if throttled else "pass", measured=n_bad, threshold=0, unit="samples",
        source=amd_violations_source() if amd else msg("acc_src_dcgm_throttle"),
        why=msg("acc_why_slowdown", gpus="; ".join(f"GPU {i}: {', '.join(sorted(r))}" for i, r in throttled.items()))
        if throttled else msg("acc_why_no_slowdown"))


# how a violation found only by its accumulated counter is named in a reason (data, as amd-smi's names are)
COUNTER_WORDS = "accumulated counter rose"


def _counted_violations(rec: BurnInRecord) -> dict[int, list[str]] | None:
    """AMD: the failing violations whose accumulated counter rose between the health reads before and after the load
    (a violation that began and ended between two samples); None where no GPU reported the counters both times."""
    before = {h.index: h.violation_counts for h in rec.health_before if h.violation_counts}
    after = {h.index: h.violation_counts for h in rec.health_after if h.violation_counts}
    both = set(before) & set(after)
    if not both:
        return None
    return {i: rose for i in sorted(both)
            if (rose := [n for n in amd_failing(after[i]) if n in before[i] and after[i][n] > before[i][n]])}


def _failing(s: GpuSample, amd: bool) -> list[str] | None:
    """A sample's failing throttle states; None where the sample carries none (AMD: amd-smi gave no status)."""
    if amd:
        return None if s.violations_active is None else amd_failing(s.violations_active)
    return reason_names(s.clock_event_reasons & FAILING_REASONS)


def _temperature(ctx: Context, prefix: str, rec: BurnInRecord) -> CheckResult:
    crit = ctx.criteria
    temps: dict[int, float] = {}
    for tick in rec.ticks:
        for s in tick:
            if s.temp_c is not None:
                temps[s.index] = max(temps.get(s.index, float("-inf")), s.temp_c)
    if not temps:
        return ctx.skipped(f"{prefix}.temperature", msg("acc_why_no_temperature"), limit=crit.temp_max_c)
    limit = crit.temp_max_c
    if rec.temp_limits:
        gpu_max = min(rec.temp_limits.values())
        if limit is None or gpu_max < float(limit.value):
            limit = Limit.said(gpu_max, msg("acc_src_nvml_max_temp"))
    hottest = max(temps, key=temps.get)
    return ctx.at_most(f"{prefix}.temperature", temps[hottest], limit, "C",
                       msg("acc_what_hottest", gpu=hottest), details={"peak_c": temps, **_common(rec)})


def _utilization(ctx: Context, prefix: str, rec: BurnInRecord) -> CheckResult:
    utils: dict[int, list[float]] = {}
    for tick in rec.ticks:
        for s in tick:
            if s.util_pct is not None:
                utils.setdefault(s.index, []).append(s.util_pct)
    if not utils or rec.load == "none" and not rec.throughput:
        return ctx.skipped(f"{prefix}.utilization", msg("acc_why_no_utilisation"))
    means = {i: round(statistics.fmean(v), 1) for i, v in utils.items()}
    low_i = min(means, key=means.get)
    return ctx.at_least(f"{prefix}.utilization", means[low_i],
                        Limit.said(95, suite_check(15, "acc_rule_utilisation")),
                        "%", msg("acc_what_util_lowest", gpu=low_i), details={"mean_pct": means})


def _throughput(ctx: Context, prefix: str, rec: BurnInRecord) -> CheckResult:
    if not rec.throughput:
        return ctx.skipped(f"{prefix}.throughput", msg("acc_why_no_load_throughput", load=rec.load))
    med = statistics.median(rec.throughput.values())
    ratio, source = fleet_ratio(ctx.criteria)
    low_i = min(rec.throughput, key=rec.throughput.get)
    limit = Limit.said(round(ratio * med, 2), msg("acc_src_node_median", ratio=ratio, source=source))
    res = ctx.at_least(f"{prefix}.throughput", rec.throughput[low_i], limit, "TFLOP/s",
                       msg("acc_what_slowest_under_load", gpu=low_i), details={"per_gpu": rec.throughput})
    if rec.load_errors:
        res.status = "fail"
        ctx.add_why(res, msg("acc_why_load_stopped", errors="; ".join(
            f"GPU {i}: {e}" for i, e in sorted(rec.load_errors.items()))), key="acc_why_because")
    return res


def _cper(ctx: Context, prefix: str, rec: BurnInRecord) -> CheckResult:
    """AMD Instinct: no new fatal or uncorrected CPER record (amd-smi ras --cper) between the health reads before and
    after the load."""
    failing, source = cper_failing()

    def counts(hs: list[GpuHealth]) -> dict[int, int]:
        return {h.index: sum(n for s, n in h.cper_records.items() if s in failing)
                for h in hs if h.cper_records is not None}
    before, after = counts(rec.health_before), counts(rec.health_after)
    if not after:
        return ctx.skipped(f"{prefix}.cper", msg("acc_why_no_cper"))
    new = {i: n - before.get(i, 0) for i, n in after.items() if n > before.get(i, 0)}
    return ctx.result(f"{prefix}.cper", "fail" if new else "pass", measured=sum(new.values()), threshold=0,
                      unit="new CPER records", source=source,
                      why=msg("acc_why_new_cper", errors=str(new)) if new else msg("acc_why_no_new_cper"))


_CHECKS = (_gpus_present, _kernel_log, _ecc, _throttle, _temperature, _utilization, _throughput)


def evaluate(ctx: Context, prefix: str, rec: BurnInRecord) -> list[CheckResult]:
    """One result per check, in the order the report lists them; an AMD node's CPER records after its ECC."""
    checks = list(_CHECKS)
    if ctx.telemetry is not None and ctx.telemetry.vendor == "amd":
        checks.insert(checks.index(_ecc) + 1, _cper)
    return [check(ctx, prefix, rec) for check in checks]


def run(ctx: Context, prefix: str, duration_s: float) -> list[CheckResult]:
    if ctx.telemetry is None:
        return [ctx.skipped(prefix, ctx.telemetry_why)]
    if duration_s <= 0:
        return [ctx.skipped(prefix, msg("acc_why_duration_0"))]
    load = None
    if not ctx.telemetry.source.startswith("recorded"):
        try:
            import torch
        except ImportError:
            return [ctx.skipped(prefix, msg("acc_why_no_torch_load"))]
        if not torch.cuda.is_available():
            return [ctx.skipped(prefix, msg("acc_why_no_cuda_load"))]
        load = GemmLoad(n=min(ctx.options.gemm_size, 8192))
    rec = record(ctx.telemetry, duration_s, ctx.options.sample_interval_s, load)
    return evaluate(ctx, prefix, rec)
