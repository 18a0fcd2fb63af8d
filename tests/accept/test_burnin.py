"""Thermal / burn-in: recorded telemetry series with each failure injected, on a fake clock."""

from __future__ import annotations

from dataclasses import replace

import pytest

from trainsizer.accept import burnin
from trainsizer.accept.criteria import from_platform
from trainsizer.accept.telemetry import GpuSample

from .conftest import recorded


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s


class FakeLoad:
    name = "fake load"

    def __init__(self, tput):
        self.tput = tput
        self.started = False

    def start(self):
        self.started = True

    def finish(self):
        return self.tput


def by_name(results):
    return {r.name: r for r in results}


def test_record_samples_for_the_duration_on_a_fake_clock():
    clock = FakeClock()
    load = FakeLoad({i: 700.0 for i in range(8)})
    rec = burnin.record(recorded(), duration_s=5, interval_s=1, load=load, clock=clock, sleep=clock.sleep)
    assert load.started and len(rec.ticks) == 6 and rec.gpu_count == 8
    assert rec.temp_limits[0] == 87.0 and rec.throughput[3] == 700.0


def test_sampling_starts_one_utilisation_window_after_the_load_runs():
    """On a real H200, a 20 s soak sampled from the load's first instant read 93.9% mean utilisation (its first sample
    counted the idle time before the load): the first sample now comes one NVML window after the load runs."""
    clock = FakeClock()
    load = FakeLoad({0: 700.0})
    started = []
    load.start = lambda: started.append(clock())
    tel = recorded()
    times = []
    sample = tel.sample
    tel.sample = lambda: (times.append(clock()), sample())[1]
    rec = burnin.record(tel, 3, 1, load, clock, clock.sleep)
    assert started == [0.0] and times[0] >= burnin.UTIL_WINDOW_S and len(rec.ticks) == 4


class SleepLoad(burnin.GemmLoad):
    """GemmLoad with a sleep for a GPU batch: GPU 1 takes long to allocate."""

    def __init__(self, warm_s):
        torch = type("T", (), {"cuda": type("C", (), {"device_count": staticmethod(lambda: len(warm_s))})})
        super().__init__(n=2, torch=torch)
        self.warm_s = warm_s
        self.batches = {i: 0 for i in range(len(warm_s))}

    def _operands(self, i):
        import time

        time.sleep(self.warm_s[i])
        return i

    def _run_batch(self, i):
        import time

        self.batches[i] += 1
        time.sleep(0.001)


def test_gemm_load_starts_counting_once_every_gpu_has_warmed_up():
    load = SleepLoad([0.0, 0.2])
    load.start()
    assert all(r.is_set() for r in load.ready) and load.batches[1] >= 1
    tput = load.finish()
    assert set(tput) == {0, 1} and not load.errors
    # each GPU's counted batches are those after the warm-up batch: the count starts at `start`'s return
    assert all(load.flops[i] == 2.0 * 2**3 * load.batch * (load.batches[i] - 1) for i in (0, 1))


def test_healthy_burn_in_passes(h100_ctx):
    clock = FakeClock()
    rec = burnin.record(recorded(), 9, 1, FakeLoad({i: 700.0 + i for i in range(8)}), clock, clock.sleep)
    r = by_name(burnin.evaluate(h100_ctx, "burnin", rec))
    assert {k: v.status for k, v in r.items()} == {k: "pass" for k in (
        "burnin.gpus_present", "burnin.xid", "burnin.ecc", "burnin.throttle", "burnin.temperature",
        "burnin.utilization", "burnin.throughput")}
    assert r["burnin.temperature"].measured == 45 + 9 * 2 + 7


def test_every_injected_fault_fails(h100_ctx):
    clock = FakeClock()
    slow = {i: 700.0 for i in range(8)} | {2: 500.0}  # GPU 2 below 0.9 x median
    rec = burnin.record(recorded("h100x8-burnin-faults.json"), 30, 1, FakeLoad(slow), clock, clock.sleep)
    r = by_name(burnin.evaluate(h100_ctx, "thermal", rec))
    assert r["thermal.gpus_present"].status == "fail" and "7" in r["thermal.gpus_present"].why
    assert r["thermal.xid"].status == "fail" and "79" in r["thermal.xid"].why
    assert r["thermal.ecc"].status == "fail" and r["thermal.ecc"].measured == 2
    assert r["thermal.throttle"].status == "fail" and "GPU 3: hw_thermal" in r["thermal.throttle"].why
    temp = r["thermal.temperature"]
    assert temp.status == "fail" and temp.measured == 45 + 10 + 6 + 40
    assert temp.threshold == 85  # min(plan 85 C, NVML GPU max 87 C)
    assert r["thermal.throughput"].status == "fail" and r["thermal.throughput"].measured == 500.0


def test_gpu_max_below_plan_limit_is_used(h100_ctx):
    rec = burnin.BurnInRecord(duration_s=1, gpu_count=1, ticks=[[GpuSample(index=0, temp_c=83.0)]],
                              temp_limits={0: 82.0}, xids_before=[], xids_after=[])
    t = by_name(burnin.evaluate(h100_ctx, "thermal", rec))["thermal.temperature"]
    assert t.status == "fail" and t.threshold == 82.0 and "NVML" in t.source


def test_no_telemetry_or_no_gpu_is_skipped(cpu_ctx):
    assert burnin.run(cpu_ctx, "burnin", 10)[0].status == "skipped"


def test_run_on_recorded_telemetry_without_load(h100_ctx):
    h100_ctx.options.sample_interval_s = 0.01
    h100_ctx.criteria = from_platform("h100-sxm-80gb")
    r = by_name(burnin.run(h100_ctx, "thermal", 0.05))
    assert r["thermal.throughput"].status == "skipped" and r["thermal.temperature"].status == "pass"
    assert r["thermal.utilization"].status == "skipped"


def test_low_utilisation_fails(h100_ctx):
    ticks = [[GpuSample(index=0, util_pct=99.0), GpuSample(index=1, util_pct=60.0)] for _ in range(3)]
    rec = burnin.BurnInRecord(duration_s=3, gpu_count=2, ticks=ticks, load="fake", throughput={0: 1.0, 1: 1.0},
                              xids_before=[], xids_after=[])
    u = by_name(burnin.evaluate(h100_ctx, "burnin", rec))["burnin.utilization"]
    assert u.status == "fail" and u.measured == 60.0 and "GPU 1" in u.why


def test_a_gpu_whose_load_crashes_fails_throughput(h100_ctx, monkeypatch):
    """The load thread of a GPU that raises (here: CUDA absent on a CPU torch) used to vanish silently."""
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this host has a GPU")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    clock = FakeClock()
    rec = burnin.record(recorded(), 2, 1, burnin.GemmLoad(n=64), clock, clock.sleep)
    assert rec.throughput == {0: 0.0} and 0 in rec.load_errors
    t = by_name(burnin.evaluate(h100_ctx, "burnin", rec))["burnin.throughput"]
    assert t.status == "fail" and t.why.startswith("load stopped: GPU 0:")


def test_an_amd_burn_in_fails_on_new_amdgpu_ras_lines(cpu_ctx):
    """An AMD node's burn-in reads amdgpu's RAS / reset lines where an NVIDIA node's reads Xid: the recorded MI300A
    node logs 2 new uncorrectable errors in its HBM (umc) during the run."""
    tel = recorded("mi300a-burnin-ras.json")
    cpu_ctx.telemetry = tel
    clock = FakeClock()
    rec = burnin.record(tel, 5, 1, None, clock, clock.sleep)
    r = by_name(burnin.evaluate(cpu_ctx, "burnin", rec))
    assert "burnin.xid" not in r
    ras = r["burnin.amdgpu_ras"]
    assert ras.status == "fail" and ras.measured == 1 and "uncorrectable" in ras.why
    assert r["burnin.ecc"].status == "fail"


def test_an_amd_burn_in_fails_a_gpu_whose_hbm_overheats_under_load_not_one_held_at_its_power_cap(cpu_ctx):
    """amd-smi's throttle status sampled during the load, judged as health.throttle judges it: the recorded MI300X
    node's GPU 3 reports HBM_THERMAL active from the fourth sample on (a GPU that throttles only under load, which the
    health check before the load cannot see); GPU 1 sits at its power cap (PPT) throughout, which does not fail."""
    tel = recorded("mi300x-burnin-throttle.json")
    cpu_ctx.telemetry = tel
    clock = FakeClock()
    rec = burnin.record(tel, 4, 1, None, clock, clock.sleep)
    r = by_name(burnin.evaluate(cpu_ctx, "burnin", rec))["burnin.throttle"]
    assert r.status == "fail" and r.measured == 2 and r.why == "thermal/power slowdown: GPU 3: hbm_thermal"
    assert "GPU 1" not in r.why and "amd-smi metric --throttle" in r.source


def test_an_amd_burn_in_without_violation_status_says_so_and_passes_a_power_cap(cpu_ctx):
    tel = recorded("mi300x-burnin-throttle.json")
    for tick in tel.data["samples"]:
        for s in tick:
            s["violations_active"] = ["ppt"] if s["index"] == 1 else []
    cpu_ctx.telemetry = tel
    clock = FakeClock()
    r = by_name(burnin.evaluate(cpu_ctx, "burnin", burnin.record(tel, 4, 1, None, clock, clock.sleep)))
    assert r["burnin.throttle"].status == "pass" and r["burnin.throttle"].why == "no thermal/power slowdown"
    for tick in tel.data["samples"]:
        for s in tick:
            s.pop("violations_active")
    tel._tick = 0
    r = by_name(burnin.evaluate(cpu_ctx, "burnin", burnin.record(tel, 4, 1, None, clock, clock.sleep)))
    assert r["burnin.throttle"].status == "skipped" and "metric --throttle" in r["burnin.throttle"].why


def test_an_amd_burn_in_fails_on_a_new_uncorrected_cper_record(cpu_ctx):
    """amd-smi's CPER records read before and after the load: a fatal / uncorrected one that appears during the run
    fails the burn-in; corrected ones do not, and a node whose amd-smi gives no list (no root) is skipped."""
    tel = recorded("mi300x-burnin-throttle.json")
    for h in tel.data["health"]:
        h["cper_records"] = {"NONFATAL-CORRECTED": 1} if h["index"] == 0 else {}
    tel.data["health_after"] = [dict(h, cper_records={"NONFATAL-CORRECTED": 4}) if h["index"] == 0 else
                                dict(h, cper_records={"NONFATAL-UNCORRECTED": 1}) if h["index"] == 2 else dict(h)
                                for h in tel.data["health"]]
    cpu_ctx.telemetry = tel
    clock = FakeClock()
    results = burnin.evaluate(cpu_ctx, "burnin", burnin.record(tel, 4, 1, None, clock, clock.sleep))
    names = [r.name for r in results]
    assert names.index("burnin.cper") == names.index("burnin.ecc") + 1
    r = by_name(results)["burnin.cper"]
    assert r.status == "fail" and r.measured == 1 and r.why == "new fatal or uncorrected CPER records: {2: 1}"
    for h in tel.data["health"] + tel.data["health_after"]:
        h.pop("cper_records", None)
    tel._tick = 0
    r = by_name(burnin.evaluate(cpu_ctx, "burnin", burnin.record(tel, 4, 1, None, clock, clock.sleep)))
    assert r["burnin.cper"].status == "skipped"
    nvidia = replace(cpu_ctx, telemetry=recorded())  # an NVIDIA node has no CPER check
    assert "burnin.cper" not in by_name(burnin.evaluate(nvidia, "burnin", burnin.record(nvidia.telemetry, 2, 1, None,
                                                                                        clock, clock.sleep)))


def test_an_amd_burn_in_fails_on_a_thermal_violation_no_sample_saw(cpu_ctx):
    """A violation that starts and ends between two samples shows in its accumulated counter: GPU 0's HBM-thermal
    counter rises between the health reads before and after the load while every sample reads NOT ACTIVE; GPU 1's
    power-cap (PPT) counter rises too, which does not fail."""
    tel = recorded("mi300x-burnin-throttle.json")
    for tick in tel.data["samples"]:
        for s in tick:
            s["violations_active"] = []
    counts = {"prochot": 0, "ppt": 10, "socket_thermal": 0, "vr_thermal": 0, "hbm_thermal": 0}
    tel.data["health"] = [dict(h, violation_counts=counts) for h in tel.data["health"]]
    tel.data["health_after"] = [dict(h, violation_counts={**counts, "hbm_thermal": 40} if h["index"] == 0 else
                                     {**counts, "ppt": 900} if h["index"] == 1 else counts)
                                for h in tel.data["health"]]
    cpu_ctx.telemetry = tel
    clock = FakeClock()
    r = by_name(burnin.evaluate(cpu_ctx, "burnin", burnin.record(tel, 4, 1, None, clock, clock.sleep)))
    throttle = r["burnin.throttle"]
    assert throttle.status == "fail" and throttle.measured == 0
    assert throttle.why == "thermal/power slowdown: GPU 0: hbm_thermal (accumulated counter rose)"
    # counters that did not rise, and samples all NOT ACTIVE: a clean run
    tel.data["health_after"] = tel.data["health"]
    tel._tick = 0
    r = by_name(burnin.evaluate(cpu_ctx, "burnin", burnin.record(tel, 4, 1, None, clock, clock.sleep)))
    assert r["burnin.throttle"].status == "pass"
