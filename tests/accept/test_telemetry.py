from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

from trainsizer.accept import telemetry_smi
from trainsizer.accept.telemetry import HW_THERMAL, RecordedTelemetry, open_telemetry, reason_names
from trainsizer.accept.telemetry_nvml import NvmlTelemetry, NvmlUnavailable
from trainsizer.accept.telemetry_smi import NvidiaSmiTelemetry, SmiUnavailable
from trainsizer.accept.xid import parse_xids
from trainsizer.errors import SpecError

from .conftest import FIXTURES, fixture_text


def smi_runner(cmd: list[str]) -> str:
    """Plays back recorded nvidia-smi outputs for the commands NvidiaSmiTelemetry issues."""
    joined = " ".join(cmd)
    if "--query-gpu" in joined:
        return fixture_text("nvidia-smi/query-gpu-h100x8.csv")
    if "--query-remapped-rows" in joined:
        return fixture_text("nvidia-smi/query-remapped-rows.csv")
    if cmd[1:] == ["nvlink", "-s"]:
        return fixture_text("nvidia-smi/nvlink-s.txt")
    if cmd[1:] == ["-q", "-d", "TEMPERATURE"]:
        return fixture_text("nvidia-smi/q-temperature.txt")
    if cmd == ["nvidia-smi"]:
        return fixture_text("nvidia-smi/header.txt")
    raise SmiUnavailable(f"unexpected {cmd}")


def test_smi_inventory_from_recorded_outputs():
    tel = NvidiaSmiTelemetry(run=smi_runner)
    gpus = tel.gpus()
    assert len(gpus) == 8 and gpus[0].name == "NVIDIA H100 80GB HBM3"
    assert gpus[0].memory_total_bytes == 81559 * 2**20
    assert gpus[0].pci_bus_id == "00000000:18:00.0"
    assert (gpus[0].nvlinks_up, gpus[0].nvlinks_total) == (18, 18)
    assert (gpus[3].nvlinks_up, gpus[3].nvlinks_total) == (16, 18)
    assert gpus[0].temp_limit_c == 87.0 and gpus[0].ecc_enabled is True
    assert tel.driver_version() == "550.54.15" and tel.cuda_version() == "12.4"


def test_smi_health_and_samples():
    tel = NvidiaSmiTelemetry(run=smi_runner)
    h = {x.index: x for x in tel.health()}
    assert h[2].ecc_uncorrected_aggregate == 2 and h[2].remap_pending is True
    assert h[1].ecc_corrected_volatile == 12
    assert h[5].clock_event_reasons == HW_THERMAL and reason_names(h[5].clock_event_reasons) == ["hw_thermal"]
    assert h[0].retired_pages_pending is False
    s = tel.sample()
    assert s[7].temp_c == 41 and s[0].power_w == pytest.approx(118.5) and s[0].sm_clock_mhz == 1980


def test_smi_falls_back_to_throttle_field_name_on_old_drivers():
    calls = []

    def old_driver(cmd):
        calls.append(" ".join(cmd))
        if "clocks_event_reasons" in " ".join(cmd):
            raise SmiUnavailable('Field "clocks_event_reasons.active" is not a valid field to query.')
        return smi_runner(cmd)

    assert len(NvidiaSmiTelemetry(run=old_driver).health()) == 8
    assert any("clocks_throttle_reasons.active" in c for c in calls)


def test_smi_parsers_tolerate_na():
    rows = telemetry_smi.parse_csv("0, [N/A], 1\n\n", ("a", "b", "c"))
    assert rows == [{"a": "0", "b": "[N/A]", "c": "1"}]
    assert telemetry_smi._int("[N/A]") is None and telemetry_smi._int("0x40") == 0x40
    assert telemetry_smi.parse_cuda_version("no header") is None


def _fake_nvml(count=2, lost_index=None, missing_driver=False):
    class NVMLError(Exception):
        pass

    class NVMLError_GpuIsLost(NVMLError):  # noqa: N801 (pynvml's name)
        pass

    def init():
        if missing_driver:
            raise NVMLError("NVML Shared Library Not Found")

    def temperature(h, sensor):
        if h == lost_index:
            raise NVMLError_GpuIsLost("GPU is lost")
        return 40 + h

    def not_supported(*a):
        raise NVMLError("Not Supported")

    return SimpleNamespace(
        nvmlInit=init, nvmlDeviceGetCount=lambda: count, nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlSystemGetDriverVersion=lambda: b"550.54.15", nvmlSystemGetCudaDriverVersion_v2=lambda: 12040,
        nvmlDeviceGetName=lambda h: "NVIDIA H100 80GB HBM3", nvmlDeviceGetUUID=lambda h: f"GPU-{h}",
        nvmlDeviceGetSerial=lambda h: f"S{h}", nvmlDeviceGetPciInfo=lambda h: SimpleNamespace(busId=f"0000:{h:02X}:00.0"),
        nvmlDeviceGetMemoryInfo=lambda h: SimpleNamespace(total=81559 * 2**20),
        nvmlDeviceGetEccMode=lambda h: (1, 1),
        nvmlDeviceGetNvLinkState=lambda h, link: (1 if link < 18 else not_supported()) if h == 0 else
        (1 if link < 16 else (0 if link < 18 else not_supported())),
        nvmlDeviceGetTemperatureThreshold=lambda h, t: 87,
        nvmlDeviceGetTotalEccErrors=lambda h, kind, counter: 0,
        nvmlDeviceGetRemappedRows=lambda h: (0, 1, 1, 0) if h == 1 else (0, 0, 0, 0),
        nvmlDeviceGetRetiredPagesPendingStatus=not_supported,
        nvmlDeviceGetCurrentClocksEventReasons=lambda h: 0x4,
        nvmlDeviceGetTemperature=temperature, nvmlDeviceGetUtilizationRates=lambda h: SimpleNamespace(gpu=99),
        nvmlDeviceGetPowerUsage=lambda h: 650000, nvmlDeviceGetClockInfo=lambda h, c: 1980,
    )


def test_nvml_telemetry_with_patched_library():
    tel = NvmlTelemetry.open(_fake_nvml())
    assert tel.driver_version() == "550.54.15" and tel.cuda_version() == "12.4"
    g = tel.gpus()
    assert (g[0].nvlinks_up, g[0].nvlinks_total) == (18, 18) and (g[1].nvlinks_up, g[1].nvlinks_total) == (16, 18)
    h = tel.health()
    assert h[1].remap_pending is True and h[1].remapped_rows_uncorrectable == 1
    assert h[0].retired_pages_pending is None  # NotSupported is unknown, not "no"
    s = tel.sample()
    assert s[0].power_w == 650.0 and s[1].temp_c == 41.0


def test_nvml_lost_gpu_and_missing_driver():
    s = NvmlTelemetry.open(_fake_nvml(lost_index=1)).sample()
    assert s[1].lost and not s[0].lost
    with pytest.raises(NvmlUnavailable, match="Library Not Found"):
        NvmlTelemetry.open(_fake_nvml(missing_driver=True))


def test_open_telemetry_kinds(tmp_path):
    tel, why = open_telemetry("none")
    assert tel is None and "disabled" in why
    tel, why = open_telemetry(str(FIXTURES / "telemetry" / "h100x8-healthy.json"))
    assert isinstance(tel, RecordedTelemetry) and len(tel.gpus()) == 8
    with pytest.raises(SpecError, match="--telemetry"):
        open_telemetry("nvml2")


def test_open_telemetry_on_this_host_never_raises():
    tel, why = open_telemetry("auto")
    assert tel is not None or "no GPU telemetry" in why


def test_xid_parser():
    events = parse_xids(fixture_text("kernel/dmesg-xid.txt"))
    assert [(e.pci, e.xid) for e in events] == [("0000:5d:00", 13), ("0000:ab:00", 79), ("0000:2a:00", 94)]
    assert "fallen off the bus" in events[1].message


@pytest.mark.parametrize(("doc", "where"), [
    ([1, 2], "must be a JSON object"),
    ({"gpus": [{"index": 0}]}, "gpus[0].name: required key is missing from this GPU inventory entry."),
    ({"gpus": [], "samples": [[{"temp_c": 50}]]}, "samples[0][0].index: required key is missing from this GPU sample."),
    ({"health": [7]}, "health[0]: must be a mapping: one GPU health reading (got 7). Allowed: index, "),
    ({"health": {"index": 0}}, "health: must be a list"),
    ({"samples": [["not a sample"]]}, "samples[0][0]"),
    ({"vendor": "intel"}, "vendor: not a GPU vendor a recorded telemetry file can name"),
    ({"vendor": "amd", "amdgpu_log": ["a line"]}, "amdgpu_log: must be kernel log text"),
    # a log no check of the file's vendor plays back: said, not left for the log check to report "not readable"
    ({"vendor": "amd", "xid_log": ""}, "xid_log: the kernel log of the other vendor's driver"),
    ({"amdgpu_log_after": "amdgpu 0000:01:00.0: amdgpu: GPU reset begin!"}, "vendor is nvidia (unset: nvidia)"),
])
def test_bad_recorded_telemetry_is_a_spec_error_at_open(tmp_path, doc, where):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(SpecError, match=re.escape(where)):
        open_telemetry(str(path))


def test_a_bad_telemetry_record_is_named_in_the_readers_words(tmp_path):
    """The message names what the file gave and what it lacks, never the Python class (was 'not a GpuInfo record
    (GpuInfo.__init__() missing 1 required positional argument: 'name')')."""
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"gpus": [{"index": 0}]}))
    with pytest.raises(SpecError) as info:
        open_telemetry(str(path))
    assert "GpuInfo" not in str(info.value) and "__init__" not in str(info.value)
    assert "gpus[0].name：这条 GPU 清单条目缺少必填的键。" in info.value.render("zh"), info.value.render("zh")


def test_a_log_of_the_other_vendor_names_the_files_own_logs(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"vendor": "amd", "xid_log_after": "NVRM: Xid (PCI:0000:5d:00): 79, GPU fell off"}))
    with pytest.raises(SpecError) as info:
        open_telemetry(str(path))
    assert "Allowed: amdgpu_log, amdgpu_log_after." in str(info.value)
    assert "vendor 为 amd" in info.value.render("zh")


def test_shipped_recordings_are_valid():
    for path in (FIXTURES / "telemetry").glob("*.json"):
        tel, _ = open_telemetry(str(path))
        assert tel.gpus()


@pytest.mark.parametrize(("doc", "where"), [
    # a model's config.json (or any other JSON object) passed as --telemetry was played back as a node without GPUs:
    # 'GPUs: found 0' failed, with nothing about the file
    ({"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 2048}, "architectures: unknown key"),
    ({"gpu": [{"index": 0, "name": "NVIDIA H100"}]}, "Did you mean 'gpus'?"),
    ({}, "gpus: required key is missing"),
])
def test_a_file_that_is_no_recorded_telemetry_is_refused_at_open(tmp_path, doc, where):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(SpecError, match=re.escape(where)) as info:
        open_telemetry(str(path))
    assert "--telemetry" in str(info.value) and info.value.render("zh")


def test_both_vendor_tools_run_through_one_runner_with_their_own_error():
    """nvidia-smi's and amd-smi's queries share one runner (accept.telemetry.run_tool, TOOL_TIMEOUT_S; docs/known-gaps.md
    310 (d)): a missing tool or a non-zero exit raises each backend's own error, quoting stdout for nvidia-smi (it
    prints its errors there) and stderr first for amd-smi."""
    import sys

    from trainsizer.accept import telemetry_amd

    fail = [sys.executable, "-c", "import sys; print('on stdout'); sys.exit('on stderr')"]
    with pytest.raises(SmiUnavailable, match="exited 1: on stdout"):
        telemetry_smi._run(fail)
    with pytest.raises(telemetry_amd.AmdSmiUnavailable, match="exited 1: on stderr"):
        telemetry_amd._run(fail)
    with pytest.raises(SmiUnavailable, match="failed"):
        telemetry_smi._run(["/nonexistent/nvidia-smi"])
    assert telemetry_amd._run([sys.executable, "-c", "print('ok')"]) == "ok\n"
