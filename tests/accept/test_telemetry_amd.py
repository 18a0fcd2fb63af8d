"""amd-smi telemetry on samples written from AMD's documented output (tests/fixtures/accept/amd-smi/README.md)."""

from __future__ import annotations

import pytest

from trainsizer.accept import amdgpu_log, health, telemetry_amd, xid
from trainsizer.accept.context import Context, Options
from trainsizer.accept.criteria import generic
from trainsizer.accept.telemetry import open_telemetry
from trainsizer.accept.telemetry_amd import AmdSmiTelemetry, AmdSmiUnavailable
from trainsizer.messages import msg

from .conftest import fixture_text


def amd_smi_runner(ecc: str = "metric-ecc-clean.json", throttle_sample: str | None = None, asked: list | None = None):
    """Plays back the amd-smi samples for the commands AmdSmiTelemetry issues (an amd-smi without `metric --throttle`
    unless `throttle_sample` is given); `asked` collects the commands run."""
    outputs = {tuple(telemetry_amd.STATIC_CMD): "static-mi300a.json", tuple(telemetry_amd.LIST_CMD): "list.json",
               tuple(telemetry_amd.ECC_CMD): ecc, tuple(telemetry_amd.PENDING_PAGES_CMD): "bad-pages-pending.json",
               tuple(telemetry_amd.SAMPLE_CMD): "metric-sample.json"}
    if throttle_sample:
        outputs[tuple(telemetry_amd.SAMPLE_THROTTLE_CMD)] = throttle_sample

    def run(cmd: list[str]) -> str:
        if asked is not None:
            asked.append(tuple(cmd))
        if tuple(cmd) not in outputs:
            raise AmdSmiUnavailable(f"unexpected command {cmd}")
        return fixture_text(f"amd-smi/{outputs[tuple(cmd)]}")
    return run


def test_inventory_from_static_and_list():
    tel = AmdSmiTelemetry(run=amd_smi_runner())
    g = tel.gpus()
    assert [x.pci_bus_id for x in g] == ["0000:01:00.0", "0001:01:00.0", "0002:01:00.0", "0003:01:00.0"]
    assert g[0].name == "AMD Instinct MI300A" and g[1].uuid == "b6ff74a0-0000-1000-80ae-7c8cefe1f084"
    assert g[0].memory_total_bytes == 96432 * 2**20 and g[0].temp_limit_c == 100.0
    assert g[0].nvlinks_up is None  # xGMI is not NVLink: the NVLink check skips
    assert tel.driver_version() == "6.19.4" and tel.cuda_version() is None


def test_health_from_ecc_counts_and_pending_pages():
    h = AmdSmiTelemetry(run=amd_smi_runner("metric-ecc-faulty.json")).health()
    assert [(x.ecc_uncorrected_volatile, x.ecc_corrected_volatile) for x in h] == [(0, 0), (0, 12), (1, 0),
                                                                                   (None, None)]
    assert [x.retired_pages_pending for x in h] == [False, True, False, None]
    assert all(x.remap_pending is None and x.clock_event_reasons is None for x in h)


def test_deferred_errors_count_as_uncorrectable():
    text = '[{"gpu": 0, "ecc": {"total_correctable_count": 0, "total_uncorrectable_count": 0, ' \
           '"total_deferred_count": 3}}]'
    assert telemetry_amd.parse_ecc(text) == {0: (3, 0)}


def test_samples():
    s = AmdSmiTelemetry(run=amd_smi_runner(throttle_sample="metric-sample-throttle.json")).sample()
    assert [(x.power_w, x.temp_c, x.sm_clock_mhz, x.util_pct) for x in s][:2] == [(49.0, 27.0, 43.0, 2.0),
                                                                                  (42.0, 29.0, 47.0, 2.0)]
    assert s[0].ecc_uncorrected_volatile == 0
    # a burn-in sample carries the violation status too (GPU 3's amd-smi says N/A throughout)
    assert [x.violations_active for x in s] == [(), ("ppt",), ("hbm_thermal",), None]


def test_an_amd_smi_without_throttle_is_sampled_without_it_and_asked_once():
    asked: list = []
    tel = AmdSmiTelemetry(run=amd_smi_runner(asked=asked))
    first, second = tel.sample(), tel.sample()
    assert len(first) == len(second) == 4 and all(x.violations_active is None for x in first + second)
    assert asked.count(tuple(telemetry_amd.SAMPLE_THROTTLE_CMD)) == 1 and asked.count(tuple(telemetry_amd.SAMPLE_CMD)) == 2


@pytest.mark.parametrize(("value", "expected"), [
    (12, 12.0), ("550 W", 550.0), ({"value": 100, "unit": "C"}, 100.0), ("N/A", None), (None, None),
    ({"value": "N/A", "unit": "C"}, None), (True, None)])
def test_figures_in_every_form_amd_smi_prints(value, expected):
    assert telemetry_amd.number(value) == expected


def test_output_that_is_no_json_is_unavailable_not_a_traceback():
    with pytest.raises(AmdSmiUnavailable, match="no JSON"):
        telemetry_amd.per_gpu("ERROR: amdgpu driver not loaded")
    with pytest.raises(AmdSmiUnavailable, match="neither a list"):
        telemetry_amd.per_gpu('"N/A"')


def test_health_checks_on_an_amd_node_read_amdgpu_lines_not_xid(tmp_path, monkeypatch):
    log = fixture_text("kernel/dmesg-amdgpu.txt")
    monkeypatch.setattr(amdgpu_log, "read_kernel_log", lambda: (log, "dmesg"))
    monkeypatch.setattr(xid, "read_kernel_log", lambda: (log, "dmesg"))
    ctx = Context(criteria=generic(), telemetry=AmdSmiTelemetry(run=amd_smi_runner("metric-ecc-faulty.json")),
                  telemetry_why="amd-smi", options=Options(storage_path=tmp_path), node="mi300a01")
    r = {x.name: x for x in health.run(ctx)}
    assert "health.xid" not in r
    ras = r["health.amdgpu_ras"]
    assert ras.status == "fail" and ras.measured == 4  # 2 uncorrectable in umc, a reset, 1 deferred, a failed reset
    assert "0002:01:00.0" in ras.why and "node-scraper" in ras.source
    assert r["health.ecc_uncorrectable"].status == "fail" and "GPU 2" in r["health.ecc_uncorrectable"].why
    assert r["health.ecc_corrected"].status == "pass" and r["health.ecc_corrected"].measured == 12
    assert r["health.retired_pages"].status == "fail" and "GPU 1" in r["health.retired_pages"].why
    # AMD retires pages where NVIDIA remaps rows: the check says so (was "not reported by amd-smi")
    assert r["health.remapped_rows"].status == "skipped" and "health.retired_pages" in r["health.remapped_rows"].why
    assert r["health.throttle"].status == "skipped"


def test_a_clean_amd_node_passes_and_an_unreadable_log_skips(tmp_path, monkeypatch):
    ctx = Context(criteria=generic(), telemetry=AmdSmiTelemetry(run=amd_smi_runner()), telemetry_why="amd-smi",
                  options=Options(storage_path=tmp_path), node="mi300a01")
    monkeypatch.setattr(amdgpu_log, "read_kernel_log", lambda: ("amdgpu 0000:01:00.0: amdgpu: MEM ECC is active.\n",
                                                                "dmesg"))
    r = {x.name: x for x in health.run(ctx)}
    assert r["health.amdgpu_ras"].status == "pass" and r["health.ecc_uncorrectable"].status == "pass"
    monkeypatch.setattr(amdgpu_log, "read_kernel_log", lambda: (None, "not permitted"))
    skipped = {x.name: x for x in health.run(ctx)}["health.amdgpu_ras"]
    assert skipped.status == "skipped" and "amdgpu" in skipped.why


def test_without_amd_smi_the_probe_skips_with_a_reason(monkeypatch):
    monkeypatch.setattr(telemetry_amd.shutil, "which", lambda name: None)
    with pytest.raises(AmdSmiUnavailable, match="not on PATH"):
        AmdSmiTelemetry.open()
    tel, why = open_telemetry("amd-smi")
    assert tel is None and "amd-smi: not on PATH" in why


def _amd_runner_with(extra: dict[tuple, str], ecc: str = "metric-ecc-clean.json"):
    """amd_smi_runner plus the version, RAS, xGMI link and xGMI error samples (text given inline or a fixture name)."""
    base = amd_smi_runner(ecc)
    files = {tuple(telemetry_amd.VERSION_CMD): "version.json", tuple(telemetry_amd.RAS_CMD): "static-ras.json",
             tuple(telemetry_amd.XGMI_LINK_CMD): "xgmi-links.json",
             tuple(telemetry_amd.XGMI_ERR_CMD): "metric-xgmi-err.json"}

    def run(cmd: list[str]) -> str:
        key = tuple(cmd)
        if key in extra:
            return extra[key]
        return fixture_text(f"amd-smi/{files[key]}") if key in files else base(cmd)
    return run


def test_rocm_version_ecc_state_and_xgmi_links_from_amd_smi():
    tel = AmdSmiTelemetry(run=_amd_runner_with({}))
    assert tel.rocm_version() == "7.0.2"
    g = tel.gpus()
    assert [x.ecc_enabled for x in g] == [True, True, True, False]  # GPU 3: the older list form, UMC disabled
    assert [(x.xgmi_links_up, x.xgmi_links_total) for x in g] == [(3, 3), (3, 3), (2, 3), (2, 3)]
    assert all(x.nvlinks_up is None for x in g)
    assert [h.xgmi_error_status for h in tel.health()] == [telemetry_amd.XGMI_NO_ERRORS] * 4
    # an amd-smi without these commands: the figures are None and the checks skip, nothing raises
    bare = AmdSmiTelemetry(run=amd_smi_runner())
    assert bare.rocm_version() is None and bare.gpus()[0].xgmi_links_up is None
    assert telemetry_amd.parse_xgmi_links('[{"gpu": 0, "link_status": ["SELF", "U", "X"]}]') == {0: (1, 2)}
    # an entry that is not a GPU object is passed over, as per_gpu does (it raised AttributeError)
    assert telemetry_amd.parse_xgmi_links('["oops", null, {"gpu": 1, "link_status": ["U", "D"]}]') == {1: (1, 2)}


def test_inventory_on_an_amd_node_names_rocm_rccl_and_xgmi(tmp_path, monkeypatch):
    """The NVIDIA checks' AMD counterparts: ROCm's release (not CUDA), RCCL's version (not NCCL's), xGMI links up
    (not NVLinks), the HBM's ECC state from amd-smi's RAS block."""
    from trainsizer.accept import host, inventory
    from trainsizer.accept.criteria import Limit

    monkeypatch.setattr(host, "nccl_version", lambda: None)
    crit = generic()
    crit.rocm_version_min = Limit(value="7.0.2", source="test")
    crit.xgmi_links_per_gpu = Limit(value=3, source="test")
    ctx = Context(criteria=crit, telemetry=AmdSmiTelemetry(run=_amd_runner_with({})), telemetry_why="amd-smi",
                  options=Options(storage_path=tmp_path), node="mi300a01")
    r = {x.name: x for x in inventory.run(ctx, host.HostInfo(cpu_count=96, ram_bytes=2**40, disks=[], nics=[]))}
    assert not {"inventory.cuda_version", "inventory.nvlink_up", "inventory.nccl_version"} & set(r)
    assert r["inventory.rocm_version"].status == "pass" and r["inventory.rocm_version"].measured == "7.0.2"
    xgmi = r["inventory.xgmi_up"]
    assert xgmi.status == "fail" and xgmi.measured == 2 and "[2, 3]" in xgmi.why and "xGMI" in xgmi.why
    assert r["inventory.ecc_mode"].status == "fail" and "[3]" in r["inventory.ecc_mode"].why
    rccl = r["inventory.rccl_version"]
    assert rccl.status == "skipped" and "RCCL" in rccl.why and "ROCm" in rccl.why


def test_an_xgmi_error_fails_the_gpu_and_corrected_ecc_is_named_in_amds_words(tmp_path, monkeypatch):
    monkeypatch.setattr(amdgpu_log, "read_kernel_log", lambda: ("", "dmesg"))
    faulty = '[{"gpu": 0, "xgmi_err": "AMDSMI_XGMI_STATUS_NO_ERRORS"}, {"gpu": 1, "xgmi_err": ' \
             '"AMDSMI_XGMI_STATUS_MULTIPLE_ERRORS"}, {"gpu": 2, "xgmi_err": "N/A"}]'
    tel = AmdSmiTelemetry(run=_amd_runner_with({tuple(telemetry_amd.XGMI_ERR_CMD): faulty}, "metric-ecc-faulty.json"))
    ctx = Context(criteria=generic(), telemetry=tel, telemetry_why="amd-smi", options=Options(storage_path=tmp_path),
                  node="mi300a01")
    r = {x.name: x for x in health.run(ctx)}
    xgmi = r["health.xgmi_errors"]
    assert xgmi.status == "fail" and "GPU 1" in xgmi.why and "MULTIPLE_ERRORS" in xgmi.why
    assert "azure_gpu_amd_xgmi" in xgmi.source
    corrected = r["health.ecc_corrected"]
    assert corrected.status == "pass" and "node-scraper" in corrected.why and "GPU 1: 12" in corrected.why
    assert "AMD publishes no fail bar" in corrected.source
    clean = Context(criteria=generic(), telemetry=AmdSmiTelemetry(run=_amd_runner_with({})), telemetry_why="amd-smi",
                    options=Options(storage_path=tmp_path), node="mi300a01")
    assert {x.name: x for x in health.run(clean)}["health.xgmi_errors"].status == "pass"


def test_an_mi300x_node_outside_a_plan_is_judged_on_amds_and_azures_mi300x_figures():
    """The platform row: RVS's GST targets (its validation levels' trig-initialised tests) as the GEMM floors, AMD CVS's
    HBM copy floor, Azure's MI300X RCCL figure, 7 xGMI links, the amdgpu kernel-log events and no Xid list."""
    from trainsizer.accept import criteria

    crit = criteria.resolve(None, None, "AMD Instinct MI300X")
    assert crit.platform == "mi300x"
    assert crit.gemm_tflops_min["bf16"].value == 552 and "gst_single.conf" in crit.gemm_tflops_min["bf16"].source
    assert crit.gemm_tflops_min["fp8"].value == 981
    # AMD's own floor for the copy accept/hbm.py times, not 0.8 x the 5,300 GB/s data sheet (4,240)
    assert crit.hbm_gb_s_min.value == 4500 and "copy_" in crit.hbm_gb_s_min.source
    intra = crit.busbw_intra_gb_s_min
    assert intra.all_reduce.value == 314 and intra.all_gather.value == pytest.approx(0.70 * 448, abs=0.05)
    assert crit.xgmi_links_per_gpu.value == 7 and crit.nvlinks_per_gpu is None
    assert crit.critical_xids is None and crit.critical_amdgpu_events
    h100 = criteria.resolve(None, None, "NVIDIA H100 80GB HBM3")
    assert h100.critical_xids and h100.critical_amdgpu_events is None and h100.xgmi_links_per_gpu is None


def test_throttle_status_fails_a_gpu_on_a_thermal_violation_not_on_its_power_cap(tmp_path, monkeypatch):
    """amd-smi metric --throttle (README sample's keys; per-XCP lists on later releases): GPU 1 at its power cap (PPT)
    passes, as DCGM passes SW_POWER_CAP; GPU 2's HBM and per-XCP thermal violations fail it; GPU 3 reports N/A."""
    assert telemetry_amd.parse_violations(fixture_text("amd-smi/metric-throttle.json")) == {
        0: (), 1: ("ppt",), 2: ("gfx_clk_below_host_limit_thermal", "hbm_thermal"), 3: None}
    monkeypatch.setattr(amdgpu_log, "read_kernel_log", lambda: ("", "dmesg"))
    tel = AmdSmiTelemetry(run=_amd_runner_with(
        {tuple(telemetry_amd.THROTTLE_CMD): fixture_text("amd-smi/metric-throttle.json")}))
    ctx = Context(criteria=generic(), telemetry=tel, telemetry_why="amd-smi", options=Options(storage_path=tmp_path),
                  node="mi300a01")
    throttle = {x.name: x for x in health.run(ctx)}["health.throttle"]
    assert throttle.status == "fail" and throttle.measured == 1 and "GPU 2" in throttle.why
    assert "GPU 1" not in throttle.why and "hbm_thermal" in throttle.why and "derived" in throttle.source
    without = {x.name: x for x in health.run(Context(
        criteria=generic(), telemetry=AmdSmiTelemetry(run=_amd_runner_with({})), telemetry_why="amd-smi",
        options=Options(storage_path=tmp_path), node="mi300a01"))}["health.throttle"]
    assert without.status == "skipped"


@pytest.mark.parametrize(("name", "pid", "bf16", "fp8", "hbm", "xgmi"), [
    ("AMD Instinct MI325X", "mi325x", 554, 983, 0.8 * 6000, 448),
    ("AMD Instinct MI355X", "mi355x", 956, 2061, 0.8 * 8000, 537.6),
])
def test_mi325x_and_mi355x_nodes_read_their_own_rows(name, pid, bf16, fp8, hbm, xgmi):
    """amd-smi's market name finds the part's row: RVS's GEMM targets for that part, and where AMD publishes no HBM or
    RCCL pass mark for it, the cited ratios x its data-sheet rates (HBM 0.8 x spec; a ring over the xGMI mesh 0.70 x
    the link), never MI300X's figures."""
    from trainsizer.accept import criteria

    crit = criteria.resolve(None, None, name)
    assert crit.platform == pid and crit.gpu_model.value == pid.upper()
    assert crit.gemm_tflops_min["bf16"].value == bf16 and crit.gemm_tflops_min["fp8"].value == fp8
    assert f"rvs/conf/{pid.upper()}/gst_single.conf" in crit.gemm_tflops_min["fp8"].source
    assert crit.hbm_gb_s_min.value == pytest.approx(hbm) and "HBM3E" in crit.hbm_gb_s_min.source
    intra = crit.busbw_intra_gb_s_min
    assert intra.all_reduce.value == intra.all_gather.value == pytest.approx(0.70 * xgmi, abs=0.05)
    assert crit.xgmi_links_per_gpu.value == 7 and crit.critical_xids is None and crit.critical_amdgpu_events
    assert crit.busbw_inter_gb_s_min.all_reduce.value == pytest.approx(0.8 * 8 * 400 / 8)


def test_cper_records_read_in_every_form_amd_smi_prints():
    """`amd-smi ras --cper --severity all --json`: one array across GPUs (ROCm 10.0's amd-smi), or warning lines and
    one array per GPU, or nothing where there are no records (earlier releases); counted by severity per GPU."""
    assert telemetry_amd.parse_cper(fixture_text("amd-smi/ras-cper.json")) == {
        0: {"NONFATAL-CORRECTED": 2}, 2: {"FATAL": 1, "NONFATAL-UNCORRECTED": 1}}
    assert telemetry_amd.parse_cper(fixture_text("amd-smi/ras-cper-per-gpu.txt")) == {
        0: {"BOOT": 1}, 1: {"NONFATAL-CORRECTED": 1}}
    assert telemetry_amd.parse_cper("") == telemetry_amd.parse_cper("[]") == {}
    # a header entry's error_severity is named as amd-smi names it; a row without a GPU index is passed over
    header = '[{"gpu": 3, "error_severity": "non_fatal_uncorrected", "notify_type": "CMC"}, {"severity": "FATAL"}]'
    assert telemetry_amd.parse_cper(header) == {3: {"NONFATAL-UNCORRECTED": 1}}


def _cper_ctx(tmp_path, cper: str | None) -> Context:
    extra = {} if cper is None else {tuple(telemetry_amd.CPER_CMD): cper}
    return Context(criteria=generic(), telemetry=AmdSmiTelemetry(run=_amd_runner_with(extra)), telemetry_why="amd-smi",
                   options=Options(storage_path=tmp_path), node="mi300a01")


def test_a_fatal_or_uncorrected_cper_record_fails_the_gpu_and_corrected_ones_are_named(tmp_path, monkeypatch):
    monkeypatch.setattr(amdgpu_log, "read_kernel_log", lambda: ("", "dmesg"))
    ctx = _cper_ctx(tmp_path, fixture_text("amd-smi/ras-cper.json"))
    assert [h.cper_records for h in ctx.telemetry.health()] == [
        {"NONFATAL-CORRECTED": 2}, {}, {"FATAL": 1, "NONFATAL-UNCORRECTED": 1}, {}]
    cper = {x.name: x for x in health.run(ctx)}["health.cper"]
    assert cper.status == "fail" and cper.measured == 1
    assert "GPU 2: FATAL x1, NONFATAL-UNCORRECTED x1" in cper.why and "GPU 0: NONFATAL-CORRECTED x2" in cper.why
    assert "UEFI" in cper.source and "node-scraper" in cper.source
    # a node whose only record is a corrected one passes, the record named
    ok = {x.name: x for x in health.run(_cper_ctx(tmp_path, '[{"gpu": 1, "severity": "NONFATAL-CORRECTED"}]'))}
    assert ok["health.cper"].status == "pass" and "GPU 1: NONFATAL-CORRECTED x1" in ok["health.cper"].why


def test_without_root_or_an_amd_smi_with_ras_the_cper_check_skips_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr(amdgpu_log, "read_kernel_log", lambda: ("", "dmesg"))
    ctx = _cper_ctx(tmp_path, None)  # amd-smi exits non-zero for `ras --cper` (no root, or no `ras` command)
    assert all(h.cper_records is None for h in ctx.telemetry.health())
    cper = {x.name: x for x in health.run(ctx)}["health.cper"]
    assert cper.status == "skipped" and "root" in cper.why and "ROCm 7.0" in cper.why
    # an amd-smi that prints nothing for no records: every GPU read, none with a record
    assert {x.name: x for x in health.run(_cper_ctx(tmp_path, ""))}["health.cper"].status == "pass"


def test_the_cper_and_burn_in_throttle_explanations_read_in_chinese(tmp_path, monkeypatch):
    from trainsizer.accept import report

    monkeypatch.setattr(amdgpu_log, "read_kernel_log", lambda: ("", "dmesg"))
    fail = {x.name: x for x in health.run(_cper_ctx(tmp_path, fixture_text("amd-smi/ras-cper.json")))}["health.cper"]
    assert report.why_text(fail, "zh").startswith("致命或不可纠正的 CPER 记录") and "不判不合格的记录" in report.why_text(
        fail, "zh")
    skipped = {x.name: x for x in health.run(_cper_ctx(tmp_path, None))}["health.cper"]
    assert "需要 root" in report.why_text(skipped, "zh")
    assert report.unit_text(fail, "zh") == "张卡"
    from trainsizer.accept.context import UNIT_WORDS

    assert msg(UNIT_WORDS["new CPER records"]).tr("zh") == "条新增 CPER 记录"


def test_the_accumulated_violation_counters_are_read_per_gpu():
    """amd-smi metric --throttle's *_accumulated counters (incremented while a violation is active), per-XCP lists
    summed; a GPU that reports none is None."""
    counts = telemetry_amd.parse_violation_counts(fixture_text("amd-smi/metric-throttle.json"))
    assert counts[0] == {"prochot": 0, "ppt": 0, "socket_thermal": 0, "vr_thermal": 0, "hbm_thermal": 0}
    assert counts[1] is None and counts[3] is None
    xcp = '[{"gpu": 0, "throttle": {"gfx_clk_below_host_limit_thermal_accumulated": {"XCP_0": [3, "N/A"], ' \
          '"XCP_1": [4, 1]}, "hbm_thermal_accumulated": {"value": 7, "unit": ""}}}]'
    assert telemetry_amd.parse_violation_counts(xcp) == {0: {"gfx_clk_below_host_limit_thermal": 8, "hbm_thermal": 7}}
