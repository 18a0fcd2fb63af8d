"""GpuTelemetry from the `nvidia-smi` command line (CSV queries, `nvlink -s`, `-q -d TEMPERATURE`).

Formats: `nvidia-smi --help-query-gpu`, `--help-query-remapped-rows` (NVIDIA driver docs).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass

from trainsizer.accept.amdgpu_log import AmdgpuEvent
from trainsizer.accept.telemetry import GpuHealth, GpuInfo, GpuSample, run_tool
from trainsizer.accept.xid import XidEvent, kernel_xids

GPU_FIELDS = (
    "index", "name", "uuid", "serial", "pci.bus_id", "memory.total", "ecc.mode.current", "temperature.gpu",
    "clocks.sm", "power.draw", "utilization.gpu", "ecc.errors.uncorrected.volatile.total",
    "ecc.errors.uncorrected.aggregate.total", "ecc.errors.corrected.volatile.total",
    "clocks_event_reasons.active", "retired_pages.pending", "driver_version",
)
REMAP_FIELDS = ("gpu_bus_id", "remapped_rows.uncorrectable", "remapped_rows.pending", "remapped_rows.failure")


class SmiUnavailable(Exception):
    pass


def _run(cmd: list[str]) -> str:
    return run_tool(cmd, SmiUnavailable)


def _value(text: str) -> str | None:
    text = text.strip()
    return None if text in ("", "[N/A]", "N/A", "[Not Supported]", "[Unknown Error]") else text


def _num(text: str) -> float | None:
    v = _value(text)
    if v is None:
        return None
    try:
        return float(v.split()[0])
    except ValueError:
        return None


def _int(text: str) -> int | None:
    v = _value(text)
    if v is None:
        return None
    try:
        return int(v, 16) if v.lower().startswith("0x") else int(float(v))
    except ValueError:
        return None


def _flag(text: str) -> bool | None:
    v = _value(text)
    return None if v is None else v.lower() in ("yes", "1", "true", "enabled")


def parse_csv(text: str, names: tuple[str, ...]) -> list[dict[str, str]]:
    rows = []
    for line in text.splitlines():
        if line.strip():
            cells = [c.strip() for c in line.split(",")]
            rows.append(dict(zip(names, cells, strict=False)))
    return rows


def parse_nvlink_status(text: str) -> dict[int, tuple[int, int]]:
    """`nvidia-smi nvlink -s` -> {gpu index: (links up, links listed)}."""
    out: dict[int, tuple[int, int]] = {}
    gpu = None
    for line in text.splitlines():
        m = re.match(r"GPU (\d+):", line.strip())
        if m:
            gpu = int(m[1])
            out[gpu] = (0, 0)
            continue
        m = re.match(r"Link \d+: (.*)", line.strip())
        if m and gpu is not None:
            up, total = out[gpu]
            out[gpu] = (up + (0 if "inactive" in m[1].lower() else 1), total + 1)
    return out


def parse_temperature_limits(text: str) -> list[float | None]:
    """`nvidia-smi -q -d TEMPERATURE` -> per GPU max operating temp (fallback: slowdown temp), in order."""
    limits: list[float | None] = []
    for block in re.split(r"\nGPU [0-9A-Fa-f]{4,8}:", text)[1:]:
        found = re.search(r"GPU Max Operating Temp\s*:\s*(\d+(?:\.\d+)?) C", block) or re.search(
            r"GPU Slowdown Temp\s*:\s*(\d+(?:\.\d+)?) C", block)
        limits.append(float(found[1]) if found else None)
    return limits


def parse_cuda_version(text: str) -> str | None:
    m = re.search(r"CUDA Version:\s*([0-9.]+)", text)
    return m[1] if m else None


@dataclass
class NvidiaSmiTelemetry:
    run: Callable[[list[str]], str] = _run
    source: str = "nvidia-smi"
    vendor: str = "nvidia"

    @classmethod
    def open(cls) -> NvidiaSmiTelemetry:
        if shutil.which("nvidia-smi") is None:
            raise SmiUnavailable("not on PATH")
        tel = cls()
        if not tel._query():
            raise SmiUnavailable("lists no GPU")
        return tel

    def _query(self) -> list[dict[str, str]]:
        fields = GPU_FIELDS
        try:
            text = self.run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"])
        except SmiUnavailable:  # drivers before clocks_event_reasons (R535) call it clocks_throttle_reasons
            fields = tuple(f.replace("clocks_event_reasons", "clocks_throttle_reasons") for f in GPU_FIELDS)
            text = self.run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"])
        return parse_csv(text, GPU_FIELDS)

    def driver_version(self) -> str | None:
        rows = self._query()
        return _value(rows[0]["driver_version"]) if rows else None

    def rocm_version(self) -> str | None:
        return None  # an NVIDIA node runs CUDA

    def cuda_version(self) -> str | None:
        try:
            return parse_cuda_version(self.run(["nvidia-smi"]))
        except SmiUnavailable:
            return None

    def gpus(self) -> list[GpuInfo]:
        rows = self._query()
        try:
            links = parse_nvlink_status(self.run(["nvidia-smi", "nvlink", "-s"]))
        except SmiUnavailable:
            links = {}
        try:
            limits = parse_temperature_limits(self.run(["nvidia-smi", "-q", "-d", "TEMPERATURE"]))
        except SmiUnavailable:
            limits = []
        out = []
        for pos, r in enumerate(rows):
            idx = int(r["index"])
            up, total = links.get(idx, (None, None))
            mem_mib = _num(r["memory.total"])
            out.append(GpuInfo(
                index=idx, name=r["name"], uuid=r["uuid"], serial=_value(r["serial"]) or "",
                pci_bus_id=r["pci.bus_id"].lower(),
                memory_total_bytes=int(mem_mib * 2**20) if mem_mib is not None else 0,
                nvlinks_up=up, nvlinks_total=total, ecc_enabled=_flag(r["ecc.mode.current"]),
                temp_limit_c=limits[pos] if pos < len(limits) else None,
            ))
        return out

    def health(self) -> list[GpuHealth]:
        rows = self._query()
        try:
            remap = {r["gpu_bus_id"].lower(): r for r in parse_csv(self.run(
                ["nvidia-smi", f"--query-remapped-rows={','.join(REMAP_FIELDS)}", "--format=csv,noheader"]),
                REMAP_FIELDS)}
        except SmiUnavailable:
            remap = {}
        out = []
        for r in rows:
            rr = remap.get(r["pci.bus_id"].lower(), {})
            out.append(GpuHealth(
                index=int(r["index"]),
                ecc_uncorrected_volatile=_int(r["ecc.errors.uncorrected.volatile.total"]),
                ecc_uncorrected_aggregate=_int(r["ecc.errors.uncorrected.aggregate.total"]),
                ecc_corrected_volatile=_int(r["ecc.errors.corrected.volatile.total"]),
                remapped_rows_uncorrectable=_int(rr.get("remapped_rows.uncorrectable", "")),
                remap_pending=_flag(rr.get("remapped_rows.pending", "")),
                remap_failure=_flag(rr.get("remapped_rows.failure", "")),
                retired_pages_pending=_flag(r["retired_pages.pending"]),
                clock_event_reasons=_int(r["clocks_event_reasons.active"]),
            ))
        return out

    def sample(self) -> list[GpuSample]:
        try:
            rows = self._query()
        except SmiUnavailable:
            return []
        return [GpuSample(
            index=int(r["index"]), temp_c=_num(r["temperature.gpu"]), sm_clock_mhz=_num(r["clocks.sm"]),
            power_w=_num(r["power.draw"]), util_pct=_num(r["utilization.gpu"]),
            clock_event_reasons=_int(r["clocks_event_reasons.active"]) or 0,
            ecc_uncorrected_volatile=_int(r["ecc.errors.uncorrected.volatile.total"]),
        ) for r in rows]

    def xid_events(self) -> list[XidEvent] | None:
        return kernel_xids()

    def amdgpu_events(self) -> list[AmdgpuEvent] | None:
        return None  # an NVIDIA driver writes Xid lines, not amdgpu's
