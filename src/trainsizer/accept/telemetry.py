"""GPU telemetry behind one Protocol: NVML, nvidia-smi, or a recorded/fake source for tests.

Pattern: Meta gcm's device-telemetry Protocol with injected fakes (docs/acceptance.md section 5).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Protocol

from trainsizer.accept.amdgpu_log import AmdgpuEvent, parse_amdgpu_events
from trainsizer.accept.xid import XidEvent, parse_xids
from trainsizer.errors import SpecError, did_you_mean, given
from trainsizer.messages import msg

# NVML clocks-event (throttle) reason bits, nvml.h `nvmlClocksEventReason*`.
IDLE = 0x1
SW_POWER_CAP = 0x4
HW_SLOWDOWN = 0x8
SW_THERMAL = 0x20
HW_THERMAL = 0x40
HW_POWER_BRAKE = 0x80
# DCGM fails a diagnostic on any of these (DcgmRecorder.cpp; docs/acceptance.md section 2.2).
FAILING_REASONS = HW_SLOWDOWN | SW_THERMAL | HW_THERMAL | HW_POWER_BRAKE
REASON_NAMES = {IDLE: "gpu_idle", SW_POWER_CAP: "sw_power_cap", HW_SLOWDOWN: "hw_slowdown",
                SW_THERMAL: "sw_thermal", HW_THERMAL: "hw_thermal", HW_POWER_BRAKE: "hw_power_brake"}


# how long the accept checks wait on a vendor tool's query (nvidia-smi, amd-smi) before calling the tool unavailable
TOOL_TIMEOUT_S = 60.0


def run_tool(cmd: list[str], unavailable: type[Exception], stderr_first: bool = False) -> str:
    """A vendor tool's stdout, or `unavailable` naming the command and the first 200 characters it printed (stderr
    before stdout where `stderr_first`, amd-smi's way; nvidia-smi prints its errors on stdout) where it cannot start,
    runs past TOOL_TIMEOUT_S or exits non-zero."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise unavailable(f"{' '.join(cmd[:2])} failed: {err}") from None
    if proc.returncode != 0:
        said = (proc.stderr or proc.stdout) if stderr_first else proc.stdout
        raise unavailable(f"{' '.join(cmd[:2])} exited {proc.returncode}: {said.strip()[:200]}")
    return proc.stdout


def reason_names(mask: int) -> list[str]:
    return [name for bit, name in REASON_NAMES.items() if mask & bit]


@dataclass(frozen=True)
class GpuInfo:
    index: int
    name: str
    uuid: str = ""
    serial: str = ""
    pci_bus_id: str = ""
    memory_total_bytes: int = 0
    nvlinks_up: int | None = None
    nvlinks_total: int | None = None
    ecc_enabled: bool | None = None
    temp_limit_c: float | None = None  # NVML GPU max operating temp (fallback: slowdown temp)
    # AMD Instinct: xGMI links to the GPU's peers that are up, of those it has (amd-smi xgmi -l), where NVIDIA's
    # parts report NVLinks
    xgmi_links_up: int | None = None
    xgmi_links_total: int | None = None


@dataclass(frozen=True)
class GpuHealth:
    index: int
    ecc_uncorrected_volatile: int | None = None
    ecc_uncorrected_aggregate: int | None = None
    ecc_corrected_volatile: int | None = None
    remapped_rows_uncorrectable: int | None = None
    remap_pending: bool | None = None
    remap_failure: bool | None = None
    retired_pages_pending: bool | None = None
    clock_event_reasons: int | None = None
    # AMD Instinct: amd-smi's xGMI error state (amdsmi_xgmi_status_t name; AMDSMI_XGMI_STATUS_NO_ERRORS when clean)
    xgmi_error_status: str | None = None
    # AMD Instinct: the violations amd-smi metric --throttle reports ACTIVE (prochot, ppt, socket_thermal, ...; the
    # *_violation_status keys less the suffix), where NVIDIA's parts report clock_event_reasons; None = not reported
    violations_active: tuple[str, ...] | None = None
    # AMD Instinct: each violation's accumulated counter (amd-smi metric --throttle *_accumulated: incremented while the
    # violation is active), read before and after a burn-in to catch a violation no sample saw; None = not reported
    violation_counts: dict[str, int] | None = None
    # AMD Instinct: the GPU's CPER records by severity as amd-smi names them ({"FATAL": 1, "NONFATAL-CORRECTED": 3});
    # {} = none kept, None = not read (amd-smi ras --cper needs root and ROCm 7's amd-smi)
    cper_records: dict[str, int] | None = None


@dataclass(frozen=True)
class GpuSample:
    index: int
    temp_c: float | None = None
    sm_clock_mhz: float | None = None
    power_w: float | None = None
    util_pct: float | None = None
    clock_event_reasons: int = 0
    ecc_uncorrected_volatile: int | None = None
    lost: bool = False
    # AMD Instinct: the violations amd-smi reports ACTIVE at this sample (GpuHealth.violations_active's names), where
    # NVIDIA's parts report clock_event_reasons; None = not reported
    violations_active: tuple[str, ...] | None = None


class GpuTelemetry(Protocol):
    """What the checks read from the GPUs; None for a figure the source cannot give. `vendor` (TELEMETRY_VENDORS)
    says which driver's kernel-log report the health checks read: Xid lines (nvidia) or amdgpu's RAS lines (amd)."""

    source: str
    vendor: str

    def driver_version(self) -> str | None: ...

    def cuda_version(self) -> str | None: ...

    def rocm_version(self) -> str | None: ...

    def gpus(self) -> list[GpuInfo]: ...

    def health(self) -> list[GpuHealth]: ...

    def sample(self) -> list[GpuSample]: ...

    def xid_events(self) -> list[XidEvent] | None: ...

    def amdgpu_events(self) -> list[AmdgpuEvent] | None: ...


TELEMETRY_VENDORS = ("nvidia", "amd")
# the kernel log a recorded file plays back for each vendor's driver (RecordedTelemetry._log): Xid lines, amdgpu's lines
RECORDED_LOGS = {"nvidia": ("xid_log", "xid_log_after"), "amd": ("amdgpu_log", "amdgpu_log_after")}


def _build(cls, data: dict):
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


@dataclass
class RecordedTelemetry:
    """Plays back a recorded JSON file (or dict): inventory, health and a series of samples.

    `samples` is a list of ticks, each a list of per-GPU samples; `sample()` returns the next tick and then
    holds the last one. `health_after` (optional) is returned by `health()` once the ticks are used up,
    which is how a new ECC error during burn-in is recorded. `vendor` ("nvidia" unless given) chooses the kernel
    log it plays back (RECORDED_LOGS): `xid_log` / `xid_log_after`, or `amdgpu_log` / `amdgpu_log_after` for an AMD
    node; the other vendor's keys are refused at open.
    """

    data: dict
    source: str = "recorded"
    _tick: int = field(default=0, init=False)

    @property
    def vendor(self) -> str:
        return self.data.get("vendor", "nvidia")

    @classmethod
    def from_file(cls, path: str | Path) -> RecordedTelemetry:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            raise SpecError("--telemetry", msg("acc_cannot_read_telemetry", reason=str(err)), value=str(path)) from None
        _check_recorded(data, str(path))
        return cls(data, source=f"recorded:{Path(path).name}")

    def driver_version(self) -> str | None:
        return self.data.get("driver_version")

    def cuda_version(self) -> str | None:
        return self.data.get("cuda_version")

    def rocm_version(self) -> str | None:
        return self.data.get("rocm_version")

    def gpus(self) -> list[GpuInfo]:
        return [_build(GpuInfo, g) for g in self.data.get("gpus", [])]

    def health(self) -> list[GpuHealth]:
        ticks = self.data.get("samples", [])
        key = "health_after" if ticks and self._tick >= len(ticks) and "health_after" in self.data else "health"
        return [_build(GpuHealth, h) for h in self.data.get(key, [])]

    def sample(self) -> list[GpuSample]:
        ticks = self.data.get("samples", [])
        if not ticks:
            return [GpuSample(index=g.index) for g in self.gpus()]
        tick = ticks[min(self._tick, len(ticks) - 1)]
        self._tick += 1
        return [_build(GpuSample, s) for s in tick]

    def _log(self, name: str) -> str | None:
        """The recorded kernel log `name`, or `name`_after once the sample ticks are used up."""
        ticks = self.data.get("samples", [])
        after = f"{name}_after"
        return self.data.get(after if ticks and self._tick >= len(ticks) and after in self.data else name)

    def xid_events(self) -> list[XidEvent] | None:
        text = self._log("xid_log")
        return None if text is None else parse_xids(text)

    def amdgpu_events(self) -> list[AmdgpuEvent] | None:
        text = self._log("amdgpu_log")
        return None if text is None else parse_amdgpu_events(text)


# each section's records in words (messages.yaml acc_record_*)
_RECORD_WORDS = {GpuInfo: "acc_record_gpus", GpuHealth: "acc_record_health", GpuSample: "acc_record_sample"}


def _check_recorded(data: object, where: str) -> None:
    """Every record of a recorded telemetry file builds (a bad file is a SpecError, not a traceback later)."""
    if not isinstance(data, dict):
        raise SpecError(f"--telemetry {where}", msg("acc_must_be_object"), value=given(data),
                        allowed="{gpus, health, samples, ...}")
    sections = [("gpus", GpuInfo, data.get("gpus", [])), ("health", GpuHealth, data.get("health", [])),
                ("health_after", GpuHealth, data.get("health_after", []))]
    ticks = data.get("samples", [])
    if not isinstance(ticks, list):
        raise SpecError(f"--telemetry {where}: samples", msg("acc_ticks_list"), value=given(ticks))
    sections += [(f"samples[{i}]", GpuSample, tick) for i, tick in enumerate(ticks)]
    for key, cls, rows in sections:
        if not isinstance(rows, list):
            raise SpecError(f"--telemetry {where}: {key}", msg("spec_list"), value=given(rows))
        record = msg(_RECORD_WORDS[cls])
        for j, row in enumerate(rows):
            # what the file gave, in its own terms: a row that is no mapping, or a key it lacks (never the
            # Python class or the TypeError the dataclass would raise)
            if not isinstance(row, dict):
                raise SpecError(f"--telemetry {where}: {key}[{j}]", msg("acc_bad_record", record=record),
                                value=given(row), allowed=[f.name for f in fields(cls)])
            lacking = [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING
                       and f.name not in row]
            if lacking:
                raise SpecError(f"--telemetry {where}: {key}[{j}].{lacking[0]}",
                                msg("acc_record_key_missing", record=record))
    vendor = data.get("vendor", "nvidia")
    if vendor not in TELEMETRY_VENDORS:
        raise SpecError(f"--telemetry {where}: vendor", msg("acc_telemetry_vendor"), value=given(vendor),
                        allowed=list(TELEMETRY_VENDORS))
    for key in (k for logs in RECORDED_LOGS.values() for k in logs):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise SpecError(f"--telemetry {where}: {key}", msg("acc_kernel_log"), value=given(data[key]))
        # another vendor's log would be played back by no check, and the node's own log check would say "skipped"
        if key in data and key not in RECORDED_LOGS[vendor]:
            raise SpecError(f"--telemetry {where}: {key}", msg("acc_kernel_log_vendor", vendor=vendor),
                            allowed=list(RECORDED_LOGS[vendor]))
    _recorded_keys(data, where)


# what RecordedTelemetry reads from a file, besides the kernel logs (RECORDED_LOGS)
RECORDED_KEYS = ("vendor", "driver_version", "cuda_version", "rocm_version", "gpus", "health", "health_after", "samples")


def _recorded_keys(data: dict, where: str) -> None:
    """A key the playback never reads (a model's config.json, a misspelt 'gpu') is refused, and a file without the
    GPU inventory is not played back as a node without GPUs ('GPUs: found 0')."""
    allowed = [*RECORDED_KEYS, *(k for logs in RECORDED_LOGS.values() for k in logs)]
    for key in data:
        if key not in allowed:
            raise SpecError(f"--telemetry {where}: {key}", msg("spec_unknown_key"), allowed=allowed,
                            suggestion=did_you_mean(key, allowed))
    if "gpus" not in data:
        raise SpecError(f"--telemetry {where}: gpus", msg("spec_missing"))


TELEMETRY_KINDS = ("auto", "nvml", "nvidia-smi", "amd-smi", "none")


def open_telemetry(kind: str = "auto") -> tuple[GpuTelemetry | None, str]:
    """A telemetry source, or None and why there is none (e.g. no driver): never raises for a missing GPU.

    `kind` is auto|nvml|nvidia-smi|amd-smi|none or a path to a recorded JSON file; auto tries NVIDIA's sources,
    then AMD's.
    """
    from trainsizer.accept.telemetry_amd import AmdSmiTelemetry, AmdSmiUnavailable
    from trainsizer.accept.telemetry_nvml import NvmlTelemetry, NvmlUnavailable
    from trainsizer.accept.telemetry_smi import NvidiaSmiTelemetry, SmiUnavailable

    if kind not in TELEMETRY_KINDS:
        if Path(kind).is_file():
            return RecordedTelemetry.from_file(kind), msg("acc_tel_recorded", path=kind)
        raise SpecError("--telemetry", msg("acc_telemetry_kind"),
                        value=kind, allowed=[*TELEMETRY_KINDS, "<path.json>"])
    if kind == "none":
        return None, msg("acc_tel_disabled")
    reasons = []
    if kind in ("auto", "nvml"):
        try:
            return NvmlTelemetry.open(), "NVML"
        except NvmlUnavailable as err:
            reasons.append(f"NVML: {err}")
    if kind in ("auto", "nvidia-smi"):
        try:
            return NvidiaSmiTelemetry.open(), "nvidia-smi"
        except SmiUnavailable as err:
            reasons.append(f"nvidia-smi: {err}")
    if kind in ("auto", "amd-smi"):
        try:
            return AmdSmiTelemetry.open(), "amd-smi"
        except AmdSmiUnavailable as err:
            reasons.append(f"amd-smi: {err}")
    return None, msg("acc_tel_none", reasons="; ".join(reasons))
