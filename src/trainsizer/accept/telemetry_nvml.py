"""GpuTelemetry through NVML (`nvidia-ml-py`, imported as `pynvml`; not a trainsizer dependency).

Calls: NVML API reference (nvml.h), as listed in docs/acceptance.md section 2.3.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainsizer.accept.amdgpu_log import AmdgpuEvent
from trainsizer.accept.telemetry import GpuHealth, GpuInfo, GpuSample
from trainsizer.accept.xid import XidEvent, kernel_xids


class NvmlUnavailable(Exception):
    pass


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


@dataclass
class NvmlTelemetry:
    nvml: Any
    source: str = "NVML"
    vendor: str = "nvidia"

    @classmethod
    def open(cls, nvml: Any = None) -> NvmlTelemetry:
        if nvml is None:
            try:
                import pynvml as nvml  # type: ignore[import-not-found]
            except ImportError:
                raise NvmlUnavailable("nvidia-ml-py not installed (pip install nvidia-ml-py)") from None
        try:
            nvml.nvmlInit()
        except Exception as err:  # NVMLError_LibraryNotFound / DriverNotLoaded on hosts without a GPU
            raise NvmlUnavailable(f"nvmlInit failed: {err}") from None
        return cls(nvml)

    def _call(self, fn: str, *args: Any, default: Any = None) -> Any:
        try:
            return getattr(self.nvml, fn)(*args)
        except Exception:  # NVMLError_NotSupported and friends: the figure is unknown, not zero
            return default

    def _handles(self) -> list[Any]:
        n = self.nvml.nvmlDeviceGetCount()
        return [self.nvml.nvmlDeviceGetHandleByIndex(i) for i in range(n)]

    def driver_version(self) -> str | None:
        v = self._call("nvmlSystemGetDriverVersion")
        return None if v is None else _text(v)

    def rocm_version(self) -> str | None:
        return None  # an NVIDIA node runs CUDA

    def cuda_version(self) -> str | None:
        v = self._call("nvmlSystemGetCudaDriverVersion_v2") or self._call("nvmlSystemGetCudaDriverVersion")
        return None if v is None else f"{v // 1000}.{(v % 1000) // 10}"

    def gpus(self) -> list[GpuInfo]:
        n = self.nvml
        out = []
        for i, h in enumerate(self._handles()):
            up = total = None
            max_links = getattr(n, "NVML_NVLINK_MAX_LINKS", 18)
            states = [self._call("nvmlDeviceGetNvLinkState", h, link) for link in range(max_links)]
            known = [s for s in states if s is not None]
            if known:
                up, total = sum(1 for s in known if s), len(known)
            temp = self._call("nvmlDeviceGetTemperatureThreshold", h, getattr(n, "NVML_TEMPERATURE_THRESHOLD_GPU_MAX", 3))
            if temp is None:
                temp = self._call("nvmlDeviceGetTemperatureThreshold", h,
                                  getattr(n, "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN", 1))
            mem = self._call("nvmlDeviceGetMemoryInfo", h)
            ecc = self._call("nvmlDeviceGetEccMode", h)
            pci = self._call("nvmlDeviceGetPciInfo", h)
            out.append(GpuInfo(
                index=i, name=_text(self._call("nvmlDeviceGetName", h, default="?")),
                uuid=_text(self._call("nvmlDeviceGetUUID", h, default="")),
                serial=_text(self._call("nvmlDeviceGetSerial", h, default="")),
                pci_bus_id=_text(getattr(pci, "busId", "")).lower(),
                memory_total_bytes=int(getattr(mem, "total", 0)),
                nvlinks_up=up, nvlinks_total=total,
                ecc_enabled=None if ecc is None else bool(ecc[0]),
                temp_limit_c=None if temp is None else float(temp),
            ))
        return out

    def health(self) -> list[GpuHealth]:
        n = self.nvml
        unc = getattr(n, "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1)
        cor = getattr(n, "NVML_MEMORY_ERROR_TYPE_CORRECTED", 0)
        vol = getattr(n, "NVML_VOLATILE_ECC", 0)
        agg = getattr(n, "NVML_AGGREGATE_ECC", 1)
        out = []
        for i, h in enumerate(self._handles()):
            remap = self._call("nvmlDeviceGetRemappedRows", h)  # (corr, unc, pending, failure)
            retired = self._call("nvmlDeviceGetRetiredPagesPendingStatus", h)
            out.append(GpuHealth(
                index=i,
                ecc_uncorrected_volatile=self._call("nvmlDeviceGetTotalEccErrors", h, unc, vol),
                ecc_uncorrected_aggregate=self._call("nvmlDeviceGetTotalEccErrors", h, unc, agg),
                ecc_corrected_volatile=self._call("nvmlDeviceGetTotalEccErrors", h, cor, vol),
                remapped_rows_uncorrectable=None if remap is None else int(remap[1]),
                remap_pending=None if remap is None else bool(remap[2]),
                remap_failure=None if remap is None else bool(remap[3]),
                retired_pages_pending=None if retired is None else bool(retired),
                clock_event_reasons=self._reasons(h),
            ))
        return out

    def _reasons(self, h: Any) -> int | None:
        r = self._call("nvmlDeviceGetCurrentClocksEventReasons", h)
        return r if r is not None else self._call("nvmlDeviceGetCurrentClocksThrottleReasons", h)

    def sample(self) -> list[GpuSample]:
        n = self.nvml
        try:
            handles = self._handles()
        except Exception:  # NVMLError_GpuIsLost on the count itself
            return []
        out = []
        for i, h in enumerate(handles):
            try:
                temp = n.nvmlDeviceGetTemperature(h, getattr(n, "NVML_TEMPERATURE_GPU", 0))
            except Exception as err:
                lost = "lost" in type(err).__name__.lower() or "lost" in str(err).lower()
                out.append(GpuSample(index=i, lost=lost))
                continue
            util = self._call("nvmlDeviceGetUtilizationRates", h)
            power = self._call("nvmlDeviceGetPowerUsage", h)
            out.append(GpuSample(
                index=i, temp_c=float(temp),
                sm_clock_mhz=self._call("nvmlDeviceGetClockInfo", h, getattr(n, "NVML_CLOCK_SM", 1)),
                power_w=None if power is None else power / 1000.0,
                util_pct=None if util is None else float(util.gpu),
                clock_event_reasons=self._reasons(h) or 0,
                ecc_uncorrected_volatile=self._call(
                    "nvmlDeviceGetTotalEccErrors", h, getattr(n, "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1),
                    getattr(n, "NVML_VOLATILE_ECC", 0)),
            ))
        return out

    def xid_events(self) -> list[XidEvent] | None:
        return kernel_xids()

    def amdgpu_events(self) -> list[AmdgpuEvent] | None:
        return None  # an NVIDIA driver writes Xid lines, not amdgpu's
